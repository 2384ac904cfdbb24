// Shared by the BF.* and CF.* handlers: typed lookups, creation with
// RedisBloom's error replies, and the one place BF.ADD's 0/1 is computed.
#ifndef SHARDFILTER_TOOLS_COMMANDS_FILTER_ACCESS_H_
#define SHARDFILTER_TOOLS_COMMANDS_FILTER_ACCESS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "tools/commands/session.h"

namespace shardfilter::commands {

struct TypedLookup {
  std::shared_ptr<FilterHandle> handle;  // set when found with the type
  bool wrong_type = false;               // found, of another type
  // Not OK when the key exists but cannot be read (its load failed: the
  // memory budget, damage, I/O): never answered as absent.
  Status error;
};

// A key the host cannot hold (empty, too long) is simply absent.
TypedLookup LookupTyped(CommandContext& ctx, std::string_view key,
                        FilterType type);

// Writes ReplyUnreadable and returns true when the lookup found a key that
// cannot be read.
bool ReplyIfUnreadable(CommandContext& ctx, std::string_view key,
                       const TypedLookup& found);

// True when an add found its filter dropped meanwhile (FilterHandle::Add's
// NotFound): the command starts again from its lookup (kMaxWriteAttempts).
bool DroppedDuringWrite(std::span<const Status> statuses);

// Writes kOomError and returns true when `s` is the host's maxmemory
// refusing an allocation (ResourceExhausted where
// Keyspace::BudgetIsMaxmemory).
bool ReplyIfOverMaxmemory(CommandContext& ctx, const Status& s);

// Replies to a failed Keyspace::Create: over the host's maxmemory ->
// kOomError; TooLarge or another budget's ResourceExhausted -> "ERR
// Insufficient memory to create filter"; AlreadyExists -> "ERR item
// exists"; else `generic` followed by the reason.
void ReplyCreateError(CommandContext& ctx, const Status& status,
                      std::string_view generic);

// Creates the key; when a concurrent command created it first, returns
// that filter if it has the right type. Null (reply written) on failure
// (WRONGTYPE, the create's error, or the other command's key cannot be
// read).
std::shared_ptr<FilterHandle> CreateOrReplyError(CommandContext& ctx,
                                                 std::string_view key,
                                                 const CreateParams& params,
                                                 std::string_view generic);

// Adds items to a Bloom filter and decides BF.ADD / BF.MADD / BF.INSERT's
// answers from what the engine reports (bloom_commands.cc): (*added)[i] = 1
// when item i set a new bit, 0 when every bit was set already (an item
// repeated in the call is new once); (*statuses)[i] its add's status.
void BloomAddReportingNew(FilterHandle& filter, Args items,
                          std::vector<uint8_t>* added,
                          std::vector<Status>* statuses);

// BF.ADD (multi = false) / BF.MADD / BF.INSERT's reply for computed adds
// to `filter`. RedisBloom's texts: Full is "ERR non scaling filter is full"
// when the filter is non-scaling; a scaling filter that cannot grow
// answers "ERR problem inserting into filter".
void ReplyBloomAdds(CommandContext& ctx, const FilterHandle& filter,
                    std::span<const uint8_t> added,
                    std::span<const Status> statuses, bool multi);

// Adds a copy of each item to a cuckoo filter (cuckoo_commands.cc). The
// engine bounds the copies of one item (2 x bucket size - 1) and answers
// Full past it: copies never grow a filter.
void CuckooAddCopies(FilterHandle& filter, Args items,
                     std::vector<Status>* statuses);

// CF.ADD's reply for one add's status. RedisBloom's texts for Full:
// "Maximum expansions reached" when `filter` scales and has as many
// sub-filters as it may (its cf-max-expansions, 32), else "Filter is full"
// (a non-scaling filter without room, or the most copies of one item).
void ReplyCuckooAdd(CommandContext& ctx, const FilterHandle& filter,
                    const Status& status);

}  // namespace shardfilter::commands

#endif  // SHARDFILTER_TOOLS_COMMANDS_FILTER_ACCESS_H_
