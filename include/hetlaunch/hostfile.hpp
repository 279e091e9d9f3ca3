// SPDX-License-Identifier: MIT
// hetlaunch: the host lists clusters already have — DeepSpeed and Open MPI hostfiles, MPICH
// "host:N" files, Horovod "-H h1:4,h2:8" lists. DeepSpeed's --include/--exclude filters, which
// go with them, are in device_filter.hpp (included here).
#ifndef HETLAUNCH_HOSTFILE_HPP
#define HETLAUNCH_HOSTFILE_HPP

#include <algorithm>
#include <climits>
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "detail/host_name.hpp"
#include "detail/text.hpp"
#include "result.hpp"
#include "weight.hpp"
#include "device_filter.hpp"

namespace hetlaunch {

/// What host-list parsing tolerates.
struct hostfile_options {
  /// '_' in host names (RFC 1123 forbids it; some clusters use it).
  bool allow_underscore = false;
  /// A host named twice (several agents on one host), as validate_options::allow_duplicate_hosts.
  bool allow_duplicate_hosts = false;
  /// `slots=auto` (`host:auto`): the host's GPU count, to be asked for by a launcher. Such a node
  /// gets nproc 0, which validation refuses: give it its count before planning. Off by default,
  /// and then `auto` is an error that says who can resolve it.
  bool allow_auto_slots = false;
};

namespace detail {
// How many single-character edits (insert, delete, replace) turn a into b, for words of up to 31
// characters (a typo of a key or a flag); SIZE_MAX for longer ones. Allocates nothing.
[[nodiscard]] inline std::size_t edit_distance(std::string_view a, std::string_view b) noexcept {
  if (a.size() > 31 || b.size() > 31) return static_cast<std::size_t>(-1);
  std::size_t row[32];
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const std::size_t replace = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min(std::min(row[j] + 1, row[j - 1] + 1), replace);
      diagonal = up;
    }
  }
  return row[b.size()];
}
// Whether a is a typo of b: at most two edits away.
[[nodiscard]] inline bool within_two_edits(std::string_view a, std::string_view b) noexcept {
  return edit_distance(a, b) <= 2;
}
}  // namespace detail

namespace detail {

constexpr bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }

// A positive decimal int: ASCII digits only, at most INT_MAX.
inline bool positive_int(std::string_view text, int& value) {
  long long v = 0;
  if (!parse_decimal(text, INT_MAX, v) || v < 1) return false;
  value = static_cast<int>(v);
  return true;
}

// A slot count: a positive int, or "auto" (-1) when allowed. The message of a refused "auto"
// says who can resolve it.
inline bool slot_count(std::string_view text, bool allow_auto, int& value) {
  if (allow_auto && text == "auto") {
    value = -1;
    return true;
  }
  return positive_int(text, value);
}
inline std::string slot_count_problem(std::string_view key, std::string_view text) {
  if (text == "auto")
    return concat(
        key,
        "=auto asks the host for its GPU count, which only a launcher can do: use `hetlaunch discover` ",
        "or `hetlaunch run` (hostfile_options::allow_auto_slots)");
  return concat(key, " must be a positive integer, got ", quoted(text));
}

inline std::string host_problem_text(std::string_view host, const host_check& hc) {
  return concat("host ", quoted(host), " is not a valid RFC 1123 name or IP literal: ",
                describe_host_issue(host, hc.issue, hc.position));
}

inline const char* const slot_keys[] = {"slots", "count", "cpu"};
inline const char* const max_slot_keys[] = {"max_slots", "max-slots", "slots_max", "slots-max",
                                            "cpu_max",   "cpu-max",   "max_cpu",   "max-cpu",
                                            "count_max", "count-max", "max_count", "max-count"};
template <std::size_t N>
bool one_of(std::string_view key, const char* const (&keys)[N]) {
  for (const char* k : keys)
    if (key == k) return true;
  return false;
}

// One line of a hostfile, read: a host and its slots, or nothing (blank or comment).
struct hostfile_entry {
  bool has_host = false;
  std::string_view host;
  std::size_t column = 0;  // of the host, from 1
  int slots = 0;
  std::string_view weight = "1";
  int max_batch = 0;  // 0: none
};

// A node's ceiling: a positive integer up to INT_MAX, ASCII digits only.
inline bool parse_max_batch(std::string_view text, int& out) {
  long long v = 0;
  if (!parse_decimal(text, INT_MAX, v) || v < 1) return false;
  out = static_cast<int>(v);
  return true;
}
inline std::string max_batch_problem(std::string_view text) {
  return concat(
      "max_batch must be a positive integer up to 2147483647 (the most samples one "
      "worker takes in one forward), got ",
      quoted(text));
}

// Reads one line (without its '\n'). Fields are key=value, with blanks allowed around '=' as
// Open MPI allows them ("slots = 4").
// `checked`: the line was read before without error, so the host need not be checked again.
inline result<hostfile_entry> read_hostfile_line(std::string_view line, std::size_t line_no,
                                                 const hostfile_options& options, bool checked) {
  const bool allow_underscore = options.allow_underscore, allow_auto = options.allow_auto_slots;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const std::size_t hash = line.find('#');
  if (hash != std::string_view::npos) line = line.substr(0, hash);
  const auto error = [line_no](std::size_t column, std::string message,
                               errc code = errc::bad_syntax) {
    return parse_error{line_no, column, std::move(message), code};
  };
  std::size_t i = 0;
  const auto skip_blanks = [&] {
    while (i < line.size() && is_blank(line[i])) ++i;
  };
  skip_blanks();
  hostfile_entry e;
  if (i == line.size()) return e;
  const std::size_t host_start = i;
  while (i < line.size() && !is_blank(line[i])) ++i;
  e.has_host = true;
  e.host = line.substr(host_start, i - host_start);
  e.column = host_start + 1;
  int slots = 0, max_slots = 0;
  std::size_t slots_column = 0;
  std::string_view slots_key;  // the key that gave the slots, for "given twice"
  bool has_weight = false, has_max_batch = false;
  const std::size_t colon = e.host.find(':');
  if (colon != std::string_view::npos &&
      e.host.find(':', colon + 1) == std::string_view::npos) {  // MPICH host:N
    const std::string_view count = e.host.substr(colon + 1);
    if (!slot_count(count, allow_auto, slots))
      return error(e.column + colon + 1, slot_count_problem("slots", count), errc::bad_nproc);
    slots_column = e.column + colon + 1;
    slots_key = "host:N";
    e.host = e.host.substr(0, colon);
  }
  if (!checked) {
    const host_check hc = check_host(e.host, allow_underscore);
    if (hc.issue != host_issue::none)
      return error(e.column + hc.position, host_problem_text(e.host, hc), errc::bad_host);
  }
  while (true) {
    skip_blanks();
    if (i == line.size()) break;
    const std::size_t field_start = i;
    while (i < line.size() && !is_blank(line[i]) && line[i] != '=') ++i;
    const std::string_view key = line.substr(field_start, i - field_start);
    skip_blanks();
    const bool has_value = i < line.size() && line[i] == '=';
    std::string_view value;
    std::size_t value_start = i;
    if (has_value) {
      ++i;
      skip_blanks();
      value_start = i;
      while (i < line.size() && !is_blank(line[i])) ++i;
      value = line.substr(value_start, i - value_start);
    }
    const bool is_slots = has_value && one_of(key, slot_keys);
    const bool is_max = has_value && one_of(key, max_slot_keys);
    if (has_value && key == "weight") {
      if (has_weight)
        return error(field_start + 1, concat("weight is given twice for host ", quoted(e.host)));
      const weight_check wc = check_weight(value);
      if (!wc)
        return error(value_start + 1 + wc.position, weight_refusal(value, wc.issue),
                     errc::bad_weight);
      has_weight = true;
      e.weight = value;
      continue;
    }
    if (has_value && key == "max_batch") {
      if (has_max_batch)
        return error(field_start + 1, concat("max_batch is given twice for host ", quoted(e.host)));
      if (!parse_max_batch(value, e.max_batch))
        return error(value_start + 1, max_batch_problem(value), errc::bad_max_batch);
      has_max_batch = true;
      continue;
    }
    if (!is_slots && !is_max) {
      const std::size_t shown_end = has_value ? i : field_start + key.size();
      std::string_view nearest;
      if (has_value)  // a key's typo: "slot=4", "wieght=2"
        for (std::string_view known : {"slots", "max_slots", "weight", "max_batch"})
          if (detail::within_two_edits(key, known)) nearest = known;
      return error(
          field_start + 1,
          concat("unexpected ", quoted(line.substr(field_start, shown_end - field_start)),
                 nearest.empty() ? std::string() : concat(" (did you mean ", nearest, "=?)"),
                 "; expected slots=N, max_slots=N, weight=W or max_batch=M"));
    }
    int number = 0;
    if (!slot_count(value, allow_auto && is_slots, number))
      return error(value_start + 1,
                   slot_count_problem(is_slots ? key : std::string_view("max_slots"), value),
                   errc::bad_nproc);
    if (is_slots) {
      if (slots != 0)
        return error(
            field_start + 1,
            key == slots_key || slots_key.empty()
                ? concat(key, " is given twice for host ", quoted(e.host))
                : concat(key, "= gives the slots of host ", quoted(e.host), " again (", slots_key,
                         slots_key == "host:N" ? " gave them)" : "= gave them)"));
      slots = number;
      slots_key = key;
      slots_column = value_start + 1;
    } else {
      if (max_slots != 0)
        return error(field_start + 1, concat("max_slots is given twice for host ", quoted(e.host)));
      max_slots = number;
    }
  }
  if (max_slots != 0 && slots > 0 && max_slots < slots)
    return error(slots_column,
                 concat("max_slots (", max_slots, ") is less than slots (", slots, ")"));
  e.slots = slots == -1 ? 0 : slots != 0 ? slots : (max_slots != 0 ? max_slots : 1);
  return e;
}

// Calls visit(line, line_no) for every line; stops when visit returns false.
template <class Visit>
void each_line(std::string_view text, Visit visit) {
  std::size_t pos = 0, line_no = 0;
  while (pos <= text.size()) {
    ++line_no;
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    if (!visit(text.substr(pos, end - pos), line_no)) return;
    if (end == text.size()) return;
    pos = end + 1;
  }
}

// One host of a list, where it was read.
struct list_entry {
  std::string_view host;
  int slots = 0;
  std::size_t line = 0, column = 0;
  std::string_view weight = "1";
  int max_batch = 0;
};

// The cluster of a host list read by `each(checked, visit)`, which calls visit(list_entry) for
// every host in order until visit returns false, and returns the first error of the text (with
// `checked`, the text is known to have none). Three passes: every error and the exact size; the
// cluster, at that size; and, for a host named twice or a world size past INT_MAX (all a single
// entry cannot tell), the place of the node concerned, named by `where(line, column)` ("line 3",
// "column 7"). Every other problem was refused where it was read.
template <class Each, class Where>
result<cluster> parse_entries(Each each, validate_options options, Where where,
                              const char* no_hosts) {
  std::size_t hosts = 0, chars = 0;
  if (auto r = each(false,
                    [&](const list_entry& e) {
                      ++hosts;
                      chars += e.host.size();
                      return true;
                    });
      !r)
    return r.error();
  if (hosts == 0) return parse_error{1, 1, no_hosts, errc::empty_cluster};
  cluster_builder builder;
  builder.reserve(hosts, chars);
  bool ceilings = false;
  (void)each(true, [&](const list_entry& e) {
    builder.add(e.host, e.slots, "default", e.weight);
    ceilings = ceilings || e.max_batch > 0;
    return true;
  });
  cluster c = builder.finish();  // not const: returned by move
  if (ceilings) {
    std::size_t node = 0;
    (void)each(true, [&](const list_entry& e) {
      c.set_max_batch(node++, e.max_batch);
      return true;
    });
  }
  const auto place = [&each](std::size_t node) {
    std::pair<std::size_t, std::size_t> at{1, 1};
    std::size_t seen = 0;
    (void)each(true, [&](const list_entry& e) {
      if (seen++ < node) return true;
      at = {e.line, e.column};
      return false;
    });
    return at;
  };
  // Every host was checked and every count is positive where it was read; what is left is the
  // first node, in node order, that repeats a host or takes the world size past INT_MAX.
  std::size_t overflow = c.node_count();
  long long world = 0;
  for (std::size_t i = 0; i < c.node_count() && overflow == c.node_count(); ++i)
    if ((world += c.nproc(i)) > INT_MAX) overflow = i;
  std::pair<std::size_t, std::size_t> dup{c.node_count(), 0};
  if (!options.allow_duplicate_hosts) {
    const auto dups = duplicate_hosts(c.node_count(), [&c](std::size_t i) { return c.node(i); });
    if (!dups.empty()) dup = dups.front();
  }
  if (dup.first < overflow) {
    const std::pair<std::size_t, std::size_t> at = place(dup.first), earlier = place(dup.second);
    return parse_error{at.first, at.second,
                       concat("host ", quoted(c.node(dup.first).host), " is already ",
                              where(earlier.first, earlier.second)),
                       errc::duplicate_host};
  }
  if (overflow < c.node_count()) {
    const std::pair<std::size_t, std::size_t> at = place(overflow);
    return parse_error{at.first, at.second,
                       concat("the world size would be ", world, ", more than ", INT_MAX,
                              " (torch.distributed ranks are 32-bit)"),
                       errc::world_size_overflow};
  }
  return c;
}

}  // namespace detail

/// A node's memory ceiling as a hostfile's max_batch= or --max-batch gives it: a positive integer
/// up to INT_MAX, ASCII digits only. Refused with bad_max_batch and the message a hostfile's
/// error carries.
[[nodiscard]] inline result<int> parse_max_batch(std::string_view text) {
  int ceiling = 0;
  if (!detail::parse_max_batch(text, ceiling))
    return parse_error{detail::max_batch_problem(text), errc::bad_max_batch};
  return ceiling;
}

/// Parses a hostfile into a cluster, one node per host line, in file order:
///   worker-0 slots=8            # DeepSpeed and Open MPI
///   worker-1 slots=4 max_slots=4
///   worker-2:2                  # MPICH
///   worker-3                    # a bare host: 1 slot
///   worker-4 slots=8 weight=2.5 # each worker's share of a global batch (shares.hpp)
///   worker-5 slots=4 max_batch=16 # at most 16 samples a worker in one forward
/// `#` starts a comment anywhere on a line; blank lines, tabs and CRLF line ends are fine, and so
/// are blanks around '=' ("slots = 4"), as Open MPI allows. Open MPI's `count=`/`cpu=` mean slots,
/// and `max_slots` (or a synonym such as `max-slots`) alone sets the slots; max_slots below slots
/// is an error. Hosts must be RFC 1123 names or IP literals (IPv6 without brackets, and then
/// without `:N`). Any other field, a repeated field, a host named twice, a count that is not a
/// positive integer, a byte order mark, or a file without hosts is an error with its line and
/// column:
///   line 3, column 11: slots must be a positive integer, got '0'
/// Time and memory are linear in the text; the cluster costs 16 bytes a host plus its name.
[[nodiscard]] inline result<cluster> parse_hostfile(std::string_view text,
                                                    hostfile_options options = {}) {
  if (text.substr(0, 3) == "\xef\xbb\xbf")
    return parse_error{
        1, 1,
        "the file starts with a UTF-8 byte order mark (U+FEFF), which is not part of a "
        "host name; save it without one"};
  const auto each = [text, &options](bool checked, auto visit) -> result<bool> {
    parse_error error{};
    bool failed = false;
    detail::each_line(text, [&](std::string_view line, std::size_t line_no) {
      const auto e = detail::read_hostfile_line(line, line_no, options, checked);
      if (!e) {
        error = e.error();
        failed = true;
        return false;
      }
      return !e->has_host || visit(detail::list_entry{e->host, e->slots, line_no, e->column,
                                                      e->weight, e->max_batch});
    });
    if (failed) return error;
    return true;
  };
  const auto where = [](std::size_t line, std::size_t) { return detail::concat("on line ", line); };
  return detail::parse_entries(each, {options.allow_duplicate_hosts, options.allow_underscore},
                               where, "the hostfile names no hosts");
}

namespace detail {
// One item of a host:slots list, read.
struct host_list_item {
  std::string_view host;
  std::size_t column = 0;
  int slots = 0;
};
inline result<host_list_item> read_host_list_item(std::string_view text, std::size_t b,
                                                  std::size_t e, bool allow_underscore,
                                                  bool allow_auto = false) {
  while (b < e && is_blank(text[b])) ++b;
  while (e > b && is_blank(text[e - 1])) --e;
  const std::string_view item = text.substr(b, e - b);
  const std::size_t column = b + 1;
  if (item.empty()) return parse_error{1, column, "empty item; expected host:slots"};
  const std::size_t colon = item.rfind(':');
  if (colon == std::string_view::npos)
    return parse_error{1, column, concat(quoted(item), " has no slot count; expected host:slots")};
  const std::string_view host = item.substr(0, colon);
  const host_check hc = check_host(host, allow_underscore);
  if (host.find(':') != std::string_view::npos && hc.issue == host_issue::none)
    return parse_error{1, column, "IPv6 addresses cannot be written in host:slots lists"};
  if (host.find(':') != std::string_view::npos && hc.issue == host_issue::bad_ipv6)
    return parse_error{1, column,
                       concat(quoted(item),
                              " has more than one ':'; expected host:slots (an IPv6 address "
                              "cannot be written in host:slots lists)")};
  int slots = 0;
  if (!slot_count(item.substr(colon + 1), allow_auto, slots))
    return parse_error{1, column + colon + 1, slot_count_problem("slots", item.substr(colon + 1)),
                       errc::bad_nproc};
  if (hc.issue != host_issue::none)
    return parse_error{1, column + hc.position, host_problem_text(host, hc), errc::bad_host};
  return host_list_item{host, column, slots == -1 ? 0 : slots};
}
template <class Visit>
void each_item(std::string_view text, Visit visit) {
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    if (!visit(start, comma)) return;
    if (comma == text.size()) return;
    start = comma + 1;
  }
}
}  // namespace detail

/// Parses a Horovod-style host list, "h1:4,h2:8": comma-separated `host:slots` with blanks
/// allowed around items; every item needs its slot count. Errors have line 1 and the column of
/// the offending item (a host named twice, a count that is not a positive integer, an empty
/// item). IPv6 literals cannot be written here (the ':' is the count's). Linear in the text.
[[nodiscard]] inline result<cluster> parse_host_list(std::string_view text,
                                                     hostfile_options options = {}) {
  const auto each = [text, &options](bool, auto visit) -> result<bool> {
    parse_error error{};
    bool failed = false;
    detail::each_item(text, [&](std::size_t b, std::size_t e) {
      const auto item = detail::read_host_list_item(text, b, e, options.allow_underscore,
                                                    options.allow_auto_slots);
      if (!item) {
        error = item.error();
        failed = true;
        return false;
      }
      return visit(detail::list_entry{item->host, item->slots, 1, item->column});
    });
    if (failed) return error;
    return true;
  };
  const auto where = [](std::size_t, std::size_t column) {
    return detail::concat("at column ", column);
  };
  return detail::parse_entries(each, {options.allow_duplicate_hosts, options.allow_underscore},
                               where, "the host list names no hosts");
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_HOSTFILE_HPP
