// The checks `shardfilter cluster` makes of a multi-part filter's parts
// (shardfilter/engine/multi_part.h) through a ClusterClient:
//
// - SurveyParts, before a command reads or writes: every part's TYPE,
//   SF.INFO and PEXPIRETIME, and whether part N exists, in one pipeline.
//   CheckParts (engine) then says whether the parts are the whole filter.
// - PartRound, each round of items: `verb part items...` per part, each
//   part's commands followed by `TYPE part` on the same connection, so a
//   part lost after the survey (expired, flushed, failed over empty) shows
//   in the round that read it. SF.MEXISTS of a missing key answers 0 for
//   every item (as RedisBloom's BF.MEXISTS does), so the round's answers
//   count only once its checks pass. A part deleted and made again between
//   the query and its TYPE passes; a check inside the query itself would
//   need a command that refuses a missing key.
//
// Thread safety: none (a ClusterClient is used by one thread).
#ifndef SHARDFILTER_TOOLS_CLUSTER_MULTI_PART_CLIENT_H_
#define SHARDFILTER_TOOLS_CLUSTER_MULTI_PART_CLIENT_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/multi_part.h"
#include "shardfilter/filters/status.h"
#include "tools/cluster/cluster_client.h"
#include "tools/resp/reply_reader.h"

namespace shardfilter::cluster {

// The type and creation parameters in an SF.INFO reply, as comparable
// text: "type=bloom declared_capacity=250 error_rate=0.01 ...". Figures
// that change with use (items, bytes, capacity of a scaled filter, fill)
// are not part of it.
std::string PartIdentity(const resp::Reply& info);

struct PartsSurvey {
  std::vector<PartView> views;     // per part, for CheckParts
  std::vector<resp::Reply> infos;  // per part: SF.INFO's reply
  std::vector<std::string> types;  // per part: TYPE ("none": missing)
  bool next_exists = false;        // part N (= f.parts()) exists
};

// One pipeline of 3N + 1 commands. SF.INFO reads each part's whole table
// on its host (fill and estimated rate), so a survey costs one scan of the
// filter: once per command, never per round. An error Status only when the
// cluster could not be reached (or answered out of protocol).
Result<PartsSurvey> SurveyParts(ClusterClient& client,
                                const MultiPartFilter& f);

// One round: items routed to their parts.
class PartRound {
 public:
  // `verb part item...` commands of at most per_command items, in part
  // order, each part's last followed by its TYPE check.
  void Build(const MultiPartFilter& f, std::string_view verb, bool write,
             std::span<const std::string> items, size_t per_command);

  const std::vector<ClusterCommand>& commands() const { return cmds_; }
  // Per command: the items' indexes (empty for a TYPE check).
  const std::vector<size_t>& items_of(size_t c) const { return where_[c]; }
  bool is_check(size_t c) const { return check_[c]; }

  // After Run: OK when every checked part still has the type the survey
  // saw; else the CheckParts status naming the part (Corruption when it is
  // gone, WrongType when it holds something else).
  Status Verify(const MultiPartFilter& f, const PartsSurvey& survey,
                std::span<const resp::Reply> replies) const;

 private:
  std::vector<ClusterCommand> cmds_;
  std::vector<std::vector<size_t>> where_;
  std::vector<uint32_t> part_;
  std::vector<bool> check_;
};

}  // namespace shardfilter::cluster

#endif  // SHARDFILTER_TOOLS_CLUSTER_MULTI_PART_CLIENT_H_
