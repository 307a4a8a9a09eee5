# CUDA and NCCL options: what the build compiles, decided from what was found.
#
# EST_WITH_CUDA and EST_WITH_NCCL are cache strings AUTO (the default), ON or OFF. AUTO
# turns CUDA on when LibTorch has CUDA, and NCCL on when, in addition, the CUDA toolkit and
# NCCL >= EST_NCCL_MIN_VERSION are found. The NCCL core (distribute/collective/nccl/, no LibTorch) is
# compiled wherever the toolkit and NCCL are found, even when LibTorch has no CUDA, so that
# it cannot rot unnoticed on a machine without a CUDA LibTorch.

set(EST_NCCL_MIN_VERSION 2.14)

# est_resolve_cuda_options(TORCH_CUDA <bool> TORCH_DIR <dir>
#     TOOLKIT_VERSION <version or empty> TOOLKIT_DIR <dir>
#     NCCL_VERSION <version or empty> NCCL_DIR <dir>
#     WITH_CUDA <AUTO|ON|OFF> WITH_NCCL <AUTO|ON|OFF>
#     OUT_WITH_CUDA <var> OUT_WITH_NCCL <var> OUT_NCCL_CORE <var> OUT_SUMMARY <var> OUT_ERROR <var>)
# The decision alone, without finding anything (tests/cmake/cuda_options_test.cmake runs it):
# sets the OUT_ variables to ON/OFF, the one-line summary, and an error message (empty when
# the requests can be met) naming what an explicit ON lacks.
function(est_resolve_cuda_options)
  cmake_parse_arguments(ARG ""
    "TORCH_CUDA;TORCH_DIR;TOOLKIT_VERSION;TOOLKIT_DIR;NCCL_VERSION;NCCL_DIR;WITH_CUDA;WITH_NCCL;OUT_WITH_CUDA;OUT_WITH_NCCL;OUT_NCCL_CORE;OUT_SUMMARY;OUT_ERROR"
    "" ${ARGN})
  set(error "")
  foreach(option WITH_CUDA WITH_NCCL)
    string(TOUPPER "${ARG_${option}}" request)
    if(request STREQUAL "")
      set(request AUTO)
    elseif(request MATCHES "^(1|TRUE|YES|Y)$")
      set(request ON)
    elseif(request MATCHES "^(0|FALSE|NO|N)$")
      set(request OFF)
    elseif(NOT request MATCHES "^(AUTO|ON|OFF)$")
      string(APPEND error "EST_${option}=${ARG_${option}} is not AUTO, ON or OFF. ")
      set(request OFF)
    endif()
    set(${option} ${request})
  endforeach()

  # CUDA device support: LibTorch's own CUDA is all it needs.
  set(with_cuda OFF)
  if(ARG_TORCH_CUDA AND NOT WITH_CUDA STREQUAL "OFF")
    set(with_cuda ON)
  elseif(WITH_CUDA STREQUAL "ON")
    string(APPEND error "EST_WITH_CUDA=ON needs a LibTorch built with CUDA, but the LibTorch found "
      "(${ARG_TORCH_DIR}) has no torch_cuda/c10_cuda library: put a CUDA LibTorch first in "
      "CMAKE_PREFIX_PATH (the libtorch archive's directory, or the output of python3 -c "
      "'import torch; print(torch.utils.cmake_prefix_path)'). ")
  endif()

  # The NCCL core: the CUDA toolkit (runtime and headers) and a recent enough NCCL.
  set(nccl_missing "")
  if("${ARG_TOOLKIT_VERSION}" STREQUAL "")
    set(nccl_missing "no CUDA toolkit")
  elseif("${ARG_NCCL_VERSION}" STREQUAL "")
    set(nccl_missing "no NCCL")
  elseif("${ARG_NCCL_VERSION}" VERSION_LESS EST_NCCL_MIN_VERSION)
    set(nccl_missing "NCCL ${ARG_NCCL_VERSION} is older than ${EST_NCCL_MIN_VERSION}")
  endif()
  set(nccl_core OFF)
  if(nccl_missing STREQUAL "" AND NOT WITH_NCCL STREQUAL "OFF")
    set(nccl_core ON)
  endif()

  # The NCCL collective: the core, and CUDA tensors from LibTorch.
  set(with_nccl OFF)
  if(nccl_core AND with_cuda)
    set(with_nccl ON)
  elseif(WITH_NCCL STREQUAL "ON")
    if(NOT nccl_missing STREQUAL "")
      string(APPEND error "EST_WITH_NCCL=ON needs the CUDA toolkit and NCCL >= ${EST_NCCL_MIN_VERSION}, but "
        "there is ${nccl_missing}: set NCCL_ROOT (or CMAKE_PREFIX_PATH) to an NCCL installation, or "
        "install the nvidia-nccl-cu* pip package, and CUDAToolkit_ROOT to the CUDA toolkit. ")
    endif()
    if(NOT with_cuda)
      string(APPEND error "EST_WITH_NCCL=ON needs CUDA device support (EST_WITH_CUDA), which is off: "
        "it needs a LibTorch built with CUDA. ")
    endif()
  endif()

  # The summary line.
  if(ARG_TORCH_CUDA)
    set(summary "TorchEstimator: CUDA LibTorch yes")
  else()
    set(summary "TorchEstimator: CUDA LibTorch no")
  endif()
  if("${ARG_TOOLKIT_VERSION}" STREQUAL "")
    string(APPEND summary "; CUDA toolkit not found")
  else()
    string(APPEND summary "; CUDA toolkit ${ARG_TOOLKIT_VERSION} at ${ARG_TOOLKIT_DIR}")
  endif()
  if("${ARG_NCCL_VERSION}" STREQUAL "")
    string(APPEND summary "; NCCL not found")
  else()
    string(APPEND summary "; NCCL ${ARG_NCCL_VERSION} at ${ARG_NCCL_DIR}")
  endif()
  if(with_cuda)
    string(APPEND summary "; CUDA devices on")
  else()
    string(APPEND summary "; CUDA devices off")
  endif()
  if(with_nccl)
    string(APPEND summary "; NCCL core compiled, NCCL collective on")
  elseif(nccl_core)
    if(ARG_TORCH_CUDA)
      set(reason "EST_WITH_CUDA=OFF")
    else()
      set(reason "LibTorch has no CUDA")
    endif()
    string(APPEND summary "; NCCL core compiled, NCCL collective off (${reason})")
  elseif(WITH_NCCL STREQUAL "OFF")
    string(APPEND summary "; NCCL off (EST_WITH_NCCL=OFF)")
  else()
    string(APPEND summary "; NCCL off (${nccl_missing})")
  endif()

  string(STRIP "${error}" error)
  set(${ARG_OUT_WITH_CUDA} ${with_cuda} PARENT_SCOPE)
  set(${ARG_OUT_WITH_NCCL} ${with_nccl} PARENT_SCOPE)
  set(${ARG_OUT_NCCL_CORE} ${nccl_core} PARENT_SCOPE)
  set(${ARG_OUT_SUMMARY} "${summary}" PARENT_SCOPE)
  set(${ARG_OUT_ERROR} "${error}" PARENT_SCOPE)
endfunction()

# est_configure_cuda(): finds the CUDA toolkit and NCCL (after find_package(Torch)), decides
# EST_WITH_CUDA / EST_WITH_NCCL (normal variables shadowing the AUTO/ON/OFF cache entries,
# for the config header) and EST_NCCL_CORE, prints the summary, or stops with the error.
macro(est_configure_cuda)
  # Build trees configured before these were AUTO/ON/OFF hold them as BOOL options (OFF).
  foreach(_est_option EST_WITH_CUDA EST_WITH_NCCL)
    get_property(_est_type CACHE ${_est_option} PROPERTY TYPE)
    if(_est_type STREQUAL "BOOL")
      unset(${_est_option} CACHE)
    endif()
  endforeach()
  set(EST_WITH_CUDA AUTO CACHE STRING "CUDA device support: AUTO (when LibTorch has CUDA), ON or OFF")
  set_property(CACHE EST_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)
  set(EST_WITH_NCCL AUTO CACHE STRING
    "NCCL collective: AUTO (when CUDA is on and the CUDA toolkit and NCCL are found), ON or OFF")
  set_property(CACHE EST_WITH_NCCL PROPERTY STRINGS AUTO ON OFF)

  set(_est_torch_cuda OFF)
  if(TARGET torch_cuda OR TARGET c10_cuda OR TORCH_LIBRARIES MATCHES "(torch|c10)_cuda")
    set(_est_torch_cuda ON)
  endif()
  set(_est_toolkit_version "")
  set(_est_nccl_version "")
  if(NOT EST_WITH_NCCL STREQUAL "OFF" OR _est_torch_cuda)
    find_package(CUDAToolkit QUIET)
  endif()
  if(CUDAToolkit_FOUND)
    set(_est_toolkit_version ${CUDAToolkit_VERSION})
    if(NOT EST_WITH_NCCL STREQUAL "OFF")
      find_package(NCCL QUIET)
      if(NCCL_FOUND)
        set(_est_nccl_version ${NCCL_VERSION})
      endif()
    endif()
  endif()
  get_filename_component(_est_nccl_dir "${NCCL_INCLUDE_DIR}" DIRECTORY)
  get_filename_component(_est_toolkit_dir "${CUDAToolkit_BIN_DIR}" DIRECTORY)
  est_resolve_cuda_options(TORCH_CUDA ${_est_torch_cuda} TORCH_DIR "${Torch_DIR}"
    TOOLKIT_VERSION "${_est_toolkit_version}" TOOLKIT_DIR "${_est_toolkit_dir}"
    NCCL_VERSION "${_est_nccl_version}" NCCL_DIR "${_est_nccl_dir}"
    WITH_CUDA "${EST_WITH_CUDA}" WITH_NCCL "${EST_WITH_NCCL}"
    OUT_WITH_CUDA _est_with_cuda OUT_WITH_NCCL _est_with_nccl OUT_NCCL_CORE EST_NCCL_CORE
    OUT_SUMMARY _est_summary OUT_ERROR _est_error)
  if(_est_error)
    message(FATAL_ERROR "${_est_error}\n(${_est_summary})")
  endif()
  message(STATUS "${_est_summary}")
  set(EST_WITH_CUDA ${_est_with_cuda})
  set(EST_WITH_NCCL ${_est_with_nccl})
  # The CUDA driver maps memory where AddressSanitizer's shadow gap is: unprotected, CUDA works.
  if(EST_SANITIZE AND (EST_WITH_CUDA OR EST_NCCL_CORE))
    string(APPEND EST_SANITIZER_ENVIRONMENT ":protect_shadow_gap=0")
  endif()
endmacro()
