#include "tools/commands/staging.h"

#include <new>
#include <string>
#include <utility>

#include "tools/commands/keyspace.h"

namespace shardfilter::commands {
namespace {

class BudgetedStaging final : public StagingBuffer {
 public:
  BudgetedStaging(std::unique_ptr<char[]> bytes, uint64_t size,
                  std::shared_ptr<MemoryBudget> budget)
      : StagingBuffer(bytes.get(), size),
        bytes_(std::move(bytes)),
        budget_(std::move(budget)) {}
  ~BudgetedStaging() override { budget_->Release(size()); }

 private:
  std::unique_ptr<char[]> bytes_;
  std::shared_ptr<MemoryBudget> budget_;
};

}  // namespace

Result<std::unique_ptr<StagingBuffer>> NewBudgetedStaging(
    std::shared_ptr<MemoryBudget> budget, uint64_t bytes,
    std::string_view what) {
  if (budget == nullptr) budget = MemoryBudget::Default();
  SF_RETURN_IF_ERROR(budget->Reserve(bytes, what));
  // Not zeroed: the pages are touched only as chunks arrive.
  std::unique_ptr<char[]> data(new (std::nothrow) char[bytes]);
  if (data == nullptr) {
    budget->Release(bytes);
    return Status::ResourceExhausted(std::string(what) + " of " +
                                     std::to_string(bytes) +
                                     " bytes cannot be allocated");
  }
  return std::unique_ptr<StagingBuffer>(
      new BudgetedStaging(std::move(data), bytes, std::move(budget)));
}

Result<std::unique_ptr<StagingBuffer>> Keyspace::NewStaging(
    uint64_t bytes, std::string_view what) {
  return NewBudgetedStaging(nullptr, bytes, what);
}

}  // namespace shardfilter::commands
