// SPDX-License-Identifier: MIT
// hetlaunch: a failed worker's own report, the root cause a scheduler acts on. torchrun writes
// the error of a worker whose entry point is wrapped in @record
// (torch.distributed.elastic.multiprocessing.errors) to the worker's TORCHELASTIC_ERROR_FILE.
// The line writer of a node's workers (ssh.hpp) relays the first line of that error, once the
// worker has ended, as `HETLAUNCH_ERROR {"rank": R, "local_rank": L, "error": "..."}`; torchrun's
// own "failed (exitcode: N) local_rank: L" line names which worker failed first and its exit code.
#ifndef HETLAUNCH_FAILURE_REPORT_HPP
#define HETLAUNCH_FAILURE_REPORT_HPP

#include <array>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "calibration.hpp"
#include "result.hpp"
#include "text.hpp"

namespace hetlaunch {

/// What a worker's error line begins with; its JSON follows.
inline constexpr std::string_view worker_error_prefix = "HETLAUNCH_ERROR ";

/// The most bytes of a worker's error a report keeps (node_exited's `error`).
inline constexpr std::size_t worker_error_bytes = 1024;

/// The first line of `message`, at most `most` bytes, cut before a UTF-8 character that would
/// not fit whole; a line break is "\n", "\r\n" or "\r". O(result).
[[nodiscard]] inline std::string first_error_line(std::string_view message,
                                                  std::size_t most = worker_error_bytes) {
  std::string_view line = message.substr(0, message.find_first_of("\r\n"));
  if (line.size() <= most) return std::string(line);
  std::size_t cut = most;
  // Back over continuation bytes (10xxxxxx) to the start of the character that does not fit.
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return std::string(line.substr(0, cut));
}

/// One worker's error report.
struct worker_error {
  long long rank = 0;
  long long local_rank = 0;
  std::string error;  ///< first_error_line of the error: at most worker_error_bytes
};

/// Reads the JSON of a HETLAUNCH_ERROR line (after the prefix): {"rank": R, "local_rank": L,
/// "error": "TEXT"}, all three required; the error is kept as first_error_line keeps it. Other
/// keys are skipped (keys are only ever added). Refused, with the column (bad_worker_error): text
/// that is not such an object, a key given twice, a rank or local rank that is not a
/// non-negative integer. O(text).
[[nodiscard]] inline result<worker_error, parse_error> parse_worker_error_line(
    std::string_view text) {
  detail::measured_reader r(text, errc::bad_worker_error);
  worker_error e;
  static constexpr std::array<std::string_view, 3> keys = {"rank", "local_rank", "error"};
  std::string said;
  const auto value = [&](std::size_t k) -> bool {
    if (keys[k] == "error") {
      if (!r.string(said)) return false;
      e.error = first_error_line(said);
      return true;
    }
    double v = 0;
    if (!r.number(v)) return false;
    if (!(v >= 0 && v <= 1e15 && std::floor(v) == v))
      return r.fail(
          detail::concat(keys[k], " must be a non-negative integer, got ", detail::number_text(v)));
    (k == 0 ? e.rank : e.local_rank) = static_cast<long long>(v);
    return true;
  };
  const auto read = [&] { return r.object(keys, keys.size(), value); };
  if (!read()) return r.error();
  return e;
}

/// What torchrun's agent says of a failed worker: "failed (exitcode: N) local_rank: L (pid: P) of
/// binary: ..." (torch 1.13 through 2.x), the first failure of the worker group. N is negative
/// for a worker killed by a signal (-9).
struct torchrun_failure {
  int exitcode = 0;
  long long local_rank = 0;
};

/// The failure torchrun's line reports, or nothing for any other line. A worker's own line
/// (beginning "[", as "[rank 1] " or "[default1]:") is never torchrun's. O(line).
[[nodiscard]] inline std::optional<torchrun_failure> parse_torchrun_failure(std::string_view line) {
  if (line.substr(0, 1) == "[") return std::nullopt;
  constexpr std::string_view code_word = "failed (exitcode: ", rank_word = " local_rank: ";
  const std::size_t at = line.find(code_word);
  if (at == std::string_view::npos) return std::nullopt;
  const std::size_t rank_at = line.find(rank_word, at);
  if (rank_at == std::string_view::npos) return std::nullopt;
  const auto integer = [](std::string_view text, long long low,
                          long long high) -> std::optional<long long> {
    std::size_t end = text.find_first_not_of("-0123456789");
    text = text.substr(0, end);
    return parse_integer(text, low, high);
  };
  const std::string_view code_text = line.substr(at + code_word.size());
  const auto code = integer(code_text.substr(0, code_text.find(')')), -(1 << 30), 1 << 30);
  const auto local = integer(line.substr(rank_at + rank_word.size()), 0, 1 << 30);
  torchrun_failure f;
  f.exitcode = static_cast<int>(code.value_or(0));
  f.local_rank = local.value_or(0);
  return f;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_FAILURE_REPORT_HPP
