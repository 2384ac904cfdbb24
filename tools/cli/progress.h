// A progress reporter for long CLI work (import now, migrate later), and
// the SIGINT flag that lets such work stop cleanly between batches.
//
// On a terminal it redraws one line with "\r" at most 10 times a second:
//   import users:  42.0%  4,200,000 keys  1.85M keys/s  ETA 0:03
// (percentage and ETA only when the total is known). Otherwise it prints
// plain lines, one per second (or every `every_items` items when set):
//   import users: 4200000 keys, 1850000 keys/s, 42.0%, ETA 3 s
// Finish() prints the final line (and the newline that ends the redrawn
// one).
//
// Thread safety: a Progress is used by one thread. The interrupt functions
// are async-signal-safe where they must be (the handler only stores to a
// lock-free atomic).
#ifndef SHARDFILTER_TOOLS_CLI_PROGRESS_H_
#define SHARDFILTER_TOOLS_CLI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

namespace shardfilter::tools {

struct ProgressOptions {
  // What is being done, e.g. "import users".
  std::string label;
  // Redraw one line with "\r" (a terminal) or print plain lines.
  bool terminal = false;
  // Units of work in all (input bytes, for import); 0 = unknown: no
  // percentage, no ETA.
  uint64_t total_units = 0;
  // Plain mode: also print every this many items (0 = only once a second).
  uint64_t every_items = 0;
};

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  Progress(std::ostream& out, ProgressOptions options);

  // `items` done so far (keys) and `units` of total_units done so far.
  // Prints when it is time to.
  void Update(uint64_t items, uint64_t units);
  // Prints the last line; `note` (e.g. "interrupted") is appended.
  void Finish(uint64_t items, uint64_t units, const std::string& note = "");

  // The line as it would be printed now (tests).
  std::string Line(uint64_t items, uint64_t units, Clock::time_point now) const;

 private:
  std::ostream& out_;
  const ProgressOptions options_;
  const Clock::time_point start_;
  Clock::time_point last_print_;
  uint64_t last_items_ = 0;
  size_t last_width_ = 0;  // terminal mode: to blank a longer old line
};

// True when `s` is the process's std::cerr and file descriptor 2 is a
// terminal.
bool IsTerminal(const std::ostream& s);

// Installs a SIGINT handler that raises the flag below (the previous
// handler comes back when the guard goes). One guard at a time.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // True once SIGINT arrived while the guard was installed.
  static bool Interrupted();

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

}  // namespace shardfilter::tools

#endif  // SHARDFILTER_TOOLS_CLI_PROGRESS_H_
