# Sanitizer builds: EST_SANITIZE="address,undefined" instruments every target the project
# defines, and EST_FUZZ adds the libFuzzer harnesses of tests/fuzz/ (clang only).

set(EST_SANITIZE "" CACHE STRING "Sanitizers for every target, as -fsanitize= takes them (e.g. address,undefined)")
option(EST_FUZZ "Build the libFuzzer harnesses in tests/fuzz/ (clang, with EST_SANITIZE)" OFF)

if(EST_SANITIZE AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "EST_SANITIZE needs clang (e.g. -DCMAKE_CXX_COMPILER=clang++-14, or the sanitize preset)")
endif()
if(EST_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "EST_FUZZ needs clang, whose libFuzzer the harnesses link")
endif()

# The runtime options of every test of a sanitizer build, set as CTest's ENVIRONMENT (the
# programs a test starts inherit them). One variable: ASan's common flags also govern
# UBSan's reports in a combined build.
# - abort_on_error=1: a finding (ASan's, or UBSan's, which -fno-sanitize-recover makes
#   fatal) ends the process with SIGABRT, never with exit status 1, which tests that
#   expect a program to fail with an error could mistake for the error they expect.
set(EST_SANITIZER_ENVIRONMENT "ASAN_OPTIONS=abort_on_error=1")

# est_sanitize(<target>): compiles and links <target> with EST_SANITIZE; a finding of
# UndefinedBehaviorSanitizer aborts (-fno-sanitize-recover=all) instead of printing a line.
# With EST_FUZZ the code also carries libFuzzer's coverage instrumentation, so that the
# harnesses see the branches of the readers they drive.
function(est_sanitize target)
  if(NOT EST_SANITIZE)
    return()
  endif()
  set(flags -fsanitize=${EST_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_compile_options(${target} PRIVATE ${flags})
  if(EST_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
  get_target_property(type ${target} TYPE)
  if(type MATCHES "EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY")
    target_link_options(${target} PRIVATE ${flags})
  endif()
endfunction()

# est_uninstrumented_sources(<file>...): in a sanitizer build, compiles these files of a
# sanitized target without the sanitizers and the fuzzers' coverage: the C++ that protoc and
# gRPC's plugin generate, whose parsing and serialization protobuf and gRPC fuzz upstream. Our
# code that calls it stays instrumented (a bad access of ours into a message is still caught),
# and the generated files compile in about a third of the time.
function(est_uninstrumented_sources)
  if(EST_SANITIZE)
    set_property(SOURCE ${ARGN} APPEND PROPERTY COMPILE_OPTIONS -fno-sanitize=all)
  endif()
endfunction()

# est_sanitizer_test_options(<target>): in a sanitizer build, how a test program's own code
# compiles: at -O0 (it mostly calls the library, instrumented at the build's -O1, and
# LibTorch; under the sanitizers it compiles in about half the time) and with -pthread (some
# of the tests' libraries bring it, not all). The shared precompiled header (est_test_pch)
# is compiled the same way: clang takes no header made with another -O level or -pthread.
function(est_sanitizer_test_options target)
  if(EST_SANITIZE)
    target_compile_options(${target} PRIVATE -O0 -pthread)
  endif()
endfunction()

# est_sanitizer_test_pch(<target> <deps>...): in a sanitizer build, a test executable that
# uses LibTorch (through one of the project's libraries) includes the precompiled header of
# LibTorch's and Catch2's headers that every such test shares (est_test_pch,
# tests/CMakeLists.txt): clang spends about half of each test file's compile time parsing
# them, and the sanitizer tree, unlike the gcc tree, shares no compiler cache across
# worktrees. Clang takes a header precompiled with other -D and -I flags, not with other -f
# ones (every target of the tree gets the same sanitizer flags), nor another -O level or
# -pthread setting (est_sanitizer_test_options gives every test and the header the same).
function(est_sanitizer_test_pch target)
  if(EST_SANITIZE AND ARGN MATCHES "TorchEstimator::(data|checkpoint|distribute|estimator|serving)")
    target_precompile_headers(${target} REUSE_FROM est_test_pch)
  endif()
endfunction()

# est_sanitize_all(<dir>): applies est_sanitize to every compiled target defined in <dir>
# and below, but those whose property EST_UNINSTRUMENTED is true; the top-level
# CMakeLists.txt calls it once, after every folder is added.
function(est_sanitize_all dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    get_target_property(uninstrumented ${target} EST_UNINSTRUMENTED)
    if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$" AND NOT uninstrumented)
      est_sanitize(${target})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir ${subdirs})
    est_sanitize_all(${subdir})
  endforeach()
endfunction()

# est_sanitizer_test_environment(): gives every test defined so far in the calling folder
# the sanitizer runtime options (CMake 3.25 sets test properties only in a test's own
# folder; est_add_test schedules this call for the end of its folder).
function(est_sanitizer_test_environment)
  get_property(tests DIRECTORY PROPERTY TESTS)
  if(EST_SANITIZE AND tests)
    set_property(TEST ${tests} APPEND PROPERTY ENVIRONMENT ${EST_SANITIZER_ENVIRONMENT})
  endif()
endfunction()

# est_add_fuzzer(<name> SOURCES ... DEPS ... MAX_LEN <bytes> [DICT <file>]): a libFuzzer harness
# (-fsanitize=fuzzer on top of EST_SANITIZE) whose seed corpus is
# tests/fuzz/corpus/<name>/, with two CTest tests:
# - fuzz_<name>_corpus replays every corpus file once (part of the sanitizer suite);
# - fuzz_<name> (label "fuzzing") mutates the corpus for EST_FUZZ_SECONDS, writing new
#   inputs and any crashing input into <build>/fuzz/<name>/, never into the repository.
# Both fail on a crash, a sanitizer report, a leak of an input's memory, a single
# allocation over 512 MB (-malloc_limit_mb) or a resident size over 2 GB (-rss_limit_mb).
set(EST_FUZZ_SECONDS 25 CACHE STRING "Seconds each fuzz_<name> test mutates its corpus")
function(est_add_fuzzer name)
  cmake_parse_arguments(ARG "" "MAX_LEN;DICT" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  est_warnings(${name})
  set(corpus ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${name})
  set(work ${PROJECT_BINARY_DIR}/fuzz/${name})
  file(MAKE_DIRECTORY ${work}/corpus)
  set(limits -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=${ARG_MAX_LEN})
  if(ARG_DICT)
    list(APPEND limits -dict=${ARG_DICT})
  endif()
  add_test(NAME fuzz_${name}_corpus COMMAND ${name} ${limits} -runs=0 ${corpus})
  add_test(NAME fuzz_${name}
    COMMAND ${name} ${limits} -max_total_time=${EST_FUZZ_SECONDS} -print_final_stats=1
            -artifact_prefix=${work}/ ${work}/corpus ${corpus})
  set_tests_properties(fuzz_${name}_corpus PROPERTIES LABELS fuzz TIMEOUT 300)
  math(EXPR timeout "${EST_FUZZ_SECONDS} + 120")
  set_tests_properties(fuzz_${name} PROPERTIES LABELS fuzzing TIMEOUT ${timeout})
endfunction()
