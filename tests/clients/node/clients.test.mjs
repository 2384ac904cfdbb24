// Real Node.js clients against a host of shardfilter's command layer:
// node-redis 6 with @redis/bloom (its client.bf / client.cf helpers) and
// ioredis 6, each under RESP2 and RESP3. The host is whatever listens on
// 127.0.0.1:$SF_PORT (shardfilter-server, or redis-server with shardfilter.so
// loaded): run.sh starts it. Every test uses keys of its own, prefixed with
// the protocol and client, so the suites never see each other's filters.
// With SF_CLUSTER_PORT (run.sh server: a second shardfilter-server with
// --cluster-emulation), ioredis's Cluster client too; the module host has
// no emulated cluster (inside redis-server, CLUSTER is Redis's own), so
// those tests are skipped there.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { createClient } from 'redis';
import Redis from 'ioredis';

const port = Number(process.env.SF_PORT);
if (!port) throw new Error('SF_PORT is not set (run tests/clients/node/run.sh)');
const clusterPort = Number(process.env.SF_CLUSTER_PORT || 0);
// run.sh module: a real Redis Cluster of 3 masters, each loading the module.
const realCluster = (process.env.SF_REAL_CLUSTER_PORTS || '')
  .split(',').filter(Boolean).map(Number);

// A reply of BF.INFO / CF.INFO as field -> value, whatever shape the
// client gave it (flat array under RESP2, object or Map under RESP3).
function infoFields(reply) {
  if (reply instanceof Map) return Object.fromEntries(reply);
  if (Array.isArray(reply)) {
    const out = {};
    for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = reply[i + 1];
    return out;
  }
  return reply;
}

for (const RESP of [2, 3]) {
  describe(`node-redis RESP${RESP}`, () => {
    let c;
    const k = (s) => `node-redis:${RESP}:${s}`;
    before(async () => {
      c = createClient({ socket: { host: '127.0.0.1', port }, RESP });
      c.on('error', () => {});
      await c.connect();
    });
    after(async () => { await c.quit(); });

    test('PING and ECHO', async () => {
      assert.equal(await c.ping(), 'PONG');
      assert.equal(await c.echo('hi'), 'hi');
    });

    test('BF.RESERVE, ADD, MADD, EXISTS, MEXISTS, CARD, INFO', async () => {
      assert.equal(await c.bf.reserve(k('bf'), 0.01, 1000), 'OK');
      assert.equal(await c.bf.add(k('bf'), 'a'), true);
      assert.equal(await c.bf.add(k('bf'), 'a'), false);  // already present
      assert.deepEqual(await c.bf.mAdd(k('bf'), ['a', 'b', 'c']), [false, true, true]);
      assert.equal(await c.bf.exists(k('bf'), 'b'), true);
      assert.equal(await c.bf.exists(k('bf'), 'nope'), false);
      assert.deepEqual(await c.bf.mExists(k('bf'), ['a', 'c', 'zz']), [true, true, false]);
      assert.equal(await c.bf.card(k('bf')), 3);
      const info = await c.bf.info(k('bf'));
      assert.equal(Number(info['Capacity']), 1000);
      assert.equal(Number(info['Number of items inserted']), 3);
      assert.equal(Number(info['Number of filters']), 1);
      assert.equal(Number(info['Expansion rate']), 2);
    });

    test('BF.ADD auto-creates; a second RESERVE is refused', async () => {
      assert.equal(await c.bf.add(k('auto'), 'x'), true);
      await assert.rejects(c.bf.reserve(k('auto'), 0.01, 10), /item exists/);
    });

    test('BF.INSERT with options, NOCREATE on a missing key', async () => {
      assert.deepEqual(
        await c.bf.insert(k('ins'), ['p', 'q'], { CAPACITY: 500, ERROR: 0.001, NONSCALING: true }),
        [true, true]);
      assert.equal(Number((await c.bf.info(k('ins')))['Capacity']), 500);
      await assert.rejects(c.bf.insert(k('missing'), ['p'], { NOCREATE: true }), /not found/);
    });

    test('no false negative over 20,000 items through MADD', async () => {
      await c.bf.reserve(k('many'), 0.01, 20000);
      const items = Array.from({ length: 20000 }, (_, i) => `item-${i}`);
      for (let i = 0; i < items.length; i += 1000) {
        await c.bf.mAdd(k('many'), items.slice(i, i + 1000));
      }
      for (let i = 0; i < items.length; i += 1000) {
        const got = await c.bf.mExists(k('many'), items.slice(i, i + 1000));
        assert.ok(got.every((x) => x === true), `false negative in ${i}..${i + 999}`);
      }
      let fp = 0;
      for (let i = 0; i < 10000; i += 1000) {
        const probe = Array.from({ length: 1000 }, (_, j) => `absent-${i + j}`);
        fp += (await c.bf.mExists(k('many'), probe)).filter((x) => x).length;
      }
      assert.ok(fp <= 200, `false positives ${fp} of 10000 at a 1% target`);
    });

    test('CF.RESERVE, ADD, ADDNX, EXISTS, COUNT, DEL, INFO', async () => {
      assert.equal(await c.cf.reserve(k('cf'), 1000), 'OK');
      assert.equal(await c.cf.add(k('cf'), 'a'), true);
      assert.equal(await c.cf.add(k('cf'), 'a'), true);  // a multiset: a second copy
      assert.equal(await c.cf.addNX(k('cf'), 'a'), false);
      assert.equal(await c.cf.addNX(k('cf'), 'b'), true);
      assert.equal(await c.cf.count(k('cf'), 'a'), 2);
      assert.equal(await c.cf.exists(k('cf'), 'b'), true);
      assert.equal(await c.cf.del(k('cf'), 'a'), true);
      assert.equal(await c.cf.count(k('cf'), 'a'), 1);
      assert.equal(await c.cf.del(k('cf'), 'never'), false);
      const info = await c.cf.info(k('cf'));
      assert.equal(Number(info['Number of items inserted']), 2);
      assert.equal(Number(info['Number of items deleted']), 1);
    });

    test('WRONGTYPE: a cuckoo command on a Bloom key', async () => {
      await c.bf.add(k('typed'), 'x');
      await assert.rejects(c.cf.add(k('typed'), 'x'), /WRONGTYPE/);
    });

    test('TYPE, EXISTS, DEL', async () => {
      await c.bf.add(k('gen'), 'x');
      assert.equal(await c.exists(k('gen')), 1);
      assert.equal(await c.del(k('gen')), 1);
      assert.equal(await c.exists(k('gen')), 0);
    });

    test('MULTI/EXEC', async () => {
      const r = await c.multi().bf.add(k('tx'), 'a').bf.exists(k('tx'), 'a').exec();
      assert.deepEqual(r.map(Boolean), [true, true]);
    });
  });
}

for (const protocol of [2, 3]) {
  describe(`ioredis RESP${protocol}`, () => {
    let c;
    const k = (s) => `ioredis:${protocol}:${s}`;
    before(async () => {
      c = new Redis({ host: '127.0.0.1', port, protocol, lazyConnect: true, maxRetriesPerRequest: 1 });
      await c.connect();
    });
    after(async () => { c.disconnect(); });

    test('BF commands through call()', async () => {
      assert.equal(await c.call('BF.RESERVE', k('bf'), '0.01', '1000'), 'OK');
      assert.equal(await c.call('BF.ADD', k('bf'), 'a'), 1);
      assert.equal(await c.call('BF.ADD', k('bf'), 'a'), 0);
      assert.deepEqual(await c.call('BF.MADD', k('bf'), 'a', 'b'), [0, 1]);
      assert.deepEqual(await c.call('BF.MEXISTS', k('bf'), 'a', 'b', 'zz'), [1, 1, 0]);
      const info = infoFields(await c.call('BF.INFO', k('bf')));
      assert.equal(Number(info['Capacity']), 1000);
      // One field: an array of one value under RESP2, a map of one under
      // RESP3 (RedisBloom's shapes; ioredis flattens the map).
      const items = [].concat(await c.call('BF.INFO', k('bf'), 'ITEMS'));
      assert.equal(Number(items[items.length - 1]), 2);
      if (protocol === 3) assert.equal(items[0], 'Number of items inserted');
    });

    test('CF commands through call()', async () => {
      assert.equal(await c.call('CF.ADD', k('cf'), 'a'), 1);  // auto-creates
      assert.equal(await c.call('CF.ADDNX', k('cf'), 'a'), 0);
      assert.deepEqual(await c.call('CF.MEXISTS', k('cf'), 'a', 'zz'), [1, 0]);
      assert.equal(await c.call('CF.COUNT', k('cf'), 'a'), 1);
      assert.equal(await c.call('CF.DEL', k('cf'), 'a'), 1);
      assert.equal(await c.call('CF.EXISTS', k('cf'), 'a'), 0);
    });

    test('errors: unknown command, arity, bad error rate', async () => {
      await assert.rejects(c.call('NOPE.NOPE', 'x'), /unknown command/);
      await assert.rejects(c.call('BF.ADD', k('x')), /wrong number of arguments/);
      await assert.rejects(c.call('BF.RESERVE', k('bad'), '2', '100'), /ERR/);
    });

    test('a pipeline of 1,000 adds then exists answers in order', async () => {
      const p = c.pipeline();
      for (let i = 0; i < 1000; i++) p.call('BF.ADD', k('pipe'), `i${i}`);
      for (let i = 0; i < 1000; i++) p.call('BF.EXISTS', k('pipe'), `i${i}`);
      const res = await p.exec();
      assert.equal(res.length, 2000);
      for (const [err] of res) assert.equal(err, null);
      assert.ok(res.slice(1000).every(([, v]) => v === 1), 'false negative after pipelined adds');
    });
  });
}

for (const protocol of [2, 3]) {
  describe(`ioredis Cluster RESP${protocol} (emulated cluster)`, { skip: !clusterPort }, () => {
    let c;
    const keys = [...Array.from({ length: 16 }, (_, i) => `cluster:${protocol}:k${i}`),
      `{user1000}:${protocol}.following`, `{user1000}:${protocol}.followers`];
    before(async () => {
      c = new Redis.Cluster([{ host: '127.0.0.1', port: clusterPort }], {
        lazyConnect: true,
        redisOptions: { protocol },
        clusterRetryStrategy: () => null,
      });
      await c.connect();
    });
    after(async () => { c.disconnect(); });

    test('one node owns every slot', async () => {
      const nodes = c.nodes('master');
      assert.equal(nodes.length, 1);
      assert.equal(nodes[0].options.port, clusterPort);
      const slots = await c.cluster('SLOTS');
      assert.equal(slots.length, 1);
      assert.deepEqual(slots[0].slice(0, 2), [0, 16383]);
      assert.equal(slots[0][2][0], '127.0.0.1');
      assert.equal(slots[0][2][1], clusterPort);
      assert.equal(await c.cluster('KEYSLOT', 'foo'), 12182);
      assert.equal(await c.cluster('KEYSLOT', keys[16]), await c.cluster('KEYSLOT', keys[17]));
    });

    test('BF and CF commands routed by key, hash tags included', async () => {
      for (const k of keys) {
        assert.equal(await c.call('BF.ADD', k, 'a'), 1);
        assert.equal(await c.call('BF.ADD', k, 'a'), 0);
        assert.equal(await c.call('BF.EXISTS', k, 'a'), 1);
        assert.equal(await c.call('BF.EXISTS', k, 'zz'), 0);
        assert.equal(await c.call('CF.ADD', `cf:${k}`, 'a'), 1);
        assert.equal(await c.call('CF.EXISTS', `cf:${k}`, 'a'), 1);
      }
      // A pipeline of keys sharing a hash tag (one slot, as ioredis demands).
      const res = await c.pipeline()
        .call('BF.MADD', keys[16], 'p', 'q')
        .call('BF.MEXISTS', keys[17], 'a', 'p')
        .exec();
      assert.deepEqual(res, [[null, [1, 1]], [null, [1, 0]]]);
    });
  });
}

// A real Redis Cluster (run.sh module): ioredis's Cluster client writes 64
// filters with pipelined BF.MADD while `redis-cli --cluster reshard` moves
// slots holding them (MIGRATE through the module's data type), following
// MOVED and ASK itself; then every item is there.
describe('ioredis Cluster on a real Redis Cluster with the module, during a reshard',
  { skip: realCluster.length === 0 }, () => {
    let c;
    before(async () => {
      c = new Redis.Cluster(realCluster.map((port) => ({ host: '127.0.0.1', port })), {
        lazyConnect: true,
        maxRedirections: 64,
      });
      await c.connect();
    });
    after(async () => { c.disconnect(); });

    test('no false negative across MOVED and ASK', async () => {
      const keys = Array.from({ length: 64 }, (_, i) => `real:f${i}`);
      const batch = 250;
      const ids = await Promise.all(realCluster.map(async (port) => {
        const n = new Redis({ host: '127.0.0.1', port });
        const id = await n.cluster('MYID');
        n.disconnect();
        return id;
      }));
      let resharding = true;
      const reshard = promisify(execFile)('redis-cli', ['--cluster', 'reshard',
        `127.0.0.1:${realCluster[0]}`, '--cluster-from', ids[0], '--cluster-to', ids[1],
        '--cluster-slots', '3000', '--cluster-yes'], { maxBuffer: 1 << 26 })
        .finally(() => { resharding = false; });
      // Writes go on until the reshard is over (at least 3000 per key).
      let written = 0;
      while (written < 3000 || (resharding && written < 100000)) {
        const at = written;
        const replies = await Promise.all(keys.map((k) => c.call('BF.MADD', k,
          ...Array.from({ length: batch }, (_, j) => `${k}:${at + j}`))));
        for (const r of replies) assert.equal(r.length, batch);
        written += batch;
      }
      await reshard;
      const held = await Promise.all(c.nodes('master').map((n) => n.dbsize()));
      assert.equal(held.reduce((a, b) => a + b, 0), keys.length);
      for (const k of keys) {
        for (let at = 0; at < written; at += 5000) {
          const items = Array.from({ length: Math.min(5000, written - at) },
            (_, j) => `${k}:${at + j}`);
          const r = await c.call('BF.MEXISTS', k, ...items);
          assert.ok(r.every((v) => v === 1), `false negative in ${k}`);
        }
      }
    });
  });
