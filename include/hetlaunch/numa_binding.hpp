// SPDX-License-Identifier: MIT
// hetlaunch: the CPU binding modes a launch can ask for (torchrun's --numa-binding), by name.
#ifndef HETLAUNCH_NUMA_BINDING_HPP
#define HETLAUNCH_NUMA_BINDING_HPP

#include <optional>
#include <string_view>

namespace hetlaunch {

/// torchrun's --numa-binding modes; `none` binds nothing.
enum class numa_binding {
  none,
  node,    ///< every CPU of the GPU's NUMA node
  socket,  ///< every CPU of every NUMA node of the GPU's socket
  /// the node's physical cores split evenly among its GPUs, lower GPUs taking the extra
  exclusive,
  /// one last-level-cache group per GPU of the node, the largest groups first, cycling
  core_complex,
};

/// The mode's name as torchrun spells it ("node", "socket", "exclusive", "core-complex"; "none").
[[nodiscard]] constexpr std::string_view numa_binding_name(numa_binding mode) noexcept {
  switch (mode) {
    case numa_binding::node:
      return "node";
    case numa_binding::socket:
      return "socket";
    case numa_binding::exclusive:
      return "exclusive";
    case numa_binding::core_complex:
      return "core-complex";
    case numa_binding::none:
      break;
  }
  return "none";
}

/// The mode of that name (numa_binding_name's), or nothing.
[[nodiscard]] constexpr std::optional<numa_binding> numa_binding_from_name(
    std::string_view name) noexcept {
  for (numa_binding mode : {numa_binding::none, numa_binding::node, numa_binding::socket,
                            numa_binding::exclusive, numa_binding::core_complex})
    if (numa_binding_name(mode) == name) return mode;
  return std::nullopt;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_NUMA_BINDING_HPP
