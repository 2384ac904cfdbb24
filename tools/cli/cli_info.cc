// `shardfilter info NAME [--json]`: a filter's parameters and live figures,
// aggregated and per shard, as aligned text or as one JSON object.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include "shardfilter/engine/database.h"
#include "tools/cli/cli.h"
#include "tools/cli/cli_args.h"
#include "tools/cli/cli_commands.h"

namespace shardfilter::tools {
namespace {

// Shortest round-tripping form; JSON has no NaN / Inf, so those are null.
std::string Num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "null";
}

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx",
                static_cast<unsigned long long>(v));
  return buf;
}

// What `items` counts, per type (one meaning everywhere: what the filter
// can tell it holds).
const char* ItemsMeaning(FilterType t) {
  return t == FilterType::kBloom
             ? "distinct keys as far as the filter can tell: adds that set a "
               "new bit (a key whose bits were all set is already present)"
             : "copies held: adds minus removes";
}

// "auto" for a spec field left to the type's default.
std::string OrAuto(uint32_t v) { return v == 0 ? "auto" : std::to_string(v); }

// Slots per key: the same in every shard (the total does not carry it).
uint32_t KOf(const FilterInfo& info) {
  return info.stats.shards.empty() ? info.stats.total.k
                                   : info.stats.shards[0].filter.k;
}

void PrintText(const FilterInfo& info, std::ostream& out) {
  const FilterSpec& s = info.spec;
  const FilterStats& t = info.stats.total;
  auto row = [&out](std::string_view key, const std::string& value) {
    out << key << std::string(key.size() < 22 ? 22 - key.size() : 1, ' ')
        << value << "\n";
  };
  row("name", EscapeBytes(info.name));
  row("type", FilterTypeName(s.type));
  row("capacity", std::to_string(s.capacity));
  row("scaling", s.scalable ? "yes, expansion " + std::to_string(s.expansion)
                            : std::string("no"));
  row("current_capacity", std::to_string(t.capacity));
  row("target_fpr", Fmt("%g", s.fpp));
  if (s.scalable) {
    // Why a young scalable filter measures about half its target.
    row("link0_fpr", Fmt("%g", s.fpp / 2) +
                         " (link 0 runs at half the target so that the "
                         "compound rate of all links stays under it)");
  }
  row("estimated_fpr", Fmt("%.3g", t.estimated_fpr));
  row("shards", std::to_string(info.stats.shards.size()));
  row("seed", Hex(s.seed));
  row("durability", s.durability ? DurabilityName(*s.durability) : "default");
  row("retain_hashes", s.retain_hashes ? "yes" : "no");
  if (s.type == FilterType::kBloom) {
    row("layout", BloomLayoutName(s.layout));
  }
  if (s.type != FilterType::kCuckoo) row("k", std::to_string(KOf(info)));
  if (s.type == FilterType::kCuckoo) {
    row("fingerprint_bits", OrAuto(s.fingerprint_bits));
    row("bucket_size", OrAuto(s.bucket_size));
  }
  row("items", std::to_string(t.items));
  row("items_counts", ItemsMeaning(s.type));
  if (s.type != FilterType::kBloom) row("deletes", std::to_string(t.deletes));
  row("fill", Fmt("%.2f%%", t.fill_ratio * 100));
  row("estimated_cardinality", Fmt("%.0f", t.estimated_cardinality));
  row("bytes",
      std::to_string(t.bytes) + Fmt(" (%.1f MiB)", t.bytes / 1048576.0));
  row("bits_per_item", Fmt("%.2f", t.bits_per_item));
  row("checkpoint_bytes", std::to_string(info.checkpoint_bytes));
  out << "\n";
  char line[200];
  std::snprintf(line, sizeof line,
                "%5s %5s %12s %10s %8s %10s %12s %5s %9s %10s %10s\n", "shard",
                "links", "items", "deletes", "fill%", "est_fpr", "bytes",
                "dirty", "ckpt_gen", "ckpt_seq", "last_seq");
  out << line;
  for (const ShardStats& sh : info.stats.shards) {
    std::snprintf(
        line, sizeof line,
        "%5u %5u %12llu %10llu %8.2f %10.3g %12llu %5s %9llu %10llu %10llu\n",
        sh.shard, sh.links, static_cast<unsigned long long>(sh.filter.items),
        static_cast<unsigned long long>(sh.filter.deletes),
        sh.filter.fill_ratio * 100, sh.filter.estimated_fpr,
        static_cast<unsigned long long>(sh.filter.bytes),
        sh.dirty ? "yes" : "no",
        static_cast<unsigned long long>(sh.checkpoint_generation),
        static_cast<unsigned long long>(sh.checkpoint_sequence),
        static_cast<unsigned long long>(sh.last_sequence));
    out << line;
  }
}

void PrintJson(const FilterInfo& info, std::ostream& out) {
  const FilterSpec& s = info.spec;
  const FilterStats& t = info.stats.total;
  out << "{\"name\":" << JsonString(info.name) << ",\"type\":\""
      << FilterTypeName(s.type) << "\",\"capacity\":" << s.capacity
      << ",\"scalable\":" << (s.scalable ? "true" : "false")
      << ",\"expansion\":" << s.expansion
      << ",\"current_capacity\":" << t.capacity
      << ",\"target_fpr\":" << Num(s.fpp)
      << ",\"shards\":" << info.stats.shards.size() << ",\"seed\":" << s.seed
      << ",\"durability\":\""
      << (s.durability ? DurabilityName(*s.durability) : "default") << "\""
      << ",\"retain_hashes\":" << (s.retain_hashes ? "true" : "false")
      << ",\"layout\":\"" << BloomLayoutName(s.layout) << "\""
      << ",\"k\":" << KOf(info)
      << ",\"fingerprint_bits\":" << s.fingerprint_bits
      << ",\"bucket_size\":" << s.bucket_size << ",\"items\":" << t.items
      << ",\"items_counts\":" << JsonString(ItemsMeaning(s.type))
      << ",\"deletes\":" << t.deletes << ",\"fill_ratio\":" << Num(t.fill_ratio)
      << ",\"estimated_fpr\":" << Num(t.estimated_fpr)
      << ",\"estimated_cardinality\":" << Num(t.estimated_cardinality)
      << ",\"bytes\":" << t.bytes
      << ",\"bits_per_item\":" << Num(t.bits_per_item)
      << ",\"checkpoint_bytes\":" << info.checkpoint_bytes
      << ",\"per_shard\":[";
  bool first = true;
  for (const ShardStats& sh : info.stats.shards) {
    out << (first ? "" : ",") << "{\"shard\":" << sh.shard
        << ",\"links\":" << sh.links << ",\"capacity\":" << sh.filter.capacity
        << ",\"items\":" << sh.filter.items
        << ",\"deletes\":" << sh.filter.deletes
        << ",\"fill_ratio\":" << Num(sh.filter.fill_ratio)
        << ",\"estimated_fpr\":" << Num(sh.filter.estimated_fpr)
        << ",\"bytes\":" << sh.filter.bytes
        << ",\"dirty\":" << (sh.dirty ? "true" : "false")
        << ",\"checkpoint_generation\":" << sh.checkpoint_generation
        << ",\"checkpoint_sequence\":" << sh.checkpoint_sequence
        << ",\"last_sequence\":" << sh.last_sequence
        << ",\"checkpoint_bytes\":" << sh.checkpoint_bytes << "}";
    first = false;
  }
  out << "]}\n";
}

}  // namespace

int RunInfo(CommandContext& ctx) {
  auto db = OpenStore(ctx, OpenMode::kReadOnly);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  Result<FilterInfo> info = (*db)->Info(ctx.args.positional[0]);
  if (!info.ok()) {
    return CloseStore(**db, ctx.err, ReportError(ctx.err, info.status()));
  }
  if (ctx.args.Has("json")) {
    PrintJson(*info, ctx.out);
  } else {
    PrintText(*info, ctx.out);
  }
  return CloseStore(**db, ctx.err, kExitOk);
}

}  // namespace shardfilter::tools
