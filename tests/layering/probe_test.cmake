# Run by CTest (tests/layering): builds one probe target and checks the outcome.
#   cmake -DBUILD_DIR=<build tree> -DTARGET=<probe> -DEXPECT=<guard message, or empty>
#         -P probe_test.cmake
# EXPECT empty: the probe must compile. Otherwise the build must fail and print EXPECT, so a
# probe that fails for another reason (a typo, a missing file) does not pass.
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target "${TARGET}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(EXPECT STREQUAL "")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${TARGET} should compile but failed:\n${out}")
  endif()
  return()
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "${TARGET} compiled, but its header should be refused with \"${EXPECT}\"")
endif()
string(FIND "${out}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${TARGET} failed without the guard's message \"${EXPECT}\":\n${out}")
endif()
message(STATUS "${TARGET} refused as expected: ${EXPECT}")
