# est_library_exports_symbol(<library> <pattern> <out>): sets <out> to ON when the shared
# library <library> defines and exports a symbol whose mangled name contains <pattern>
# (nm -D --defined-only), else OFF (also when the file or nm is missing).
function(est_library_exports_symbol library pattern out)
  set(exports OFF)
  find_program(EST_NM NAMES ${CMAKE_NM} nm)
  if(EST_NM AND EXISTS "${library}")
    execute_process(COMMAND ${EST_NM} -D --defined-only "${library}"
                    COMMAND grep -c "${pattern}"
                    OUTPUT_VARIABLE count OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(count GREATER 0)
      set(exports ON)
    endif()
  endif()
  set(${out} ${exports} PARENT_SCOPE)
endfunction()
