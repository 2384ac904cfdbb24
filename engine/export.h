// Export and import of one filter as a single portable byte string: a small
// header with the FilterSpec, every shard's blob (its chain of links, as a
// checkpoint stores it: docs/format-store.md) length-prefixed, and an
// XXH3-64 of everything. The bytes
// are documented in docs/format-export.md; `shardfilter export` /
// `shardfilter import-filter` write and read them as files.
//
//   auto bytes = ExportFilter(*db, "users");          // exact snapshot
//   Status s = ImportFilter(*other_db, "users", *bytes);
//
// Errors on import: bytes that are not an export at all -> InvalidArgument
// ("not a shardfilter export"); truncated, padded, checksum mismatch,
// inconsistent header, a shard blob that does not decode or does not match
// the header's spec -> Corruption; a format version from the future (of the
// export, a chain or a link envelope) -> NotSupported; the name already
// in use -> AlreadyExists; a read-only or closed store -> NotSupported.
// Whatever the error, nothing is created.
//
// Thread safety: every function may run concurrently with any use of the
// Database or filter. ExportShardedFilter holds every shard lock exclusive
// (ascending order, as Drop does) while it serializes, so writers of that
// filter wait for the copy (about memory bandwidth: ~1 ms per MiB) and the
// snapshot is one instant: every batch is wholly in it or wholly out.
#ifndef SHARDFILTER_ENGINE_EXPORT_H_
#define SHARDFILTER_ENGINE_EXPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/memory_budget.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/status.h"

namespace shardfilter {

inline constexpr char kExportMagic[4] = {'S', 'F', 'E', 'X'};
// Version 2 binds each shard blob to its shard index (a checksum seeded
// with the index follows each blob), so blobs swapped in a file whose
// trailer was recomputed are rejected; version 1 files are still read.
inline constexpr uint16_t kExportVersion = 2;
inline constexpr size_t kExportHeaderSize = 64;
inline constexpr size_t kExportTrailerSize = 8;

// The export of a filter of `db` (read-only stores included: the state is
// the recovered one, journal replayed). NotFound for an unknown name.
Result<std::string> ExportFilter(Database& db, std::string_view name);
// The export of any sharded filter, standalone ones included.
std::string ExportShardedFilter(ShardedFilter& filter);

// A checked export: the spec and views of the shard envelopes into the
// parsed bytes (valid while they are). The blobs are only framed here;
// ImportFilter decodes them.
struct ParsedExport {
  FilterSpec spec;                       // shards set; durability as exported
  std::vector<std::string_view> shards;  // chain blobs
};
// Checks magic, version, lengths, checksum and header fields.
Result<ParsedExport> ParseExport(std::string_view bytes);

// A standalone filter holding exactly the exported state (spec durability
// as exported). Errors as ImportFilter's.
// Its tables are charged to `budget` (null: MemoryBudget::Default())
// before anything is decoded: ResourceExhausted when they do not fit.
Result<std::unique_ptr<ShardedFilter>> LoadExportedFilter(
    std::string_view bytes, std::shared_ptr<MemoryBudget> budget = nullptr);

// Creates filter `name` in `db` holding exactly the exported state (every
// shard Equals the exported one), durably: one synced commit, so a crash
// leaves either the whole filter or nothing. `durability` replaces the
// exported durability when set.
Status ImportFilter(Database& db, std::string_view name, std::string_view bytes,
                    std::optional<Durability> durability = std::nullopt);

}  // namespace shardfilter

#endif  // SHARDFILTER_ENGINE_EXPORT_H_
