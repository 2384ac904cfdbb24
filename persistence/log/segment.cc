// Segment (log/segment.h): a filter journal segment's file through the Env,
// and the journal's test hooks.
#include "shardfilter/persistence/log/segment.h"

#include <cstring>
#include <mutex>
#include <utility>

namespace shardfilter::persistence {

namespace {

std::mutex& HookMu() {
  static std::mutex mu;
  return mu;
}
JournalFaultFn& FaultHook() {
  static JournalFaultFn fn;
  return fn;
}
JournalSyncedFn& SyncedHook() {
  static JournalSyncedFn fn;
  return fn;
}
// Whether a hook is set: without one, a sync or creation takes no lock.
std::atomic<bool> fault_hook_set{false};
std::atomic<bool> synced_hook_set{false};
// The hook runs outside HookMu: a test's hook may block (holding a sync
// back until the test lets it go) while other threads make segments.
Status Fault(std::string_view what, const std::string& path) {
  if (!fault_hook_set.load(std::memory_order_acquire)) return Status::OK();
  JournalFaultFn fn;
  {
    std::lock_guard lock(HookMu());
    fn = FaultHook();
  }
  return fn ? fn(what, path) : Status::OK();
}
void Synced(const std::string& path, std::string_view bytes) {
  if (!synced_hook_set.load(std::memory_order_acquire)) return;
  JournalSyncedFn fn;
  {
    std::lock_guard lock(HookMu());
    fn = SyncedHook();
  }
  if (fn) fn(path, bytes);
}

std::atomic<uint64_t> segment_bytes_override{0};

}  // namespace

void SetSegmentBytesForTesting(uint64_t bytes) {
  segment_bytes_override.store(bytes);
}
uint64_t SegmentBytesForTesting() { return segment_bytes_override.load(); }

void SetJournalFaultForTesting(JournalFaultFn fn) {
  std::lock_guard lock(HookMu());
  fault_hook_set.store(fn != nullptr, std::memory_order_release);
  FaultHook() = std::move(fn);
}
void SetJournalSyncedForTesting(JournalSyncedFn fn) {
  std::lock_guard lock(HookMu());
  synced_hook_set.store(fn != nullptr, std::memory_order_release);
  SyncedHook() = std::move(fn);
}

Result<std::shared_ptr<Segment>> Segment::Create(Env& env,
                                                 const std::string& path,
                                                 const SegmentHeader& h,
                                                 bool prefault_write) {
  SF_RETURN_IF_ERROR(Fault("create", path));
  const std::string head = EncodeSegmentHeader(h);
  if (head.size() > kSegmentHeaderBytes) {
    return Status::InvalidArgument("filter name too long for its journal");
  }
  MapOptions options;
  options.prefault_write = prefault_write;
  SF_ASSIGN_OR_RETURN(
      std::unique_ptr<MappedFile> file,
      env.CreateMapped(
          path, h.file_bytes,
          [&](char* p) { std::memcpy(p, head.data(), head.size()); }, options));
  std::shared_ptr<Segment> seg(new Segment());
  seg->path_ = path;
  seg->header_ = h;
  seg->base_ = file->data();
  seg->size_ = file->size();
  seg->file_ = std::move(file);
  Synced(path, std::string_view(seg->base_, kSegmentHeaderBytes));
  return seg;
}

Result<std::shared_ptr<Segment>> Segment::OpenExisting(
    Env& env, const std::string& path) {
  auto opened = env.OpenReadOnly(path);
  if (opened.status().IsNotFound()) {
    // Listed, then gone: an I/O error, never a filter "not found".
    return Status::IOError("filter journal " + path + " vanished while read");
  }
  SF_ASSIGN_OR_RETURN(std::unique_ptr<ReadOnlyFile> file, std::move(opened));
  std::shared_ptr<Segment> seg(new Segment());
  seg->path_ = path;
  seg->base_ = const_cast<char*>(file->bytes().data());
  seg->size_ = file->bytes().size();
  seg->loaded_ = std::move(file);
  SF_ASSIGN_OR_RETURN(
      seg->header_,
      DecodeSegmentHeader(std::string_view(seg->base_, seg->size_),
                          "filter journal " + path));
  return seg;
}

Segment::~Segment() = default;

void Segment::ReleaseSpace() {
  if (file_ != nullptr) file_->ReleaseSpace();
}

Status Segment::Sync() {
  SF_RETURN_IF_ERROR(Fault("sync", path_));
  if (file_ == nullptr) return Status::OK();  // read back: nothing to sync
  // The copy is taken before the fdatasync starts: the least a power loss
  // right after it keeps.
  std::string copy;
  const bool hooked = synced_hook_set.load(std::memory_order_acquire);
  if (hooked) copy.assign(base_, size_);
  SF_RETURN_IF_ERROR(file_->Sync());
  if (hooked) Synced(path_, copy);
  return Status::OK();
}

}  // namespace shardfilter::persistence
