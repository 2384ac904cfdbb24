// NewFileSystemEnv (log/fs_env.h): the journal component's Env over a
// rocksdb::FileSystem.
#include "shardfilter/persistence/log/fs_env.h"

#include <rocksdb/file_system.h>
#include <sys/mman.h>

#include <cstring>
#include <utility>

#include "shardfilter/persistence/rocks_status.h"

namespace shardfilter::persistence {

namespace {

using internal::FromRocks;

const rocksdb::IOOptions kIo;

class FsMappedFile final : public MappedFile {
 public:
  FsMappedFile(std::unique_ptr<rocksdb::MemoryMappedFileBuffer> map,
               std::unique_ptr<rocksdb::FSWritableFile> file, std::string path)
      : MappedFile(static_cast<char*>(map->GetBase()), map->GetLen()),
        map_(std::move(map)),
        file_(std::move(file)),
        path_(std::move(path)) {}
  ~FsMappedFile() override {
    map_.reset();  // unmapped before the handle closes
    (void)file_->Close(kIo, nullptr);
  }

  Status Sync() override {
    return FromRocks(file_->Sync(kIo, nullptr), "syncing " + path_);
  }

  void ReleaseSpace() override {
    // The file is unlinked: truncating it frees its blocks and drops its
    // pages from the page cache (and from every mapping); extending it
    // again makes the mapping's pages read as zeros (a hole), not fault.
    if (file_->Truncate(0, kIo, nullptr).ok()) {
      (void)file_->Truncate(size(), kIo, nullptr);
    }
  }

 private:
  std::unique_ptr<rocksdb::MemoryMappedFileBuffer> map_;
  std::unique_ptr<rocksdb::FSWritableFile> file_;
  const std::string path_;
};

class FsReadOnlyFile final : public ReadOnlyFile {
 public:
  FsReadOnlyFile() = default;
  // The bytes `got` read: the file's mapping, or `copy` when the file
  // system read into it.
  FsReadOnlyFile(std::unique_ptr<rocksdb::FSRandomAccessFile> file,
                 std::unique_ptr<char[]> copy, rocksdb::Slice got)
      : file_(std::move(file)) {
    if (got.data() == copy.get()) copy_ = std::move(copy);
    set_bytes(std::string_view(got.data(), got.size()));
  }

 private:
  std::unique_ptr<rocksdb::FSRandomAccessFile> file_;  // owns the mapping
  // The buffer a file system that does not map read into.
  std::unique_ptr<char[]> copy_;
};

class FsEnv final : public Env {
 public:
  explicit FsEnv(std::shared_ptr<rocksdb::FileSystem> fs)
      : fs_(std::move(fs)) {}

  Result<std::unique_ptr<MappedFile>> CreateMapped(
      const std::string& path, uint64_t bytes,
      const std::function<void(char* data)>& fill,
      const MapOptions& options) override {
    const std::string dir = ParentDir(path);
    SF_RETURN_IF_ERROR(MakeDirs(dir));
    // Built under a temporary name and renamed when whole: a kill while it
    // is made leaves no file of ours under `path`.
    const std::string tmp = path + ".tmp";
    rocksdb::FileOptions fo;
    fo.allow_fallocate = true;
    fo.fallocate_with_keep_size = false;  // the file takes its size
    std::unique_ptr<rocksdb::FSWritableFile> file;
    SF_RETURN_IF_ERROR(FromRocks(fs_->NewWritableFile(tmp, fo, &file, nullptr),
                                 "creating " + tmp));
    auto fail = [&](Status s) {
      file.reset();
      (void)fs_->DeleteFile(tmp, kIo, nullptr);
      return s;
    };
    // Allocated, not written: ENOSPC shows here rather than as a SIGBUS in
    // the mapping, and no page of zeros is written back.
    rocksdb::IOStatus a = file->Allocate(0, bytes, kIo, nullptr);
    if (!a.ok() && !a.IsNoSpace()) {
      // A file system without fallocate: the zeros are written instead.
      const std::string zeros(size_t{1} << 20, '\0');
      a = rocksdb::IOStatus::OK();
      for (uint64_t off = 0; a.ok() && off < bytes; off += zeros.size()) {
        const size_t n =
            static_cast<size_t>(std::min<uint64_t>(zeros.size(), bytes - off));
        a = file->Append(rocksdb::Slice(zeros.data(), n), kIo, nullptr);
      }
      if (a.ok()) a = file->Flush(kIo, nullptr);
    }
    if (!a.ok()) return fail(FromRocks(a, "allocating " + tmp));
    std::unique_ptr<rocksdb::MemoryMappedFileBuffer> map;
    Status s =
        FromRocks(fs_->NewMemoryMappedFileBuffer(tmp, &map), "mapping " + tmp);
    if (s.ok() && map->GetLen() != bytes) {
      s = Status::IOError("mapping " + tmp + ": " +
                          std::to_string(map->GetLen()) + " bytes, not " +
                          std::to_string(bytes));
    }
    if (!s.ok()) {
      map.reset();
      return fail(s);
    }
    fill(static_cast<char*>(map->GetBase()));
    s = FromRocks(file->Sync(kIo, nullptr), "syncing " + tmp);
    if (!s.ok()) {
      map.reset();
      return fail(s);
    }
    Prefault(map->GetBase(), map->GetLen(), options.prefault_write);
    s = FromRocks(fs_->RenameFile(tmp, path, kIo, nullptr), "renaming " + tmp);
    if (!s.ok()) {
      map.reset();
      return fail(s);
    }
    SF_RETURN_IF_ERROR(SyncDir(dir));
    return std::unique_ptr<MappedFile>(
        new FsMappedFile(std::move(map), std::move(file), path));
  }

  Result<std::unique_ptr<ReadOnlyFile>> OpenReadOnly(
      const std::string& path) override {
    uint64_t size = 0;
    rocksdb::IOStatus st = fs_->GetFileSize(path, kIo, &size, nullptr);
    if (st.IsPathNotFound() || st.IsNotFound()) {
      return Status::NotFound("no file " + path);
    }
    SF_RETURN_IF_ERROR(FromRocks(st, "reading the size of " + path));
    if (size == 0) return std::unique_ptr<ReadOnlyFile>(new FsReadOnlyFile());
    rocksdb::FileOptions fo;
    fo.use_mmap_reads = true;  // Read returns the mapping's bytes
    std::unique_ptr<rocksdb::FSRandomAccessFile> file;
    SF_RETURN_IF_ERROR(FromRocks(
        fs_->NewRandomAccessFile(path, fo, &file, nullptr), "opening " + path));
    std::unique_ptr<char[]> copy(new char[size]);
    rocksdb::Slice got;
    SF_RETURN_IF_ERROR(
        FromRocks(file->Read(0, size, kIo, &got, copy.get(), nullptr),
                  "reading " + path));
    if (got.size() != size) {
      return Status::IOError("reading " + path + ": " +
                             std::to_string(got.size()) + " of " +
                             std::to_string(size) + " bytes");
    }
    return std::unique_ptr<ReadOnlyFile>(
        new FsReadOnlyFile(std::move(file), std::move(copy), got));
  }

  Status Remove(const std::string& path) override {
    rocksdb::IOStatus s = fs_->DeleteFile(path, kIo, nullptr);
    if (s.IsPathNotFound() || s.IsNotFound()) return Status::OK();
    return FromRocks(s, "removing " + path);
  }

  Status RemoveTree(const std::string& dir) override {
    SF_ASSIGN_OR_RETURN(const std::vector<std::string> names, Children(dir));
    for (const std::string& n : names) {
      SF_RETURN_IF_ERROR(Remove(dir + "/" + n));
    }
    rocksdb::IOStatus s = fs_->DeleteDir(dir, kIo, nullptr);
    if (s.IsPathNotFound() || s.IsNotFound()) return Status::OK();
    return FromRocks(s, "removing " + dir);
  }

  Result<std::vector<std::string>> Children(const std::string& dir) override {
    std::vector<std::string> names;
    rocksdb::IOStatus s = fs_->GetChildren(dir, kIo, &names, nullptr);
    if (s.IsPathNotFound() || s.IsNotFound()) return names;  // none yet
    SF_RETURN_IF_ERROR(FromRocks(s, "listing " + dir));
    std::erase_if(names,
                  [](const std::string& n) { return n == "." || n == ".."; });
    return names;
  }

  Status SyncDir(const std::string& dir) override {
    std::unique_ptr<rocksdb::FSDirectory> d;
    SF_RETURN_IF_ERROR(FromRocks(fs_->NewDirectory(dir, kIo, &d, nullptr),
                                 "opening directory " + dir));
    Status s = FromRocks(d->Fsync(kIo, nullptr), "syncing directory " + dir);
    (void)d->Close(kIo, nullptr);
    return s;
  }

 private:
  // Every directory of `dir` that is missing, outermost first.
  Status MakeDirs(const std::string& dir) {
    for (size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
      const std::string part =
          at == std::string::npos ? dir : dir.substr(0, at);
      if (!part.empty()) {
        SF_RETURN_IF_ERROR(FromRocks(
            fs_->CreateDirIfMissing(part, kIo, nullptr), "creating " + part));
      }
      if (at == std::string::npos) return Status::OK();
    }
  }

  // MapOptions::prefault_write, else the pages read ahead and mapped (a
  // shared file's pages are mapped read-only either way until a store
  // faults them writable: that fault is what prefault_write saves).
  static void Prefault(void* p, size_t n, bool write) {
#ifdef MADV_POPULATE_WRITE
    if (write && ::madvise(p, n, MADV_POPULATE_WRITE) == 0) return;
#endif
#ifdef MADV_POPULATE_READ
    if (!write && ::madvise(p, n, MADV_POPULATE_READ) == 0) return;
#endif
    // An older kernel (EINVAL): read ahead into the page cache.
    (void)::madvise(p, n, MADV_WILLNEED);
  }

  const std::shared_ptr<rocksdb::FileSystem> fs_;
};

}  // namespace

std::unique_ptr<Env> NewFileSystemEnv(std::shared_ptr<rocksdb::FileSystem> fs) {
  return std::make_unique<FsEnv>(std::move(fs));
}

}  // namespace shardfilter::persistence
