// SPDX-License-Identifier: MIT
// hetlaunch: whether a rank is hung or slow, judged from its own reports. Each rank reports its
// step and its phase (computing a step, done computing it and waiting for the others in the
// collective, or writing a checkpoint) about once a second from a thread of its own
// (hetlaunch_shares), and its samples per second at the end of each window. A rank that stops
// (SIGSTOP, a frozen host) goes silent; one stuck in its own computation reports the same phase
// for ever; the ranks waiting for either in a collective report that they wait, and are its
// victims, never hung themselves. A rank is slow against its own earlier windows, never against
// ranks of another share: a slower GPU type is not slow.
#ifndef HETLAUNCH_RANK_HEALTH_HPP
#define HETLAUNCH_RANK_HEALTH_HPP

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "calibration.hpp"
#include "result.hpp"

namespace hetlaunch {

/// What a rank is doing, as it reports it.
enum class rank_phase : unsigned char {
  computing,      ///< a step started, its gradients not all computed yet
  computed,       ///< the step's own computation done: waiting for the others (the collective);
                  ///< also a rank's start-up, before its first step
  checkpointing,  ///< inside `with hetlaunch_shares.checkpointing():`
};

/// The phase's word in a progress line: "computing", "computed", "checkpointing".
constexpr std::string_view phase_name(rank_phase p) noexcept {
  switch (p) {
    case rank_phase::computing:
      return "computing";
    case rank_phase::computed:
      return "computed";
    case rank_phase::checkpointing:
      return "checkpointing";
  }
  return "computing";
}

/// A rank's last report, on the judge's clock (seconds): when it came and since when the rank
/// has been in its phase.
struct rank_progress {
  long long step = 0;
  rank_phase phase = rank_phase::computing;
  double phase_started = 0;  ///< the judge's time the phase began (the report's time less its age)
  double last_report = 0;    ///< the judge's time the last report came
};

/// How long a rank may go without progress: `hang_timeout` in a step, `checkpoint_timeout`
/// while it checkpoints (a checkpoint may hold the interpreter for minutes). 0: never hung.
struct hang_limits {
  double hang_timeout = 0;
  double checkpoint_timeout = 1800;
};

/// Why a rank is hung, if it is.
enum class rank_stall : unsigned char {
  none,    ///< reporting, and not stuck
  silent,  ///< no report for longer than its limit: the process (or its host) stopped
  stuck,   ///< computing (or checkpointing) the same step for longer than its limit
};

/// One rank's stall at `now`. A rank waiting for the others (`computed`) is never stuck: it is a
/// victim. The limit is checkpoint_timeout while it checkpoints, else hang_timeout; a limit of
/// 0 or less never judges. O(1).
[[nodiscard]] constexpr rank_stall judge_hang(const rank_progress& p, double now,
                                              const hang_limits& limits) noexcept {
  const double limit =
      p.phase == rank_phase::checkpointing ? limits.checkpoint_timeout : limits.hang_timeout;
  if (!(limit > 0)) return rank_stall::none;
  if (now - p.last_report > limit) return rank_stall::silent;
  if (p.phase != rank_phase::computed && now - p.phase_started > limit) return rank_stall::stuck;
  return rank_stall::none;
}

/// The hung ranks of a job at `now` (indices into `ranks`, ascending): those gone silent when
/// any has, else those stuck. When one rank stops, the others wait for it; only the one that
/// stopped goes silent, and it alone is named. O(R).
[[nodiscard]] inline std::vector<std::size_t> hung_ranks(const std::vector<rank_progress>& ranks,
                                                         double now, const hang_limits& limits) {
  std::vector<std::size_t> silent, stuck;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const rank_stall s = judge_hang(ranks[r], now, limits);
    if (s == rank_stall::silent) silent.push_back(r);
    if (s == rank_stall::stuck) stuck.push_back(r);
  }
  return silent.empty() ? stuck : silent;
}

/// The judgement of one window of a rank.
struct slow_judgement {
  bool slow = false;            ///< this window and the one before below expected / factor
  bool episode_starts = false;  ///< slow now and not in the window before: report it once
  double expected = 0;          ///< the rank's own expected rate (0 while it has too few windows)
  double samples_per_second = 0;
};

/// One rank's rates, window after window, judged against its own earlier windows: its expected
/// rate is the median of its healthy windows before the two judged (at least 3; the last 32
/// kept, so memory stays fixed over a run of any length). A window is below when its rate is
/// under expected / factor; the rank is slow when two windows in a row are below, and one episode
/// lasts until a window is not. Windows judged below never enter the expected rate, so a rank
/// that stays slow (or whose share a rebalance cut) stays measured against its healthy self.
/// Allocates nothing.
class slow_watch {
 public:
  static constexpr std::size_t kept_windows = 32;
  static constexpr std::size_t least_windows = 3;

  /// `factor` > 1 (the CLI's --slow-factor, 2 by default); any other value judges nothing slow.
  explicit constexpr slow_watch(double factor = 2) noexcept : factor_(factor) {}

  /// Judges the window whose rate is `samples_per_second` (a rate that is not a positive finite
  /// number is skipped: no window) and keeps it. O(kept_windows log kept_windows).
  slow_judgement add_window(double samples_per_second) noexcept {
    slow_judgement j;
    j.samples_per_second = samples_per_second;
    if (!(samples_per_second > 0) || !std::isfinite(samples_per_second)) return j;
    j.expected = expected();
    const bool below = j.expected > 0 && factor_ > 1 && samples_per_second < j.expected / factor_;
    j.slow = below && pending_count_ > 0 && pending_[pending_count_ - 1].below;
    j.episode_starts = j.slow && !in_episode_;
    if (j.slow) in_episode_ = true;
    if (!below) in_episode_ = false;
    // The two windows being judged wait here; the older leaves for the history when a third comes.
    if (pending_count_ == 2) {
      if (!pending_[0].below) keep(pending_[0].rate);
      pending_[0] = pending_[1];
      pending_count_ = 1;
    }
    pending_[pending_count_++] = {samples_per_second, below};
    return j;
  }

  /// The rank's expected rate now: the median of its kept healthy windows, 0 with fewer than 3.
  [[nodiscard]] double expected() const noexcept {
    if (count_ < least_windows) return 0;
    std::array<double, kept_windows> sorted{};
    std::copy(history_.begin(), history_.begin() + static_cast<std::ptrdiff_t>(count_),
              sorted.begin());
    const auto end = sorted.begin() + static_cast<std::ptrdiff_t>(count_);
    std::sort(sorted.begin(), end);
    return count_ % 2 ? sorted[count_ / 2] : (sorted[count_ / 2 - 1] + sorted[count_ / 2]) / 2;
  }

  /// Whether the rank is in a slow episode.
  [[nodiscard]] bool slow() const noexcept { return in_episode_; }

 private:
  struct window {
    double rate = 0;
    bool below = false;
  };
  void keep(double rate) noexcept {
    history_[next_] = rate;
    next_ = (next_ + 1) % kept_windows;
    count_ = std::min(count_ + 1, kept_windows);
  }

  double factor_;
  std::array<double, kept_windows> history_{};
  std::size_t count_ = 0, next_ = 0;
  std::array<window, 2> pending_{};
  std::size_t pending_count_ = 0;
  bool in_episode_ = false;
};

/// What a progress line begins with; its JSON follows.
inline constexpr std::string_view progress_prefix = "HETLAUNCH_PROGRESS ";

/// One progress line of a rank (hetlaunch_shares prints them about once a second while a
/// launcher asks for them with HETLAUNCH_PROGRESS_SECONDS).
struct progress_report {
  long long rank = 0;
  long long step = 0;
  rank_phase phase = rank_phase::computing;
  double phase_seconds = 0;  ///< how long the rank has been in its phase, on its own clock
  /// The rank's last complete window: its number (counted from 1) and its samples per second;
  /// 0 before its first window.
  long long window = 0;
  double samples_per_second = 0;
};

/// Reads the JSON of a HETLAUNCH_PROGRESS line (after the prefix): {"rank": R, "step": S,
/// "phase": "computing"|"computed"|"checkpointing", "phase_seconds": T, "window": W,
/// "samples_per_second": X}; rank, step and phase are required, the rest default to 0. Other
/// keys are skipped (keys are only ever added). Refused, with the column (bad_progress): text
/// that is not such an object, a key given twice, a rank, step or window that is not a
/// non-negative integer, a time or rate that is not a non-negative number, an unknown phase.
/// O(text).
[[nodiscard]] inline result<progress_report, parse_error> parse_progress_line(
    std::string_view text) {
  detail::measured_reader r(text, errc::bad_progress);
  progress_report p;
  static constexpr std::array<std::string_view, 6> keys = {
      "rank", "step", "phase", "phase_seconds", "window", "samples_per_second"};
  std::string word;
  const auto value = [&](std::size_t k) -> bool {
    const std::string_view key = keys[k];
    if (key == "phase") {
      const std::size_t column = r.next_column();
      if (!r.string(word)) return false;
      if (word == "computing")
        p.phase = rank_phase::computing;
      else if (word == "computed")
        p.phase = rank_phase::computed;
      else if (word == "checkpointing")
        p.phase = rank_phase::checkpointing;
      else
        return r.fail_at(column, detail::concat("unknown phase \"", word,
                                                "\" (computing, computed, checkpointing)"));
      return true;
    }
    double v = 0;
    if (!r.number(v)) return false;
    const bool whole = key == "rank" || key == "step" || key == "window";
    if (!(v >= 0 && v <= 1e15 && (!whole || std::floor(v) == v)))
      return r.fail(detail::concat(key, " must be a non-negative ", whole ? "integer" : "number",
                                   ", got ", detail::number_text(v)));
    if (key == "rank") p.rank = static_cast<long long>(v);
    if (key == "step") p.step = static_cast<long long>(v);
    if (key == "window") p.window = static_cast<long long>(v);
    if (key == "phase_seconds") p.phase_seconds = v;
    if (key == "samples_per_second") p.samples_per_second = v;
    return true;
  };
  const auto read = [&] { return r.object(keys, 3, value); };
  if (!read()) return r.error();
  return p;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_RANK_HEALTH_HPP
