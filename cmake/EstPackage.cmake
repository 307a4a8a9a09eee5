# Install rules and the package config, so that users can
# find_package(TorchEstimator) and link TorchEstimator::estimator.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

get_property(est_targets GLOBAL PROPERTY EST_LIBRARY_TARGETS)
install(TARGETS ${est_targets} EXPORT TorchEstimatorTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# Only the public headers (est_public_headers in each folder) are installed, under their
# folder paths; internal headers and generated ones (no public header includes them) are not.
get_property(est_public_headers GLOBAL PROPERTY EST_PUBLIC_HEADERS)
foreach(header ${est_public_headers})
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION include/torch_estimator/${folder})
endforeach()
# The list, for the test that public headers include nothing internal.
string(REPLACE ";" "\n" est_public_header_lines "${est_public_headers}")
file(WRITE ${PROJECT_BINARY_DIR}/public_headers.txt "${est_public_header_lines}\n")
install(EXPORT TorchEstimatorTargets NAMESPACE TorchEstimator::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/TorchEstimator)
configure_package_config_file(cmake/TorchEstimatorConfig.cmake.in
  ${PROJECT_BINARY_DIR}/TorchEstimatorConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/TorchEstimator)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TorchEstimatorConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TorchEstimatorConfig.cmake
  ${PROJECT_BINARY_DIR}/TorchEstimatorConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/FindNCCL.cmake
  ${PROJECT_SOURCE_DIR}/cmake/FindLibCsv.cmake
  ${PROJECT_SOURCE_DIR}/cmake/FindFarmHash.cmake
  ${PROJECT_SOURCE_DIR}/cmake/FindMicroHttpd.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/TorchEstimator)
