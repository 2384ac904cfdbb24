// A fault-injecting rocksdb::FileSystem for tests (issue 13, case 6):
//  * a write budget: once `budget` more bytes were appended (all files),
//    every Append (and Sync) fails with ENOSPC (IOStatus::NoSpace) or EIO;
//    Heal() lifts it, as freeing disk space would;
//  * a simulated power loss: PowerOff() makes every later write, sync,
//    rename and delete a silent no-op (the machine is gone; what the
//    process still does reaches nothing), and DropUnsyncedData() then cuts
//    every file written through it back to its last synced size, which is
//    what the disk holds after the power comes back.
// Install it for the Store with persistence::internal::SetStoreEnvForTesting
// (persistence/internal/test_env.h). Thread-safe (one mutex).
#ifndef SHARDFILTER_TESTS_FAULT_FS_H_
#define SHARDFILTER_TESTS_FAULT_FS_H_

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

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
  // written since it was created or last synced to its synced size.
  void DropUnsyncedData() {
    std::lock_guard lock(mu_);
    for (const auto& [name, f] : files_) {
      if (f.size != f.synced && ::access(name.c_str(), F_OK) == 0) {
        (void)!::truncate(name.c_str(), static_cast<off_t>(f.synced));
      }
    }
    files_.clear();
  }

  // --- FileSystem ---
  rocksdb::IOStatus NewWritableFile(const std::string& f,
                                    const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    if (off()) {
      r->reset(new Discard());
      return rocksdb::IOStatus::OK();
    }
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus s = target()->NewWritableFile(f, o, &file, dbg);
    if (!s.ok()) return s;
    {
      std::lock_guard lock(mu_);
      files_[f] = {0, 0};
    }
    r->reset(new File(this, f, std::move(file)));
    return s;
  }
  rocksdb::IOStatus ReopenWritableFile(
      const std::string& f, const rocksdb::FileOptions& o,
      std::unique_ptr<rocksdb::FSWritableFile>* r,
      rocksdb::IODebugContext* dbg) override {
    if (off()) {
      r->reset(new Discard());
      return rocksdb::IOStatus::OK();
    }
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus s = target()->ReopenWritableFile(f, o, &file, dbg);
    if (!s.ok()) return s;
    uint64_t size = 0;
    target()
        ->GetFileSize(f, rocksdb::IOOptions(), &size, dbg)
        .PermitUncheckedError();
    {
      std::lock_guard lock(mu_);
      files_[f] = {size, size};
    }
    r->reset(new File(this, f, std::move(file)));
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
  rocksdb::IOStatus DeleteFile(const std::string& f,
                               const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* dbg) override {
    if (off()) return rocksdb::IOStatus::OK();
    {
      std::lock_guard lock(mu_);
      files_.erase(f);
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
    }
    return target()->RenameFile(s, t, o, dbg);
  }

 private:
  struct Sizes {
    uint64_t size = 0;    // bytes appended
    uint64_t synced = 0;  // bytes known durable
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
    File(FaultFs* fs, std::string name,
         std::unique_ptr<rocksdb::FSWritableFile> t)
        : FSWritableFileOwnerWrapper(std::move(t)),
          fs_(fs),
          name_(std::move(name)) {}
    rocksdb::IOStatus Append(const rocksdb::Slice& d,
                             const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override {
      if (fs_->off()) return rocksdb::IOStatus::OK();
      rocksdb::IOStatus s = fs_->Charge(d.size());
      if (!s.ok()) return s;
      s = target()->Append(d, o, dbg);
      if (s.ok()) fs_->Appended(name_, d.size());
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
      if (s.ok()) fs_->Appended(name_, d.size());
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
      if (fs_->off()) return rocksdb::IOStatus::OK();
      rocksdb::IOStatus s = target()->Sync(o, dbg);
      if (s.ok()) fs_->Synced(name_);
      return s;
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o,
                            rocksdb::IODebugContext* dbg) override {
      if (fs_->off()) return rocksdb::IOStatus::OK();
      rocksdb::IOStatus s = target()->Fsync(o, dbg);
      if (s.ok()) fs_->Synced(name_);
      return s;
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
    FaultFs* fs_;
    std::string name_;
  };

  // What a write after the power loss goes to.
  class Discard : public rocksdb::FSWritableFile {
   public:
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
  };

  std::mutex mu_;
  int64_t budget_ = -1;                 // GUARDED_BY(mu_)
  Fault fault_ = Fault::kNoSpace;       // GUARDED_BY(mu_)
  std::map<std::string, Sizes> files_;  // GUARDED_BY(mu_)
  std::atomic<uint64_t> failures_{0};
  std::atomic<bool> off_{false};
};

// The FaultFs as an Env (what DBOptions::env takes).
struct FaultEnv {
  std::shared_ptr<FaultFs> fs = std::make_shared<FaultFs>();
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
};

}  // namespace shardfilter::testing

#endif  // SHARDFILTER_TESTS_FAULT_FS_H_
