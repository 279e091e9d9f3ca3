// SPDX-License-Identifier: MIT
// One fixture per size, built on first use and kept for every benchmark that asks for that size.
#ifndef HETLAUNCH_BENCH_FIXTURE_CACHE_HPP
#define HETLAUNCH_BENCH_FIXTURE_CACHE_HPP

#include <cstddef>
#include <map>
#include <memory>

template <class Fixture>
const Fixture& cached_fixture(std::size_t n) {
  static std::map<std::size_t, std::unique_ptr<Fixture>> cache;
  std::unique_ptr<Fixture>& slot = cache[n];
  if (!slot) slot = std::make_unique<Fixture>(n);
  return *slot;
}

#endif
