# CTest script: configures and builds the minimal plugin on its own, out of
# tree, with only the ABI header, and checks the library it produces exports
# tsr_get_plugin_api. Run as
#   cmake -DSOURCE_DIR=.. -DBINARY_DIR=.. -DINCLUDE_DIR=.. -DGENERATOR=.. -P <this>
# A copy of the header in a fresh folder proves nothing else is reachable.
file(REMOVE_RECURSE "${BINARY_DIR}")
set(header_dir "${BINARY_DIR}/abi_include")
file(COPY "${INCLUDE_DIR}/tessera/plugin/tessera_plugin.h"
     DESTINATION "${header_dir}/tessera/plugin")

execute_process(
  COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${BINARY_DIR}/build"
          -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release
          "-DTESSERA_INCLUDE_DIR=${header_dir}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "standalone configure failed (${rc}):\n${out}")
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} --build "${BINARY_DIR}/build"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "standalone build failed (${rc}):\n${out}")
endif()
set(lib "${BINARY_DIR}/build/libtessera_plugin_minimal.so")
if(NOT EXISTS "${lib}")
  message(FATAL_ERROR "standalone build produced no ${lib}")
endif()
find_program(NM nm)
if(NM)
  execute_process(COMMAND ${NM} -D --defined-only "${lib}"
                  OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT symbols MATCHES "T tsr_get_plugin_api")
    message(FATAL_ERROR "${lib} does not export tsr_get_plugin_api:\n${symbols}")
  endif()
  string(REGEX MATCHALL "[^\n]+" lines "${symbols}")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "tsr_get_plugin_api$")
      message(FATAL_ERROR "${lib} exports more than tsr_get_plugin_api: ${line}")
    endif()
  endforeach()
endif()
message(STATUS "standalone minimal plugin built: ${lib}")
