// SPDX-License-Identifier: MIT
// calibration.hpp: the weights a measured job needs (exact decimals, the slowest node 1), and
// the line a calibrating script prints, read strictly.
#include <doctest/doctest.h>

#include <hetlaunch/calibration.hpp>
#include <hetlaunch/checkpoint_line.hpp>
#include <hetlaunch/weight.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {
using weight_texts = std::vector<std::string>;
std::string measurement_refusal(std::string_view text, std::size_t node_count) {
  const auto r = hetlaunch::parse_measurement(text, node_count);
  if (r) return "ok";
  return std::to_string(r.error().column) + ": " + r.error().message;
}
}  // namespace

TEST_SUITE("calibration") {
  TEST_CASE("weights are each rate over the slowest, to the millionth, the slowest 1") {
    CHECK(hetlaunch::weights_from_rates({300, 100, 150}).value() == weight_texts{"3", "1", "1.5"});
    CHECK(hetlaunch::weights_from_rates({10}).value() == weight_texts{"1"});
    CHECK(hetlaunch::weights_from_rates({1, 3}).value() == weight_texts{"1", "3"});
    CHECK(hetlaunch::weights_from_rates({3, 1.0000004}).value() == weight_texts{"2.999999", "1"});
    CHECK(hetlaunch::weights_from_rates({2.0000005, 1}).value() == weight_texts{"2.000001", "1"});
    CHECK(hetlaunch::weights_from_rates({1e300, 1e-300}).value() == weight_texts{"1000000", "1"});
  }

  TEST_CASE("property: every weight is one hetlaunch accepts, and the ratios hold to a millionth") {
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> rate(0.01, 5000);
    for (int round = 0; round < 2000; ++round) {
      std::vector<double> rates(1 + rng() % 8);
      for (double& r : rates) r = rate(rng);
      const auto weights = hetlaunch::weights_from_rates(rates);
      REQUIRE(weights);
      double slowest = rates[0];
      for (double r : rates) slowest = std::min(slowest, r);
      bool saw_one = false;
      for (std::size_t i = 0; i < rates.size(); ++i) {
        const hetlaunch::weight_check wc = hetlaunch::check_weight((*weights)[i]);
        REQUIRE(wc);
        CHECK(wc.micros >= hetlaunch::weight_scale);
        CHECK(std::fabs(static_cast<double>(wc.micros) / 1e6 - rates[i] / slowest) <=
              0.5e-6 + 1e-9);
        saw_one = saw_one || (*weights)[i] == "1";
      }
      CHECK(saw_one);
    }
  }

  TEST_CASE("a rate that is no speed is refused, naming the node") {
    CHECK(hetlaunch::weights_from_rates({}).error().message == "no node was measured");
    CHECK(hetlaunch::weights_from_rates({1, 0}).error().message ==
          "node 1: samples per second must be a positive finite number, got 0");
    CHECK(hetlaunch::weights_from_rates({-2}).error().code == hetlaunch::errc::bad_measurement);
    CHECK_FALSE(hetlaunch::weights_from_rates({std::numeric_limits<double>::quiet_NaN()}));
    CHECK_FALSE(hetlaunch::weights_from_rates({1, std::numeric_limits<double>::infinity()}));
  }

  TEST_CASE("the measured line: every node of the job, in any order, other keys skipped") {
    const auto m = hetlaunch::parse_measurement(
        R"({"step": 20, "nodes": [{"node": 1, "samples_per_second": 50.5, "weight": "1"},)"
        R"( {"weight": "2", "node": 0, "samples_per_second": 101, "extra": [1, {"a": null}]}], "v": true})",
        2);
    REQUIRE(m);
    CHECK(m->step == 20);
    REQUIRE(m->nodes.size() == 2);
    CHECK(m->nodes[0].node == 0);
    CHECK(m->nodes[0].samples_per_second == 101);
    CHECK(m->nodes[0].weight == "2");
    CHECK(m->nodes[1].samples_per_second == 50.5);
  }

  TEST_CASE("a malformed line, or one about other nodes, is refused with its column") {
    CHECK(measurement_refusal("", 1) == "1: expected '{'");
    CHECK(measurement_refusal("{}", 1) == "3: no \"step\" and no \"nodes\"");
    CHECK(measurement_refusal(R"({"step": 1})", 1) == "12: no \"nodes\"");
    CHECK(measurement_refusal(R"({"step": 0, "nodes": []})", 1) ==
          "11: step must be a positive integer, got 0");
    CHECK(measurement_refusal(R"({"step": 1.5, "nodes": []})", 1) ==
          "13: step must be a positive integer, got 1.5");
    CHECK(measurement_refusal(R"({"step": 1, "nodes": []})", 1) ==
          "25: node 0 of the job was not measured");
    CHECK(measurement_refusal(R"({"step": 1, "nodes": [{"node": 2, "samples_per_second": 1}]})",
                              2) == "32: node 2 is not a node of the job's 2");
    CHECK(measurement_refusal(
              R"({"step": 1, "nodes": [{"node": 0, "samples_per_second": 1}, {"node": 0, )"
              R"("samples_per_second": 2}]})",
              1) == "61: node 0 is measured twice");
    CHECK(measurement_refusal(R"({"step": 1, "nodes": [{"node": 0, "samples_per_second": -1}]})",
                              1) == "59: samples_per_second must be above 0, got -1");
    CHECK(measurement_refusal(R"({"step": 1, "nodes": [{"node": 0, "samples_per_second": nan}]})",
                              1) == "57: expected a number");
    CHECK(measurement_refusal(R"({"step": 1, "nodes": [{"node": 0}]})", 1) ==
          "34: a node without \"node\" or \"samples_per_second\"");
    CHECK(measurement_refusal(R"({"step": 1, "nodes": [{"node": 0, "samples_per_second": 1}]} x)",
                              1) == "62: text after the object");
    CHECK(measurement_refusal(R"({"step": "1", "nodes": []})", 1) == "10: expected a number");
    // Hostile nesting stops at a depth, never at the stack's end.
    std::string deep = R"({"step": 1, "x": )";
    for (int i = 0; i < 100000; ++i) deep += '[';
    CHECK(measurement_refusal(deep, 1).find("nested too deep") != std::string::npos);
    CHECK(measurement_refusal(R"({"step": 1, "s": "unterminated)", 1) ==
          "31: a string that does not end");
  }
}

TEST_SUITE("calibration") {
  TEST_CASE("the measured line's numbers are JSON's, its keys given once, a CR-LF end read") {
    const std::string head = R"({"step": 3, "nodes": [{"node": 0, "samples_per_second": )";
    for (const std::string bad : {"+5", "007", ".5", "5.", "1e", "--1", "5e+", "-.5"}) {
      CAPTURE(bad);
      const std::string refusal = measurement_refusal(head + bad + "}]}", 1);
      CHECK(refusal.find("not a JSON number") != std::string::npos);
    }
    for (const char* good : {"5", "0.5", "5e2", "5E-1", "12.25"})
      CHECK(measurement_refusal(head + good + "}]}", 1) == "ok");
    CHECK(measurement_refusal(R"({"step": 3, "step": 4, "nodes": []})", 0) ==
          "13: \"step\" is given twice");
    CHECK(measurement_refusal(
              R"({"step": 3, "nodes": [{"node": 0, "samples_per_second": 1, "node": 0}]})", 1) ==
          "60: \"node\" is given twice");
    CHECK(
        measurement_refusal(
            R"({"step": 3, "nodes": [{"node": 0, "samples_per_second": 1, "samples_per_second": 9}]})",
            1)
            .find("\"samples_per_second\" is given twice") != std::string::npos);
    CHECK(measurement_refusal(head + "5}]}\r", 1) == "ok");
  }
}

TEST_SUITE("the checkpoint line") {
  TEST_CASE("{\"step\": S} gives the step; other keys are skipped") {
    CHECK(hetlaunch::parse_checkpoint_line("{\"step\": 120}").value() == 120);
    CHECK(hetlaunch::parse_checkpoint_line("{\"step\": 0}").value() == 0);
    CHECK(
        hetlaunch::parse_checkpoint_line(" {\"dir\": \"ckpt/120\", \"step\": 120, \"x\": [1, {}]} ")
            .value() == 120);
    CHECK(hetlaunch::checkpoint_prefix == "HETLAUNCH_CHECKPOINT ");
  }
  TEST_CASE("anything else is refused with its column, as bad_checkpoint") {
    const auto refused = [](std::string_view text, std::size_t column, std::string_view why) {
      const auto r = hetlaunch::parse_checkpoint_line(text);
      CAPTURE(text);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == hetlaunch::errc::bad_checkpoint);
      CHECK(r.error().column == column);
      CHECK(r.error().message.find(why) != std::string::npos);
    };
    refused("", 1, "expected '{'");
    refused("{}", 3, "no \"step\"");
    refused("{\"dir\": \"x\"}", 13, "no \"step\"");
    refused("{\"step\": -1}", 12, "non-negative integer, got -1");
    refused("{\"step\": 1.5}", 13, "non-negative integer, got 1.5");
    refused("{\"step\": 1, \"step\": 2}", 13, "given twice");
    refused("{\"step\": 1} x", 13, "text after the object");
    refused("{\"step\": \"1\"}", 10, "");
  }
}
