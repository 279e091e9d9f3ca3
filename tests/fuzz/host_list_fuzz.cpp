// SPDX-License-Identifier: MIT
// parse_host_list: a valid cluster or a positioned error.
#include <hetlaunch/hostfile.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = hetlaunch::parse_host_list(text);
  if (r)
    FUZZ_CHECK(hetlaunch::validate(*r).empty());
  else
    FUZZ_CHECK(r.error().line == 1 && r.error().column >= 1 && r.error().column <= size + 1);
  return 0;
}
