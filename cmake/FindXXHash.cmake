# Finds xxHash (Debian: libxxhash-dev) and defines XXHash::XXHash.
# Uses pkg-config when present, else a plain header/library search.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_XXHASH QUIET libxxhash)
endif()
find_path(XXHASH_INCLUDE_DIR xxhash.h HINTS ${PC_XXHASH_INCLUDE_DIRS})
find_library(XXHASH_LIBRARY NAMES xxhash HINTS ${PC_XXHASH_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(XXHash
  REQUIRED_VARS XXHASH_INCLUDE_DIR XXHASH_LIBRARY
  VERSION_VAR PC_XXHASH_VERSION)
if(XXHash_FOUND AND NOT TARGET XXHash::XXHash)
  add_library(XXHash::XXHash UNKNOWN IMPORTED)
  set_target_properties(XXHash::XXHash PROPERTIES
    IMPORTED_LOCATION "${XXHASH_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${XXHASH_INCLUDE_DIR}")
endif()
mark_as_advanced(XXHASH_INCLUDE_DIR XXHASH_LIBRARY)
