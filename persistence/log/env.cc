// The journal component's Env helpers (log/env.h).
#include "shardfilter/persistence/log/env.h"

namespace shardfilter::persistence {

std::string ParentDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace shardfilter::persistence
