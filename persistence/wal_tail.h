// Whether a RocksDB write-ahead log ends inside a record: the torn tail a
// crash or power loss leaves (or a log cut short), which RocksDB's replay
// (kTolerateCorruptedTailRecords, persistence/store.cc) drops without a
// word. Store::Verify reports it so that a reader knows writes were cut off
// (docs/format-store.md, "Power loss, crashes and damage").
//
// The log format is RocksDB's (db/log_format.h, stable since LevelDB):
// 32 KiB blocks of physical records, each a 7-byte header (u32 masked
// CRC32C | u16 LE length | u8 type: 1 full, 2 first, 3 middle, 4 last;
// 5-8 the same for recycled logs, whose header adds a u32 log number) and
// its payload; fewer than 7 bytes left in a block are zero padding. A
// logical record is one full, or first, middles, last. Its payload is a
// WriteBatch: u64 LE first sequence | u32 LE count | entries.
//
// Checksums are RocksDB's to check (its replay does); this only follows
// the framing to the end of the file.
//
// Thread safety: a pure function of the file.
#ifndef SHARDFILTER_PERSISTENCE_WAL_TAIL_H_
#define SHARDFILTER_PERSISTENCE_WAL_TAIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/status.h"

namespace shardfilter::persistence {

struct WalTornTail {
  uint64_t offset = 0;  // where the incomplete record starts
  uint64_t bytes = 0;   // the file's length
  // The incomplete record's first sequence and count, when its first
  // fragment kept the 12 bytes that hold them (0: unknown).
  uint64_t first_seq = 0;
  uint32_t count = 0;
  bool zeros = false;  // the tail is zero bytes (a file system's unwritten
                       // blocks), not a cut record
};

// The torn tail of the log `bytes` (a whole file), or nullopt when it ends
// with a whole record (or is empty).
std::optional<WalTornTail> FindWalTornTail(std::string_view bytes);

// The same for the *.log files in `dir`: "<file>: <what>" for each log that
// ends inside a record. IOError when a log cannot be read.
Result<std::vector<std::string>> DescribeWalTornTails(const std::string& dir);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_WAL_TAIL_H_
