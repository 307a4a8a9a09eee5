# serving_load_client: sends est-serve one scenario of KServe v2 or TF Serving requests (large,
# concurrent, with 1-image requests timed beside them) and prints one parseable line; make
# release-checks runs serving_memory_limit_test.sh with it against the optimized est-serve inside
# a memory cgroup. Not in the sanitizer tree, whose est-serve no memory limit fits.
if(EST_SANITIZE)
  return()
endif()
add_executable(serving_load_client ${CMAKE_CURRENT_LIST_DIR}/serving_load_client.cc)
target_link_libraries(serving_load_client PRIVATE TorchEstimator::serving CLI11::CLI11)
target_include_directories(serving_load_client PRIVATE ${PROJECT_SOURCE_DIR})
est_warnings(serving_load_client)
