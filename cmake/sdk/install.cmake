# `cmake --install build --prefix P`: the tessera binary, the plugins and
# the plugin SDK (cmake/sdk/TesseraPluginConfig.cmake.in says what it gives).
#   P/bin/tessera
#   P/lib/tessera/plugins/libtessera_plugin_*.so   searched by default
#   P/include/tessera/plugin/tessera_plugin.h      the ABI
#   P/include/tessera/plugin_kit/kit/*.h, P/lib/libtessera_plugin_kit.a
#   P/lib/cmake/TesseraPlugin/                     find_package(TesseraPlugin)
# Fixed "lib" (not GNUInstallDirs' lib/<multiarch>): the binary finds its
# plugins at <dir of the binary>/../lib/tessera/plugins.
include(CMakePackageConfigHelpers)

# The package version is the ABI version in the header.
file(STRINGS "${PROJECT_SOURCE_DIR}/include/tessera/plugin/tessera_plugin.h"
     _tsr_abi_lines REGEX "^#define TSR_PLUGIN_ABI_(MAJOR|MINOR) [0-9]+")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*" "\\1" _tsr_abi_major "${_tsr_abi_lines}")
string(REGEX REPLACE ".*MINOR ([0-9]+).*" "\\1" _tsr_abi_minor "${_tsr_abi_lines}")
set(TESSERA_PLUGIN_ABI_VERSION "${_tsr_abi_major}.${_tsr_abi_minor}")

install(TARGETS tessera RUNTIME DESTINATION bin)
foreach(_plugin tessera_plugin_cpu tessera_plugin_opencl)
  if(TARGET ${_plugin})
    install(TARGETS ${_plugin} LIBRARY DESTINATION lib/tessera/plugins)
  endif()
endforeach()

install(FILES "${PROJECT_SOURCE_DIR}/include/tessera/plugin/tessera_plugin.h"
        DESTINATION include/tessera/plugin)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/plugins/kit/"
        DESTINATION include/tessera/plugin_kit/kit
        FILES_MATCHING PATTERN "*.h")
set_target_properties(tessera_plugin_abi PROPERTIES EXPORT_NAME plugin_abi)
set_target_properties(tessera_plugin_kit PROPERTIES EXPORT_NAME plugin_kit)
install(TARGETS tessera_plugin_abi tessera_plugin_kit
        EXPORT TesseraPluginTargets
        ARCHIVE DESTINATION lib)
install(EXPORT TesseraPluginTargets NAMESPACE Tessera::
        DESTINATION lib/cmake/TesseraPlugin)

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/TesseraPluginConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/sdk/TesseraPluginConfig.cmake"
  INSTALL_DESTINATION lib/cmake/TesseraPlugin)
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/sdk/TesseraPluginConfigVersion.cmake"
  VERSION "${TESSERA_PLUGIN_ABI_VERSION}"
  COMPATIBILITY SameMajorVersion)
install(FILES "${PROJECT_BINARY_DIR}/sdk/TesseraPluginConfig.cmake"
              "${PROJECT_BINARY_DIR}/sdk/TesseraPluginConfigVersion.cmake"
        DESTINATION lib/cmake/TesseraPlugin)
install(FILES "${PROJECT_SOURCE_DIR}/examples/minimal_plugin/exports.map"
        DESTINATION lib/cmake/TesseraPlugin
        RENAME tessera_plugin_exports.map)
