# `cmake --install` puts the core (and the topology library when present) under
# the prefix and exports flock::flock so a C++ user writes find_package(flock).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_flock_export_targets flock)
if(TARGET flock_topology)
  list(APPEND _flock_export_targets flock_topology)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/topology/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()

install(TARGETS ${_flock_export_targets} EXPORT flockTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Headers keep csrc's layout under flock/: #include <flock/collectives/collectives.h>.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/csrc/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flock
        FILES_MATCHING PATTERN "*.h" PATTERN "bindings" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/csrc/generated/flock/common/build_config.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flock/common)

set(_flock_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/flock)
install(EXPORT flockTargets NAMESPACE flock:: DESTINATION ${_flock_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/flockConfig.cmake.in
  ${PROJECT_BINARY_DIR}/flockConfig.cmake INSTALL_DESTINATION ${_flock_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/flockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/flockConfig.cmake ${PROJECT_BINARY_DIR}/flockConfigVersion.cmake
        DESTINATION ${_flock_cmake_dir})
