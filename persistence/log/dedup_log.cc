// The dedup set's memory-mapped journal (log/dedup_log.h; its bytes:
// log/format.h section 3): create, open, the reader of both record versions
// and the writer, kept in one file because they change together.
#include "shardfilter/persistence/log/dedup_log.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>

#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/persistence/log/format.h"

namespace shardfilter::persistence {

namespace {

using shardfilter::internal::ByteReader;
using shardfilter::internal::LoadLE;
using shardfilter::internal::PutU32;
using shardfilter::internal::PutU64;
using shardfilter::internal::PutU8;

constexpr char kFileMagic[8] = {'S', 'F', 'D', 'L', 'O', 'G', '0', '1'};
constexpr char kRegionMagic[8] = {'S', 'F', 'D', 'L', 'R', 'E', 'G', '1'};
// Version 2 (written): records are published by their commit word, stored
// last. Version 1 (read only): u32 length | u32 check of the body.
constexpr uint32_t kVersion = 2;
constexpr size_t kRecordHeaderV1 = 8;            // u32 length | u32 check
constexpr size_t kRecordHeader = 16;             // u64 commit word | u64 check
constexpr size_t kBodyHeader = 8 + 8 + 4;        // gen | seq | op count
constexpr size_t kOpHeader = 1 + 1 + 8 + 8 + 4;  // kind .. key length
constexpr uint64_t kCheckSeed = 0x5f64656475706c67;  // "_dedupl g"

uint64_t Check(const char* p, size_t n) {
  return HashKey(std::string_view(p, n), kCheckSeed);
}

void StoreU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void StoreU64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

static_assert(std::endian::native == std::endian::little,
              "the commit word is stored with a native 64-bit store");

uint64_t Round8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

// A version-2 record's commit word: body length L in the low half, ~L in
// the high half. Zero means "not published"; one flipped bit (or any
// damage short of 32 bits) cannot turn a published word into zero or into
// another well-formed word.
uint64_t CommitWord(uint32_t body) {
  return body | (static_cast<uint64_t>(~body) << 32);
}
bool WellFormed(uint64_t commit) {
  return static_cast<uint32_t>(commit >> 32) ==
         static_cast<uint32_t>(~static_cast<uint32_t>(commit));
}
// The check covers the commit word (so the length) and the body.
uint64_t RecordCheck(uint64_t commit, const char* body, size_t n) {
  return HashKey(std::string_view(body, n), kCheckSeed ^ commit);
}
// The commit word at p (8-byte aligned inside the mapping). Acquire pairs
// with Append's release store: a reader that sees the word sees the body.
uint64_t LoadCommit(const char* p) {
  return std::atomic_ref<uint64_t>(
             *reinterpret_cast<uint64_t*>(const_cast<char*>(p)))
      .load(std::memory_order_acquire);
}
void StoreCommit(char* p, uint64_t v) {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(p))
      .store(v, std::memory_order_release);
}

bool AllZero(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// Decodes a record body (after its checksum matched).
bool DecodeBody(std::string_view body, uint64_t* gen, DedupLogRecord* rec) {
  ByteReader r(body);
  uint32_t n = 0;
  if (!r.ReadU64(gen) || !r.ReadU64(&rec->seq) || !r.ReadU32(&n)) return false;
  if (n == 0 || n > r.remaining() / kOpHeader) return false;
  rec->ops.resize(n);
  for (DedupOp& op : rec->ops) {
    uint8_t kind = 0, flags = 0;
    uint32_t len = 0;
    std::string_view key;
    if (!r.ReadU8(&kind) || !r.ReadU8(&flags) ||
        !r.ReadU64(&op.entry.insert_ms) || !r.ReadU64(&op.entry.bucket) ||
        !r.ReadU32(&len) || !r.ReadBytes(len, &key)) {
      return false;
    }
    if ((kind != DedupOp::kPut && kind != DedupOp::kDelete) || flags > 1) {
      return false;
    }
    op.kind = static_cast<DedupOp::Kind>(kind);
    op.with_index = flags & 1;
    op.key.assign(key);
  }
  return r.remaining() == 0;
}

}  // namespace

size_t DedupLogRecordBytes(const std::vector<DedupOp>& ops) {
  size_t n = kRecordHeader + kBodyHeader;
  for (const DedupOp& op : ops) n += kOpHeader + op.key.size();
  return Round8(n);
}

Result<std::unique_ptr<DedupLog>> DedupLog::Create(Env& env,
                                                   const std::string& path,
                                                   std::string_view set,
                                                   uint64_t region_bytes) {
  if (region_bytes < kMinDedupLogRegion || region_bytes > kMaxDedupLogRegion ||
      region_bytes % 4096 != 0) {
    return Status::InvalidArgument(
        "dedup journal region of " + std::to_string(region_bytes) +
        " bytes: must be a multiple of 4096 in [64 KiB, 1 GiB]");
  }
  const size_t size = kFileHeader + 2 * region_bytes;
  // The file header, then each region's header (generation 1): what the
  // file starts with, synced before it takes its name (the records need
  // not survive a power loss: D4).
  std::string h(kFileMagic, 8);
  PutU32(&h, kVersion);
  PutU32(&h, 0);
  PutU64(&h, region_bytes);
  PutU32(&h, static_cast<uint32_t>(set.size()));
  h.append(set);
  const std::string boot = BootIdToRecord();
  PutU32(&h, static_cast<uint32_t>(boot.size()));
  h.append(boot);
  PutU64(&h, Check(h.data(), h.size()));
  if (h.size() > kFileHeader) {
    return Status::InvalidArgument("dedup set name too long for its journal");
  }
  std::unique_ptr<DedupLog> log(new DedupLog());
  log->path_ = path;
  log->region_bytes_ = region_bytes;
  log->writable_ = true;
  SF_ASSIGN_OR_RETURN(log->file_, env.CreateMapped(
                                      path, size,
                                      [&](char* p) {
                                        log->base_ = p;
                                        std::memcpy(p, h.data(), h.size());
                                        for (int r = 0; r < 2; ++r) {
                                          log->WriteRegionHeader(
                                              r, log->gen_[r] = 1);
                                        }
                                      },
                                      MapOptions()));
  log->base_ = log->file_->data();
  log->size_ = log->file_->size();
  return log;
}

Result<std::unique_ptr<DedupLog>> DedupLog::OpenExisting(
    Env& env, const std::string& path, std::string_view set) {
  auto opened = env.OpenReadOnly(path);
  if (opened.status().IsNotFound()) {
    return Status::NotFound("no dedup journal " + path);
  }
  SF_ASSIGN_OR_RETURN(std::unique_ptr<ReadOnlyFile> file, std::move(opened));
  const auto fail = [&](const std::string& why) {
    return Status::Corruption("dedup journal " + path + ": " + why);
  };
  const size_t size = file->bytes().size();
  if (size < kFileHeader) return fail("shorter than its header");
  std::unique_ptr<DedupLog> log(new DedupLog());
  log->path_ = path;
  log->base_ = const_cast<char*>(file->bytes().data());
  log->size_ = size;
  log->loaded_ = std::move(file);
  ByteReader r(std::string_view(log->base_, kFileHeader));
  std::string_view magic, name, boot;
  uint32_t version = 0, reserved = 0, len = 0, boot_len = 0;
  uint64_t region = 0, check = 0;
  if (!r.ReadBytes(8, &magic) || magic != std::string_view(kFileMagic, 8)) {
    return fail("not a dedup journal (bad magic)");
  }
  if (!r.ReadU32(&version) || !r.ReadU32(&reserved) || !r.ReadU64(&region) ||
      !r.ReadU32(&len) || !r.ReadBytes(len, &name) || !r.ReadU32(&boot_len) ||
      !r.ReadBytes(boot_len, &boot)) {
    return fail("truncated header");
  }
  const size_t covered = r.position();
  if (!r.ReadU64(&check) || check != Check(log->base_, covered)) {
    return fail("header checksum mismatch");
  }
  if (version != 1 && version != kVersion) {
    return Status::NotSupported(
        "dedup journal " + path + ": version " + std::to_string(version) +
        " (this build reads 1 and " + std::to_string(kVersion) + ")");
  }
  if (region < kMinDedupLogRegion || region > kMaxDedupLogRegion ||
      region % 4096 != 0 || reserved != 0) {
    return fail("bad region size " + std::to_string(region));
  }
  if (size < kFileHeader + 2 * region) return fail("truncated file");
  if (name != set) return fail("belongs to another set");
  log->region_bytes_ = region;
  log->version_ = version;
  log->from_earlier_boot_ = LaterBoot(boot);
  for (int i = 0; i < 2; ++i) {
    const char* h = log->Region(i);
    if (std::memcmp(h, kRegionMagic, 8) != 0 ||
        LoadLE(h + 16, 8) != Check(h, 16)) {
      return fail("region " + std::to_string(i) + " header damaged");
    }
    log->gen_[i] = LoadLE(h + 8, 8);
  }
  return log;
}

DedupLog::~DedupLog() = default;

void DedupLog::WriteRegionHeader(int r, uint64_t gen) {
  char* h = Region(r);
  std::memcpy(h, kRegionMagic, 8);
  StoreU64(h + 8, gen);
  StoreU64(h + 16, Check(h, 16));
}

Status DedupLog::Read(int r, std::vector<DedupLogRecord>* out) const {
  if (version_ == 1) return ReadV1(r, out);
  const char* data = Region(r) + kRegionHeader;
  const uint64_t cap = capacity();
  std::vector<DedupLogRecord> got;
  uint64_t at = 0;
  while (at + kRecordHeader <= cap) {
    const uint64_t commit = LoadCommit(data + at);
    // Not published: the end. Append stores the commit word last, so the
    // record a kill interrupted is never published (never acknowledged).
    if (commit == 0) break;
    const uint64_t len = static_cast<uint32_t>(commit);
    const bool fits = WellFormed(commit) && len <= cap - at - kRecordHeader;
    const char* body = data + at + kRecordHeader;
    DedupLogRecord rec;
    uint64_t gen = 0;
    if (fits && LoadLE(data + at + 8, 8) == RecordCheck(commit, body, len) &&
        DecodeBody(std::string_view(body, len), &gen, &rec)) {
      if (gen != gen_[r]) break;  // stale (a Clear was interrupted): the end
      got.push_back(std::move(rec));
      at += Round8(kRecordHeader + len);
      continue;
    }
    // Written before a reboot: the write-back kept pages in any order, and
    // what survived ends here (P2, D4: the boot id rule).
    if (from_earlier_boot_) break;
    // Within one boot a published record is whole: a bad one is damage,
    // wherever it is (also the last one, with zeros after it).
    return Status::Corruption(
        "dedup journal " + path_ + ": region " + std::to_string(r) +
        ", record at byte " + std::to_string(at) +
        " was published but fails its check (damage, not a torn write)");
  }
  for (auto& rec : got) out->push_back(std::move(rec));
  return Status::OK();
}

// Version 1: a record without a commit word; a bad one followed by zeros
// only is taken for the torn tail (the rule version 2 replaced).
Status DedupLog::ReadV1(int r, std::vector<DedupLogRecord>* out) const {
  const char* data = Region(r) + kRegionHeader;
  const uint64_t cap = capacity();
  std::vector<DedupLogRecord> got;
  uint64_t at = 0;
  while (at + kRecordHeaderV1 <= cap) {
    const uint64_t len = LoadLE(data + at, 4);
    const uint32_t check = static_cast<uint32_t>(LoadLE(data + at + 4, 4));
    if (len == 0 && check == 0) break;  // the end: zeros from here
    DedupLogRecord rec;
    uint64_t gen = 0;
    const bool fits = len <= cap - at - kRecordHeaderV1;
    const char* body = data + at + kRecordHeaderV1;
    if (fits && static_cast<uint32_t>(Check(body, len)) == check &&
        DecodeBody(std::string_view(body, len), &gen, &rec) && gen == gen_[r]) {
      got.push_back(std::move(rec));
      at += kRecordHeaderV1 + len;
      continue;
    }
    if (fits && gen != 0 && gen != gen_[r]) break;  // stale: the end
    // Written before a reboot: what the write-back kept ends here.
    if (from_earlier_boot_) break;
    // Torn (the copy a kill interrupted) or damaged: torn only when zeros
    // follow.
    const uint64_t tail =
        fits ? at + kRecordHeaderV1 + len : at + kRecordHeaderV1;
    if (!AllZero(data + tail, cap - tail)) {
      return Status::Corruption("dedup journal " + path_ + ": region " +
                                std::to_string(r) + ", record at byte " +
                                std::to_string(at) +
                                " fails its checksum and data follows it");
    }
    break;
  }
  for (auto& rec : got) out->push_back(std::move(rec));
  return Status::OK();
}

Status DedupLog::ReadAll(std::vector<DedupLogRecord>* out) const {
  std::vector<DedupLogRecord> a, b;
  SF_RETURN_IF_ERROR(Read(0, &a));
  SF_RETURN_IF_ERROR(Read(1, &b));
  if (!a.empty() && !b.empty() && b.front().seq < a.front().seq) a.swap(b);
  for (auto* v : {&a, &b}) {
    for (auto& rec : *v) out->push_back(std::move(rec));
  }
  return Status::OK();
}

void DedupLog::Append(uint64_t seq, const std::vector<DedupOp>& ops) {
  char* const rec = Region(active_) + kRegionHeader + used_[active_];
  char* p = rec + kRecordHeader;
  StoreU64(p, gen_[active_]);
  StoreU64(p + 8, seq);
  StoreU32(p + 16, static_cast<uint32_t>(ops.size()));
  p += kBodyHeader;
  for (const DedupOp& op : ops) {
    p[0] = static_cast<char>(op.kind);
    p[1] = static_cast<char>(op.with_index ? 1 : 0);
    StoreU64(p + 2, op.entry.insert_ms);
    StoreU64(p + 10, op.entry.bucket);
    StoreU32(p + 18, static_cast<uint32_t>(op.key.size()));
    std::memcpy(p + kOpHeader, op.key.data(), op.key.size());
    p += kOpHeader + op.key.size();
  }
  const size_t body = static_cast<size_t>(p - rec) - kRecordHeader;
  const size_t total = Round8(kRecordHeader + body);
  std::memset(p, 0, total - kRecordHeader - body);  // padding
  // Body and check first, the commit word last (release): a kill at any
  // instruction leaves either no record (word still 0) or a whole one.
  const uint64_t commit = CommitWord(static_cast<uint32_t>(body));
  StoreU64(rec + 8, RecordCheck(commit, rec + kRecordHeader, body));
  StoreCommit(rec, commit);
  used_[active_] += total;
}

int DedupLog::Swap() {
  const int was = active_;
  active_ = 1 - active_;
  return was;
}

void DedupLog::Clear(int r) {
  // Generation first (every record becomes stale), then every commit word
  // in order (a kill meanwhile leaves a region that ends at its first
  // record), then the rest: no interleaving leaves a half-zeroed record
  // that is still published.
  WriteRegionHeader(r, ++gen_[r]);
  char* data = Region(r) + kRegionHeader;
  for (uint64_t at = 0; at < used_[r];) {
    const uint64_t len = static_cast<uint32_t>(LoadCommit(data + at));
    StoreCommit(data + at, 0);
    at += Round8(kRecordHeader + len);
  }
  std::memset(data, 0, used_[r]);
  used_[r] = 0;
}

}  // namespace shardfilter::persistence
