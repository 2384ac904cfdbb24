// Conversion of rocksdb::Status to shardfilter Status, at the persistence
// boundary. Thread-safe: a pure function.
#ifndef SHARDFILTER_PERSISTENCE_ROCKS_STATUS_H_
#define SHARDFILTER_PERSISTENCE_ROCKS_STATUS_H_

#include <rocksdb/status.h>

#include <string>
#include <string_view>

#include "shardfilter/filters/status.h"

namespace shardfilter::persistence::internal {

// `what` names the operation, e.g. "writing journal of filter \"f\"".
inline Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::OK();
  std::string msg = std::string(what) + ": " + s.ToString();
  if (s.IsNoSpace()) {
    msg +=
        " (the disk is full: free space and retry; nothing acknowledged "
        "was lost)";
  }
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  if (s.IsNotSupported()) return Status::NotSupported(msg);
  if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain()) return Status::Busy(msg);
  if (s.IsAborted()) return Status::Aborted(msg);
  return Status::IOError(msg);
}

}  // namespace shardfilter::persistence::internal

#endif  // SHARDFILTER_PERSISTENCE_ROCKS_STATUS_H_
