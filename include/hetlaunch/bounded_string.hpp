// SPDX-License-Identifier: MIT
// hetlaunch: bounded_string, a copy of a string's first bytes that a literal type can hold.
#ifndef HETLAUNCH_BOUNDED_STRING_HPP
#define HETLAUNCH_BOUNDED_STRING_HPP

#include <cstddef>
#include <string_view>
#include <type_traits>

namespace hetlaunch {

/// Owns a copy of up to `Capacity` bytes of a string, cut before a UTF-8 character that would
/// not fit, and remembers the original length. A literal type, so a diagnostic can own its text
/// and still be returned by constant expressions: it refers to nothing outside itself.
///
///   hetlaunch::bounded_string<8> s("gpu-node-17");   // s == "gpu-node" , s.full_size() == 11
template <std::size_t Capacity>
class bounded_string {
  static_assert(Capacity >= 4, "room for one UTF-8 character at least");
  char data_[Capacity] = {};
  std::size_t size_ = 0;
  std::size_t full_size_ = 0;

 public:
  constexpr bounded_string() noexcept = default;
  /// Copies `text`, or as much of it as fits.
  constexpr bounded_string(std::string_view text) noexcept  // NOLINT: a view converts to its copy
      : size_(text.size() < Capacity ? text.size() : Capacity), full_size_(text.size()) {
    if (size_ < full_size_) {
      // Back off to the start of the character that straddles the end.
      std::size_t start = size_;
      while (start > 0 && size_ - start < 3 &&
             (static_cast<unsigned char>(text[start]) & 0xc0) == 0x80)
        --start;
      if ((static_cast<unsigned char>(text[start]) & 0xc0) == 0xc0) size_ = start;
    }
    const char* in = text.data();
    for (std::size_t i = 0; i < size_; ++i) data_[i] = in[i];
  }

  /// Copies anything that converts to a string_view (a std::string, say).
  template <class Text,
            std::enable_if_t<std::is_convertible<const Text&, std::string_view>::value &&
                                 !std::is_same<Text, bounded_string>::value,
                             int> = 0>
  constexpr bounded_string(const Text& text) noexcept  // NOLINT: as above
      : bounded_string(std::string_view(text)) {}

  /// The bytes kept.
  [[nodiscard]] constexpr std::string_view view() const noexcept { return {data_, size_}; }
  constexpr operator std::string_view() const noexcept { return view(); }  // NOLINT: reads as text
  [[nodiscard]] constexpr const char* data() const noexcept { return data_; }
  [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }
  /// Precondition: i < size().
  constexpr char operator[](std::size_t i) const noexcept { return data_[i]; }
  [[nodiscard]] constexpr bool empty() const noexcept { return size_ == 0; }
  /// The length of the string that was copied; more than size() when it was cut.
  [[nodiscard]] constexpr std::size_t full_size() const noexcept { return full_size_; }
  [[nodiscard]] constexpr bool cut() const noexcept { return size_ < full_size_; }
  [[nodiscard]] static constexpr std::size_t capacity() noexcept { return Capacity; }

  /// Equal when the whole original string was kept and equals `text`.
  friend constexpr bool operator==(const bounded_string& a, std::string_view b) noexcept {
    return !a.cut() && a.view() == b;
  }
  friend constexpr bool operator==(std::string_view a, const bounded_string& b) noexcept {
    return b == a;
  }
  friend constexpr bool operator!=(const bounded_string& a, std::string_view b) noexcept {
    return !(a == b);
  }
  friend constexpr bool operator!=(std::string_view a, const bounded_string& b) noexcept {
    return !(b == a);
  }
  // Without these, comparing with a string literal would be ambiguous between the two above.
  friend constexpr bool operator==(const bounded_string& a, const char* b) noexcept {
    return a == std::string_view(b);
  }
  friend constexpr bool operator!=(const bounded_string& a, const char* b) noexcept {
    return !(a == b);
  }

  /// Writes the bytes kept to any stream that takes a string_view.
  template <class Stream>
  friend auto operator<<(Stream& out, const bounded_string& s)
      -> decltype(out << std::string_view()) {
    return out << s.view();
  }
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_BOUNDED_STRING_HPP
