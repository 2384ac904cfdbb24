// ShardedFilterHandle: the command layer's FilterHandle over a ShardedFilter,
// the one adapter both hosts use (tools/server/db_keyspace.cc over a
// Database's filters, tools/module/module_keyspace.cc over a Redis value).
// Header-only: engine/sharded_filter.h includes no RocksDB or oneTBB header,
// and each host links the engine itself.
//
// Thread safety: that of ShardedFilter (every method may run concurrently).
#ifndef SHARDFILTER_TOOLS_COMMANDS_SHARDED_HANDLE_H_
#define SHARDFILTER_TOOLS_COMMANDS_SHARDED_HANDLE_H_

#include <algorithm>
#include <span>
#include <string_view>
#include <vector>

#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "tools/commands/keyspace.h"

namespace shardfilter::commands {

class ShardedFilterHandle : public FilterHandle {
 public:
  // `f` must outlive the handle.
  explicit ShardedFilterHandle(ShardedFilter* f) : f_(f) {}

  FilterType type() const override { return f_->type(); }
  Durability durability() const override { return f_->durability(); }
  Result<bool> Add(std::string_view item) override {
    BeforeMutation();
    SF_ASSIGN_OR_RETURN(AddOutcome o, f_->Insert(item));
    return o == AddOutcome::kAdded;
  }
  void AddMany(std::span<const std::string_view> items,
               std::vector<Status>* per_item,
               std::vector<uint8_t>* added) override {
    BeforeMutation();
    per_item->clear();
    std::vector<AddOutcome> outcomes;
    (void)f_->AddKeys(items, per_item, &outcomes);  // per_item: every status
    added->assign(items.size(), 0);
    for (size_t i = 0; i < items.size(); ++i) {
      (*added)[i] = (*per_item)[i].ok() && outcomes[i] == AddOutcome::kAdded;
    }
  }
  bool MayContain(std::string_view item) const override {
    return f_->MayContain(item);
  }
  void MayContainMany(std::span<const std::string_view> items,
                      std::span<uint8_t> out) const override {
    f_->MayContainKeys(items, out);
  }
  uint32_t Count(std::string_view item) const override {
    return f_->Count(item);
  }
  Status Remove(std::string_view item) override {
    BeforeMutation();
    return f_->Remove(item);
  }
  FilterSummary Summary() const override {
    const FilterSpec& spec = f_->spec();
    const ShardedStats stats = f_->Counts();  // no table scan
    FilterSummary s;
    s.type = spec.type;
    s.capacity = stats.total.capacity;
    s.bytes = stats.total.bytes;
    s.items = stats.total.items;
    s.deletes = stats.total.deletes;
    s.links = 1;
    for (const ShardStats& sh : stats.shards) {
      s.links = std::max(s.links, sh.links);
    }
    s.scalable = spec.scalable;
    s.expansion = spec.expansion;
    s.bucket_size = spec.bucket_size != 0 ? spec.bucket_size : 4;
    s.max_iterations = spec.max_kicks;
    if (spec.type == FilterType::kCuckoo) {
      // RedisBloom's "Number of buckets" is its first sub-filter's: link 0
      // of every shard.
      for (uint32_t i = 0; i < f_->shard_count(); ++i) {
        s.buckets += static_cast<const CuckooFilter&>(f_->shard_filter(i, 0))
                         .num_buckets();
      }
      // RedisBloom's geometry reports its tables as RedisBloom does: one
      // byte per 8-bit slot (without the table's padding word).
      if (spec.cuckoo_pow2_buckets) s.bytes = stats.total.slots;
    }
    return s;
  }
  FilterSpec Spec() const override { return f_->spec(); }
  std::vector<LinkFigures> Links() const override {
    std::vector<LinkFigures> links;
    for (uint32_t s = 0; s < f_->shard_count(); ++s) {
      const uint32_t n = f_->shard_links(s);
      if (links.size() < n) links.resize(n);
      for (uint32_t i = 0; i < n; ++i) {
        const Filter& link = f_->shard_filter(s, i);
        const FilterStats st = link.Counts();
        LinkFigures& l = links[i];
        l.bytes += st.bytes;
        l.bits += st.slots;
        l.k = st.k;
        l.capacity += st.capacity;
        l.items += f_->shard_link_items(s, i);
        l.fpp = link.target_fpr();
      }
    }
    return links;
  }
  ShardedStats Stats() const override { return f_->Stats(); }

 protected:
  // Called before every mutation (the module marks its key dirty for
  // replication and persistence); nothing by default.
  virtual void BeforeMutation() {}

 private:
  ShardedFilter* f_;
};

}  // namespace shardfilter::commands

#endif  // SHARDFILTER_TOOLS_COMMANDS_SHARDED_HANDLE_H_
