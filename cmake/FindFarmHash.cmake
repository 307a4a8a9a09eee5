# FindFarmHash: Google's FarmHash, whose Fingerprint64 is TensorFlow's string fingerprint
# (Debian: libfarmhash-dev).
#
# Sets FarmHash_FOUND, FarmHash_INCLUDE_DIR, FarmHash_LIBRARY, and defines the imported target
# FarmHash::FarmHash. FarmHash has no version macro; farmhash.h must declare Fingerprint64.

find_path(FarmHash_INCLUDE_DIR farmhash.h)
find_library(FarmHash_LIBRARY NAMES farmhash)

if(FarmHash_INCLUDE_DIR AND EXISTS "${FarmHash_INCLUDE_DIR}/farmhash.h")
  file(STRINGS "${FarmHash_INCLUDE_DIR}/farmhash.h" _farmhash_fingerprint REGEX "uint64_t Fingerprint64\\(")
  if(NOT _farmhash_fingerprint)
    set(FarmHash_INCLUDE_DIR FarmHash_INCLUDE_DIR-NOTFOUND CACHE PATH "" FORCE)
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(FarmHash
  REQUIRED_VARS FarmHash_LIBRARY FarmHash_INCLUDE_DIR
  REASON_FAILURE_MESSAGE "install Debian's libfarmhash-dev (make deps does)")
mark_as_advanced(FarmHash_INCLUDE_DIR FarmHash_LIBRARY)

if(FarmHash_FOUND AND NOT TARGET FarmHash::FarmHash)
  add_library(FarmHash::FarmHash UNKNOWN IMPORTED)
  set_target_properties(FarmHash::FarmHash PROPERTIES
    IMPORTED_LOCATION "${FarmHash_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${FarmHash_INCLUDE_DIR}")
endif()
