// The registry of owned counter stripes (filters/detail/thread_stripe.h:
// the ownership invariant and why it makes a plain store safe).
#include "shardfilter/filters/detail/thread_stripe.h"

#include <bit>

namespace shardfilter::internal {

__thread uint32_t tls_counter_stripe = UINT32_MAX;

namespace {

static_assert(kOwnedStripes <= 32, "one bit per owned stripe in g_claimed");

// Bit s set: stripe s has a live owner.
std::atomic<uint32_t> g_claimed{0};

// Gives the thread's stripe back when the thread ends. Later bumps of the
// thread (another thread_local's destructor) take the shared stripe.
struct StripeRelease {
  uint32_t stripe = kSharedStripe;
  ~StripeRelease() {
    tls_counter_stripe = kSharedStripe;
    if (stripe < kOwnedStripes) {
      // Release: this thread's stores to the stripe happen-before the next
      // owner's claim (acquire) and so its first load.
      g_claimed.fetch_and(~(uint32_t{1} << stripe), std::memory_order_release);
    }
  }
};
thread_local StripeRelease t_stripe_release;

}  // namespace

uint32_t ClaimCounterStripe() {
  constexpr uint32_t kAll =
      kOwnedStripes == 32 ? ~uint32_t{0} : (uint32_t{1} << kOwnedStripes) - 1;
  uint32_t claimed = g_claimed.load(std::memory_order_relaxed);
  uint32_t s = kSharedStripe;
  while ((claimed & kAll) != kAll) {
    const uint32_t free = static_cast<uint32_t>(std::countr_one(claimed));
    if (g_claimed.compare_exchange_weak(
            claimed, claimed | (uint32_t{1} << free), std::memory_order_acquire,
            std::memory_order_relaxed)) {
      s = free;
      break;
    }
  }
  t_stripe_release.stripe = s;  // registers the release at the thread's end
  tls_counter_stripe = s;
  return s;
}

uint32_t ClaimedCounterStripes() {
  return static_cast<uint32_t>(
      std::popcount(g_claimed.load(std::memory_order_acquire)));
}

}  // namespace shardfilter::internal
