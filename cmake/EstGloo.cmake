# Gloo, one copy per process. Debian's LibTorch links the system's libgloo; the pip and
# archive LibTorch builds carry Gloo inside libtorch_cpu and export its symbols. Linking the
# system's libgloo beside those would put two Gloos (of different commits) in one process,
# each call bound to whichever the loader found first. So where libtorch_cpu exports Gloo,
# nothing more is linked: our code compiles against Gloo's headers and takes the symbols from
# LibTorch (the headers should be of LibTorch's Gloo commit: PyTorch's third_party/gloo).
#
# Call after find_package(Torch). Sets in the caller's scope:
#   EST_GLOO_LIBRARIES     what to link for Gloo ("gloo", or nothing when LibTorch has it)
#   EST_GLOO_INCLUDE_DIRS  Gloo's headers
#   EST_TORCH_BUNDLES_GLOO ON when LibTorch's libtorch_cpu exports Gloo
include(${CMAKE_CURRENT_LIST_DIR}/EstSymbols.cmake)

# Sets <out> to ON when the shared library <library> exports Gloo (the constructor of
# gloo::rendezvous::Context, which every Gloo has and our code uses), else OFF.
function(est_library_exports_gloo library out)
  est_library_exports_symbol("${library}" "_ZN4gloo10rendezvous7ContextC" exports)
  set(${out} ${exports} PARENT_SCOPE)
endfunction()

function(est_find_gloo)
  find_package(Gloo REQUIRED)
  get_target_property(gloo_includes gloo INTERFACE_INCLUDE_DIRECTORIES)
  set(bundled OFF)
  if(TARGET torch_cpu)
    get_target_property(torch_cpu_file torch_cpu LOCATION)
    est_library_exports_gloo("${torch_cpu_file}" bundled)
  endif()
  if(bundled)
    set(EST_GLOO_LIBRARIES "" PARENT_SCOPE)
    message(STATUS "TorchEstimator: Gloo from LibTorch (${torch_cpu_file} exports it), headers from "
                   "${gloo_includes}; the system's libgloo is not linked")
  else()
    set(EST_GLOO_LIBRARIES gloo PARENT_SCOPE)
    get_target_property(gloo_file gloo LOCATION)
    message(STATUS "TorchEstimator: Gloo from ${gloo_file} (LibTorch has no Gloo of its own)")
  endif()
  set(EST_GLOO_INCLUDE_DIRS "${gloo_includes}" PARENT_SCOPE)
  set(EST_TORCH_BUNDLES_GLOO ${bundled} PARENT_SCOPE)
endfunction()
