# Helpers shared by every folder: one library target per folder, warnings, tests, sanitizers.

include(EstSanitizers)

# est_warnings(<target>): the project's warning set, private to the target; errors with
# EST_WARNINGS_AS_ERRORS (the presets of `make demo`, `make test` and CI turn it on).
function(est_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(EST_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# est_add_library(<folder> SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# Creates est_<folder>, exported and aliased as TorchEstimator::<folder>.
function(est_add_library folder)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  set(target est_${folder})
  add_library(${target} ${ARG_SOURCES})
  add_library(TorchEstimator::${folder} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${folder} OUTPUT_NAME torch_estimator_${folder})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:include/torch_estimator>)
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  est_warnings(${target})
  set_property(GLOBAL APPEND PROPERTY EST_LIBRARY_TARGETS ${target})
endfunction()

# est_public_headers(<header>...): marks headers of the calling folder (paths relative to it)
# as the public API: what a user's model_fn, input_fn and main, and a strategy or collective
# author, include. Only these are installed; every other header is internal.
function(est_public_headers)
  foreach(header ${ARGN})
    get_filename_component(absolute ${header} ABSOLUTE)
    file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR} ${absolute})
    if(NOT EXISTS ${absolute})
      message(FATAL_ERROR "est_public_headers: ${relative} does not exist")
    endif()
    set_property(GLOBAL APPEND PROPERTY EST_PUBLIC_HEADERS ${relative})
  endforeach()
endfunction()

# est_protobuf(<target> <proto>...): generates C++ for the protos (paths relative to the
# calling folder) into the build tree and adds it to <target>, which must be defined in the
# calling folder (CMake attaches custom commands to targets of their own folder only).
# Generated files mirror the source tree ("checkpoint/manifest.pb.h"), and protos import
# each other by their path from the project root, as C++ includes do.
function(est_protobuf target)
  set(protos)
  foreach(proto ${ARGN})
    get_filename_component(absolute ${proto} ABSOLUTE)
    list(APPEND protos ${absolute})
  endforeach()
  # protobuf_generate takes protoc's import root and the output layout from this variable.
  set(CMAKE_CURRENT_SOURCE_DIR ${PROJECT_SOURCE_DIR})
  protobuf_generate(TARGET ${target} LANGUAGE cpp
    PROTOS ${protos}
    PROTOC_OUT_DIR ${PROJECT_BINARY_DIR}/include
    OUT_VAR generated)
  # Each generated file defines the same file-local names (schemas, file_default_instances).
  set_source_files_properties(${generated} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  est_uninstrumented_sources(${generated})
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf)
endfunction()

# est_grpc(<target> <proto>): generates the gRPC service stubs of <proto> (beside its messages
# from est_protobuf) into the build tree and adds them to <target>.
function(est_grpc target proto)
  get_filename_component(absolute ${proto} ABSOLUTE)
  set(CMAKE_CURRENT_SOURCE_DIR ${PROJECT_SOURCE_DIR})
  protobuf_generate(TARGET ${target} LANGUAGE grpc
    PROTOS ${absolute}
    PROTOC_OUT_DIR ${PROJECT_BINARY_DIR}/include
    GENERATE_EXTENSIONS .grpc.pb.h .grpc.pb.cc
    PLUGIN "protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>"
    OUT_VAR generated)
  set_source_files_properties(${generated} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  est_uninstrumented_sources(${generated})
  target_link_libraries(${target} PUBLIC gRPC::grpc++)
endfunction()

# est_discover_test_cases(<target> <specs> <isolated stems> <properties>): once <target> links,
# one run of it lists the test cases of <specs> (Catch2 test specs, OR-ed) and gives each a
# CTest test of its own (cmake/EstDiscoverTests.cmake); those of files other than the
# isolated ones run one at a time per file.
set(EST_DISCOVER_TESTS_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/EstDiscoverTests.cmake)
function(est_discover_test_cases target specs isolated_stems properties)
  string(REPLACE ";" "," spec "${specs}")
  set(tests_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_cases.cmake)
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_cases_include.cmake)
  # The listing needs no leak check; under the sanitizers, the tests' own runtime options.
  set(environment)
  if(EST_SANITIZE)
    set(environment ${CMAKE_COMMAND} -E env "${EST_SANITIZER_ENVIRONMENT}:detect_leaks=0")
  endif()
  add_custom_command(TARGET ${target} POST_BUILD
    BYPRODUCTS ${tests_file}
    COMMAND ${environment} ${CMAKE_COMMAND}
      -D "TEST_TARGET=${target}"
      -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>"
      -D "TEST_WORKING_DIR=${PROJECT_BINARY_DIR}"
      -D "TEST_SPEC=${spec}"
      -D "ISOLATED_STEMS=${isolated_stems}"
      -D "TEST_PROPERTIES=${properties}"
      -D "CTEST_FILE=${tests_file}"
      -P ${EST_DISCOVER_TESTS_SCRIPT}
    VERBATIM)
  file(WRITE ${include_file}
    "if(EXISTS \"${tests_file}\")\n"
    "  include(\"${tests_file}\")\n"
    "else()\n"
    "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()

# est_add_test(<name> SOURCES ... DEPS ... [LABELS ...] [ISOLATED ...]): a Catch2 test
# executable, registered with CTest file by file: <name>/<file stem> runs the test cases of
# that source file in one process (Catch2's tags of file names, --filenames-as-tags). A test
# process spends about a second starting LibTorch (two under AddressSanitizer): paid per file,
# not per test case. The files listed in ISOLATED (also in SOURCES) change what a process
# holds (resource limits, signal handlers, the allocator, CPU affinity): each of their test
# cases runs in a process of its own, as a CTest test named after it; so does each case tagged
# [skippable] or [cuda], which CTest reports as Skipped where it cannot run (tests/skip.h).
function(est_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS;ISOLATED" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE est_test_main ${ARG_DEPS})
  if(ARG_DEPS MATCHES "TorchEstimator::(data|checkpoint|distribute|estimator|serving)")
    # Batched into one unit (the unity build), a file that includes LibTorch after another
    # included Catch2 would see glog's one-argument CHECK instead of Catch2's: glog first.
    set_target_properties(${name} PROPERTIES UNITY_BUILD_CODE_BEFORE_INCLUDE "#include <c10/util/Logging.h>")
  endif()
  est_warnings(${name})
  est_sanitizer_test_options(${name})
  est_sanitizer_test_pch(${name} ${ARG_DEPS})
  set(properties TIMEOUT 600)
  if(ARG_LABELS)
    list(APPEND properties LABELS "${ARG_LABELS}")
  endif()
  if(EST_SANITIZE)
    list(APPEND properties ENVIRONMENT "${EST_SANITIZER_ENVIRONMENT}")
    # The folder's other tests (plain add_test) get the options once the folder is read.
    get_property(scheduled DIRECTORY PROPERTY EST_SANITIZER_ENVIRONMENT_SCHEDULED)
    if(NOT scheduled)
      set_property(DIRECTORY PROPERTY EST_SANITIZER_ENVIRONMENT_SCHEDULED TRUE)
      cmake_language(DEFER CALL est_sanitizer_test_environment)
    endif()
  endif()
  # "-w NoTests": a test that matches no test case fails instead of passing without running
  # anything. A test case that may not run here is tagged [skippable] (or [cuda]) and prints
  # EST_SKIP_MARKER when it skips (tests/skip.h): it gets a CTest entry of its own, which
  # CTest reports as Skipped, while the file's other cases run together.
  set(skipped_properties ${properties} SKIP_REGULAR_EXPRESSION "est-test-skipped: ")
  set(own_cases)  # the Catch2 test specs of the cases that get a CTest test of their own
  set(isolated_stems)
  foreach(source ${ARG_SOURCES})
    get_filename_component(stem ${source} NAME_WE)
    file(READ ${CMAKE_CURRENT_SOURCE_DIR}/${source} text)
    string(REGEX MATCHALL "TEST_CASE\\(" cases "${text}")
    string(REGEX MATCHALL "\"(\\[[^]\"]+\\])*\\[(skippable|cuda)\\](\\[[^]\"]+\\])*\"" skippable "${text}")
    list(LENGTH cases case_count)
    list(LENGTH skippable skippable_count)
    if(source IN_LIST ARG_ISOLATED)
      list(APPEND own_cases "[#${stem}]")
      list(APPEND isolated_stems ${stem})
      continue()
    endif()
    if(skippable_count GREATER 0)
      list(APPEND own_cases "[#${stem}][skippable]" "[#${stem}][cuda]")
    endif()
    if(case_count GREATER skippable_count)
      add_test(NAME ${name}/${stem} COMMAND ${name} --filenames-as-tags "[#${stem}]~[skippable]~[cuda]" -w NoTests
        WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
      set_tests_properties(${name}/${stem} PROPERTIES ${properties})
    endif()
  endforeach()
  if(own_cases)
    est_discover_test_cases(${name} "${own_cases}" "${isolated_stems}" "${skipped_properties}")
  endif()
  foreach(source ${ARG_ISOLATED})
    if(NOT source IN_LIST ARG_SOURCES)
      message(FATAL_ERROR "est_add_test(${name}): ISOLATED ${source} is not one of its SOURCES")
    endif()
  endforeach()
endfunction()
