# A pip or archive LibTorch beside Debian's libraries. Call after find_package(Torch),
# find_package(Protobuf) and find_package(spdlog).

# LibTorch's config finds libtorch and libc10 with find_library, which searches the system's
# folders before LibTorch's own: on a machine that also has Debian's libtorch-dev, a build
# against a pip LibTorch would link Debian's libtorch.so and libc10.so beside the pip
# libtorch_cpu.so. Stops, naming the libraries and the fix, where the two are not in one folder.
function(est_check_torch_libraries)
  if(NOT TARGET torch_cpu)
    return()
  endif()
  get_target_property(torch_cpu_file torch_cpu LOCATION)
  get_filename_component(torch_folder "${torch_cpu_file}" DIRECTORY)
  get_filename_component(torch_folder "${torch_folder}" REALPATH)
  foreach(variable TORCH_LIBRARY c10_LIBRARY)
    if(NOT ${variable})
      continue()
    endif()
    get_filename_component(folder "${${variable}}" DIRECTORY)
    get_filename_component(folder "${folder}" REALPATH)
    if(NOT folder STREQUAL torch_folder)
      message(FATAL_ERROR "TorchEstimator: LibTorch's config found ${variable}=${${variable}}, which belongs to "
        "another LibTorch than ${torch_cpu_file} (find_library searches the system's folders first). Configure a new "
        "build folder with -DTORCH_LIBRARY=${torch_folder}/libtorch.so -Dc10_LIBRARY=${torch_folder}/libc10.so")
    endif()
  endforeach()
endfunction()

# A pip LibTorch's include folder carries headers of the protobuf and fmt it was built with
# (torch/include/google/protobuf, torch/include/fmt), which would shadow those of the protobuf
# we link and of the fmt our spdlog was built with wherever those live in /usr/include (a
# compiler searches -isystem folders before its own). Every target of ours sees the real ones
# first, through a folder that holds only links to them.
function(est_system_headers_first)
  set(folders google)
  set(owners "${Protobuf_INCLUDE_DIR}")
  if(TARGET fmt::fmt)
    get_target_property(fmt_include fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
    list(GET fmt_include 0 fmt_include)
    list(APPEND folders fmt)
    list(APPEND owners "${fmt_include}")
  endif()
  set(first ${PROJECT_BINARY_DIR}/system_headers_first)
  set(linked "")
  foreach(folder owner IN ZIP_LISTS folders owners)
    foreach(torch_include ${TORCH_INCLUDE_DIRS})
      if(EXISTS ${torch_include}/${folder} AND NOT torch_include STREQUAL owner AND EXISTS ${owner}/${folder})
        file(MAKE_DIRECTORY ${first})
        file(CREATE_LINK ${owner}/${folder} ${first}/${folder} SYMBOLIC)
        list(APPEND linked "${owner}/${folder}")
        break()
      endif()
    endforeach()
  endforeach()
  if(linked)
    include_directories(BEFORE SYSTEM ${first})
    list(JOIN linked ", " linked)
    message(STATUS "TorchEstimator: LibTorch's include folder has protobuf or fmt headers of its own; ${linked} "
      "come first")
  endif()
endfunction()
