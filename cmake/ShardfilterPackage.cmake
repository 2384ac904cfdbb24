# The Debian package: shardfilter_<version>_amd64.deb, one package holding
# the libraries, headers, CMake and pkg-config files, the CLI and, when
# those targets are built, the server (systemd unit, config, its own user)
# and the Redis module. Build it from a portable tree installed under /usr:
#   cmake -S . -B build-pkg -G Ninja -DCMAKE_BUILD_TYPE=Release \
#     -DSHARDFILTER_NATIVE=OFF -DCMAKE_INSTALL_PREFIX=/usr \
#     -DSHARDFILTER_BUILD_TESTS=OFF -DSHARDFILTER_BUILD_BENCHMARKS=OFF
#   ninja -C build-pkg && (cd build-pkg && cpack -G DEB)
# (tests/package/run.sh does exactly that, then installs and exercises it.)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME shardfilter)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "shardfilter")
set(CPACK_PACKAGE_CONTACT "shardfilter maintainers <shardfilter@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "persistent, sharded, concurrent Bloom and cuckoo filters over RocksDB")
set(CPACK_PACKAGE_DESCRIPTION
    "Library (shared and static, headers, CMake and pkg-config files), the \
shardfilter command-line tool and, when built, shardfilter-server (RedisBloom \
commands over RESP) and the Redis module.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# /etc/shardfilter/server.conf is installed by absolute path.
set(CPACK_SET_DESTDIR ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # shardfilter_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Run-time libraries from the binaries' ELF dependencies (dpkg-shlibdeps),
# plus what the maintainer scripts use.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
# What find_package(shardfilter) / pkg-config need to build against it.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "librocksdb-dev, libtbb-dev, libxxhash-dev, pkg-config")

if(TARGET shardfilter-server)
  set(SF_PKG_HAVE_SERVER 1)
else()
  set(SF_PKG_HAVE_SERVER 0)
endif()
set(SF_PKG_CONTROL ${PROJECT_BINARY_DIR}/debian-control)
file(MAKE_DIRECTORY ${SF_PKG_CONTROL})
foreach(script postinst prerm postrm)
  configure_file(${PROJECT_SOURCE_DIR}/packaging/${script}.in
                 ${SF_PKG_CONTROL}/${script} @ONLY
                 FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
                 GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  list(APPEND CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${SF_PKG_CONTROL}/${script})
endforeach()
if(SF_PKG_HAVE_SERVER)
  # The config survives upgrades and local edits (dpkg conffile).
  file(WRITE ${SF_PKG_CONTROL}/conffiles "/etc/shardfilter/server.conf\n")
  list(APPEND CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${SF_PKG_CONTROL}/conffiles)
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
