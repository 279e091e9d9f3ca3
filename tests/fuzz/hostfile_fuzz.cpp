// SPDX-License-Identifier: MIT
// parse_hostfile: any bytes give a cluster that validates, or an error that points into the text.
// A host named twice is refused exactly when a pairwise search finds one, and allowing duplicates
// gives the same hosts in the same order.
#include <hetlaunch/hostfile.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = hetlaunch::parse_hostfile(text);
  hetlaunch::hostfile_options allow;
  allow.allow_duplicate_hosts = true;
  const auto all = hetlaunch::parse_hostfile(text, allow);
  if (r) {
    FUZZ_CHECK(hetlaunch::validate(*r).empty());
    FUZZ_CHECK(all && all->node_count() == r->node_count());
    return 0;
  }
  FUZZ_CHECK(r.error().line >= 1 && r.error().column >= 1 && !r.error().message.empty());
  const bool duplicate = r.error().message.find("is already on line") != std::string::npos;
  if (all) {
    bool pair = false;
    for (std::size_t i = 0; i < all->node_count() && !pair; ++i)
      for (std::size_t j = 0; j < i && !pair; ++j)
        pair = hetlaunch::detail::compare_host(all->node(i).host, all->node(j).host) == 0;
    FUZZ_CHECK(pair == duplicate);
  }
  return 0;
}
