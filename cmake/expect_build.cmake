# Builds one target and checks the outcome: EXPECT=PASS must compile; EXPECT=FAIL must not, and
# the compiler's output must match the regular expression on the source's "// EXPECT-ERROR:" line.
# usage: cmake -DBUILD_DIR=... -DTARGET=... -DSOURCE=... -DEXPECT=PASS|FAIL [-DNINJA=PROGRAM]
#        -P expect_build.cmake
# With NINJA (a Ninja build tree), the target's one compile command, as ninja would run it, runs
# here: no build of the tree, so these tests run side by side. Without it, the tree builds the
# target (one such test at a time: two builds in one tree fight over its lock files).
if(NINJA)
  execute_process(COMMAND "${NINJA}" -C "${BUILD_DIR}" -t commands "${TARGET}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE command ERROR_VARIABLE error)
  string(STRIP "${command}" command)
  # The source's file name is looked for as text, not as a pattern, and not its whole path, which
  # ninja quotes where it holds a space or "(", and which may hold "+".
  get_filename_component(file_name "${SOURCE}" NAME)
  string(FIND "${command}" "${file_name}" at)
  if(NOT rc EQUAL 0 OR command MATCHES "\n" OR at EQUAL -1)
    message(FATAL_ERROR "expected one command that compiles ${SOURCE} for ${TARGET}, ninja said:\n"
                        "${command}${error}")
  endif()
  execute_process(COMMAND sh -c "${command}" WORKING_DIRECTORY "${BUILD_DIR}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
else()
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target "${TARGET}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
endif()
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
