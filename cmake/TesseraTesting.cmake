# tessera_cc_test(NAME name SRCS a.cc b.cc DEPS lib1 lib2 [LABELS l])
# A GoogleTest binary registered with CTest, one CTest entry per test case.
# Tests see TESSERA_SHARED_DIR as a compile definition (the fixtures folder).
function(tessera_cc_test)
  cmake_parse_arguments(T "" "NAME" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SRCS})
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                        ${CMAKE_BINARY_DIR}/tests)
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} tessera_testing
                        GTest::gtest GTest::gtest_main)
  # Test code is assertions and set-up: -O0 compiles it in about half of
  # -O3's time (GoogleTest's and nlohmann-json's templates dominate; -O1
  # takes a quarter longer than -O0). The code under test keeps its own
  # flags (libraries -O3 or -O2, kernels their own).
  target_compile_options(${T_NAME} PRIVATE $<$<CONFIG:Release>:-O0>)
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST
                       PROPERTIES LABELS "${T_LABELS}")
endfunction()

# Control-path code (the CLI, the HTTP front, the router, the benchmark
# clients, the conformance kit, chat templates) spends its time in system
# calls and allocation, not loops: -O2 compiles it about a quarter faster than
# -O3 and runs it as fast. Hot code (kernels, tokenizer, grammar masks, the
# model runner, the KV cache) keeps -O3.
function(tessera_control_path_optimization target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-O2>)
endfunction()
