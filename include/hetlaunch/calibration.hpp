// SPDX-License-Identifier: MIT
// hetlaunch: weights from measured speeds. A calibration run measures each node's samples per
// second per worker; the weights a hostfile needs are those speeds over the slowest node's, as
// exact decimals. Also the line a calibrating script prints, read strictly: `hetlaunch
// calibrate` trusts no number it has not checked.
#ifndef HETLAUNCH_CALIBRATION_HPP
#define HETLAUNCH_CALIBRATION_HPP

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/text.hpp"
#include "result.hpp"
#include "weight.hpp"

namespace hetlaunch {

/// The prefix of the one line rank 0 prints when a calibration run has measured enough steps.
inline constexpr std::string_view measured_prefix = "HETLAUNCH_MEASURED ";

namespace detail {
// A measured number as a message shows it: 0, -1, 1.5, 101.
inline std::string number_text(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.15g", v);
  return text;
}
}  // namespace detail

/// The weight of each rate (samples per second of one worker, by node): rate / slowest rate,
/// rounded to the nearest millionth (half up), as a decimal without trailing zeros. The slowest
/// node gets "1"; no weight is below 1 or above max_weight (a node a million times faster than
/// the slowest gets 1000000). Refused (bad_measurement, naming the node): no rate, or a rate that
/// is not a positive finite number. O(N).
[[nodiscard]] inline result<std::vector<std::string>, parse_error> weights_from_rates(
    const std::vector<double>& rates) {
  if (rates.empty()) return parse_error{0, 0, "no node was measured", errc::bad_measurement};
  double slowest = 0;
  for (std::size_t i = 0; i < rates.size(); ++i) {
    if (!(rates[i] > 0) || !std::isfinite(rates[i]))
      return parse_error{0, 0,
                         detail::concat("node ", i,
                                        ": samples per second must be a positive "
                                        "finite number, got ",
                                        detail::number_text(rates[i])),
                         errc::bad_measurement};
    if (i == 0 || rates[i] < slowest) slowest = rates[i];
  }
  std::vector<std::string> out;
  out.reserve(rates.size());
  for (const double rate : rates) {
    const double ratio = rate / slowest;  // >= 1, finite: both are positive and finite
    const std::int64_t micros = ratio >= static_cast<double>(max_weight)
                                    ? max_weight * weight_scale
                                    : static_cast<std::int64_t>(std::floor(
                                          ratio * static_cast<double>(weight_scale) + 0.5));
    std::string text = std::to_string(micros / weight_scale);
    std::int64_t fraction = micros % weight_scale;
    if (fraction != 0) {
      std::string digits = std::to_string(fraction);
      digits.insert(0, static_cast<std::size_t>(max_weight_fraction_digits) - digits.size(), '0');
      while (digits.back() == '0') digits.pop_back();
      text += "." + digits;
    }
    out.push_back(std::move(text));
  }
  return out;
}

/// One node's measurement, as the calibrating script reports it.
struct node_measurement {
  std::size_t node = 0;
  double samples_per_second = 0;  ///< per worker
  std::string weight;  ///< as the script computed it (informative; see weights_from_rates)
  /// A worker's own work between two steps (the optimizer's step, the loop, the loader): from
  /// its gradients reduced to its next step handed out; none when the line has none.
  std::optional<double> overhead_seconds;
  /// The gradient all-reduce of the job without this node (an all-reduce is as slow as its
  /// slowest member); none when the line has none.
  std::optional<double> allreduce_seconds_without;
};

/// A HETLAUNCH_MEASURED line, read.
struct measurement {
  long long step = 0;  ///< the steps measured
  std::vector<node_measurement> nodes;
  /// Each step's gradient all-reduce: from the last gradient to the gradients reduced on the
  /// rank that waits least (a script that reduces by itself: each step's time outside the
  /// slowest rank's computation); none when the line has none.
  std::optional<double> allreduce_seconds;
};

namespace detail {
// A strict reader of the one JSON object of a measured line: objects, arrays, strings, numbers,
// true, false and null, nested at most 8 deep (a hostile line cannot exhaust the stack).
class measured_reader {
  std::string_view text_;
  std::size_t at_ = 0;
  parse_error error_{};
  bool failed_ = false;
  errc code_;

 public:
  // `code`: the error code of what the text is (a measured line, a checkpoint line).
  explicit measured_reader(std::string_view text, errc code = errc::bad_measurement)
      : text_(text), code_(code) {}
  bool failed() const noexcept { return failed_; }
  const parse_error& error() const noexcept { return error_; }
  bool fail(std::string message) { return fail_at(at_ + 1, std::move(message)); }
  bool fail_at(std::size_t column, std::string message) {
    if (!failed_) error_ = parse_error{1, column, std::move(message), code_};
    failed_ = true;
    return false;
  }
  // The column of the next value (after blanks).
  std::size_t next_column() {
    blanks();
    return at_ + 1;
  }
  // JSON's white space: a line that ends in "\r\n" is read as one that ends in "\n".
  void blanks() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\r' || text_[at_] == '\n'))
      ++at_;
  }
  bool eat(char c) {
    blanks();
    if (at_ < text_.size() && text_[at_] == c) return ++at_, true;
    return false;
  }
  bool expect(char c) { return eat(c) || fail(concat("expected '", std::string(1, c), "'")); }
  bool at_end() {
    blanks();
    return at_ == text_.size();
  }
  // Takes a JSON null when one comes next; nothing otherwise.
  bool null() {
    blanks();
    if (text_.substr(at_, 4) != "null") return false;
    at_ += 4;
    return true;
  }
  bool string(std::string& out) {
    blanks();
    if (at_ >= text_.size() || text_[at_] != '"') return fail("expected a string");
    ++at_;
    out.clear();
    while (at_ < text_.size() && text_[at_] != '"') {
      char c = text_[at_++];
      if (static_cast<unsigned char>(c) < 0x20) return fail("a control character in a string");
      if (c == '\\') {
        if (at_ >= text_.size()) break;
        c = text_[at_++];
        if (c == 'n')
          c = '\n';
        else if (c == 't')
          c = '\t';
        else if (c != '"' && c != '\\' && c != '/')
          return fail("an escape this line never needs");
      }
      out += c;
    }
    if (at_ >= text_.size()) return fail("a string that does not end");
    ++at_;
    return true;
  }
  // A JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; "+5", "007", ".5" and "5."
  // are not.
  static bool json_number(std::string_view t) {
    std::size_t i = 0;
    const auto digits = [&] {
      const std::size_t from = i;
      while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
      return i > from;
    };
    if (i < t.size() && t[i] == '-') ++i;
    if (i < t.size() && t[i] == '0')
      ++i;
    else if (!digits())
      return false;
    if (i < t.size() && t[i] == '.' && (++i, !digits())) return false;
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
      ++i;
      if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
      if (!digits()) return false;
    }
    return i == t.size();
  }
  bool number(double& out) {
    blanks();
    const std::size_t start = at_;
    while (at_ < text_.size() &&
           (std::string_view("0123456789+-.eE").find(text_[at_]) != std::string_view::npos))
      ++at_;
    const std::string token(text_.substr(start, at_ - start));
    if (token.empty()) return fail("expected a number");
    if (!json_number(token)) {
      at_ = start;
      return fail(concat("not a JSON number: ", detail::quoted(token)));
    }
    char* end = nullptr;
    out = std::strtod(token.c_str(), &end);
    if (end != token.c_str() + token.size() || !std::isfinite(out)) {
      at_ = start;
      return fail(concat("not a number: ", detail::quoted(token)));
    }
    return true;
  }
  // Reads a whole line that is one object: each of `keys` at most once (`value(k)` reads key k's
  // value), other keys skipped (keys are only ever added), the first `required` keys required,
  // and nothing after it. The same errors, at the same columns, for every line that is one.
  template <std::size_t N, class Value>
  bool object(const std::array<std::string_view, N>& keys, std::size_t required, Value&& value) {
    static_assert(N <= 32, "one bit a key");
    std::uint32_t seen = 0;
    std::string key;
    if (!expect('{')) return false;
    if (eat('}')) return fail(concat("no \"", keys[0], "\""));
    do {
      const std::size_t key_column = next_column();
      if (!(string(key) && expect(':'))) return false;
      std::size_t k = 0;
      while (k < N && keys[k] != key) ++k;
      if (k == N) {
        if (!skip(2)) return false;
        continue;
      }
      if (seen & (std::uint32_t{1} << k))
        return fail_at(key_column, concat("\"", key, "\" is given twice"));
      seen |= std::uint32_t{1} << k;
      if (!value(k)) return false;
    } while (eat(','));
    if (!expect('}')) return false;
    if (!at_end()) return fail("text after the object");
    for (std::size_t k = 0; k < required; ++k)
      if (!(seen & (std::uint32_t{1} << k))) return fail(concat("no \"", keys[k], "\""));
    return true;
  }
  // Skips one value of any kind (a key this version does not read).
  bool skip(int depth) {
    blanks();
    if (depth > 8) return fail("nested too deep");
    if (at_ >= text_.size()) return fail("expected a value");
    const char c = text_[at_];
    std::string s;
    double d = 0;
    if (c == '"') return string(s);
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++at_;
      if (eat(close)) return true;
      do {
        if (c == '{' && !(string(s) && expect(':'))) return false;
        if (!skip(depth + 1)) return false;
      } while (eat(','));
      return expect(close);
    }
    for (std::string_view word : {"true", "false", "null"})
      if (text_.substr(at_, word.size()) == word) return at_ += word.size(), true;
    return number(d);
  }
};
}  // namespace detail

/// The most seconds a measured line may give a step's part (the all-reduce, a worker's own
/// work between steps): about 31 years, past any step, and far from what a double loses.
inline constexpr double max_measured_seconds = 1e9;

/// Reads the JSON of a HETLAUNCH_MEASURED line (after the prefix):
///   {"step": S, "nodes": [{"node": I, "samples_per_second": X, "weight": "W",
///                          "overhead_seconds": O, "allreduce_seconds_without": R}, ...],
///    "allreduce_seconds": A}
/// for a job of `node_count` nodes (O, R and A optional). Other keys are skipped (keys are only
/// ever added). Refused, with the column (bad_measurement): text that is not such an object, a
/// step that is not a positive integer, a node index that is not one of the job's or is given
/// twice, a rate that is not a positive finite number, seconds that are negative or past
/// max_measured_seconds, a node of the job with no measurement. O(text).
[[nodiscard]] inline result<measurement, parse_error> parse_measurement(std::string_view text,
                                                                        std::size_t node_count) {
  detail::measured_reader r(text);
  measurement m;
  bool has_step = false, has_nodes = false;
  std::vector<bool> seen(node_count, false);
  std::string key;
  const auto whole_number = [](double v, double most) {
    return v >= 0 && v <= most && std::floor(v) == v;
  };
  const auto read_node = [&]() -> bool {
    const std::size_t node_column = r.next_column();
    if (!r.expect('{')) return false;
    node_measurement n;
    bool has_node = false, has_rate = false, has_weight = false;
    if (!r.eat('}')) {
      do {
        const std::size_t key_column = r.next_column();
        if (!(r.string(key) && r.expect(':'))) return false;
        if ((key == "node" && has_node) || (key == "samples_per_second" && has_rate) ||
            (key == "weight" && has_weight) || (key == "overhead_seconds" && n.overhead_seconds) ||
            (key == "allreduce_seconds_without" && n.allreduce_seconds_without))
          return r.fail_at(key_column, detail::concat("\"", key, "\" is given twice"));
        const std::size_t column = r.next_column();
        double v = 0;
        if (key == "node") {
          if (!r.number(v)) return false;
          if (!whole_number(v, 1e15) || v >= static_cast<double>(node_count)) {
            return r.fail_at(column, detail::concat("node ", detail::number_text(v),
                                                    " is not a node of the job's ", node_count));
          }
          n.node = static_cast<std::size_t>(v);
          has_node = true;
        } else if (key == "samples_per_second") {
          if (!r.number(v)) return false;
          if (!(v > 0))
            return r.fail(
                detail::concat("samples_per_second must be above 0, got ", detail::number_text(v)));
          n.samples_per_second = v;
          has_rate = true;
        } else if (key == "weight") {
          if (!r.string(n.weight)) return false;
          has_weight = true;
        } else if (key == "overhead_seconds" || key == "allreduce_seconds_without") {
          if (!r.number(v)) return false;
          if (!(v >= 0 && v <= max_measured_seconds))
            return r.fail(
                detail::concat(key, " must be 0 or more seconds, got ", detail::number_text(v)));
          (key == "overhead_seconds" ? n.overhead_seconds : n.allreduce_seconds_without) = v;
        } else if (!r.skip(2)) {
          return false;
        }
      } while (r.eat(','));
      if (!r.expect('}')) return false;
    }
    if (!has_node || !has_rate) return r.fail("a node without \"node\" or \"samples_per_second\"");
    if (seen[n.node])
      return r.fail_at(node_column, detail::concat("node ", n.node, " is measured twice"));
    seen[n.node] = true;
    m.nodes.push_back(std::move(n));
    return true;
  };
  const auto read = [&]() -> bool {
    if (!r.expect('{')) return false;
    if (r.eat('}')) return r.fail("no \"step\" and no \"nodes\"");
    do {
      const std::size_t key_column = r.next_column();
      if (!(r.string(key) && r.expect(':'))) return false;
      if ((key == "step" && has_step) || (key == "nodes" && has_nodes))
        return r.fail_at(key_column, detail::concat("\"", key, "\" is given twice"));
      if (key == "step") {
        double v = 0;
        if (!r.number(v)) return false;
        if (!whole_number(v, 1e15) || v < 1)
          return r.fail(
              detail::concat("step must be a positive integer, got ", detail::number_text(v)));
        m.step = static_cast<long long>(v);
        has_step = true;
      } else if (key == "allreduce_seconds") {
        if (m.allreduce_seconds)
          return r.fail_at(key_column, "\"allreduce_seconds\" is given twice");
        double v = 0;
        if (!r.number(v)) return false;
        if (!(v >= 0 && v <= max_measured_seconds))
          return r.fail(detail::concat("allreduce_seconds must be 0 or more seconds, got ",
                                       detail::number_text(v)));
        m.allreduce_seconds = v;
      } else if (key == "nodes") {
        if (!r.expect('[')) return false;
        if (!r.eat(']')) {
          do {
            if (!read_node()) return false;
          } while (r.eat(','));
          if (!r.expect(']')) return false;
        }
        has_nodes = true;
      } else if (!r.skip(1)) {
        return false;
      }
    } while (r.eat(','));
    if (!r.expect('}')) return false;
    if (!r.at_end()) return r.fail("text after the object");
    if (!has_step || !has_nodes) return r.fail(has_step ? "no \"nodes\"" : "no \"step\"");
    for (std::size_t i = 0; i < node_count; ++i)
      if (!seen[i]) return r.fail(detail::concat("node ", i, " of the job was not measured"));
    return true;
  };
  if (!read()) return r.error();
  std::sort(m.nodes.begin(), m.nodes.end(),
            [](const node_measurement& a, const node_measurement& b) { return a.node < b.node; });
  return m;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_CALIBRATION_HPP
