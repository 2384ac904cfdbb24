#include "tools/commands/filter_access.h"

#include <string>

#include "tools/commands/util.h"

namespace shardfilter::commands {

TypedLookup LookupTyped(CommandContext& ctx, std::string_view key,
                        FilterType type) {
  TypedLookup r;
  if (key.empty() || key.size() > ctx.keyspace.MaxKeyBytes()) return r;
  auto found = ctx.keyspace.Lookup(key);
  if (!found.ok()) {
    r.wrong_type = found.status().code() == StatusCode::kWrongType;
    return r;
  }
  if ((*found)->type() != type) {
    r.wrong_type = true;
    return r;
  }
  r.handle = std::move(found).value();
  return r;
}

void ReplyCreateError(CommandContext& ctx, const Status& status,
                      std::string_view generic) {
  if (status.code() == StatusCode::kResourceExhausted) {
    return ctx.out.Error(kOomError);
  }
  if (status.code() == StatusCode::kTooLarge) {
    return ctx.out.Error("ERR Insufficient memory to create filter");
  }
  if (status.code() == StatusCode::kAlreadyExists) {
    return ctx.out.Error(kItemExistsError);
  }
  ctx.out.Error(std::string(generic) + ": " + status.message());
}

std::shared_ptr<FilterHandle> CreateOrReplyError(CommandContext& ctx,
                                                 std::string_view key,
                                                 const CreateParams& params,
                                                 std::string_view generic) {
  auto created = ctx.keyspace.Create(key, params);
  if (created.ok()) return std::move(created).value();
  if (created.status().code() == StatusCode::kAlreadyExists) {
    // Another connection created it between our lookup and create.
    TypedLookup again = LookupTyped(ctx, key, params.type);
    if (again.handle != nullptr) return again.handle;
    if (again.wrong_type) {
      ctx.out.Error(kWrongTypeError);
      return nullptr;
    }
  }
  ReplyCreateError(ctx, created.status(), generic);
  return nullptr;
}

}  // namespace shardfilter::commands
