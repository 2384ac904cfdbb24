// One segment of the filter journal (log/format.h sections 1 and 2): a
// file of a 4096-byte header and a records area, mapped through the Env
// (log/env.h). A writer appends records into data() with plain stores
// (format.h's writers), under its log's discipline (engine/internal/
// filter_log.h); the segment itself takes no lock.
//
// Thread safety: header(), path(), data(), size() and records() are
// immutable after creation; Sync and ReleaseSpace may be called from any
// thread; max_seq is atomic.
#ifndef SHARDFILTER_PERSISTENCE_LOG_SEGMENT_H_
#define SHARDFILTER_PERSISTENCE_LOG_SEGMENT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/log/env.h"
#include "shardfilter/persistence/log/format.h"

namespace shardfilter::persistence {

class Segment {
 public:
  // Makes the file (Env::CreateMapped: blocks allocated, so a full disk is
  // an error here, not a SIGBUS later; header synced; made under a
  // temporary name, renamed, directory synced: P3). `prefault_write`
  // (MapOptions): a writer's first store to a page takes no fault; a sync
  // journal, whose first fdatasync would then write the whole segment,
  // does not ask for it. InvalidArgument when the header does not fit.
  static Result<std::shared_ptr<Segment>> Create(Env& env,
                                                 const std::string& path,
                                                 const SegmentHeader& h,
                                                 bool prefault_write = false);
  // Maps an existing segment read-only and decodes its header. A file that
  // is gone is an IOError (it was listed: never a filter "not found").
  static Result<std::shared_ptr<Segment>> OpenExisting(Env& env,
                                                       const std::string& path);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  const SegmentHeader& header() const { return header_; }
  const std::string& path() const { return path_; }
  char* data() const { return base_; }
  size_t size() const { return size_; }
  // The records area (the mapping past the header, or what the file holds).
  std::string_view records() const {
    return size_ <= kSegmentHeaderBytes
               ? std::string_view()
               : std::string_view(base_ + kSegmentHeaderBytes,
                                  size_ - kSegmentHeaderBytes);
  }
  // fdatasync: every record the mapping held when it began is durable
  // (and the test fault hook, SetJournalFaultForTesting). OK for a segment
  // read back (nothing of ours to sync).
  Status Sync();
  // For a removed segment that nobody will write again but that a
  // reference may keep mapped (a thread segment retired while its writer is
  // idle, engine/internal/filter_log.h L7): frees its blocks and page cache
  // now (MappedFile::ReleaseSpace), not when the last reference unmaps it,
  // which for an idle writer may be never. Its pages read as zeros from
  // then on. Best effort.
  void ReleaseSpace();

  // A per-shard segment: the highest seq reserved in it, set by its writer
  // when it stops being the active segment (its log keeps the active one's
  // apart, so an op writes no Segment line); for a loaded segment, the
  // highest replayed from it. A thread segment: its generation (T2).
  // SegmentList retires by it.
  std::atomic<uint64_t> max_seq{0};

 private:
  Segment() = default;
  std::string path_;
  SegmentHeader header_;
  char* base_ = nullptr;
  size_t size_ = 0;
  std::unique_ptr<MappedFile> file_;      // a writable segment's
  std::unique_ptr<ReadOnlyFile> loaded_;  // a segment read back
};

// Tests: called before every segment creation ("create") and sync
// ("sync") with the path; a non-OK result is returned instead of doing it.
// After a successful sync (and at creation), `synced` (if set) receives the
// path and a copy of the mapping taken before the sync began: what a power
// loss right after it would keep at least (tests act out a power loss by
// writing back only that copy). A fault-injecting file system given to the
// store (tests/fault_fs.h) covers the same without these.
using JournalFaultFn =
    std::function<Status(std::string_view what, const std::string& path)>;
void SetJournalFaultForTesting(JournalFaultFn fn);
using JournalSyncedFn =
    std::function<void(const std::string& path, std::string_view bytes)>;
void SetJournalSyncedForTesting(JournalSyncedFn fn);
// Tests: segments of this many bytes (a multiple of 4096 above the header)
// for filters made after the call; 0 restores the default.
void SetSegmentBytesForTesting(uint64_t bytes);
uint64_t SegmentBytesForTesting();

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_LOG_SEGMENT_H_
