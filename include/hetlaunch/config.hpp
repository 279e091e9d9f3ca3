// SPDX-License-Identifier: MIT
// hetlaunch: the configuration macros a program may define before including hetlaunch.
#ifndef HETLAUNCH_CONFIG_HPP
#define HETLAUNCH_CONFIG_HPP

#include <cstdio>
#include <cstdlib>

// HETLAUNCH_USE_EXCEPTIONS (0/1): whether result<T>::value() throws bad_result_access on an
// error. Defaults to whether the compiler has exceptions enabled; every translation unit of a
// program must agree on it.
#ifndef HETLAUNCH_USE_EXCEPTIONS
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#define HETLAUNCH_USE_EXCEPTIONS 1
#else
#define HETLAUNCH_USE_EXCEPTIONS 0
#endif
#endif

#if HETLAUNCH_USE_EXCEPTIONS && \
    !(defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND))
#error "hetlaunch: HETLAUNCH_USE_EXCEPTIONS is 1 but exceptions are disabled in this build"
#endif

// HETLAUNCH_ON_FAILURE(message): what happens when a precondition is broken at run time (an
// out-of-range node index passed to an unchecked accessor), or when result<T>::value() is called
// on an error without exceptions. It must not return. The default prints the message and aborts.
#ifndef HETLAUNCH_ON_FAILURE
#define HETLAUNCH_ON_FAILURE(message)                                                          \
  (std::fputs("hetlaunch: ", stderr), std::fputs((message), stderr), std::fputc('\n', stderr), \
   std::abort())
#endif

#endif  // HETLAUNCH_CONFIG_HPP
