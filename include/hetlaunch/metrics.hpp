// SPDX-License-Identifier: MIT
// hetlaunch: a running job as a Prometheus text exposition (format 0.0.4), the file that
// node_exporter's textfile collector reads: the job's attempt, world size and restarts, whether
// each node runs, and each rank's step and rates against its own expected rate. A monitor alerts
// on a slow or hung rank from these alone, without reading the job's events.
#ifndef HETLAUNCH_METRICS_HPP
#define HETLAUNCH_METRICS_HPP

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "calibration.hpp"

namespace hetlaunch {

/// A node of the job as the metrics show it.
struct node_metrics {
  std::size_t node = 0;
  std::string host;
  bool up = false;  ///< its launcher runs (started, not yet ended)
};

/// A rank that reported its progress.
struct rank_metrics {
  long long rank = 0;
  std::size_t node = 0;
  std::string host;
  long long step = 0;
  double samples_per_second = 0;  ///< its last window's rate; 0: no window yet (not shown)
  double expected = 0;            ///< its own expected rate; 0: too few windows yet (not shown)
  double seconds_since_progress = 0;
};

/// Everything one exposition shows.
struct job_metrics {
  long long attempt = 0;  ///< 0 for the first attempt, as the events count them
  long long world_size = 0;
  long long restarts = 0;  ///< restarts of every kind so far (a failure's, a grow-back's, ...)
  std::vector<node_metrics> nodes;
  std::vector<rank_metrics> ranks;
};

namespace detail {
// A label value as the text format quotes it: backslash, double quote and line feed escaped.
inline void append_label_value(std::string& out, std::string_view v) {
  out += '"';
  for (const char ch : v) {
    if (ch == '\\' || ch == '"') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  out += '"';
}

// A sample value as the text format writes it: NaN, +Inf and -Inf by name.
inline std::string metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return number_text(v);
}

inline void append_family(std::string& out, std::string_view name, std::string_view type,
                          std::string_view help) {
  out += concat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

inline void append_rank_sample(std::string& out, std::string_view name, const rank_metrics& r,
                               std::string_view value) {
  out += concat(name, "{rank=\"", r.rank, "\",node=\"", r.node, "\",host=");
  append_label_value(out, r.host);
  out += concat("} ", value, "\n");
}
}  // namespace detail

/// The exposition of `m`: each family once, with HELP and TYPE, its samples together, no
/// timestamps (the textfile collector refuses them), and labels quoted as the format says. A
/// rank's rate appears once it has a window, its expected rate once it has one, so that an alert
/// comparing the two never fires on a rank still starting. O(nodes + ranks).
[[nodiscard]] inline std::string metrics_exposition(const job_metrics& m) {
  std::string out;
  out.reserve(512 + 96 * m.nodes.size() + 480 * m.ranks.size());
  detail::append_family(out, "hetlaunch_job_attempt", "gauge",
                        "The job's attempt, 0 for the first (hetlaunch run's events count alike).");
  out += detail::concat("hetlaunch_job_attempt ", m.attempt, "\n");
  detail::append_family(out, "hetlaunch_job_world_size", "gauge",
                        "Worker processes of the attempt running.");
  out += detail::concat("hetlaunch_job_world_size ", m.world_size, "\n");
  detail::append_family(out, "hetlaunch_restarts_total", "counter",
                        "Restarts of the job so far, of any reason.");
  out += detail::concat("hetlaunch_restarts_total ", m.restarts, "\n");
  detail::append_family(out, "hetlaunch_node_up", "gauge",
                        "1 while the node's launcher runs, else 0.");
  for (const node_metrics& n : m.nodes) {
    out += detail::concat("hetlaunch_node_up{node=\"", n.node, "\",host=");
    detail::append_label_value(out, n.host);
    out += n.up ? "} 1\n" : "} 0\n";
  }
  struct rank_family {
    std::string_view name, help;
    double rank_metrics::*field;
    bool zero_is_unknown;
  };
  static constexpr rank_family families[] = {
      {"hetlaunch_rank_step", "The step the rank last reported.", nullptr, false},
      {"hetlaunch_rank_samples_per_second",
       "The rank's samples per second of computation over its last window.",
       &rank_metrics::samples_per_second, true},
      {"hetlaunch_rank_expected_samples_per_second",
       "The rank's own expected rate: the median of its earlier healthy windows.",
       &rank_metrics::expected, true},
      {"hetlaunch_rank_seconds_since_progress", "Seconds since the rank's last progress report.",
       &rank_metrics::seconds_since_progress, false},
  };
  for (const rank_family& f : families) {
    detail::append_family(out, f.name, "gauge", f.help);
    for (const rank_metrics& r : m.ranks) {
      if (!f.field) {  // a step is a whole number, written whole
        detail::append_rank_sample(out, f.name, r, detail::concat(r.step));
        continue;
      }
      const double value = r.*f.field;
      if (f.zero_is_unknown && !(value > 0)) continue;
      detail::append_rank_sample(out, f.name, r, detail::metric_value(value));
    }
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_METRICS_HPP
