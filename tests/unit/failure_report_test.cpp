// SPDX-License-Identifier: MIT
// failure_report.hpp: a failed worker's root cause, as torchrun's line and the worker's relayed
// error file give it: the first line of the error, never more than 1,024 bytes and never half a
// character; hostile lines refused with their column.
#include <doctest/doctest.h>

#include <hetlaunch/failure_report.hpp>

#include <cstddef>
#include <random>
#include <string>
#include <string_view>

namespace {
// Whether `s` is valid UTF-8 (no overlong or surrogate check: the cut is what is tested).
bool whole_characters(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80         ? 1
                          : (c >> 5) == 6  ? 2
                          : (c >> 4) == 14 ? 3
                          : (c >> 3) == 30 ? 4
                                           : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}
}  // namespace

TEST_SUITE("failure_report") {
  TEST_CASE("the error's first line is kept, whatever ends it") {
    CHECK(hetlaunch::first_error_line("RuntimeError: boom") == "RuntimeError: boom");
    CHECK(hetlaunch::first_error_line("ValueError: a\nTraceback") == "ValueError: a");
    CHECK(hetlaunch::first_error_line("ValueError: a\r\nmore") == "ValueError: a");
    CHECK(hetlaunch::first_error_line("ValueError: a\rmore") == "ValueError: a");
    CHECK(hetlaunch::first_error_line("") == "");
    CHECK(hetlaunch::first_error_line("\nsecond") == "");
  }

  TEST_CASE("property: at most the limit, a prefix of the first line, whole characters") {
    std::mt19937 random(46);
    const std::string_view pieces[] = {"a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x94\xa5",
                                       " ", "\n"};
    for (int round = 0; round < 3000; ++round) {
      std::string text;
      const std::size_t length = random() % 700;
      for (std::size_t k = 0; k < length; ++k) text += pieces[random() % 6];
      const std::size_t most = 4 + random() % 1100;
      const std::string line = hetlaunch::first_error_line(text, most);
      const std::string_view first = std::string_view(text).substr(0, text.find('\n'));
      CAPTURE(text);
      CHECK(line.size() <= most);
      CHECK(first.substr(0, line.size()) == line);
      CHECK(whole_characters(line));
      // Only what does not fit is cut: the next character would overflow.
      if (line.size() < first.size()) CHECK(line.size() + 4 > most);
    }
  }

  TEST_CASE("a worker's relayed error is read, other keys skipped") {
    const auto e = hetlaunch::parse_worker_error_line(
        R"({"rank": 6, "local_rank": 1, "error": "RuntimeError: boom \"quoted\"", "later": [1]})");
    REQUIRE(e);
    CHECK(e->rank == 6);
    CHECK(e->local_rank == 1);
    CHECK(e->error == "RuntimeError: boom \"quoted\"");
  }

  TEST_CASE("a relayed error longer than the limit is cut at it") {
    std::string said = "{\"rank\": 0, \"local_rank\": 0, \"error\": \"";
    said.append(3000, 'x').append("\\nsecond line\"}");
    const auto e = hetlaunch::parse_worker_error_line(said);
    REQUIRE(e);
    CHECK(e->error == std::string(hetlaunch::worker_error_bytes, 'x'));
  }

  TEST_CASE("hostile error lines are refused with their column") {
    const struct {
      const char* text;
      std::size_t column;
      const char* says;
    } cases[] = {
        {"", 1, "expected '{'"},
        {"{}", 3, "no \"rank\""},
        {R"({"rank": 1, "local_rank": 0})", 29, "no \"error\""},
        {R"({"rank": -1, "local_rank": 0, "error": ""})", 12,
         "rank must be a non-negative integer"},
        {R"({"rank": 1.5, "local_rank": 0, "error": ""})", 13,
         "rank must be a non-negative integer"},
        {R"({"rank": 1, "rank": 2, "local_rank": 0, "error": ""})", 13, "\"rank\" is given twice"},
        {R"({"rank": 1, "local_rank": 0, "error": 5})", 39, "expected a string"},
        {R"({"rank": 1, "local_rank": 0, "error": ""} x)", 43, "text after the object"},
        {"{\"rank\": 1, \"local_rank\": 0, \"error\": \"a\x01\"}", 42, "a control character"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.text);
      const auto e = hetlaunch::parse_worker_error_line(c.text);
      REQUIRE(!e);
      CHECK(e.error().code == hetlaunch::errc::bad_worker_error);
      CHECK(e.error().column == c.column);
      CHECK(e.error().message.find(c.says) != std::string::npos);
    }
  }

  TEST_CASE("torchrun's failure line, as torch 1.13 and 2.x log it") {
    const auto old = hetlaunch::parse_torchrun_failure(
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 3) local_rank: 2 "
        "(pid: 4711) of binary: /usr/bin/python3");
    REQUIRE(old);
    CHECK(old->exitcode == 3);
    CHECK(old->local_rank == 2);
    const auto now = hetlaunch::parse_torchrun_failure(
        "E1206 10:41:07.123000 812 torch/distributed/elastic/multiprocessing/api.py:874] failed "
        "(exitcode: -9) local_rank: 0 (pid: 99) of binary: /usr/bin/python3");
    REQUIRE(now);
    CHECK(now->exitcode == -9);
    CHECK(now->local_rank == 0);
  }

  TEST_CASE("a worker's own line, or another log line, is not torchrun's report") {
    CHECK(!hetlaunch::parse_torchrun_failure(
        "[rank 1] failed (exitcode: 3) local_rank: 0 (pid: 1) of binary: x"));
    CHECK(!hetlaunch::parse_torchrun_failure(
        "[default1]:failed (exitcode: 3) local_rank: 0 (pid: 1) of binary: x"));
    CHECK(!hetlaunch::parse_torchrun_failure("training failed (exitcode: 3)"));
    CHECK(!hetlaunch::parse_torchrun_failure("all good"));
    // Numbers out of range read as 0, never wrap.
    const auto huge = hetlaunch::parse_torchrun_failure(
        "failed (exitcode: 99999999999999999999) local_rank: 99999999999999999999 (pid: 1)");
    REQUIRE(huge);
    CHECK(huge->exitcode == 0);
    CHECK(huge->local_rank == 0);
  }
}
