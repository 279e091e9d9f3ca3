// SPDX-License-Identifier: MIT
// hetlaunch: which nodes pay their way. From each node's measured rate (samples per second of one
// worker) and each step's time outside the computation (the gradient all-reduce), the predicted
// step of the whole job and of the job without each node: the global batch split again over the
// rest by their rates, and the step as long as its slowest rank's share over its rate, plus the
// all-reduce. A node whose removal shortens the step slows the job.
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
};

/// The slowest rank's share over its rate, with `global_batch` split over `nodes` (their
/// nproc and ceilings as given) by weights from `rates` (one a node, samples per second of one
/// worker, above 0), plus `allreduce_seconds`; none when that split is refused.
[[nodiscard]] inline std::optional<double> predict_step(const cluster& nodes,
                                                        const std::vector<double>& rates,
                                                        int global_batch,
                                                        double allreduce_seconds) {
  if (rates.size() != nodes.node_count() || nodes.node_count() == 0) return std::nullopt;
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
    slowest = std::max(slowest, most.batch / rates[i]);
  }
  return slowest + allreduce_seconds;
}

/// The whole job's predicted step, then the job's without each node in turn (when it has more
/// than one), each marked when it is shorter than the whole job's. A job without a node whose
/// split is refused (the global batch cannot be split over the rest) is left out. O(N^2).
[[nodiscard]] inline std::vector<predicted_step> predict_steps(const cluster& nodes,
                                                               const std::vector<double>& rates,
                                                               int global_batch,
                                                               double allreduce_seconds) {
  std::vector<predicted_step> out;
  const std::optional<double> whole = predict_step(nodes, rates, global_batch, allreduce_seconds);
  if (!whole) return out;
  out.push_back({std::nullopt, *whole, false});
  if (nodes.node_count() < 2) return out;
  for (std::size_t left_out = 0; left_out < nodes.node_count(); ++left_out) {
    cluster_builder rest;
    std::vector<double> rest_rates;
    for (std::size_t i = 0; i < nodes.node_count(); ++i)
      if (i != left_out) {
        rest.add(nodes.node(i));
        rest_rates.push_back(rates[i]);
      }
    const std::optional<double> without =
        predict_step(rest.finish(), rest_rates, global_batch, allreduce_seconds);
    if (without) out.push_back({left_out, *without, *without < *whole});
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_STEP_PREDICTION_HPP
