// BF.DEBUG, CF.DEBUG and CF.COMPACT in RedisBloom's shapes.
//
// BF.DEBUG answers RedisBloom's lines: "size:<items>", then one per link
// (sub-filter) "bytes:B bits:b hashes:h hashwidth:64 capacity:c size:s
// ratio:r", each figure this filter's own: a link's table bytes and bits
// (its layout's, not RedisBloom's classic bit array), bits set per key,
// 64-bit hashes, capacity, items and rate; a filter of several shards
// answers link i's figures summed over them. CF.DEBUG answers
// "bktsize:b buckets:n items:i deletes:d filters:f max_iterations:m
// expansion:e", the figures CF.INFO reports.
#include <cstdio>
#include <string>

#include "tools/commands/command_table.h"
#include "tools/commands/filter_access.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace handlers {

void BfDebug(CommandContext& ctx, Args args) {
  if (args.size() != 2) return ReplyWrongArity(ctx.out, args[0]);
  auto found = LookupTyped(ctx, args[1], FilterType::kBloom);
  if (found.wrong_type) return ctx.out.Error(kWrongTypeError);
  if (ReplyIfUnreadable(ctx, args[1], found)) return;
  if (found.handle == nullptr) return ctx.out.Error(kNotFoundError);
  const std::vector<LinkFigures> links = found.handle->Links();
  uint64_t items = 0;
  for (const LinkFigures& l : links) items += l.items;
  ctx.out.Array(1 + links.size());
  ctx.out.Bulk("size:" + std::to_string(items));
  for (const LinkFigures& l : links) {
    char line[256];
    // RedisBloom prints the rate with %g.
    std::snprintf(line, sizeof line,
                  "bytes:%llu bits:%llu hashes:%u hashwidth:64 capacity:%llu "
                  "size:%llu ratio:%g",
                  static_cast<unsigned long long>(l.bytes),
                  static_cast<unsigned long long>(l.bits), l.k,
                  static_cast<unsigned long long>(l.capacity),
                  static_cast<unsigned long long>(l.items), l.fpp);
    ctx.out.Bulk(line);
  }
}

void CfDebug(CommandContext& ctx, Args args) {
  if (args.size() != 2) return ReplyWrongArity(ctx.out, args[0]);
  auto found = LookupTyped(ctx, args[1], FilterType::kCuckoo);
  if (found.wrong_type) return ctx.out.Error(kWrongTypeError);
  if (ReplyIfUnreadable(ctx, args[1], found)) return;
  if (found.handle == nullptr) return ctx.out.Error(kNotFoundError);
  const FilterSummary s = found.handle->Summary();
  ctx.out.Bulk("bktsize:" + std::to_string(s.bucket_size) + " buckets:" +
               std::to_string(s.buckets) + " items:" + std::to_string(s.items) +
               " deletes:" + std::to_string(s.deletes) +
               " filters:" + std::to_string(s.links) +
               " max_iterations:" + std::to_string(s.max_iterations) +
               " expansion:" + std::to_string(s.scalable ? s.expansion : 0));
}

// CF.COMPACT key: RedisBloom moves fingerprints from later sub-filters
// into earlier ones and frees the sub-filters left empty. A shardfilter
// chain never drops a link (its links are read without locks and each is
// journalled and checkpointed on its own), so there is nothing to free:
// the command checks the key as RedisBloom does and answers OK, and the
// filter is unchanged (docs/server.md, "Differences from RedisBloom").
void CfCompact(CommandContext& ctx, Args args) {
  if (args.size() != 2) return ReplyWrongArity(ctx.out, args[0]);
  auto found = LookupTyped(ctx, args[1], FilterType::kCuckoo);
  if (ReplyIfUnreadable(ctx, args[1], found)) return;
  // Missing or of another type: RedisBloom's one text for both.
  if (found.handle == nullptr) {
    return ctx.out.Error("Cuckoo filter was not found");
  }
  ctx.out.SimpleString("OK");
}

}  // namespace handlers
}  // namespace shardfilter::commands
