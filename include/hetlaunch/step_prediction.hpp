// SPDX-License-Identifier: MIT
// hetlaunch: which nodes pay their way. From each node's measured rate (samples per second of one
// worker), each node's own work between steps (its optimizer's step, loop and loader) and the
// gradient all-reduce (of the whole job, and of the job without each node: an all-reduce is as
// slow as its slowest member), the predicted step of the whole job and of the job without each
// node: the global batch split again over the rest by their rates, and the step as long as its
// slowest rank's share over its rate plus its own work between steps, plus the all-reduce. A
// node whose removal shortens the step slows the job.
#ifndef HETLAUNCH_STEP_PREDICTION_HPP
#define HETLAUNCH_STEP_PREDICTION_HPP

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "cluster.hpp"
#include "shares.hpp"

namespace hetlaunch {

/// The predicted step of a job of some of the nodes.
struct predicted_step {
  std::optional<std::size_t> without;  ///< the node left out; none: the whole job
  double step_seconds = 0;
  /// Whether leaving that node out shortens the step (never for the whole job).
  bool slows_the_job = false;
  double allreduce_seconds = 0;  ///< the all-reduce the step counts
};

/// The longest of the ranks' share over their rate plus their node's `overhead_seconds`, with
/// `global_batch` split over `nodes` (their nproc and ceilings as given) by weights from `rates`
/// (one a node, samples per second of one worker, above 0), plus `allreduce_seconds`; none when
/// that split is refused, a figure of seconds is not 0 to max_measured_seconds, or a rank's
/// share over its rate is past it. `overhead_seconds`:
/// one a node, or empty for none.
[[nodiscard]] inline std::optional<double> predict_step(
    const cluster& nodes, const std::vector<double>& rates, int global_batch,
    double allreduce_seconds, const std::vector<double>& overhead_seconds = {}) {
  if (rates.size() != nodes.node_count() || nodes.node_count() == 0) return std::nullopt;
  if (!overhead_seconds.empty() && overhead_seconds.size() != nodes.node_count())
    return std::nullopt;
  const auto seconds = [](double v) { return v >= 0 && v <= max_measured_seconds; };
  if (!seconds(allreduce_seconds)) return std::nullopt;
  for (const double own : overhead_seconds)
    if (!seconds(own)) return std::nullopt;
  const auto weights = weights_from_rates(rates);
  if (!weights) return std::nullopt;
  cluster_builder weighted;
  for (std::size_t i = 0; i < nodes.node_count(); ++i) {
    node_spec n = nodes.node(i);
    n.weight = (*weights)[i];
    weighted.add(n);
  }
  const cluster split_over = weighted.finish();
  const auto split = split_batch(split_over, global_batch);
  if (!split) return std::nullopt;
  double slowest = 0;
  for (std::size_t i = 0; i < nodes.node_count(); ++i) {
    // Local rank 0 takes the most samples of its node.
    const rank_batch most = batch_of_rank((*split)[i], nodes.nproc(i), 0);
    const double share_seconds = most.batch / rates[i];
    // A rate so low that its share takes past max_measured_seconds is no measurement to plan by
    // (a rate of 1e-300 would predict a step of 1e300 s).
    if (!(share_seconds <= max_measured_seconds)) return std::nullopt;
    const double own = overhead_seconds.empty() ? 0.0 : overhead_seconds[i];
    slowest = std::max(slowest, share_seconds + own);
  }
  return slowest + allreduce_seconds;
}

/// The whole job's predicted step, then the job's without each node in turn (when it has more
/// than one), each marked when it is shorter than the whole job's. A job without a node whose
/// split is refused (the global batch cannot be split over the rest) is left out. The job
/// without node j has the all-reduce `allreduce_seconds_without[j]` (one a node; empty: the
/// whole job's, `allreduce_seconds`). O(N^2).
[[nodiscard]] inline std::vector<predicted_step> predict_steps(
    const cluster& nodes, const std::vector<double>& rates, int global_batch,
    double allreduce_seconds, const std::vector<double>& overhead_seconds = {},
    const std::vector<double>& allreduce_seconds_without = {}) {
  if (!allreduce_seconds_without.empty() && allreduce_seconds_without.size() != nodes.node_count())
    return {};
  for (const double allreduce : allreduce_seconds_without)
    if (!(allreduce >= 0 && allreduce <= max_measured_seconds)) return {};
  std::vector<predicted_step> out;
  const std::optional<double> whole =
      predict_step(nodes, rates, global_batch, allreduce_seconds, overhead_seconds);
  if (!whole) return out;
  out.push_back({std::nullopt, *whole, false, allreduce_seconds});
  if (nodes.node_count() < 2) return out;
  for (std::size_t left_out = 0; left_out < nodes.node_count(); ++left_out) {
    cluster_builder rest;
    std::vector<double> rest_rates, rest_overheads;
    for (std::size_t i = 0; i < nodes.node_count(); ++i)
      if (i != left_out) {
        rest.add(nodes.node(i));
        rest_rates.push_back(rates[i]);
        if (!overhead_seconds.empty()) rest_overheads.push_back(overhead_seconds[i]);
      }
    const double allreduce =
        allreduce_seconds_without.empty() ? allreduce_seconds : allreduce_seconds_without[left_out];
    const std::optional<double> without =
        predict_step(rest.finish(), rest_rates, global_batch, allreduce, rest_overheads);
    if (without) out.push_back({left_out, *without, *without < *whole, allreduce});
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_STEP_PREDICTION_HPP
