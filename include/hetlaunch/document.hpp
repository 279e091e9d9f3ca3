// SPDX-License-Identifier: MIT
// hetlaunch: a JSON-shaped document, written as JSON or as YAML that every YAML reader reads the
// same way (the JobSet manifest is built as one).
#ifndef HETLAUNCH_DOCUMENT_HPP
#define HETLAUNCH_DOCUMENT_HPP

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/host_name.hpp"
#include "detail/json_string.hpp"
#include "detail/text.hpp"

namespace hetlaunch {

/// A JSON-shaped value, written as JSON (to_json) or as YAML that every YAML reader reads the
/// same way (to_yaml): what try_jobset_document returns, for a program that adds to a manifest
/// before writing it.
struct document {
  enum class kind { string, number, boolean, array, object } type = kind::string;
  std::string text;  // string, or number/boolean spelled
  // Object members, or array items (whose keys are empty). Two lists, not one of pairs: a pair
  // cannot hold the document while it is still being defined.
  std::vector<std::string> keys;
  std::vector<document> values;

  static document make(kind k, std::string text) {
    document d;
    d.type = k;
    d.text = std::move(text);
    return d;
  }
  static document str(std::string s) { return make(kind::string, std::move(s)); }
  static document num(long long n) { return make(kind::number, std::to_string(n)); }
  static document boolean(bool b) { return make(kind::boolean, b ? "true" : "false"); }
  static document array() { return make(kind::array, {}); }
  static document object() { return make(kind::object, {}); }
  document& add(std::string key, document value) {
    keys.push_back(std::move(key));
    values.push_back(std::move(value));
    return values.back();
  }
  document& push(document value) { return add(std::string(), std::move(value)); }
  [[nodiscard]] std::size_t size() const noexcept { return values.size(); }
};

namespace detail {

// Plain YAML scalars only where no reader could take them for another type or for syntax: a
// letter first, then letters, digits and "-_./", and not one of the words YAML 1.1 readers
// (PyYAML, the go-yaml behind kubectl) take for a boolean or null. Everything else is written
// double-quoted: numbers in any spelling ("1e-4", "0x2a", "1_000", "012", ".5", "1:30", "-0"),
// "~", "null", "yes", "on", and text with any other character.
inline bool plain_yaml(std::string_view s) {
  if (s.empty() || s.size() > 200 || !is_alpha(s[0])) return false;
  for (std::string_view word : {"true", "false", "null", "yes", "no", "on", "off", "y", "n"}) {
    if (s.size() != word.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < s.size(); ++i) same = same && to_lower(s[i]) == word[i];
    if (same) return false;
  }
  for (char c : s)
    if (!is_alpha(c) && !is_digit(c) && c != '-' && c != '_' && c != '.' && c != '/') return false;
  return true;
}

// The first byte of `s` that does not start a well-formed UTF-8 character, or s.size().
inline std::size_t first_non_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return s.size();
}

inline void append_scalar(std::string& out, const document& d, bool yaml) {
  if (d.type != document::kind::string)
    out += d.text;
  else if (yaml && plain_yaml(d.text))
    out += d.text;
  else
    append_json_string(out, d.text);
}

inline void write_json(std::string& out, const document& d, std::size_t indent) {
  const bool object = d.type == document::kind::object;
  if (!object && d.type != document::kind::array) return append_scalar(out, d, false);
  if (d.values.empty()) {
    out += object ? "{}" : "[]";
    return;
  }
  out += object ? "{\n" : "[\n";
  for (std::size_t i = 0; i < d.size(); ++i) {
    out.append(indent + 2, ' ');
    if (object) {
      append_json_string(out, d.keys[i]);
      out += ": ";
    }
    write_json(out, d.values[i], indent + 2);
    out += i + 1 < d.size() ? ",\n" : "\n";
  }
  out.append(indent, ' ');
  out += object ? '}' : ']';
}

inline bool is_collection(const document& d) {
  return (d.type == document::kind::object || d.type == document::kind::array) && !d.values.empty();
}

inline void write_yaml_value(std::string& out, const document& d, std::size_t indent);

// The members of an object or the items of an array, each on its own line at `indent`; the first
// line's indentation is already written when `first_inline`.
inline void write_yaml_block(std::string& out, const document& d, std::size_t indent,
                             bool first_inline) {
  const bool object = d.type == document::kind::object;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i > 0 || !first_inline) out.append(indent, ' ');
    const document& value = d.values[i];
    if (object) {
      if (plain_yaml(d.keys[i]))
        out += d.keys[i];
      else
        append_json_string(out, d.keys[i]);
      out += ':';
      if (is_collection(value)) {
        out += '\n';
        write_yaml_block(out, value, value.type == document::kind::array ? indent : indent + 2,
                         false);
        continue;
      }
      out += ' ';
      write_yaml_value(out, value, indent + 2);
      out += '\n';
    } else {
      out += "- ";
      if (is_collection(value)) {
        write_yaml_block(out, value, indent + 2, true);
        continue;
      }
      write_yaml_value(out, value, indent + 2);
      out += '\n';
    }
  }
}

inline void write_yaml_value(std::string& out, const document& d, std::size_t indent) {
  if (d.type == document::kind::object || d.type == document::kind::array) {
    if (d.values.empty())
      out += d.type == document::kind::object ? "{}" : "[]";
    else
      write_yaml_block(out, d, indent, true);
    return;
  }
  append_scalar(out, d, true);
}

}  // namespace detail

/// The document as JSON, indented by two spaces, with a final line break.
[[nodiscard]] inline std::string to_json(const document& d) {
  std::string out;
  detail::write_json(out, d, 0);
  out += '\n';
  return out;
}

/// The document as YAML (block style; strings quoted wherever a YAML 1.1 or 1.2 reader could
/// read them as something else).
[[nodiscard]] inline std::string to_yaml(const document& d) {
  std::string out;
  detail::write_yaml_block(out, d, 0, false);
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_DOCUMENT_HPP
