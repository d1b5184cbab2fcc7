# servelab_test(NAME SOURCES a_test.cc ... LIBS lib ...)
# One gtest binary per call, linked with gmock_main, discovered test by test.
# Tests that drive the real binaries read their paths from SERVELAB_BIN_DIR.
include(GoogleTest)

# A test's time limit. Under a sanitizer (deploy/test.sh --sanitize) every
# process the test starts runs 2-15x slower; the longest test takes 90 s.
if(SERVELAB_SANITIZE STREQUAL "")
  set(SERVELAB_TEST_TIMEOUT 300)
elseif(SERVELAB_SANITIZE STREQUAL "thread")
  # TSan costs up to 10x (tests/testing/sanitizer.h): 400 experiments from
  # eight clients took over 1,800 s on two shared cores.
  set(SERVELAB_TEST_TIMEOUT 3600)
else()
  set(SERVELAB_TEST_TIMEOUT 1800)
endif()

function(servelab_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} servelab_testing GTest::gmock_main)
  target_compile_definitions(${name} PRIVATE SERVELAB_BIN_DIR="${CMAKE_BINARY_DIR}/bin"
                                             SERVELAB_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT ${SERVELAB_TEST_TIMEOUT})
endfunction()
