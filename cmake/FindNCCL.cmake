# FindNCCL: NVIDIA's collective communication library.
#
# Looks, in this order, in
#   1. NCCL_ROOT (a CMake variable or an environment variable): <root>/include, <root>/lib;
#   2. the nvidia-nccl-cu* pip package of the Python interpreter Python3_EXECUTABLE (default
#      python3), when it imports `nvidia.nccl`;
#   3. the CUDA toolkit found by find_package(CUDAToolkit), when it was called first;
#   4. the system's paths.
#
# Sets NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_VERSION (read from nccl.h's
# NCCL_MAJOR/NCCL_MINOR/NCCL_PATCH), and defines the imported target NCCL::NCCL.
# find_package(NCCL 2.14) checks the version.

set(NCCL_ROOT "$ENV{NCCL_ROOT}" CACHE PATH "Prefix of an NCCL installation (include/nccl.h, lib/libnccl.so)")

set(_nccl_hints)
set(_nccl_only_hints)
if(NCCL_ROOT)
  # An explicit root is the only place looked at: a wrong one is not covered up by another copy.
  list(APPEND _nccl_hints ${NCCL_ROOT})
  set(_nccl_only_hints NO_DEFAULT_PATH)
elseif(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
  # The pip package (nvidia-nccl-cu12, -cu13) keeps include/ and lib/ inside the module.
  set(_nccl_python python3)
  if(Python3_EXECUTABLE)
    set(_nccl_python ${Python3_EXECUTABLE})
  endif()
  execute_process(
    COMMAND ${_nccl_python} -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))"
    OUTPUT_VARIABLE _nccl_pip_dir OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _nccl_pip_result ERROR_QUIET TIMEOUT 30)
  if(_nccl_pip_result EQUAL 0 AND IS_DIRECTORY "${_nccl_pip_dir}")
    list(APPEND _nccl_hints ${_nccl_pip_dir})
  endif()
endif()
if(CUDAToolkit_FOUND AND NOT NCCL_ROOT)
  list(APPEND _nccl_hints ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_DIR})
endif()

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include ${_nccl_only_hints})
# The pip package ships libnccl.so.2 only, without the development link.
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64 ${_nccl_only_hints})

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${_part} +([0-9]+)" _match "${_nccl_version_lines}")
    set(_nccl_${_part} ${CMAKE_MATCH_1})
  endforeach()
  if(NOT _nccl_MAJOR STREQUAL "")
    set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL
  REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
  VERSION_VAR NCCL_VERSION)
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)

if(NCCL_FOUND AND NOT TARGET NCCL::NCCL)
  add_library(NCCL::NCCL UNKNOWN IMPORTED)
  set_target_properties(NCCL::NCCL PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
unset(_nccl_hints)
unset(_nccl_only_hints)
