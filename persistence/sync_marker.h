// The sync marker: where the store records, outside RocksDB's write-ahead
// log, how far the log must reach (docs/format-store.md, "The sync
// marker"; docs/design.md, "A write-ahead log cut short").
//
// RocksDB replays a log that ends inside a record quietly (the torn tail a
// power loss leaves; persistence/store.cc keeps that mode on purpose), so a
// log cut short by damage (truncated, half of it lost) looks like a clean
// one with fewer writes. Under durability sync every acknowledged write was
// synced, so no power loss can take it: a log ending before it is damage.
// The marker is how the store knows, at open, what the log must hold.
//
// File `SHARDFILTER-SYNCED` in the store directory, 65,536 bytes: two
// pages of 32,768 (integers little-endian):
//   +0      "SFSYNCD1"
//   +8      u32 version (1)
//   +12     u32 slot count N (4087)
//   +16     u64 generation (>= 1; the page with the higher wins)
//   +24     zeros up to +64
//   +64     N x u64: per slot, the RocksDB sequence of the last write
//           acknowledged under durability sync of an object whose slot it is
//   +32760  u64 XXH3 of bytes [0, 32760) of the page
// An object's slot: XXH3 of its kind byte ('f' filter, 'd' dedup set) and
// name, modulo N.
//
// Invariants:
//  W1. An op of durability sync written through RocksDB's log (a dedup
//      set's write; the journal entries of a filter that journals in
//      RocksDB: retained hashes, tables under 1 MiB) is acknowledged only
//      once a synced page holds, in its object's slot, a sequence at least
//      its write's last. Concurrent writers share one page write (group
//      commit, as RocksDB's for the log).
//  W2. Generation g is written to page g % 2 and synced before anyone is
//      acknowledged by it: a write torn by a power loss spoils only that
//      page, and the other (g - 1) covers every op acknowledged before.
//  W3. The marker is read before RocksDB replays its log; a slot above the
//      last sequence the log gave back means writes acknowledged under
//      sync were lost with the log: damage, named per object.
//  W4. A writable open that finds damage records it per object in the
//      default column family (synced: the loss record below) before it
//      zeroes those slots (new writes take sequences from the end of the
//      shorter log): the objects stay unavailable at every later open until
//      they are dropped or created anew. A read-only open writes nothing and
//      answers from what it read.
//  W5. A page write that fails (EIO) is sticky: the op that needed it is
//      durable (its log write was synced) and acknowledged, but every later
//      write of durability sync through RocksDB fails before it is made,
//      with IOError naming the marker, until the store is reopened.
//
// Thread safety: SyncMarker's methods may be called concurrently.
#ifndef SHARDFILTER_PERSISTENCE_SYNC_MARKER_H_
#define SHARDFILTER_PERSISTENCE_SYNC_MARKER_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/status.h"

namespace rocksdb {
class FileSystem;
class FSRandomRWFile;
class WriteBatch;
}  // namespace rocksdb

namespace shardfilter::persistence {

inline constexpr const char* kSyncMarkerFile = "SHARDFILTER-SYNCED";
inline constexpr uint32_t kSyncMarkerVersion = 1;
inline constexpr uint32_t kSyncMarkerSlots = 4087;
inline constexpr size_t kSyncMarkerPageBytes = 32768;

// What an object is, in its slot and in its loss record.
enum class SyncedKind : char { kFilter = 'f', kDedupSet = 'd' };

uint32_t SyncMarkerSlot(SyncedKind kind, std::string_view name);

// The marker's newest whole page.
struct SyncMarkerState {
  uint64_t generation = 0;
  std::vector<uint64_t> slots;  // kSyncMarkerSlots
};

std::string EncodeSyncMarkerPage(const SyncMarkerState& s);
// Corruption naming `what` when the page is not whole, NotSupported for a
// version from the future.
Result<SyncMarkerState> DecodeSyncMarkerPage(std::string_view page,
                                             const std::string& what);

// <dir>/SHARDFILTER-SYNCED's newest whole page: nullopt when there is no
// file; Corruption naming the file when neither page is whole (or the file
// has the wrong size); NotSupported for a version from the future. The
// marker is read and written through the store's file system (its Env's:
// what RocksDB's own files go through).
Result<std::optional<SyncMarkerState>> ReadSyncMarker(rocksdb::FileSystem* fs,
                                                      const std::string& dir);

// The last RocksDB sequence of a batch DB::Write wrote (RocksDB stores the
// first in the batch's header, rocksdb/write_batch.h's rep: u64 sequence |
// u32 count | records, the log record's own bytes).
uint64_t WrittenLastSequence(const rocksdb::WriteBatch& batch);

class SyncMarker {
 public:
  // Opens the marker for writing: `current` is what ReadSyncMarker read
  // (nullopt: there is none, it is created: temporary file, synced,
  // renamed, directory synced).
  static Result<std::unique_ptr<SyncMarker>> Open(
      rocksdb::FileSystem* fs, const std::string& dir,
      std::optional<SyncMarkerState> current);
  ~SyncMarker();
  SyncMarker(const SyncMarker&) = delete;
  SyncMarker& operator=(const SyncMarker&) = delete;

  // W5: OK unless a page write failed.
  Status failure() const;
  // W1: returns once a synced page holds `seq` (or more) in `slot`. After a
  // failed page write (W5) it returns at once: see there.
  void Acknowledge(uint32_t slot, uint64_t seq);
  // W4: zeroes the slots (one synced page).
  Status Clear(std::span<const uint32_t> slots);

 private:
  SyncMarker() = default;
  // Writes `page` to page `page.generation % 2` and syncs it.
  Status WritePage(const SyncMarkerState& page);

  std::string path_;
  std::unique_ptr<rocksdb::FSRandomRWFile> file_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  SyncMarkerState durable_;     // GUARDED_BY(mu_): the newest synced page
  std::vector<uint64_t> want_;  // GUARDED_BY(mu_): what the next page holds
  bool writing_ = false;        // GUARDED_BY(mu_)
  Status failure_;              // GUARDED_BY(mu_)
};

// The loss record (W4), default column family:
//   key   0xF7 'W' 'l' | u8 kind | u16 BE name length | name
//   value u8 version (1) | u64 first lost sequence | u64 last | u64 XXH3 of
//         the 17 bytes before
struct WalLoss {
  uint64_t first = 0;
  uint64_t last = 0;
};
std::string WalLossPrefix();
std::string WalLossKey(SyncedKind kind, std::string_view name);
// The kind and name of a loss record's key; false when it is not one.
bool ParseWalLossKey(std::string_view key, SyncedKind* kind, std::string* name);
std::string EncodeWalLoss(const WalLoss& loss);
Result<WalLoss> DecodeWalLoss(std::string_view value, const std::string& what);
// The error an object that lost acknowledged writes answers.
Status WalLossError(SyncedKind kind, std::string_view name,
                    const WalLoss& loss);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_SYNC_MARKER_H_
