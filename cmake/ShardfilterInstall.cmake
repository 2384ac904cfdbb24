# Install rules, the exported CMake package, pkg-config files and the Debian
# package (cmake/ShardfilterPackage.cmake). Included by the top-level
# CMakeLists.txt when SHARDFILTER_INSTALL is ON.
#
# What a user sees (docs/design.md "Public and internal"):
#   include/shardfilter/filters/*.h          the in-memory filters (API)
#   include/shardfilter/filters/detail/*.h   what the filter headers' inline
#                                            paths include (not API)
#   include/shardfilter/engine/*.h           sharded filters, Database, ...
#   include/shardfilter/engine/detail/*.h    what sharded_filter.h's inline
#                                            query and add include (not API)
# Not installed: persistence/ (internal to the library), */internal/,
# the tools' headers. tests/install/run.sh compiles every installed header on
# its own against the prefix alone.
include(CMakePackageConfigHelpers)

if(SHARDFILTER_NATIVE)
  # Inline functions of the installed headers are compiled into the library
  # too; built for this CPU, the linker could keep that copy in a user's
  # program and run it on another machine (SIGILL). Refuse, clearly.
  install(CODE "message(FATAL_ERROR \"shardfilter: this tree is built with \
SHARDFILTER_NATIVE=ON (-march=native); installed libraries must be portable. \
Reconfigure with -DSHARDFILTER_NATIVE=OFF to install or package.\")")
endif()

set(SF_PUBLIC_HEADERS_filters
  filters/bloom_filter.h filters/counting_bloom_filter.h
  filters/cuckoo_filter.h filters/envelope.h filters/filter.h filters/hash.h
  filters/memory_advice.h filters/sizing.h filters/status.h)
# filters/detail/: what bloom_filter.h, counting_bloom_filter.h and
# cuckoo_filter.h include for their inline query paths (not API).
set(SF_PUBLIC_HEADERS_filters_detail
  filters/detail/atomic_table.h filters/detail/bloom_kernels.h
  filters/detail/counting_simd.h
  filters/detail/cuckoo_stripes.h filters/detail/cuckoo_table.h
  filters/detail/prefetch.h filters/detail/spin.h
  filters/detail/split_block.h filters/detail/thread_stripe.h
  filters/detail/tsan.h filters/detail/xxh3_short.h)
set(SF_PUBLIC_HEADERS_engine
  engine/database.h engine/dedup_store.h engine/export.h
  engine/memory_budget.h engine/migration.h engine/multi_part.h
  engine/sharded_filter.h
  engine/tiered_filter.h)
# Included by sharded_filter.h for its inline query and Bloom add paths.
set(SF_PUBLIC_HEADERS_engine_detail engine/detail/shard_fast_path.h
  engine/detail/shard_mutex.h)
foreach(group filters filters_detail engine engine_detail)
  string(REPLACE "_" "/" dir ${group})
  install(FILES ${SF_PUBLIC_HEADERS_${group}}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shardfilter/${dir}
          COMPONENT dev)
endforeach()

set(SF_INSTALL_TARGETS shardfilter_filters_static shardfilter_static)
if(SHARDFILTER_BUILD_SHARED)
  list(APPEND SF_INSTALL_TARGETS shardfilter_filters_shared shardfilter_shared)
endif()
install(TARGETS ${SF_INSTALL_TARGETS} EXPORT shardfilterTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib
          NAMELINK_COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT lib
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(SF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/shardfilter)
install(EXPORT shardfilterTargets NAMESPACE shardfilter::
        DESTINATION ${SF_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/shardfilterConfig.cmake.in
  ${PROJECT_BINARY_DIR}/shardfilterConfig.cmake
  INSTALL_DESTINATION ${SF_CMAKE_DIR})
# 0.x: a minor release may change the ABI, so only the same minor matches.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/shardfilterConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/shardfilterConfig.cmake
              ${PROJECT_BINARY_DIR}/shardfilterConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindXXHash.cmake
        DESTINATION ${SF_CMAKE_DIR} COMPONENT dev)

# pkg-config: shardfilter (the engine) and shardfilter-filters.
foreach(pc shardfilter shardfilter-filters)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in
                 ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endforeach()

# Programs. The CLI and the server link the static libraries.
if(TARGET shardfilter)
  install(TARGETS shardfilter RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          COMPONENT bin)
endif()
if(TARGET shardfilter-server)
  install(TARGETS shardfilter-server
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT bin)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/shardfilter-server.service
          DESTINATION lib/systemd/system COMPONENT bin)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/server.conf
          DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/shardfilter
          COMPONENT bin)
endif()
# The Redis module (shardfilter.so), whatever its target is called.
foreach(module shardfilter-module shardfilter_module)
  if(TARGET ${module})
    # Redis 7 refuses to load a module without execute permission.
    install(TARGETS ${module} LIBRARY DESTINATION lib/redis/modules
            PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
                        GROUP_EXECUTE WORLD_READ WORLD_EXECUTE
            COMPONENT bin)
    break()
  endif()
endforeach()

include(ShardfilterPackage)
