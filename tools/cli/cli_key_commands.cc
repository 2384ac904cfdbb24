// The shardfilter commands that take keys: add, remove, exists. Keys come
// from the arguments or, when there are none, one per line from stdin; both
// go through the batch APIs kKeyBatch keys at a time.
#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/database.h"
#include "tools/cli/cli.h"
#include "tools/cli/cli_args.h"
#include "tools/cli/cli_commands.h"

namespace shardfilter::tools {
namespace {

// At most this many failed items are printed one by one; the rest are
// only counted.
constexpr uint64_t kMaxReportedFailures = 10;

// Yields the keys of a command in batches: the positional arguments after
// NAME, or else the lines of `in`.
class KeySource {
 public:
  KeySource(const std::vector<std::string>& positional, std::istream& in)
      : args_(positional), in_(in), from_args_(positional.size() > 1) {}

  // Replaces *keys with the next batch (views valid until the next call).
  // False when there are no more keys; an I/O error on `in` is in status().
  bool Next(std::vector<std::string_view>* keys) {
    keys->clear();
    if (from_args_) {
      while (next_arg_ < args_.size() && keys->size() < kKeyBatch) {
        keys->push_back(args_[next_arg_++]);
      }
      return !keys->empty();
    }
    lines_.resize(kKeyBatch);
    size_t n = 0;
    while (n < kKeyBatch && std::getline(in_, lines_[n])) {
      std::string& line = lines_[n];
      if (!line.empty() && line.back() == '\r') line.pop_back();
      ++n;
    }
    if (in_.bad()) status_ = Status::IOError("reading keys from stdin failed");
    for (size_t i = 0; i < n; ++i) keys->push_back(lines_[i]);
    return n > 0;
  }

  const Status& status() const { return status_; }

 private:
  const std::vector<std::string>& args_;
  std::istream& in_;
  const bool from_args_;
  size_t next_arg_ = 1;  // args_[0] is the filter name
  std::vector<std::string> lines_;
  Status status_;
};

std::shared_ptr<ShardedFilter> GetFilter(Database& db, std::string_view name,
                                         std::ostream& err, int* code) {
  auto f = db.Get(name);
  if (f.ok()) return *f;
  *code = ReportError(err, f.status());
  return nullptr;
}

// add and remove: same flow, different batch call and "expected" failure.
int RunMutation(CommandContext& ctx, bool remove) {
  const char* verb = remove ? "remove" : "add";
  std::optional<Durability> session;
  if (const std::string* d = ctx.args.Get("durability")) {
    auto r = ParseDurability(*d);
    if (!r.ok()) {
      return UsageError(ctx.err, "--durability: '" + EscapeBytes(*d) +
                                     "' is not none, journal or sync (see "
                                     "shardfilter " +
                                     std::string(verb) + " --help)");
    }
    session = *r;
  }
  const bool ack = ctx.args.Has("ack");
  const std::string& name = ctx.args.positional[0];
  auto db = OpenStore(ctx, OpenMode::kWriteExisting, session);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  int code = kExitOk;
  std::shared_ptr<ShardedFilter> f = GetFilter(**db, name, ctx.err, &code);
  if (f == nullptr) return CloseStore(**db, ctx.err, code);
  if (remove && f->type() == FilterType::kBloom) {
    Status s = Status::NotSupported(
        "filter " + EscapeBytes(name) +
        " is a bloom filter, which cannot remove keys (use a counting or "
        "cuckoo filter)");
    return CloseStore(**db, ctx.err, ReportError(ctx.err, s));
  }
  // Acks follow the durability actually in force for this handle.
  const Durability mode = f->durability();
  if (session && mode != *session) {
    ctx.err << "shardfilter: warning: --durability " << DurabilityName(*session)
            << " is not in effect; the filter uses " << DurabilityName(mode)
            << "\n";
  }
  const StatusCode expected =
      remove ? StatusCode::kNotFound : StatusCode::kFull;
  KeySource source(ctx.args.positional, ctx.in);
  std::vector<std::string_view> keys;
  std::vector<Status> per_item;
  std::vector<AddOutcome> outcomes;
  uint64_t processed = 0, failed = 0, present = 0;
  bool acked_any = false;
  Status fatal;
  while (fatal.ok() && source.Next(&keys)) {
    Status s = remove ? f->RemoveKeys(keys, &per_item)
                      : f->AddKeys(keys, &per_item, &outcomes);
    if (!s.ok() && per_item.size() != keys.size()) fatal = s;  // defensive
    for (size_t i = 0; i < per_item.size() && fatal.ok(); ++i) {
      const Status& r = per_item[i];
      if (r.ok()) {
        if (!remove && outcomes[i] == AddOutcome::kAlreadyPresent) ++present;
        continue;
      }
      if (r.code() != expected) {
        fatal = r;
        break;
      }
      if (++failed <= kMaxReportedFailures) {
        ctx.err << "shardfilter: key #" << processed + i + 1 << " '"
                << EscapeBytes(keys[i]) << "': " << r.ToString() << "\n";
      }
    }
    if (!fatal.ok()) break;
    processed += keys.size();
    if (ack && mode != Durability::kNone) {
      ctx.out << "ack " << processed << "\n";
      ctx.out.flush();
      acked_any = true;
    }
  }
  if (fatal.ok()) fatal = source.status();
  if (fatal.ok() && ack && mode == Durability::kNone) {
    // Nothing is durable under `none` until a checkpoint covers it.
    Result<CheckpointStats> cp = (*db)->Checkpoint(name);
    if (cp.ok()) {
      ctx.out << "ack " << processed << "\n";
      ctx.out.flush();
    } else {
      fatal = cp.status();
    }
  } else if (fatal.ok() && ack && !acked_any) {
    ctx.out << "ack 0\n";  // no keys: the (empty) input is all durable
    ctx.out.flush();
  }
  if (failed > kMaxReportedFailures) {
    ctx.err << "shardfilter: ... " << failed - kMaxReportedFailures
            << " more failed keys not shown\n";
  }
  if (!fatal.ok()) {
    ctx.err << "shardfilter: " << verb << ": stopped after " << processed
            << " keys (" << processed - failed - present << " done, " << present
            << " already present, " << failed << " failed)\n";
    return CloseStore(**db, ctx.err, ReportError(ctx.err, fatal));
  }
  if (!ctx.args.Has("quiet") || failed > 0) {
    ctx.err << verb << ": " << processed << " keys, "
            << processed - failed - present
            << (remove ? " removed, " : " added, ") << failed << " failed";
    if (failed > 0) ctx.err << (remove ? " (NotFound)" : " (Full)");
    // A Bloom key whose bits were all set: nothing changed, no capacity
    // used (AddOutcome::kAlreadyPresent).
    if (!remove) ctx.err << ", " << present << " already present";
    ctx.err << "\n";
  }
  return CloseStore(**db, ctx.err, failed > 0 ? kExitFailed : kExitOk);
}

}  // namespace

int RunAdd(CommandContext& ctx) { return RunMutation(ctx, false); }

int RunRemove(CommandContext& ctx) { return RunMutation(ctx, true); }

int RunExists(CommandContext& ctx) {
  auto db = OpenStore(ctx, OpenMode::kReadOnly);
  if (!db.ok()) return ReportError(ctx.err, db.status());
  int code = kExitOk;
  std::shared_ptr<ShardedFilter> f =
      GetFilter(**db, ctx.args.positional[0], ctx.err, &code);
  if (f == nullptr) return CloseStore(**db, ctx.err, code);
  KeySource source(ctx.args.positional, ctx.in);
  std::vector<std::string_view> keys;
  std::vector<uint8_t> found;
  std::string lines;
  while (source.Next(&keys)) {
    found.assign(keys.size(), 0);
    f->MayContainKeys(keys, found);
    lines.clear();
    for (uint8_t b : found) lines += b ? "1\n" : "0\n";
    ctx.out << lines;
    ctx.out.flush();
  }
  if (!source.status().ok()) code = ReportError(ctx.err, source.status());
  return CloseStore(**db, ctx.err, code);
}

}  // namespace shardfilter::tools
