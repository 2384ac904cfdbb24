// Status and Result<T>: how every shardfilter API reports failure.
//
// No exception crosses the public API. A call that can fail returns a
// [[nodiscard]] Status (or Result<T> when it also produces a value); the
// message names what was wrong in words a user can act on. Both types are
// plain values: thread-compatible (const methods may be called concurrently).
#ifndef SHARDFILTER_FILTERS_STATUS_H_
#define SHARDFILTER_FILTERS_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace shardfilter {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,     // a parameter or input that can never be valid
  kNotFound = 2,            // no such filter / key / stored value
  kAlreadyExists = 3,       // create of an existing name
  kCorruption = 4,          // stored or serialized bytes fail a check
  kNotSupported = 5,        // valid request the structure cannot do (e.g.
                            // remove from a plain Bloom filter), or a format
                            // version from the future
  kFull = 6,                // no room: cuckoo table or non-scaling filter
  kIOError = 7,             // the file system or RocksDB failed
  kWrongType = 8,           // a named filter exists but is of another type
  kBusy = 9,                // resource held elsewhere (lock, running migration)
  kAborted = 10,            // interrupted by the caller (e.g. SIGINT)
  kResourceExhausted = 11,  // memory cannot be had now: a memory budget
                            // (engine/memory_budget.h) or the allocator
                            // refused; it may fit once memory is freed
  kTooLarge = 12,           // over a configured memory limit of one object
                            // (a filter's FilterSpec::max_bytes): the
                            // request never fits, whatever is freed
};

// Name of a code, e.g. "Corruption". Never null.
const char* StatusCodeName(StatusCode code);

// One pointer: OK is null, an error owns its code and message. The OK
// status every per-call path returns is so one store, its test one compare
// and its destruction one predicted branch (a {code, std::string} status
// costs ~10 instructions on each of an add's several returns).
class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  // kOk with a message is OK (the message is dropped).
  Status(StatusCode code, std::string msg)
      : rep_(code == StatusCode::kOk ? nullptr
                                     : new Rep{code, std::move(msg)}) {}
  Status(const Status& o) : rep_(o.rep_ ? new Rep(*o.rep_) : nullptr) {}
  Status(Status&& o) noexcept : rep_(o.rep_) { o.rep_ = nullptr; }
  Status& operator=(const Status& o) {
    if (this != &o) {
      Rep* copy = o.rep_ ? new Rep(*o.rep_) : nullptr;
      delete rep_;
      rep_ = copy;
    }
    return *this;
  }
  Status& operator=(Status&& o) noexcept {
    if (this != &o) {
      delete rep_;
      rep_ = o.rep_;
      o.rep_ = nullptr;
    }
    return *this;
  }
  ~Status() {
    if (rep_ != nullptr) [[unlikely]] {
      delete rep_;
    }
  }

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) {
    return {StatusCode::kNotFound, std::move(m)};
  }
  static Status AlreadyExists(std::string m) {
    return {StatusCode::kAlreadyExists, std::move(m)};
  }
  static Status Corruption(std::string m) {
    return {StatusCode::kCorruption, std::move(m)};
  }
  static Status NotSupported(std::string m) {
    return {StatusCode::kNotSupported, std::move(m)};
  }
  static Status Full(std::string m) {
    return {StatusCode::kFull, std::move(m)};
  }
  static Status IOError(std::string m) {
    return {StatusCode::kIOError, std::move(m)};
  }
  static Status WrongType(std::string m) {
    return {StatusCode::kWrongType, std::move(m)};
  }
  static Status Busy(std::string m) {
    return {StatusCode::kBusy, std::move(m)};
  }
  static Status Aborted(std::string m) {
    return {StatusCode::kAborted, std::move(m)};
  }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status TooLarge(std::string m) {
    return {StatusCode::kTooLarge, std::move(m)};
  }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // "" for OK.
  const std::string& message() const {
    return rep_ ? rep_->msg : EmptyMessage();
  }
  bool IsInvalidArgument() const {
    return code() == StatusCode::kInvalidArgument;
  }
  bool IsNotFound() const { return code() == StatusCode::kNotFound; }
  bool IsCorruption() const { return code() == StatusCode::kCorruption; }
  bool IsNotSupported() const { return code() == StatusCode::kNotSupported; }
  bool IsFull() const { return code() == StatusCode::kFull; }
  bool IsBusy() const { return code() == StatusCode::kBusy; }

  // "OK" or "<Code>: <message>".
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context: `.
  Status WithContext(std::string_view context) const;

 private:
  struct Rep {
    StatusCode code;
    std::string msg;
  };
  static const std::string& EmptyMessage();
  Rep* rep_ = nullptr;
};

// A value or the Status that explains why there is none. Constructing a
// Result from an OK Status is a programming error (asserted in debug builds,
// turned into an Internal-looking InvalidArgument otherwise).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok());
    if (status_.ok()) {
      status_ = Status::InvalidArgument("Result built from an OK status");
    }
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace shardfilter

// Early return on error, for functions returning Status or Result<T>.
#define SF_RETURN_IF_ERROR(expr)               \
  do {                                         \
    ::shardfilter::Status sf_status_ = (expr); \
    if (!sf_status_.ok()) return sf_status_;   \
  } while (0)

#define SF_CONCAT_INNER_(a, b) a##b
#define SF_CONCAT_(a, b) SF_CONCAT_INNER_(a, b)
// SF_ASSIGN_OR_RETURN(auto x, MakeX()); returns the error Status on failure.
#define SF_ASSIGN_OR_RETURN(lhs, rexpr) \
  SF_ASSIGN_OR_RETURN_IMPL_(SF_CONCAT_(sf_result_, __LINE__), lhs, rexpr)
#define SF_ASSIGN_OR_RETURN_IMPL_(res, lhs, rexpr) \
  auto res = (rexpr);                              \
  if (!res.ok()) return res.status();              \
  lhs = std::move(res).value()

#endif  // SHARDFILTER_FILTERS_STATUS_H_
