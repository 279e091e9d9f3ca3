// SPDX-License-Identifier: MIT
// hetlaunch: the names of the variables a launcher delivers to torchrun and its workers, written
// once, and which of them the launch owns. A variable the launch owns is set from the plan (or
// left unset when the plan has no value for it); a user's --env, env file or inherited
// environment may not give it another value, or a worker would compute a wrong share.
#ifndef HETLAUNCH_WORKER_VARIABLES_HPP
#define HETLAUNCH_WORKER_VARIABLES_HPP

#include <array>
#include <string_view>

namespace hetlaunch {
namespace variables {

/// B, the samples of one optimizer step over the whole job (set only with a global batch).
inline constexpr std::string_view global_batch = "HETLAUNCH_GLOBAL_BATCH";
/// n_i, the node's samples of every step.
inline constexpr std::string_view node_batch = "HETLAUNCH_NODE_BATCH";
/// o_i, where the node's samples start within the step.
inline constexpr std::string_view node_batch_offset = "HETLAUNCH_NODE_BATCH_OFFSET";
/// The node's host as the plan names it (a spare's on a spare), set with the work share: the
/// sampler keeps what it learned of each node's speed by host, so that a checkpoint loads on
/// another topology (fewer nodes, a spare, a node back).
inline constexpr std::string_view node_host = "HETLAUNCH_NODE_HOST";
/// M, the most samples one of the node's workers takes in one forward (its memory ceiling): set
/// only for a node that has one.
inline constexpr std::string_view max_batch = "HETLAUNCH_MAX_BATCH";
/// The attempt of a job started with restarts: 0 first, then 1, 2, ...
inline constexpr std::string_view restart_count = "HETLAUNCH_RESTART_COUNT";
/// N, the steps a worker's sampler measures before rank 0 reports its rates (`hetlaunch
/// calibrate`'s HETLAUNCH_MEASURED line) and the sampler stops.
inline constexpr std::string_view calibrate_steps = "HETLAUNCH_CALIBRATE_STEPS";
/// How often each rank reports its progress (seconds), set only by a launcher that judges slow
/// and hung ranks (`hetlaunch run --hang-timeout`).
inline constexpr std::string_view progress_seconds = "HETLAUNCH_PROGRESS_SECONDS";
/// "rebalance": what a launcher does about a slow rank (`hetlaunch run --on-slow rebalance`); a
/// sampler that does not rebalance by itself then rebalances every window, so that work moves off
/// a rank that slowed down at the next window.
inline constexpr std::string_view on_slow = "HETLAUNCH_ON_SLOW";
/// The least compute capability over the job's GPUs ("7.5"), as preflight found it (`hetlaunch
/// run --preflight`): a script picks kernels every GPU of the job can run.
inline constexpr std::string_view min_compute_capability = "HETLAUNCH_MIN_COMPUTE_CAPABILITY";
/// "1" when every GPU of the job has bf16 (capability 8.0 or more), "0" when one has not, as
/// preflight found it: a script picks its precision for the whole job.
inline constexpr std::string_view bf16 = "HETLAUNCH_BF16";
/// The job's tasks a node (SLURM_TASKS_PER_NODE's form), kept by a batch script for its steps.
inline constexpr std::string_view tasks_per_node = "HETLAUNCH_TASKS_PER_NODE";
/// A JobSet pod's node index within its group.
inline constexpr std::string_view pod_index = "HETLAUNCH_POD_INDEX";
/// torch 2.5+ computes ranks as if every node ran this node's count when it is 1: never set in a
/// job whose nodes differ.
inline constexpr std::string_view worker_identical = "TORCH_ELASTIC_WORKER_IDENTICAL";

/// The work share's variables: set from the plan's global batch, and removed from an inherited
/// environment when the plan has none (a shell that once evaluated `hetlaunch env
/// --global-batch 64`, or Slurm's --export=ALL, must not hand a share to a job without one).
inline constexpr std::array<std::string_view, 4> share = {global_batch, node_batch,
                                                          node_batch_offset, node_host};
/// The variables the launch owns: the work share's, the node's ceiling, the restart count a
/// launcher with restarts sets for each attempt, the calibration steps only `hetlaunch
/// calibrate` sets (inherited, it would end a real job after N steps as a success), and the
/// progress interval only a launcher that reads the ranks' progress sets (inherited, every rank
/// would print lines nobody reads), what the launcher does about a slow rank (inherited, a job
/// would rebalance that never asked to), and what preflight found of the job's GPUs (inherited,
/// a job on older GPUs would pick bf16 from another job's).
inline constexpr std::array<std::string_view, 11> owned = {
    global_batch,  node_batch,      node_batch_offset, node_host, max_batch,
    restart_count, calibrate_steps, progress_seconds,  on_slow,   min_compute_capability,
    bf16};

}  // namespace variables

/// Whether `name` is a variable the launch owns (variables::owned): no --env, env file or
/// inherited environment may set it.
[[nodiscard]] constexpr bool is_owned_variable(std::string_view name) noexcept {
  for (std::string_view owned : variables::owned)
    if (name == owned) return true;
  return false;
}

/// Whether `name` is one of the work share's variables (variables::share).
[[nodiscard]] constexpr bool is_share_variable(std::string_view name) noexcept {
  for (std::string_view v : variables::share)
    if (name == v) return true;
  return false;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_WORKER_VARIABLES_HPP
