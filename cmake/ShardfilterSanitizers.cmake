# SHARDFILTER_SANITIZE=address -> AddressSanitizer + UndefinedBehaviorSanitizer
# SHARDFILTER_SANITIZE=thread  -> ThreadSanitizer
# Applied to every target of the project (library, tests, tools, benchmarks).
# SHARDFILTER_FUZZ=ON       -> everything built with libFuzzer's coverage
#                              hooks, ASan and UBSan (tests/fuzz/CMakeLists.txt)
if(SHARDFILTER_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SHARDFILTER_FUZZ needs clang (CXX=clang++-14)")
  endif()
  if(NOT SHARDFILTER_SANITIZE STREQUAL "")
    message(FATAL_ERROR "SHARDFILTER_FUZZ brings its own sanitizers: "
                        "leave SHARDFILTER_SANITIZE empty")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                      -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
if(SHARDFILTER_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -g1
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(SHARDFILTER_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -g1)
  add_link_options(-fsanitize=thread)
elseif(NOT SHARDFILTER_SANITIZE STREQUAL "")
  message(FATAL_ERROR "SHARDFILTER_SANITIZE must be empty, address or thread")
endif()
if(NOT SHARDFILTER_SANITIZE STREQUAL "")
  message(STATUS "shardfilter: sanitizer ${SHARDFILTER_SANITIZE}")
endif()
