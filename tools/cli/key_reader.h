// Keys from files or stdin, one per line or length-prefixed binary, with
// the bytes consumed so far (for progress): `import` and `migrate --keys`.
// Used by one thread at a time.
#ifndef SHARDFILTER_TOOLS_CLI_KEY_READER_H_
#define SHARDFILTER_TOOLS_CLI_KEY_READER_H_

#include <sys/stat.h>

#include <cstdint>
#include <fstream>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "shardfilter/filters/status.h"
#include "tools/cli/cli_args.h"

namespace shardfilter::tools {

// Keys from a list of inputs, in order, with the bytes consumed so far.
class KeyReader {
 public:
  KeyReader(std::vector<std::string> paths, std::istream& in, bool binary)
      : paths_(std::move(paths)), stdin_(in), binary_(binary) {
    if (paths_.empty()) paths_.push_back("-");
  }

  // The next key into *key; false at the end of everything or on error.
  bool Next(std::string* key) {
    while (status_.ok()) {
      if (cur_ == nullptr && !Open()) return false;
      if (ReadOne(key)) return true;
      if (cur_->bad()) {
        status_ =
            Status::IOError("reading " + Quoted(paths_[next_ - 1]) + " failed");
      }
      cur_ = nullptr;
      file_.reset();
    }
    return false;
  }
  uint64_t bytes() const { return bytes_; }
  const std::vector<std::string>& paths() const { return paths_; }
  const Status& status() const { return status_; }

  // Sum of the sizes of the inputs when all are regular files, else 0.
  uint64_t TotalBytes() const {
    uint64_t total = 0;
    for (const std::string& p : paths_) {
      struct stat st;
      if (p == "-" || ::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return 0;
      }
      total += static_cast<uint64_t>(st.st_size);
    }
    return total;
  }

 private:
  bool Open() {
    if (next_ >= paths_.size()) return false;
    const std::string& p = paths_[next_++];
    if (p == "-") {
      cur_ = &stdin_;
      return true;
    }
    file_ = std::make_unique<std::ifstream>(p, std::ios::binary);
    if (!*file_) {
      status_ = Status::IOError("cannot open " + Quoted(p));
      return false;
    }
    cur_ = file_.get();
    return true;
  }

  bool ReadOne(std::string* key) {
    if (!binary_) {
      if (!std::getline(*cur_, *key)) return false;
      bytes_ += key->size() + 1;
      if (!key->empty() && key->back() == '\r') key->pop_back();
      return true;
    }
    unsigned char len[4];
    cur_->read(reinterpret_cast<char*>(len), 4);
    if (cur_->gcount() == 0) return false;
    const uint32_t n = len[0] | len[1] << 8 | len[2] << 16 |
                       static_cast<uint32_t>(len[3]) << 24;
    if (cur_->gcount() != 4 || n > kMaxBinaryKey) {
      status_ = Status::Corruption(
          Quoted(paths_[next_ - 1]) + ": " +
          (cur_->gcount() != 4
               ? "truncated length"
               : "key length " + std::to_string(n) + " over the 64 MiB limit") +
          " at byte " + std::to_string(bytes_));
      return false;
    }
    key->resize(n);
    cur_->read(key->data(), n);
    if (static_cast<uint32_t>(cur_->gcount()) != n) {
      status_ = Status::Corruption(Quoted(paths_[next_ - 1]) +
                                   ": truncated key at byte " +
                                   std::to_string(bytes_));
      return false;
    }
    bytes_ += 4 + n;
    return true;
  }

  static constexpr uint32_t kMaxBinaryKey = 64u << 20;
  std::vector<std::string> paths_;
  std::istream& stdin_;
  const bool binary_;
  size_t next_ = 0;
  std::istream* cur_ = nullptr;
  std::unique_ptr<std::ifstream> file_;
  uint64_t bytes_ = 0;
  Status status_;
};

}  // namespace shardfilter::tools

#endif  // SHARDFILTER_TOOLS_CLI_KEY_READER_H_
