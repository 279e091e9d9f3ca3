// SPDX-License-Identifier: MIT
// hetlaunch: errc, the stable code of every error the library reports.
#ifndef HETLAUNCH_ERRC_HPP
#define HETLAUNCH_ERRC_HPP

#include <string_view>

namespace hetlaunch {

/// What is wrong. Stable: values are never renumbered.
enum class errc : int {
  ok = 0,
  empty_cluster = 1,        // no nodes
  bad_nproc = 2,            // a node's nproc < 1
  world_size_overflow = 3,  // the sum of nproc exceeds INT_MAX (torch ranks are 32-bit)
  bad_host = 4,             // not an RFC 1123 name or IP literal (see host_issue)
  duplicate_host = 5,       // two nodes name the same host (case-insensitive)
  empty_role = 6,           // role ""
  bad_role = 7,  // a role torchrun's command line cannot carry (blank, control, leading '-')
  node_out_of_range = 8,          // a node index >= node_count()
  local_rank_out_of_range = 9,    // a local rank outside [0, nproc)
  global_rank_out_of_range = 10,  // a global rank outside [0, world_size)
  // Launch options (launch_options.hpp, torchrun_argv.hpp).
  bad_port = 11,                     // master_port outside 1..65535
  bad_master_addr = 12,              // master_addr not a valid host or IP literal
  missing_rdzv_id = 13,              // c10d without an rdzv_id
  empty_script = 14,                 // no training script
  empty_program = 15,                // no launcher program
  bad_max_restarts = 16,             // max_restarts < 0
  ranks_decided_at_rendezvous = 17,  // c10d: torchrun orders agents when they meet
  dash_flags_need_torch_2 = 18,      // --nproc-per-node spellings exist from torch 2.0
  too_few_processes = 19,            // accelerate --multi_gpu needs 2 processes or more
  // A worker's actual environment compared with the plan (check_worker_env).
  env_missing = 20,                         // a variable torchrun always sets is absent
  env_not_a_number = 21,                    // a variable that must be an integer is not
  world_size_mismatch = 22,                 // WORLD_SIZE differs from the plan
  group_rank_out_of_range = 23,             // GROUP_RANK is not a node of the plan
  local_world_size_mismatch = 24,           // LOCAL_WORLD_SIZE differs from the node's nproc
  rank_mismatch = 25,                       // RANK is not global_rank(GROUP_RANK, LOCAL_RANK)
  identical_workers_on_heterogeneous = 26,  // TORCH_ELASTIC_WORKER_IDENTICAL=1 breaks mixed nodes
  bad_rendezvous_timeout = 27,              // rendezvous_timeout < 0
  overriding_torchrun_arg = 28,  // an extra torchrun argument names a flag hetlaunch computes
  script_looks_like_option =
      29,  // a script starting with '-', which torchrun would read as its own option
  // Text inputs (parse_error::code); topology problems found while reading keep their codes above.
  bad_syntax = 30,      // the text is not in the format (a hostfile line, a host list, a count)
  limit_exceeded = 31,  // more hosts, bytes or devices than the stated limit
  count_mismatch = 32,  // a list of counts does not give one per host
  unknown_host = 33,    // a filter names a host or device the cluster does not have
  no_devices = 34,      // a filter leaves nothing to run on
  // Launching over ssh (ssh.hpp).
  bad_env_name = 35,    // a variable name a shell cannot set
  bad_kill_after = 36,  // ssh_options::kill_after outside 1..3600 seconds
  // Kubernetes (jobset.hpp).
  bad_name = 37,       // not a DNS label (lower-case letters, digits, '-'; a letter first)
  name_too_long = 38,  // a generated host name would pass 63 characters
  empty_image = 39,    // no container image
  bad_group = 40,      // a group without nodes or GPUs
  too_many_pods = 41,  // a group past an Indexed Job's 100,000 completions, or all past 2^20 pods
  virtual_local_rank =
      42,  // torchrun's --virtual-local-rank, whose workers the plan does not describe
  // text for other programs
  not_utf8 = 43,  // a text that must reach its reader as UTF-8 (Kubernetes) is not
  nul_byte = 44,  // a NUL byte, which no argument or variable can carry
  // Work shares (shares.hpp).
  bad_weight =
      45,  // a node weight that is not a decimal in (0, 1000000] with at most 6 fractional digits
  global_batch_too_small =
      46,                 // a global batch below the world size: some rank would get no sample
  bad_global_batch = 47,  // a negative global batch
  batch_mismatch = 48,    // a worker's HETLAUNCH_*BATCH* variable differs from the plan
  // CPU binding (cpu_binding.hpp).
  binding_entrypoint =
      49,  // with numa_binding, an extra torchrun argument that changes how workers start
  binding_not_carried = 50,  // numa_binding for a command that cannot carry it (accelerate's)
  // Variables (worker_variables.hpp).
  owned_variable =
      51,  // a user's variable that the launch sets itself (HETLAUNCH_GLOBAL_BATCH, ...)
  unplanned_share = 52,  // a work-share variable is set, but the plan has no global batch
  // Slurm batch scripts (slurm_batch.hpp).
  bad_sbatch_option = 53,       // not an sbatch option, or one whose value would be the next line
  shrink_needs_one_group = 54,  // exclude_failed in a job of several components
  bad_min_nodes = 55,           // min_nodes outside 1..the job's nodes
  // CPU binding (cpu_topology.hpp, cpu_binding.hpp; binding_error::code). A CPU or PCI list
  // that is not one is bad_syntax.
  bad_cpu_topology = 56,  // a file of the sysfs tree missing, unreadable or not as Linux writes it
  bad_visible_devices = 57,  // CUDA_VISIBLE_DEVICES names a GPU that cannot be bound
  no_binding = 58,           // the mode leaves a worker no CPU (or no GPU to take them from)
  bad_max_batch = 59,        // a node's ceiling (max_batch) is not a positive integer up to INT_MAX
  bad_measurement = 60,      // a HETLAUNCH_MEASURED line or a rate that cannot be a node's speed
  host_mismatch = 61,        // a worker's HETLAUNCH_NODE_HOST is not its node's host in the plan
  bad_checkpoint = 62,       // a HETLAUNCH_CHECKPOINT line that is not {"step": S}
  bad_progress = 63,         // a HETLAUNCH_PROGRESS line that is not a rank's progress report
  bad_worker_error = 64,     // a HETLAUNCH_ERROR line that is not a worker's error report
  bad_host_facts = 65,       // a host's preflight answer that is not its facts
};

/// A short stable name of the code: "bad_nproc".
constexpr std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::ok:
      return "ok";
    case errc::empty_cluster:
      return "empty_cluster";
    case errc::bad_nproc:
      return "bad_nproc";
    case errc::world_size_overflow:
      return "world_size_overflow";
    case errc::bad_host:
      return "bad_host";
    case errc::duplicate_host:
      return "duplicate_host";
    case errc::empty_role:
      return "empty_role";
    case errc::bad_role:
      return "bad_role";
    case errc::node_out_of_range:
      return "node_out_of_range";
    case errc::local_rank_out_of_range:
      return "local_rank_out_of_range";
    case errc::global_rank_out_of_range:
      return "global_rank_out_of_range";
    case errc::bad_port:
      return "bad_port";
    case errc::bad_master_addr:
      return "bad_master_addr";
    case errc::missing_rdzv_id:
      return "missing_rdzv_id";
    case errc::empty_script:
      return "empty_script";
    case errc::empty_program:
      return "empty_program";
    case errc::bad_max_restarts:
      return "bad_max_restarts";
    case errc::ranks_decided_at_rendezvous:
      return "ranks_decided_at_rendezvous";
    case errc::dash_flags_need_torch_2:
      return "dash_flags_need_torch_2";
    case errc::too_few_processes:
      return "too_few_processes";
    case errc::env_missing:
      return "env_missing";
    case errc::env_not_a_number:
      return "env_not_a_number";
    case errc::world_size_mismatch:
      return "world_size_mismatch";
    case errc::group_rank_out_of_range:
      return "group_rank_out_of_range";
    case errc::local_world_size_mismatch:
      return "local_world_size_mismatch";
    case errc::rank_mismatch:
      return "rank_mismatch";
    case errc::identical_workers_on_heterogeneous:
      return "identical_workers_on_heterogeneous";
    case errc::bad_rendezvous_timeout:
      return "bad_rendezvous_timeout";
    case errc::overriding_torchrun_arg:
      return "overriding_torchrun_arg";
    case errc::script_looks_like_option:
      return "script_looks_like_option";
    case errc::bad_syntax:
      return "bad_syntax";
    case errc::limit_exceeded:
      return "limit_exceeded";
    case errc::count_mismatch:
      return "count_mismatch";
    case errc::unknown_host:
      return "unknown_host";
    case errc::no_devices:
      return "no_devices";
    case errc::bad_env_name:
      return "bad_env_name";
    case errc::bad_kill_after:
      return "bad_kill_after";
    case errc::bad_name:
      return "bad_name";
    case errc::name_too_long:
      return "name_too_long";
    case errc::empty_image:
      return "empty_image";
    case errc::bad_group:
      return "bad_group";
    case errc::too_many_pods:
      return "too_many_pods";
    case errc::virtual_local_rank:
      return "virtual_local_rank";
    case errc::not_utf8:
      return "not_utf8";
    case errc::nul_byte:
      return "nul_byte";
    case errc::bad_weight:
      return "bad_weight";
    case errc::binding_entrypoint:
      return "binding_entrypoint";
    case errc::binding_not_carried:
      return "binding_not_carried";
    case errc::owned_variable:
      return "owned_variable";
    case errc::unplanned_share:
      return "unplanned_share";
    case errc::bad_sbatch_option:
      return "bad_sbatch_option";
    case errc::shrink_needs_one_group:
      return "shrink_needs_one_group";
    case errc::bad_min_nodes:
      return "bad_min_nodes";
    case errc::bad_cpu_topology:
      return "bad_cpu_topology";
    case errc::bad_visible_devices:
      return "bad_visible_devices";
    case errc::no_binding:
      return "no_binding";
    case errc::bad_max_batch:
      return "bad_max_batch";
    case errc::bad_measurement:
      return "bad_measurement";
    case errc::host_mismatch:
      return "host_mismatch";
    case errc::bad_checkpoint:
      return "bad_checkpoint";
    case errc::bad_progress:
      return "bad_progress";
    case errc::bad_worker_error:
      return "bad_worker_error";
    case errc::bad_host_facts:
      return "bad_host_facts";
    case errc::global_batch_too_small:
      return "global_batch_too_small";
    case errc::bad_global_batch:
      return "bad_global_batch";
    case errc::batch_mismatch:
      return "batch_mismatch";
  }
  return "unknown";
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_ERRC_HPP
