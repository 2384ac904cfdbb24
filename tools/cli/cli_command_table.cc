// The CLI's flag and command tables and usage texts
// (tools/cli/cli_command_table.h). Long only because every command's --help
// text is here, one home for all of them.
#include "tools/cli/cli_command_table.h"

#include <string_view>
#include <vector>

namespace shardfilter::tools {
namespace {

// Every flag of every command; each command lists which it accepts.
constexpr FlagDef kFlags[] = {
    {"db", true},
    {"help", false},
    {"version", false},
    {"type", true},
    {"capacity", true},
    {"fpp", true},
    {"shards", true},
    {"seed", true},
    {"durability", true},
    {"k", true},
    {"layout", true},
    {"fingerprint-bits", true},
    {"bucket-size", true},
    {"ack", false},
    {"quiet", false},
    {"json", false},
    {"items", true},
    {"probes", true},
    {"ttl", true},
    {"expected", true},
    {"binary", false},
    {"skip", true},
    {"out", true},
    {"progress-every", true},
    {"nonscaling", false},
    {"expansion", true},
    {"retain-hashes", false},
    {"drop-hashes", false},
    {"from", true},
    {"fold", true},
    {"to-db", true},
    {"to-name", true},
    {"verify-sample", true},
    {"restart", false},
    {"stop-after", true},
    {"memory-budget", true},
    {"node", true},
    {"parts", true},
    {"user", true},
    {"wait-replicas", true},
    {"wait-timeout", true},
    {"damaged", false},
};
// Accepted by every command.
constexpr std::string_view kGlobalFlags[] = {"db", "help", "version",
                                             "memory-budget"};

constexpr std::string_view kMainUsage =
    R"(shardfilter - persistent, sharded probabilistic filters (Bloom, counting
Bloom, cuckoo) in a RocksDB store directory.

Usage: shardfilter [--db DIR] COMMAND [ARGS...] [FLAGS...]

Commands:
  create NAME --type T --capacity N --fpp P [...]   create a filter
  add NAME [KEY...]      add keys (one per line from stdin when none given)
  remove NAME [KEY...]   remove keys (counting and cuckoo filters only)
  exists NAME [KEY...]   print 1 (maybe present) or 0 (absent) per key
  info NAME [--json]     parameters, fill, FPR, memory, per-shard figures
  list                   filter names, one per line
  drop NAME              delete a filter and everything stored for it
  checkpoint [NAME]      write the dirty shards of one filter, or of all
  compact                reclaim disk space (RocksDB compaction), drop 0 counts
  verify                 read back and check every stored value
  dedup [NAME]           print the stdin lines never seen before (remembered)
  import NAME [FILE...]  bulk-load keys from files or stdin (progress, resume)
  export NAME FILE       write a filter to one portable, checksummed file
  import-filter FILE NAME  create a filter from an export file
  migrate NAME [KEYFILE...]  rebuild a filter into another type, size,
                         rate, shard count or seed (progress, resume)
  experiment fill|k|space  FPR and space measurements as CSV (+ PNG plot)
  cluster create|add|exists|info|expire|persist|drop NAME --node H:P
                         --parts N: a filter split into N parts over a
                         Redis Cluster
  demo                   in-memory run of every filter type (FPR, speed)

Global flags (before or after the command):
  --db DIR     store directory (default ./data)
  --memory-budget SIZE  most memory the filters' tables may take (512M, 4G;
               powers of 1024); default half of the machine's memory or of
               the cgroup limit, whichever is lower. A create, growth,
               migration, import or load past it fails (exit 3) and
               changes nothing.
  -h, --help   this text; `shardfilter COMMAND --help` for a command
  --version    print the version

Exit codes:
  0  success
  1  the command ran but some items failed (add: filter Full; remove: key
     NotFound), verify found problems (a store that does not open
     included), or list found damaged (unavailable) filters
  2  usage error: bad command line or invalid parameters; nothing changed
  3  store or filter error: unknown filter, AlreadyExists, WrongType,
     NotSupported, Corruption, IOError, store locked by another process,
     ResourceExhausted (over the memory budget)
  130  interrupted (import, migrate: Ctrl-C); the message says how to
       resume

Keys and names are byte strings. From stdin a key is one line without its
"\n"; a trailing "\r" is removed too (CRLF files); an empty line is the
empty key (so `exists` prints exactly one line per input line). A key or
name that starts with '-' goes after "--". `list`, `info` and error
messages escape names: \\ for '\', \n \r \t, \xHH for other bytes outside
printable ASCII; names given as arguments are taken literally.
Numbers accept 10000000, 1e7, 10M, 10_000_000 (k M G T = powers of 1000).

Example:
  shardfilter --db /tmp/sf create users --type cuckoo --capacity 1M --fpp 1e-3
  seq 1 1000 | shardfilter --db /tmp/sf add users
  shardfilter --db /tmp/sf exists users 42 5000
)";

}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = {
      {"create",
       RunCreate,
       1,
       1,
       {"type", "capacity", "fpp", "shards", "seed", "durability", "k",
        "layout", "fingerprint-bits", "bucket-size", "nonscaling", "expansion",
        "retain-hashes"},
       R"(Usage: shardfilter create NAME --type bloom|counting|cuckoo --capacity N
                          --fpp P [FLAGS...]

Creates an empty filter sized for N items at false-positive rate P, and
prints what was created. The store directory is created when missing.

Flags:
  --type T              bloom, counting (counting Bloom: deletes) or cuckoo
                        (deletes, counts). Required.
  --capacity N          items the filter is sized for, >= 1. Required.
  --fpp P               target false-positive rate at capacity, 0 < P < 1
                        (0.01, 1e-3, 1%). Required.
  --shards S            power of two in [1, 256]; default from capacity:
                        the power of two >= capacity / 1M, at least 2 from
                        1M items, at most 256 (10K -> 1, 1M -> 2, 5M -> 8,
                        100M -> 128, 1G -> 256).
  --seed X              hash seed, decimal or 0x-hex (default 0x5348415244464c54)
  --durability D        none (last checkpoint survives), journal (every
                        acknowledged write survives kill -9; default) or
                        sync (survives power loss).
  --k K                 bloom, counting: hash probes per key (default: optimal).
  --layout L            bloom: auto (default: split where it costs at most 5%
                        more memory than blocked, else blocked), split (one
                        bit in each of 8 lanes of a half line: the cheapest
                        probe), blocked (a few bits in 2-3 words of one
                        cache line) or classic (bits over the whole table).
  --fingerprint-bits B  cuckoo: 8, 12 or 16 (default: from --fpp).
  --bucket-size B       cuckoo: 2, 4 or 8 slots per bucket (default 4).
  --nonscaling          a full shard refuses adds (Full) instead of growing.
                        By default a full shard appends a link of capacity x
                        the expansion at half the rate, so the compound rate
                        stays under --fpp at any size.
  --expansion N         capacity factor from one link to the next, 1..16
                        (default 2).
  --retain-hashes       also keep every key's 8-byte hash in the store (16
                        bytes per distinct key on disk), so that `migrate`
                        can rebuild the filter into any type, size or shard
                        count without the keys. Needs durability journal or
                        sync.

Example:
  shardfilter create users --type cuckoo --capacity 10M --fpp 0.001 --shards 16
)"},
      {"add",
       RunAdd,
       1,
       kMany,
       {"durability", "ack", "quiet"},
       R"(Usage: shardfilter add NAME [KEY...] [--durability none|journal|sync]
                       [--ack] [--quiet]

Adds the keys given as arguments or, when there are none, one key per line
read from stdin, in batches of 4096. A summary goes to stderr. Keys that
fail (a cuckoo filter is Full) are reported on stderr with their position
(1-based) and counted; every other key is still added, and the exit code
is 1. A store error (e.g. IOError) stops the command with exit code 3;
acks printed before it stay true.

Flags:
  --durability D   for this session only (the stored default is unchanged):
                   none, journal or sync; see `create --help`.
  --ack            print "ack N" on stdout (flushed) once the first N keys
                   are processed and every successful one among them is
                   durable under the session's durability: after each batch
                   for journal and sync; for none, once at the end after a
                   checkpoint. The last line is "ack <number of keys>".
  --quiet          no summary on stderr (errors are still printed).

Example:
  seq 1 1000000 | shardfilter add users --durability sync --ack
)"},
      {"remove",
       RunRemove,
       1,
       kMany,
       {"durability", "ack", "quiet"},
       R"(Usage: shardfilter remove NAME [KEY...] [--durability none|journal|sync]
                          [--ack] [--quiet]

Removes one copy of each key (counting and cuckoo filters; a Bloom filter
cannot remove: exit 3). Keys as arguments or one per line from stdin. Keys
that are definitely absent (NotFound) are reported on stderr with their
position and counted; the exit code is then 1. Only remove keys you added:
removing a key that was never added may remove another key's presence.

Flags: --durability, --ack and --quiet as for `add`.

Example:
  shardfilter remove sessions s-1234 s-5678
)"},
      {"exists",
       RunExists,
       1,
       kMany,
       {},
       R"(Usage: shardfilter exists NAME [KEY...]

Prints one line per key, in input order: 1 when the key may be present,
0 when it is definitely absent (like RedisBloom BF.MEXISTS). Keys as
arguments or one per line from stdin. Opens the store read-only.

Example:
  printf 'alice\nbob\n' | shardfilter exists users
)"},
      {"info",
       RunInfo,
       1,
       1,
       {"json"},
       R"(Usage: shardfilter info NAME [--json]

Prints the filter's parameters, items, fill, estimated and target FPR,
memory, bits per item, durability, and a per-shard table. Opens the store
read-only.

Flags:
  --json   one JSON object instead (names escaped as in `list`).

Example:
  shardfilter info users --json
)"},
      {"list",
       RunList,
       0,
       0,
       {},
       R"(Usage: shardfilter list

Prints the filter names, one per line, in byte order. Bytes outside
printable ASCII are escaped: \\ for '\', \n \r \t, \xHH for the others.
Opens the store read-only.

Example:
  shardfilter --db /var/lib/sf list
)"},
      {"drop",
       RunDrop,
       1,
       1,
       {},
       R"(Usage: shardfilter drop NAME

Deletes the filter, its checkpoints and its journal (one atomic write).

Example:
  shardfilter drop users
)"},
      {"union",
       RunUnion,
       2,
       kMany,
       {},
       R"(Usage: shardfilter union DEST SRC [SRC...]

ORs the Bloom filters SRC... into the Bloom filter DEST (SF.UNION): DEST
then answers 1 for every key added to a source. Every filter must be made
with the same parameters (capacity, fpp, shards, seed, layout), a scaling
source must not have grown more links than DEST, and DEST must not retain
hashes. Every source is checked before anything changes; DEST is
checkpointed before the command exits, so the union is durable whatever its
durability mode. The sources are not changed.

Example:
  shardfilter union week mon tue wed
)"},
      {"checkpoint",
       RunCheckpoint,
       0,
       1,
       {},
       R"(Usage: shardfilter checkpoint [NAME]

Writes the dirty shards of one filter (or of every filter) and prints what
was written: filters, shards written and skipped, chunks, bytes, and the
longest time a shard was locked.

Example:
  shardfilter checkpoint users
)"},
      {"compact",
       RunCompact,
       0,
       0,
       {},
       R"(Usage: shardfilter compact

Compacts the store's RocksDB files (blocking): reclaims the space of dropped
filters, old checkpoints and journal entries, and removes retained hashes
whose count fell to 0. The filters' contents do not change.

Example:
  shardfilter compact
)"},
      {"verify",
       RunVerify,
       0,
       0,
       {},
       R"(Usage: shardfilter verify

Reads back every stored value (catalog, checkpoint chunks, journal) and
checks versions, checksums and lengths. A dedup set or filter that lost
writes acknowledged under durability sync with the write-ahead log (the
log cut short) is a problem naming the sequences. Prints the report; exit
code 1 when it lists problems (3 when the store cannot even be opened). A
write-ahead log that ends inside a record (the torn tail a crash or power
loss leaves under durability journal or none) is printed as a note, which
is no problem (exit 0). Read-only.

Example:
  shardfilter --db /var/lib/sf verify
)"},
      {"cluster",
       RunCluster,
       2,
       kMany,
       {"node", "parts", "user", "wait-replicas", "wait-timeout", "type",
        "capacity", "fpp", "shards", "nonscaling", "expansion", "bucket-size",
        "quiet", "damaged"},
       R"(Usage: shardfilter cluster create NAME --node HOST:PORT --parts N
                              --type T --capacity C [--fpp P] [...]
       shardfilter cluster add NAME [KEY...] --node HOST:PORT --parts N
                              [--wait-replicas R] [--wait-timeout MS]
       shardfilter cluster exists NAME [KEY...] --node HOST:PORT --parts N
       shardfilter cluster info NAME --node HOST:PORT --parts N
       shardfilter cluster expire NAME SECONDS --node HOST:PORT --parts N
       shardfilter cluster persist NAME --node HOST:PORT --parts N
       shardfilter cluster drop NAME [--damaged] --node HOST:PORT --parts N

One logical filter as N ordinary filter keys ("parts") spread over the
masters of a Redis Cluster running shardfilter.so (or one Redis with the
module, or shardfilter-server). Part i is the key "{TAG.i}NAME" (TAG: 16
hex digits of the name's hash) and an item belongs to one part, chosen by
its hash: docs/redis-module.md, "Multi-part filters", says how any client
computes both. Every query probes one part, so the whole answers at each
part's false-positive rate. No store directory is used.

--node is any node of the cluster: the slot map is read from it (CLUSTER
SLOTS); commands go to each part's master, pipelined, following MOVED and
ASK during resharding and retrying through a failover. The password, when
the servers need one, is read from the environment variable REDISCLI_AUTH
(as redis-cli does), never from the command line.

Every command but create first checks every part (TYPE, SF.INFO,
PEXPIRETIME): the parts are the filter only when each exists with the same
type and parameters, and part N does not. A part missing (deleted, expired
apart from the others, flushed, not restored after a failover) or made
again with other parameters makes the filter damaged: an error naming the
part, exit 3, and nothing read or written; never 0 for the items it held.
"not found" (exit 3) is a filter none of whose parts exists. add and exists
also check, in each round, that every part they touched is still there.

  create   SF.CREATE of every part, each sized for C / N items. Refused
           (exit 3, nothing created) when any part exists; refused (exit 2,
           part 0 removed again) when a part would exceed 256 MiB, half of
           Redis's 512 MB bulk limit, so that resharding can always move a
           part; the message says how many parts to use. When a part
           cannot be created, the parts made are removed again.
  add      keys as arguments or one per line from stdin, SF.MADD per part
           (which never creates a part). Summary on stderr; failed keys are
           listed (first 10) and give exit 1.
  exists   prints 1 (may be present) or 0 (absent) per key, in input order.
  info     parts, items, capacity, bytes, largest part, masters, deadline;
           exit 1 when the parts' deadlines differ.
  expire   one deadline, now + SECONDS, on every part (PEXPIREAT), so that
           the parts expire together.
  persist  removes every part's deadline.
  drop     DEL of every part, once each one is a filter of the same
           parameters; with --damaged, of the parts that are left of a
           damaged filter. A key of a part's name holding anything else
           deletes nothing.

Flags:
  --node HOST:PORT    a node to start from. Required.
  --parts N           number of parts, 1..16384; the same for every command
                      on the filter (part N existing means it is wrong).
                      Required.
  --user U            ACL user for AUTH (with REDISCLI_AUTH).
  --wait-replicas R   the commands that write: after each node's batch,
                      WAIT for R replicas; a write is acknowledged only when
                      R replicas have it (else add reports the key as
                      failed, NOTREPLICATED, and the others fail).
  --wait-timeout MS   WAIT's timeout (default 10000).
  --damaged           drop: delete what is left of a damaged filter.
  --type, --capacity, --fpp, --shards, --nonscaling, --expansion,
  --bucket-size       create: the parts' parameters, as for `create`
                      (--capacity is the whole filter's).

Example:
  shardfilter cluster create urls --node 127.0.0.1:7000 --parts 16 \
      --type bloom --capacity 1G --fpp 0.01
  zcat urls.gz | shardfilter cluster add urls --node 127.0.0.1:7000 --parts 16
  shardfilter cluster expire urls 86400 --node 127.0.0.1:7000 --parts 16
)"},
      {"demo",
       RunDemoCommand,
       0,
       0,
       {"items", "probes", "fpp"},
       R"(Usage: shardfilter demo [--items N] [--probes N] [--fpp P]

Builds every filter type in memory, adds N keys, queries absent keys, and
prints the measured false-positive rate against the target, bits per key
and throughput. Touches no store. Exit code 1 if a filter broke a promise.

Flags:
  --items N    keys added to each filter (default 4M)
  --probes N   absent keys queried (default 4M)
  --fpp P      target false-positive rate (default 0.01)

Example:
  shardfilter demo --items 1M --probes 1M --fpp 0.001
)"},
      {"dedup",
       RunDedup,
       0,
       1,
       {"ttl", "expected", "fpp", "durability", "quiet"},
       kDedupUsage},  // text in tools/cli/cli_dedup.cc
      // Texts in tools/cli/cli_transfer.cc, cli_import.cc, cli_experiment.cc.
      {"export", RunExport, 2, 2, {}, kExportUsage},
      {"import-filter",
       RunImportFilter,
       2,
       2,
       {"durability"},
       kImportFilterUsage},
      {"import",
       RunImport,
       1,
       kMany,
       {"binary", "skip", "durability", "progress-every", "quiet"},
       kImportUsage},
      {"migrate",
       RunMigrate,
       1,
       kMany,
       {"type",
        "capacity",
        "fpp",
        "shards",
        "seed",
        "durability",
        "k",
        "layout",
        "fingerprint-bits",
        "bucket-size",
        "nonscaling",
        "expansion",
        "retain-hashes",
        "drop-hashes",
        "from",
        "fold",
        "to-db",
        "to-name",
        "binary",
        "verify-sample",
        "probes",
        "stop-after",
        "restart",
        "progress-every",
        "quiet"},
       kMigrateUsage},  // text in tools/cli/cli_migrate.cc
      {"experiment",
       RunExperiment,
       1,
       1,
       {"type", "capacity", "fpp", "probes", "out"},
       kExperimentUsage},
  };
  return kCommands;
}

std::span<const FlagDef> AllFlags() { return kFlags; }
std::span<const std::string_view> GlobalFlags() { return kGlobalFlags; }
std::string_view MainUsage() { return kMainUsage; }

}  // namespace shardfilter::tools
