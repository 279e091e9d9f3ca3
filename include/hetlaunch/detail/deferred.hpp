// SPDX-License-Identifier: MIT
// hetlaunch: naming a type through a template parameter, so that a template's use of it is
// compiled only where the template is.
#ifndef HETLAUNCH_DETAIL_DEFERRED_HPP
#define HETLAUNCH_DETAIL_DEFERRED_HPP

namespace hetlaunch {
namespace detail {

// T, named through a template parameter. A member, local, parameter or return type of a template
// declared with it is dependent, so the class it names (a std::vector, say) is instantiated only
// where the template is, not by every program that includes the header. Including cluster.hpp
// then costs little more than its standard headers.
template <class T, class>
struct deferred_type {
  using type = T;
};
template <class T, class Unused>
using deferred = typename deferred_type<T, Unused>::type;

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_DEFERRED_HPP
