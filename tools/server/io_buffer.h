// IoBuffer: a growable byte buffer with a consumed prefix, for a
// connection's input. Bytes are read straight into its tail (no copy) and
// parsed in place; consumed bytes are dropped by moving the rest to the
// front only when that is cheap or needed (a memmove of the unparsed tail).
//
// Thread safety: none (one connection, one thread).
#ifndef SHARDFILTER_TOOLS_SERVER_IO_BUFFER_H_
#define SHARDFILTER_TOOLS_SERVER_IO_BUFFER_H_

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace shardfilter::server {

class IoBuffer {
 public:
  // The unconsumed bytes.
  std::string_view view() const {
    return {data_.get() + begin_, end_ - begin_};
  }
  size_t size() const { return end_ - begin_; }
  size_t capacity() const { return cap_; }

  // A tail of at least n writable bytes; call Commit with what was written.
  char* Tail(size_t n) {
    if (cap_ - end_ < n) {
      if (begin_ > 0 && cap_ - (end_ - begin_) >= n &&
          end_ - begin_ <= cap_ / 2) {
        Compact();
      } else {
        Grow(end_ - begin_ + n);
      }
    }
    return data_.get() + end_;
  }
  size_t tail_size() const { return cap_ - end_; }
  void Commit(size_t n) { end_ += n; }

  void Consume(size_t n) {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;  // empty: restart at the front
  }
  // Releases a large allocation once it is empty (a 512 MB bulk must not
  // pin its buffer for the connection's lifetime).
  void ShrinkIfIdle(size_t keep) {
    if (begin_ == end_ && cap_ > keep) {
      data_.reset();
      cap_ = begin_ = end_ = 0;
    }
  }

 private:
  void Compact() {
    std::memmove(data_.get(), data_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  void Grow(size_t need) {
    size_t cap = cap_ == 0 ? 16 * 1024 : cap_;
    while (cap < need) cap *= 2;
    std::unique_ptr<char[]> next(new char[cap]);
    if (end_ > begin_)
      std::memcpy(next.get(), data_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    data_ = std::move(next);
    cap_ = cap;
  }

  std::unique_ptr<char[]> data_;
  size_t cap_ = 0, begin_ = 0, end_ = 0;
};

}  // namespace shardfilter::server

#endif  // SHARDFILTER_TOOLS_SERVER_IO_BUFFER_H_
