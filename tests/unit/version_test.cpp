// SPDX-License-Identifier: MIT
// version.hpp: the version the header states is the one the build reads from VERSION.
#include <doctest/doctest.h>

#include <hetlaunch/version.hpp>

#include <string>

// The build reads the version from the VERSION file; the header states it too.
TEST_CASE("VERSION and version.hpp name the same version") {
#ifdef HETLAUNCH_TEST_VERSION_FILE
  CHECK(std::string(HETLAUNCH_TEST_VERSION_FILE) ==
        std::to_string(HETLAUNCH_VERSION_MAJOR) + "." + std::to_string(HETLAUNCH_VERSION_MINOR) +
            "." + std::to_string(HETLAUNCH_VERSION_PATCH));
  CHECK(HETLAUNCH_VERSION ==
        HETLAUNCH_VERSION_MAJOR * 10000 + HETLAUNCH_VERSION_MINOR * 100 + HETLAUNCH_VERSION_PATCH);
#else
  FAIL("the build did not pass HETLAUNCH_TEST_VERSION_FILE");
#endif
}
