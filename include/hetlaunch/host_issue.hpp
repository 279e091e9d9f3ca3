// SPDX-License-Identifier: MIT
// hetlaunch: host_issue, what is wrong with a host name (a diagnostic's `issue`).
#ifndef HETLAUNCH_HOST_ISSUE_HPP
#define HETLAUNCH_HOST_ISSUE_HPP

// The enum is defined with the checks that give it (detail/host_name.hpp), which every header
// below this one can then use without including a public header.
#include "detail/host_name.hpp"

#endif  // HETLAUNCH_HOST_ISSUE_HPP
