// SPDX-License-Identifier: MIT
// shell.hpp: quoting for POSIX sh, checked by running sh on what it writes.
#include <doctest/doctest.h>

#include <hetlaunch/shell.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using strings = std::vector<std::string>;

namespace {

// Runs `sh -c TEXT` and returns the NUL-separated fields it printed.
strings run_sh(const std::string& text) {
  FILE* p = popen(text.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  CHECK(pclose(p) == 0);
  strings fields;
  std::size_t start = 0;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] == '\0') {
      fields.push_back(out.substr(start, i - start));
      start = i + 1;
    }
  return fields;
}

}  // namespace

TEST_SUITE("shell") {
  TEST_CASE("shell_quote leaves plain words alone and quotes the rest") {
    CHECK(hetlaunch::shell_quote("train.py") == "train.py");
    CHECK(hetlaunch::shell_quote("--nproc_per_node=8") == "--nproc_per_node=8");
    CHECK(hetlaunch::shell_quote("") == "''");
    CHECK(hetlaunch::shell_quote("it's") == "'it'\\''s'");
    CHECK(hetlaunch::shell_quote("$(id)") == "'$(id)'");
    CHECK(hetlaunch::shell_join({"torchrun", "a b", "*"}) == "torchrun 'a b' '*'");
  }
  TEST_CASE("sh -c \"$(shell_join(argv))\" runs exactly argv, for random bytes") {
    std::uint64_t state = 12345;
    const auto next = [&state] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<unsigned>(state >> 33);
    };
    const std::string nasty[] = {"",    "'",  "\"", "$(id)", "`id`",  "\n",    "*",   "?",
                                 "[a]", "-n", "--", "~",     "$HOME", "\\",    "a b", "\t",
                                 ";",   "|",  "&",  "!",     "#",     "{a,b}", "%s"};
    for (int round = 0; round < 200; ++round) {
      strings args = {"first"};  // printf applies its format once even to no arguments
      const unsigned count = next() % 6;
      for (unsigned k = 0; k < count; ++k) {
        std::string a;
        const unsigned pieces = next() % 4;
        for (unsigned p = 0; p < pieces; ++p) {
          if (next() % 2)
            a += nasty[next() % (sizeof nasty / sizeof nasty[0])];
          else
            a += static_cast<char>(1 + next() % 255);  // any byte but NUL
        }
        args.push_back(a);
      }
      strings argv = {"printf", "%s\\000"};
      argv.insert(argv.end(), args.begin(), args.end());
      CHECK(run_sh(hetlaunch::shell_join(argv)) == args);
    }
  }
}
