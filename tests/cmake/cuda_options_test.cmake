# Tests of est_resolve_cuda_options (cmake/EstCudaOptions.cmake), the decision of what a build
# compiles from what was found: run with cmake -DEST_SOURCE_DIR=<repo> -P cuda_options_test.cmake.

include(${EST_SOURCE_DIR}/cmake/EstCudaOptions.cmake)

set(failures 0)

# expect(<case name> <with_cuda> <with_nccl> <nccl_core> <summary regex> <error regex> ARGS ...)
function(expect name want_cuda want_nccl want_core summary_regex error_regex)
  cmake_parse_arguments(ARG "" "" "ARGS" ${ARGN})
  est_resolve_cuda_options(TORCH_DIR /opt/libtorch/share/cmake/Torch TOOLKIT_DIR /usr/local/cuda NCCL_DIR /opt/nccl
    ${ARG_ARGS}
    OUT_WITH_CUDA cuda OUT_WITH_NCCL nccl OUT_NCCL_CORE core OUT_SUMMARY summary OUT_ERROR error)
  set(problems "")
  if(NOT cuda STREQUAL want_cuda OR NOT nccl STREQUAL want_nccl OR NOT core STREQUAL want_core)
    string(APPEND problems " cuda/nccl/core are ${cuda}/${nccl}/${core}, expected ${want_cuda}/${want_nccl}/${want_core};")
  endif()
  if(NOT summary MATCHES "${summary_regex}")
    string(APPEND problems " summary '${summary}' does not match '${summary_regex}';")
  endif()
  if(error_regex STREQUAL "")
    if(NOT error STREQUAL "")
      string(APPEND problems " unexpected error '${error}';")
    endif()
  elseif(NOT error MATCHES "${error_regex}")
    string(APPEND problems " error '${error}' does not match '${error_regex}';")
  endif()
  if(problems)
    message(SEND_ERROR "${name}:${problems}")
  else()
    message(STATUS "ok: ${name}")
  endif()
endfunction()

expect("CPU LibTorch, no toolkit (the CI machine)" OFF OFF OFF
  "^TorchEstimator: CUDA LibTorch no; CUDA toolkit not found; NCCL not found; CUDA devices off; NCCL off \\(no CUDA toolkit\\)$" ""
  ARGS TORCH_CUDA OFF WITH_CUDA AUTO WITH_NCCL AUTO)
expect("CPU LibTorch, toolkit and NCCL: the core alone" OFF OFF ON
  "CUDA toolkit 13.0.88 at /usr/local/cuda; NCCL 2.28.9 at /opt/nccl; CUDA devices off; NCCL core compiled, NCCL collective off \\(LibTorch has no CUDA\\)$" ""
  ARGS TORCH_CUDA OFF TOOLKIT_VERSION 13.0.88 NCCL_VERSION 2.28.9 WITH_CUDA AUTO WITH_NCCL AUTO)
expect("CUDA LibTorch, toolkit and NCCL: everything" ON ON ON
  "^TorchEstimator: CUDA LibTorch yes;.*CUDA devices on; NCCL core compiled, NCCL collective on$" ""
  ARGS TORCH_CUDA ON TOOLKIT_VERSION 12.4 NCCL_VERSION 2.21.5 WITH_CUDA AUTO WITH_NCCL AUTO)
expect("CUDA LibTorch without NCCL: CUDA devices only" ON OFF OFF
  "NCCL not found; CUDA devices on; NCCL off \\(no NCCL\\)$" ""
  ARGS TORCH_CUDA ON TOOLKIT_VERSION 12.4 WITH_CUDA AUTO WITH_NCCL AUTO)
expect("an NCCL older than the minimum is not used" ON OFF OFF
  "NCCL off \\(NCCL 2.12.10 is older than 2.14\\)$" ""
  ARGS TORCH_CUDA ON TOOLKIT_VERSION 12.4 NCCL_VERSION 2.12.10 WITH_CUDA AUTO WITH_NCCL AUTO)
expect("EST_WITH_CUDA=OFF on a CUDA LibTorch keeps the core, not the collective" OFF OFF ON
  "NCCL core compiled, NCCL collective off \\(EST_WITH_CUDA=OFF\\)$" ""
  ARGS TORCH_CUDA ON TOOLKIT_VERSION 12.4 NCCL_VERSION 2.21.5 WITH_CUDA OFF WITH_NCCL AUTO)
expect("EST_WITH_NCCL=OFF compiles no NCCL at all" ON OFF OFF
  "NCCL off \\(EST_WITH_NCCL=OFF\\)$" ""
  ARGS TORCH_CUDA ON TOOLKIT_VERSION 12.4 NCCL_VERSION 2.21.5 WITH_CUDA ON WITH_NCCL OFF)
expect("EST_WITH_CUDA=ON on a CPU LibTorch names the LibTorch and how to point at another" OFF OFF OFF
  "" "^EST_WITH_CUDA=ON needs a LibTorch built with CUDA, but the LibTorch found \\(/opt/libtorch/share/cmake/Torch\\).*CMAKE_PREFIX_PATH.*cmake_prefix_path"
  ARGS TORCH_CUDA OFF WITH_CUDA ON WITH_NCCL AUTO)
expect("EST_WITH_NCCL=ON without NCCL names NCCL_ROOT" ON OFF OFF
  "" "^EST_WITH_NCCL=ON needs the CUDA toolkit and NCCL >= 2.14, but there is no NCCL: set NCCL_ROOT"
  ARGS TORCH_CUDA ON TOOLKIT_VERSION 12.4 WITH_CUDA AUTO WITH_NCCL ON)
expect("EST_WITH_NCCL=ON on a CPU LibTorch names the missing CUDA LibTorch" OFF OFF ON
  "" "EST_WITH_NCCL=ON needs CUDA device support \\(EST_WITH_CUDA\\), which is off"
  ARGS TORCH_CUDA OFF TOOLKIT_VERSION 13.0 NCCL_VERSION 2.28.9 WITH_CUDA AUTO WITH_NCCL ON)
expect("booleans in other spellings are read as ON and OFF" ON ON ON "" ""
  ARGS TORCH_CUDA ON TOOLKIT_VERSION 12.4 NCCL_VERSION 2.21.5 WITH_CUDA true WITH_NCCL 1)
expect("a value that is not AUTO, ON or OFF is an error" OFF OFF ON
  "" "EST_WITH_CUDA=maybe is not AUTO, ON or OFF"
  ARGS TORCH_CUDA ON TOOLKIT_VERSION 12.4 NCCL_VERSION 2.21.5 WITH_CUDA maybe WITH_NCCL AUTO)
