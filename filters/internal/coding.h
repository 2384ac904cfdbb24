// Little-endian fixed-width encoding and a bounds-checked reader, for the
// serialized filter formats. (RocksDB keys use big-endian: see
// persistence/.) Thread-compatible.
#ifndef SHARDFILTER_FILTERS_INTERNAL_CODING_H_
#define SHARDFILTER_FILTERS_INTERNAL_CODING_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace shardfilter::internal {

inline void PutU8(std::string* out, uint8_t v) {
  out->push_back(static_cast<char>(v));
}
inline void PutU16(std::string* out, uint16_t v) {
  for (int i = 0; i < 2; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
inline void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
inline void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
inline void PutF64(std::string* out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  PutU64(out, bits);
}

inline uint64_t LoadLE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return v;
}

// Reads fixed-width values from a byte range. Every Read* returns false
// (and leaves the output untouched) past the end; callers turn that into a
// Corruption status naming the field.
class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}

  bool ReadU8(uint8_t* v) { return Read(1, v); }
  bool ReadU16(uint16_t* v) { return Read(2, v); }
  bool ReadU32(uint32_t* v) { return Read(4, v); }
  bool ReadU64(uint64_t* v) { return Read(8, v); }
  bool ReadF64(double* v) {
    uint64_t bits;
    if (!Read(8, &bits)) return false;
    std::memcpy(v, &bits, sizeof bits);
    return true;
  }
  bool ReadBytes(size_t n, std::string_view* v) {
    if (remaining() < n) return false;
    *v = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }

 private:
  template <typename T>
  bool Read(int bytes, T* v) {
    if (remaining() < static_cast<size_t>(bytes)) return false;
    *v = static_cast<T>(LoadLE(data_.data() + pos_, bytes));
    pos_ += bytes;
    return true;
  }

  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_INTERNAL_CODING_H_
