// A fault-injecting rocksdb::FileSystem for tests (full and failing disks,
// power loss):
//  * a write budget: once `budget` more bytes were appended (all files),
//    every Append (and Sync) fails with ENOSPC (IOStatus::NoSpace) or EIO;
//    Heal() lifts it, as freeing disk space would;
//  * a simulated power loss: PowerOff() makes every later write, sync,
//    rename and delete a silent no-op, and a file made after it memory
//    only (the machine is gone; what the process still does reaches
//    nothing), and DropUnsyncedData() then puts every file (appended,
//    written in place, or mapped) back to what its last completed sync
//    covered, which is what the disk holds after the power comes back, and
//    starts a new boot (persistence::SetBootIdForTesting);
//  * failed syncs: FailSyncs(suffix) fails every later sync of a file whose
//    name ends with `suffix` with EIO;
//  * held syncs: HoldSyncs(suffix) makes every later sync of a file whose
//    name ends with `suffix` wait, before anything of it is synced, until
//    ReleaseSyncs(suffix); WaitForHeldSyncs waits until that many are held.
//    A test orders a syncer against other threads with it, deterministically.
// The journals' files (filter journal segments, dedup logs) are written
// through mappings: the journal component's Env (persistence/log/env.h)
// makes them with NewWritableFile, maps them with
// NewMemoryMappedFileBuffer and syncs them through the writable handle, so
// the same rules cover them: a sync keeps what the mapping held when it
// began, the rest is dropped at the power loss. Install it for the Store
// (RocksDB's files and the journals' alike) with
// persistence::internal::SetStoreEnvForTesting
// (persistence/test_env.h). Thread-safe.
#ifndef SHARDFILTER_TESTS_FAULT_FS_H_
#define SHARDFILTER_TESTS_FAULT_FS_H_

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "shardfilter/persistence/boot_id.h"
#include "shardfilter/persistence/test_env.h"

namespace shardfilter::testing {

class FaultFs : public rocksdb::FileSystemWrapper {
 public:
  enum class Fault { kNoSpace, kIoError };

  FaultFs() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "FaultFs"; }

  // Fails appends once `bytes` more were written (-1: never).
  void SetBudget(int64_t bytes, Fault fault = Fault::kNoSpace) {
    std::lock_guard lock(mu_);
    budget_ = bytes;
    fault_ = fault;
  }
  void Heal() { SetBudget(-1); }
  // Appends that failed so far.
  uint64_t failures() const { return failures_.load(); }

  void PowerOff() { off_.store(true); }
  bool off() const { return off_.load(); }
  // REQUIRES: PowerOff() and every Database closed. Truncates every file
  // written since it was created or last synced to its synced size; puts
  // every mapped file back to the bytes its last completed sync covered,
  // zeros after them. Then the machine "boots" again.
  void DropUnsyncedData() {
    std::lock_guard lock(mu_);
    for (const auto& [name, f] : files_) {
      if (f.size != f.synced && ::access(name.c_str(), F_OK) == 0) {
        (void)!::truncate(name.c_str(), static_cast<off_t>(f.synced));
      }
    }
    files_.clear();
    for (const auto& [name, f] : rw_) {
      if (f.current != f.synced && ::access(name.c_str(), F_OK) == 0) {
        std::ofstream(name, std::ios::binary | std::ios::trunc) << f.synced;
      }
    }
    rw_.clear();
    for (const auto& [name, node] : nodes_) {
      if (!node->synced_once) continue;  // never mapped
      std::error_code ec;
      const auto size = std::filesystem::file_size(name, ec);
      if (ec) continue;
      std::string disk = node->synced;
      disk.resize(size, '\0');
      std::ofstream(name, std::ios::binary | std::ios::trunc) << disk;
    }
    nodes_.clear();
    discarded_.clear();
    persistence::SetBootIdForTesting("fault-fs-boot-" +
                                     std::to_string(++boots_));
  }

  // From now on every sync of a file whose name ends with `suffix` fails
  // with EIO (before anything of it is synced); "" lifts it.
  void FailSyncs(const std::string& suffix) {
    std::lock_guard lock(hold_mu_);
    fail_syncs_ = suffix;
  }
  bool SyncFails(const std::string& file) {
    std::lock_guard lock(hold_mu_);
    return !fail_syncs_.empty() && EndsWith(file, fail_syncs_);
  }

  // --- Held syncs ---
  void HoldSyncs(const std::string& suffix) {
    std::lock_guard lock(hold_mu_);
    holds_[suffix] = Hold{};
  }
  // Blocks until `n` syncs wait at the hold of `suffix` (at once or in
  // turn: a count of arrivals).
  void WaitForHeldSyncs(const std::string& suffix, int n = 1) {
    std::unique_lock lock(hold_mu_);
    hold_cv_.wait(lock, [&] { return holds_[suffix].arrived >= n; });
  }
  void ReleaseSyncs(const std::string& suffix) {
    std::lock_guard lock(hold_mu_);
    holds_.erase(suffix);
    hold_cv_.notify_all();
  }
  // Called before a file's sync does anything: waits while a hold matches
  // it, until that hold is released.
  void MaybeHold(const std::string& file) {
    std::unique_lock lock(hold_mu_);
    auto it = holds_.begin();
    while (it != holds_.end() && !EndsWith(file, it->first)) ++it;
    if (it == holds_.end()) return;
    ++it->second.arrived;
    const uint64_t id = it->second.id;
    const std::string suffix = it->first;
    hold_cv_.notify_all();
    hold_cv_.wait(lock, [&] {
      auto h = holds_.find(suffix);
      return h == holds_.end() || h->second.id != id;
    });
  }

  // --- FileSystem ---
  rocksdb::IOStatus NewWritableFile(const std::string& f,
                                    const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    if (off()) {
      r->reset(new Discard(this, f));
      return rocksdb::IOStatus::OK();
    }
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus s = target()->NewWritableFile(f, o, &file, dbg);
    if (!s.ok()) return s;
    auto node = std::make_shared<Node>();
    node->name = f;
    {
      std::lock_guard lock(mu_);
      files_[f] = {0, 0};
      nodes_[f] = node;
    }
    r->reset(new File(this, std::move(node), std::move(file)));
    return s;
  }
  rocksdb::IOStatus ReopenWritableFile(
      const std::string& f, const rocksdb::FileOptions& o,
      std::unique_ptr<rocksdb::FSWritableFile>* r,
      rocksdb::IODebugContext* dbg) override {
    if (off()) {
      r->reset(new Discard(this, f));
      return rocksdb::IOStatus::OK();
    }
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus s = target()->ReopenWritableFile(f, o, &file, dbg);
    if (!s.ok()) return s;
    uint64_t size = 0;
    target()
        ->GetFileSize(f, rocksdb::IOOptions(), &size, dbg)
        .PermitUncheckedError();
    auto node = std::make_shared<Node>();
    node->name = f;
    {
      std::lock_guard lock(mu_);
      files_[f] = {size, size};
      nodes_[f] = node;
    }
    r->reset(new File(this, std::move(node), std::move(file)));
    return s;
  }
  rocksdb::IOStatus ReuseWritableFile(
      const std::string& f, const std::string& old,
      const rocksdb::FileOptions& o,
      std::unique_ptr<rocksdb::FSWritableFile>* r,
      rocksdb::IODebugContext* dbg) override {
    return NewWritableFile(f, o, r, dbg);  // recycling is off (the default)
    (void)old;
  }
  // Files written in place (the store's sync marker): their bytes as
  // written, and as the last completed sync left them.
  rocksdb::IOStatus NewRandomRWFile(const std::string& f,
                                    const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSRandomRWFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    std::unique_ptr<rocksdb::FSRandomRWFile> file;
    rocksdb::IOStatus s = target()->NewRandomRWFile(f, o, &file, dbg);
    if (!s.ok()) return s;
    {
      std::lock_guard lock(mu_);
      if (rw_.count(f) == 0) {
        std::ifstream in(f, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
        rw_[f] = {bytes, bytes};
      }
    }
    r->reset(new RwFile(this, f, std::move(file)));
    return s;
  }
  // A mapping of a file (the journals'): its bytes are what a sync of the
  // file's writable handle copies. After the power loss, the mapping of a
  // file made since (memory only) is anonymous memory of its size.
  rocksdb::IOStatus NewMemoryMappedFileBuffer(
      const std::string& f,
      std::unique_ptr<rocksdb::MemoryMappedFileBuffer>* r) override {
    if (off()) {
      size_t size = 0;
      {
        std::lock_guard lock(mu_);
        auto it = discarded_.find(f);
        if (it != discarded_.end()) size = it->second;
      }
      if (size != 0) {
        void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return rocksdb::IOStatus::IOError("mmap");
        r->reset(new Anonymous(p, size));
        return rocksdb::IOStatus::OK();
      }
    }
    std::unique_ptr<rocksdb::MemoryMappedFileBuffer> map;
    rocksdb::IOStatus s = target()->NewMemoryMappedFileBuffer(f, &map);
    if (!s.ok()) return s;
    std::shared_ptr<Node> node;
    {
      std::lock_guard lock(mu_);
      std::shared_ptr<Node>& n = nodes_[f];
      if (n == nullptr) {
        n = std::make_shared<Node>();
        n->name = f;
      }
      n->base = static_cast<const char*>(map->GetBase());
      n->size = map->GetLen();
      node = n;
    }
    r->reset(new Mapping(this, std::move(node), std::move(map)));
    return s;
  }
  rocksdb::IOStatus DeleteFile(const std::string& f,
                               const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* dbg) override {
    if (off()) return rocksdb::IOStatus::OK();
    {
      std::lock_guard lock(mu_);
      files_.erase(f);
      nodes_.erase(f);
    }
    return target()->DeleteFile(f, o, dbg);
  }
  rocksdb::IOStatus RenameFile(const std::string& s, const std::string& t,
                               const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* dbg) override {
    if (off()) return rocksdb::IOStatus::OK();
    {
      std::lock_guard lock(mu_);
      auto it = files_.find(s);
      if (it != files_.end()) {
        files_[t] = it->second;
        files_.erase(s);
      }
      auto n = nodes_.find(s);
      if (n != nodes_.end()) {
        n->second->name = t;
        nodes_[t] = n->second;
        nodes_.erase(n);
      }
    }
    return target()->RenameFile(s, t, o, dbg);
  }

 private:
  struct Sizes {
    uint64_t size = 0;    // bytes appended
    uint64_t synced = 0;  // bytes known durable
  };
  // A file made through NewWritableFile, followed across renames (its
  // handle syncs it under its current name), and its mapping, if any.
  struct Node {
    std::string name;            // GUARDED_BY(FaultFs::mu_)
    const char* base = nullptr;  // the live mapping, or null
    size_t size = 0;
    bool synced_once = false;  // a sync completed while mapped
    std::string synced;        // what that sync covered
  };
  // The name a handle's file has now.
  std::string NameOf(const Node& n) {
    std::lock_guard lock(mu_);
    return n.name;
  }
  // A copy of the node's mapping, taken before a sync begins: the least a
  // power loss right after that sync keeps. Empty when not mapped.
  std::optional<std::string> MappedBytes(const Node& n) {
    std::lock_guard lock(mu_);
    if (n.base == nullptr) return std::nullopt;
    return std::string(n.base, n.size);
  }
  void MappedSynced(Node& n, std::string bytes) {
    std::lock_guard lock(mu_);
    n.synced_once = true;
    n.synced = std::move(bytes);
  }
  void Unmapped(Node& n) {
    std::lock_guard lock(mu_);
    n.base = nullptr;
  }
  void Discarded(const std::string& f, uint64_t size) {
    std::lock_guard lock(mu_);
    discarded_[f] = static_cast<size_t>(size);
  }

  class Mapping : public rocksdb::MemoryMappedFileBuffer {
   public:
    Mapping(FaultFs* fs, std::shared_ptr<Node> node,
            std::unique_ptr<rocksdb::MemoryMappedFileBuffer> map)
        : MemoryMappedFileBuffer(map->GetBase(), map->GetLen()),
          fs_(fs),
          node_(std::move(node)),
          map_(std::move(map)) {}
    ~Mapping() override { fs_->Unmapped(*node_); }

   private:
    FaultFs* fs_;
    std::shared_ptr<Node> node_;
    std::unique_ptr<rocksdb::MemoryMappedFileBuffer> map_;
  };
  class Anonymous : public rocksdb::MemoryMappedFileBuffer {
   public:
    Anonymous(void* p, size_t n) : MemoryMappedFileBuffer(p, n) {}
    ~Anonymous() override { ::munmap(GetBase(), GetLen()); }
  };

  // Reserves n bytes; false (and counts a failure) when over budget.
  rocksdb::IOStatus Charge(size_t n) {
    std::lock_guard lock(mu_);
    if (budget_ < 0) return rocksdb::IOStatus::OK();
    if (static_cast<int64_t>(n) <= budget_) {
      budget_ -= static_cast<int64_t>(n);
      return rocksdb::IOStatus::OK();
    }
    budget_ = 0;
    failures_.fetch_add(1);
    return fault_ == Fault::kNoSpace
               ? rocksdb::IOStatus::NoSpace("injected: No space left on device")
               : rocksdb::IOStatus::IOError("injected: Input/output error");
  }
  void Appended(const std::string& f, size_t n) {
    std::lock_guard lock(mu_);
    auto it = files_.find(f);
    if (it != files_.end()) it->second.size += n;
  }
  void Synced(const std::string& f) {
    std::lock_guard lock(mu_);
    auto it = files_.find(f);
    if (it != files_.end()) it->second.synced = it->second.size;
  }

  class File : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(FaultFs* fs, std::shared_ptr<Node> node,
         std::unique_ptr<rocksdb::FSWritableFile> t)
        : FSWritableFileOwnerWrapper(std::move(t)),
          fs_(fs),
          node_(std::move(node)) {}
    rocksdb::IOStatus Append(const rocksdb::Slice& d,
                             const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override {
      if (fs_->off()) return rocksdb::IOStatus::OK();
      rocksdb::IOStatus s = fs_->Charge(d.size());
      if (!s.ok()) return s;
      s = target()->Append(d, o, dbg);
      if (s.ok()) fs_->Appended(fs_->NameOf(*node_), d.size());
      return s;
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& d,
                             const rocksdb::IOOptions& o,
                             const rocksdb::DataVerificationInfo&,
                             rocksdb::IODebugContext* dbg) override {
      return Append(d, o, dbg);
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& d, uint64_t off,
                                       const rocksdb::IOOptions& o,
                                       rocksdb::IODebugContext* dbg) override {
      if (fs_->off()) return rocksdb::IOStatus::OK();
      rocksdb::IOStatus s = fs_->Charge(d.size());
      if (!s.ok()) return s;
      s = target()->PositionedAppend(d, off, o, dbg);
      if (s.ok()) fs_->Appended(fs_->NameOf(*node_), d.size());
      return s;
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& d, uint64_t off,
                                       const rocksdb::IOOptions& o,
                                       const rocksdb::DataVerificationInfo&,
                                       rocksdb::IODebugContext* dbg) override {
      return PositionedAppend(d, off, o, dbg);
    }
    rocksdb::IOStatus Flush(const rocksdb::IOOptions& o,
                            rocksdb::IODebugContext* dbg) override {
      if (fs_->off()) return rocksdb::IOStatus::OK();
      return target()->Flush(o, dbg);
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* dbg) override {
      return SyncWith(o, dbg, false);
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o,
                            rocksdb::IODebugContext* dbg) override {
      return SyncWith(o, dbg, true);
    }
    rocksdb::IOStatus RangeSync(uint64_t, uint64_t, const rocksdb::IOOptions&,
                                rocksdb::IODebugContext*) override {
      return rocksdb::IOStatus::OK();  // not a durability point
    }
    rocksdb::IOStatus Close(const rocksdb::IOOptions& o,
                            rocksdb::IODebugContext* dbg) override {
      if (fs_->off()) return rocksdb::IOStatus::OK();
      return target()->Close(o, dbg);
    }
    bool IsSyncThreadSafe() const override { return false; }

   private:
    rocksdb::IOStatus SyncWith(const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* dbg, bool full) {
      const std::string name = fs_->NameOf(*node_);
      fs_->MaybeHold(name);
      if (fs_->off()) return rocksdb::IOStatus::OK();
      if (fs_->SyncFails(name)) return InjectedEio();
      std::optional<std::string> mapped = fs_->MappedBytes(*node_);
      rocksdb::IOStatus s =
          full ? target()->Fsync(o, dbg) : target()->Sync(o, dbg);
      if (!s.ok()) return s;
      if (fs_->off()) return s;  // the power went off during the sync
      fs_->Synced(name);
      if (mapped) fs_->MappedSynced(*node_, std::move(*mapped));
      return s;
    }

    FaultFs* fs_;
    std::shared_ptr<Node> node_;
  };

  struct Rw {
    std::string current;  // as written
    std::string synced;   // as the last completed sync left it
  };
  void RwWritten(const std::string& f, uint64_t offset, std::string_view d) {
    std::lock_guard lock(mu_);
    std::string& c = rw_[f].current;
    if (c.size() < offset + d.size()) c.resize(offset + d.size(), '\0');
    c.replace(offset, d.size(), d);
  }
  void RwSynced(const std::string& f) {
    std::lock_guard lock(mu_);
    Rw& r = rw_[f];
    r.synced = r.current;
  }

  class RwFile : public rocksdb::FSRandomRWFileOwnerWrapper {
   public:
    RwFile(FaultFs* fs, std::string name,
           std::unique_ptr<rocksdb::FSRandomRWFile> t)
        : FSRandomRWFileOwnerWrapper(std::move(t)),
          fs_(fs),
          name_(std::move(name)) {}
    rocksdb::IOStatus Write(uint64_t offset, const rocksdb::Slice& d,
                            const rocksdb::IOOptions& o,
                            rocksdb::IODebugContext* dbg) override {
      if (fs_->off()) return rocksdb::IOStatus::OK();
      rocksdb::IOStatus s = fs_->Charge(d.size());
      if (!s.ok()) return s;
      s = target()->Write(offset, d, o, dbg);
      if (s.ok()) fs_->RwWritten(name_, offset, d.ToStringView());
      return s;
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* dbg) override {
      fs_->MaybeHold(name_);
      if (fs_->off()) return rocksdb::IOStatus::OK();
      if (fs_->SyncFails(name_)) return InjectedEio();
      rocksdb::IOStatus s = target()->Sync(o, dbg);
      if (s.ok()) fs_->RwSynced(name_);
      return s;
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o,
                            rocksdb::IODebugContext* dbg) override {
      return Sync(o, dbg);
    }
    rocksdb::IOStatus Close(const rocksdb::IOOptions& o,
                            rocksdb::IODebugContext* dbg) override {
      if (fs_->off()) return rocksdb::IOStatus::OK();
      return target()->Close(o, dbg);
    }

   private:
    FaultFs* fs_;
    std::string name_;
  };

  // What a write after the power loss goes to. Its Allocate gives the
  // file a size, for a mapping of it (NewMemoryMappedFileBuffer).
  class Discard : public rocksdb::FSWritableFile {
   public:
    Discard(FaultFs* fs, std::string name) : fs_(fs), name_(std::move(name)) {}
    rocksdb::IOStatus Allocate(uint64_t offset, uint64_t len,
                               const rocksdb::IOOptions&,
                               rocksdb::IODebugContext*) override {
      fs_->Discarded(name_, offset + len);
      return rocksdb::IOStatus::OK();
    }
    rocksdb::IOStatus Append(const rocksdb::Slice&, const rocksdb::IOOptions&,
                             rocksdb::IODebugContext*) override {
      return rocksdb::IOStatus::OK();
    }
    rocksdb::IOStatus Close(const rocksdb::IOOptions&,
                            rocksdb::IODebugContext*) override {
      return rocksdb::IOStatus::OK();
    }
    rocksdb::IOStatus Flush(const rocksdb::IOOptions&,
                            rocksdb::IODebugContext*) override {
      return rocksdb::IOStatus::OK();
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions&,
                           rocksdb::IODebugContext*) override {
      return rocksdb::IOStatus::OK();
    }
    rocksdb::IOStatus Truncate(uint64_t, const rocksdb::IOOptions&,
                               rocksdb::IODebugContext*) override {
      return rocksdb::IOStatus::OK();
    }

   private:
    FaultFs* fs_;
    std::string name_;
  };

  static rocksdb::IOStatus InjectedEio() {
    return rocksdb::IOStatus::IOError("injected: Input/output error");
  }
  static bool EndsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  }

  struct Hold {
    Hold() : id(NextId()) {}
    static uint64_t NextId() {
      static std::atomic<uint64_t> n{0};
      return ++n;
    }
    uint64_t id;      // a new hold of the same suffix is another one
    int arrived = 0;  // syncs that reached it
  };

  std::mutex mu_;
  int64_t budget_ = -1;                 // GUARDED_BY(mu_)
  Fault fault_ = Fault::kNoSpace;       // GUARDED_BY(mu_)
  std::map<std::string, Sizes> files_;  // GUARDED_BY(mu_)
  std::map<std::string, Rw> rw_;        // GUARDED_BY(mu_)
  // Files made through NewWritableFile, by their current name.
  std::map<std::string, std::shared_ptr<Node>> nodes_;  // GUARDED_BY(mu_)
  // Files made after the power went off (memory only): their sizes.
  std::map<std::string, size_t> discarded_;  // GUARDED_BY(mu_)
  int boots_ = 0;                            // GUARDED_BY(mu_)
  std::atomic<uint64_t> failures_{0};
  std::atomic<bool> off_{false};
  std::mutex hold_mu_;
  std::condition_variable hold_cv_;
  std::map<std::string, Hold> holds_;  // GUARDED_BY(hold_mu_)
  std::string fail_syncs_;             // GUARDED_BY(hold_mu_)
};

// The FaultFs as an Env (what DBOptions::env takes). A Store opened with it
// (SetStoreEnvForTesting) runs its journals' files through the FaultFs too
// (Store::log_env). Restores the boot id when it ends.
struct FaultEnv {
  FaultEnv() = default;
  ~FaultEnv() { persistence::SetBootIdForTesting(""); }
  FaultEnv(const FaultEnv&) = delete;
  FaultEnv& operator=(const FaultEnv&) = delete;

  std::shared_ptr<FaultFs> fs = std::make_shared<FaultFs>();
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
};

// Installs a FaultEnv for the Stores opened during its lifetime.
struct EnvScope {
  explicit EnvScope(FaultEnv& e) {
    persistence::internal::SetStoreEnvForTesting(e.env.get());
  }
  ~EnvScope() { persistence::internal::SetStoreEnvForTesting(nullptr); }
  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;
};

}  // namespace shardfilter::testing

#endif  // SHARDFILTER_TESTS_FAULT_FS_H_
