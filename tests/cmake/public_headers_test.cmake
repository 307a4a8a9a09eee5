# The public headers (est_public_headers, installed) include no internal header: a user's
# program compiles against an installed copy. Run with cmake -DEST_SOURCE_DIR=<repo>
# -DPUBLIC_HEADERS=<build>/public_headers.txt -P public_headers_test.cmake.

cmake_minimum_required(VERSION 3.25)

file(STRINGS ${PUBLIC_HEADERS} public)
list(LENGTH public count)
if(count LESS 10)
  message(FATAL_ERROR "${PUBLIC_HEADERS} lists ${count} public headers; expected the API's (estimator.h ...)")
endif()
foreach(required estimator/estimator.h estimator/train_and_evaluate.h data/dataset.h distribute/strategy.h
                 distribute/step_sync.h distribute/collective/collective.h)
  if(NOT required IN_LIST public)
    message(SEND_ERROR "${required} is not public; a user or strategy author needs it")
  endif()
endforeach()
set(checked 0)
foreach(header ${public})
  file(STRINGS ${EST_SOURCE_DIR}/${header} includes REGEX "^#include \"")
  foreach(line ${includes})
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
    if(NOT included IN_LIST public)
      message(SEND_ERROR "public header ${header} includes ${included}, which is internal (not installed)")
    endif()
    math(EXPR checked "${checked} + 1")
  endforeach()
endforeach()
message(STATUS "ok: ${count} public headers, ${checked} project includes, all public")
