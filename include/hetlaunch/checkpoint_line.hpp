// SPDX-License-Identifier: MIT
// hetlaunch: the line a training script's rank 0 prints once a checkpoint is complete on every
// rank (hetlaunch_shares.checkpoint_saved): `HETLAUNCH_CHECKPOINT {"step": S}`. A launcher reads
// it to restart the job at a moment that loses no work (growing back, leaving a slow node out).
#ifndef HETLAUNCH_CHECKPOINT_LINE_HPP
#define HETLAUNCH_CHECKPOINT_LINE_HPP

#include <array>
#include <cmath>
#include <string>
#include <string_view>

#include "calibration.hpp"
#include "result.hpp"

namespace hetlaunch {

/// What a checkpoint line begins with; its JSON follows.
inline constexpr std::string_view checkpoint_prefix = "HETLAUNCH_CHECKPOINT ";

/// Reads the JSON of a HETLAUNCH_CHECKPOINT line (after the prefix): {"step": S}, S the step the
/// checkpoint resumes at, a non-negative integer. Other keys are skipped (keys are only ever
/// added). Refused, with the column (bad_checkpoint): text that is not such an object, no step,
/// a step given twice or not a whole number. O(text).
[[nodiscard]] inline result<long long, parse_error> parse_checkpoint_line(std::string_view text) {
  detail::measured_reader r(text, errc::bad_checkpoint);
  long long step = -1;
  static constexpr std::array<std::string_view, 1> keys = {"step"};
  const auto value = [&](std::size_t) -> bool {
    double v = 0;
    if (!r.number(v)) return false;
    if (!(v >= 0 && v <= 1e15 && std::floor(v) == v))
      return r.fail(
          detail::concat("step must be a non-negative integer, got ", detail::number_text(v)));
    step = static_cast<long long>(v);
    return true;
  };
  const auto read = [&] { return r.object(keys, 1, value); };
  if (!read()) return r.error();
  return step;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_CHECKPOINT_LINE_HPP
