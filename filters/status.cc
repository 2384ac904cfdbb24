#include "shardfilter/filters/status.h"

namespace shardfilter {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kCorruption:
      return "Corruption";
    case StatusCode::kNotSupported:
      return "NotSupported";
    case StatusCode::kFull:
      return "Full";
    case StatusCode::kIOError:
      return "IOError";
    case StatusCode::kWrongType:
      return "WrongType";
    case StatusCode::kBusy:
      return "Busy";
    case StatusCode::kAborted:
      return "Aborted";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kTooLarge:
      return "TooLarge";
  }
  return "Unknown";
}

const std::string& Status::EmptyMessage() {
  static const std::string* const empty = new std::string();
  return *empty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s = StatusCodeName(rep_->code);
  s += ": ";
  s += rep_->msg;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += rep_->msg;
  return Status(rep_->code, std::move(m));
}

}  // namespace shardfilter
