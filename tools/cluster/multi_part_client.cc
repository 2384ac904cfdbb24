// SurveyParts and PartRound (tools/cluster/multi_part_client.h).
#include "tools/cluster/multi_part_client.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace shardfilter::cluster {
namespace {

using resp::Reply;

// SF.INFO's fields that a part gets at creation and keeps
// (docs/server.md, SF.INFO).
constexpr std::string_view kIdentityFields[] = {
    "type",           "declared_capacity", "error_rate",
    "scalable",       "expansion",         "shards",
    "durability",     "retain_hashes",     "bucket_size",
    "max_iterations",
};

std::string Text(const Reply& r) {
  if (r.type == Reply::Type::kInteger || r.type == Reply::Type::kBoolean) {
    return std::to_string(r.integer);
  }
  if (r.type == Reply::Type::kNull) return "null";
  return r.str;
}

// A part's status from the error its host answered.
Status FromError(std::string_view what, const Reply& r) {
  return Status(r.IsErrorCode("WRONGTYPE") ? StatusCode::kWrongType
                                           : StatusCode::kIOError,
                std::string(what) + ": " + r.str);
}

}  // namespace

std::string PartIdentity(const Reply& info) {
  std::string out;
  const auto& e = info.elements;
  for (size_t i = 0; i + 1 < e.size(); i += 2) {
    const std::string& name = e[i].str;
    if (std::find(std::begin(kIdentityFields), std::end(kIdentityFields),
                  name) == std::end(kIdentityFields)) {
      continue;
    }
    if (!out.empty()) out += ' ';
    out += name + "=" + Text(e[i + 1]);
  }
  return out;
}

Result<PartsSurvey> SurveyParts(ClusterClient& client,
                                const MultiPartFilter& f) {
  const uint32_t n = f.parts();
  std::vector<ClusterCommand> cmds;
  cmds.reserve(3 * static_cast<size_t>(n) + 1);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string key = f.PartKey(i);
    cmds.push_back({{"TYPE", key}});
    cmds.push_back({{"SF.INFO", key}});
    cmds.push_back({{"PEXPIRETIME", key}});
  }
  cmds.push_back({{"EXISTS", f.PartKey(n)}});
  Result<std::vector<Reply>> r = client.Run(cmds);
  if (!r.ok()) return r.status();
  PartsSurvey s;
  s.views.resize(n);
  s.types.resize(n);
  s.infos.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    Reply& type = (*r)[3 * i];
    Reply& info = (*r)[3 * i + 1];
    const Reply& deadline = (*r)[3 * i + 2];
    PartView& v = s.views[i];
    if (type.is_error()) {
      v.exists = true;  // unknown: reported as unreadable
      v.readable = FromError("TYPE", type);
      continue;
    }
    s.types[i] = type.str;
    v.exists = type.str != "none";
    if (!v.exists) continue;
    if (info.is_error()) {
      v.readable = FromError("SF.INFO", info);
    } else {
      v.identity = PartIdentity(info);
    }
    if (deadline.is_error() || deadline.type != Reply::Type::kInteger) {
      if (v.readable.ok()) v.readable = FromError("PEXPIRETIME", deadline);
    } else if (deadline.integer == -2) {
      v.exists = false;  // gone between TYPE and PEXPIRETIME
    } else {
      v.deadline_ms = deadline.integer;
    }
    s.infos[i] = std::move(info);
  }
  const Reply& next = r->back();
  if (next.is_error()) {
    return Status::IOError("EXISTS " + f.PartKey(n) + ": " + next.str);
  }
  s.next_exists = next.integer != 0;
  return s;
}

void PartRound::Build(const MultiPartFilter& f, std::string_view verb,
                      bool write, std::span<const std::string> items,
                      size_t per_command) {
  cmds_.clear();
  where_.clear();
  part_.clear();
  check_.clear();
  std::map<uint32_t, std::vector<size_t>> by_part;
  for (size_t i = 0; i < items.size(); ++i) {
    by_part[f.PartOf(items[i])].push_back(i);
  }
  for (auto& [part, idx] : by_part) {
    const std::string key = f.PartKey(part);
    for (size_t at = 0; at < idx.size(); at += per_command) {
      const size_t end = std::min(idx.size(), at + per_command);
      ClusterCommand c;
      c.write = write;
      c.args.reserve(2 + end - at);
      c.args.push_back(std::string(verb));
      c.args.push_back(key);
      where_.emplace_back();
      for (size_t j = at; j < end; ++j) {
        c.args.push_back(items[idx[j]]);
        where_.back().push_back(idx[j]);
      }
      cmds_.push_back(std::move(c));
      part_.push_back(part);
      check_.push_back(false);
    }
    cmds_.push_back({{"TYPE", key}});
    where_.emplace_back();
    part_.push_back(part);
    check_.push_back(true);
  }
}

Status PartRound::Verify(const MultiPartFilter& f, const PartsSurvey& survey,
                         std::span<const Reply> replies) const {
  // The parts this round did not check are taken as the survey saw them.
  std::vector<PartView> views = survey.views;
  bool bad = false;
  for (size_t c = 0; c < cmds_.size(); ++c) {
    if (!check_[c]) continue;
    PartView& v = views[part_[c]];
    const Reply& r = replies[c];
    if (r.is_error()) {
      v.readable = FromError("TYPE", r);
      bad = true;
    } else if (r.str == "none") {
      v.exists = false;
      bad = true;
    } else if (r.str != survey.types[part_[c]]) {
      v.readable =
          Status(StatusCode::kWrongType, "its type is now " + r.str + ", was " +
                                             survey.types[part_[c]]);
      bad = true;
    }
  }
  if (!bad) return Status::OK();
  Status s = CheckParts(f, views, false);
  // CheckParts fails for any view made missing or unreadable above; a
  // failed check must never read as OK, whatever CheckParts becomes.
  if (s.ok()) return Status::IOError("a part's check failed");
  return s;
}

}  // namespace shardfilter::cluster
