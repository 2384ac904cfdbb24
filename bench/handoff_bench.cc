// What handing one command to a worker thread and back costs: the floor
// under RedisModule_BlockClient + a worker (docs/redis-module.md,
// "Threading"). The caller wakes the worker through a condition variable;
// the worker answers through a pipe, as RedisModule_UnblockClient wakes
// Redis's event loop. Redis's own blocked-client bookkeeping comes on top.
//
//   build/bench/handoff_bench
//   taskset -c 0 build/bench/handoff_bench    # both threads on one core
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace {

void BM_HandoffRoundTrip(benchmark::State& state) {
  std::mutex mu;
  std::condition_variable cv;
  bool request = false, stop = false;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) std::abort();
  std::thread worker([&] {
    for (;;) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return request || stop; });
      if (stop) return;
      request = false;
      lock.unlock();
      const char c = 1;
      if (::write(pipe_fds[1], &c, 1) != 1) std::abort();
    }
  });
  for (auto _ : state) {
    {
      std::lock_guard lock(mu);
      request = true;
    }
    cv.notify_one();
    char c;
    if (::read(pipe_fds[0], &c, 1) != 1) std::abort();
  }
  {
    std::lock_guard lock(mu);
    stop = true;
  }
  cv.notify_one();
  worker.join();
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}
BENCHMARK(BM_HandoffRoundTrip)->Unit(benchmark::kMicrosecond);

}  // namespace
BENCHMARK_MAIN();
