// SPDX-License-Identifier: MIT
// hetlaunch: a constexpr heap sort (std::sort is constexpr only from C++20).
#ifndef HETLAUNCH_DETAIL_HEAP_SORT_HPP
#define HETLAUNCH_DETAIL_HEAP_SORT_HPP

#include <cstddef>

namespace hetlaunch {
namespace detail {

// Heap sort: O(n log n) in the worst case with no recursion and no extra memory, which keeps
// compile-time validation of thousands of nodes inside the compilers' default constexpr limits.
template <class T, class Less>
constexpr void sift_down(T* a, std::size_t root, std::size_t n, Less& less) noexcept {
  T value = a[root];
  while (true) {
    std::size_t child = 2 * root + 1;
    if (child >= n) break;
    if (child + 1 < n && less(a[child], a[child + 1])) ++child;
    if (!less(value, a[child])) break;
    a[root] = a[child];
    root = child;
  }
  a[root] = value;
}

template <class T, class Less>
constexpr void heap_sort(T* a, std::size_t n, Less less) noexcept {
  if (n < 2) return;
  for (std::size_t i = n / 2; i-- > 0;) sift_down(a, i, n, less);
  for (std::size_t end = n - 1; end > 0; --end) {
    const T top = a[0];
    a[0] = a[end];
    a[end] = top;
    sift_down(a, 0, end, less);
  }
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_HEAP_SORT_HPP
