// Persistent tiered filters: Create, Open and Drop in a Database, and the
// registry that gives one object per (Database, name).
//
// Create writes the levels (each a catalog descriptor, synced under
// durability sync; else written ahead of the next in RocksDB's log), then the
// tiered descriptor (synced): a crash in between leaves level filters and no
// descriptor, which Open reports as NotFound and the next Create replaces.
// Drop deletes the descriptor and exact level in one synced write first, so
// a crash during the levels' drops leaves only orphan levels (again
// replaced by the next Create of the name).
#include <map>
#include <mutex>

#include "shardfilter/engine/internal/tiered_internal.h"
#include "shardfilter/engine/tiered_filter.h"
#include "shardfilter/persistence/tiered_table.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter {

using persistence::TieredDescriptor;
using persistence::TieredTable;

namespace {

// Create / Open / Drop are rare: one process-wide mutex serialises them
// (so that two Creates of one name cannot interleave their level writes)
// and guards the registry. Never held by adds or queries.
std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}
using RegistryKey = std::pair<const Database*, std::string>;
std::map<RegistryKey, std::weak_ptr<TieredFilter>>& Registry() {
  static auto* m = new std::map<RegistryKey, std::weak_ptr<TieredFilter>>();
  return *m;
}

std::string Describe(std::string_view name) {
  return "tiered " + persistence::DescribeName(name);
}

Status CheckTieredName(std::string_view name) {
  if (name.empty())
    return Status::InvalidArgument("tiered filter name is empty");
  size_t longest = TieredFilter::LevelName(name, kMaxTieredLevels - 1).size();
  if (longest > kMaxFilterNameBytes) {
    return Status::InvalidArgument("tiered filter name has " +
                                   std::to_string(name.size()) +
                                   " bytes; its level names must fit in " +
                                   std::to_string(kMaxFilterNameBytes));
  }
  return Status::OK();
}

Status CheckOpen(const Database* db) {
  if (internal::TieredAccess::closed(*db)) {
    return Status::NotSupported("the database is closed");
  }
  return Status::OK();
}

// Drops level filters of `name` (left by a crashed Create or Drop).
Status DropLevels(Database* db, std::string_view name) {
  for (uint32_t i = 0; i < kMaxTieredLevels; ++i) {
    Status s = internal::TieredAccess::DropLevel(
        *db, TieredFilter::LevelName(name, i));
    if (!s.ok() && !s.IsNotFound()) return s;
  }
  return Status::OK();
}

}  // namespace

std::string TieredFilter::LevelName(std::string_view name, uint32_t level) {
  std::string out(name);
  out += kLevelMark;
  out += std::to_string(level);
  return out;
}

Result<std::shared_ptr<TieredFilter>> TieredFilter::Create(
    Database* db, std::string_view name, const TieredSpec& spec) {
  SF_RETURN_IF_ERROR(CheckTieredName(name));
  if (db->read_only()) {
    return Status::NotSupported("create " + Describe(name) +
                                ": the store is open read-only");
  }
  Durability d = spec.durability.value_or(db->options().default_durability);
  SF_ASSIGN_OR_RETURN(TieredSpec resolved,
                      internal::ResolveTieredSpec(spec, d));
  std::lock_guard lock(RegistryMutex());
  SF_RETURN_IF_ERROR(CheckOpen(db));
  TieredTable table(internal::TieredAccess::store(*db));
  SF_ASSIGN_OR_RETURN(auto existing, table.GetDescriptor(name));
  if (existing.has_value()) {
    return Status::AlreadyExists(Describe(name) + " already exists");
  }
  SF_RETURN_IF_ERROR(DropLevels(db, name));
  std::vector<std::shared_ptr<ShardedFilter>> levels;
  TieredDescriptor desc;
  desc.exact_level = spec.exact_level;
  desc.durability = static_cast<uint8_t>(d);
  desc.base_seed = spec.seed;
  for (uint32_t i = 0; i < resolved.levels.size(); ++i) {
    Result<std::shared_ptr<ShardedFilter>> f =
        internal::TieredAccess::CreateLevel(*db, LevelName(name, i),
                                            resolved.levels[i]);
    if (!f.ok()) {
      DropLevels(db, name).ok();
      return f.status().WithContext("tiered level " + std::to_string(i));
    }
    levels.push_back(*f);
    desc.levels.push_back({resolved.levels[i].type, resolved.levels[i].seed});
  }
  Status s = table.PutDescriptor(name, desc);
  if (!s.ok()) {
    DropLevels(db, name).ok();
    return s;
  }
  Durability in_force = levels[0]->durability();
  auto t = Assemble(std::string(name), std::move(levels),
                    spec.exact_level ? internal::NewStoreExactLevel(
                                           db, std::string(name), in_force)
                                     : nullptr);
  Registry()[{db, std::string(name)}] = t;
  return t;
}

Result<std::shared_ptr<TieredFilter>> TieredFilter::Open(
    Database* db, std::string_view name) {
  SF_RETURN_IF_ERROR(CheckTieredName(name));
  std::lock_guard lock(RegistryMutex());
  SF_RETURN_IF_ERROR(CheckOpen(db));
  auto& registry = Registry();
  for (auto it = registry.begin(); it != registry.end();) {
    it = it->second.expired() ? registry.erase(it) : std::next(it);
  }
  TieredTable table(internal::TieredAccess::store(*db));
  SF_ASSIGN_OR_RETURN(auto desc, table.GetDescriptor(name));
  if (!desc.has_value()) {
    return Status::NotFound(Describe(name) + " does not exist");
  }
  std::vector<std::shared_ptr<ShardedFilter>> levels;
  for (uint32_t i = 0; i < desc->levels.size(); ++i) {
    std::string level_name = LevelName(name, i);
    Result<std::shared_ptr<ShardedFilter>> f = db->Get(level_name);
    std::string what = Describe(name) + " level " + std::to_string(i);
    if (!f.ok()) {
      return Status::Corruption(what + " is missing: " + f.status().ToString());
    }
    const auto& rec = desc->levels[i];
    if ((*f)->type() != rec.type || (*f)->seed() != rec.seed) {
      return Status::Corruption(what + " is a " + FilterTypeName((*f)->type()) +
                                " filter with another seed than the recorded " +
                                FilterTypeName(rec.type) + " level");
    }
    levels.push_back(*f);
  }
  // The same object for the same open levels (a Database reopened at the
  // same address has new level objects, so the entry is replaced).
  auto hit = registry.find({db, std::string(name)});
  if (hit != registry.end()) {
    std::shared_ptr<TieredFilter> t = hit->second.lock();
    if (t != nullptr && t->levels_ == levels) return t;
  }
  Durability in_force = levels[0]->durability();
  auto t = Assemble(std::string(name), std::move(levels),
                    desc->exact_level ? internal::NewStoreExactLevel(
                                            db, std::string(name), in_force)
                                      : nullptr);
  registry[{db, std::string(name)}] = t;
  return t;
}

Status TieredFilter::Drop(Database* db, std::string_view name) {
  SF_RETURN_IF_ERROR(CheckTieredName(name));
  if (db->read_only()) {
    return Status::NotSupported("drop " + Describe(name) +
                                ": the store is open read-only");
  }
  std::lock_guard lock(RegistryMutex());
  SF_RETURN_IF_ERROR(CheckOpen(db));
  TieredTable table(internal::TieredAccess::store(*db));
  SF_ASSIGN_OR_RETURN(auto desc, table.GetDescriptor(name));
  if (!desc.has_value()) {
    return Status::NotFound(Describe(name) + " does not exist");
  }
  SF_RETURN_IF_ERROR(table.Drop(name));
  Registry().erase({db, std::string(name)});
  return DropLevels(db, name);
}

}  // namespace shardfilter
