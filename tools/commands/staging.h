// StagingBuffer: bytes a connection holds between its commands (a
// BF/CF.LOADCHUNK sequence being gathered, a BF/CF.SCANDUMP copy being
// handed out), allocated by the host (Keyspace::NewStaging) and charged to
// its memory budget for as long as the buffer lives. The destructor frees
// the bytes and gives the charge back, whichever way the work ends: done,
// abandoned for a newer one, or the connection gone.
//
// Thread safety: a buffer belongs to one connection; NewBudgetedStaging may
// be called from any thread (MemoryBudget is thread-safe).
#ifndef SHARDFILTER_TOOLS_COMMANDS_STAGING_H_
#define SHARDFILTER_TOOLS_COMMANDS_STAGING_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "shardfilter/engine/memory_budget.h"
#include "shardfilter/filters/status.h"

namespace shardfilter::commands {

class StagingBuffer {
 public:
  virtual ~StagingBuffer() = default;
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;

  char* data() { return data_; }
  uint64_t size() const { return size_; }
  std::string_view view() const {
    return {data_, static_cast<size_t>(size_)};
  }

 protected:
  // `data`: `size` bytes owned by the subclass, freed by its destructor.
  StagingBuffer(char* data, uint64_t size) : data_(data), size_(size) {}

 private:
  char* const data_;
  const uint64_t size_;
};

// A heap buffer of `bytes` (contents undefined) charged to `budget` (null:
// MemoryBudget::Default()) until destroyed. ResourceExhausted, with
// nothing taken, when it does not fit in the budget or cannot be
// allocated. `what` names the use in the budget's message.
Result<std::unique_ptr<StagingBuffer>> NewBudgetedStaging(
    std::shared_ptr<MemoryBudget> budget, uint64_t bytes,
    std::string_view what);

}  // namespace shardfilter::commands

#endif  // SHARDFILTER_TOOLS_COMMANDS_STAGING_H_
