// SPDX-License-Identifier: MIT
// rank_health.hpp: a rank is hung when it goes silent or stays in one step's computation past its
// limit, never while it waits for the others; a rank is slow against its own earlier windows,
// never against ranks of another share.
#include <doctest/doctest.h>

#include <hetlaunch/rank_health.hpp>

#include <cstddef>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {
using hetlaunch::hang_limits;
using hetlaunch::rank_phase;
using hetlaunch::rank_progress;
using hetlaunch::rank_stall;
using hetlaunch::slow_watch;

rank_progress at(rank_phase phase, double phase_started, double last_report, long long step = 7) {
  return {step, phase, phase_started, last_report};
}
}  // namespace

TEST_SUITE("rank_health: hung") {
  const hang_limits limits{10, 60};

  TEST_CASE("a rank that reports and computes within its limit is not hung") {
    CHECK(hetlaunch::judge_hang(at(rank_phase::computing, 95, 99), 100, limits) ==
          rank_stall::none);
    CHECK(hetlaunch::judge_hang(at(rank_phase::computing, 90, 100), 100, limits) ==
          rank_stall::none);
  }
  TEST_CASE("a rank silent past the limit is hung, whatever its last phase") {
    for (rank_phase p : {rank_phase::computing, rank_phase::computed}) {
      CHECK(hetlaunch::judge_hang(at(p, 89.9, 89.9), 100, limits) == rank_stall::silent);
      CHECK(hetlaunch::judge_hang(at(p, 90, 90), 100, limits) == rank_stall::none);
    }
  }
  TEST_CASE(
      "a rank computing one step past the limit is stuck; one waiting for the others is not") {
    CHECK(hetlaunch::judge_hang(at(rank_phase::computing, 89, 100), 100, limits) ==
          rank_stall::stuck);
    CHECK(hetlaunch::judge_hang(at(rank_phase::computed, 0, 100), 100, limits) == rank_stall::none);
  }
  TEST_CASE("while it checkpoints, the checkpoint limit holds, for silence and for the phase") {
    CHECK(hetlaunch::judge_hang(at(rank_phase::checkpointing, 50, 50), 100, limits) ==
          rank_stall::none);
    CHECK(hetlaunch::judge_hang(at(rank_phase::checkpointing, 30, 99), 100, limits) ==
          rank_stall::stuck);
    CHECK(hetlaunch::judge_hang(at(rank_phase::checkpointing, 30, 39), 100, limits) ==
          rank_stall::silent);
  }
  TEST_CASE("a limit of 0 judges nothing") {
    CHECK(hetlaunch::judge_hang(at(rank_phase::computing, 0, 0), 1e9, {0, 0}) == rank_stall::none);
    CHECK(hetlaunch::judge_hang(at(rank_phase::checkpointing, 0, 0), 1e9, {10, 0}) ==
          rank_stall::none);
  }
  TEST_CASE("of a job, the rank that stopped is named, not the ranks waiting for it") {
    // Rank 2 was stopped while computing step 7; ranks 0, 1 and 3 computed it and wait, still
    // reporting; rank 1 has waited longest, longer than the limit.
    const std::vector<rank_progress> job = {
        at(rank_phase::computed, 88, 99.5), at(rank_phase::computed, 70, 99.8),
        at(rank_phase::computing, 85, 86), at(rank_phase::computed, 89, 99.9)};
    CHECK(hetlaunch::hung_ranks(job, 100, limits) == std::vector<std::size_t>{2});
  }
  TEST_CASE("with no rank silent, those stuck in their own computation are named") {
    const std::vector<rank_progress> job = {at(rank_phase::computed, 70, 99.5),
                                            at(rank_phase::computing, 70, 99.8),
                                            at(rank_phase::computing, 95, 99.9)};
    CHECK(hetlaunch::hung_ranks(job, 100, limits) == std::vector<std::size_t>{1});
    CHECK(hetlaunch::hung_ranks(job, 80, limits).empty());
  }
  TEST_CASE("property: a rank is hung exactly when silent or stuck past its own limit") {
    std::mt19937 g(11);
    std::uniform_real_distribution<double> t(0, 200);
    for (int i = 0; i < 20000; ++i) {
      const rank_phase phase = static_cast<rank_phase>(g() % 3);
      const double last = t(g), started = last - t(g) / 2, now = last + t(g) / 2;
      const rank_progress p = at(phase, started, last);
      const double limit =
          phase == rank_phase::checkpointing ? limits.checkpoint_timeout : limits.hang_timeout;
      const bool silent = now - last > limit;
      const bool stuck = !silent && phase != rank_phase::computed && now - started > limit;
      CAPTURE(i);
      CHECK(hetlaunch::judge_hang(p, now, limits) == (silent  ? rank_stall::silent
                                                      : stuck ? rank_stall::stuck
                                                              : rank_stall::none));
    }
  }
}

TEST_SUITE("rank_health: slow") {
  TEST_CASE("no judgement before 3 windows of history; then the median of them is expected") {
    slow_watch w(2);
    for (double r : {100.0, 110.0, 90.0, 105.0, 95.0}) {
      const auto j = w.add_window(r);
      CHECK_FALSE(j.slow);
    }
    // History: 100, 110, 90 (105 and 95 are the two being judged next).
    CHECK(w.expected() == doctest::Approx(100));
  }
  TEST_CASE("two windows in a row below expected / factor are slow, reported once an episode") {
    slow_watch w(2);
    for (int i = 0; i < 6; ++i) w.add_window(100);
    const auto first = w.add_window(40);
    CHECK_FALSE(first.slow);  // one window below is not yet slow
    const auto second = w.add_window(45);
    CHECK(second.slow);
    CHECK(second.episode_starts);
    CHECK(second.expected == doctest::Approx(100));
    CHECK(second.samples_per_second == 45);
    const auto third = w.add_window(42);
    CHECK(third.slow);
    CHECK_FALSE(third.episode_starts);
    CHECK(third.expected == doctest::Approx(100));  // the slow windows never lower it
    const auto back = w.add_window(98);
    CHECK_FALSE(back.slow);
    CHECK_FALSE(w.slow());
    w.add_window(41);
    const auto again = w.add_window(39);
    CHECK(again.episode_starts);  // a new episode
  }
  TEST_CASE(
      "a window above expected / factor is not below: a rank 1.9x slower is not slow at factor 2") {
    slow_watch w(2);
    for (int i = 0; i < 6; ++i) w.add_window(100);
    for (int i = 0; i < 10; ++i) CHECK_FALSE(w.add_window(52.7).slow);
  }
  TEST_CASE(
      "ranks of different speeds are each judged against themselves: a slower GPU type is not slow") {
    slow_watch fast(2), slower(2);
    std::mt19937 g(3);
    std::normal_distribution<double> noise(1.0, 0.1);
    for (int i = 0; i < 1000; ++i) {
      CHECK_FALSE(fast.add_window(300 * noise(g)).slow);
      CHECK_FALSE(slower.add_window(100 * noise(g)).slow);
    }
  }
  TEST_CASE("a rank halved mid-run is slow at the second window after, and stays in one episode") {
    slow_watch w(1.5);
    int episodes = 0, first_slow = -1;
    for (int i = 0; i < 40; ++i) {
      const auto j = w.add_window(i < 20 ? 200 : 100);
      episodes += j.episode_starts;
      if (j.slow && first_slow < 0) first_slow = i;
    }
    CHECK(first_slow == 21);
    CHECK(episodes == 1);
    CHECK(w.expected() == doctest::Approx(200));
  }
  TEST_CASE("rates that are not positive finite numbers are no window") {
    slow_watch w(2);
    for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN()})
      CHECK_FALSE(w.add_window(bad).slow);
    CHECK(w.expected() == 0);
  }
  TEST_CASE("a factor of 1 or less judges nothing slow") {
    for (double factor : {1.0, 0.5, 0.0, -2.0}) {
      slow_watch w(factor);
      for (int i = 0; i < 6; ++i) w.add_window(100);
      for (int i = 0; i < 4; ++i) CHECK_FALSE(w.add_window(1).slow);
    }
  }
  TEST_CASE("memory is fixed: the expected rate follows the last 32 healthy windows") {
    slow_watch w(2);
    for (int i = 0; i < 1000; ++i) w.add_window(100);
    for (int i = 0; i < 40; ++i) w.add_window(80);  // healthy, not below 50
    CHECK(w.expected() == doctest::Approx(80));
  }
}

TEST_SUITE("rank_health: progress lines") {
  TEST_CASE("a rank's report, with the optional keys defaulted and unknown keys skipped") {
    const auto full = hetlaunch::parse_progress_line(
        R"({"rank": 3, "step": 120, "phase": "computed", "phase_seconds": 0.25, "window": 12, )"
        R"("samples_per_second": 812.5, "host": "a"})");
    REQUIRE(full);
    CHECK(full->rank == 3);
    CHECK(full->step == 120);
    CHECK(full->phase == rank_phase::computed);
    CHECK(full->phase_seconds == 0.25);
    CHECK(full->window == 12);
    CHECK(full->samples_per_second == 812.5);
    const auto least =
        hetlaunch::parse_progress_line(R"({"phase": "checkpointing", "step": 0, "rank": 0})");
    REQUIRE(least);
    CHECK(least->phase == rank_phase::checkpointing);
    CHECK(least->window == 0);
    CHECK(hetlaunch::progress_prefix == "HETLAUNCH_PROGRESS ");
    for (rank_phase p : {rank_phase::computing, rank_phase::computed, rank_phase::checkpointing})
      CHECK(hetlaunch::parse_progress_line("{\"rank\": 1, \"step\": 2, \"phase\": \"" +
                                           std::string(hetlaunch::phase_name(p)) + "\"}")
                ->phase == p);
  }
  TEST_CASE("anything else is refused with its column, as bad_progress") {
    const auto refused = [](std::string_view text, std::size_t column, std::string_view why) {
      const auto r = hetlaunch::parse_progress_line(text);
      CAPTURE(text);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == hetlaunch::errc::bad_progress);
      CHECK(r.error().column == column);
      CHECK(r.error().message.find(why) != std::string::npos);
    };
    refused("", 1, "expected '{'");
    refused("{}", 3, "no \"rank\"");
    refused(R"({"rank": 1, "step": 2})", 23, "no \"phase\"");
    refused(R"({"rank": 1, "phase": "computed"})", 33, "no \"step\"");
    refused(R"({"rank": -1, "step": 2, "phase": "computed"})", 12, "non-negative integer, got -1");
    refused(R"({"rank": 1, "step": 2.5, "phase": "computed"})", 24,
            "non-negative integer, got 2.5");
    refused(R"({"rank": 1, "step": 2, "phase": "waiting"})", 33, "unknown phase \"waiting\"");
    refused(R"({"rank": 1, "rank": 2})", 13, "\"rank\" is given twice");
    refused(R"({"rank": 1, "step": 2, "phase": "computed", "phase_seconds": -0.5})", 66,
            "non-negative number, got -0.5");
    refused(R"({"rank": 1, "step": 2, "phase": "computed"} x)", 45, "text after the object");
    refused(R"({"rank": "1", "step": 2, "phase": "computed"})", 10, "");
  }
  TEST_CASE("hostile: no text of any bytes crashes the reader") {
    std::mt19937 g(5);
    const std::string alphabet = "{}\":,0123456789.-e rankstepphasecomputed\x01\xff";
    for (int i = 0; i < 20000; ++i) {
      std::string text;
      const std::size_t n = g() % 60;
      for (std::size_t k = 0; k < n; ++k) text += alphabet[g() % alphabet.size()];
      const auto r = hetlaunch::parse_progress_line(text);
      if (!r) CHECK(r.error().code == hetlaunch::errc::bad_progress);
    }
  }
}
