# FindMicroHttpd: GNU libmicrohttpd, the HTTP server library of est-serve's REST APIs
# (Debian: libmicrohttpd-dev). Sets MicroHttpd_FOUND, MicroHttpd_INCLUDE_DIR,
# MicroHttpd_LIBRARY, MicroHttpd_VERSION (read from microhttpd.h's MHD_VERSION, 0xMMmmpp00), and
# defines the imported target MicroHttpd::MicroHttpd. find_package(MicroHttpd 0.9.71) checks the
# version.

find_path(MicroHttpd_INCLUDE_DIR microhttpd.h)
find_library(MicroHttpd_LIBRARY NAMES microhttpd)

if(MicroHttpd_INCLUDE_DIR AND EXISTS "${MicroHttpd_INCLUDE_DIR}/microhttpd.h")
  file(STRINGS "${MicroHttpd_INCLUDE_DIR}/microhttpd.h" _mhd_version_line REGEX "^#define MHD_VERSION +0x[0-9A-Fa-f]+")
  if(_mhd_version_line MATCHES "0x([0-9A-Fa-f][0-9A-Fa-f])([0-9A-Fa-f][0-9A-Fa-f])([0-9A-Fa-f][0-9A-Fa-f])")
    # Each byte is written in hexadecimal digits that read as the decimal part ("0x00097500": 0.9.75).
    math(EXPR _mhd_major "${CMAKE_MATCH_1}")
    math(EXPR _mhd_minor "${CMAKE_MATCH_2}")
    math(EXPR _mhd_patch "${CMAKE_MATCH_3}")
    set(MicroHttpd_VERSION "${_mhd_major}.${_mhd_minor}.${_mhd_patch}")
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MicroHttpd
  REQUIRED_VARS MicroHttpd_LIBRARY MicroHttpd_INCLUDE_DIR MicroHttpd_VERSION
  VERSION_VAR MicroHttpd_VERSION
  REASON_FAILURE_MESSAGE "install Debian's libmicrohttpd-dev (make deps does)")
mark_as_advanced(MicroHttpd_INCLUDE_DIR MicroHttpd_LIBRARY)

if(MicroHttpd_FOUND AND NOT TARGET MicroHttpd::MicroHttpd)
  add_library(MicroHttpd::MicroHttpd UNKNOWN IMPORTED)
  set_target_properties(MicroHttpd::MicroHttpd PROPERTIES
    IMPORTED_LOCATION "${MicroHttpd_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MicroHttpd_INCLUDE_DIR}")
endif()
