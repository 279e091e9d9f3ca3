# Builds one target and checks the outcome: EXPECT=PASS must compile; EXPECT=FAIL must not, and
# the compiler's output must match the regular expression on the source's "// EXPECT-ERROR:" line.
# usage: cmake -DBUILD_DIR=... -DTARGET=... -DSOURCE=... -DEXPECT=PASS|FAIL -P expect_build.cmake
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target "${TARGET}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(EXPECT STREQUAL "PASS")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${SOURCE} must compile but did not:\n${out}")
  endif()
  return()
endif()
file(STRINGS "${SOURCE}" expect_line REGEX "^// EXPECT-ERROR: ")
if(NOT expect_line)
  message(FATAL_ERROR "${SOURCE} has no '// EXPECT-ERROR: <regex>' line")
endif()
string(REGEX REPLACE "^// EXPECT-ERROR: " "" expected "${expect_line}")
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but must fail with: ${expected}")
endif()
if(NOT out MATCHES "${expected}")
  message(FATAL_ERROR "${SOURCE} failed to compile, but without the expected message '${expected}':\n${out}")
endif()
message(STATUS "${SOURCE} fails to compile with: ${expected}")
