// MemoryAccount: what one ShardedFilter holds of a MemoryBudget
// (engine/memory_budget.h). Charged before each allocation of the filter's
// tables (its shards' first links, growth, a decoded shard), refunded when
// an allocation that was charged fails, and given back whole when the
// filter (its last owner of the account) is destroyed.
//
// Thread safety: every method may be called concurrently (growth of
// different shards charges at once).
#ifndef SHARDFILTER_ENGINE_INTERNAL_MEMORY_ACCOUNT_H_
#define SHARDFILTER_ENGINE_INTERNAL_MEMORY_ACCOUNT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "shardfilter/engine/memory_budget.h"

namespace shardfilter::internal {

class MemoryAccount {
 public:
  // Null: the process default (MemoryBudget::Default()).
  explicit MemoryAccount(std::shared_ptr<MemoryBudget> budget)
      : budget_(budget ? std::move(budget) : MemoryBudget::Default()) {}
  ~MemoryAccount() { budget_->Release(charged()); }
  MemoryAccount(const MemoryAccount&) = delete;
  MemoryAccount& operator=(const MemoryAccount&) = delete;

  // MemoryBudget::Reserve; on success the bytes are this account's.
  Status Charge(uint64_t bytes, std::string_view what) {
    SF_RETURN_IF_ERROR(budget_->Reserve(bytes, what));
    // Relaxed: a figure; the budget's CAS is what bounds memory.
    charged_.fetch_add(bytes, std::memory_order_relaxed);
    return Status::OK();
  }
  // Gives back bytes charged for an allocation that did not happen.
  void Refund(uint64_t bytes) {
    charged_.fetch_sub(bytes, std::memory_order_relaxed);
    budget_->Release(bytes);
  }
  uint64_t charged() const { return charged_.load(std::memory_order_relaxed); }
  const std::shared_ptr<MemoryBudget>& budget() const { return budget_; }

 private:
  const std::shared_ptr<MemoryBudget> budget_;
  std::atomic<uint64_t> charged_{0};
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_MEMORY_ACCOUNT_H_
