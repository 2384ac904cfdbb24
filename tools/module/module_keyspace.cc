#include "tools/module/module_keyspace.h"

#include <algorithm>
#include <vector>

#include "shardfilter/engine/export.h"
#include "tools/commands/sharded_handle.h"
#include "tools/commands/util.h"
#include "tools/module/module_internal.h"
#include "tools/module/module_memory.h"
#include "tools/module/module_staging.h"

namespace shardfilter::module {

RedisModuleType* g_filter_type = nullptr;
ModuleCounters g_counters;

namespace {

// One filter as the command layer sees it, for one command. Not owning:
// the FilterValue belongs to Redis's keyspace and outlives the command.

}  // namespace

FilterSpec ToFilterSpec(const commands::CreateParams& p,
                        const ModuleOptions& options) {
  FilterSpec spec;
  spec.type = p.type;
  spec.capacity = p.capacity;
  spec.fpp = p.error_rate;
  spec.shards = p.shards != 0 ? p.shards : options.shards;
  spec.scalable = p.scalable;
  spec.expansion = std::clamp<uint32_t>(p.expansion, 1, 16);
  spec.max_bytes = options.max_filter_bytes;
  spec.durability = Durability::kNone;
  if (p.type == FilterType::kCuckoo) {
    spec.bucket_size = p.bucket_size;
    spec.max_kicks = p.max_iterations;
  }
  return spec;
}

ModuleKeyspace::ModuleKeyspace(RedisModuleCtx* ctx,
                               const ModuleOptions& options, bool write,
                               bool obey)
    : ctx_(ctx),
      options_(options),
      mode_(write ? REDISMODULE_READ | REDISMODULE_WRITE : REDISMODULE_READ),
      obey_(obey) {}

void ModuleFilter::BeforeMutation() { ks_->MarkMutated(); }

ModuleKeyspace::~ModuleKeyspace() {
  if (command_key_open_ != nullptr) RedisModule_CloseKey(command_key_open_);
  for (auto& [name, key] : open_) RedisModule_CloseKey(key);
}

void ModuleKeyspace::SetCommandKey(RedisModuleString* key) {
  command_key_ = key;
  size_t len = 0;
  const char* p = RedisModule_StringPtrLen(key, &len);
  command_key_view_ = std::string_view(p, len);
}

RedisModuleKey* ModuleKeyspace::Open(std::string_view key) {
  if (command_key_ != nullptr && key == command_key_view_) {
    if (command_key_open_ == nullptr) {
      command_key_open_ = RedisModule_OpenKey(ctx_, command_key_, mode_);
    }
    return command_key_open_;
  }
  auto it = open_.find(key);
  if (it != open_.end()) return it->second;
  RedisModuleString* name =
      RedisModule_CreateString(ctx_, key.data(), key.size());
  RedisModuleKey* k = RedisModule_OpenKey(ctx_, name, mode_);
  RedisModule_FreeString(ctx_, name);
  if (k == nullptr) return nullptr;
  open_.emplace(std::string(key), k);
  return k;
}

KeyState ModuleKeyspace::Probe(std::string_view key, FilterValue** value) {
  RedisModuleKey* k = Open(key);
  if (k == nullptr) return KeyState::kEmpty;
  const int type = RedisModule_KeyType(k);
  if (type == REDISMODULE_KEYTYPE_EMPTY) return KeyState::kEmpty;
  if (type != REDISMODULE_KEYTYPE_MODULE ||
      RedisModule_ModuleTypeGetType(k) != g_filter_type) {
    return KeyState::kOtherType;
  }
  auto* v = static_cast<FilterValue*>(RedisModule_ModuleTypeGetValue(k));
  if (value != nullptr) *value = v;
  if (v->pending) return KeyState::kPending;
  return v->available() ? KeyState::kFilter : KeyState::kUnavailable;
}

bool ModuleKeyspace::Install(std::string_view key,
                             std::unique_ptr<FilterValue> value) {
  RedisModuleKey* k = Open(key);
  if (k == nullptr) return false;
  if (RedisModule_ModuleTypeSetValue(k, g_filter_type, value.get()) !=
      REDISMODULE_OK) {
    return false;
  }
  value.release();  // Redis owns it now (freed through the type's free)
  return true;
}

Result<std::shared_ptr<commands::FilterHandle>> ModuleKeyspace::Lookup(
    std::string_view key) {
  FilterValue* v = nullptr;
  // The module checks the key before the handler runs (module.cc):
  // unavailable and pending values answer their state, and a write to a key
  // of another Redis type WRONGTYPE; a read of such a key reaches here and
  // gets WrongType, which the command layer answers as RedisBloom does.
  switch (Probe(key, &v)) {
    case KeyState::kFilter:
      break;
    case KeyState::kOtherType:
      return Status::WrongType("not a filter");
    default:
      return Status::NotFound("no filter at this key");
  }
  if (!handle_.has_value()) handle_.emplace(v->filter.get(), this);
  if (handle_->filter() == v->filter.get()) {
    // Aliasing constructor with no owner: no allocation, no count.
    return std::shared_ptr<commands::FilterHandle>(std::shared_ptr<void>(),
                                                   &*handle_);
  }
  return std::shared_ptr<commands::FilterHandle>(
      std::make_shared<ModuleFilter>(v->filter.get(), this));
}

Status ModuleKeyspace::Union(std::string_view dest,
                             std::span<const std::string_view> sources) {
  if (mode_ == REDISMODULE_READ) return Status::NotSupported("read-only");
  auto filter_at = [&](std::string_view key) -> Result<ShardedFilter*> {
    FilterValue* v = nullptr;
    switch (Probe(key, &v)) {
      case KeyState::kFilter:
        return v->filter.get();
      case KeyState::kOtherType:
        return Status::WrongType("not a filter");
      case KeyState::kUnavailable:
        return Status::Corruption("shardfilter: this filter is unavailable: " +
                                  v->damage);
      case KeyState::kPending:
        return Status::Corruption(
            "shardfilter: this filter is being restored (an incomplete "
            "SFM.CHUNK sequence)");
      case KeyState::kEmpty:
        break;
    }
    return Status::NotFound("no filter at this key");
  };
  SF_ASSIGN_OR_RETURN(ShardedFilter * into, filter_at(dest));
  std::vector<ShardedFilter*> from;
  for (std::string_view key : sources) {
    SF_ASSIGN_OR_RETURN(ShardedFilter * f, filter_at(key));
    // The server's text (Database::Union names both filters).
    SF_RETURN_IF_ERROR(into->CheckUnion(*f).WithContext(
        "union of filter \"" + std::string(key) + "\" into filter \"" +
        std::string(dest) + "\""));
    from.push_back(f);
  }
  MarkMutated();
  for (ShardedFilter* f : from) SF_RETURN_IF_ERROR(into->UnionWith(*f));
  return Status::OK();
}

Result<std::shared_ptr<commands::FilterHandle>> ModuleKeyspace::Create(
    std::string_view key, const commands::CreateParams& params) {
  if (mode_ == REDISMODULE_READ) return Status::NotSupported("read-only");
  if (Probe(key, nullptr) != KeyState::kEmpty) {
    return Status::AlreadyExists("key exists");
  }
  // Redis persists and replicates its keys itself (RDB, AOF): the engine's
  // durability modes and retained hashes (which need a RocksDB store) have
  // no meaning here.
  if (params.durability.has_value()) {
    return Status::InvalidArgument(
        "DURABILITY is not available in the module (Redis's own persistence "
        "applies: RDB, AOF)");
  }
  if (params.retain_hashes) {
    return Status::InvalidArgument(
        "RETAIN is not available in the module (retained hashes need "
        "shardfilter-server's store)");
  }
  auto f = ShardedFilter::Create(ToFilterSpec(params, options_), g_budget);
  if (!f.ok()) return f.status();
  auto value = std::make_unique<FilterValue>();
  value->filter = std::move(f).value();
  ShardedFilter* filter = value->filter.get();
  const FilterSpec resolved = filter->spec();
  if (!Install(key, std::move(value))) {
    return Status::IOError("cannot set the key");
  }
  created_ = resolved;
  ++g_counters.filters_created;
  return std::shared_ptr<commands::FilterHandle>(
      std::make_shared<ModuleFilter>(filter, this));
}

Result<std::string> ModuleKeyspace::Dump(std::string_view key) {
  FilterValue* v = nullptr;
  if (Probe(key, &v) != KeyState::kFilter) {
    return Status::NotFound("no filter at this key");
  }
  return ExportShardedFilter(*v->filter);
}

Status ModuleKeyspace::Restore(std::string_view key, std::string_view bytes) {
  if (mode_ == REDISMODULE_READ) return Status::NotSupported("read-only");
  if (Probe(key, nullptr) != KeyState::kEmpty) {
    return Status::AlreadyExists("key exists");
  }
  auto f = LoadExportedFilter(bytes, g_budget);
  if (!f.ok()) return f.status();
  auto value = std::make_unique<FilterValue>();
  value->filter = std::move(f).value();
  if (!Install(key, std::move(value))) {
    return Status::IOError("cannot set the key");
  }
  ++g_counters.values_loaded;
  ReplicateRestore(ctx_, key, bytes);
  return Status::OK();
}

Result<std::unique_ptr<commands::StagingBuffer>> ModuleKeyspace::NewStaging(
    uint64_t bytes, std::string_view what) {
  return NewRedisStaging(ctx_, bytes, what, obey_);
}

uint64_t ModuleKeyspace::MaxRestoreBytes() const {
  return module::MaxRestoreBytes(options_.max_filter_bytes);
}

Result<bool> ModuleKeyspace::Delete(std::string_view key) {
  RedisModuleKey* k = Open(key);
  if (k == nullptr || RedisModule_KeyType(k) == REDISMODULE_KEYTYPE_EMPTY) {
    return false;
  }
  return RedisModule_DeleteKey(k) == REDISMODULE_OK;
}

Status ModuleKeyspace::Flush() {
  return Status::NotSupported("FLUSHALL is Redis's own command");
}

Status ModuleKeyspace::Checkpoint() {
  return Status::NotSupported("SAVE is Redis's own command");
}

}  // namespace shardfilter::module
