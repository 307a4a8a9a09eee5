# Install rules and the package config, so that users can
# find_package(TorchEstimator) and link TorchEstimator::estimator.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

get_property(est_targets GLOBAL PROPERTY EST_LIBRARY_TARGETS)
install(TARGETS ${est_targets} EXPORT TorchEstimatorTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# distribute/nccl/ (the NCCL core and collective) is compiled into TorchEstimator::distribute in
# builds with the NCCL collective; its headers are internal, not installed.
install(DIRECTORY common data checkpoint distribute estimator
  DESTINATION include/torch_estimator FILES_MATCHING PATTERN "*.h" PATTERN "nccl" EXCLUDE)
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/
  DESTINATION include/torch_estimator FILES_MATCHING PATTERN "*.h")
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
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/TorchEstimator)
