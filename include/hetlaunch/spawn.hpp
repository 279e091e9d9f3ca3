// SPDX-License-Identifier: MIT
// hetlaunch: starting workers without torchrun: their environment, their command and an envp block.
#ifndef HETLAUNCH_SPAWN_HPP
#define HETLAUNCH_SPAWN_HPP

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "cluster.hpp"
#include "worker_env.hpp"

namespace hetlaunch {

// direct_worker_env is in plan.hpp: it makes a plan and asks it.

/// Replaces the local rank in one script argument as torchrun does (Python's
/// string.Template.safe_substitute with local_rank): "${local_rank}" and "$local_rank" become the
/// number, "$$" becomes "$", anything else stays as it is.
[[nodiscard]] inline std::string substitute_local_rank(std::string_view arg, int local_rank) {
  std::string out;
  const std::string value = std::to_string(local_rank);
  const auto ident_char = [](char c, bool first) {
    return detail::is_alpha(c) || c == '_' || (!first && detail::is_digit(c));
  };
  std::size_t i = 0;
  while (i < arg.size()) {
    if (arg[i] != '$' || i + 1 == arg.size()) {
      out += arg[i++];
      continue;
    }
    const char next = arg[i + 1];
    if (next == '$') {
      out += '$';
      i += 2;
    } else if (next == '{') {
      std::size_t end = i + 2;
      while (end < arg.size() && ident_char(arg[end], end == i + 2)) ++end;
      if (end < arg.size() && arg[end] == '}' && arg.substr(i + 2, end - i - 2) == "local_rank") {
        out += value;
        i = end + 1;
      } else {
        out += arg[i++];
      }
    } else if (ident_char(next, true)) {
      std::size_t end = i + 1;
      while (end < arg.size() && ident_char(arg[end], end == i + 1)) ++end;
      if (arg.substr(i + 1, end - i - 1) == "local_rank")
        out += value;
      else
        out.append(arg.data() + i, end - i);
      i = end;
    } else {
      out += arg[i++];
    }
  }
  return out;
}

/// The command torchrun's agent runs for a worker, for launchers that start workers themselves:
/// {python, "-u", ("-m",) script, script_args with the local rank substituted}; with a
/// numa_binding, behind {bind_program, "bind", "--numa-binding", MODE, "--"}.
[[nodiscard]] inline std::vector<std::string> worker_argv(int local_rank,
                                                          const launch_options& options) {
  std::vector<std::string> argv;
  if (options.binding != numa_binding::none)
    argv = {options.bind_program, "bind", "--numa-binding",
            std::string(numa_binding_name(options.binding)), "--"};
  argv.insert(argv.end(), {options.python, "-u"});
  if (options.module) argv.push_back("-m");
  argv.push_back(options.script);
  for (const std::string& a : options.script_args)
    argv.push_back(substitute_local_rank(a, local_rank));
  return argv;
}

/// An environment block for execve / posix_spawn: `vars` over a base environment (usually
/// `environ`). A base entry is dropped when `vars` sets the same name, and so are the base's
/// TORCHELASTIC_* and TORCH_ELASTIC_WORKER_IDENTICAL, which describe some other launch, and
/// every variable the launch owns (variables::owned) that `vars` does not set: the rule of
/// launch_plan::try_node_variables.
/// envp() stays valid while this object lives and is not modified.
class spawn_environment {
  std::vector<std::string> entries_;
  std::vector<char*> pointers_;

 public:
  spawn_environment(const environment& vars, const char* const* base) {
    const auto overridden = [&vars](std::string_view name) {
      // An inherited owned variable would give the worker a share, a ceiling, an attempt or a
      // calibration the plan does not have.
      if (name.substr(0, 13) == "TORCHELASTIC_" || name == variables::worker_identical ||
          is_owned_variable(name))
        return true;
      for (const auto& v : vars)
        if (v.first == name) return true;
      return false;
    };
    for (const char* const* e = base; e && *e; ++e) {
      const std::string_view entry(*e);
      const std::size_t eq = entry.find('=');
      if (eq == std::string_view::npos || !overridden(entry.substr(0, eq)))
        entries_.emplace_back(entry);
    }
    for (const auto& v : vars) entries_.push_back(detail::concat(v.first, "=", v.second));
    for (std::string& s : entries_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  spawn_environment(const spawn_environment&) = delete;
  spawn_environment& operator=(const spawn_environment&) = delete;

  /// The null-terminated array of "NAME=value" strings.
  [[nodiscard]] char* const* envp() const noexcept { return pointers_.data(); }
  [[nodiscard]] const std::vector<std::string>& entries() const noexcept { return entries_; }
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_SPAWN_HPP
