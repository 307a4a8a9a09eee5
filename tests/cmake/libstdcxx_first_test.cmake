# Tests of cmake/EstLibstdcxxFirst.cmake: run with cmake -DEST_SOURCE_DIR=<repo>
# -DLIBSTDCXX=<libstdc++.so.6> -DTORCH_LIBRARY=<libtorch.so> -DTORCH_EXPORTS=<ON|OFF>
# -DPROGRAM=<a program of the build> -P libstdcxx_first_test.cmake.

include(${EST_SOURCE_DIR}/cmake/EstLibstdcxxFirst.cmake)

function(expect name library want)
  est_library_exports_libstdcxx("${library}" got)
  if(got STREQUAL want)
    message(STATUS "ok: ${name}")
  else()
    message(SEND_ERROR "${name}: est_library_exports_libstdcxx(${library}) is ${got}, expected ${want}")
  endif()
endfunction()

# libstdc++ itself exports std::filesystem, as a pip LibTorch's libtorch.so does.
expect("libstdc++" "${LIBSTDCXX}" ON)
expect("a library that does not exist" "${LIBSTDCXX}.absent" OFF)
expect("the build's LibTorch" "${TORCH_LIBRARY}" ${TORCH_EXPORTS})

# The program's libraries, in the order the dynamic linker searches them.
find_program(READELF readelf REQUIRED)
execute_process(COMMAND ${READELF} -d "${PROGRAM}" OUTPUT_VARIABLE dynamic RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "readelf -d ${PROGRAM} failed")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[([^]\n]+)\\]" lines "${dynamic}")
set(needed "")
foreach(line ${lines})
  string(REGEX REPLACE ".*\\[([^]]+)\\].*" "\\1" library "${line}")
  list(APPEND needed ${library})
endforeach()
list(FIND needed "libstdc++.so.6" stdcxx)
set(first_torch -1)
set(index 0)
foreach(library ${needed})
  if(first_torch EQUAL -1 AND library MATCHES "^lib(torch|c10)")
    set(first_torch ${index})
  endif()
  math(EXPR index "${index} + 1")
endforeach()
if(stdcxx EQUAL -1 OR first_torch EQUAL -1)
  message(SEND_ERROR "${PROGRAM} should need libstdc++ and LibTorch; it needs: ${needed}")
elseif(TORCH_EXPORTS AND stdcxx GREATER first_torch)
  message(SEND_ERROR "${PROGRAM} names libstdc++ after LibTorch, whose copies of std::filesystem then win: ${needed}")
else()
  message(STATUS "ok: ${PROGRAM} needs ${needed}")
endif()
