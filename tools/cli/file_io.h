// Whole-file reads and atomic whole-file writes for the CLI (export files).
//
// Thread safety: pure functions over the file system; concurrent calls on
// the same path race as the file system makes them.
#ifndef SHARDFILTER_TOOLS_CLI_FILE_IO_H_
#define SHARDFILTER_TOOLS_CLI_FILE_IO_H_

#include <istream>
#include <string>
#include <string_view>

#include "shardfilter/filters/status.h"

namespace shardfilter::tools {

// The whole file ("-": all of `in`). IOError naming the path.
Result<std::string> ReadWholeFile(const std::string& path, std::istream& in);

// Writes `bytes` to PATH.tmp, fsyncs it, renames it over PATH and fsyncs
// the directory: readers see the old file or the whole new one, and the new
// one survives power loss once this returns. On error PATH.tmp is removed
// and PATH is untouched.
Status WriteFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace shardfilter::tools

#endif  // SHARDFILTER_TOOLS_CLI_FILE_IO_H_
