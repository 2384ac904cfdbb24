// The Database side of engine/export.h: ExportFilter, and ImportFilter,
// which checks every byte of an export before the store is touched, then
// creates the filter in one synced commit. (export.cc and export_load.cc,
// the bytes of a standalone filter, belong to the in-memory engine and know
// no store.)
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "shardfilter/engine/export.h"
#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/database_impl.h"
#include "shardfilter/engine/internal/export_decode.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"

namespace shardfilter {
namespace internal {

// The Database internals ImportFilter needs (friend of Database).
class ImportAccess {
 public:
  static DatabaseImpl& impl(Database& db) { return *db.impl_; }
};

}  // namespace internal

using internal::ShardedFilterAccess;

Result<std::string> ExportFilter(Database& db, std::string_view name) {
  SF_ASSIGN_OR_RETURN(std::shared_ptr<ShardedFilter> f, db.Get(name));
  return ExportShardedFilter(*f);
}

Status ImportFilter(Database& db, std::string_view name, std::string_view bytes,
                    std::optional<Durability> durability) {
  if (name.empty() || name.size() > kMaxFilterNameBytes) {
    return Status::InvalidArgument("filter name must have 1.." +
                                   std::to_string(kMaxFilterNameBytes) +
                                   " bytes");
  }
  SF_RETURN_IF_ERROR(internal::CheckUserFilterName(name));
  if (db.read_only()) {
    return Status::NotSupported("import: the store is open read-only");
  }
  SF_ASSIGN_OR_RETURN(ParsedExport parsed, ParseExport(bytes));
  if (durability) parsed.spec.durability = *durability;
  Result<FilterSpec> resolved =
      internal::ResolveSpec(parsed.spec, db.options().default_durability);
  if (!resolved.ok()) {
    return Status::Corruption("export file: header holds an invalid spec: " +
                              resolved.status().message());
  }
  internal::DatabaseImpl& d = internal::ImportAccess::impl(db);
  auto account = d.NewAccount();
  SF_ASSIGN_OR_RETURN(auto chains, internal::DecodeExportShards(
                                       *resolved, parsed.shards, *account));

  internal::MutexLock lock(d.mu);  // lock order 1: no Create/Drop meanwhile
  if (d.closed) return Status::NotSupported("the database is closed");
  // Any filter of the name, loaded or not, damaged or not, is refused:
  // the DropFilter below only wipes debris no descriptor names.
  SF_RETURN_IF_ERROR(d.CheckNameFree(name));
  // The name has no descriptor: wipe any debris under it (a crash of an
  // earlier import), write every shard as generation 1 (unsynced), then one
  // synced commit puts the descriptor. Before it, the chunks are orphans no
  // descriptor refers to; after it, the filter is whole.
  SF_RETURN_IF_ERROR(d.store->DropFilter(name));
  persistence::FilterDescriptor desc = internal::DescriptorFromSpec(*resolved);
  std::vector<uint32_t> all;
  for (uint32_t i = 0; i < resolved->shards; ++i) {
    auto record = d.store->WriteChunks(name, i, 1, parsed.shards[i],
                                       d.options.chunk_bytes);
    if (!record.ok()) {
      (void)d.store->DropFilter(name);  // best effort; orphans otherwise
      return record.status();
    }
    desc.shards[i] = *record;
    all.push_back(i);
  }
  Status s = d.store->CommitCheckpoint(name, desc, all);
  if (!s.ok()) {
    (void)d.store->DropFilter(name);
    return s;
  }
  std::shared_ptr<ShardedFilter> f = ShardedFilterAccess::MakeEmpty(
      std::string(name), *resolved, std::move(account));
  for (uint32_t i = 0; i < resolved->shards; ++i) {
    internal::Shard& sh = ShardedFilterAccess::shard(*f, i);
    internal::InstallChain(sh, std::move(chains[i]));  // not shared yet
    sh.NoteCheckpoint(1, 0, desc.shards[i].byte_length);
  }
  ShardedFilterAccess::Attach(*f, d.journal.get(), false,
                              d.options.durability_override);
  auto state = std::make_shared<internal::FilterState>(desc);
  d.filters.emplace(std::string(name),
                    internal::OpenFilter{std::move(f), std::move(state)});
  return Status::OK();
}

}  // namespace shardfilter
