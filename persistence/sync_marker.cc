// The sync marker and the loss record (persistence/sync_marker.h).
#include "shardfilter/persistence/sync_marker.h"

#include <rocksdb/file_system.h>
#include <rocksdb/write_batch.h>
#include <xxhash.h>

#include <cstring>

#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter::persistence {

using shardfilter::internal::LoadLE;
using shardfilter::internal::PutU32;
using shardfilter::internal::PutU64;

namespace {

constexpr char kMagic[] = "SFSYNCD1";
constexpr size_t kHeaderBytes = 64;
constexpr size_t kCheckAt = kSyncMarkerPageBytes - 8;
static_assert(kHeaderBytes + 8 * kSyncMarkerSlots == kCheckAt);
constexpr uint64_t kSeed = 0x6b72616d636e7973;  // "syncmark"
constexpr uint8_t kLossVersion = 1;

Status Io(const rocksdb::IOStatus& s, const std::string& what) {
  return Status::IOError(what + ": " + s.ToString());
}

std::string Describe(SyncedKind kind, std::string_view name) {
  // DescribeName says `filter "..."`, escaping the name's bytes.
  const std::string d = DescribeName(name);
  return kind == SyncedKind::kFilter ? d : "dedup set" + d.substr(6);
}

}  // namespace

uint32_t SyncMarkerSlot(SyncedKind kind, std::string_view name) {
  std::string b(1, static_cast<char>(kind));
  b.append(name);
  return static_cast<uint32_t>(XXH3_64bits_withSeed(b.data(), b.size(), kSeed) %
                               kSyncMarkerSlots);
}

std::string EncodeSyncMarkerPage(const SyncMarkerState& s) {
  std::string p(kMagic, 8);
  PutU32(&p, kSyncMarkerVersion);
  PutU32(&p, kSyncMarkerSlots);
  PutU64(&p, s.generation);
  p.resize(kHeaderBytes, '\0');
  for (uint32_t i = 0; i < kSyncMarkerSlots; ++i) {
    PutU64(&p, i < s.slots.size() ? s.slots[i] : 0);
  }
  PutU64(&p, XXH3_64bits_withSeed(p.data(), p.size(), kSeed));
  return p;
}

Result<SyncMarkerState> DecodeSyncMarkerPage(std::string_view page,
                                             const std::string& what) {
  if (page.size() != kSyncMarkerPageBytes ||
      std::memcmp(page.data(), kMagic, 8) != 0 ||
      LoadLE(page.data() + kCheckAt, 8) !=
          XXH3_64bits_withSeed(page.data(), kCheckAt, kSeed)) {
    return Status::Corruption(what + " is not whole");
  }
  const uint32_t version = static_cast<uint32_t>(LoadLE(page.data() + 8, 4));
  if (version > kSyncMarkerVersion) {
    return Status::NotSupported(what + " has format version " +
                                std::to_string(version) +
                                ", newer than this build reads (" +
                                std::to_string(kSyncMarkerVersion) + ")");
  }
  if (version == 0 || LoadLE(page.data() + 12, 4) != kSyncMarkerSlots ||
      LoadLE(page.data() + 16, 8) == 0) {
    return Status::Corruption(what + " has a malformed header");
  }
  SyncMarkerState s;
  s.generation = LoadLE(page.data() + 16, 8);
  s.slots.resize(kSyncMarkerSlots);
  for (uint32_t i = 0; i < kSyncMarkerSlots; ++i) {
    s.slots[i] = LoadLE(page.data() + kHeaderBytes + 8 * i, 8);
  }
  return s;
}

Result<std::optional<SyncMarkerState>> ReadSyncMarker(rocksdb::FileSystem* fs,
                                                      const std::string& dir) {
  const std::string path = dir + "/" + kSyncMarkerFile;
  const rocksdb::IOOptions io;
  rocksdb::IOStatus s = fs->FileExists(path, io, nullptr);
  if (s.IsNotFound()) return std::optional<SyncMarkerState>();
  if (!s.ok()) return Io(s, "looking for " + path);
  uint64_t got = 0;
  s = fs->GetFileSize(path, io, &got, nullptr);
  if (!s.ok()) return Io(s, "reading the size of " + path);
  std::string bytes(2 * kSyncMarkerPageBytes, '\0');
  if (got == bytes.size()) {
    std::unique_ptr<rocksdb::FSRandomAccessFile> f;
    s = fs->NewRandomAccessFile(path, rocksdb::FileOptions(), &f, nullptr);
    if (!s.ok()) return Io(s, "opening " + path);
    rocksdb::Slice read;
    s = f->Read(0, bytes.size(), io, &read, bytes.data(), nullptr);
    if (!s.ok()) return Io(s, "reading " + path);
    if (read.size() != bytes.size()) got = read.size();
    if (read.data() != bytes.data()) {
      std::memcpy(bytes.data(), read.data(), read.size());
    }
  }
  const std::string what = "the sync marker " + path;
  if (got != bytes.size()) {
    return Status::Corruption(what + " is " + std::to_string(got) +
                              " bytes long, not " +
                              std::to_string(2 * kSyncMarkerPageBytes));
  }
  std::optional<SyncMarkerState> best;
  Status first_error;
  for (int page = 0; page < 2; ++page) {
    auto state = DecodeSyncMarkerPage(
        std::string_view(bytes).substr(page * kSyncMarkerPageBytes,
                                       kSyncMarkerPageBytes),
        what + " page " + std::to_string(page));
    if (state.status().IsNotSupported()) return state.status();
    if (!state.ok()) {
      if (first_error.ok()) first_error = state.status();
      continue;
    }
    if (!best || state->generation > best->generation) {
      best = std::move(*state);
    }
  }
  if (!best) {
    return Status::Corruption(
        what + " is damaged: neither of its pages is whole (" +
        first_error.message() +
        "); it records how far the write-ahead log must reach for the "
        "writes acknowledged under durability sync");
  }
  return best;
}

uint64_t WrittenLastSequence(const rocksdb::WriteBatch& batch) {
  const std::string& rep = batch.Data();
  const uint64_t first = rep.size() >= 8 ? LoadLE(rep.data(), 8) : 0;
  const uint32_t count = batch.Count();
  return count == 0 ? first : first + count - 1;
}

Result<std::unique_ptr<SyncMarker>> SyncMarker::Open(
    rocksdb::FileSystem* fs, const std::string& dir,
    std::optional<SyncMarkerState> current) {
  std::unique_ptr<SyncMarker> m(new SyncMarker());
  m->path_ = dir + "/" + kSyncMarkerFile;
  const rocksdb::IOOptions io;
  if (!current) {
    // Created whole under a temporary name: generation 1 in page 1 (the
    // next write, generation 2, goes to page 0), page 0 zeros.
    const std::string tmp = m->path_ + ".tmp";
    SyncMarkerState first;
    first.generation = 1;
    first.slots.assign(kSyncMarkerSlots, 0);
    std::unique_ptr<rocksdb::FSWritableFile> f;
    rocksdb::IOStatus s =
        fs->NewWritableFile(tmp, rocksdb::FileOptions(), &f, nullptr);
    if (!s.ok()) return Io(s, "creating " + tmp);
    s = f->Append(std::string(kSyncMarkerPageBytes, '\0'), io, nullptr);
    if (s.ok()) s = f->Append(EncodeSyncMarkerPage(first), io, nullptr);
    if (s.ok()) s = f->Sync(io, nullptr);
    const rocksdb::IOStatus closed = f->Close(io, nullptr);
    if (s.ok()) s = closed;
    if (s.ok()) s = fs->RenameFile(tmp, m->path_, io, nullptr);
    std::unique_ptr<rocksdb::FSDirectory> d;
    if (s.ok()) s = fs->NewDirectory(dir, io, &d, nullptr);
    if (s.ok()) s = d->Fsync(io, nullptr);
    if (!s.ok()) {
      fs->DeleteFile(tmp, io, nullptr).PermitUncheckedError();
      return Io(s, "creating " + m->path_);
    }
    current = std::move(first);
  }
  rocksdb::IOStatus s =
      fs->NewRandomRWFile(m->path_, rocksdb::FileOptions(), &m->file_, nullptr);
  if (!s.ok()) return Io(s, "opening " + m->path_);
  m->durable_ = std::move(*current);
  m->want_ = m->durable_.slots;
  return m;
}

SyncMarker::~SyncMarker() {
  if (file_ != nullptr) {
    file_->Close(rocksdb::IOOptions(), nullptr).PermitUncheckedError();
  }
}

Status SyncMarker::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

Status SyncMarker::WritePage(const SyncMarkerState& page) {
  const uint64_t at = (page.generation % 2) * kSyncMarkerPageBytes;
  const rocksdb::IOOptions io;
  rocksdb::IOStatus s =
      file_->Write(at, EncodeSyncMarkerPage(page), io, nullptr);
  if (s.ok()) s = file_->Sync(io, nullptr);
  return s.ok() ? Status::OK() : Io(s, "writing " + path_);
}

void SyncMarker::Acknowledge(uint32_t slot, uint64_t seq) {
  std::unique_lock lock(mu_);
  if (want_[slot] < seq) want_[slot] = seq;
  while (durable_.slots[slot] < seq && failure_.ok()) {
    if (writing_) {
      cv_.wait(lock);
      continue;
    }
    writing_ = true;
    SyncMarkerState next{durable_.generation + 1, want_};
    lock.unlock();
    Status s = WritePage(next);
    lock.lock();
    writing_ = false;
    if (s.ok()) {
      durable_ = std::move(next);
    } else {
      failure_ = Status::IOError(
          "writes of durability sync are stopped until the store is "
          "reopened: the sync marker could not be written (" +
          s.message() + ")");
    }
    cv_.notify_all();
  }
}

Status SyncMarker::Clear(std::span<const uint32_t> slots) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !writing_; });
  SF_RETURN_IF_ERROR(failure_);
  for (uint32_t i : slots) want_[i] = 0;
  SyncMarkerState next{durable_.generation + 1, want_};
  writing_ = true;
  lock.unlock();
  Status s = WritePage(next);
  lock.lock();
  writing_ = false;
  if (s.ok()) durable_ = std::move(next);
  cv_.notify_all();
  return s;
}

std::string WalLossPrefix() {
  return std::string{static_cast<char>(0xF7), 'W', 'l'};
}

std::string WalLossKey(SyncedKind kind, std::string_view name) {
  std::string k = WalLossPrefix();
  k.push_back(static_cast<char>(kind));
  k += NamePrefix(name);
  return k;
}

bool ParseWalLossKey(std::string_view key, SyncedKind* kind,
                     std::string* name) {
  const std::string prefix = WalLossPrefix();
  if (key.size() < prefix.size() + 3 || key.substr(0, 3) != prefix) {
    return false;
  }
  const char k = key[3];
  if (k != static_cast<char>(SyncedKind::kFilter) &&
      k != static_cast<char>(SyncedKind::kDedupSet)) {
    return false;
  }
  const size_t len = LoadBE(key.data() + 4, 2);
  if (key.size() != 6 + len || len == 0) return false;
  *kind = static_cast<SyncedKind>(k);
  name->assign(key.substr(6));
  return true;
}

std::string EncodeWalLoss(const WalLoss& loss) {
  std::string v(1, static_cast<char>(kLossVersion));
  PutU64(&v, loss.first);
  PutU64(&v, loss.last);
  PutU64(&v, XXH3_64bits_withSeed(v.data(), v.size(), kSeed));
  return v;
}

Result<WalLoss> DecodeWalLoss(std::string_view value, const std::string& what) {
  if (!value.empty() && static_cast<uint8_t>(value[0]) > kLossVersion) {
    return Status::NotSupported(what + ": loss record of format version " +
                                std::to_string(static_cast<uint8_t>(value[0])) +
                                ", newer than this build reads");
  }
  if (value.size() != 25 || value[0] == 0 ||
      LoadLE(value.data() + 17, 8) !=
          XXH3_64bits_withSeed(value.data(), 17, kSeed)) {
    return Status::Corruption(what + ": bad loss record");
  }
  return WalLoss{LoadLE(value.data() + 1, 8), LoadLE(value.data() + 9, 8)};
}

Status WalLossError(SyncedKind kind, std::string_view name,
                    const WalLoss& loss) {
  return Status::Corruption(
      Describe(kind, name) +
      " lost writes acknowledged under durability sync: the write-ahead log "
      "ends before RocksDB sequences " +
      std::to_string(loss.first) + ".." + std::to_string(loss.last) +
      " (the log was cut short; a power loss cannot take synced writes). It "
      "is unavailable until it is dropped; restoring the log from a backup "
      "helps only before a writable open has recorded the loss");
}

}  // namespace shardfilter::persistence
