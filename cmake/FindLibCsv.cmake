# FindLibCsv: libcsv, Robert Gamble's streaming RFC 4180 CSV parser in C (Debian: libcsv-dev).
#
# Sets LibCsv_FOUND, LibCsv_INCLUDE_DIR, LibCsv_LIBRARY, LibCsv_VERSION (read from csv.h's
# CSV_MAJOR/CSV_MINOR/CSV_RELEASE), and defines the imported target LibCsv::LibCsv.
# find_package(LibCsv 3) checks the version. Other libraries install a csv.h too: only one
# that defines libcsv's CSV_MAJOR is taken.

find_path(LibCsv_INCLUDE_DIR csv.h)
find_library(LibCsv_LIBRARY NAMES csv)

if(LibCsv_INCLUDE_DIR AND EXISTS "${LibCsv_INCLUDE_DIR}/csv.h")
  file(STRINGS "${LibCsv_INCLUDE_DIR}/csv.h" _libcsv_version_lines REGEX "^#define CSV_(MAJOR|MINOR|RELEASE) +[0-9]+")
  foreach(_part MAJOR MINOR RELEASE)
    string(REGEX MATCH "CSV_${_part} +([0-9]+)" _match "${_libcsv_version_lines}")
    set(_libcsv_${_part} ${CMAKE_MATCH_1})
  endforeach()
  if(NOT _libcsv_MAJOR STREQUAL "")
    set(LibCsv_VERSION "${_libcsv_MAJOR}.${_libcsv_MINOR}.${_libcsv_RELEASE}")
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibCsv
  REQUIRED_VARS LibCsv_LIBRARY LibCsv_INCLUDE_DIR LibCsv_VERSION
  VERSION_VAR LibCsv_VERSION
  REASON_FAILURE_MESSAGE "install Debian's libcsv-dev (make deps does)")
mark_as_advanced(LibCsv_INCLUDE_DIR LibCsv_LIBRARY)

if(LibCsv_FOUND AND NOT TARGET LibCsv::LibCsv)
  add_library(LibCsv::LibCsv UNKNOWN IMPORTED)
  set_target_properties(LibCsv::LibCsv PROPERTIES
    IMPORTED_LOCATION "${LibCsv_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LibCsv_INCLUDE_DIR}")
endif()
