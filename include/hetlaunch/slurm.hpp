// SPDX-License-Identifier: MIT
// hetlaunch: Slurm host lists ("gpu[01-04],cpu7"), task counts ("2(x3),1") and the job
// environment, with Slurm's own semantics and errors where Slurm would silently go wrong.
#ifndef HETLAUNCH_SLURM_HPP
#define HETLAUNCH_SLURM_HPP

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster.hpp"
#include "detail/text.hpp"
#include "result.hpp"

namespace hetlaunch {

namespace detail {

// Slurm's limits (src/common/hostlist.c): hosts in one range item, items in one bracket, and
// hosts of one bracket that is not the last of its name.
constexpr unsigned long long slurm_max_range = 65536;
constexpr std::size_t slurm_max_ranges = 256 * 1024;
constexpr unsigned long long slurm_max_prefix_count = 65536;

constexpr bool is_hostlist_separator(char c) noexcept { return c == ',' || c == ' ' || c == '\t' || c == '\n'; }
constexpr bool is_c_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

struct slurm_range {
  unsigned long long lo = 0, hi = 0;
  std::size_t width = 0;  // printed with at least this many digits: the low bound's text length
};

struct hostlist_parser {
  std::string_view expr;
  std::size_t max_hosts;
  parse_error error{};
  bool failed = false;

  bool fail(std::size_t offset, std::string message) {
    if (!failed) error = {1, offset + 1, std::move(message)};
    failed = true;
    return false;
  }

  // strtoul's grammar as Slurm relies on it: blanks, an optional '+', decimal digits. Returns the
  // end of the digits (== start when there are none). Unlike strtoul, overflow is an error.
  bool parse_number(std::string_view text, std::size_t offset, std::size_t& end, unsigned long long& value) {
    std::size_t i = 0;
    while (i < text.size() && is_c_space(text[i])) ++i;
    if (i < text.size() && text[i] == '+') ++i;
    const std::size_t digits = i;
    value = 0;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      const unsigned d = static_cast<unsigned>(text[i] - '0');
      if (value > (~0ull - d) / 10)
        return fail(offset, concat("number ", quoted(text.substr(digits)), " is too large"));
      value = value * 10 + d;
    }
    end = i == digits ? 0 : i;
    return true;
  }

  // One item of a bracket: "7", "01-10", as _parse_single_range reads it.
  bool parse_range(std::string_view item, std::size_t offset, slurm_range& out) {
    const std::string shown = quoted(item);
    if (item.find('x') != std::string_view::npos)
      return fail(offset, concat("invalid range ", shown, ": 'x' (box syntax) is for multi-dimensional clusters"));
    const std::size_t dash = item.find('-');
    const std::string_view lo_text = item.substr(0, dash);
    const std::string_view hi_text = dash == std::string_view::npos ? std::string_view() : item.substr(dash + 1);
    if (!hi_text.empty() && hi_text[0] == '-')
      return fail(offset, concat("invalid range ", shown, ": negative numbers are not allowed"));
    std::size_t lo_end = 0, hi_end = 0;
    if (!parse_number(lo_text, offset, lo_end, out.lo)) return false;
    if (lo_end == 0) {
      if (item.empty()) return fail(offset, "empty range item");
      if (lo_text.empty()) return fail(offset, concat("invalid range ", shown, ": negative numbers are not allowed"));
      return fail(offset, concat("invalid range ", shown, ": expected a number"));
    }
    out.width = lo_text.size();
    if (!hi_text.empty()) {
      if (!parse_number(hi_text, offset, hi_end, out.hi)) return false;
      if (hi_end == 0) return fail(offset, concat("invalid range ", shown, ": expected a number after '-'"));
      if (hi_end != hi_text.size())
        return fail(offset, concat("invalid range ", shown, ": unexpected text after the high bound (Slurm has no steps)"));
    } else {
      out.hi = out.lo;  // "1-" means "1", as in Slurm
      if (lo_end != lo_text.size()) return fail(offset, concat("invalid range ", shown, ": expected a number"));
    }
    if (out.lo > out.hi)
      return fail(offset, concat("invalid range ", shown, ": the low bound is above the high bound"));
    if (out.hi - out.lo + 1 > slurm_max_range)
      return fail(offset, concat("too many hosts in range ", shown, " (Slurm's limit is 65536)"));
    return true;
  }

  bool parse_range_list(std::string_view text, std::size_t offset, std::vector<slurm_range>& out) {
    out.clear();
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = text.find(',', start);
      const std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (out.size() == slurm_max_ranges) return fail(offset, "more than 262144 items in one bracket");
      slurm_range r;
      if (!parse_range(item, offset + start, r)) return false;
      out.push_back(r);
      if (comma == std::string_view::npos) return true;
      start = comma + 1;
    }
  }

  static void append_number(std::string& out, unsigned long long n, std::size_t width) {
    const std::string digits = std::to_string(n);
    if (digits.size() < width) out.append(width - digits.size(), '0');
    out += digits;
  }

  // Slurm's _push_range_list: brackets left in `prefix` are expanded right to left, each the
  // outer loop of the ones to its left, with the token's last bracket innermost. Counts when
  // `out` is null (the first pass, which finds every error and the total before allocating).
  bool push(const std::string& prefix, std::size_t offset, const std::vector<slurm_range>& ranges,
            std::string_view suffix, unsigned long long& count, std::vector<std::string>* out) {
    const std::size_t open = prefix.rfind('[');
    const std::size_t close = open == std::string::npos ? std::string::npos : prefix.rfind(']');
    if (open != std::string::npos && close != std::string::npos && close > open) {
      const std::string pre = prefix.substr(0, open);
      const std::string post = prefix.substr(close + 1);
      std::vector<slurm_range> outer;
      if (!parse_range_list(std::string_view(prefix).substr(open + 1, close - open - 1), offset + open + 1, outer))
        return false;
      unsigned long long outer_count = 0;
      for (const slurm_range& r : outer) {
        outer_count += r.hi - r.lo + 1;
        if (outer_count > slurm_max_prefix_count)
          return fail(offset + open, "a bracket before the last one of a name expands to more than 65536 hosts");
      }
      const bool nested = pre.find('[') != std::string::npos;
      if (out == nullptr) {  // every value of this bracket expands alike: count one and multiply
        std::string sample = pre;
        append_number(sample, outer.front().lo, outer.front().width);
        sample += post;
        unsigned long long inner = 0;
        if (nested) {
          if (!push(sample, offset, ranges, suffix, inner, nullptr)) return false;
        } else {
          for (const slurm_range& r : ranges) inner += r.hi - r.lo + 1;
        }
        return add(count, outer_count, inner, offset);
      }
      for (const slurm_range& r : outer)
        for (unsigned long long j = r.lo;; ++j) {
          std::string next = pre;
          append_number(next, j, r.width);
          next += post;
          if (nested) push(next, offset, ranges, suffix, count, out);
          else emit(next, ranges, suffix, *out);
          if (j == r.hi) break;
        }
      return true;
    }
    if (out == nullptr) {
      unsigned long long n = 0;
      for (const slurm_range& r : ranges) n += r.hi - r.lo + 1;
      return add(count, 1, n, offset);
    }
    emit(prefix, ranges, suffix, *out);
    return true;
  }

  static void emit(const std::string& prefix, const std::vector<slurm_range>& ranges, std::string_view suffix,
                   std::vector<std::string>& out) {
    for (const slurm_range& r : ranges)
      for (unsigned long long n = r.lo;; ++n) {
        std::string host = prefix;
        append_number(host, n, r.width);
        host.append(suffix.data(), suffix.size());
        out.push_back(std::move(host));
        if (n == r.hi) break;
      }
  }

  // count += a * b, refusing more than max_hosts (so nothing is allocated for a list too long).
  bool add(unsigned long long& count, unsigned long long a, unsigned long long b, std::size_t offset) {
    const unsigned long long cap = max_hosts;
    if (b != 0 && a > (cap + 1) / b + 1) return fail(offset, too_many());
    const unsigned long long product = a * b;
    if (product > cap || count + product > cap) return fail(offset, too_many());
    count += product;
    return true;
  }
  std::string too_many() const { return concat("the host list names more than ", max_hosts, " hosts (max_hosts)"); }

  // One token: a plain name, or prefix[ranges]suffix with earlier brackets inside prefix.
  bool token(std::string_view tok, std::size_t offset, unsigned long long& count, std::vector<std::string>* out) {
    const std::size_t open = tok.rfind('[');
    if (open == std::string_view::npos) {
      if (out == nullptr) return add(count, 1, 1, offset);
      out->emplace_back(tok);
      return true;
    }
    const std::size_t close = tok.find(']', open);
    if (close == std::string_view::npos) return fail(offset + open, "'[' without a matching ']'");
    std::vector<slurm_range> ranges;
    if (!parse_range_list(tok.substr(open + 1, close - open - 1), offset + open + 1, ranges)) return false;
    return push(std::string(tok.substr(0, open)), offset, ranges, tok.substr(close + 1), count, out);
  }

  // Tokens end at a separator, except between a '[' and the next ']' (Slurm's _next_tok).
  template <class Visit>
  bool each_token(Visit visit) {
    std::size_t i = 0;
    while (i < expr.size()) {
      while (i < expr.size() && is_hostlist_separator(expr[i])) ++i;
      if (i == expr.size()) break;
      const std::size_t start = i;
      while (i < expr.size() && !is_hostlist_separator(expr[i])) {
        if (expr[i] == '[') {
          const std::size_t close = expr.find(']', i);
          i = close == std::string_view::npos ? i + 1 : close + 1;
        } else {
          ++i;
        }
      }
      if (!visit(expr.substr(start, i - start), start)) return false;
    }
    return true;
  }
};

}  // namespace detail

/// Expands a Slurm host list as current Slurm (23.11 and later) does: "gpu[01-03],cpu[1,3]" gives
/// gpu01 gpu02 gpu03 cpu1 cpu3. Order and duplicates are kept; a range is zero-padded to the
/// length of its low bound's text ("[08-010]" gives 08 09 10); names may go on after a bracket
/// ("node[1-2]-ib"); with several brackets in a name the last is the innermost loop and the
/// others are expanded right to left, Slurm's own order. Separators are ',', blanks, tabs and
/// newlines, but not inside brackets.
///
/// Errors, with the column of the offending text: what Slurm refuses (a '[' without ']', an empty
/// item, letters, 'x', negative numbers, low above high, step syntax, more than 65536 hosts in
/// one range), and what Slurm silently turns into garbage: numbers past 2^64 (Slurm saturates),
/// an empty list, and more than `max_hosts` names in all, found before anything is allocated.
[[nodiscard]] inline result<std::vector<std::string>> expand_hostlist(std::string_view expr,
                                                                      std::size_t max_hosts = std::size_t{1} << 20) {
  detail::hostlist_parser p{expr, max_hosts};
  unsigned long long count = 0;
  p.each_token([&](std::string_view tok, std::size_t offset) { return p.token(tok, offset, count, nullptr); });
  if (p.failed) return p.error;
  if (count == 0) return parse_error{1, 1, "the host list is empty"};
  std::vector<std::string> hosts;
  hosts.reserve(static_cast<std::size_t>(count));
  p.each_token([&](std::string_view tok, std::size_t offset) { return p.token(tok, offset, count, &hosts); });
  return hosts;
}

namespace detail {
// A host as Slurm's hostname_create splits it: text, then a run of trailing digits.
struct split_host {
  std::string_view prefix;
  bool numbered = false;
  unsigned long long number = 0;
  std::size_t width = 0;
};
inline split_host split_trailing_number(std::string_view host) {
  std::size_t i = host.size();
  while (i > 0 && is_digit(host[i - 1])) --i;
  split_host s{host.substr(0, i)};
  if (i == host.size() || host.size() - i > 19) {  // no digits, or more than fit a number
    s.prefix = host;
    return s;
  }
  s.numbered = true;
  s.width = host.size() - i;
  for (std::size_t k = i; k < host.size(); ++k) s.number = s.number * 10 + static_cast<unsigned>(host[k] - '0');
  return s;
}
inline std::size_t digit_count(unsigned long long n) {
  std::size_t d = 1;
  while (n /= 10) ++d;
  return d;
}
// Slurm's _width_equiv: two widths print the same numbers when the zero padding of each number
// is the same under either width; then the narrower-padded width is taken for both.
inline bool widths_combine(unsigned long long n, std::size_t& wn, unsigned long long m, std::size_t& wm) {
  if (wn == wm) return true;
  const auto pad = [](unsigned long long v, std::size_t w) { return w > digit_count(v) ? w - digit_count(v) : 0; };
  const bool n_same = pad(n, wn) == pad(n, wm);
  const bool m_same = pad(m, wm) == pad(m, wn);
  if (!n_same && !m_same) return false;
  if (!n_same) wm = wn;
  else wn = wm;
  return true;
}
}  // namespace detail

/// The inverse of expand_hostlist, as `scontrol show hostlist` prints it: consecutive hosts that
/// differ only in a trailing number of compatible width become a range, and neighbouring ranges
/// of one prefix share a bracket: {a1, a2, a3, b08, b09} gives "a[1-3],b[08-09]". Order and
/// duplicates are kept (sort first for the shortest form); names without a trailing number
/// stay as they are.
[[nodiscard]] inline std::string compress_hostlist(const std::vector<std::string>& hosts) {
  struct range {
    detail::split_host host;
    unsigned long long hi;
  };
  std::vector<range> ranges;
  for (const std::string& h : hosts) {
    const detail::split_host s = detail::split_trailing_number(h);
    if (!ranges.empty()) {
      range& tail = ranges.back();
      std::size_t tail_width = tail.host.width, width = s.width;
      if (tail.host.numbered && s.numbered && tail.host.prefix == s.prefix && tail.hi + 1 == s.number &&
          detail::widths_combine(tail.host.number, tail_width, s.number, width)) {
        tail.host.width = tail_width;
        tail.hi = s.number;
        continue;
      }
    }
    ranges.push_back({s, s.number});
  }
  std::string out;
  const auto number = [&out](unsigned long long n, std::size_t width) { detail::hostlist_parser::append_number(out, n, width); };
  for (std::size_t i = 0; i < ranges.size();) {
    if (!out.empty()) out += ',';
    const range& first = ranges[i];
    out.append(first.host.prefix.data(), first.host.prefix.size());
    if (!first.host.numbered) {
      ++i;
      continue;
    }
    std::size_t end = i + 1;
    while (end < ranges.size() && ranges[end].host.numbered && ranges[end].host.prefix == first.host.prefix) ++end;
    const bool bracket = end - i > 1 || first.hi != first.host.number;
    if (bracket) out += '[';
    for (std::size_t k = i; k < end; ++k) {
      if (k > i) out += ',';
      number(ranges[k].host.number, ranges[k].host.width);
      if (ranges[k].hi != ranges[k].host.number) {
        out += '-';
        number(ranges[k].hi, ranges[k].host.width);
      }
    }
    if (bracket) out += ']';
    i = end;
  }
  return out;
}

/// Expands a Slurm count list (SLURM_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE): "2(x3),1" gives
/// {2, 2, 2, 1}. Items are `count` or `count(xN)` with decimal digits only; counts are 0 to
/// INT_MAX, repeats 1 or more, and more than `max_nodes` values in all is an error found before
/// anything is allocated.
[[nodiscard]] inline result<std::vector<int>> expand_tasks_per_node(std::string_view expr,
                                                                   std::size_t max_nodes = std::size_t{1} << 20) {
  struct item {
    int count;
    unsigned long long repeat;
  };
  std::vector<item> items;
  unsigned long long total = 0;
  std::size_t i = 0;
  const auto number = [&](unsigned long long limit, unsigned long long& value, const char* what) -> result<bool> {
    const std::size_t start = i;
    value = 0;
    while (i < expr.size() && detail::is_digit(expr[i])) {
      value = value * 10 + static_cast<unsigned>(expr[i] - '0');
      if (value > limit)
        return parse_error{1, start + 1, detail::concat(what, " is larger than ", limit)};
      ++i;
    }
    if (i == start)
      return parse_error{1, start + 1, detail::concat("expected ", what, ", got ",
                                                      i < expr.size() ? detail::quoted(expr.substr(i, 1)) : std::string("the end"))};
    return true;
  };
  if (expr.empty()) return parse_error{1, 1, "the count list is empty"};
  while (true) {
    unsigned long long count = 0, repeat = 1;
    if (auto r = number(0x7fffffffull, count, "a count"); !r) return r.error();
    if (i < expr.size() && expr[i] == '(') {
      const std::size_t open = i;
      if (i + 1 >= expr.size() || expr[i + 1] != 'x')
        return parse_error{1, i + 2, "expected 'x' after '(' as in 2(x3)"};
      i += 2;
      if (auto r = number(~0ull / 2, repeat, "a repeat count"); !r) return r.error();
      if (repeat == 0) return parse_error{1, open + 3, "a repeat count must be at least 1"};
      if (i >= expr.size() || expr[i] != ')') return parse_error{1, i + 1, "expected ')'"};
      ++i;
    }
    total += repeat;
    if (total > max_nodes)
      return parse_error{1, 1, detail::concat("the count list names more than ", max_nodes, " nodes")};
    items.push_back({static_cast<int>(count), repeat});
    if (i == expr.size()) break;
    if (expr[i] != ',')
      return parse_error{1, i + 1, detail::concat("expected ',' or the end, got ", detail::quoted(expr.substr(i, 1)))};
    ++i;
  }
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(total));
  for (const item& it : items) out.insert(out.end(), static_cast<std::size_t>(it.repeat), it.count);
  return out;
}

/// A job's topology as Slurm describes it, and which node this process runs on.
struct slurm_job {
  cluster nodes;
  /// SLURM_NODEID: this process's node index, when set.
  bool has_this_node = false;
  std::size_t this_node = 0;
  /// The variable the worker counts came from.
  std::string counts_from;
};

/// Builds the cluster of a Slurm job from its environment. `get(name)` returns a variable's value
/// or nullptr, as std::getenv does.
///
/// Hosts: SLURM_JOB_NODELIST, else SLURM_NODELIST. Workers per node, the first that is set:
///  1. HETLAUNCH_TASKS_PER_NODE: a copy of the batch script's SLURM_TASKS_PER_NODE, taken before
///     `srun` replaces that variable with its own step's layout (one task per node, typically);
///  2. SLURM_TASKS_PER_NODE: one worker per Slurm task (ask for one task per GPU);
///  3. SLURM_GPUS_PER_NODE ("4" or "a100:4"): the same count on every node;
///  4. SLURM_JOB_CPUS_PER_NODE: one worker per allocated CPU.
/// Slurm exports only this node's GPUs (SLURM_GPUS_ON_NODE), so a per-node GPU count of other
/// nodes cannot be read; a heterogeneous layout comes from the task counts.
/// This node: SLURM_NODEID. A missing variable, a malformed one, or counts that do not match the
/// host count is an error that names the variable.
template <class Getenv>
[[nodiscard]] result<slurm_job> cluster_from_slurm(Getenv&& get) {
  const auto var = [&](const char* name) -> const char* { return get(name); };
  const char* list_name = "SLURM_JOB_NODELIST";
  const char* list = var(list_name);
  if (list == nullptr) {
    list_name = "SLURM_NODELIST";
    list = var(list_name);
  }
  if (list == nullptr) return parse_error{0, 0, "SLURM_JOB_NODELIST is not set; is this running inside a Slurm job?"};
  auto hosts = expand_hostlist(list);
  if (!hosts) return parse_error{0, 0, detail::concat(list_name, ": ", hosts.error().to_string())};
  const auto context = [](const char* name, const parse_error& e) {
    return parse_error{0, 0, detail::concat(name, ": ", e.to_string())};
  };
  slurm_job job;
  std::vector<int> counts;
  for (const char* name : {"HETLAUNCH_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    if (const char* text = var(name)) {
      auto c = expand_tasks_per_node(text, hosts->size() + 1);
      if (!c) return context(name, c.error());
      counts = std::move(*c);
      job.counts_from = name;
      break;
    }
  }
  if (job.counts_from.empty()) {
    if (const char* gpus = var("SLURM_GPUS_PER_NODE")) {
      std::string_view text(gpus);
      const bool one_type = text.find(',') == std::string_view::npos;  // "a100:4,v100:2" is per type
      const std::size_t colon = text.rfind(':');
      if (colon != std::string_view::npos) text = text.substr(colon + 1);
      auto c = expand_tasks_per_node(text, 1);
      if (!c || !one_type)
        return parse_error{0, 0, detail::concat("SLURM_GPUS_PER_NODE=", detail::quoted(gpus),
                                                " is not one count ([type:]N)")};
      counts.assign(hosts->size(), c->front());
      job.counts_from = "SLURM_GPUS_PER_NODE";
    } else if (const char* cpus = var("SLURM_JOB_CPUS_PER_NODE")) {
      auto c = expand_tasks_per_node(cpus, hosts->size() + 1);
      if (!c) return context("SLURM_JOB_CPUS_PER_NODE", c.error());
      counts = std::move(*c);
      job.counts_from = "SLURM_JOB_CPUS_PER_NODE";
    } else {
      return parse_error{0, 0, "no worker counts: none of HETLAUNCH_TASKS_PER_NODE, SLURM_TASKS_PER_NODE, "
                               "SLURM_GPUS_PER_NODE, SLURM_JOB_CPUS_PER_NODE is set"};
    }
  }
  if (counts.size() != hosts->size())
    return parse_error{0, 0, detail::concat(job.counts_from, " gives ", counts.size(), " counts but ", list_name,
                                            " names ", hosts->size(), " hosts")};
  std::vector<node_spec> specs;
  for (std::size_t i = 0; i < hosts->size(); ++i) specs.push_back({(*hosts)[i], counts[i]});
  job.nodes = cluster(specs);
  if (const char* id = var("SLURM_NODEID")) {
    long long n = 0;
    if (!detail::parse_decimal(id, 0x7fffffff, n))
      return parse_error{0, 0, detail::concat("SLURM_NODEID=", detail::quoted(id), " is not a node index")};
    if (static_cast<std::size_t>(n) >= hosts->size())
      return parse_error{0, 0, detail::concat("SLURM_NODEID=", n, " is out of range: ", list_name, " names ",
                                              hosts->size(), " hosts")};
    job.has_this_node = true;
    job.this_node = static_cast<std::size_t>(n);
  }
  return job;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SLURM_HPP
