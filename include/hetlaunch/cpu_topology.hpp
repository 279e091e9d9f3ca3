// SPDX-License-Identifier: MIT
// hetlaunch: a machine's CPUs, NUMA nodes, cores, caches and GPUs' PCI devices as Linux's sysfs
// describes them, read through a function the caller gives (the library opens no file).
#ifndef HETLAUNCH_CPU_TOPOLOGY_HPP
#define HETLAUNCH_CPU_TOPOLOGY_HPP

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/text.hpp"
#include "result.hpp"

namespace hetlaunch {

/// Why a CPU list, a topology or a binding could not be had: the library's one error, without a
/// line (`message` names what and where). Its code: bad_cpu_topology, bad_syntax (a CPU or PCI
/// list), bad_visible_devices, no_binding, or nul_byte for a text no file can hold. A sysfs
/// reader says why a file cannot be read as `binding_error{"cannot be read: ..."}`.
using binding_error = parse_error;

/// CPU numbers, ascending and distinct.
using cpu_list = std::vector<unsigned>;

/// The highest CPU number a list may name. Linux's own limit (NR_CPUS) is at most 8,192; the bound
/// keeps a hostile "0-4294967295" from taking gigabytes.
inline constexpr unsigned max_cpu_number = 65535;

namespace detail {

inline std::string_view trimmed(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n' ||
                           text.front() == '\r'))
    text.remove_prefix(1);
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

// A decimal of at most `max`, with an optional '-' when `negative_allowed`.
inline std::optional<long long> small_integer(std::string_view text, long long max,
                                              bool negative_allowed) {
  text = trimmed(text);
  const bool negative = negative_allowed && !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  long long value = 0;
  if (!parse_decimal(text, max, value)) return std::nullopt;
  return negative ? -value : value;
}

}  // namespace detail

/// A Linux CPU list ("0-3,8,10-11", as in sysfs's cpulist files and taskset -c): surrounding
/// blank space and a trailing newline are ignored, the empty list is valid. Numbers above
/// max_cpu_number, a range whose end is below its start, and anything but digits, '-' and ','
/// are errors.
[[nodiscard]] inline result<cpu_list, binding_error> parse_cpulist(std::string_view text) {
  const std::string_view list = detail::trimmed(text);
  std::vector<std::pair<unsigned, unsigned>> ranges;
  std::size_t start = 0;
  while (start < list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view item = detail::trimmed(list.substr(start, end - start));
    const std::size_t dash = item.find('-');
    const auto first = detail::small_integer(item.substr(0, dash), max_cpu_number, false);
    const auto last = dash == std::string_view::npos
                          ? first
                          : detail::small_integer(item.substr(dash + 1), max_cpu_number, false);
    if (!first || !last || *last < *first)
      return binding_error{
          detail::concat("not a CPU list: ", detail::quoted(text), " (at ", detail::quoted(item),
                         "; CPUs are numbered 0 to ", max_cpu_number, ")"),
          errc::bad_syntax};
    if (end + 1 == list.size())
      return binding_error{
          detail::concat("not a CPU list: ", detail::quoted(text), " (ends with ',')"),
          errc::bad_syntax};
    ranges.emplace_back(static_cast<unsigned>(*first), static_cast<unsigned>(*last));
    start = end + 1;
  }
  // Sorted ranges, merged as they are emitted: the work is bounded by the input and the CPU count.
  std::sort(ranges.begin(), ranges.end());
  cpu_list out;
  for (const auto& [first, last] : ranges)
    for (unsigned cpu = out.empty() ? first : std::max(first, out.back() + 1);
         cpu <= last && (out.empty() || cpu > out.back()); ++cpu)
      out.push_back(cpu);
  return out;
}

/// The list as Linux writes it: ascending, runs merged ("0-3,8,10-11"); "" for none.
[[nodiscard]] inline std::string format_cpulist(const cpu_list& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += detail::concat("-", cpus[j]);
    i = j + 1;
  }
  return out;
}

/// The CPUs in both lists.
[[nodiscard]] inline cpu_list cpu_intersection(const cpu_list& a, const cpu_list& b) {
  cpu_list out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

/// The CPUs in either list.
[[nodiscard]] inline cpu_list cpu_union(const cpu_list& a, const cpu_list& b) {
  cpu_list out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

/// A GPU as the node's driver numbers it: its physical index (nvidia-smi's, PCI bus order) and
/// its PCI address in sysfs's form ("0000:07:00.0").
struct gpu_device {
  unsigned index = 0;
  std::string pci;
  friend bool operator==(const gpu_device& a, const gpu_device& b) {
    return a.index == b.index && a.pci == b.pci;
  }
};

/// A PCI address in the form sysfs names it (`0000:3b:00.0`: a domain of at least 4 lower-case hex
/// digits, bus, device, function), from nvidia-smi's (`00000000:3B:00.0`, an 8-digit upper-case
/// domain) or sysfs's own.
[[nodiscard]] inline result<std::string, binding_error> sysfs_pci_address(
    std::string_view address) {
  const std::string_view a = detail::trimmed(address);
  const auto bad = [&] {
    return binding_error{
        detail::concat("not a PCI address: ", detail::quoted(address),
                       " (expected DOMAIN:BUS:DEVICE.FUNCTION, as 00000000:07:00.0)"),
        errc::bad_syntax};
  };
  const std::size_t c1 = a.find(':');
  const std::size_t c2 = c1 == std::string_view::npos ? c1 : a.find(':', c1 + 1);
  const std::size_t dot = c2 == std::string_view::npos ? c2 : a.find('.', c2 + 1);
  if (dot == std::string_view::npos) return bad();
  const auto hex = [](std::string_view part, std::size_t min_digits,
                      std::size_t max_digits) -> std::optional<std::string> {
    if (part.size() < min_digits || part.size() > max_digits) return std::nullopt;
    std::string out;
    for (char ch : part) {
      if (ch >= 'A' && ch <= 'F') ch = static_cast<char>(ch - 'A' + 'a');
      if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return std::nullopt;
      out += ch;
    }
    return out;
  };
  std::optional<std::string> domain = hex(a.substr(0, c1), 1, 8);
  const std::optional<std::string> bus = hex(a.substr(c1 + 1, c2 - c1 - 1), 2, 2);
  const std::optional<std::string> device = hex(a.substr(c2 + 1, dot - c2 - 1), 2, 2);
  const std::optional<std::string> function = hex(a.substr(dot + 1), 1, 1);
  if (!domain || !bus || !device || !function || (*function)[0] > '7') return bad();
  while (domain->size() > 4 && domain->front() == '0') domain->erase(0, 1);
  if (domain->size() < 4) domain->insert(0, 4 - domain->size(), '0');
  return detail::concat(*domain, ":", *bus, ":", *device, ".", *function);
}

/// The node's GPUs from `nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader`: one
/// "INDEX, ADDRESS" line each, blank lines ignored, sorted by index. A malformed line, an address
/// that is not one, or an index given twice is an error with its line and column.
[[nodiscard]] inline result<std::vector<gpu_device>> parse_gpu_pci_list(std::string_view text) {
  std::vector<gpu_device> gpus;
  std::size_t line_no = 0;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    ++line_no;
    start = end + 1;
    if (detail::trimmed(line).empty()) continue;
    const std::size_t comma = line.find(',');
    const auto index = comma == std::string_view::npos
                           ? std::nullopt
                           : detail::small_integer(line.substr(0, comma), 0x7fffffff, false);
    if (!index)
      return parse_error{
          line_no, 1,
          detail::concat("expected 'INDEX, PCI ADDRESS' (nvidia-smi --query-gpu=index,pci.bus_id "
                         "--format=csv,noheader), got ",
                         detail::quoted(line))};
    result<std::string, binding_error> pci = sysfs_pci_address(line.substr(comma + 1));
    if (!pci) return parse_error{line_no, comma + 2, pci.error().message};
    for (const gpu_device& g : gpus)
      if (g.index == static_cast<unsigned>(*index))
        return parse_error{line_no, 1, detail::concat("GPU ", *index, " is listed twice")};
    gpus.push_back({static_cast<unsigned>(*index), *std::move(pci)});
  }
  std::sort(gpus.begin(), gpus.end(),
            [](const gpu_device& a, const gpu_device& b) { return a.index < b.index; });
  return gpus;
}

/// What a sysfs tree says about the CPUs, the NUMA nodes and the GPUs' PCI devices. It is read
/// once (`read`); what the tree lacks or garbles is kept as the sentence that says so and is
/// reported only by a query that needs it, as a binding refuses only for what it depends on.
class cpu_topology {
 public:
  /// Reads the tree through `read_file(path)`, for paths relative to the sysfs root
  /// ("devices/system/node/possible"). It returns a file's text, or nothing for a file the tree
  /// lacks: a std::optional<std::string>, or a result<std::optional<std::string>, binding_error>
  /// whose error says why a file that is there cannot be read ("cannot be read: Is a directory"),
  /// which the queries then report after the file's path instead of calling it missing. Reads each GPU's
  /// `bus/pci/devices/ADDRESS/numa_node`, the possible NUMA nodes, the CPU list of each of them and
  /// of each GPU's node, every listed CPU's package, and the core (thread_siblings_list) and
  /// caches of the CPUs on the GPUs' nodes, which are all a binding of these GPUs asks for: pass
  /// the GPUs the workers see (visible_gpus), not necessarily all of the machine's.
  template <class ReadFile>
  [[nodiscard]] static cpu_topology read(ReadFile&& read_file,
                                         const std::vector<gpu_device>& gpus) {
    cpu_topology t;
    const auto missing = [](const std::string& path) {
      return binding_error{detail::concat("the CPU topology has no ", path),
                           errc::bad_cpu_topology};
    };
    // The file's text; nothing for a file the tree lacks; an error for one that is there but
    // cannot be read.
    using file_text = result<std::optional<std::string>, binding_error>;
    const auto text_at = [&](const std::string& path) -> file_text {
      auto text = read_file(path);
      if constexpr (std::is_same_v<std::decay_t<decltype(text)>, std::optional<std::string>>) {
        return file_text(std::move(text));
      } else {
        if (!text)
          return binding_error{
              detail::concat("the CPU topology's ", path, " ", text.error().message),
              errc::bad_cpu_topology};
        return file_text(std::move(*text));
      }
    };
    const auto garbled = [](const std::string& path, const std::string& text,
                            std::string_view expected) {
      return binding_error{
          detail::concat("the CPU topology's ", path, " holds ",
                         detail::quoted(detail::trimmed(text)), ", not ", expected),
          errc::bad_cpu_topology};
    };
    // A file holding a CPU list, an integer, or its text.
    const auto list_at = [&](const std::string& path) -> result<cpu_list, binding_error> {
      const file_text read = text_at(path);
      if (!read) return read.error();
      if (!*read) return missing(path);
      const std::optional<std::string>& text = *read;
      result<cpu_list, binding_error> cpus = parse_cpulist(*text);
      if (!cpus) return garbled(path, *text, "a CPU list");
      return cpus;
    };
    // The lowest CPU of a list. Many CPUs share one list (a core's siblings, a cache shared by a
    // package), which may name every CPU: each text is parsed once, so the work stays that of
    // reading the files, not of the CPUs times the length of their lists.
    // Each text's outcome: not a list (nullopt), the empty list (-1), or its lowest CPU.
    std::map<std::string, std::optional<long long>, std::less<>> lowest_of_text;
    const auto lowest_at =
        [&](const std::string& path) -> result<std::optional<unsigned>, binding_error> {
      const file_text read = text_at(path);
      if (!read) return read.error();
      if (!*read) return missing(path);
      const std::string& text = **read;
      auto known = lowest_of_text.find(text);
      if (known == lowest_of_text.end()) {
        const result<cpu_list, binding_error> cpus = parse_cpulist(text);
        std::optional<long long> outcome;
        if (cpus) outcome = cpus->empty() ? -1 : static_cast<long long>(cpus->front());
        known = lowest_of_text.emplace(text, outcome).first;
      }
      if (!known->second) return garbled(path, text, "a CPU list");
      if (*known->second < 0) return std::optional<unsigned>();
      return std::optional<unsigned>(static_cast<unsigned>(*known->second));
    };
    const auto integer_at = [&](const std::string& path) -> result<long long, binding_error> {
      const file_text read = text_at(path);
      if (!read) return read.error();
      if (!*read) return missing(path);
      const std::optional<std::string>& text = *read;
      const auto value = detail::small_integer(*text, 0x7fffffff, true);
      if (!value) return garbled(path, *text, "an integer");
      return *value;
    };

    for (const gpu_device& g : gpus) {
      const std::string path = detail::concat("bus/pci/devices/", g.pci, "/numa_node");
      result<long long, binding_error> node = integer_at(path);
      t.pci_numa_node_.emplace(g.pci, node ? result<int, binding_error>(static_cast<int>(*node))
                                           : result<int, binding_error>(node.error()));
    }
    t.possible_ = list_at("devices/system/node/possible");
    cpu_list nodes = t.possible_ ? *t.possible_ : cpu_list{};
    for (const auto& [pci, node] : t.pci_numa_node_)
      if (node) nodes = cpu_union(nodes, {static_cast<unsigned>(std::max(*node, 0))});
    cpu_list all, near_gpus;
    for (unsigned n : nodes) {
      result<cpu_list, binding_error> cpus =
          list_at(detail::concat("devices/system/node/node", n, "/cpulist"));
      if (cpus) all = cpu_union(all, *cpus);
      for (const auto& [pci, node] : t.pci_numa_node_)
        if (cpus && node && static_cast<unsigned>(std::max(*node, 0)) == n)
          near_gpus = cpu_union(near_gpus, *cpus);
      t.node_cpus_.emplace(n, std::move(cpus));
    }
    for (unsigned cpu : all) {
      const std::string dir = detail::concat("devices/system/cpu/cpu", cpu, "/");
      cpu_facts f{integer_at(dir + "topology/physical_package_id"), not_read(cpu), not_read(cpu)};
      if (std::binary_search(near_gpus.begin(), near_gpus.end(), cpu)) {
        const std::string siblings = dir + "topology/thread_siblings_list";
        const result<std::optional<unsigned>, binding_error> core = lowest_at(siblings);
        if (!core)
          f.core = core.error();
        else if (!*core)
          f.core = garbled(siblings, "", "a CPU list");
        else
          f.core = **core;
        f.cache_group = largest_cache(text_at, lowest_at, dir, cpu);
      }
      t.cpus_.emplace(cpu, std::move(f));
    }
    t.all_ = std::move(all);
    return t;
  }

  /// devices/system/node/possible.
  [[nodiscard]] result<cpu_list, binding_error> possible_numa_nodes() const { return possible_; }

  /// devices/system/node/nodeN/cpulist.
  [[nodiscard]] result<cpu_list, binding_error> numa_node_cpus(unsigned node) const {
    const auto it = node_cpus_.find(node);
    if (it == node_cpus_.end())
      return binding_error{
          detail::concat("the CPU topology has no devices/system/node/node", node, "/cpulist"),
          errc::bad_cpu_topology};
    return it->second;
  }

  /// The NUMA node sysfs gives the PCI device (bus/pci/devices/ADDRESS/numa_node), which is -1
  /// on machines with one node.
  [[nodiscard]] result<int, binding_error> pci_numa_node(const std::string& pci) const {
    const auto it = pci_numa_node_.find(pci);
    if (it == pci_numa_node_.end())
      return binding_error{
          detail::concat("the CPU topology has no bus/pci/devices/", pci, "/numa_node"),
          errc::bad_cpu_topology};
    return it->second;
  }

  /// topology/physical_package_id: the CPU's socket.
  [[nodiscard]] result<long long, binding_error> package_of(unsigned cpu) const {
    const auto it = cpus_.find(cpu);
    if (it == cpus_.end()) return not_listed(cpu);
    return it->second.package;
  }

  /// The physical core, named by the lowest CPU of its thread_siblings_list (for CPUs on a GPU's
  /// NUMA node).
  [[nodiscard]] result<unsigned, binding_error> core_of(unsigned cpu) const {
    const auto it = cpus_.find(cpu);
    if (it == cpus_.end()) return not_listed(cpu);
    return it->second.core;
  }

  /// The group of CPUs sharing the CPU's highest-level data or unified cache, named by the lowest
  /// CPU of that cache's shared_cpu_list (for CPUs on a GPU's NUMA node).
  [[nodiscard]] result<unsigned, binding_error> cache_group_of(unsigned cpu) const {
    const auto it = cpus_.find(cpu);
    if (it == cpus_.end()) return not_listed(cpu);
    return it->second.cache_group;
  }

  /// Every CPU of the NUMA nodes read.
  [[nodiscard]] const cpu_list& all_cpus() const noexcept { return all_; }

 private:
  struct cpu_facts {
    result<long long, binding_error> package;
    result<unsigned, binding_error> core;
    result<unsigned, binding_error> cache_group;
  };

  static binding_error not_read(unsigned cpu) {
    return binding_error{
        detail::concat("CPU ", cpu,
                       " is on no GPU's NUMA node, so its core and caches were not read"),
        errc::bad_cpu_topology};
  }
  static binding_error not_listed(unsigned cpu) {
    return binding_error{
        detail::concat("CPU ", cpu, " is in no NUMA node's cpulist of the CPU topology"),
        errc::bad_cpu_topology};
  }

  // cache/index0, index1, ... (Linux numbers them without gaps): the first Unified or Data cache
  // of the highest level, as torch's binding code picks it.
  // `text_at(path)`: a file's text or why there is none; `lowest_at(path)`: a list's lowest CPU.
  template <class TextAt, class LowestAt>
  static result<unsigned, binding_error> largest_cache(const TextAt& text_at,
                                                       const LowestAt& lowest_at,
                                                       const std::string& dir, unsigned cpu) {
    long long best_level = -1;
    std::optional<std::string> best;
    for (int index = 0; index < 64; ++index) {
      const std::string cache = detail::concat(dir, "cache/index", index, "/");
      const auto type = text_at(cache + "type");
      // A file that is there but cannot be read is an error wherever it is; no index0 at all is
      // one too, and the first index past the last ends the caches.
      if (!type) return type.error();
      if (!*type) {
        if (index == 0)
          return binding_error{detail::concat("the CPU topology has no ", cache, "type"),
                               errc::bad_cpu_topology};
        break;
      }
      const std::string_view kind = detail::trimmed(**type);
      if (kind != "Unified" && kind != "Data") continue;
      const auto level_text = text_at(cache + "level");
      if (!level_text) return level_text.error();
      const auto level =
          *level_text ? detail::small_integer(**level_text, 1000, false) : std::nullopt;
      if (!level)
        return binding_error{detail::concat("the CPU topology's ", cache, "level is ",
                                            *level_text ? "not a level" : "missing"),
                             errc::bad_cpu_topology};
      if (*level <= best_level) continue;
      best_level = *level;
      best = cache + "shared_cpu_list";
    }
    if (!best)
      return binding_error{
          detail::concat("CPU ", cpu, " has no data or unified cache in the CPU topology"),
          errc::bad_cpu_topology};
    const result<std::optional<unsigned>, binding_error> lowest = lowest_at(*best);
    if (!lowest) return lowest.error();
    if (!*lowest)
      return binding_error{detail::concat("CPU ", cpu, "'s largest cache is shared by no CPU"),
                           errc::bad_cpu_topology};
    return **lowest;
  }

  result<cpu_list, binding_error> possible_ = binding_error{};
  std::map<unsigned, result<cpu_list, binding_error>> node_cpus_;
  std::map<std::string, result<int, binding_error>> pci_numa_node_;
  std::map<unsigned, cpu_facts> cpus_;
  cpu_list all_;
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_CPU_TOPOLOGY_HPP
