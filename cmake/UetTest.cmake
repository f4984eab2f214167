# uet_gtest(TARGET LABEL...): registers a GoogleTest executable's tests with CTest, each test
# carrying every label given. (gtest_discover_tests' PROPERTIES LABELS cannot pass a list in
# CMake 3.25, so the labels are applied by a CTest include file after discovery.)
include(GoogleTest)

function(uet_gtest target)
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 30)
  set(labels_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake")
  file(WRITE "${labels_file}"
       "set_tests_properties(\${${target}_TESTS} PROPERTIES LABELS \"${ARGN}\")\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${labels_file}")
endfunction()

# uet_test(TARGET [SOURCE file] LIBS lib... LABELS label...): a GoogleTest executable from
# TARGET.cc (or SOURCE) with its own main, linked with LIBS, registered by uet_gtest.
function(uet_test target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "SOURCE" "LIBS;LABELS")
  if(NOT arg_SOURCE)
    set(arg_SOURCE ${target}.cc)
  endif()
  add_executable(${target} ${arg_SOURCE})
  target_link_libraries(${target} PRIVATE ${arg_LIBS} GTest::gtest_main)
  uet_gtest(${target} ${arg_LABELS})
endfunction()
