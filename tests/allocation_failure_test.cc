// Out of memory is ResourceExhausted for every filter type, from Create and
// from Deserialize alike, never InvalidArgument (as if the bytes were bad).
// Each case runs in a child whose address space is capped just above what it
// already uses, so the table cannot be allocated; the child reports the
// status code it got.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "shardfilter/filters/filter.h"
#include "test_util.h"

namespace shardfilter {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// The status code `fn` returns in a child limited to its current virtual
// size plus `headroom` bytes; -1 when the child did not exit normally.
int CodeUnderCap(const std::function<StatusCode()>& fn, uint64_t headroom) {
  const pid_t pid = fork();
  if (pid == 0) {
    long pages = 0;
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr || std::fscanf(f, "%ld", &pages) != 1) _exit(100);
    std::fclose(f);
    const rlim_t cap =
        static_cast<rlim_t>(pages) * sysconf(_SC_PAGESIZE) + headroom;
    struct rlimit r = {cap, cap};
    if (setrlimit(RLIMIT_AS, &r) != 0) _exit(101);
    _exit(static_cast<int>(fn()));
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

class AllocationFailureTest : public ::testing::TestWithParam<FilterType> {};

FilterParams Params(FilterType type) {
  FilterParams p;
  p.type = type;
  p.capacity = 8'000'000;  // tens of MB of table for every type
  p.fpp = 0.01;
  return p;
}

TEST_P(AllocationFailureTest, CreateAndDeserializeSayResourceExhausted) {
  if (kSanitized) GTEST_SKIP() << "sanitizers reserve the address space";
  auto made = CreateFilter(Params(GetParam()));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  const std::string bytes = (*made)->Serialize();
  ASSERT_GT(bytes.size(), uint64_t{8} << 20);
  made->reset();
  const uint64_t headroom = 2 << 20;  // far below the table

  EXPECT_EQ(
      CodeUnderCap(
          [&] { return CreateFilter(Params(GetParam())).status().code(); },
          headroom),
      static_cast<int>(StatusCode::kResourceExhausted));
  EXPECT_EQ(
      CodeUnderCap([&] { return DeserializeFilter(bytes).status().code(); },
                   headroom),
      static_cast<int>(StatusCode::kResourceExhausted));
  // The same calls with room succeed (the cap is what failed them).
  EXPECT_EQ(
      CodeUnderCap([&] { return DeserializeFilter(bytes).status().code(); },
                   uint64_t{1} << 30),
      static_cast<int>(StatusCode::kOk));
}

INSTANTIATE_TEST_SUITE_P(Types, AllocationFailureTest,
                         shardfilter::testing::AllFilterTypes(),
                         shardfilter::testing::FilterTypeParamName);

}  // namespace
}  // namespace shardfilter
