# ctest helper: fails unless PLUGIN exports exactly tsr_get_plugin_api.
# Usage: cmake -DNM=<nm> -DPLUGIN=<lib.so> -P check_exports.cmake
execute_process(COMMAND ${NM} -D --defined-only ${PLUGIN}
                OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${PLUGIN}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${symbols}")
set(names "")
foreach(line IN LISTS lines)
  string(REGEX REPLACE "^.* " "" name "${line}")
  list(APPEND names ${name})
endforeach()
if(NOT names STREQUAL "tsr_get_plugin_api")
  message(FATAL_ERROR "${PLUGIN} must export only tsr_get_plugin_api, but exports: ${names}")
endif()
