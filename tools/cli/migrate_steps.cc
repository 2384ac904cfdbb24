// The steps of `shardfilter migrate` (tools/cli/migrate_steps.h).
#include "tools/cli/migrate_steps.h"

#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/hash.h"
#include "tools/cli/cli_args.h"
#include "tools/cli/key_reader.h"

namespace shardfilter::tools::migrate {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

const char* KeySourceName(KeySource k) {
  switch (k) {
    case KeySource::kHashes:
      return "hashes";
    case KeySource::kFold:
      return "fold";
    case KeySource::kKeys:
      return "keys";
  }
  return "?";
}

std::string Describe(const FilterSpec& s) {
  char fpp[32];
  std::snprintf(fpp, sizeof fpp, "%g", s.fpp);
  return std::string(FilterTypeName(s.type)) + " capacity " +
         std::to_string(s.capacity) + " fpp " + fpp + " shards " +
         std::to_string(s.shards) + (s.retain_hashes ? " retain_hashes" : "");
}

// Everything that must be equal for a saved state to be resumed: the
// request and the source's state (any op since changes a shard's last
// sequence, checkpoint generation or items: a Bloom add of a filter
// without a journal takes no sequence).
uint64_t Fingerprint(const std::string& name, const std::string& to,
                     KeySource kind, const FilterSpec& t, ShardedFilter& src,
                     const std::vector<std::string>& files) {
  std::string c = name + '\0' + to + '\0' + KeySourceName(kind);
  for (uint64_t v : {static_cast<uint64_t>(t.type), t.capacity, t.seed,
                     static_cast<uint64_t>(t.shards), uint64_t{t.k},
                     uint64_t{t.fingerprint_bits}, uint64_t{t.bucket_size},
                     uint64_t{t.expansion}, uint64_t{t.scalable},
                     static_cast<uint64_t>(t.layout), t.max_bytes}) {
    c += std::to_string(v) + ',';
  }
  char fpp[40];
  std::snprintf(fpp, sizeof fpp, "%.17g", t.fpp);
  c += fpp;
  for (const ShardStats& s : src.Stats().shards) {
    c += ';' + std::to_string(s.last_sequence) + '/' +
         std::to_string(s.checkpoint_generation) + '/' +
         std::to_string(s.filter.items);
  }
  for (const std::string& f : files) {
    struct stat st;
    c += '|' + f;
    if (::stat(f.c_str(), &st) == 0) {
      c += ':' + std::to_string(st.st_size) + ':' +
           std::to_string(st.st_mtim.tv_sec) + '.' +
           std::to_string(st.st_mtim.tv_nsec);
    }
  }
  return HashKey(c, 0);
}

std::string StatePath(const std::string& dir, const std::string& name,
                      const std::string& to) {
  char id[17];
  std::snprintf(id, sizeof id, "%016llx",
                static_cast<unsigned long long>(HashKey(name + '\0' + to, 0)));
  return dir + "/migrate-" + id + ".state";
}

std::string ParseOptions(const ParsedArgs& a, Options* o) {
  if (const std::string* f = a.Get("from")) {
    if (*f == "hashes") {
      o->from = KeySource::kHashes;
    } else if (*f == "fold") {
      o->from = KeySource::kFold;
    } else if (*f == "keys") {
      o->from = KeySource::kKeys;
    } else if (*f != "auto") {
      return "--from: '" + EscapeBytes(*f) +
             "' is not auto, hashes, fold or keys";
    }
  }
  auto count = [&](std::string_view flag, uint64_t lo, uint64_t* out) {
    const std::string* v = a.Get(flag);
    if (v == nullptr) return std::string();
    auto r = ParseCountInRange(*v, lo, UINT64_MAX);
    if (!r.ok()) return "--" + std::string(flag) + ": " + r.status().message();
    *out = *r;
    return std::string();
  };
  uint64_t fold = 0;
  for (auto [flag, lo, out] :
       {std::tuple{"fold", 2, &fold},
        std::tuple{"verify-sample", 1, &o->verify_sample},
        std::tuple{"probes", 0, &o->probes},
        std::tuple{"stop-after", 1, &o->stop_after},
        std::tuple{"progress-every", 1, &o->every}}) {
    std::string e = count(flag, static_cast<uint64_t>(lo), out);
    if (!e.empty()) return e;
  }
  if (fold != 0) {
    if ((fold & (fold - 1)) != 0 || fold > (1u << 30)) {
      return "--fold: " + std::to_string(fold) + " is not a power of two";
    }
    if (a.Has("capacity")) return "--fold sets the capacity: drop --capacity";
    o->fold = static_cast<uint32_t>(fold);
  }
  if (const std::string* v = a.Get("to-db")) {
    if (v->empty()) return "--to-db needs a directory";
    o->to_db = *v;
  }
  if (const std::string* v = a.Get("to-name")) {
    // An empty name would silently mean "in place" (no --to-name).
    if (v->empty()) return "--to-name needs a filter name (1..1024 bytes)";
    o->to_name = *v;
  }
  o->quiet = a.Has("quiet");
  o->restart = a.Has("restart");
  o->binary = a.Has("binary");
  o->retain = a.Has("retain-hashes");
  o->drop_hashes = a.Has("drop-hashes");
  if (o->retain && o->drop_hashes) {
    return "--retain-hashes and --drop-hashes contradict each other";
  }
  return "";
}

// Decides where the keys come from; a usage error message or "".
std::string ChooseSource(Run& r) {
  const FilterSpec& from = r.src->spec();
  const bool keys_given = !r.files.empty();
  if (r.opt.from == KeySource::kKeys || keys_given) {
    if (r.opt.from.has_value() && r.opt.from != KeySource::kKeys) {
      return "KEYFILEs are given but --from is not keys";
    }
    if (r.files.empty()) r.files.push_back("-");
    r.kind = KeySource::kKeys;
  } else if (r.opt.from == KeySource::kFold || r.opt.fold != 0) {
    if (r.opt.from.has_value() && r.opt.from != KeySource::kFold) {
      return "--fold needs --from fold (or auto)";
    }
    if (r.opt.fold == 0) return "--from fold needs --fold N";
    r.kind = KeySource::kFold;
  } else if (r.opt.from == KeySource::kHashes || from.retain_hashes) {
    if (!from.retain_hashes) {
      return Quoted(r.name) +
             " does not retain its key hashes (create it with "
             "--retain-hashes); give its keys as KEYFILEs, or --fold N for a "
             "Bloom filter";
    }
    r.kind = KeySource::kHashes;
  } else {
    return Quoted(r.name) +
           " does not retain its key hashes, so the target must be built "
           "from its keys (KEYFILEs) or, for a blocked Bloom filter, by "
           "folding (--fold N)";
  }
  if (r.kind != KeySource::kKeys && r.target.seed != from.seed) {
    return "a new --seed needs the keys themselves (KEYFILEs): hashes and "
           "bits depend on the seed";
  }
  const bool cross = !r.opt.to_db.empty() || !r.opt.to_name.empty();
  r.target.retain_hashes = r.opt.retain || (r.kind == KeySource::kHashes &&
                                            !r.opt.drop_hashes && !cross);
  if (r.target.retain_hashes && (r.kind != KeySource::kHashes || cross)) {
    return "--retain-hashes: only an in-place migration from retained hashes "
           "keeps them (for a new filter, create it with --retain-hashes and "
           "import its keys)";
  }
  return "";
}

// Fills r.built from the source of keys, from r.consumed on. Returns
// Aborted when interrupted (SIGINT or --stop-after) between batches.
Status Fill(Run& r, Progress* progress) {
  uint64_t this_run = 0;
  auto stop = [&] {
    return InterruptGuard::Interrupted() ||
           (r.opt.stop_after != 0 && this_run >= r.opt.stop_after);
  };
  std::vector<Status> per_item;
  auto add = [&](std::span<const uint64_t> hashes) -> Status {
    Status s = r.built->AddHashes(hashes, &per_item);
    if (!s.ok()) {
      return s.WithContext("the target cannot hold the source's keys");
    }
    return Status::OK();
  };
  if (r.kind == KeySource::kHashes) {
    const bool bloom = r.src->type() == FilterType::kBloom;
    std::vector<uint64_t> hashes;
    std::optional<uint64_t> after;
    if (r.have_last_hash) after = r.last_hash;
    return r.db->ScanRetainedHashes(
        r.name, after,
        [&](std::span<const std::pair<uint64_t, int64_t>> batch) -> Status {
          // Slices of kKeyBatch hashes, so that a stop lands between any
          // two slices and the cursor names the last hash added.
          for (size_t at = 0; at < batch.size(); at += kKeyBatch) {
            if (stop()) return Status::Aborted("interrupted");
            auto slice =
                batch.subspan(at, std::min(kKeyBatch, batch.size() - at));
            hashes.clear();
            for (const auto& [h, n] : slice) {
              for (int64_t c = 0; c < (bloom ? 1 : n); ++c) hashes.push_back(h);
            }
            SF_RETURN_IF_ERROR(add(hashes));
            r.consumed += slice.size();
            this_run += slice.size();
            r.last_hash = slice.back().first;
            r.have_last_hash = true;
            r.units = r.consumed;
            if (progress) progress->Update(r.consumed, r.units);
          }
          return Status::OK();
        });
  }
  // Keys.
  KeyReader reader(r.files, r.ctx.in, r.opt.binary);
  std::string key;
  for (uint64_t i = 0; i < r.consumed; ++i) {
    if (!reader.Next(&key)) {
      return reader.status().ok()
                 ? Status::InvalidArgument(
                       "the input has fewer keys than the saved state read")
                 : reader.status();
    }
  }
  const bool sample = r.files.size() == 1 && r.files[0] == "-";
  std::vector<uint64_t> hashes;
  for (bool more = true; more;) {
    if (stop()) return Status::Aborted("interrupted");
    hashes.clear();
    while (hashes.size() < kKeyBatch && (more = reader.Next(&key))) {
      hashes.push_back(r.built->Hash(key));
    }
    SF_RETURN_IF_ERROR(reader.status());
    if (hashes.empty()) break;
    SF_RETURN_IF_ERROR(add(hashes));
    if (sample) {
      for (uint64_t h : hashes) {
        if (r.stdin_sample.size() < 1'000'000) r.stdin_sample.push_back(h);
      }
    }
    r.consumed += hashes.size();
    this_run += hashes.size();
    r.units = reader.bytes();
    if (progress) progress->Update(r.consumed, r.units);
  }
  return Status::OK();
}

// Checks the source's keys are in the target; *checked / *missing.
Status Verify(Run& r, uint64_t* checked, uint64_t* missing) {
  ShardedFilter& t = *r.built;
  const uint64_t step =
      r.opt.verify_sample == 0 || r.consumed <= r.opt.verify_sample
          ? 1
          : r.consumed / r.opt.verify_sample;
  uint64_t i = 0;
  auto check = [&](uint64_t h) {
    if (i++ % step != 0) return;
    ++*checked;
    *missing += !t.MayContainHash(h);
  };
  if (r.kind == KeySource::kHashes) {
    return r.db->ScanRetainedHashes(
        r.name, std::nullopt,
        [&](std::span<const std::pair<uint64_t, int64_t>> batch) {
          for (const auto& p : batch) check(p.first);
          return Status::OK();
        });
  }
  if (r.kind == KeySource::kFold) {
    // Every bit of every source block is set in its folded block: then every
    // key of the source is in the target. Checked whole, not sampled.
    // (Keys per shard: the chain's count, its fill; the links keep none.)
    const ShardedStats source_stats = r.src->Stats();
    for (uint32_t s = 0; s < t.shard_count(); ++s) {
      const Filter& src = r.src->shard_filter(s);
      const Filter& dst = t.shard_filter(s);
      if (src.type() != FilterType::kBloom ||
          dst.type() != FilterType::kBloom) {
        return Status::InvalidArgument("fold verification: not Bloom shards");
      }
      const auto* from = static_cast<const BloomFilter*>(&src);
      const auto* to = static_cast<const BloomFilter*>(&dst);
      const uint64_t lost = to->MissingFoldedBits(*from);
      *checked += source_stats.shards[s].filter.items;
      if (lost != 0) *missing += lost == UINT64_MAX ? 1 : lost;
    }
    return Status::OK();
  }
  if (!r.stdin_sample.empty() || (r.files.size() == 1 && r.files[0] == "-")) {
    for (uint64_t h : r.stdin_sample) check(h);
    return Status::OK();
  }
  KeyReader reader(r.files, r.ctx.in, r.opt.binary);
  std::string key;
  while (reader.Next(&key)) check(t.Hash(key));
  return reader.status();
}

}  // namespace shardfilter::tools::migrate
