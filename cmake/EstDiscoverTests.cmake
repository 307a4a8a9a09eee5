# Script mode (cmake -P), run after a test executable links (est_add_test): lists, in one run
# of TEST_EXECUTABLE, the Catch2 test cases that get a CTest test of their own, and writes
# CTEST_FILE, which adds them. One run per executable, whatever its number of files (Catch2's
# own catch_discover_tests runs the executable twice per file; under AddressSanitizer each run
# costs about a second of starting LibTorch).
#   TEST_SPEC        the Catch2 test spec of those cases (filenames as tags)
#   ISOLATED_STEMS   the files whose every case runs alone; the other files' cases (the
#                    [skippable] and [cuda] ones) run one at a time per file (RESOURCE_LOCK
#                    TEST_TARGET/stem), as they would in the file's one process
#   TEST_PROPERTIES  properties of every test
#   TEST_EXECUTABLE, TEST_TARGET, TEST_WORKING_DIR, CTEST_FILE
cmake_minimum_required(VERSION 3.25)

execute_process(
  COMMAND "${TEST_EXECUTABLE}" --filenames-as-tags --list-test-names-only -v high "${TEST_SPEC}"
  OUTPUT_VARIABLE listing
  ERROR_VARIABLE errors
  RESULT_VARIABLE result
  WORKING_DIRECTORY "${TEST_WORKING_DIR}")
# Catch2 exits with the number of cases listed.
if(NOT result MATCHES "^[0-9]+$" OR result EQUAL 0)
  message(FATAL_ERROR "listing the test cases of ${TEST_EXECUTABLE} (${TEST_SPEC}) gave ${result}, no case:\n"
                      "${listing}${errors}")
endif()

# A bracket argument, which holds any text but its own closing bracket.
function(est_quoted text out)
  set(${out} "[==[${text}]==]" PARENT_SCOPE)
endfunction()

# The properties of every test, then a file's resource lock.
set(common_properties "")
foreach(property IN LISTS TEST_PROPERTIES)
  est_quoted("${property}" quoted)
  string(APPEND common_properties " ${quoted}")
endforeach()

set(script "")
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
foreach(line IN LISTS lines)
  # "<name>\t@<file>:<line>" (the location is what -v high adds).
  if(NOT line MATCHES "^(.+)\t@(.+):[0-9]+$")
    continue()
  endif()
  set(name "${CMAKE_MATCH_1}")
  get_filename_component(stem "${CMAKE_MATCH_2}" NAME_WE)
  # Catch2 takes ',', '[' and ']' in a name on its command line escaped.
  set(spec "${name}")
  foreach(char , [ ])
    string(REPLACE "${char}" "\\${char}" spec "${spec}")
  endforeach()
  est_quoted("${name}" quoted_name)
  est_quoted("${spec}" quoted_spec)
  set(properties "${common_properties}")
  if(NOT stem IN_LIST ISOLATED_STEMS)
    string(APPEND properties " RESOURCE_LOCK ${TEST_TARGET}/${stem}")
  endif()
  string(APPEND script "add_test(${quoted_name} \"${TEST_EXECUTABLE}\" ${quoted_spec} -w NoTests)\n"
                       "set_tests_properties(${quoted_name} PROPERTIES WORKING_DIRECTORY \"${TEST_WORKING_DIR}\""
                       "${properties})\n")
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
