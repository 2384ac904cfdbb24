"""Checks of server_integration_test.py for emulated cluster mode (redis-py's
RedisCluster against a server started with --cluster-emulation) and INFO
commandstats / errorstats. Each takes the port and the caller's check()
and raises() so their counts add up in one report."""

import logging

import redis


def test_cluster(port, check, raises):
    from redis.cluster import RedisCluster
    # redis-py logs handled redirections as exceptions; none are expected.
    logging.getLogger("redis.cluster").setLevel(logging.CRITICAL)
    r = redis.Redis(port=port)
    check(r.info()["cluster_enabled"] == 1, "INFO cluster_enabled:1")
    check(r.info("server")["redis_mode"] == "cluster", "redis_mode cluster")
    # CLUSTER KEYSLOT against redis-server 7.0's answers.
    for key, slot in (("foo", 12182), ("", 0), ("bar", 5061),
                      ("{user1000}.following", 3443),
                      ("{user1000}.followers", 3443),
                      ("foo{}{bar}", 8363), ("foo{{bar}}zap", 4015),
                      ("foo{bar}{zap}", 5061)):
        got = r.execute_command("CLUSTER", "KEYSLOT", key)
        check(got == slot, "CLUSTER KEYSLOT %r = %r, not %r" % (key, got, slot))
    # CLUSTER SLOTS as Redis sends it: one range, this node.
    raw = redis.Redis(port=port)
    raw.response_callbacks = {}
    slots = raw.execute_command("CLUSTER", "SLOTS")
    myid = raw.execute_command("CLUSTER", "MYID")
    check(len(myid) == 40, "CLUSTER MYID %r" % myid)
    check(slots == [[0, 16383, [b"127.0.0.1", port, myid, []]]],
          "CLUSTER SLOTS %r" % slots)
    shards = raw.execute_command("CLUSTER", "SHARDS")
    check(shards[0][0] == b"slots" and shards[0][1] == [0, 16383],
          "CLUSTER SHARDS %r" % shards)
    nodes = raw.execute_command("CLUSTER", "NODES").decode()
    check(nodes == "%s 127.0.0.1:%d@%d myself,master - 0 0 0 connected "
          "0-16383\n" % (myid.decode(), port, port + 10000),
          "CLUSTER NODES %r" % nodes)
    check("cluster_state:ok" in r.execute_command("CLUSTER", "INFO").decode(),
          "CLUSTER INFO")
    raises(lambda: r.execute_command("EXISTS", "foo", "bar"),
           "CROSSSLOT Keys in request don't hash to the same slot")
    check(r.execute_command("EXISTS", "{t}foo", "{t}bar") == 0,
          "EXISTS within one slot")
    check(r.execute_command("READONLY") in (True, b"OK"), "READONLY")
    check(r.execute_command("READWRITE") in (True, b"OK"), "READWRITE")
    r.close()
    raw.close()

    rc = RedisCluster(host="127.0.0.1", port=port)
    check(len(rc.get_nodes()) == 1, "one node")
    keys = ["k%d" % i for i in range(20)] + ["{user1000}.following",
                                              "{user1000}.followers"]
    for k in keys:
        check(rc.execute_command("BF.ADD", k, "a") == 1, "cluster BF.ADD " + k)
        check(rc.execute_command("BF.ADD", k, "a") == 0, "BF.ADD again " + k)
        check(rc.execute_command("BF.EXISTS", k, "a") == 1, "BF.EXISTS " + k)
        check(rc.execute_command("BF.EXISTS", k, "zz") == 0, "absent " + k)
        check(rc.execute_command("CF.ADD", "cf:" + k, "a") == 1, "CF.ADD " + k)
        check(rc.execute_command("CF.EXISTS", "cf:" + k, "a") == 1,
              "CF.EXISTS " + k)
    check(rc.keyslot("{user1000}.following") ==
          rc.keyslot("{user1000}.followers") == 3443, "hash tags route alike")
    # A pipeline of a cluster client (split by slot, one node here).
    p = rc.pipeline()
    for k in keys:
        p.execute_command("BF.MEXISTS", k, "a", "zz")
    check(p.execute() == [[1, 0]] * len(keys), "cluster pipeline")
    # {user1000}.following/.followers and their "cf:" twins: one slot.
    check(rc.cluster_countkeysinslot(3443) == 4,
          "COUNTKEYSINSLOT of the hash-tagged keys")
    rc.close()


def test_disabled(port, raises):
    r = redis.Redis(port=port)
    raises(lambda: r.execute_command("CLUSTER", "SLOTS"),
           "This instance has cluster support disabled")
    raises(lambda: r.execute_command("READONLY"),
           "This instance has cluster support disabled")
    r.close()


def test_commandstats(port, check, raises):
    r = redis.Redis(port=port)
    check(r.config_resetstat() is True, "CONFIG RESETSTAT")
    for i in range(5):
        r.execute_command("BF.ADD", "stats", str(i))
    r.execute_command("BF.EXISTS", "stats", "1")
    raises(lambda: r.execute_command("CF.ADD", "stats", "x"), "WRONGTYPE")
    raises(lambda: r.execute_command("BF.ADD", "stats"), "wrong number")
    raises(lambda: r.execute_command("NOSUCH"), "unknown command")
    stats = r.info("commandstats")
    add = stats.get("cmdstat_bf.add")
    check(add is not None and add["calls"] == 5 and add["rejected_calls"] == 1
          and add["failed_calls"] == 0 and "usec_per_call" in add,
          "cmdstat_bf.add %r" % add)
    check(stats["cmdstat_bf.exists"]["calls"] == 1, "cmdstat_bf.exists")
    check(stats["cmdstat_cf.add"]["failed_calls"] == 1, "cmdstat_cf.add")
    # redis-py 4.3.4 leaves "count=N" unparsed (no comma); newer ones parse.
    errors = {k: str(v).replace("{'count': ", "count=").rstrip("}")
              for k, v in r.info("errorstats").items()}
    check(errors == {"errorstat_WRONGTYPE": "count=1",
                     "errorstat_ERR": "count=2"}, "errorstats %r" % errors)
    check("cmdstat_bf.add" not in r.info(), "INFO: no commandstats")
    check("cmdstat_bf.add" not in r.info("default"), "INFO default")
    check("cmdstat_bf.add" in r.info("all"), "INFO all")
    check("cmdstat_bf.add" in r.info("everything"), "INFO everything")
    check("errorstat_ERR" in r.info(), "INFO: errorstats")
    check(r.info()["cluster_enabled"] == 0, "INFO cluster_enabled:0")
    r.config_resetstat()
    stats = r.info("commandstats")
    check("cmdstat_bf.add" not in stats, "reset: %r" % stats)
    check(r.info("errorstats") == {}, "errorstats reset")
    r.close()
