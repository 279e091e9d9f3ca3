// SPDX-License-Identifier: MIT
// hetlaunch: Slurm host lists ("gpu[01-04],cpu7") and count lists ("2(x3),1"), read and written
// with Slurm's own semantics and errors where Slurm would silently go wrong.
#ifndef HETLAUNCH_SLURM_HOSTLIST_HPP
#define HETLAUNCH_SLURM_HOSTLIST_HPP

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/text.hpp"
#include "result.hpp"

namespace hetlaunch {

namespace detail {

// Slurm's limits (src/common/hostlist.c): hosts in one range item, items in one bracket, and
// hosts of one bracket that is not the last of its name.
constexpr unsigned long long slurm_max_range = 65536;
constexpr std::size_t slurm_max_ranges = 256 * 1024;
constexpr unsigned long long slurm_max_prefix_count = 65536;

constexpr bool is_hostlist_separator(char c) noexcept {
  return c == ',' || c == ' ' || c == '\t' || c == '\n';
}
constexpr bool is_c_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

struct slurm_range {
  unsigned long long lo = 0, hi = 0;
  std::size_t width = 0;  // printed with at least this many digits: the low bound's text length
};

// One bracket of a name: its ranges, the number of values, and the bytes those values print as.
struct slurm_bracket {
  std::vector<slurm_range> ranges;
  unsigned long long count = 0;
  unsigned long long digits = 0;  // the sum of the printed lengths of every value
};

// A name with brackets, as Slurm reads it: text[0] [b0] text[1] [b1] ... [b(k-1)] text[k].
struct slurm_name {
  std::vector<std::string_view> text;
  std::vector<slurm_bracket> brackets;
};

inline std::size_t decimal_digits(unsigned long long n) noexcept {
  std::size_t d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

// Where the run of digits at the end of `text` starts (text.size() when there is none).
inline std::size_t trailing_digits(std::string_view text) noexcept {
  std::size_t i = text.size();
  while (i > 0 && is_digit(text[i - 1])) --i;
  return i;
}

// The value of a run of decimal digits; false when it passes 2^64 - 1, which Slurm saturates.
inline bool digits_value(std::string_view digits, unsigned long long& value) noexcept {
  const digit_run run = read_digits(digits, 0);
  value = run.value;
  return !run.too_large;
}

// Sum over v in [lo, hi] of max(width, digits(v)), by decades: O(20) whatever the range.
inline unsigned long long printed_length(const slurm_range& r) noexcept {
  unsigned long long sum = 0;
  unsigned long long decade_lo = 0, decade_hi = 9;
  for (std::size_t d = 1; d <= 20; ++d) {
    const unsigned long long a = r.lo > decade_lo ? r.lo : decade_lo;
    const unsigned long long b = r.hi < decade_hi ? r.hi : decade_hi;
    if (a <= b) sum += (b - a + 1) * (r.width > d ? r.width : d);  // at most 65536 * 20
    if (decade_hi == ~0ull || decade_hi >= r.hi) break;
    decade_lo = decade_hi + 1;
    decade_hi = decade_hi > (~0ull - 9) / 10 ? ~0ull : decade_hi * 10 + 9;
  }
  return sum;
}

inline void append_number(std::string& out, unsigned long long n, std::size_t width) {
  char digits[20];
  std::size_t len = 0;
  do {
    digits[len++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0);
  if (len < width) out.append(width - len, '0');
  while (len > 0) out += digits[--len];
}

struct hostlist_parser {
  std::string_view expr;
  std::size_t max_hosts;
  std::size_t max_bytes;
  parse_error error{};
  bool failed = false;
  unsigned long long hosts = 0;  // names counted so far
  unsigned long long bytes = 0;  // their bytes

  bool fail(std::size_t offset, std::string message, errc code = errc::bad_syntax) {
    if (!failed) error = {1, offset + 1, std::move(message), code};
    failed = true;
    return false;
  }

  // strtoul's grammar as Slurm relies on it: blanks, an optional '+', decimal digits. Returns the
  // end of the digits (0 when there are none). Unlike strtoul, overflow is an error.
  bool parse_number(std::string_view text, std::size_t offset, std::size_t& end,
                    unsigned long long& value) {
    std::size_t i = 0;
    while (i < text.size() && is_c_space(text[i])) ++i;
    if (i < text.size() && text[i] == '+') ++i;
    const std::size_t digits = i;
    while (i < text.size() && is_digit(text[i])) ++i;
    if (!digits_value(text.substr(digits, i - digits), value))
      return fail(offset, concat("number ", quoted(text.substr(digits, i - digits)),
                                 " is larger than 2^64 - 1 (Slurm would silently change it)"));
    end = i == digits ? 0 : i;
    return true;
  }

  // One item of a bracket: "7", "01-10", as _parse_single_range reads it.
  bool parse_range(std::string_view item, std::size_t offset, slurm_range& out) {
    const auto invalid = [&](const char* why) {
      return fail(offset, concat("invalid range ", quoted(item), ": ", why));
    };
    if (item.find('x') != std::string_view::npos)
      return invalid("'x' (box syntax) is for multi-dimensional clusters");
    const std::size_t dash = item.find('-');
    const std::string_view lo_text = item.substr(0, dash);
    const std::string_view hi_text =
        dash == std::string_view::npos ? std::string_view() : item.substr(dash + 1);
    if (!hi_text.empty() && hi_text[0] == '-') return invalid("negative numbers are not allowed");
    std::size_t lo_end = 0, hi_end = 0;
    if (!parse_number(lo_text, offset, lo_end, out.lo)) return false;
    if (lo_end == 0) {
      if (item.empty()) return fail(offset, "empty range item");
      if (lo_text.empty()) return invalid("negative numbers are not allowed");
      return invalid("expected a number");
    }
    out.width = lo_text.size();
    if (!hi_text.empty()) {
      if (!parse_number(hi_text, offset, hi_end, out.hi)) return false;
      if (hi_end == 0) return invalid("expected a number after '-'");
      if (hi_end != hi_text.size())
        return invalid("unexpected text after the high bound (Slurm has no steps)");
    } else {
      out.hi = out.lo;  // "1-" means "1", as in Slurm
      if (lo_end != lo_text.size()) return invalid("expected a number");
    }
    if (out.lo > out.hi) return invalid("the low bound is above the high bound");
    if (out.hi - out.lo >= slurm_max_range)  // hi - lo + 1 would wrap for [0-18446744073709551615]
      return fail(offset,
                  concat("too many hosts in range ", quoted(item), " (Slurm's limit is 65536)"),
                  errc::limit_exceeded);
    return true;
  }

  bool parse_bracket(std::string_view text, std::size_t offset, slurm_bracket& out) {
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = text.find(',', start);
      const std::string_view item = text.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (out.ranges.size() == slurm_max_ranges)
        return fail(offset, "more than 262144 items in one bracket", errc::limit_exceeded);
      slurm_range r;
      if (!parse_range(item, offset + start, r)) return false;
      out.ranges.push_back(r);
      out.count += r.hi - r.lo + 1;     // at most 2^18 items of 2^16: no wrap
      out.digits += printed_length(r);  // at most 2^18 * 2^16 * 20: no wrap
      if (comma == std::string_view::npos) return true;
      start = comma + 1;
    }
  }

  std::string too_many_hosts() const {
    return concat("the host list names more than ", max_hosts,
                  " hosts, the limit (max_hosts; hetlaunch's --max-hosts raises it)");
  }
  std::string too_many_bytes() const {
    return concat("the host list's names take more than ", max_bytes,
                  " bytes, the limit (max_bytes; hetlaunch's --max-bytes raises it)");
  }

  // Adds the names of one token: `count` names of `bytes` bytes, refusing more than the limits.
  bool add(unsigned long long count, unsigned long long name_bytes, bool bytes_overflow,
           std::size_t offset) {
    unsigned long long total = 0;
    if (!checked_add(hosts, count, total) || total > max_hosts)
      return fail(offset, too_many_hosts(), errc::limit_exceeded);
    unsigned long long size = 0;
    if (bytes_overflow || !checked_add(bytes, name_bytes, size) || size > max_bytes)
      return fail(offset, too_many_bytes(), errc::limit_exceeded);
    hosts = total;
    bytes = size;
    return true;
  }

  // A plain name keeps a trailing number only if it fits 64 bits; Slurm saturates a larger one.
  bool check_plain(std::string_view name, std::size_t offset) {
    const std::size_t i = trailing_digits(name);
    unsigned long long value = 0;
    if (digits_value(name.substr(i), value)) return true;
    return fail(offset + i, concat("the number at the end of ", quoted(name),
                                   " is larger than 2^64 - 1 (Slurm would silently change it)"));
  }

  // Reads a token with brackets as Slurm's _push_range_list does: the last '[' ... ']' is the
  // innermost loop; what comes before it is searched from the right for earlier brackets, each a
  // '[' after which the prefix's last ']' stands. Text around the brackets is kept as it is.
  bool parse_name(std::string_view tok, std::size_t offset, std::size_t open, slurm_name& name) {
    const std::size_t close = tok.find(']', open);
    if (close == std::string_view::npos) return fail(offset + open, "'[' without a matching ']'");
    name.text.push_back(tok.substr(close + 1));
    name.brackets.emplace_back();
    if (!parse_bracket(tok.substr(open + 1, close - open - 1), offset + open + 1,
                       name.brackets.back()))
      return false;
    std::string_view prefix = tok.substr(0, open);
    while (true) {
      const std::size_t o = prefix.rfind('[');
      const std::size_t c =
          o == std::string_view::npos ? std::string_view::npos : prefix.rfind(']');
      if (o == std::string_view::npos || c == std::string_view::npos || c < o) break;
      name.text.push_back(prefix.substr(c + 1));
      name.brackets.emplace_back();
      slurm_bracket& b = name.brackets.back();
      if (!parse_bracket(prefix.substr(o + 1, c - o - 1), offset + o + 1, b)) return false;
      if (b.count > slurm_max_prefix_count)
        return fail(offset + o,
                    "a bracket before the last one of a name expands to more than 65536 hosts",
                    errc::limit_exceeded);
      prefix = prefix.substr(0, o);
    }
    name.text.push_back(prefix);
    // Collected from the right: put text and brackets in reading order.
    std::reverse(name.text.begin(), name.text.end());
    std::reverse(name.brackets.begin(), name.brackets.end());
    return true;
  }

  // Counts a name's hosts and bytes exactly: every value of a bracket appears count / its count
  // times, so the bytes are count * text + sum over brackets of digits * (count / bracket count).
  bool count_name(const slurm_name& name, std::size_t offset) {
    unsigned long long count = 1;
    bool overflow = false;
    for (const slurm_bracket& b : name.brackets)
      if (!checked_mul(count, b.count, count))
        return fail(offset, too_many_hosts(), errc::limit_exceeded);
    unsigned long long text = 0;
    for (std::string_view t : name.text) text += t.size();
    unsigned long long name_bytes = 0;
    overflow = !checked_mul(count, text, name_bytes);
    for (const slurm_bracket& b : name.brackets) {
      unsigned long long part = 0;
      overflow = overflow || !checked_mul(b.digits, count / b.count, part) ||
                 !checked_add(name_bytes, part, name_bytes);
    }
    return add(count, name_bytes, overflow, offset);
  }

  // Writes a name's hosts in Slurm's order: the last bracket varies fastest, then the first,
  // the second, ... and the last but one slowest (brackets before the last are expanded right
  // to left, each an outer loop of those to its left).
  template <class Visit>
  static void emit(const slurm_name& name, Visit&& visit) {
    const std::size_t k = name.brackets.size();
    std::vector<std::size_t> order;  // brackets from fastest to slowest
    order.push_back(k - 1);
    for (std::size_t j = 0; j + 1 < k; ++j) order.push_back(j);
    std::vector<std::size_t> item(k, 0);
    std::vector<unsigned long long> value(k);
    for (std::size_t j = 0; j < k; ++j) value[j] = name.brackets[j].ranges.front().lo;
    std::string host;
    while (true) {
      host.clear();
      for (std::size_t j = 0; j < k; ++j) {
        host.append(name.text[j].data(), name.text[j].size());
        append_number(host, value[j], name.brackets[j].ranges[item[j]].width);
      }
      host.append(name.text[k].data(), name.text[k].size());
      visit(std::string_view(host));
      // Advance the odometer.
      std::size_t digit = 0;
      for (; digit < k; ++digit) {
        const std::size_t j = order[digit];
        const std::vector<slurm_range>& ranges = name.brackets[j].ranges;
        if (value[j] != ranges[item[j]].hi) {
          ++value[j];
          break;
        }
        if (item[j] + 1 < ranges.size()) {
          ++item[j];
          value[j] = ranges[item[j]].lo;
          break;
        }
        item[j] = 0;
        value[j] = ranges.front().lo;
      }
      if (digit == k) return;
    }
  }

  // Tokens end at a separator, except between a '[' and the next ']' (Slurm's _next_tok). The
  // next ']' is remembered, so a text of many '[' is still read once.
  template <class Visit>
  bool each_token(Visit visit) {
    std::size_t i = 0;
    std::size_t next_close = 0;  // the first ']' at or after next_close's search start, or npos
    bool close_known = false;
    while (i < expr.size()) {
      while (i < expr.size() && is_hostlist_separator(expr[i])) ++i;
      if (i == expr.size()) break;
      const std::size_t start = i;
      while (i < expr.size() && !is_hostlist_separator(expr[i])) {
        if (expr[i] == '[') {
          if (!close_known || (next_close != std::string_view::npos && next_close < i)) {
            next_close = expr.find(']', i);
            close_known = true;
          }
          i = next_close == std::string_view::npos ? i + 1 : next_close + 1;
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
/// one range), and what Slurm silently turns into garbage: numbers past 2^64 - 1 (Slurm
/// saturates), an empty list. More than `max_hosts` names, or names of more than `max_bytes`
/// bytes in all, is an error found before anything is allocated. Time and memory are linear in
/// the input plus the output; nothing recurses.
namespace detail {
// A host list read and counted but not yet expanded: its names are visited one by one, each a
// view that lasts until the next, so a caller stores each host once, where it keeps it.
struct parsed_hostlist {
  std::vector<slurm_name> names;  // tokens with brackets, in order; plain ones are views
  std::vector<std::pair<std::string_view, std::size_t>>
      tokens;  // (token, index into names or npos)
  std::size_t hosts = 0;
  std::size_t bytes = 0;

  template <class Visit>
  void each(Visit&& visit) const {
    for (const auto& t : tokens) {
      if (t.second == std::string_view::npos)
        visit(t.first);
      else
        hostlist_parser::emit(names[t.second], visit);
    }
  }
};

inline result<parsed_hostlist> parse_hostlist(std::string_view expr, std::size_t max_hosts,
                                              std::size_t max_bytes) {
  parsed_hostlist out;
  std::vector<slurm_name>& names = out.names;
  std::vector<std::pair<std::string_view, std::size_t>>& tokens = out.tokens;
  hostlist_parser p{expr, max_hosts, max_bytes};
  p.each_token([&](std::string_view tok, std::size_t offset) {
    const std::size_t open = tok.rfind('[');
    if (open == std::string_view::npos) {
      if (!p.check_plain(tok, offset) || !p.add(1, tok.size(), false, offset)) return false;
      tokens.emplace_back(tok, std::string_view::npos);
      return true;
    }
    names.emplace_back();
    if (!p.parse_name(tok, offset, open, names.back()) || !p.count_name(names.back(), offset))
      return false;
    tokens.emplace_back(tok, names.size() - 1);
    return true;
  });
  if (p.failed) return p.error;
  if (p.hosts == 0) return parse_error{1, 1, "the host list is empty", errc::empty_cluster};
  out.hosts = static_cast<std::size_t>(p.hosts);
  out.bytes = static_cast<std::size_t>(p.bytes);
  return out;
}
}  // namespace detail

[[nodiscard]] inline result<std::vector<std::string>> expand_hostlist(
    std::string_view expr, std::size_t max_hosts = std::size_t{1} << 20,
    std::size_t max_bytes = std::size_t{1} << 27) {
  auto parsed = detail::parse_hostlist(expr, max_hosts, max_bytes);
  if (!parsed) return parsed.error();
  std::vector<std::string> hosts;
  hosts.reserve(parsed->hosts);
  parsed->each([&](std::string_view host) { hosts.emplace_back(host); });
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
  const std::size_t i = trailing_digits(host);
  split_host s{host};
  // No digits, or more than fit a number: the whole name is text.
  if (i == host.size() || !digits_value(host.substr(i), s.number)) return {host};
  s.prefix = host.substr(0, i);
  s.numbered = true;
  s.width = host.size() - i;
  return s;
}
// Slurm's _width_equiv: two widths print the same numbers when the zero padding of each number
// is the same under either width; then the narrower-padded width is taken for both.
inline bool widths_combine(unsigned long long n, std::size_t& wn, unsigned long long m,
                           std::size_t& wm) {
  if (wn == wm) return true;
  const auto pad = [](unsigned long long v, std::size_t w) {
    return w > decimal_digits(v) ? w - decimal_digits(v) : 0;
  };
  const bool n_same = pad(n, wn) == pad(n, wm);
  const bool m_same = pad(m, wm) == pad(m, wn);
  if (!n_same && !m_same) return false;
  if (!n_same)
    wm = wn;
  else
    wn = wm;
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
      if (tail.host.numbered && s.numbered && tail.host.prefix == s.prefix && tail.hi != ~0ull &&
          tail.hi + 1 == s.number &&
          detail::widths_combine(tail.host.number, tail_width, s.number, width)) {
        tail.host.width = tail_width;
        tail.hi = s.number;
        continue;
      }
    }
    ranges.push_back({s, s.number});
  }
  std::string out;
  const auto number = [&out](unsigned long long n, std::size_t width) {
    detail::append_number(out, n, width);
  };
  for (std::size_t i = 0; i < ranges.size();) {
    if (!out.empty()) out += ',';
    const range& first = ranges[i];
    out.append(first.host.prefix.data(), first.host.prefix.size());
    if (!first.host.numbered) {
      ++i;
      continue;
    }
    std::size_t end = i + 1;
    while (end < ranges.size() && ranges[end].host.numbered &&
           ranges[end].host.prefix == first.host.prefix)
      ++end;
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

/// compress_hostlist, for names from the input: an error, naming the host and its place (from 1),
/// when a name is not one that its own host list gives back (expand_hostlist(name) == {name}):
/// an empty name, and names with ',', brackets or blanks, which a reader of the list would split
/// or expand ("a[1]" reads back as "a1", "a,b" as two hosts, "x[" not at all).
[[nodiscard]] inline result<std::string> try_compress_hostlist(
    const std::vector<std::string>& hosts) {
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const std::string& h = hosts[i];
    std::string why;
    if (h.empty()) {
      why = "an empty name";
    } else {
      const auto back =
          expand_hostlist(h, 2, 2 * h.size() + 2);  // no name it gives is longer than h
      if (!back)
        why = detail::concat("a host list cannot hold it (", back.error().message, ")");
      else if (back->size() != 1 || back->front() != h)
        why = detail::concat(
            "a host list would read it as ", back->size() == 1 ? "the host " : "the hosts ",
            detail::quoted(back->size() == 1 ? back->front() : compress_hostlist(*back)));
    }
    if (!why.empty())
      return parse_error{0, 0, detail::concat("host ", i + 1, " (", detail::quoted(h), "): ", why),
                         errc::bad_host};
  }
  return compress_hostlist(hosts);
}

namespace detail {
struct count_item {
  int count;
  unsigned long long repeat;
};
struct count_list {
  std::vector<count_item> items;
  unsigned long long total = 0;  // the number of values the list expands to
};

// Reads "2(x3),1" into items without expanding it: memory is linear in the text, and the total
// is exact (a repeat count or a total past 2^64 - 1 is an error, never a wrapped number).
inline result<count_list> parse_count_list(std::string_view expr) {
  count_list list;
  std::size_t i = 0;
  const auto number = [&](unsigned long long limit, unsigned long long& value,
                          const char* what) -> result<bool> {
    const std::size_t start = i;
    const digit_run run = read_digits(expr, start, limit);
    if (run.too_large)
      return parse_error{1, start + 1, concat(what, " is larger than ", limit),
                         errc::limit_exceeded};
    value = run.value;
    i = run.end;
    if (i == start)
      return parse_error{
          1, start + 1,
          concat("expected ", what, ", got ",
                 i < expr.size() ? quoted(character_at(expr, i)) : std::string("the end"))};
    return true;
  };
  if (expr.empty()) return parse_error{1, 1, "the count list is empty"};
  while (true) {
    unsigned long long count = 0, repeat = 1;
    const std::size_t item_start = i;
    if (auto r = number(0x7fffffffull, count, "a count"); !r) return r.error();
    if (i < expr.size() && expr[i] == '(') {
      const std::size_t open = i;
      if (i + 1 >= expr.size() || expr[i + 1] != 'x')
        return parse_error{1, i + 2, "expected 'x' after '(' as in 2(x3)"};
      i += 2;
      if (auto r = number(~0ull, repeat, "a repeat count"); !r) return r.error();
      if (repeat == 0) return parse_error{1, open + 3, "a repeat count must be at least 1"};
      if (i >= expr.size() || expr[i] != ')') return parse_error{1, i + 1, "expected ')'"};
      ++i;
    }
    if (!checked_add(list.total, repeat, list.total))
      return parse_error{1, item_start + 1, "the count list names more than 2^64 - 1 values",
                         errc::limit_exceeded};
    list.items.push_back({static_cast<int>(count), repeat});
    if (i == expr.size()) break;
    if (expr[i] != ',')
      return parse_error{1, i + 1,
                         concat("expected ',' or the end, got ", quoted(character_at(expr, i)))};
    ++i;
  }
  return list;
}

// No reserve here: the lists of a hetjob's components are appended one after another, and an
// exact reserve each time would copy everything so far each time.
inline void append_count_list(const count_list& list, std::vector<int>& out) {
  for (const count_item& it : list.items)
    out.insert(out.end(), static_cast<std::size_t>(it.repeat), it.count);
}

inline std::vector<int> expand_count_list(const count_list& list) {
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(list.total));
  append_count_list(list, out);
  return out;
}
}  // namespace detail

/// Expands a Slurm count list (SLURM_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE): "2(x3),1" gives
/// {2, 2, 2, 1}. Items are `count` or `count(xN)` with decimal digits only; counts are 0 to
/// INT_MAX, repeats 1 or more, and more than `max_nodes` values in all is an error found before
/// anything is allocated.
[[nodiscard]] inline result<std::vector<int>> expand_tasks_per_node(
    std::string_view expr, std::size_t max_nodes = std::size_t{1} << 20) {
  auto list = detail::parse_count_list(expr);
  if (!list) return list.error();
  if (list->total > max_nodes)
    return parse_error{1, 1,
                       detail::concat("the count list names ", list->total, " nodes, more than ",
                                      max_nodes, ", the limit (max_nodes)"),
                       errc::limit_exceeded};
  return detail::expand_count_list(*list);
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SLURM_HOSTLIST_HPP
