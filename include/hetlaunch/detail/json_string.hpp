// SPDX-License-Identifier: MIT
// hetlaunch: text written as a JSON (and YAML) string.
#ifndef HETLAUNCH_DETAIL_JSON_STRING_HPP
#define HETLAUNCH_DETAIL_JSON_STRING_HPP

#include <cstddef>
#include <string>
#include <string_view>

#include "text.hpp"

namespace hetlaunch {
namespace detail {

// Appends `s` as a JSON string that is valid UTF-8 whatever the bytes (and a YAML double-quoted
// scalar too): UTF-8 characters stay as they are, and a byte that is not part of one is written
// \udcXX (Python's surrogateescape: json.loads, then .encode("utf-8", "surrogateescape"), gives
// the bytes back). C1 controls, line and paragraph separators, the byte order mark and the other
// invisible characters are written \uXXXX: a YAML reader takes U+0085 and U+2028 for line breaks
// and folds them into a space, and a person reading the file cannot see them.
template <class Unused = void>
void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_sequence_length(s, i);
    if (n > 1) {
      const unsigned cp = utf8_code_point(s, i, n);
      if (invisible_code_point(cp)) {
        out += "\\u";
        for (int shift = 12; shift >= 0; shift -= 4) out += hex[(cp >> shift) & 15u];
      } else {
        out.append(s.data() + i, n);
      }
      i += n;
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f || c >= 0x80) {
      out += c >= 0x80 ? "\\udc" : "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_JSON_STRING_HPP
