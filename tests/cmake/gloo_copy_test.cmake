# Tests of est_library_exports_gloo (cmake/EstGloo.cmake), which decides whether LibTorch
# carries its own Gloo: run with cmake -DEST_SOURCE_DIR=<repo> -DGLOO_LIBRARY=<libgloo.so>
# -DTORCH_CPU_LIBRARY=<Debian's libtorch_cpu.so> -P gloo_copy_test.cmake.

include(${EST_SOURCE_DIR}/cmake/EstGloo.cmake)

function(expect name library want)
  est_library_exports_gloo("${library}" got)
  if(got STREQUAL want)
    message(STATUS "ok: ${name}")
  else()
    message(SEND_ERROR "${name}: est_library_exports_gloo(${library}) is ${got}, expected ${want}")
  endif()
endfunction()

# libgloo exports Gloo as a LibTorch that bundles it does (pip, archive: libtorch_cpu.so).
expect("a library that exports Gloo" "${GLOO_LIBRARY}" ON)
# Debian's libtorch_cpu links libgloo instead of carrying it.
expect("Debian's libtorch_cpu, which links the system's Gloo" "${TORCH_CPU_LIBRARY}" OFF)
expect("a library that does not exist" "${GLOO_LIBRARY}.absent" OFF)
