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
  # Test code is assertions and set-up: -O1 compiles it in about 60% of
  # -O3's time (GoogleTest's and nlohmann-json's templates dominate). The
  # code under test keeps its own flags (libraries -O3, kernels their own).
  target_compile_options(${T_NAME} PRIVATE $<$<CONFIG:Release>:-O1>)
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST
                       PROPERTIES LABELS "${T_LABELS}")
endfunction()
