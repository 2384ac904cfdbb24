// Segments made ahead of use (format.h P3): a background thread keeps one
// spare per slot that asked for one, so a writer that fills its segment
// switches to the next without waiting for a file to be made. A slot is
// whatever the log numbers its writers by (engine/internal/filter_log.h:
// its shards, then its writer stripes).
//
//  R1. A spare is never written before it is taken (Take, under the lock):
//      a spare left is empty, and its owner removes it.
//  R2. Footprint (filter_log.h L6): the thread exits once no slot has
//      wanted a spare for a second, and starts again on the next Want; a
//      slot idle through a whole checkpoint interval gives its spare back
//      (Release) and, if it writes again, makes its next segment itself.
//
// Thread safety: every method may be called concurrently; `make` runs on
// the spare thread, outside the lock.
#ifndef SHARDFILTER_PERSISTENCE_LOG_SPARES_H_
#define SHARDFILTER_PERSISTENCE_LOG_SPARES_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/log/env.h"
#include "shardfilter/persistence/log/segment.h"

namespace shardfilter::persistence {

class SpareSegments {
 public:
  using MakeFn = std::function<Result<std::shared_ptr<Segment>>(uint32_t slot)>;
  // `make` makes a slot's next segment (a failure only means the writer
  // makes it itself).
  SpareSegments(std::shared_ptr<Env> env, uint32_t slots, MakeFn make);
  // Stops the thread and removes the spares left (R1).
  ~SpareSegments();
  SpareSegments(const SpareSegments&) = delete;
  SpareSegments& operator=(const SpareSegments&) = delete;

  // The slot's spare when it has one of at least `min_bytes`, else null.
  std::shared_ptr<Segment> Take(uint32_t slot, uint64_t min_bytes = 0);
  // Asks for the slot's next spare (R2: starts the thread if it exited).
  void Want(uint32_t slot);
  // R2: removes the spare of every slot `idle` names (called under the
  // lock; it must not call back).
  void Release(const std::function<bool(uint32_t slot)>& idle);

 private:
  void Loop();

  const std::shared_ptr<Env> env_;
  const MakeFn make_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Segment>> spare_;  // GUARDED_BY(mu_)
  std::vector<char> wanted_;                     // GUARDED_BY(mu_)
  bool stop_ = false;                            // GUARDED_BY(mu_)
  // Loop has not returned (R2: it returns when idle).
  bool running_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;    // GUARDED_BY(mu_)
};

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_LOG_SPARES_H_
