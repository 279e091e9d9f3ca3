// SPDX-License-Identifier: MIT
// step_prediction.hpp: which nodes pay their way. The step is the longest of the ranks' share
// over their rate plus their node's own work between steps, plus the all-reduce; a node whose
// removal shortens it slows the job.
#include <doctest/doctest.h>

#include <hetlaunch/calibration.hpp>
#include <hetlaunch/step_prediction.hpp>

#include <cmath>
#include <optional>
#include <vector>

namespace {
hetlaunch::cluster three() { return hetlaunch::cluster{{"a", 1}, {"b", 1}, {"c", 1}}; }
}  // namespace

TEST_SUITE("step_prediction") {
  TEST_CASE("the slowest rank's share over its rate, plus the all-reduce") {
    // 60 samples at 3:1 over two workers: 45 and 15, each 1.5 s at 30 and 10 samples/s.
    const auto step =
        hetlaunch::predict_step(hetlaunch::cluster{{"a", 1}, {"b", 1}}, {30, 10}, 60, 0.25);
    REQUIRE(step);
    CHECK(*step == doctest::Approx(1.75));
  }

  TEST_CASE("a node's workers share its samples: its first local rank takes the most") {
    // 7 samples on one node of 2 workers at 1 sample/s: local rank 0 takes 4.
    const auto step = hetlaunch::predict_step(hetlaunch::cluster{{"a", 2}}, {1}, 7, 0);
    REQUIRE(step);
    CHECK(*step == doctest::Approx(4.0));
  }

  TEST_CASE("a node at 1/30 of the others' speed slows the job; the others pay their way") {
    const auto p = hetlaunch::predict_steps(three(), {30, 10, 1}, 60, 0.05);
    REQUIRE(p.size() == 4);
    CHECK(!p[0].without);
    CHECK(p[0].step_seconds == doctest::Approx(2.05));  // c gets 2 samples: 2 s
    CHECK(*p[1].without == 0);
    CHECK(!p[1].slows_the_job);
    CHECK(!p[2].slows_the_job);
    CHECK(*p[3].without == 2);
    CHECK(p[3].slows_the_job);
    CHECK(p[3].step_seconds == doctest::Approx(1.55));
  }

  TEST_CASE("property: removing a node never shortens a job of equal nodes whose batch divides") {
    for (std::size_t n = 2; n <= 6; ++n) {
      hetlaunch::cluster_builder b;
      std::vector<double> rates;
      for (std::size_t i = 0; i < n; ++i) {
        b.add(std::string("h").append(std::to_string(i)), 1);
        rates.push_back(10);
      }
      const auto p = hetlaunch::predict_steps(b.finish(), rates, 60 * 7 * 11, 0.1);
      REQUIRE(p.size() == n + 1);
      for (std::size_t k = 1; k < p.size(); ++k) CHECK(!p[k].slows_the_job);
    }
  }

  TEST_CASE("a node's own work between steps delays every rank: the step waits for it") {
    // 90 samples at 30:10:5: c's share takes 2.2 s, the longest. Without c, a and b take 2.3 s:
    // c pays its way while every node's own work between steps is nothing.
    const auto bare = hetlaunch::predict_steps(three(), {30, 10, 5}, 90, 0.05);
    REQUIRE(bare.size() == 4);
    CHECK(bare[0].step_seconds == doctest::Approx(2.2 + 0.05));
    CHECK(bare[3].step_seconds == doctest::Approx(2.3 + 0.05));
    CHECK(!bare[3].slows_the_job);
    // c's optimizer and loop take 0.5 s a step, a's and b's 0.1 s: every rank waits for c.
    const std::vector<double> own{0.1, 0.1, 0.5};
    const auto p = hetlaunch::predict_steps(three(), {30, 10, 5}, 90, 0.05, own);
    REQUIRE(p.size() == 4);
    CHECK(p[0].step_seconds == doctest::Approx(2.2 + 0.5 + 0.05));
    CHECK(*p[3].without == 2);
    CHECK(p[3].step_seconds == doctest::Approx(2.3 + 0.1 + 0.05));
    CHECK(p[3].slows_the_job);
  }

  TEST_CASE("an all-reduce as slow as its slowest member: the job without it reduces faster") {
    // c's network makes the job's all-reduce 0.5 s; without c, a and b reduce in 0.05 s.
    const std::vector<double> without{0.5, 0.5, 0.05};
    const auto p = hetlaunch::predict_steps(three(), {30, 10, 5}, 90, 0.5, {}, without);
    REQUIRE(p.size() == 4);
    CHECK(p[0].step_seconds == doctest::Approx(2.2 + 0.5));
    CHECK(p[0].allreduce_seconds == doctest::Approx(0.5));
    CHECK(p[1].allreduce_seconds == doctest::Approx(0.5));
    CHECK(p[3].step_seconds == doctest::Approx(2.3 + 0.05));
    CHECK(p[3].allreduce_seconds == doctest::Approx(0.05));
    CHECK(p[3].slows_the_job);
    // One a node, each 0 to max_measured_seconds, or nothing is predicted.
    CHECK(hetlaunch::predict_steps(three(), {30, 10, 5}, 90, 0.5, {}, {0.5, 0.5}).empty());
    CHECK(hetlaunch::predict_steps(three(), {30, 10, 5}, 90, 0.5, {}, {0.5, -1, 0.5}).empty());
    CHECK(hetlaunch::predict_steps(three(), {30, 10, 5}, 90, -0.5).empty());
    CHECK(hetlaunch::predict_steps(three(), {30, 10, 5}, 90, std::nan("")).empty());
  }

  TEST_CASE("property: what is not given is as its default spelled out") {
    // No overheads: every node's 0. No all-reduce apart: the whole job's for each node.
    for (int batch = 3; batch <= 90; ++batch) {
      const auto bare = hetlaunch::predict_steps(three(), {7, 3, 1}, batch, 0.01);
      const auto spelled =
          hetlaunch::predict_steps(three(), {7, 3, 1}, batch, 0.01, {0, 0, 0}, {0.01, 0.01, 0.01});
      REQUIRE(bare.size() == spelled.size());
      for (std::size_t k = 0; k < bare.size(); ++k) {
        CHECK(bare[k].step_seconds == spelled[k].step_seconds);
        CHECK(bare[k].slows_the_job == spelled[k].slows_the_job);
        CHECK(bare[k].allreduce_seconds == spelled[k].allreduce_seconds);
      }
    }
  }

  TEST_CASE("property: more of one node's own work never shortens a step") {
    for (int extra = 0; extra <= 20; ++extra) {
      const std::vector<double> less{0.01, 0.01, 0.01};
      const std::vector<double> more{0.01, 0.01, 0.01 + 0.05 * extra};
      const auto a = hetlaunch::predict_step(three(), {5, 5, 2}, 60, 0.02, less);
      const auto b = hetlaunch::predict_step(three(), {5, 5, 2}, 60, 0.02, more);
      REQUIRE(a);
      REQUIRE(b);
      CHECK(*b >= *a);
    }
  }

  TEST_CASE("overheads that are not one a node, negative or not a number predict nothing") {
    CHECK(!hetlaunch::predict_step(three(), {1, 1, 1}, 3, 0, {0.1, 0.1}));
    CHECK(!hetlaunch::predict_step(three(), {1, 1, 1}, 3, 0, {0.1, -0.1, 0.1}));
    CHECK(!hetlaunch::predict_step(three(), {1, 1, 1}, 3, 0, {0.1, std::nan(""), 0.1}));
    CHECK(!hetlaunch::predict_step(three(), {1, 1, 1}, 3, 0, {0.1, HUGE_VAL, 0.1}));
    CHECK(hetlaunch::predict_steps(three(), {1, 1, 1}, 3, 0, {0.1, 0.1}).empty());
  }

  TEST_CASE("a rate whose share would take past max_measured_seconds predicts nothing") {
    // 1 sample at 1e-300 samples/s would be a step of 1e300 s; at 1e-9, exactly 1e9 s is kept.
    CHECK(!hetlaunch::predict_step(hetlaunch::cluster{{"a", 1}}, {1e-300}, 1, 0));
    const auto longest = hetlaunch::predict_step(hetlaunch::cluster{{"a", 1}}, {1e-9}, 1, 0);
    REQUIRE(longest);
    CHECK(*longest == doctest::Approx(1e9));
    // In a job, such a node leaves the whole job unpredicted, so nothing is compared with it.
    const auto p =
        hetlaunch::predict_steps(hetlaunch::cluster{{"a", 1}, {"b", 1}}, {50, 1e-300}, 6, 0.01);
    CHECK(p.empty());
  }

  TEST_CASE("a split the plan refuses predicts nothing, never an error") {
    // 2 samples cannot be split over three nodes; 3 can, and over any two of them too.
    CHECK(hetlaunch::predict_steps(three(), {1, 1, 1}, 2, 0).empty());
    CHECK(hetlaunch::predict_steps(three(), {1, 1, 1}, 3, 0).size() == 4);
    CHECK(hetlaunch::predict_steps(three(), {1, 1}, 60, 0).empty());     // rates for two of three
    CHECK(hetlaunch::predict_steps(three(), {1, 1, 0}, 60, 0).empty());  // a rate that is no speed
  }

  TEST_CASE("the measured line's all-reduce is read, checked, and optional") {
    const auto m = hetlaunch::parse_measurement(
        R"({"step": 20, "nodes": [{"node": 0, "samples_per_second": 3}], "allreduce_seconds": 0.012})",
        1);
    REQUIRE(m);
    CHECK(*m->allreduce_seconds == doctest::Approx(0.012));
    const auto without = hetlaunch::parse_measurement(
        R"({"step": 20, "nodes": [{"node": 0, "samples_per_second": 3}]})", 1);
    REQUIRE(without);
    CHECK(!without->allreduce_seconds);
    const auto negative = hetlaunch::parse_measurement(
        R"({"step": 20, "nodes": [{"node": 0, "samples_per_second": 3}], "allreduce_seconds": -1})",
        1);
    REQUIRE(!negative);
    CHECK(negative.error().message.find("allreduce_seconds must be 0 or more") !=
          std::string::npos);
    const auto twice = hetlaunch::parse_measurement(
        R"({"step": 20, "allreduce_seconds": 1, "allreduce_seconds": 1, "nodes": [{"node": 0, "samples_per_second": 3}]})",
        1);
    REQUIRE(!twice);
    CHECK(twice.error().message.find("given twice") != std::string::npos);
  }

  TEST_CASE("each node's own work between steps is read, checked, and optional") {
    const auto m = hetlaunch::parse_measurement(
        R"({"step": 20, "nodes": [{"node": 0, "samples_per_second": 3, "overhead_seconds": 0.004},)"
        R"( {"node": 1, "samples_per_second": 1}]})",
        2);
    REQUIRE(m);
    CHECK(*m->nodes[0].overhead_seconds == doctest::Approx(0.004));
    CHECK(!m->nodes[1].overhead_seconds);
    CHECK(!m->nodes[0].allreduce_seconds_without);
    const auto apart = hetlaunch::parse_measurement(
        R"({"step": 20, "nodes": [{"node": 0, "samples_per_second": 3, "allreduce_seconds_without": 0.25}]})",
        1);
    REQUIRE(apart);
    CHECK(*apart->nodes[0].allreduce_seconds_without == doctest::Approx(0.25));
    const auto negative = hetlaunch::parse_measurement(
        R"({"step": 20, "nodes": [{"node": 0, "samples_per_second": 3, "allreduce_seconds_without": -1}]})",
        1);
    REQUIRE(!negative);
    CHECK(negative.error().message.find("allreduce_seconds_without must be 0 or more") !=
          std::string::npos);
    for (const char* bad : {"-0.5", "1e10", "\"1\""}) {
      const auto refused = hetlaunch::parse_measurement(
          std::string(
              R"({"step": 20, "nodes": [{"node": 0, "samples_per_second": 3, "overhead_seconds": )") +
              bad + "}]}",
          1);
      REQUIRE(!refused);
    }
    const auto twice = hetlaunch::parse_measurement(
        R"({"step": 20, "nodes": [{"node": 0, "samples_per_second": 3, "overhead_seconds": 1, "overhead_seconds": 1}]})",
        1);
    REQUIRE(!twice);
    CHECK(twice.error().message.find("given twice") != std::string::npos);
  }
}
