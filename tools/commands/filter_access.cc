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
    const Status& s = found.status();
    if (s.code() == StatusCode::kWrongType) {
      r.wrong_type = true;
    } else if (!IsAbsent(s)) {
      r.error = s;
    }
    return r;
  }
  if ((*found)->type() != type) {
    r.wrong_type = true;
    return r;
  }
  r.handle = std::move(found).value();
  return r;
}

bool ReplyIfUnreadable(CommandContext& ctx, std::string_view key,
                       const TypedLookup& found) {
  if (found.error.ok()) return false;
  ReplyUnreadable(ctx, key, found.error);
  return true;
}

bool DroppedDuringWrite(std::span<const Status> statuses) {
  for (const Status& s : statuses) {
    if (s.IsNotFound()) return true;
  }
  return false;
}

bool ReplyIfOverMaxmemory(CommandContext& ctx, const Status& s) {
  if (s.code() != StatusCode::kResourceExhausted ||
      !ctx.keyspace.BudgetIsMaxmemory()) {
    return false;
  }
  ctx.out.Error(kOomError);
  return true;
}

void ReplyCreateError(CommandContext& ctx, const Status& status,
                      std::string_view generic) {
  if (ReplyIfOverMaxmemory(ctx, status)) return;
  if (status.code() == StatusCode::kResourceExhausted ||
      status.code() == StatusCode::kTooLarge) {
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
  // Another connection may create the key between our lookup and create,
  // and a third drop it again before we look once more: bounded.
  for (int attempt = 1; attempt <= kMaxWriteAttempts; ++attempt) {
    auto created = ctx.keyspace.Create(key, params);
    if (created.ok()) return std::move(created).value();
    if (created.status().code() != StatusCode::kAlreadyExists) {
      ReplyCreateError(ctx, created.status(), generic);
      return nullptr;
    }
    TypedLookup again = LookupTyped(ctx, key, params.type);
    if (again.handle != nullptr) return again.handle;
    if (again.wrong_type) {
      ctx.out.Error(kWrongTypeError);
      return nullptr;
    }
    if (ReplyIfUnreadable(ctx, key, again)) return nullptr;
  }
  ctx.out.Error(kDroppedDuringWriteError);
  return nullptr;
}

}  // namespace shardfilter::commands
