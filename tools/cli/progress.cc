#include "tools/cli/progress.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>
#include <ostream>

namespace shardfilter::tools {
namespace {

// Lock-free, so that the handler may store to it.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void OnSigint(int) {
  g_interrupted.store(true, std::memory_order_relaxed);
}

// 1234567 -> "1.23M", for the terminal line.
std::string Human(double v) {
  char buf[32];
  if (v >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.2fG", v / 1e9);
  } else if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  }
  return buf;
}

std::string HoursMinutes(double seconds) {
  uint64_t s = static_cast<uint64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%llu:%02llu:%02llu",
                  static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s / 60 % 60),
                  static_cast<unsigned long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%llu:%02llu",
                  static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  }
  return buf;
}

}  // namespace

Progress::Progress(std::ostream& out, ProgressOptions options)
    : out_(out),
      options_(std::move(options)),
      start_(Clock::now()),
      last_print_(start_) {}

std::string Progress::Line(uint64_t items, uint64_t units,
                           Clock::time_point now) const {
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double rate = secs > 0 ? items / secs : 0;
  const bool known = options_.total_units > 0;
  const double frac =
      known ? std::min(1.0, static_cast<double>(units) / options_.total_units)
            : 0;
  // Time left from the units' rate: keys may differ in size.
  const double eta =
      known && units > 0
          ? secs *
                (options_.total_units - std::min(units, options_.total_units)) /
                units
          : -1;
  char buf[160];
  std::string line = options_.label + ": ";
  if (options_.terminal) {
    if (known) {
      std::snprintf(buf, sizeof buf, "%5.1f%%  ", frac * 100);
      line += buf;
    }
    line +=
        Human(static_cast<double>(items)) + " keys  " + Human(rate) + " keys/s";
    if (eta >= 0) line += "  ETA " + HoursMinutes(eta);
  } else {
    std::snprintf(buf, sizeof buf, "%llu keys, %.0f keys/s",
                  static_cast<unsigned long long>(items), rate);
    line += buf;
    if (known) {
      std::snprintf(buf, sizeof buf, ", %.1f%%", frac * 100);
      line += buf;
    }
    if (eta >= 0) {
      std::snprintf(buf, sizeof buf, ", ETA %.0f s", eta);
      line += buf;
    }
  }
  return line;
}

void Progress::Update(uint64_t items, uint64_t units) {
  const Clock::time_point now = Clock::now();
  const auto since = now - last_print_;
  bool due;
  if (options_.terminal) {
    due = since >= std::chrono::milliseconds(100);
  } else {
    due = since >= std::chrono::seconds(1) ||
          (options_.every_items > 0 &&
           items - last_items_ >= options_.every_items);
  }
  if (!due) return;
  last_print_ = now;
  last_items_ = items;
  std::string line = Line(items, units, now);
  if (options_.terminal) {
    size_t width = line.size();
    if (width < last_width_) line.append(last_width_ - width, ' ');
    last_width_ = width;
    out_ << '\r' << line;
  } else {
    out_ << line << '\n';
  }
  out_.flush();
}

void Progress::Finish(uint64_t items, uint64_t units, const std::string& note) {
  std::string line = Line(items, units, Clock::now());
  if (!note.empty()) line += " (" + note + ")";
  if (options_.terminal) {
    if (line.size() < last_width_) line.append(last_width_ - line.size(), ' ');
    out_ << '\r';
  }
  out_ << line << '\n';
  out_.flush();
}

bool IsTerminal(const std::ostream& s) {
  return &s == &std::cerr && isatty(STDERR_FILENO) == 1;
}

struct InterruptGuard::Saved {
  struct sigaction old;
};

InterruptGuard::InterruptGuard() : saved_(std::make_unique<Saved>()) {
  g_interrupted.store(false, std::memory_order_relaxed);
  struct sigaction sa = {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  // Restart reads: the loop checks the flag between batches, and a read
  // interrupted half way would look like an input error.
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &saved_->old);
}

InterruptGuard::~InterruptGuard() { sigaction(SIGINT, &saved_->old, nullptr); }

bool InterruptGuard::Interrupted() {
  return g_interrupted.load(std::memory_order_relaxed);
}

}  // namespace shardfilter::tools
