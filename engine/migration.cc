// Database's migration calls (engine/migration.h): checking what a
// migration can do before it starts, and the bookkeeping around the thread
// (engine/internal/migration_run.cc).
#include "shardfilter/engine/migration.h"

#include <bit>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/internal/database_impl.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/migration.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter {

using internal::DatabaseImpl;
using internal::Migration;
using persistence::DescribeName;

const char* MigrationSourceName(MigrationSource s) {
  switch (s) {
    case MigrationSource::kAuto:
      return "auto";
    case MigrationSource::kRetainedHashes:
      return "hashes";
    case MigrationSource::kFold:
      return "fold";
  }
  return "unknown";
}

const char* MigrationPhaseName(MigrationPhase p) {
  switch (p) {
    case MigrationPhase::kFilling:
      return "filling";
    case MigrationPhase::kDraining:
      return "draining";
    case MigrationPhase::kSwitching:
      return "switching";
    case MigrationPhase::kDone:
      return "done";
    case MigrationPhase::kFailed:
      return "failed";
    case MigrationPhase::kAborted:
      return "aborted";
  }
  return "unknown";
}

FilterSpec FoldedSpec(const FilterSpec& source, uint32_t factor) {
  FilterSpec t = source;
  t.capacity = factor == 0 ? 0 : source.capacity / factor;
  return t;
}

namespace internal {

MigrationProgress Migration::Progress() const {
  MigrationProgress p;
  p.phase = phase_.load(std::memory_order_acquire);
  p.source = source_;
  p.target = target_spec_;
  p.items_total = items_total.load(std::memory_order_relaxed);
  p.items_done = items_done.load(std::memory_order_relaxed);
  p.ops_replayed = replayed.load(std::memory_order_relaxed);
  p.ops_queued = queued_.load(std::memory_order_relaxed);
  p.write_pause_ns = pause_ns.load(std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  auto end = p.finished() ? end_ : std::chrono::steady_clock::now();
  p.seconds = std::chrono::duration<double>(end - start_).count();
  p.status = status_;
  return p;
}

void Migration::Finish(MigrationPhase p, Status s) {
  {
    std::lock_guard lock(mu_);
    status_ = std::move(s);
    end_ = std::chrono::steady_clock::now();
    phase_.store(p, std::memory_order_release);
  }
  done_cv_.notify_all();
}

void Migration::Wait() {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] {
    return phase_.load(std::memory_order_acquire) >= MigrationPhase::kDone;
  });
}

void DatabaseImpl::StopMigrations() {
  std::vector<std::shared_ptr<Migration>> all;
  {
    internal::MutexLock lock(mu);
    for (auto& [name, m] : migrations) all.push_back(m);
  }
  for (auto& m : all) m->abort.store(true);
  for (auto& m : all) {
    if (m->thread.joinable()) m->thread.join();
  }
}

}  // namespace internal

namespace {

// Why `target` is not a fold of `source`, or OK with *factor set.
Status CheckFold(const FilterSpec& source, const FilterSpec& target,
                 uint32_t* factor) {
  if (source.type != FilterType::kBloom || target.type != FilterType::kBloom) {
    return Status::InvalidArgument(
        "only Bloom filters fold (a cuckoo fingerprint's bucket does not "
        "determine its home bucket in a table of another size, and a counting "
        "filter's counters cannot be split)");
  }
  if (source.layout == BloomLayout::kClassic) {
    return Status::InvalidArgument(
        "a classic-layout Bloom filter does not fold (its key's bits span the "
        "whole table)");
  }
  if (target.capacity == 0 || source.capacity % target.capacity != 0 ||
      !std::has_single_bit(source.capacity / target.capacity) ||
      source.capacity / target.capacity < 2) {
    return Status::InvalidArgument(
        "a fold divides the capacity by a power of two >= 2: " +
        std::to_string(source.capacity) + " -> " +
        std::to_string(target.capacity) + " is not one");
  }
  *factor = static_cast<uint32_t>(source.capacity / target.capacity);
  FilterSpec want = FoldedSpec(source, *factor);
  want.durability = target.durability;
  want.max_bytes = target.max_bytes;
  if (want.shards != target.shards || want.seed != target.seed ||
      want.fpp != target.fpp || want.k != target.k ||
      want.scalable != target.scalable || want.expansion != target.expansion ||
      target.retain_hashes) {
    return Status::InvalidArgument(
        "a fold keeps shards, seed, fpp, k and growth and only divides the "
        "capacity (FoldedSpec)");
  }
  return Status::OK();
}

}  // namespace

Status Database::StartMigration(std::string_view name, const FilterSpec& spec,
                                MigrationSource source) {
  DatabaseImpl& d = *impl_;
  if (d.options.read_only) {
    return Status::NotSupported("migrate " + DescribeName(name) +
                                ": the store is open read-only");
  }
  SF_ASSIGN_OR_RETURN(internal::OpenFilter of, d.Find(name));
  const FilterSpec& from = of.filter->spec();
  FilterSpec want = spec;
  if (!want.durability.has_value()) want.durability = from.durability;
  SF_ASSIGN_OR_RETURN(
      FilterSpec target,
      internal::ResolveSpec(want, d.options.default_durability));
  const std::string who = "migrate " + DescribeName(name) + ": ";
  if (target.seed != from.seed) {
    return Status::InvalidArgument(
        who +
        "a new seed needs the keys themselves (hashes and bits depend "
        "on the seed): rebuild offline with `shardfilter migrate "
        "--keys FILE`");
  }
  if (target.retain_hashes && !from.retain_hashes) {
    return Status::InvalidArgument(
        who +
        "the target retains hashes but the source does not: the "
        "hashes of the keys it holds are unknown");
  }
  uint32_t factor = 0;
  Status fold = CheckFold(from, target, &factor);
  if (source == MigrationSource::kAuto) {
    source = from.retain_hashes ? MigrationSource::kRetainedHashes
                                : MigrationSource::kFold;
    if (source == MigrationSource::kFold && !fold.ok()) {
      return Status::InvalidArgument(
          who +
          "the filter does not retain its key hashes (create it with "
          "retain_hashes), and the target is not a fold of it: " +
          fold.message() +
          ". With the keys, rebuild offline: `shardfilter migrate --keys "
          "FILE`");
    }
  }
  if (source == MigrationSource::kRetainedHashes && !from.retain_hashes) {
    return Status::InvalidArgument(
        who +
        "the filter does not retain its key hashes (create it with "
        "retain_hashes)");
  }
  if (source == MigrationSource::kFold && !fold.ok()) {
    return fold.WithContext(who + "fold");
  }
  // A fold keeps every key in its shard, so it keeps the source's shard
  // router, whatever the request says (the server's SF.MIGRATE builds a
  // fresh spec, whose router is the new filters' default); a rebuild from
  // retained hashes routes them anew, by the target's.
  if (source == MigrationSource::kFold) target.router = from.router;
  // The target's first links must fit the memory budget now, as a create's
  // would: refused here (nothing started) rather than by the migration's
  // thread, which reserves them again before it allocates them.
  {
    Result<uint64_t> first = internal::FirstLinkBytes(target);
    if (!first.ok()) return first.status().WithContext(who + "the target");
    const uint64_t link = *first;
    const uint64_t bytes = link * target.shards;
    auto account = d.NewAccount();
    SF_RETURN_IF_ERROR(account->Charge(bytes, who + "building the target"));
    account->Refund(bytes);
  }
  internal::MutexLock lock(d.mu);
  if (d.closed) return Status::NotSupported("the database is closed");
  auto it = d.filters.find(name);
  if (it == d.filters.end() || it->second.filter != of.filter) {
    return Status::NotFound(DescribeName(name) + " does not exist");
  }
  auto mit = d.migrations.find(name);
  if (mit != d.migrations.end()) {
    if (!mit->second->Progress().finished()) {
      return Status::Busy(who + "a migration of it is running");
    }
    if (mit->second->thread.joinable()) mit->second->thread.join();
  }
  auto m = std::make_shared<Migration>(from.shards, source, target);
  m->source = of.filter;
  m->source_state = of.state;
  d.migrations[std::string(name)] = m;
  m->thread = std::thread(
      [&d, m, n = std::string(name)] { internal::RunMigration(d, *m, n); });
  return Status::OK();
}

namespace {

// The running or last migration of `name`, or NotFound.
Result<std::shared_ptr<Migration>> FindMigration(DatabaseImpl& d,
                                                 std::string_view name) {
  internal::MutexLock lock(d.mu);
  auto it = d.migrations.find(name);
  if (it == d.migrations.end()) {
    return Status::NotFound("no migration of " + DescribeName(name) +
                            " was started");
  }
  return it->second;
}

}  // namespace

Result<MigrationProgress> Database::GetMigration(std::string_view name) const {
  SF_ASSIGN_OR_RETURN(auto m, FindMigration(*impl_, name));
  return m->Progress();
}

Result<MigrationProgress> Database::WaitForMigration(std::string_view name) {
  SF_ASSIGN_OR_RETURN(auto m, FindMigration(*impl_, name));
  m->Wait();
  return m->Progress();
}

Status Database::AbortMigration(std::string_view name) {
  SF_ASSIGN_OR_RETURN(auto m, FindMigration(*impl_, name));
  m->abort.store(true);
  m->Wait();
  return Status::OK();
}

Result<MigrationProgress> Database::Migrate(std::string_view name,
                                            const FilterSpec& target,
                                            MigrationSource source) {
  SF_RETURN_IF_ERROR(StartMigration(name, target, source));
  SF_ASSIGN_OR_RETURN(MigrationProgress p, WaitForMigration(name));
  if (!p.status.ok()) return p.status;
  return p;
}

}  // namespace shardfilter
