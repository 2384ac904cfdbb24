// The journal component's segment header and per-shard record codec
// (log/format.h, sections 1 and 2): the record layout's writer, reader and
// commit word change together and are kept in one file. The thread
// records' codec is thread_records.cc, the dedup log's dedup_log.cc.
#include "shardfilter/persistence/log/format.h"

#include <xxhash.h>

#include <cstring>

#include "shardfilter/filters/detail/xxh3_short.h"
#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/persistence/boot_id.h"

namespace shardfilter::persistence {

namespace {

using shardfilter::internal::ByteReader;
using shardfilter::internal::LoadLE;
using shardfilter::internal::PutU32;
using shardfilter::internal::PutU64;

constexpr char kMagic[8] = {'S', 'F', 'F', 'J', 'S', 'E', 'G', '1'};
constexpr uint64_t kSeed = kFormatSeed;
constexpr uint32_t kMaxBody = 1u << 30;

void StoreU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void StoreU64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

// Both checks are XXH3-64 (the format's); the short forms are inline
// (filters/detail/xxh3_short.h, pinned to xxHash by tests/hash_test.cc):
// every journalled add computes both.
uint32_t HeaderCheck(uint32_t len, uint64_t seq) {
  unsigned char b[12];
  StoreU32(reinterpret_cast<char*>(b), len);
  StoreU64(reinterpret_cast<char*>(b) + 4, seq);
  return static_cast<uint32_t>(detail::Xxh3Len0to16(b, sizeof b, kSeed)) | 1u;
}

// Over the 16 header bytes and the body (J1: seq, length and body).
uint64_t CommitWord(const char* p, uint32_t len) {
  if (16 + len <= 32) {  // a one-key record
    return detail::Xxh3Len17to32(reinterpret_cast<const unsigned char*>(p),
                                 16 + len, kSeed) |
           1u;
  }
  return XXH3_64bits_withSeed(p, 16 + len, kSeed) | 1u;
}

// A short record (J4): tag bits and check.
constexpr uint64_t kShortBit = 1, kShortCommitted = 2;
constexpr uint64_t kShortReserved = kShortBit;

uint64_t ShortTag(uint64_t seq, uint8_t op, uint64_t hash) {
  unsigned char b[16];
  StoreU64(reinterpret_cast<char*>(b), seq);
  StoreU64(reinterpret_cast<char*>(b) + 8, hash);
  const uint64_t check = detail::Xxh3Len0to16(b, sizeof b, kSeed + op);
  return (check << 32) | (uint64_t{op} << 2) | kShortCommitted | kShortBit;
}

std::atomic<uint64_t>* TagSlot(char* p) {
  return reinterpret_cast<std::atomic<uint64_t>*>(p);
}

std::atomic<uint64_t>* CommitSlot(char* p, uint32_t len) {
  // 8-aligned (records are), so the atomic view is well formed.
  return reinterpret_cast<std::atomic<uint64_t>*>(p + 16 + len);
}

bool AllZero(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

}  // namespace

std::string BootIdToRecord() {
  return CurrentBootId().substr(0, kMaxBootIdBytes);
}

bool LaterBoot(std::string_view written_boot) {
  return written_boot != BootIdToRecord();
}

std::string EncodeSegmentHeader(const SegmentHeader& h) {
  std::string out(kMagic, 8);
  PutU32(&out, h.version);
  PutU32(&out, h.shard);
  PutU64(&out, h.epoch);
  PutU64(&out, h.number);
  PutU64(&out, h.file_bytes);
  PutU32(&out, static_cast<uint32_t>(h.boot_id.size()));
  out += h.boot_id;
  PutU32(&out, static_cast<uint32_t>(h.name.size()));
  out += h.name;
  PutU64(&out, XXH3_64bits_withSeed(out.data(), out.size(), kSeed));
  return out;
}

Result<SegmentHeader> DecodeSegmentHeader(std::string_view bytes,
                                          const std::string& what) {
  auto bad = [&](const std::string& why) {
    return Status::Corruption(what + ": " + why);
  };
  if (bytes.size() > kSegmentHeaderBytes) {
    bytes = bytes.substr(0, kSegmentHeaderBytes);
  }
  ByteReader r(bytes);
  std::string_view magic, boot, name;
  SegmentHeader h;
  uint32_t boot_len = 0, name_len = 0;
  uint64_t check = 0;
  if (!r.ReadBytes(8, &magic) || magic != std::string_view(kMagic, 8)) {
    return bad("not a filter journal segment (bad magic)");
  }
  if (!r.ReadU32(&h.version) || !r.ReadU32(&h.shard) || !r.ReadU64(&h.epoch) ||
      !r.ReadU64(&h.number) || !r.ReadU64(&h.file_bytes) ||
      !r.ReadU32(&boot_len) || !r.ReadBytes(boot_len, &boot) ||
      !r.ReadU32(&name_len) || !r.ReadBytes(name_len, &name)) {
    return bad("truncated header");
  }
  const size_t covered = r.position();
  if (!r.ReadU64(&check) ||
      check != XXH3_64bits_withSeed(bytes.data(), covered, kSeed)) {
    return bad("header checksum mismatch");
  }
  // 3: a thread segment (section 2), told apart by its name too.
  if (h.version < 1 || h.version > 3) {
    return Status::NotSupported(what + ": version " +
                                std::to_string(h.version) +
                                " (this build reads 1 to 3)");
  }
  if (h.file_bytes <= kSegmentHeaderBytes || h.file_bytes % 4096 != 0) {
    return bad("bad size");
  }
  h.boot_id.assign(boot);
  h.name.assign(name);
  return h;
}

Status DecodeSegmentRecords(std::string_view records, uint32_t version,
                            bool later_boot, const std::string& what,
                            std::vector<FilterJournalRecord>* out,
                            uint64_t* uncommitted, uint64_t* base) {
  if (base != nullptr) *base = 0;
  const char* data = records.data();
  const size_t cap = records.size() & ~size_t{7};
  size_t at = 0;
  uint64_t next_seq = 0;  // J4: the seq of a short record here; 0: none yet
  auto damage = [&](const char* why) {
    return Status::Corruption(what + ": record at byte " +
                              std::to_string(kSegmentHeaderBytes + at) + " " +
                              why);
  };
  while (at + 16 <= cap) {
    const uint64_t tag = LoadLE(data + at, 8);
    if ((tag & kShortBit) != 0 && version >= 2) {
      // J4: a short record, whose seq follows the previous record's.
      const uint64_t hash = LoadLE(data + at + 8, 8);
      const uint8_t op = static_cast<uint8_t>((tag >> 2) & 3);
      if (next_seq == 0) {
        if (later_boot) return Status::OK();
        return damage("is short but first in its segment");
      }
      if (tag == kShortReserved) {
        // Reserved, never committed (or un-committed, whose hash may
        // remain): not acknowledged (J1).
        if (later_boot) return Status::OK();
        if (uncommitted != nullptr) ++*uncommitted;
      } else if (op > 2 || (op == 0 && hash != 0) ||
                 tag != ShortTag(next_seq, op, hash)) {
        // (ShortTag sets the committed bit and zeroes bits 4-31: a tag
        // without them fails the comparison.)
        if (later_boot) return Status::OK();
        return damage("fails its checksum");
      } else {
        FilterJournalRecord rec;
        rec.seq = next_seq;
        rec.op = op;
        if (op != 0) rec.hashes.push_back(hash);
        out->push_back(std::move(rec));
      }
      ++next_seq;
      at += kShortRecordBytes;
      continue;
    }
    const uint32_t len = static_cast<uint32_t>(LoadLE(data + at, 4));
    const uint32_t hcheck = static_cast<uint32_t>(LoadLE(data + at + 4, 4));
    const uint64_t seq = LoadLE(data + at + 8, 8);
    if (len == 0 && hcheck == 0 && seq == 0) {
      // The end (J1). Within the boot, only zeros may follow (J3).
      if (!later_boot && !AllZero(data + at, cap - at)) {
        return damage("is missing and data follows it");
      }
      return Status::OK();
    }
    const bool header_ok = len >= 8 && len % 8 == 0 && len <= kMaxBody &&
                           seq != 0 && hcheck == HeaderCheck(len, seq) &&
                           len + 24 <= cap - at;
    if (!header_ok) {
      // A kill inside the header write (J1: under the reservation, so it
      // can only be the last header) leaves zeros after it: the end.
      if (later_boot || AllZero(data + at + 16, cap - at - 16)) {
        return Status::OK();
      }
      return damage("has a damaged header");
    }
    if (base != nullptr && *base == 0) *base = seq;  // J2
    next_seq = seq + 1;                              // J4
    const char* p = data + at;
    const uint64_t commit = LoadLE(p + 16 + len, 8);
    const size_t next = at + 16 + len + 8;
    if (commit == 0) {
      // Reserved, never committed: not acknowledged (J1).
      if (later_boot) return Status::OK();
      if (uncommitted != nullptr) ++*uncommitted;
      at = next;
      continue;
    }
    if (commit != CommitWord(p, len)) {
      if (later_boot) return Status::OK();
      return damage("fails its checksum");
    }
    const char* body = p + 16;
    const uint8_t op = static_cast<uint8_t>(body[0]);
    const uint32_t n = static_cast<uint32_t>(LoadLE(body + 4, 4));
    if (op > 2 || body[1] != 0 || body[2] != 0 || body[3] != 0 ||
        n > (len - 8) / 8 || (op == 0 && n != 0) || (op != 0 && n == 0) ||
        !AllZero(body + 8 + 8 * size_t{n}, len - 8 - 8 * size_t{n})) {
      // The checksum matched: the writer wrote it so (a bug), or damage.
      return damage("holds a malformed body");
    }
    FilterJournalRecord rec;
    rec.seq = seq;
    rec.op = op;
    rec.hashes.resize(n);
    for (uint32_t i = 0; i < n; ++i)
      rec.hashes[i] = LoadLE(body + 8 + 8 * i, 8);
    out->push_back(std::move(rec));
    at = next;
  }
  return Status::OK();
}

size_t ReserveRecord(char* p, uint64_t seq, size_t hashes, bool first) {
  if (hashes <= 1 && !first) {  // J4
    StoreU64(p, kShortReserved);
    return kShortRecordBytes;
  }
  PutRecordHeader(p, seq, static_cast<uint32_t>(8 + 8 * hashes));
  return FilterJournalRecordBytes(hashes);
}

void PutRecordHeader(char* p, uint64_t seq, uint32_t body_len) {
  StoreU32(p, body_len);
  StoreU32(p + 4, HeaderCheck(body_len, seq));
  StoreU64(p + 8, seq);
}

void CommitRecord(char* p, uint64_t seq, uint8_t op,
                  std::span<const uint64_t> hashes) {
  if ((static_cast<uint8_t>(p[0]) & kShortBit) != 0) {  // J4
    const uint64_t hash = hashes.empty() ? 0 : hashes[0];
    StoreU64(p + 8, hash);
    TagSlot(p)->store(ShortTag(seq, op, hash), std::memory_order_release);
    return;
  }
  const uint32_t len = static_cast<uint32_t>(LoadLE(p, 4));
  char* body = p + 16;
  body[0] = static_cast<char>(op);
  StoreU32(body + 4, static_cast<uint32_t>(hashes.size()));
  for (size_t i = 0; i < hashes.size(); ++i) {
    StoreU64(body + 8 + 8 * i, hashes[i]);
  }
  // Padding bytes are zero: the segment was created zeroed and every byte
  // of a record is written once (J1).
  CommitSlot(p, len)->store(CommitWord(p, len), std::memory_order_release);
}

uint64_t PrepareCommit(const char* p, uint64_t seq, uint8_t op, uint64_t hash) {
  if ((static_cast<uint8_t>(p[0]) & kShortBit) == 0) return 0;
  return ShortTag(seq, op, op == 0 ? 0 : hash);
}

void CommitPrepared(char* p, uint64_t seq, uint8_t op, uint64_t hash,
                    uint64_t prepared) {
  if (prepared == 0) {
    if (op == 0) {
      CommitRecord(p, seq, 0, {});
    } else {
      CommitRecord(p, seq, op, {&hash, 1});
    }
    return;
  }
  StoreU64(p + 8, op == 0 ? 0 : hash);  // J4: the hash, then the tag
  TagSlot(p)->store(prepared, std::memory_order_release);
}

void UncommitRecord(char* p) {
  if ((static_cast<uint8_t>(p[0]) & kShortBit) != 0) {  // J4: reserved again
    TagSlot(p)->store(kShortReserved, std::memory_order_release);
    return;
  }
  const uint32_t len = static_cast<uint32_t>(LoadLE(p, 4));
  CommitSlot(p, len)->store(0, std::memory_order_release);
}

}  // namespace shardfilter::persistence
