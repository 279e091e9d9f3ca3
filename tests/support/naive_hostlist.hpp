// SPDX-License-Identifier: MIT
// Slurm's host list expansion written the obvious way, as a reference for the real one: recursion
// over the brackets of a name, no limits, no care for cost. Only for short inputs.
#ifndef HETLAUNCH_TESTS_NAIVE_HOSTLIST_HPP
#define HETLAUNCH_TESTS_NAIVE_HOSTLIST_HPP

#include <string>
#include <string_view>
#include <vector>

namespace hetlaunch_test {

// Slurm's expansion written the obvious way: recursion over the brackets of the prefix, no
// limits. Only for short inputs.
struct naive_hostlist {
  bool failed = false;
  // Expansion stops (as a failure) past these, so that a reference for a capped expansion cannot
  // exhaust memory on an input whose names run into the billions.
  std::size_t max_names = static_cast<std::size_t>(-1);
  std::size_t max_bytes = static_cast<std::size_t>(-1);
  std::size_t bytes = 0;
  static bool number(std::string_view t, unsigned long long& v, std::size_t& end) {
    std::size_t i = 0;
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\v' ||
                            t[i] == '\f' || t[i] == '\r'))
      ++i;
    if (i < t.size() && t[i] == '+') ++i;
    const std::size_t d = i;
    v = 0;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i)
      v = v * 10 + static_cast<unsigned>(t[i] - '0');
    end = i == d ? 0 : i;
    return i - d < 19;  // short inputs only: no overflow to model
  }
  struct range {
    unsigned long long lo, hi;
    std::size_t width;
  };
  bool ranges(std::string_view text, std::vector<range>& out) {
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = text.find(',', start);
      const std::string_view item = text.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (item.find('x') != std::string_view::npos) return false;
      const std::size_t dash = item.find('-');
      const std::string_view lo = item.substr(0, dash);
      const std::string_view hi =
          dash == std::string_view::npos ? std::string_view() : item.substr(dash + 1);
      if (!hi.empty() && hi[0] == '-') return false;
      range r{0, 0, lo.size()};
      std::size_t le = 0, he = 0;
      if (!number(lo, r.lo, le) || le == 0) return false;
      if (!hi.empty()) {
        if (!number(hi, r.hi, he) || he == 0 || he != hi.size()) return false;
      } else {
        r.hi = r.lo;
        if (le != lo.size()) return false;
      }
      if (r.lo > r.hi || r.hi - r.lo >= 65536) return false;
      out.push_back(r);
      if (comma == std::string_view::npos) return true;
      start = comma + 1;
    }
  }
  static std::string num(unsigned long long n, std::size_t w) {
    std::string d = std::to_string(n);
    return std::string(d.size() < w ? w - d.size() : 0, '0') + d;
  }
  void push(const std::string& prefix, const std::vector<range>& last, std::string_view suffix,
            std::vector<std::string>& out) {
    const std::size_t open = prefix.rfind('[');
    const std::size_t close = open == std::string::npos ? std::string::npos : prefix.rfind(']');
    if (open != std::string::npos && close != std::string::npos && close > open) {
      std::vector<range> outer;
      if (!ranges(std::string_view(prefix).substr(open + 1, close - open - 1), outer)) {
        failed = true;
        return;
      }
      unsigned long long n = 0;
      for (const range& r : outer) n += r.hi - r.lo + 1;
      if (n > 65536) {
        failed = true;
        return;
      }
      for (const range& r : outer)
        for (unsigned long long j = r.lo; j <= r.hi && !failed; ++j)
          push(prefix.substr(0, open) + num(j, r.width) + prefix.substr(close + 1), last, suffix,
               out);
      return;
    }
    for (const range& r : last)
      for (unsigned long long j = r.lo; j <= r.hi && !failed; ++j) {
        out.push_back(prefix + num(j, r.width) + std::string(suffix));
        bytes += out.back().size();
        if (out.size() > max_names || bytes > max_bytes) failed = true;
      }
  }
  // Returns false on an error.
  bool expand(std::string_view expr, std::vector<std::string>& out) {
    std::size_t i = 0;
    while (i < expr.size()) {
      const auto sep = [](char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n'; };
      while (i < expr.size() && sep(expr[i])) ++i;
      if (i == expr.size()) break;
      const std::size_t start = i;
      while (i < expr.size() && !sep(expr[i])) {
        if (expr[i] == '[') {
          const std::size_t c = expr.find(']', i);
          i = c == std::string_view::npos ? i + 1 : c + 1;
        } else {
          ++i;
        }
      }
      const std::string_view tok = expr.substr(start, i - start);
      const std::size_t open = tok.rfind('[');
      if (open == std::string_view::npos) {
        out.emplace_back(tok);
        bytes += tok.size();
        if (out.size() > max_names || bytes > max_bytes) return false;
        continue;
      }
      const std::size_t close = tok.find(']', open);
      if (close == std::string_view::npos) return false;
      std::vector<range> last;
      if (!ranges(tok.substr(open + 1, close - open - 1), last)) return false;
      push(std::string(tok.substr(0, open)), last, tok.substr(close + 1), out);
      if (failed) return false;
    }
    return !out.empty();
  }
};

}  // namespace hetlaunch_test

#endif
