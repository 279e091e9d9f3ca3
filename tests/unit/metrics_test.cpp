// SPDX-License-Identifier: MIT
// metrics.hpp: a job as Prometheus' text exposition, read back here by the format's own rules
// (each family once, HELP and TYPE before its samples, label values quoted and escaped, no
// timestamps). promtool and node_exporter read the file `run --metrics` writes in
// tests/cli/metrics_test.py.
#include <doctest/doctest.h>

#include <hetlaunch/metrics.hpp>

#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace {
using hetlaunch::job_metrics;
using hetlaunch::metrics_exposition;

// One sample read back: its family, its labels unescaped, its value as written.
struct sample {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string value;
};

// Reads an exposition as the text format defines it; fails the test on a line it does not allow.
std::vector<sample> read_back(const std::string& text) {
  std::vector<sample> out;
  std::set<std::string> closed;  // families whose samples have ended: seen again is an error
  std::string current, typed;
  std::size_t at = 0;
  REQUIRE((!text.empty() && text.back() == '\n'));
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      if (name != current) {
        REQUIRE(closed.insert(name).second);
        current = name;
      }
      if (line[2] == 'T') typed = name;
      continue;
    }
    sample s;
    std::size_t k = 0;
    while (k < line.size() && line[k] != '{' && line[k] != ' ') s.name += line[k++];
    REQUIRE(s.name == current);  // a sample follows its own family's HELP and TYPE
    REQUIRE(typed == current);
    if (k < line.size() && line[k] == '{') {
      ++k;
      while (line.at(k) != '}') {
        std::string key, value;
        while (line.at(k) != '=') key += line[k++];
        REQUIRE(line.at(++k) == '"');
        for (++k; line.at(k) != '"'; ++k) {
          if (line[k] != '\\') {
            value += line[k];
            continue;
          }
          const char escaped = line.at(++k);
          REQUIRE((escaped == '\\' || escaped == '"' || escaped == 'n'));
          value += escaped == 'n' ? '\n' : escaped;
        }
        ++k;
        if (line.at(k) == ',') ++k;
        REQUIRE(s.labels.emplace(key, value).second);
      }
      ++k;
    }
    REQUIRE(line.at(k) == ' ');
    s.value = line.substr(k + 1);
    REQUIRE(s.value.find(' ') == std::string::npos);  // no timestamp
    out.push_back(s);
  }
  return out;
}

job_metrics two_nodes() {
  job_metrics m;
  m.attempt = 1;
  m.world_size = 3;
  m.restarts = 1;
  m.nodes = {{0, "a100-0", true}, {1, "t4-0", false}};
  m.ranks = {{0, 0, "a100-0", 40, 120.5, 118, 0.25},
             {1, 0, "a100-0", 40, 0, 0, 0.5},
             {2, 1, "t4-0", 39, 30, 60, 12}};
  return m;
}

const sample* find(const std::vector<sample>& all, std::string_view name, std::string_view rank) {
  for (const sample& s : all)
    if (s.name == name && (rank.empty() || s.labels.at("rank") == rank)) return &s;
  return nullptr;
}
}  // namespace

TEST_SUITE("metrics") {
  TEST_CASE("the job's own values, then a series a node and a rank, each family once") {
    const std::vector<sample> all = read_back(metrics_exposition(two_nodes()));
    CHECK(find(all, "hetlaunch_job_attempt", "")->value == "1");
    CHECK(find(all, "hetlaunch_job_world_size", "")->value == "3");
    CHECK(find(all, "hetlaunch_restarts_total", "")->value == "1");
    std::vector<std::string> up;
    for (const sample& s : all)
      if (s.name == "hetlaunch_node_up")
        up.push_back(s.labels.at("node") + " " + s.labels.at("host") + " " + s.value);
    CHECK(up == std::vector<std::string>{"0 a100-0 1", "1 t4-0 0"});
    const sample* step = find(all, "hetlaunch_rank_step", "2");
    REQUIRE(step);
    CHECK(step->value == "39");
    CHECK(step->labels.at("node") == "1");
    CHECK(step->labels.at("host") == "t4-0");
    CHECK(find(all, "hetlaunch_rank_samples_per_second", "0")->value == "120.5");
    CHECK(find(all, "hetlaunch_rank_expected_samples_per_second", "2")->value == "60");
    CHECK(find(all, "hetlaunch_rank_seconds_since_progress", "2")->value == "12");
  }

  TEST_CASE("a rank without a window yet has no rate, and none expected: no alert compares them") {
    const std::vector<sample> all = read_back(metrics_exposition(two_nodes()));
    CHECK(find(all, "hetlaunch_rank_step", "1"));
    CHECK(find(all, "hetlaunch_rank_seconds_since_progress", "1"));
    CHECK_FALSE(find(all, "hetlaunch_rank_samples_per_second", "1"));
    CHECK_FALSE(find(all, "hetlaunch_rank_expected_samples_per_second", "1"));
  }

  TEST_CASE("the restarts are a counter, everything else a gauge") {
    const std::string text = metrics_exposition(two_nodes());
    CHECK(text.find("# TYPE hetlaunch_restarts_total counter\n") != std::string::npos);
    for (const char* gauge :
         {"hetlaunch_job_attempt", "hetlaunch_job_world_size", "hetlaunch_node_up",
          "hetlaunch_rank_step", "hetlaunch_rank_samples_per_second",
          "hetlaunch_rank_expected_samples_per_second", "hetlaunch_rank_seconds_since_progress"})
      CHECK(text.find(std::string("# TYPE ") + gauge + " gauge\n") != std::string::npos);
  }

  TEST_CASE("a job that has not started a node shows its families, with no series a node") {
    job_metrics m;
    const std::vector<sample> all = read_back(metrics_exposition(m));
    CHECK(all.size() == 3);
    CHECK(find(all, "hetlaunch_job_attempt", "")->value == "0");
  }

  TEST_CASE("values that are not finite are written by their names") {
    job_metrics m;
    m.ranks = {{0, 0, "h", 1, std::numeric_limits<double>::infinity(), 2,
                std::numeric_limits<double>::quiet_NaN()}};
    const std::vector<sample> all = read_back(metrics_exposition(m));
    CHECK(find(all, "hetlaunch_rank_samples_per_second", "0")->value == "+Inf");
    CHECK(find(all, "hetlaunch_rank_seconds_since_progress", "0")->value == "NaN");
  }

  TEST_CASE("property: any host name reads back as it was, whatever it holds") {
    std::mt19937 random(46);
    const std::string alphabet = "ab-.\\\"\n{},= 0";
    for (int round = 0; round < 2000; ++round) {
      job_metrics m;
      const std::size_t nodes = random() % 4;
      for (std::size_t i = 0; i < nodes; ++i) {
        std::string host;
        for (std::size_t k = random() % 12; k > 0; --k)
          host += alphabet[random() % alphabet.size()];
        m.nodes.push_back({i, host, random() % 2 == 0});
        m.ranks.push_back({static_cast<long long>(i), i, host, static_cast<long long>(random()),
                           static_cast<double>(random() % 1000) / 10.0,
                           static_cast<double>(random() % 1000) / 10.0, 0.5});
      }
      const std::vector<sample> all = read_back(metrics_exposition(m));
      for (const sample& s : all) {
        if (s.labels.empty()) continue;
        const std::size_t node = std::stoul(s.labels.at("node"));
        REQUIRE(node < nodes);
        CHECK(s.labels.at("host") == m.nodes[node].host);
      }
      // Every node and every rank's step and age: the series are all there.
      std::size_t steps = 0, up = 0;
      for (const sample& s : all) {
        steps += s.name == "hetlaunch_rank_step";
        up += s.name == "hetlaunch_node_up";
      }
      CHECK(steps == nodes);
      CHECK(up == nodes);
    }
  }

  TEST_CASE("the exposition grows linearly with the ranks") {
    job_metrics m;
    for (long long r = 0; r < 10000; ++r)
      m.ranks.push_back({r, static_cast<std::size_t>(r / 8), "node-with-a-long-name-0000", 1000000,
                         123.456, 120.5, 0.75});
    const std::string text = metrics_exposition(m);
    CHECK(text.size() < 10000 * 4 * 120);
    CHECK(read_back(text).size() == 3 + 4 * 10000);
  }
}
