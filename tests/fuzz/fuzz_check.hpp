// SPDX-License-Identifier: MIT
// A check that stays on in fuzz builds (which define NDEBUG or not): a broken property aborts.
#ifndef HETLAUNCH_TESTS_FUZZ_CHECK_HPP
#define HETLAUNCH_TESTS_FUZZ_CHECK_HPP
#include <cstdio>
#include <cstdlib>
#define FUZZ_CHECK(condition)                                                               \
  do {                                                                                      \
    if (!(condition)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)
#endif
