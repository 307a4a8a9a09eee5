# libstdc++ first. The pip and archive LibTorch builds of PyTorch 2.5 and newer link parts of
# libstdc++ statically and export them (pytorch/pytorch#133437), std::filesystem among them.
# The dynamic linker binds a program's calls to the first library in its DT_NEEDED list that
# defines the symbol, and g++ appends libstdc++ after every library of the link line, so
# std::filesystem::remove_all in our code ran LibTorch's copy, which jumps through an
# unresolved pointer (a crash at address 0, seen with pip torch 2.11). Where LibTorch exports
# such symbols, everything that links TorchEstimator::common (every library and program of
# the project, and installed users' programs) names libstdc++ before the other libraries.

include(${CMAKE_CURRENT_LIST_DIR}/EstSymbols.cmake)

# Sets <out> to ON when the shared library <library> defines and exports std::filesystem
# symbols, which belong to libstdc++, else OFF.
function(est_library_exports_libstdcxx library out)
  est_library_exports_symbol("${library}" "_ZNSt10filesystem" exports)
  set(${out} ${exports} PARENT_SCOPE)
endfunction()

# Call after find_package(Torch) and once <target> exists. Sets EST_TORCH_EXPORTS_LIBSTDCXX
# in the caller's scope.
function(est_link_libstdcxx_first target)
  set(libraries "${TORCH_LIBRARY}")
  if(TARGET torch_cpu)
    get_target_property(torch_cpu_file torch_cpu LOCATION)
    list(APPEND libraries "${torch_cpu_file}")
  endif()
  set(exporting "")
  foreach(library ${libraries})
    est_library_exports_libstdcxx("${library}" exports)
    if(exports)
      list(APPEND exporting "${library}")
    endif()
  endforeach()
  if(exporting)
    # The shared runtime by its path: where the toolchain has no libstdc++.so development
    # link, -lstdc++ would take libstdc++.a, which the linker reads only after LibTorch has
    # already defined the symbols. Named first (the link flags come before the objects and
    # libraries), the runtime defines them before LibTorch does, at link and at load time.
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                    OUTPUT_VARIABLE runtime OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT IS_ABSOLUTE "${runtime}")
      message(FATAL_ERROR "TorchEstimator: ${exporting} export libstdc++'s std::filesystem, so programs must "
        "name the shared libstdc++ before LibTorch, but ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6 "
        "finds no libstdc++.so.6")
    endif()
    # One group, so that CMake's de-duplication of link options keeps it whole.
    target_link_options(${target} INTERFACE "SHELL:-Wl,--push-state,--no-as-needed ${runtime} -Wl,--pop-state")
    list(JOIN exporting ", " names)
    message(STATUS "TorchEstimator: ${names} export libstdc++'s std::filesystem; programs name ${runtime} "
                   "first among their libraries")
    set(EST_TORCH_EXPORTS_LIBSTDCXX ON PARENT_SCOPE)
  else()
    set(EST_TORCH_EXPORTS_LIBSTDCXX OFF PARENT_SCOPE)
  endif()
endfunction()
