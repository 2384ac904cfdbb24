// What a log does with its segments once they exist: lists them in the
// order they became active, syncs them by group commit, and retires them
// once a checkpoint holds their records (SegmentList); and the stop state
// a failed sync leaves (WriteStop). The filter journal's per-shard logs
// and its thread segments use them (engine/internal/filter_log.h).
//
// Invariants (the code cites them):
//  C1. Ordinals, not positions: a segment keeps the ordinal it was listed
//      with. A retire may remove older segments while a syncer works
//      outside the lock; the syncer names what it synced by ordinal, so
//      segments listed meanwhile (after the newest it synced) stay for the
//      next sync, whatever was removed.
//  C2. Group commit: `synced` = s means records <= s are on disk. A writer
//      whose seq is above it either becomes the one syncing (it syncs every
//      segment listed since the last sync, then raises `synced` to the
//      watermark it read before syncing) or waits for the next sync
//      covering its seq: concurrent writers share one fdatasync. The newest
//      segment synced stays to sync (records land in it after its sync);
//      the older ones are complete.
//  C3. Retirement by seq (a per-shard log, once a checkpoint covering seq
//      committed): every listed segment but the newest whose max_seq <= seq
//      is removed. The newest may be the active one, written under a
//      reservation the retirer does not hold: it stays.
//      Retirement by generation (thread segments, format.h T2): every
//      listed segment whose generation (its max_seq) <= g is removed, the
//      active ones too; one still referenced elsewhere (an idle writer's
//      active segment, which it will not write again) gives its space back
//      at once (Segment::ReleaseSpace).
//  C4. Stop (engine/internal/filter_log.h L4): a sync that failed stops the
//      log's writes until a checkpoint heals it (L5): every later mutation
//      fails with the cause.
//
// Thread safety: every method may be called concurrently.
#ifndef SHARDFILTER_PERSISTENCE_LOG_SEGMENT_LIST_H_
#define SHARDFILTER_PERSISTENCE_LOG_SEGMENT_LIST_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/log/env.h"
#include "shardfilter/persistence/log/segment.h"

namespace shardfilter::persistence {

// C4. It keeps no name of its own (every filter has one, most never stop):
// the owner names itself when it stops it.
class WriteStop {
 public:
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }
  // OK unless stopped; else the IOError every mutation answers.
  Status status() const;
  // Stops the writes of `name` (the log's owner, for the message). The
  // first cause sticks (later ones are its consequences).
  void Stop(std::string_view name, const Status& cause);
  void Clear();

 private:
  std::atomic<bool> stopped_{false};
  mutable std::mutex mu_;
  Status status_;  // GUARDED_BY(mu_)
};

class SegmentList {
 public:
  // Lists a segment its writer activated: the next sync covers it (C2).
  void Add(std::shared_ptr<Segment> s);
  // Lists a segment read back at recovery: on disk already, never synced.
  void Adopt(std::shared_ptr<Segment> s);
  bool empty() const;

  // C2: returns OK once every record with seq <= last_seq is on disk.
  // `copied` is the log's watermark: every record with seq <= copied is
  // committed in a listed segment. A sync that fails stops `stop` (C4,
  // naming `name`, the log's owner) and returns its status; so does a wait
  // that finds it stopped.
  Status SyncThrough(uint64_t last_seq, const std::atomic<uint64_t>& copied,
                     WriteStop& stop, std::string_view name);
  // Records <= seq are durable without a sync of ours (a recovered log;
  // a committed checkpoint that holds them, L5): raises `synced` (and
  // `copied`, if lower, when given) and wakes the waiters.
  void MarkSynced(uint64_t seq, std::atomic<uint64_t>* copied = nullptr);

  // C3, removing files through `env`.
  void RetireThrough(uint64_t seq, Env& env);
  void RetireGenerations(uint64_t g, Env& env);

 private:
  struct Listed {
    uint64_t ordinal = 0;  // C1
    std::shared_ptr<Segment> seg;
  };
  mutable std::mutex mu_;
  std::condition_variable cv_;  // C2
  std::vector<Listed> listed_;  // GUARDED_BY(mu_): activation order
  uint64_t next_ordinal_ = 0;   // GUARDED_BY(mu_)
  // C2: listed segments with an ordinal below it hold no record that is
  // not on disk.
  uint64_t unsynced_from_ = 0;  // GUARDED_BY(mu_)
  uint64_t synced_ = 0;         // GUARDED_BY(mu_)
  bool syncing_ = false;        // GUARDED_BY(mu_)
};

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_LOG_SEGMENT_LIST_H_
