// SPDX-License-Identifier: MIT
// hetlaunch 0.1.0: the whole library in one header.
// GENERATED FROM include/hetlaunch by tools/amalgamate.py; DO NOT EDIT.
// ---- hetlaunch/hetlaunch.hpp
// hetlaunch: every public header. Include <hetlaunch/cluster.hpp> for the core alone.
#ifndef HETLAUNCH_HETLAUNCH_HPP
#define HETLAUNCH_HETLAUNCH_HPP

// ---- hetlaunch/config.hpp
// hetlaunch: the configuration macros a program may define before including hetlaunch.
#ifndef HETLAUNCH_CONFIG_HPP
#define HETLAUNCH_CONFIG_HPP

#include <cstdio>
#include <cstdlib>

// HETLAUNCH_USE_EXCEPTIONS (0/1): whether result<T>::value() throws bad_result_access on an
// error. Defaults to whether the compiler has exceptions enabled; every translation unit of a
// program must agree on it.
#ifndef HETLAUNCH_USE_EXCEPTIONS
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#define HETLAUNCH_USE_EXCEPTIONS 1
#else
#define HETLAUNCH_USE_EXCEPTIONS 0
#endif
#endif

#if HETLAUNCH_USE_EXCEPTIONS && \
    !(defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND))
#error "hetlaunch: HETLAUNCH_USE_EXCEPTIONS is 1 but exceptions are disabled in this build"
#endif

// HETLAUNCH_ON_FAILURE(message): what happens when a precondition is broken at run time (an
// out-of-range node index passed to an unchecked accessor), or when result<T>::value() is called
// on an error without exceptions. It must not return. The default prints the message and aborts.
#ifndef HETLAUNCH_ON_FAILURE
#define HETLAUNCH_ON_FAILURE(message)                                                          \
  (std::fputs("hetlaunch: ", stderr), std::fputs((message), stderr), std::fputc('\n', stderr), \
   std::abort())
#endif

#endif  // HETLAUNCH_CONFIG_HPP
// ---- hetlaunch/version.hpp
// hetlaunch: version of this header set.
#ifndef HETLAUNCH_VERSION_HPP
#define HETLAUNCH_VERSION_HPP

#define HETLAUNCH_VERSION_MAJOR 0
#define HETLAUNCH_VERSION_MINOR 1
#define HETLAUNCH_VERSION_PATCH 0
/// MMmmpp: 0.1.0 is 100, 1.2.3 is 10203.
#define HETLAUNCH_VERSION \
  (HETLAUNCH_VERSION_MAJOR * 10000 + HETLAUNCH_VERSION_MINOR * 100 + HETLAUNCH_VERSION_PATCH)

#endif  // HETLAUNCH_VERSION_HPP
// ---- hetlaunch/result.hpp
// hetlaunch: result<T>, a value or an error, usable with and without exceptions.
#ifndef HETLAUNCH_RESULT_HPP
#define HETLAUNCH_RESULT_HPP

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

// ---- hetlaunch/detail/config.hpp
// hetlaunch: the one place that reports a broken contract (through HETLAUNCH_ON_FAILURE).
#ifndef HETLAUNCH_DETAIL_CONFIG_HPP
#define HETLAUNCH_DETAIL_CONFIG_HPP


namespace hetlaunch {
namespace detail {

// Deliberately not constexpr: reaching it during constant evaluation makes the expression
// non-constant, so a broken precondition in a constant expression is a compile error whose
// diagnostic shows the literal message on the calling line.
[[noreturn]] inline void precondition_violated(const char* message) noexcept {
  HETLAUNCH_ON_FAILURE(message);
#if defined(__GNUC__) || defined(__clang__)
  __builtin_unreachable();
#endif
}

// Checks a documented precondition. Unlike assert() it stays on in release builds: the cost is a
// predictable branch, and the alternative is undefined behaviour on user input. In a constant
// expression a broken precondition is a compile error that quotes `message`.
constexpr void expects(bool condition, const char* message) noexcept {
  if (!condition) precondition_violated(message);
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_CONFIG_HPP
// ---- hetlaunch/errc.hpp
// hetlaunch: errc, the stable code of every error the library reports.
#ifndef HETLAUNCH_ERRC_HPP
#define HETLAUNCH_ERRC_HPP

#include <string_view>

namespace hetlaunch {

/// What is wrong. Stable: values are never renumbered.
enum class errc : int {
  ok = 0,
  empty_cluster = 1,        // no nodes
  bad_nproc = 2,            // a node's nproc < 1
  world_size_overflow = 3,  // the sum of nproc exceeds INT_MAX (torch ranks are 32-bit)
  bad_host = 4,             // not an RFC 1123 name or IP literal (see host_issue)
  duplicate_host = 5,       // two nodes name the same host (case-insensitive)
  empty_role = 6,           // role ""
  bad_role = 7,  // a role torchrun's command line cannot carry (blank, control, leading '-')
  node_out_of_range = 8,          // a node index >= node_count()
  local_rank_out_of_range = 9,    // a local rank outside [0, nproc)
  global_rank_out_of_range = 10,  // a global rank outside [0, world_size)
  // Launch options (launch_options.hpp, torchrun_argv.hpp).
  bad_port = 11,                     // master_port outside 1..65535
  bad_master_addr = 12,              // master_addr not a valid host or IP literal
  missing_rdzv_id = 13,              // c10d without an rdzv_id
  empty_script = 14,                 // no training script
  empty_program = 15,                // no launcher program
  bad_max_restarts = 16,             // max_restarts < 0
  ranks_decided_at_rendezvous = 17,  // c10d: torchrun orders agents when they meet
  dash_flags_need_torch_2 = 18,      // --nproc-per-node spellings exist from torch 2.0
  too_few_processes = 19,            // accelerate --multi_gpu needs 2 processes or more
  // A worker's actual environment compared with the plan (check_worker_env).
  env_missing = 20,                         // a variable torchrun always sets is absent
  env_not_a_number = 21,                    // a variable that must be an integer is not
  world_size_mismatch = 22,                 // WORLD_SIZE differs from the plan
  group_rank_out_of_range = 23,             // GROUP_RANK is not a node of the plan
  local_world_size_mismatch = 24,           // LOCAL_WORLD_SIZE differs from the node's nproc
  rank_mismatch = 25,                       // RANK is not global_rank(GROUP_RANK, LOCAL_RANK)
  identical_workers_on_heterogeneous = 26,  // TORCH_ELASTIC_WORKER_IDENTICAL=1 breaks mixed nodes
  bad_rendezvous_timeout = 27,              // rendezvous_timeout < 0
  overriding_torchrun_arg = 28,  // an extra torchrun argument names a flag hetlaunch computes
  script_looks_like_option =
      29,  // a script starting with '-', which torchrun would read as its own option
  // Text inputs (parse_error::code); topology problems found while reading keep their codes above.
  bad_syntax = 30,      // the text is not in the format (a hostfile line, a host list, a count)
  limit_exceeded = 31,  // more hosts, bytes or devices than the stated limit
  count_mismatch = 32,  // a list of counts does not give one per host
  unknown_host = 33,    // a filter names a host or device the cluster does not have
  no_devices = 34,      // a filter leaves nothing to run on
  // Launching over ssh (ssh.hpp).
  bad_env_name = 35,    // a variable name a shell cannot set
  bad_kill_after = 36,  // ssh_options::kill_after outside 1..3600 seconds
  // Kubernetes (jobset.hpp).
  bad_name = 37,       // not a DNS label (lower-case letters, digits, '-'; a letter first)
  name_too_long = 38,  // a generated host name would pass 63 characters
  empty_image = 39,    // no container image
  bad_group = 40,      // a group without nodes or GPUs
  too_many_pods = 41,  // a group past an Indexed Job's 100,000 completions, or all past 2^20 pods
  virtual_local_rank =
      42,  // torchrun's --virtual-local-rank, whose workers the plan does not describe
  // text for other programs
  not_utf8 = 43,  // a text that must reach its reader as UTF-8 (Kubernetes) is not
  nul_byte = 44,  // a NUL byte, which no argument or variable can carry
  // Work shares (shares.hpp).
  bad_weight =
      45,  // a node weight that is not a decimal in (0, 1000000] with at most 6 fractional digits
  global_batch_too_small =
      46,                 // a global batch below the world size: some rank would get no sample
  bad_global_batch = 47,  // a negative global batch
  batch_mismatch = 48,    // a worker's HETLAUNCH_*BATCH* variable differs from the plan
  // CPU binding (cpu_binding.hpp).
  binding_entrypoint =
      49,  // with numa_binding, an extra torchrun argument that changes how workers start
  binding_not_carried = 50,  // numa_binding for a command that cannot carry it (accelerate's)
  // Variables (worker_variables.hpp).
  owned_variable =
      51,  // a user's variable that the launch sets itself (HETLAUNCH_GLOBAL_BATCH, ...)
  unplanned_share = 52,  // a work-share variable is set, but the plan has no global batch
  // Slurm batch scripts (slurm_batch.hpp).
  bad_sbatch_option = 53,       // not an sbatch option, or one whose value would be the next line
  shrink_needs_one_group = 54,  // exclude_failed in a job of several components
  bad_min_nodes = 55,           // min_nodes outside 1..the job's nodes
  // CPU binding (cpu_topology.hpp, cpu_binding.hpp; binding_error::code). A CPU or PCI list
  // that is not one is bad_syntax.
  bad_cpu_topology = 56,  // a file of the sysfs tree missing, unreadable or not as Linux writes it
  bad_visible_devices = 57,  // CUDA_VISIBLE_DEVICES names a GPU that cannot be bound
  no_binding = 58,           // the mode leaves a worker no CPU (or no GPU to take them from)
  bad_max_batch = 59,        // a node's ceiling (max_batch) is not a positive integer up to INT_MAX
  bad_measurement = 60,      // a HETLAUNCH_MEASURED line or a rate that cannot be a node's speed
  host_mismatch = 61,        // a worker's HETLAUNCH_NODE_HOST is not its node's host in the plan
  bad_checkpoint = 62,       // a HETLAUNCH_CHECKPOINT line that is not {"step": S}
  bad_progress = 63,         // a HETLAUNCH_PROGRESS line that is not a rank's progress report
  bad_worker_error = 64,     // a HETLAUNCH_ERROR line that is not a worker's error report
  bad_host_facts = 65,       // a host's preflight answer that is not its facts
};

/// A short stable name of the code: "bad_nproc".
constexpr std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::ok:
      return "ok";
    case errc::empty_cluster:
      return "empty_cluster";
    case errc::bad_nproc:
      return "bad_nproc";
    case errc::world_size_overflow:
      return "world_size_overflow";
    case errc::bad_host:
      return "bad_host";
    case errc::duplicate_host:
      return "duplicate_host";
    case errc::empty_role:
      return "empty_role";
    case errc::bad_role:
      return "bad_role";
    case errc::node_out_of_range:
      return "node_out_of_range";
    case errc::local_rank_out_of_range:
      return "local_rank_out_of_range";
    case errc::global_rank_out_of_range:
      return "global_rank_out_of_range";
    case errc::bad_port:
      return "bad_port";
    case errc::bad_master_addr:
      return "bad_master_addr";
    case errc::missing_rdzv_id:
      return "missing_rdzv_id";
    case errc::empty_script:
      return "empty_script";
    case errc::empty_program:
      return "empty_program";
    case errc::bad_max_restarts:
      return "bad_max_restarts";
    case errc::ranks_decided_at_rendezvous:
      return "ranks_decided_at_rendezvous";
    case errc::dash_flags_need_torch_2:
      return "dash_flags_need_torch_2";
    case errc::too_few_processes:
      return "too_few_processes";
    case errc::env_missing:
      return "env_missing";
    case errc::env_not_a_number:
      return "env_not_a_number";
    case errc::world_size_mismatch:
      return "world_size_mismatch";
    case errc::group_rank_out_of_range:
      return "group_rank_out_of_range";
    case errc::local_world_size_mismatch:
      return "local_world_size_mismatch";
    case errc::rank_mismatch:
      return "rank_mismatch";
    case errc::identical_workers_on_heterogeneous:
      return "identical_workers_on_heterogeneous";
    case errc::bad_rendezvous_timeout:
      return "bad_rendezvous_timeout";
    case errc::overriding_torchrun_arg:
      return "overriding_torchrun_arg";
    case errc::script_looks_like_option:
      return "script_looks_like_option";
    case errc::bad_syntax:
      return "bad_syntax";
    case errc::limit_exceeded:
      return "limit_exceeded";
    case errc::count_mismatch:
      return "count_mismatch";
    case errc::unknown_host:
      return "unknown_host";
    case errc::no_devices:
      return "no_devices";
    case errc::bad_env_name:
      return "bad_env_name";
    case errc::bad_kill_after:
      return "bad_kill_after";
    case errc::bad_name:
      return "bad_name";
    case errc::name_too_long:
      return "name_too_long";
    case errc::empty_image:
      return "empty_image";
    case errc::bad_group:
      return "bad_group";
    case errc::too_many_pods:
      return "too_many_pods";
    case errc::virtual_local_rank:
      return "virtual_local_rank";
    case errc::not_utf8:
      return "not_utf8";
    case errc::nul_byte:
      return "nul_byte";
    case errc::bad_weight:
      return "bad_weight";
    case errc::binding_entrypoint:
      return "binding_entrypoint";
    case errc::binding_not_carried:
      return "binding_not_carried";
    case errc::owned_variable:
      return "owned_variable";
    case errc::unplanned_share:
      return "unplanned_share";
    case errc::bad_sbatch_option:
      return "bad_sbatch_option";
    case errc::shrink_needs_one_group:
      return "shrink_needs_one_group";
    case errc::bad_min_nodes:
      return "bad_min_nodes";
    case errc::bad_cpu_topology:
      return "bad_cpu_topology";
    case errc::bad_visible_devices:
      return "bad_visible_devices";
    case errc::no_binding:
      return "no_binding";
    case errc::bad_max_batch:
      return "bad_max_batch";
    case errc::bad_measurement:
      return "bad_measurement";
    case errc::host_mismatch:
      return "host_mismatch";
    case errc::bad_checkpoint:
      return "bad_checkpoint";
    case errc::bad_progress:
      return "bad_progress";
    case errc::bad_worker_error:
      return "bad_worker_error";
    case errc::bad_host_facts:
      return "bad_host_facts";
    case errc::global_batch_too_small:
      return "global_batch_too_small";
    case errc::bad_global_batch:
      return "bad_global_batch";
    case errc::batch_mismatch:
      return "batch_mismatch";
  }
  return "unknown";
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_ERRC_HPP
// ---- hetlaunch/detail/text.hpp
// hetlaunch: building message text.
#ifndef HETLAUNCH_DETAIL_TEXT_HPP
#define HETLAUNCH_DETAIL_TEXT_HPP


// ---- hetlaunch/detail/decimal.hpp
// hetlaunch: the one reader of decimal numbers: counts, indexes, ranks, weights, the parts of an
// IPv4 address and the numbers of a Slurm host list all go through read_digits.
#ifndef HETLAUNCH_DETAIL_DECIMAL_HPP
#define HETLAUNCH_DETAIL_DECIMAL_HPP


namespace hetlaunch {
namespace detail {

constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// A run of ASCII digits: its value, where it ends, and whether it passed the limit it was read
// against (the value then stops at the last one that fit, and the run is still read to its end).
struct digit_run {
  unsigned long long value = 0;
  std::size_t end = 0;
  bool too_large = false;
};

// Reads the digits at text[start] (none is a run that ends at `start`): no sign, blanks or
// locale, leading zeros allowed. Never wraps, whatever the length; O(length).
constexpr digit_run read_digits(std::string_view text, std::size_t start,
                                unsigned long long limit = ~0ull) noexcept {
  digit_run run{};
  run.end = start;
  for (; run.end < text.size() && is_digit(text[run.end]); ++run.end) {
    const auto d = static_cast<unsigned>(text[run.end] - '0');
    if (run.too_large) continue;
    if (d > limit || run.value > (limit - d) / 10)
      run.too_large = true;
    else
      run.value = run.value * 10 + d;
  }
  return run;
}

// A whole text that is a decimal number of at most `max`; `value` is left alone otherwise.
constexpr bool parse_unsigned(std::string_view text, unsigned long long max,
                              unsigned long long& value) noexcept {
  const digit_run run = read_digits(text, 0, max);
  if (text.empty() || run.end != text.size() || run.too_large) return false;
  value = run.value;
  return true;
}
constexpr bool parse_decimal(std::string_view text, long long max, long long& value) noexcept {
  unsigned long long v = 0;
  if (max < 0 || !parse_unsigned(text, static_cast<unsigned long long>(max), v)) return false;
  value = static_cast<long long>(v);
  return true;
}
// An optional '-', then a decimal number of at most `max_magnitude` (at most LLONG_MAX).
constexpr bool parse_signed(std::string_view text, long long max_magnitude,
                            long long& value) noexcept {
  const bool negative = !text.empty() && text[0] == '-';
  if (!parse_decimal(text.substr(negative ? 1 : 0), max_magnitude, value)) return false;
  if (negative) value = -value;
  return true;
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_DECIMAL_HPP
// ---- hetlaunch/detail/deferred.hpp
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

namespace hetlaunch {
namespace detail {

// The functions that build text are templates (most with an unused parameter) so that they are
// compiled only where a message is made, not by every program that includes cluster.hpp.

inline void append_piece(std::string& out, std::string_view text) {
  out.append(text.data(), text.size());
}
template <class Int,
          std::enable_if_t<std::is_integral<Int>::value && !std::is_same<Int, char>::value &&
                               !std::is_same<Int, bool>::value,
                           int> = 0>
void append_piece(std::string& out, Int value) {
  out += std::to_string(value);
}

// Joins text and integers by appending. Not `"a" + std::string(...)`: GCC 12 at -O3 reports a
// false -Wrestrict on that pattern, which would break users who build with -Werror.
template <class... Pieces>
std::string concat(const Pieces&... pieces) {
  std::string out;
  (append_piece(out, pieces), ...);
  return out;
}

template <class Unused = void>
std::string to_hex(unsigned value) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  do {
    out.insert(out.begin(), digits[value & 15u]);
    value >>= 4;
  } while (value != 0);
  while (out.size() < 4) out.insert(out.begin(), '0');
  return out;
}

// "0,2,3": device ids as CUDA_VISIBLE_DEVICES lists them.
template <class Unused = void>
std::string join_ids(const deferred<std::vector<int>, Unused>& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out;
}

// The length of the well-formed UTF-8 sequence at text[i], or 0 when the byte there does not
// start one (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short).
template <class Unused = void>
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if (c == 0xe0)
    n = 3, lo = 0xa0;
  else if (c == 0xed)
    n = 3, hi = 0x9f;
  else if (c >= 0xe1 && c <= 0xef)
    n = 3;
  else if (c == 0xf0)
    n = 4, lo = 0x90;
  else if (c == 0xf4)
    n = 4, hi = 0x8f;
  else if (c >= 0xf1 && c <= 0xf3)
    n = 4;
  else
    return 0;
  if (text.size() - i < n) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return n;
}

// The code point of a well-formed sequence of `n` bytes at text[i].
template <class Unused = void>
unsigned utf8_code_point(std::string_view text, std::size_t i, std::size_t n) noexcept {
  const auto byte = [&](std::size_t k) {
    return static_cast<unsigned>(static_cast<unsigned char>(text[i + k]));
  };
  if (n == 1) return byte(0);
  unsigned cp = byte(0) & (0x7fu >> n);
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (byte(k) & 0x3fu);
  return cp;
}

// Characters that are valid but would garble or disguise a message on a terminal: C1 controls,
// the byte order mark, line and paragraph separators, and bidirectional overrides.
constexpr bool invisible_code_point(unsigned cp) noexcept {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0xfeff || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200b;
}

constexpr std::size_t quote_limit = 80;  // bytes of input shown before a long text is cut

// Quotes text for an error message. Whole UTF-8 characters are kept; bytes that are not UTF-8
// are shown as \xNN, and characters that would garble a terminal as \n, \xNN or \u{FEFF}.
// Text longer than `limit` bytes is cut at a character and followed by its length:
// 'aaaa'... (10485760 bytes). `full_size` is the length of the whole text when `text` is only
// its first bytes (a bounded_string that was cut).
// (`out` is named through Unused: its many appends are then resolved only where a message is made.)
template <class Unused = void>
void append_quoted(deferred<std::string, Unused>& out, std::string_view text,
                   std::size_t limit = quote_limit,
                   std::size_t full_size = std::string_view::npos) {
  if (full_size == std::string_view::npos || full_size < text.size()) full_size = text.size();
  static constexpr char hex[] = "0123456789abcdef";
  out += '\'';
  std::size_t i = 0;
  while (i < text.size() && i < limit) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8_sequence_length(text, i);
    if (n > 1) {
      const unsigned cp = utf8_code_point(text, i, n);
      if (invisible_code_point(cp)) {
        out += "\\u{";
        out += to_hex(cp);
        out += '}';
      } else {
        out.append(text.data() + i, n);
      }
      i += n;
      continue;
    }
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else
      out += static_cast<char>(c);
    ++i;
  }
  out += '\'';
  if (i < full_size) {
    out += "... (";
    out += std::to_string(full_size);
    out += " bytes)";
  }
}
template <class Unused = void>
std::string quoted(std::string_view text, std::size_t limit = quote_limit) {
  std::string out;
  append_quoted(out, text, limit);
  return out;
}
// Quotes an owned copy of a text, which may have been cut: bounded_string.
template <class Bounded>
auto quoted(const Bounded& text) -> decltype(text.full_size(), std::string()) {
  std::string out;
  append_quoted(out, text.view(), quote_limit, text.full_size());
  return out;
}

// The character at text[i] for a message: the whole UTF-8 sequence when one starts there.
template <class Unused = void>
std::string_view character_at(std::string_view text, std::size_t i) noexcept {
  if (i >= text.size()) return {};
  const std::size_t n = utf8_sequence_length(text, i);
  return text.substr(i, n ? n : 1);
}

// Names a character for a message: 'x', or "a byte order mark (U+FEFF)" for the one character
// that editors add unseen at the start of a file.
template <class Unused = void>
std::string describe_character(std::string_view text, std::size_t i) {
  const std::string_view ch = character_at(text, i);
  if (ch == "\xef\xbb\xbf") return "a UTF-8 byte order mark (U+FEFF)";
  return concat("character ", quoted(ch));
}

// Overflow-checked arithmetic on counts from the input: false instead of a wrapped result.
template <class T>
constexpr bool checked_add(T a, T b, T& sum) noexcept {
  static_assert(std::is_unsigned<T>::value, "unsigned only");
  if (b > static_cast<T>(~T{0}) - a) return false;
  sum = a + b;
  return true;
}
template <class T>
constexpr bool checked_mul(T a, T b, T& product) noexcept {
  static_assert(std::is_unsigned<T>::value, "unsigned only");
  if (a != 0 && b > static_cast<T>(~T{0}) / a) return false;
  product = a * b;
  return true;
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_TEXT_HPP

#if HETLAUNCH_USE_EXCEPTIONS
#include <stdexcept>
#endif

namespace hetlaunch {

/// The error every fallible function returns that is not a topology's or the launch options'
/// problem (those are `diagnostic`s, which the core builds without allocating): where and why an
/// input was refused. `line` and `column` count from 1; both are 0 when the input has no lines
/// (an environment variable, a file of a sysfs tree, a worker's binding) and the message names
/// the place. `code` says what kind of problem it is: bad_syntax, limit_exceeded, count_mismatch,
/// unknown_host, no_devices, env_missing, env_not_a_number, the CPU binding's codes
/// (bad_cpu_topology, bad_visible_devices, no_binding), or the topology's own (bad_nproc,
/// bad_host, duplicate_host, world_size_overflow) for a topology read from text.
struct parse_error {
  std::size_t line = 0;
  std::size_t column = 0;
  std::string message;
  errc code = errc::bad_syntax;

  parse_error() = default;
  /// At a place of a text.
  parse_error(std::size_t at_line, std::size_t at_column, std::string why,
              errc kind = errc::bad_syntax)
      : line(at_line), column(at_column), message(std::move(why)), code(kind) {}
  /// Without a place in lines: the message names where.
  explicit parse_error(std::string why, errc kind = errc::bad_syntax)
      : message(std::move(why)), code(kind) {}

  /// "line 3, column 11: slots must be a positive integer, got '0'" (or just the message).
  template <class Unused = void>
  [[nodiscard]] std::string to_string() const {
    if (line == 0) return message;
    return detail::concat("line ", line, ", column ", column, ": ", message);
  }
  friend bool operator==(const parse_error& a, const parse_error& b) {
    return a.line == b.line && a.column == b.column && a.message == b.message && a.code == b.code;
  }
  friend bool operator!=(const parse_error& a, const parse_error& b) { return !(a == b); }
};

namespace detail {
template <class Unused = void>
std::string describe_error(const parse_error& e) {
  return e.to_string();
}
template <class E>
auto describe_error(const E& e) -> decltype(e.message()) {
  return e.message();
}
// A list of problems (make_plan's): every message, one a line.
template <class E>
auto describe_error(const std::vector<E>& problems) -> decltype(problems.front().message()) {
  std::string out;
  for (const E& e : problems) {
    if (!out.empty()) out += '\n';
    out += e.message();
  }
  return out;
}
}  // namespace detail

#if HETLAUNCH_USE_EXCEPTIONS
/// Thrown by result<T>::value() on an error when exceptions are enabled.
class bad_result_access : public std::runtime_error {
 public:
  explicit bad_result_access(const std::string& what) : std::runtime_error(what) {}
};
#endif

namespace detail {
template <class E>
[[noreturn]] void bad_access(const E& error) {
#if HETLAUNCH_USE_EXCEPTIONS
  throw bad_result_access(describe_error(error));
#else
  const std::string text = describe_error(error);
  precondition_violated(text.c_str());
#endif
}
}  // namespace detail

/// Holds a T or an error E (by default a parse_error): the subset of std::expected that C++17
/// can have. Literal, and so usable in constant expressions, when T and E are.
///
/// Example:
///   auto r = hetlaunch::parse_hostfile(text);
///   if (!r) { std::cerr << r.error().to_string() << '\n'; return 1; }
///   hetlaunch::cluster c = *std::move(r);
template <class T, class E = parse_error>
class [[nodiscard]] result {
  static_assert(!std::is_same<T, E>::value,
                "hetlaunch::result requires distinct value and error types");
  std::variant<T, E> storage_;

 public:
  using value_type = T;
  using error_type = E;

  constexpr result(const T& value) : storage_(std::in_place_index<0>, value) {}        // NOLINT
  constexpr result(T&& value) : storage_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  constexpr result(const E& error) : storage_(std::in_place_index<1>, error) {}        // NOLINT
  constexpr result(E&& error) : storage_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  [[nodiscard]] constexpr bool has_value() const noexcept { return storage_.index() == 0; }
  constexpr explicit operator bool() const noexcept { return has_value(); }

  /// The value; on an error throws bad_result_access, or without exceptions reports through
  /// HETLAUNCH_ON_FAILURE (which aborts by default). Not usable on an error in a constant
  /// expression.
  constexpr const T& value() const& {
    if (!has_value()) detail::bad_access(std::get<1>(storage_));
    return std::get<0>(storage_);
  }
  constexpr T& value() & {
    if (!has_value()) detail::bad_access(std::get<1>(storage_));
    return std::get<0>(storage_);
  }
  constexpr T&& value() && { return std::move(value()); }

  /// The error. Precondition: !has_value().
  constexpr const E& error() const& {
    detail::expects(!has_value(), "result::error() called on a result that holds a value");
    return std::get<1>(storage_);
  }

  /// Precondition: has_value(); checked like value().
  constexpr const T& operator*() const& { return value(); }
  constexpr T& operator*() & { return value(); }
  constexpr T&& operator*() && { return std::move(value()); }
  constexpr const T* operator->() const { return &value(); }
  constexpr T* operator->() { return &value(); }

  /// The value, or `fallback` on an error.
  template <class U>
  [[nodiscard]] constexpr T value_or(U&& fallback) const& {
    return has_value() ? std::get<0>(storage_) : static_cast<T>(std::forward<U>(fallback));
  }
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_RESULT_HPP
// ---- hetlaunch/host_issue.hpp
// hetlaunch: host_issue, what is wrong with a host name (a diagnostic's `issue`).
#ifndef HETLAUNCH_HOST_ISSUE_HPP
#define HETLAUNCH_HOST_ISSUE_HPP

namespace hetlaunch {

/// Why a host was refused; `position` in the diagnostic says where.
enum class host_issue : unsigned char {
  none,
  empty,                 // ""
  too_long,              // more than 253 characters
  bad_character,         // anything but letters, digits, '-', '.' (and ':' in IPv6)
  empty_label,           // "a..b", ".a", "a."
  label_too_long,        // a label over 63 characters
  hyphen_at_label_edge,  // "-a", "a-.b": a leading '-' would read as an option to ssh or pdsh
  numeric_not_ipv4,      // "123", "1.2.3": resolvers read these as IPv4 (0.0.0.123)
  bad_ipv4,              // "1.2.3.256", "01.2.3.4" (a leading zero reads as octal)
  bad_ipv6,              // "1:::2", "fe80::1%eth0", "[::1]"
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_HOST_ISSUE_HPP
// ---- hetlaunch/node_spec.hpp
// hetlaunch: node_spec and rank_location, the value types of a topology.
#ifndef HETLAUNCH_NODE_SPEC_HPP
#define HETLAUNCH_NODE_SPEC_HPP


namespace hetlaunch {

/// One node of a topology: a literal type, so `{{"node0", 8}, {"node1", 4}}` is a constant.
struct node_spec {
  std::string_view host;              ///< where the node's torchrun agent runs
  int nproc = 0;                      ///< workers on this node (torchrun --nproc_per_node)
  std::string_view role = "default";  ///< torchrun --role; ROLE_RANK counts within a role
  /// The relative speed of one of this node's workers, as an exact decimal ("2.5"): its share
  /// of a global batch (see shares.hpp). Only the split of a global batch reads it.
  std::string_view weight = "1";
  /// The most samples one of this node's workers takes in one forward (its memory ceiling), or
  /// 0 for none. A cluster made from a cluster (cluster_builder::add(node_spec)) keeps it with
  /// the rest of the node.
  int max_batch = 0;
};

/// Where a global rank lives: node index and local rank on that node.
struct rank_location {
  std::size_t node = 0;
  int local_rank = 0;
  friend constexpr bool operator==(const rank_location& a, const rank_location& b) noexcept {
    return a.node == b.node && a.local_rank == b.local_rank;
  }
  friend constexpr bool operator!=(const rank_location& a, const rank_location& b) noexcept {
    return !(a == b);
  }
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_NODE_SPEC_HPP
// ---- hetlaunch/weight.hpp
// hetlaunch: node weights, exact decimals read without floating point.
#ifndef HETLAUNCH_WEIGHT_HPP
#define HETLAUNCH_WEIGHT_HPP

#include <cstdint>


namespace hetlaunch {

/// The most a node weight may be, and the most fractional digits it may have.
inline constexpr std::int64_t max_weight = 1000000;
inline constexpr int max_weight_fraction_digits = 6;
/// A weight in millionths: "2.5" is 2500000.
inline constexpr std::int64_t weight_scale = 1000000;

/// What is wrong with a weight's text.
enum class weight_issue : unsigned char {
  none,
  empty,     // ""
  negative,  // "-1"
  // a character other than digits and one '.' between digits ("nan", "1e3", "+2", ".5")
  not_a_decimal,
  too_many_digits,  // more than 6 fractional digits
  zero,             // "0", "0.000"
  too_large,        // more than 1000000
};

/// A weight read: its value in millionths, or what is wrong and where (a byte offset).
struct weight_check {
  std::int64_t micros = 0;
  weight_issue issue = weight_issue::none;
  std::size_t position = 0;
  constexpr explicit operator bool() const noexcept { return issue == weight_issue::none; }
};

/// Whether `text` is the default weight "1", which needs no reading: checked before every other
/// weight, since most nodes have it.
constexpr bool is_default_weight(std::string_view text) noexcept {
  return text.size() == 1 && text[0] == '1';
}

/// Reads a node weight: a positive decimal, digits with at most one '.' followed by 1 to 6
/// digits, at most 1000000. Exact: "0.1" is 100000 millionths, nothing is rounded. O(length);
/// usable in constant expressions.
///   static_assert(hetlaunch::check_weight("2.5").micros == 2500000);
[[nodiscard]] constexpr weight_check check_weight(std::string_view text) noexcept {
  weight_check out{};
  const auto fail = [&out](weight_issue issue, std::size_t position) {
    out.issue = issue;
    out.position = position;
    out.micros = 0;
    return out;
  };
  if (text.empty()) return fail(weight_issue::empty, 0);
  if (text[0] == '-') return fail(weight_issue::negative, 0);
  const detail::digit_run whole =
      detail::read_digits(text, 0, static_cast<unsigned long long>(max_weight));
  std::size_t i = whole.end;
  if (i == 0) return fail(weight_issue::not_a_decimal, 0);
  std::int64_t fraction = 0;
  int digits = 0;
  if (i < text.size() && text[i] == '.') {
    const std::size_t dot = i++;
    const detail::digit_run part = detail::read_digits(text, i);
    const std::size_t length = part.end - i;
    if (length > static_cast<std::size_t>(max_weight_fraction_digits)) {
      // The digits past the sixth are a problem only when the text is a decimal to its end.
      if (part.end < text.size()) return fail(weight_issue::not_a_decimal, part.end);
      return fail(weight_issue::too_many_digits,
                  i + static_cast<std::size_t>(max_weight_fraction_digits));
    }
    if (length == 0) return fail(weight_issue::not_a_decimal, i < text.size() ? i : dot);
    digits = static_cast<int>(length);
    fraction = static_cast<std::int64_t>(part.value);
    i = part.end;
  }
  if (i < text.size()) return fail(weight_issue::not_a_decimal, i);
  for (int d = digits; d < max_weight_fraction_digits; ++d) fraction *= 10;
  if (whole.too_large) return fail(weight_issue::too_large, 0);
  const std::int64_t micros = static_cast<std::int64_t>(whole.value) * weight_scale + fraction;
  if (micros > max_weight * weight_scale) return fail(weight_issue::too_large, 0);
  if (micros == 0) return fail(weight_issue::zero, 0);
  out.micros = micros;
  return out;
}

/// Why a weight was refused, for messages: "it has more than 6 fractional digits".
constexpr std::string_view describe(weight_issue issue) noexcept {
  switch (issue) {
    case weight_issue::none:
      return "no problem";
    case weight_issue::empty:
      return "it is empty";
    case weight_issue::negative:
      return "it is negative; a weight must be above 0";
    case weight_issue::not_a_decimal:
      return "it is not a decimal number (digits, with at most one '.' between them)";
    case weight_issue::too_many_digits:
      return "it has more than 6 fractional digits";
    case weight_issue::zero:
      return "it is 0; a weight must be above 0";
    case weight_issue::too_large:
      return "it is more than 1000000, the largest weight";
  }
  return "unknown";
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_WEIGHT_HPP
// ---- hetlaunch/worker_variables.hpp
// hetlaunch: the names of the variables a launcher delivers to torchrun and its workers, written
// once, and which of them the launch owns. A variable the launch owns is set from the plan (or
// left unset when the plan has no value for it); a user's --env, env file or inherited
// environment may not give it another value, or a worker would compute a wrong share.
#ifndef HETLAUNCH_WORKER_VARIABLES_HPP
#define HETLAUNCH_WORKER_VARIABLES_HPP

#include <array>

namespace hetlaunch {
namespace variables {

/// B, the samples of one optimizer step over the whole job (set only with a global batch).
inline constexpr std::string_view global_batch = "HETLAUNCH_GLOBAL_BATCH";
/// n_i, the node's samples of every step.
inline constexpr std::string_view node_batch = "HETLAUNCH_NODE_BATCH";
/// o_i, where the node's samples start within the step.
inline constexpr std::string_view node_batch_offset = "HETLAUNCH_NODE_BATCH_OFFSET";
/// The node's host as the plan names it (a spare's on a spare), set with the work share: the
/// sampler keeps what it learned of each node's speed by host, so that a checkpoint loads on
/// another topology (fewer nodes, a spare, a node back).
inline constexpr std::string_view node_host = "HETLAUNCH_NODE_HOST";
/// M, the most samples one of the node's workers takes in one forward (its memory ceiling): set
/// only for a node that has one.
inline constexpr std::string_view max_batch = "HETLAUNCH_MAX_BATCH";
/// The attempt of a job started with restarts: 0 first, then 1, 2, ...
inline constexpr std::string_view restart_count = "HETLAUNCH_RESTART_COUNT";
/// N, the steps a worker's sampler measures before rank 0 reports its rates (`hetlaunch
/// calibrate`'s HETLAUNCH_MEASURED line) and the sampler stops.
inline constexpr std::string_view calibrate_steps = "HETLAUNCH_CALIBRATE_STEPS";
/// How often each rank reports its progress (seconds), set only by a launcher that judges slow
/// and hung ranks (`hetlaunch run --hang-timeout`).
inline constexpr std::string_view progress_seconds = "HETLAUNCH_PROGRESS_SECONDS";
/// "rebalance": what a launcher does about a slow rank (`hetlaunch run --on-slow rebalance`); a
/// sampler that does not rebalance by itself then rebalances every window, so that work moves off
/// a rank that slowed down at the next window.
inline constexpr std::string_view on_slow = "HETLAUNCH_ON_SLOW";
/// The least compute capability over the job's GPUs ("7.5"), as preflight found it (`hetlaunch
/// run --preflight`): a script picks kernels every GPU of the job can run.
inline constexpr std::string_view min_compute_capability = "HETLAUNCH_MIN_COMPUTE_CAPABILITY";
/// "1" when every GPU of the job has bf16 (capability 8.0 or more), "0" when one has not, as
/// preflight found it: a script picks its precision for the whole job.
inline constexpr std::string_view bf16 = "HETLAUNCH_BF16";
/// The job's tasks a node (SLURM_TASKS_PER_NODE's form), kept by a batch script for its steps.
inline constexpr std::string_view tasks_per_node = "HETLAUNCH_TASKS_PER_NODE";
/// A JobSet pod's node index within its group.
inline constexpr std::string_view pod_index = "HETLAUNCH_POD_INDEX";
/// torch 2.5+ computes ranks as if every node ran this node's count when it is 1: never set in a
/// job whose nodes differ.
inline constexpr std::string_view worker_identical = "TORCH_ELASTIC_WORKER_IDENTICAL";

/// The work share's variables: set from the plan's global batch, and removed from an inherited
/// environment when the plan has none (a shell that once evaluated `hetlaunch env
/// --global-batch 64`, or Slurm's --export=ALL, must not hand a share to a job without one).
inline constexpr std::array<std::string_view, 4> share = {global_batch, node_batch,
                                                          node_batch_offset, node_host};
/// The variables the launch owns: the work share's, the node's ceiling, the restart count a
/// launcher with restarts sets for each attempt, the calibration steps only `hetlaunch
/// calibrate` sets (inherited, it would end a real job after N steps as a success), and the
/// progress interval only a launcher that reads the ranks' progress sets (inherited, every rank
/// would print lines nobody reads), what the launcher does about a slow rank (inherited, a job
/// would rebalance that never asked to), and what preflight found of the job's GPUs (inherited,
/// a job on older GPUs would pick bf16 from another job's).
inline constexpr std::array<std::string_view, 11> owned = {
    global_batch,  node_batch,      node_batch_offset, node_host, max_batch,
    restart_count, calibrate_steps, progress_seconds,  on_slow,   min_compute_capability,
    bf16};

}  // namespace variables

/// Whether `name` is a variable the launch owns (variables::owned): no --env, env file or
/// inherited environment may set it.
[[nodiscard]] constexpr bool is_owned_variable(std::string_view name) noexcept {
  for (std::string_view owned : variables::owned)
    if (name == owned) return true;
  return false;
}

/// Whether `name` is one of the work share's variables (variables::share).
[[nodiscard]] constexpr bool is_share_variable(std::string_view name) noexcept {
  for (std::string_view v : variables::share)
    if (name == v) return true;
  return false;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_WORKER_VARIABLES_HPP
// ---- hetlaunch/diagnostic.hpp
// hetlaunch: diagnostic, one problem of a topology, an argument or a launch with its message, and
// validate_options, what validation tolerates.
#ifndef HETLAUNCH_DIAGNOSTIC_HPP
#define HETLAUNCH_DIAGNOSTIC_HPP

#include <climits>

// ---- hetlaunch/bounded_string.hpp
// hetlaunch: bounded_string, a copy of a string's first bytes that a literal type can hold.
#ifndef HETLAUNCH_BOUNDED_STRING_HPP
#define HETLAUNCH_BOUNDED_STRING_HPP


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
// ---- hetlaunch/detail/host_name.hpp
// hetlaunch: host names: the constexpr check that one is an RFC 1123 name or an IPv4/IPv6
// literal, and how two compare (case-insensitively, RFC 4343).
#ifndef HETLAUNCH_DETAIL_HOST_NAME_HPP
#define HETLAUNCH_DETAIL_HOST_NAME_HPP



namespace hetlaunch {

namespace detail {

struct host_check {
  host_issue issue = host_issue::none;
  std::size_t position = 0;
};

constexpr bool is_alpha(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool is_hex(char c) noexcept {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
constexpr char to_lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// A dotted quad with four decimal parts 0..255 and no leading zeros (inet_aton reads "010" as
// octal 8, so such text names a different address than it seems to).
template <class Unused = void>
constexpr host_check check_ipv4(std::string_view s, std::size_t base) noexcept {
  std::size_t parts = 0;
  std::size_t i = 0;
  while (true) {
    const std::size_t start = i;
    const digit_run part = read_digits(s, start, 255);
    i = part.end;
    const std::size_t len = i - start;
    if (len == 0 || len > 3 || part.too_large || (len > 1 && s[start] == '0'))
      return {host_issue::bad_ipv4, base + start};
    ++parts;
    if (i == s.size()) break;
    if (s[i] != '.' || parts == 4) return {host_issue::bad_ipv4, base + i};
    ++i;
  }
  if (parts != 4) return {host_issue::bad_ipv4, base + s.size()};
  return {};
}

// RFC 4291 text form: eight groups of 1-4 hex digits, one "::" for a run of zero groups, and an
// optional dotted quad in place of the last two groups. Zone ids ("%eth0") and brackets are
// refused: torchrun's endpoint parser rejects zone ids, and brackets belong to endpoints.
template <class Unused = void>
constexpr host_check check_ipv6(std::string_view s) noexcept {
  std::size_t groups = 0;
  bool compressed = false;
  std::size_t i = 0;
  if (s.size() >= 2 && s[0] == ':' && s[1] == ':') {
    compressed = true;
    i = 2;
    if (i == s.size()) return {};
  } else if (!s.empty() && s[0] == ':') {
    return {host_issue::bad_ipv6, 0};
  }
  while (true) {
    const std::size_t start = i;
    while (i < s.size() && is_hex(s[i]) && i - start < 5) ++i;
    if (i < s.size() && s[i] == '.') {  // embedded IPv4 ends the address
      const host_check v4 = check_ipv4(s.substr(start), start);
      if (v4.issue != host_issue::none) return {host_issue::bad_ipv6, v4.position};
      groups += 2;
      break;
    }
    if (i == start || i - start > 4) return {host_issue::bad_ipv6, i == start ? i : start};
    ++groups;
    if (i == s.size()) break;
    if (s[i] != ':') return {host_issue::bad_ipv6, i};
    if (i + 1 < s.size() && s[i + 1] == ':') {
      if (compressed) return {host_issue::bad_ipv6, i};
      compressed = true;
      i += 2;
      if (i == s.size()) break;
    } else {
      ++i;
      if (i == s.size()) return {host_issue::bad_ipv6, i};
    }
  }
  if (compressed ? groups > 7 : groups != 8) return {host_issue::bad_ipv6, s.size()};
  return {};
}

template <class Unused = void>
constexpr bool is_numeric_label(std::string_view label) noexcept {
  std::size_t i = 0;
  if (label.size() > 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X')) {
    for (i = 2; i < label.size(); ++i)
      if (!is_hex(label[i])) return false;
    return true;
  }
  for (; i < label.size(); ++i)
    if (!is_digit(label[i])) return false;
  return !label.empty();
}

// Character classes for host names, looked up rather than computed: constant evaluation is
// charged per call and per statement, and this keeps a host to about four steps a character.
enum : unsigned char {
  host_char_name = 1,        // letter, digit, '-'
  host_char_dot = 2,         // '.'
  host_char_underscore = 4,  // '_'
  host_char_colon = 8,       // ':'
  host_char_bad = 16,        // anything else
};
struct host_char_table {
  unsigned char cls[256] = {};
  constexpr host_char_table() noexcept {
    for (int c = 0; c < 256; ++c) {
      const char ch = static_cast<char>(c);
      cls[c] = (is_alpha(ch) || is_digit(ch) || ch == '-') ? host_char_name
               : ch == '.'                                 ? host_char_dot
               : ch == '_'                                 ? host_char_underscore
               : ch == ':'                                 ? host_char_colon
                                                           : host_char_bad;
    }
  }
};
inline constexpr host_char_table host_chars{};

template <class Unused = void>
constexpr std::size_t first_of_class(const char* p, std::size_t n, unsigned mask) noexcept {
  std::size_t i = 0;
  while (i < n && (host_chars.cls[static_cast<unsigned char>(p[i])] & mask) == 0) ++i;
  return i;
}

/// Checks `host` as an RFC 1123 host name (letters, digits, '-', labels of 1..63 separated by
/// '.', 253 at most, no '-' at a label's edge; '_' only when `allow_underscore`), an IPv4 dotted
/// quad, or an IPv6 literal without brackets. Every shell metacharacter and blank is refused.
template <class Unused = void>
constexpr host_check check_host(std::string_view host, bool allow_underscore = false) noexcept {
  const char* p = host.data();
  const std::size_t n = host.size();
  if (n == 0) return {host_issue::empty, 0};
  unsigned seen = 0;
  for (std::size_t i = 0; i < n; ++i) seen |= host_chars.cls[static_cast<unsigned char>(p[i])];
  if (seen & host_char_colon) {
    for (std::size_t j = 0; j < n; ++j) {
      const char c = p[j];
      if (!is_hex(c) && c != ':' && c != '.') return {host_issue::bad_character, j};
    }
    return check_ipv6(host);
  }
  const unsigned bad = host_char_bad | (allow_underscore ? 0u : unsigned{host_char_underscore});
  if (seen & bad) return {host_issue::bad_character, first_of_class(p, n, bad)};
  if (n > 253) return {host_issue::too_long, 253};
  bool all_numeric = true;
  std::size_t labels = 0;
  std::size_t start = 0;
  while (true) {
    std::size_t end = start;
    while (end < n && p[end] != '.') ++end;
    const std::size_t len = end - start;
    if (len == 0) return {host_issue::empty_label, end};
    if (len > 63) return {host_issue::label_too_long, start};
    if (p[start] == '-') return {host_issue::hyphen_at_label_edge, start};
    if (p[end - 1] == '-') return {host_issue::hyphen_at_label_edge, end - 1};
    if (all_numeric && !is_numeric_label(host.substr(start, len))) all_numeric = false;
    ++labels;
    if (end == n) break;
    start = end + 1;
  }
  if (all_numeric) {
    if (labels != 4) return {host_issue::numeric_not_ipv4, 0};
    return check_ipv4(host, 0);
  }
  return {};
}

/// True when `host` is an IPv6 literal (it contains ':'); such hosts need brackets in endpoints.
template <class Unused = void>
constexpr bool is_ipv6_literal(std::string_view host) noexcept {
  return host.find(':') != std::string_view::npos;
}

// FNV-1a of the lower-cased host: host names compare case-insensitively (RFC 4343).
constexpr std::uint64_t host_hash(std::string_view host) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  const char* p = host.data();
  for (std::size_t i = 0, n = host.size(); i < n; ++i)
    h = (h ^ static_cast<unsigned char>(to_lower(p[i]))) * 1099511628211ull;
  return h;
}

// string_view's operator== goes through char_traits, which costs several constexpr steps a
// character; this is the same comparison in one.
constexpr bool same_text(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  const char* x = a.data();
  const char* y = b.data();
  std::size_t i = 0;
  const std::size_t n = a.size();
  while (i < n && x[i] == y[i]) ++i;
  return i == n;
}

constexpr int compare_host(std::string_view a, std::string_view b) noexcept {
  const std::size_t n = a.size() < b.size() ? a.size() : b.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char x = to_lower(a[i]);
    const char y = to_lower(b[i]);
    if (x != y) return x < y ? -1 : 1;
  }
  return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
}

// A variable name a shell can set: letters, digits and '_', not starting with a digit.
constexpr bool is_env_name(std::string_view name) noexcept {
  if (name.empty() || is_digit(name[0])) return false;
  for (char c : name)
    if (!is_alpha(c) && !is_digit(c) && c != '_') return false;
  return true;
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_HOST_NAME_HPP

namespace hetlaunch {

namespace detail {
// What is wrong with a host name, for messages: "character ' ' at position 3 is not allowed".
template <class Unused = void>
std::string describe_host_issue(std::string_view host, host_issue issue, std::size_t position) {
  switch (issue) {
    case host_issue::none:
      return "no problem";
    case host_issue::empty:
      return "it is empty";
    case host_issue::too_long:
      return "it is longer than 253 characters";
    case host_issue::bad_character: {
      const char c = position < host.size() ? host[position] : '?';
      const char* hint = c == '[' || c == ']' ? " (write IPv6 addresses without brackets)"
                         : c == '%'           ? " (IPv6 zone ids are not supported by torchrun)"
                         : c == '_'           ? " (allow it with allow_underscore)"
                                              : "";
      return concat(describe_character(host, position), " at position ", position,
                    " is not allowed", hint);
    }
    case host_issue::empty_label:
      return concat("empty label at position ", position);
    case host_issue::label_too_long:
      return concat("label longer than 63 characters at position ", position);
    case host_issue::hyphen_at_label_edge:
      return concat("a label starts or ends with '-' at position ", position);
    case host_issue::numeric_not_ipv4:
      return "an all-numeric name that is not a dotted quad (resolvers read it as an IPv4 address)";
    case host_issue::bad_ipv4:
      return concat("invalid IPv4 address at position ", position);
    case host_issue::bad_ipv6:
      return concat("invalid IPv6 address at position ", position);
  }
  return "unknown";
}

template <class Diagnostic>
std::string core_message(const Diagnostic& d);
}  // namespace detail

/// One problem, naming the node it concerns. A literal type, so constexpr validation can return
/// it; converts to `true` when it reports a problem:
///   if (auto d = hetlaunch::first_error(c)) std::cerr << d.message() << '\n';
/// A diagnostic owns its text: it may outlive the cluster, the options and the environment it
/// describes. Host names are kept whole up to 253 bytes (every valid name); longer text is kept
/// up to its capacity, and `full_size()` gives the original length. About 600 bytes.
struct diagnostic {
  errc code = errc::ok;
  std::size_t node = 0;        // the node concerned (the later one for a duplicate)
  bounded_string<253> host;    // that node's host
  bounded_string<128> role;    // that node's role
  long long value = 0;         // the offending number: nproc, a rank, an index, the world size
  std::size_t other_node = 0;  // duplicate_host: the earlier node with the same host
  std::size_t position = 0;    // offset of the offending character in `host`, `role` or `text`
  host_issue issue = host_issue::none;  // bad_host: what is wrong with the name
  long long limit = 0;        // *_out_of_range: the exclusive bound; world_size_overflow: INT_MAX;
                              // *_mismatch: the planned value
  std::string_view variable;  // env_* and *_mismatch: the environment variable; launch
                              // options: the option. Always a string literal of the library.
  bounded_string<128> text;   // the offending text (an address, a variable's value, a weight)
  weight_issue weight = weight_issue::none;  // bad_weight: what is wrong with the weight in `text`
  int local_rank = 0;                        // rank_mismatch: the worker whose RANK is wrong

  /// Renders the problems of a subsystem (JobSet, ssh, accelerate), whose texts live beside the
  /// code that finds them; null for the core's problems, which message() renders itself.
  std::string (*describe)(const diagnostic&) = nullptr;

  constexpr explicit operator bool() const noexcept { return code != errc::ok; }

  /// Every diagnostic is built one way, in one expression: the code, then the fields it uses.
  ///   diagnostic::of(errc::bad_nproc).with_node(i).with_host(host).with_value(0)
  [[nodiscard]] static constexpr diagnostic of(errc problem) noexcept {
    diagnostic d{};
    d.code = problem;
    return d;
  }
  constexpr diagnostic& with_node(std::size_t i) noexcept {
    node = i;
    return *this;
  }
  constexpr diagnostic& with_host(std::string_view h) noexcept {
    host = h;
    return *this;
  }
  constexpr diagnostic& with_role(std::string_view r) noexcept {
    role = r;
    return *this;
  }
  constexpr diagnostic& with_value(long long v) noexcept {
    value = v;
    return *this;
  }
  constexpr diagnostic& with_other_node(std::size_t i) noexcept {
    other_node = i;
    return *this;
  }
  constexpr diagnostic& with_position(std::size_t p) noexcept {
    position = p;
    return *this;
  }
  constexpr diagnostic& with_issue(host_issue i) noexcept {
    issue = i;
    return *this;
  }
  constexpr diagnostic& with_limit(long long l) noexcept {
    limit = l;
    return *this;
  }
  constexpr diagnostic& with_variable(std::string_view v) noexcept {
    variable = v;
    return *this;
  }
  constexpr diagnostic& with_text(std::string_view t) noexcept {
    text = t;
    return *this;
  }
  constexpr diagnostic& with_weight(weight_issue w) noexcept {
    weight = w;
    return *this;
  }
  constexpr diagnostic& with_local_rank(int l) noexcept {
    local_rank = l;
    return *this;
  }
  constexpr diagnostic& with_describe(std::string (*d)(const diagnostic&)) noexcept {
    describe = d;
    return *this;
  }

  /// For people: "node 1 ('gpu-b'): nproc must be at least 1, got 0". (A template only so that
  /// it is compiled where it is used.)
  template <class Unused = void>
  [[nodiscard]] std::string message() const {
    return describe ? describe(*this) : detail::core_message(*this);
  }
};

/// "weight '0' is not valid: it must be more than 0": how every reader of weights (hostfiles,
/// --weight, a node group, a diagnostic) says that one is not a weight.
template <class Unused = void>
[[nodiscard]] std::string weight_refusal(std::string_view text, weight_issue issue) {
  return detail::concat("weight ", detail::quoted(text), " is not valid: ", describe(issue));
}

/// "'1X' is not a variable name (...)": how every reader of variables (--env, env files, ssh
/// options, a diagnostic) says that a name is not one a shell can set.
template <class Unused = void>
[[nodiscard]] std::string env_name_refusal(std::string_view name) {
  return detail::concat(
      detail::quoted(name),
      " is not a variable name (letters, digits and '_', not starting with a digit)");
}

namespace detail {
/// The text of a problem of the core: the topology, the launch options, the workers'
/// environments and the text inputs. A subsystem's `describe` falls back to it for the codes it
/// shares (an empty program, a variable name).
template <class Diagnostic>
std::string core_message(const Diagnostic& d) {
  const auto& host = d.host;
  const auto& role = d.role;
  const auto& text = d.text;
  const long long value = d.value, limit = d.limit;
  const std::size_t position = d.position;
  const std::string_view variable = d.variable;
  const std::string who = concat("node ", d.node, " (", quoted(host), "): ");
  switch (d.code) {
    case errc::ok:
      return "no problem";
    case errc::empty_cluster:
      return "the cluster has no nodes";
    case errc::bad_nproc:
      return concat(who, "nproc must be at least 1, got ", value);
    case errc::world_size_overflow:
      return concat(who, "world size would be ", value, ", more than ", limit,
                    " (torch.distributed ranks are 32-bit)");
    case errc::bad_host:
      return concat(who, "host is not a valid RFC 1123 name or IP literal: ",
                    detail::describe_host_issue(host, d.issue, position));
    case errc::duplicate_host:
      return concat(who, "host is also node ", d.other_node,
                    "; two agents on one host must be allowed explicitly (allow_duplicate_hosts)");
    case errc::empty_role:
      return concat(who, "role is empty");
    case errc::bad_role:
      if (!role.empty() && role[0] == '-')
        return concat(who, "role ", detail::quoted(role),
                      " starts with '-', which torchrun would read as an option");
      return concat(who, "role ", detail::quoted(role),
                    " has a blank or control character at position ", position);
    case errc::node_out_of_range:
      return concat("node index ", value, " is out of range: the cluster has ", limit, " nodes");
    case errc::local_rank_out_of_range:
      return concat(who, "local rank ", value, " is out of range: the node runs ", limit,
                    " workers");
    case errc::global_rank_out_of_range:
      return concat("global rank ", value, " is out of range: the world size is ", limit);
    case errc::bad_port:
      return concat("master_port must be 1..65535, got ", value);
    case errc::bad_master_addr:
      return concat("master_addr ", detail::quoted(text),
                    " is not a valid host name or IP literal");
    case errc::missing_rdzv_id:
      return "the c10d rendezvous needs an rdzv_id shared by every node of the job";
    case errc::empty_script:
      return "no training script given";
    case errc::empty_program:
      return variable.empty() ? "no launcher program given (program is empty)"
                              : concat("no ", variable, " given (it is empty)");
    case errc::bad_max_restarts:
      return concat("max_restarts must be 0 or more, got ", value);
    case errc::ranks_decided_at_rendezvous:
      return "with the c10d rendezvous torchrun orders the nodes by host name and process id when "
             "they meet, so RANK, GROUP_RANK, ROLE_RANK and MASTER_ADDR cannot be known in advance; "
             "use the static rendezvous to fix them";
    case errc::dash_flags_need_torch_2:
      return concat(
          "dash flag spellings (--nproc-per-node) need torch 2.0 or later; the options name torch ",
          value / 100, ".", value % 100,
          " (use flag_style::underscore, which every torch accepts)");
    case errc::env_missing:
      return concat(variable,
                    " is not set; was this process started by torchrun (or with worker_env)?");
    case errc::env_not_a_number:
      return concat(variable, "=", detail::quoted(text), " is not an integer");
    case errc::world_size_mismatch:
      return concat("WORLD_SIZE is ", value, " but the plan's world size is ", limit);
    case errc::group_rank_out_of_range:
      return concat("GROUP_RANK ", value, " is not a node of the plan, which has ", limit,
                    " nodes");
    case errc::local_world_size_mismatch:
      return concat(who, "started with LOCAL_WORLD_SIZE ", value,
                    " (--nproc_per_node), but the plan gives it ", limit, " workers");
    case errc::rank_mismatch:
      return concat(who, "RANK is ", value, " but the plan gives LOCAL_RANK ", d.local_rank,
                    " the global rank ", limit);
    case errc::identical_workers_on_heterogeneous:
      return "TORCH_ELASTIC_WORKER_IDENTICAL=1 makes torchrun assume every node runs this node's worker "
             "count, which breaks RANK and WORLD_SIZE when nodes differ; unset it";
    case errc::bad_rendezvous_timeout:
      return concat("rendezvous_timeout must be 0 (torchrun's default) or more seconds, got ",
                    value);
    case errc::overriding_torchrun_arg:
      return concat(
          "the extra torchrun argument ", detail::quoted(text),
          " names an option hetlaunch computes (--nnodes, --node_rank, --nproc_per_node, --master_addr, "
          "--master_port, --rdzv_*, --max_restarts, --role, --standalone); set it through the launch "
          "options instead");
    case errc::script_looks_like_option:
      return concat("the script ", detail::quoted(text),
                    " starts with '-', so torchrun would read it as one of its own options");
    // The codes of text inputs, which parse_error carries with its own message; a diagnostic
    // holding one says what it is and shows the text.
    case errc::bad_syntax:
      return concat(detail::quoted(text), " is not in the expected format");
    case errc::limit_exceeded:
      return concat("more than ", limit, " (the limit)");
    case errc::count_mismatch:
      return concat(value, " counts for ", limit, " hosts");
    case errc::unknown_host:
      return concat("host ", detail::quoted(text), " is not in the cluster");
    case errc::no_devices:
      return "nothing is left to run on";
    case errc::bad_env_name:
      return env_name_refusal(text.view());
    case errc::owned_variable:
      if (text == variables::restart_count)
        return concat(detail::quoted(text),
                      " is the attempt number that a launcher with --restarts sets for each "
                      "attempt; it cannot be given as a variable");
      if (text == variables::max_batch)
        return concat(detail::quoted(text),
                      " is the node's memory ceiling, set from the plan (max_batch= in a hostfile, "
                      "--max-batch); it cannot be given as a variable");
      if (text == variables::progress_seconds)
        return concat(detail::quoted(text),
                      " is set only by `hetlaunch run --hang-timeout`, which reads the ranks' "
                      "progress lines; it cannot be given as a variable");
      if (text == variables::min_compute_capability || text == variables::bf16)
        return concat(detail::quoted(text),
                      " is set only by `hetlaunch run --preflight`, from the GPUs each host "
                      "reports; it cannot be given as a variable");
      if (text == variables::on_slow)
        return concat(
            detail::quoted(text),
            " is set only by `hetlaunch run --on-slow rebalance`, which judges the ranks' "
            "progress; it cannot be given as a variable");
      if (text == variables::calibrate_steps)
        return concat(detail::quoted(text),
                      " is set only by `hetlaunch calibrate` (--calibrate-steps): a job given it "
                      "stops after that many steps as if it had succeeded; it cannot be given as a "
                      "variable");
      return concat(detail::quoted(text),
                    " is set from the plan (--global-batch), and another value would give the "
                    "workers wrong work shares; it cannot be given as a variable");
    case errc::unplanned_share:
      return concat(variable, " is ", detail::quoted(text),
                    " but the plan has no global batch: the worker would read a work share that "
                    "no launch gave it (an inherited variable?); unset it, or plan with "
                    "--global-batch");
    case errc::bad_weight:
      return concat(who, weight_refusal(text.view(), d.weight));
    case errc::global_batch_too_small:
      return concat("the global batch ", value, " is smaller than the world size ", limit,
                    ": every worker needs at least one sample a step");
    case errc::bad_global_batch:
      if (value == 0)
        return "the plan has no global batch (global_batch is 0), so it has no work shares";
      return concat("the global batch must be 0 (no work shares) or at least the world size, got ",
                    value);
    case errc::batch_mismatch:
      if (variable == variables::max_batch && limit == 0)
        return concat(host.empty() ? std::string() : who, variable, " is ", detail::quoted(text),
                      " but the plan gives this node no ceiling");
      return concat(host.empty() ? std::string() : who, variable, " is ", detail::quoted(text),
                    " but the plan gives ", limit);
    case errc::host_mismatch:
      if (text.empty())
        return concat(who, variable, " is not set; the plan gives ", detail::quoted(host));
      return concat(who, variable, " is ", detail::quoted(text), " but the plan gives ",
                    detail::quoted(host));
    case errc::virtual_local_rank:
      return concat(
          "the extra torchrun argument ", detail::quoted(text),
          " (torch 2.14) gives every worker LOCAL_RANK=0 and only its own device in "
          "CUDA_VISIBLE_DEVICES, which the plan, its environments and the workers' checks do not "
          "describe; leave it out: each worker's LOCAL_RANK picks its device");
    case errc::binding_entrypoint:
      return concat(
          "the extra torchrun argument ", detail::quoted(text),
          " changes how torchrun starts each worker, "
          "which --numa-binding does through `hetlaunch bind`; leave it out, or bind with torchrun's own "
          "--numa-binding (torch 2.9 and later) instead of hetlaunch's");
    default:
      break;
  }
  // A subsystem's code in a diagnostic built without its `describe`.
  return concat(to_string(d.code), ": ", quoted(text));
}
}  // namespace detail

/// What validation tolerates.
struct validate_options {
  /// Several agents on one host (for example two torchrun agents on one machine, each with its
  /// own GPUs). Off by default: a duplicate host is far more often a typo.
  bool allow_duplicate_hosts = false;
  /// '_' in host names, which RFC 1123 forbids but some clusters use.
  bool allow_underscore = false;
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_DIAGNOSTIC_HPP
// ---- hetlaunch/text.hpp
// hetlaunch: text as the library reads and writes it, for programs that print beside it.
#ifndef HETLAUNCH_TEXT_HPP
#define HETLAUNCH_TEXT_HPP

#include <optional>

// ---- hetlaunch/detail/json_string.hpp
// hetlaunch: text written as a JSON (and YAML) string.
#ifndef HETLAUNCH_DETAIL_JSON_STRING_HPP
#define HETLAUNCH_DETAIL_JSON_STRING_HPP



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

namespace hetlaunch {

/// Quotes text as the library's messages do: whole UTF-8 characters are kept, other bytes and
/// characters that would garble a terminal are escaped, and text longer than `limit` bytes is
/// cut at a character, followed by its length: quote("a\nb") is 'a\nb'.
[[nodiscard]] inline std::string quote(std::string_view text,
                                       std::size_t limit = detail::quote_limit) {
  return detail::quoted(text, limit);
}

/// `text` as a JSON string (also a YAML double-quoted scalar), as the library's JSON and YAML
/// outputs write it: valid UTF-8 whatever the bytes; a byte that is not part of a UTF-8
/// character is written \udcXX (Python's surrogateescape gives it back), and invisible
/// characters are written \uXXXX.
[[nodiscard]] inline std::string json_string(std::string_view text) {
  std::string out;
  detail::append_json_string(out, text);
  return out;
}

/// Reads a count as the library reads every number of its input: ASCII digits only (no sign,
/// blanks or locale), at most `max`. Empty when the text is anything else; never wraps.
///   static_assert(*hetlaunch::parse_count("0042", 100) == 42);
[[nodiscard]] constexpr std::optional<unsigned long long> parse_count(
    std::string_view text, unsigned long long max) noexcept {
  unsigned long long value = 0;
  if (!detail::parse_unsigned(text, max, value)) return std::nullopt;
  return value;
}

/// Reads an integer from `low` to `high`: an optional '-', then a count as parse_count reads it.
///   static_assert(*hetlaunch::parse_integer("-9", -128, 127) == -9);
[[nodiscard]] constexpr std::optional<long long> parse_integer(std::string_view text, long long low,
                                                               long long high) noexcept {
  long long value = 0;
  if (!detail::parse_signed(text, LLONG_MAX, value) || value < low || value > high)
    return std::nullopt;
  return value;
}

/// A name a POSIX shell can set as a variable: letters, digits and '_', not starting with a digit.
[[nodiscard]] constexpr bool is_environment_name(std::string_view name) noexcept {
  return detail::is_env_name(name);
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_TEXT_HPP
// ---- hetlaunch/cluster.hpp
// hetlaunch: topologies (fixed_cluster at compile time, cluster at run time), torchrun's rank
// math over them, and validation.
#ifndef HETLAUNCH_CLUSTER_HPP
#define HETLAUNCH_CLUSTER_HPP

#include <initializer_list>
#include <iterator>

// ---- hetlaunch/detail/rank_math.hpp
// hetlaunch: torchrun's rank math over any node source: prefix sums, role ranks, the node of a
// rank.
#ifndef HETLAUNCH_DETAIL_RANK_MATH_HPP
#define HETLAUNCH_DETAIL_RANK_MATH_HPP


// ---- hetlaunch/detail/heap_sort.hpp
// hetlaunch: a constexpr heap sort (std::sort is constexpr only from C++20).
#ifndef HETLAUNCH_DETAIL_HEAP_SORT_HPP
#define HETLAUNCH_DETAIL_HEAP_SORT_HPP


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

namespace hetlaunch {
namespace detail {

// Exclusive prefix sums of nproc: offsets[i] = sum of nproc before node i, offsets[n] = total.
// 64-bit, so an invalid topology (a sum past INT_MAX, a negative nproc) is representable and
// reported by validation instead of overflowing.
template <class NodeAt>
constexpr void compute_offsets(std::size_t n, NodeAt node_at, long long* offsets) noexcept {
  long long sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    offsets[i] = sum;
    sum += node_at(i).nproc;
  }
  offsets[n] = sum;
}

// Role ranks as torchrun's agent computes them (reference §2.1): the same exclusive prefix sum,
// restricted to nodes of equal role, in node order. O(n) when every node has one role (the usual
// case), else O(n log n) by sorting node indices on (role, index).
template <class NodeAt>
constexpr void compute_role_offsets(std::size_t n, NodeAt node_at, const long long* offsets,
                                    long long* role_offsets, long long* role_totals,
                                    std::size_t* scratch) noexcept {
  bool one_role = true;
  const std::string_view first_role = n ? node_at(0).role : std::string_view();
  for (std::size_t i = 1; i < n && one_role; ++i) one_role = same_text(node_at(i).role, first_role);
  if (one_role) {
    for (std::size_t i = 0; i < n; ++i) {
      role_offsets[i] = offsets[i];
      role_totals[i] = offsets[n];
    }
    return;
  }
  for (std::size_t i = 0; i < n; ++i) scratch[i] = i;
  heap_sort(scratch, n, [&](std::size_t a, std::size_t b) {
    const int order = node_at(a).role.compare(node_at(b).role);
    return order < 0 || (order == 0 && a < b);
  });
  std::size_t start = 0;
  while (start < n) {
    const std::string_view role = node_at(scratch[start]).role;
    long long sum = 0;
    std::size_t end = start;
    for (; end < n && node_at(scratch[end]).role == role; ++end) {
      role_offsets[scratch[end]] = sum;
      sum += node_at(scratch[end]).nproc;
    }
    for (std::size_t k = start; k < end; ++k) role_totals[scratch[k]] = sum;
    start = end;
  }
}

// The node holding global rank g: the first i with offsets[i + 1] > g (an upper bound over the
// node ends). Branchless, so its cost is the log2(n) loads and nothing else.
// Precondition: 0 <= g < offsets[n], offsets non-decreasing.
constexpr std::size_t node_of_rank(const long long* offsets, std::size_t n, long long g) noexcept {
  if (n == 0) return 0;
  const long long* base = offsets + 1;
  std::size_t len = n;
  while (len > 1) {
    const std::size_t half = len / 2;
    base = (base[half - 1] <= g) ? base + half : base;
    len -= half;
  }
  return static_cast<std::size_t>(base - (offsets + 1)) + ((*base <= g) ? 1u : 0u);
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_DETAIL_RANK_MATH_HPP
// ---- hetlaunch/topology_queries.hpp
// hetlaunch: the queries fixed_cluster and cluster share (node, world size, offsets, the node and
// local rank of a global rank, role ranks), written once over the rank math so both agree.
#ifndef HETLAUNCH_TOPOLOGY_QUERIES_HPP
#define HETLAUNCH_TOPOLOGY_QUERIES_HPP



namespace hetlaunch {
namespace detail {

// T, named so that it depends on D: members of a class template that return it are then compiled
// only where a program uses them, not by every includer.
template <class D, class T>
struct dependent_on {
  using type = T;
};

// The members rank math needs; fixed_cluster and cluster provide them through topology_queries.
template <class Derived>
class topology_queries {
  template <class T>
  using checked = typename dependent_on<Derived, result<T, diagnostic>>::type;

  constexpr const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
  constexpr const long long* offsets() const noexcept { return self().offsets_data(); }
  constexpr std::size_t count() const noexcept { return self().node_count(); }

  constexpr diagnostic range_error(errc code, long long value, long long limit) const noexcept {
    return diagnostic::of(code).with_value(value).with_limit(limit);
  }
  constexpr diagnostic local_rank_error(std::size_t i, int local_rank) const noexcept {
    const node_spec node = self().node_unchecked(i);
    return range_error(errc::local_rank_out_of_range, local_rank, node.nproc)
        .with_node(i)
        .with_host(node.host)
        .with_role(node.role);
  }
  constexpr long long world_ll() const noexcept { return offsets()[count()]; }

 public:
  /// The node's host, nproc and role. Precondition: i < node_count().
  [[nodiscard]] constexpr node_spec node(std::size_t i) const noexcept {
    detail::expects(i < count(), "node(i): node index out of range");
    return self().node_unchecked(i);
  }

  /// Sum of nproc over all nodes: torchrun's WORLD_SIZE. O(1).
  /// Precondition: the sum fits int (validation reports world_size_overflow otherwise).
  [[nodiscard]] constexpr int world_size() const noexcept {
    detail::expects(world_ll() <= INT_MAX, "world_size(): the world size exceeds INT_MAX");
    return static_cast<int>(world_ll());
  }

  /// Workers on node i: its LOCAL_WORLD_SIZE. O(1). Precondition: i < node_count().
  [[nodiscard]] constexpr int nproc(std::size_t i) const noexcept {
    detail::expects(i < count(), "nproc(i): node index out of range");
    return self().node_unchecked(i).nproc;
  }

  /// Sum of nproc of the nodes before i: the global rank of node i's local rank 0. O(1).
  /// Precondition: i < node_count() and the offset fits int.
  [[nodiscard]] constexpr int rank_offset(std::size_t i) const noexcept {
    detail::expects(i < count(), "rank_offset(i): node index out of range");
    const bool fits = offsets()[i] >= 0 && offsets()[i] <= INT_MAX;
    detail::expects(fits, "rank_offset(i): the offset does not fit int; validate the cluster");
    return static_cast<int>(offsets()[i]);
  }

  /// torchrun's RANK of worker `local_rank` on node i: rank_offset(i) + local_rank. O(1).
  /// Precondition: i < node_count(), 0 <= local_rank < nproc(i), and the rank fits int.
  [[nodiscard]] constexpr int global_rank(std::size_t i, int local_rank) const noexcept {
    detail::expects(i < count(), "global_rank(i, local_rank): node index out of range");
    const bool on_node = local_rank >= 0 && local_rank < self().node_unchecked(i).nproc;
    detail::expects(on_node, "global_rank(i, local_rank): local rank out of range");
    const long long g = offsets()[i] + local_rank;
    detail::expects(g <= INT_MAX, "global_rank(i, local_rank): the rank exceeds INT_MAX");
    return static_cast<int>(g);
  }

  /// The node and local rank of a global rank: the inverse of global_rank. O(log N).
  /// Precondition: 0 <= global_rank < world_size().
  [[nodiscard]] constexpr rank_location locate(int global_rank) const noexcept {
    const bool in_world = global_rank >= 0 && global_rank < world_ll();
    detail::expects(in_world, "locate(global_rank): global rank out of range");
    const std::size_t i = node_of_rank(offsets(), count(), global_rank);
    return {i, static_cast<int>(global_rank - offsets()[i])};
  }

  /// torchrun's ROLE_RANK: the rank among the workers of nodes with node i's role. O(1).
  /// Precondition as for global_rank.
  [[nodiscard]] constexpr int role_rank(std::size_t i, int local_rank) const noexcept {
    detail::expects(i < count(), "role_rank(i, local_rank): node index out of range");
    const bool on_node = local_rank >= 0 && local_rank < self().node_unchecked(i).nproc;
    detail::expects(on_node, "role_rank(i, local_rank): local rank out of range");
    const long long r = self().role_offset_unchecked(i) + local_rank;
    detail::expects(r <= INT_MAX, "role_rank(i, local_rank): the rank exceeds INT_MAX");
    return static_cast<int>(r);
  }

  /// torchrun's ROLE_WORLD_SIZE: the workers of all nodes with node i's role. O(1).
  /// Precondition: i < node_count() and the sum fits int.
  [[nodiscard]] constexpr int role_world_size(std::size_t i) const noexcept {
    detail::expects(i < count(), "role_world_size(i): node index out of range");
    const long long w = self().role_total_unchecked(i);
    detail::expects(w <= INT_MAX, "role_world_size(i): the sum exceeds INT_MAX");
    return static_cast<int>(w);
  }

  // Checked variants: no precondition; an out-of-range argument gives a diagnostic
  // (node_out_of_range, local_rank_out_of_range, global_rank_out_of_range). The cluster itself
  // must be valid (see validate) for the values to fit int.

  /// node(i), or node_out_of_range.
  [[nodiscard]] constexpr checked<node_spec> try_node(std::size_t i) const noexcept {
    if (i >= count())
      return range_error(errc::node_out_of_range, static_cast<long long>(i),
                         static_cast<long long>(count()));
    return self().node_unchecked(i);
  }
  /// nproc(i), or node_out_of_range.
  [[nodiscard]] constexpr checked<int> try_nproc(std::size_t i) const noexcept {
    if (i >= count())
      return range_error(errc::node_out_of_range, static_cast<long long>(i),
                         static_cast<long long>(count()));
    return self().node_unchecked(i).nproc;
  }
  /// rank_offset(i), or node_out_of_range.
  [[nodiscard]] constexpr checked<int> try_rank_offset(std::size_t i) const noexcept {
    if (i >= count())
      return range_error(errc::node_out_of_range, static_cast<long long>(i),
                         static_cast<long long>(count()));
    return rank_offset(i);
  }
  /// global_rank(i, local_rank), or node_out_of_range / local_rank_out_of_range.
  [[nodiscard]] constexpr checked<int> try_global_rank(std::size_t i,
                                                       int local_rank) const noexcept {
    if (i >= count())
      return range_error(errc::node_out_of_range, static_cast<long long>(i),
                         static_cast<long long>(count()));
    if (local_rank < 0 || local_rank >= self().node_unchecked(i).nproc)
      return local_rank_error(i, local_rank);
    return global_rank(i, local_rank);
  }
  /// locate(global_rank), or global_rank_out_of_range.
  [[nodiscard]] constexpr checked<rank_location> try_locate(int global_rank) const noexcept {
    if (global_rank < 0 || global_rank >= world_ll())
      return range_error(errc::global_rank_out_of_range, global_rank, world_ll());
    return locate(global_rank);
  }
  /// role_rank(i, local_rank), or node_out_of_range / local_rank_out_of_range.
  [[nodiscard]] constexpr checked<int> try_role_rank(std::size_t i, int local_rank) const noexcept {
    if (i >= count())
      return range_error(errc::node_out_of_range, static_cast<long long>(i),
                         static_cast<long long>(count()));
    if (local_rank < 0 || local_rank >= self().node_unchecked(i).nproc)
      return local_rank_error(i, local_rank);
    return role_rank(i, local_rank);
  }
  /// role_world_size(i), or node_out_of_range.
  [[nodiscard]] constexpr checked<int> try_role_world_size(std::size_t i) const noexcept {
    if (i >= count())
      return range_error(errc::node_out_of_range, static_cast<long long>(i),
                         static_cast<long long>(count()));
    return role_world_size(i);
  }
};

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_TOPOLOGY_QUERIES_HPP
// ---- hetlaunch/validation.hpp
// hetlaunch: validation of any node source: duplicate hosts in O(n log n) at compile time and run
// time, and every node's problems in node order.
#ifndef HETLAUNCH_VALIDATION_HPP
#define HETLAUNCH_VALIDATION_HPP



namespace hetlaunch {
namespace detail {

constexpr std::size_t role_problem_position(std::string_view role) noexcept {
  const char* p = role.data();
  std::size_t i = 0;
  const std::size_t n = role.size();
  while (i<n&& static_cast<unsigned char>(p[i])> 0x20 && p[i] != 0x7f) ++i;
  return i;
}

// Scratch space for validation: n elements in each array.
struct validation_scratch {
  std::size_t* idx;
  std::size_t* idx_tmp;
  std::uint64_t* key;
  std::uint64_t* key_tmp;
  std::size_t* dup_of;
};

// Within a run of `run` nodes whose hashes share their upper 32 bits (run_node(k) gives the k-th's
// index), finds the nodes whose host an earlier node has: sorts them on (full hash, host, index)
// and calls duplicate(node, first node with that host) for each. O(k log k). `full` and `order`
// hold `run` elements. Runs longer than one come only from duplicates or rare collisions.
template <class NodeAt, class RunNode, class Duplicate>
constexpr void find_run_duplicates(std::size_t run, NodeAt node_at, RunNode run_node,
                                   std::uint64_t* full, std::size_t* order,
                                   Duplicate duplicate) noexcept {
  for (std::size_t k = 0; k < run; ++k) {
    full[k] = host_hash(node_at(run_node(k)).host);
    order[k] = k;
  }
  heap_sort(order, run, [&](std::size_t a, std::size_t b) {
    if (full[a] != full[b]) return full[a] < full[b];
    const int cmp = compare_host(node_at(run_node(a)).host, node_at(run_node(b)).host);
    return cmp < 0 || (cmp == 0 && run_node(a) < run_node(b));
  });
  std::size_t first = run_node(order[0]);
  for (std::size_t k = 1; k < run; ++k) {
    const std::size_t prev = order[k - 1], cur = order[k];
    if (full[prev] == full[cur] &&
        compare_host(node_at(run_node(prev)).host, node_at(run_node(cur)).host) == 0)
      duplicate(run_node(cur), first);
    else
      first = run_node(cur);
  }
}

// Marks duplicate hosts: dup_of[i] = the first node with the same host, or n when none.
// Node indices are radix-sorted (stable, O(n)) on the high 32 bits of the host's hash, so equal
// hosts land in one run, in node order. Runs longer than one (duplicates, or rare collisions) are
// then sorted on (full hash, host, index), O(k log k). O(n log n) in the worst case, O(n) as a
// rule.
template <class NodeAt>
constexpr void find_duplicate_hosts(std::size_t n, NodeAt node_at, validation_scratch s) noexcept {
  std::size_t* idx = s.idx;
  std::uint64_t* key = s.key;
  std::size_t* idx_tmp = s.idx_tmp;
  std::uint64_t* key_tmp = s.key_tmp;
  for (std::size_t i = 0; i < n; ++i) {
    idx[i] = i;
    key[i] = host_hash(node_at(i).host);
    s.dup_of[i] = n;
  }
  for (unsigned shift = 32; shift < 64; shift += 8) {
    std::size_t count[257] = {};
    for (std::size_t i = 0; i < n; ++i) ++count[((key[i] >> shift) & 255u) + 1];
    for (std::size_t b = 1; b < 257; ++b) count[b] += count[b - 1];
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t pos = count[(key[i] >> shift) & 255u]++;
      idx_tmp[pos] = idx[i];
      key_tmp[pos] = key[i];
    }
    std::size_t* ti = idx;
    idx = idx_tmp;
    idx_tmp = ti;
    std::uint64_t* tk = key;
    key = key_tmp;
    key_tmp = tk;
  }
  // key[k] is now the hash of node idx[k]; the arrays were swapped an even number of times.
  std::size_t start = 0;
  while (start < n) {
    std::size_t end = start + 1;
    while (end < n && (key[end] >> 32) == (key[start] >> 32)) ++end;
    if (end - start > 1) {
      const std::size_t* run_idx = idx + start;
      find_run_duplicates(
          end - start, node_at, [run_idx](std::size_t k) { return run_idx[k]; }, key_tmp, idx_tmp,
          [&s](std::size_t node, std::size_t first) { s.dup_of[node] = first; });
    }
    start = end;
  }
}

// Reports every problem in node order; stops when `report` returns false. `duplicate_of[i]` is
// the first earlier node with node i's host, or n; it is asked in increasing node order, and only
// when duplicates are not allowed. An array at compile time: indexing costs one constexpr step
// where a call costs several, and Clang's default limit is counted in steps.
template <class NodeAt, class DuplicateOf, class Report>
constexpr void validate_nodes(std::size_t n, NodeAt node_at, validate_options options,
                              DuplicateOf duplicate_of, Report report) noexcept {
  if (n == 0) {
    report(diagnostic::of(errc::empty_cluster));
    return;
  }
  long long world = 0;
  bool overflow_reported = false;
  // Only a failing check builds a diagnostic: the loop is charged per statement in constexpr.
  const auto problem = [&](std::size_t i, const node_spec& node, errc code) {
    return diagnostic::of(code).with_node(i).with_host(node.host).with_role(node.role);
  };
  // The previous node's role, kept rather than read again: a node copied costs constexpr steps.
  std::string_view previous_role;
  for (std::size_t i = 0; i < n; ++i) {
    const node_spec node = node_at(i);
    if (node.nproc < 1) {
      if (!report(problem(i, node, errc::bad_nproc).with_value(node.nproc))) return;
    } else {
      world += node.nproc;
      if (world > INT_MAX && !overflow_reported) {
        overflow_reported = true;
        if (!report(
                problem(i, node, errc::world_size_overflow).with_value(world).with_limit(INT_MAX)))
          return;
      }
    }
    const host_check hc = check_host(node.host, options.allow_underscore);
    if (hc.issue != host_issue::none) {
      if (!report(problem(i, node, errc::bad_host).with_issue(hc.issue).with_position(hc.position)))
        return;
    }
    if (!options.allow_duplicate_hosts && duplicate_of[i] != n) {
      if (!report(problem(i, node, errc::duplicate_host).with_other_node(duplicate_of[i]))) return;
    }
    // is_default_weight written out: a call costs constexpr steps, and this runs for every node.
    if (!(node.weight.size() == 1 && node.weight[0] == '1')) {
      const weight_check wc = check_weight(node.weight);
      if (!wc) {
        if (!report(problem(i, node, errc::bad_weight)
                        .with_weight(wc.issue)
                        .with_position(wc.position)
                        .with_text(node.weight)))
          return;
      }
    }
    if (node.role.empty()) {
      if (!report(problem(i, node, errc::empty_role))) return;
    } else if (i == 0 || !same_text(node.role, previous_role)) {
      // A role equal to the previous node's was already checked.
      const std::size_t pos = role_problem_position(node.role);
      if (node.role[0] == '-' || pos != node.role.size()) {
        if (!report(problem(i, node, errc::bad_role).with_position(node.role[0] == '-' ? 0 : pos)))
          return;
      }
    }
    previous_role = node.role;
  }
}

}  // namespace detail
}  // namespace hetlaunch

#endif  // HETLAUNCH_VALIDATION_HPP

namespace hetlaunch {

/// A topology fixed at compile time: N nodes, each with its host, nproc and role. Every member is
/// usable in constant expressions (C++17); nothing allocates. The strings are views: build it from
/// literals or other storage that outlives it.
///
/// The rank math follows torchrun's elastic agent with the static rendezvous: node i's workers
/// get global ranks rank_offset(i) .. rank_offset(i) + nproc(i) - 1, where rank_offset(i) is the
/// sum of nproc of the nodes before i.
///
/// Example:
///   constexpr auto c = hetlaunch::make_cluster({{"node0", 8}, {"node1", 4}, {"node2", 2}});
///   static_assert(c.world_size() == 14 && c.rank_offset(2) == 12);
///   static_assert(c.locate(13) == hetlaunch::rank_location{2, 1});
///   HETLAUNCH_STATIC_VALIDATE(c);
template <std::size_t N>
class fixed_cluster : public detail::topology_queries<fixed_cluster<N>> {
  friend class detail::topology_queries<fixed_cluster<N>>;
  template <std::size_t M>
  friend constexpr diagnostic first_error(const fixed_cluster<M>&, validate_options) noexcept;

  std::array<node_spec, N> nodes_{};
  std::array<long long, N + 1> offsets_{};
  std::array<long long, N> role_offsets_{};
  std::array<long long, N> role_totals_{};

  constexpr node_spec node_unchecked(std::size_t i) const noexcept { return nodes_[i]; }
  constexpr const long long* offsets_data() const noexcept { return offsets_.data(); }
  constexpr long long role_offset_unchecked(std::size_t i) const noexcept {
    return role_offsets_[i];
  }
  constexpr long long role_total_unchecked(std::size_t i) const noexcept { return role_totals_[i]; }

  template <class Nodes>
  constexpr void init(const Nodes& nodes) noexcept {
    node_spec* out = nodes_.data();
    for (std::size_t i = 0; i < N; ++i) out[i] = nodes[i];
    const node_spec* in = nodes_.data();
    const auto node_at = [in](std::size_t i) { return in[i]; };
    detail::compute_offsets(N, node_at, offsets_.data());
    std::array<std::size_t, N> scratch{};
    detail::compute_role_offsets(N, node_at, offsets_.data(), role_offsets_.data(),
                                 role_totals_.data(), scratch.data());
  }

 public:
  /// No nodes (only meaningful for N == 0).
  constexpr fixed_cluster() noexcept = default;
  /// Copies the node specs and computes the prefix sums. Accepts any values; see first_error.
  // (N ? N : 1): a zero-size array type is ill-formed, and fixed_cluster<0> has no nodes to take.
  constexpr explicit fixed_cluster(const node_spec (&nodes)[N ? N : 1]) noexcept { init(nodes); }
  constexpr explicit fixed_cluster(const std::array<node_spec, N>& nodes) noexcept { init(nodes); }

  /// The number of nodes: torchrun's --nnodes and GROUP_WORLD_SIZE.
  [[nodiscard]] constexpr std::size_t node_count() const noexcept { return N; }
  /// All node specs, in node order.
  [[nodiscard]] constexpr const std::array<node_spec, N>& nodes() const noexcept { return nodes_; }
};

/// Builds a fixed_cluster from a braced list of node specs:
///   constexpr auto c = hetlaunch::make_cluster({{"node0", 8}, {"node1", 4}});
template <std::size_t N>
[[nodiscard]] constexpr fixed_cluster<N> make_cluster(const node_spec (&nodes)[N]) noexcept {
  return fixed_cluster<N>(nodes);
}
/// Builds a fixed_cluster from a std::array of node specs.
template <std::size_t N>
[[nodiscard]] constexpr fixed_cluster<N> make_cluster(
    const std::array<node_spec, N>& nodes) noexcept {
  return fixed_cluster<N>(nodes);
}

template <class Unused = void>
class basic_cluster;
template <class Unused = void>
class basic_cluster_builder;

/// A topology known at run time. Owns copies of its host and role strings, so it may outlive
/// whatever it was built from. Same rank math and preconditions as fixed_cluster; construction
/// accepts any values (validate() says what is wrong).
///
/// Example:
///   hetlaunch::cluster c{{"gpu-a", 8}, {"gpu-b", 4}};
///   for (const auto& d : hetlaunch::validate(c)) std::cerr << d.message() << '\n';
///   int rank = c.global_rank(1, 3);  // 11
// A class template with one instance (`cluster`), so that its members are compiled only where a
// program uses them: including cluster.hpp then costs little more than its standard headers.
template <class Unused>
class basic_cluster : public detail::topology_queries<basic_cluster<Unused>> {
  friend class detail::topology_queries<basic_cluster>;
  template <class>
  friend class basic_cluster_builder;
  template <class T>
  using vector = detail::deferred<std::vector<T>, Unused>;

  // Hosts are stored back to back in one buffer and found by their end offsets; nproc is the step
  // between rank offsets; roles are ids into a table of distinct roles, stored only when there
  // are several. A node costs 16 bytes plus its host's characters, and copies and moves stay
  // valid because nothing points into the buffer.
  std::string text_;
  vector<std::size_t> host_end_;
  vector<std::uint32_t> role_id_;  // per node, only when there are several roles (else all 0)
  vector<std::pair<std::size_t, std::size_t>> roles_;  // (begin, size) in text_, by id
  vector<long long> offsets_{0};
  vector<long long> role_offsets_;    // per node, only when there are several roles
  vector<long long> role_totals_;     // per role id
  vector<std::vector<int>> devices_;  // empty, or one (possibly empty) list per node
  // Weights: ids into a table of texts, stored only once a node has a weight other than "1".
  // A run of equal weights shares one entry, so a cluster of a few GPU types keeps a few.
  vector<std::uint32_t> weight_id_;
  vector<std::string> weights_;  // by id; id 0 is "1"
  vector<int> max_batch_;        // empty, or one ceiling per node (0: none)

  node_spec node_unchecked(std::size_t i) const noexcept {
    const char* base = text_.data();
    const std::size_t begin = i == 0 ? 0 : host_end_[i - 1];
    const auto& role = roles_[role_of(i)];
    return {std::string_view(base + begin, host_end_[i] - begin), nproc_of(i),
            std::string_view(base + role.first, role.second),
            weight_id_.empty() ? std::string_view("1") : std::string_view(weights_[weight_id_[i]]),
            max_batch_.empty() ? 0 : max_batch_[i]};
  }
  // The id of weight `w`: the last one added, "1", or a new one.
  std::uint32_t weight_id(std::string_view w) {
    if (weights_.empty()) weights_.emplace_back("1");
    if (w == weights_.back()) return static_cast<std::uint32_t>(weights_.size() - 1);
    if (w == "1") return 0;
    weights_.emplace_back(w);
    return static_cast<std::uint32_t>(weights_.size() - 1);
  }
  void append_weight(std::string_view w) {
    if (weight_id_.empty() && w == "1") return;
    if (weight_id_.empty()) weight_id_.assign(host_end_.size() - 1, 0);  // nodes so far weigh "1"
    weight_id_.push_back(weight_id(w));
  }
  const long long* offsets_data() const noexcept { return offsets_.data(); }
  long long role_offset_unchecked(std::size_t i) const noexcept {
    return role_offsets_.empty() ? offsets_[i] : role_offsets_[i];
  }
  long long role_total_unchecked(std::size_t i) const noexcept { return role_totals_[role_of(i)]; }
  std::uint32_t role_of(std::size_t i) const noexcept { return role_id_.empty() ? 0 : role_id_[i]; }
  // A node's nproc is the step between its offset and the next: stored once, as the offsets.
  int nproc_of(std::size_t i) const noexcept {
    return static_cast<int>(offsets_[i + 1] - offsets_[i]);
  }

  // Hosts first, roles after them: a role's text is appended when it is first seen.
  void reserve(std::size_t n, std::size_t host_chars) {
    text_.reserve(host_chars);
    host_end_.reserve(n);
    offsets_.reserve(n + 1);
  }
  void append(std::string_view host, int nproc, std::uint32_t role_id, std::string_view weight) {
    text_.append(host.data(), host.size());
    host_end_.push_back(text_.size());
    append_weight(weight);
    if (role_id != 0 && role_id_.empty())
      role_id_.assign(host_end_.size() - 1, 0);  // a second run: ids from here on
    if (!role_id_.empty()) role_id_.push_back(role_id);
    offsets_.push_back(offsets_.back() + nproc);  // 64-bit: n * INT_MAX cannot wrap
  }
  // Role texts go after every host, so they are added at the end.
  void finish(const vector<std::string_view>& role_texts) {
    roles_.clear();
    for (std::string_view r : role_texts) {
      roles_.emplace_back(text_.size(), r.size());
      text_.append(r.data(), r.size());
    }
    role_totals_.assign(roles_.size(), 0);
    if (roles_.size() > 1) {
      role_offsets_.resize(node_count());
      for (std::size_t i = 0; i < node_count(); ++i) {
        role_offsets_[i] = role_totals_[role_of(i)];
        role_totals_[role_of(i)] += nproc_of(i);
      }
    } else if (!roles_.empty()) {
      role_totals_[0] = offsets_.back();
    }
  }

  template <class It>
  void assign(It first, It last, std::size_t n);

 public:
  /// An empty cluster (which validation reports as empty_cluster).
  basic_cluster() = default;
  basic_cluster(std::initializer_list<node_spec> nodes) {
    assign(nodes.begin(), nodes.end(), nodes.size());
  }
  basic_cluster(const vector<node_spec>& nodes) {
    assign(nodes.begin(), nodes.end(), nodes.size());
  }  // NOLINT
  template <std::size_t N>
  explicit basic_cluster(const fixed_cluster<N>& fixed) {
    assign(fixed.nodes().begin(), fixed.nodes().end(), N);
  }

  /// The number of nodes: torchrun's --nnodes and GROUP_WORLD_SIZE.
  [[nodiscard]] std::size_t node_count() const noexcept { return host_end_.size(); }
  /// The device ids node i's workers may use (for example after a DeepSpeed-style --include
  /// filter), or an empty list when the node's devices are not restricted. Every worker of the
  /// node sees all of them, as with torchrun (CUDA_VISIBLE_DEVICES); worker l uses the l-th.
  /// Precondition: i < node_count().
  [[nodiscard]] const std::vector<int>& devices(std::size_t i) const noexcept {
    detail::expects(i < node_count(), "devices(i): node index out of range");
    static const vector<int> none;
    return devices_.empty() ? none : devices_[i];
  }
  /// Restricts node i to the given device ids. Precondition: i < node_count().
  void set_devices(std::size_t i, vector<int> ids) {
    detail::expects(i < node_count(), "set_devices(i, ids): node index out of range");
    if (devices_.empty()) devices_.resize(node_count());
    devices_[i] = std::move(ids);
  }

  /// Gives node i the weight `w` (see node_spec::weight), kept as given; validation checks it.
  /// O(1) amortized. Precondition: i < node_count().
  void set_weight(std::size_t i, std::string_view w) {
    detail::expects(i < node_count(), "set_weight(i, w): node index out of range");
    if (weight_id_.empty()) {
      if (w == "1") return;
      weight_id_.assign(node_count(), 0);
    }
    weight_id_[i] = weight_id(w);
  }
  /// Whether some node has a weight other than "1". O(1).
  [[nodiscard]] bool has_weights() const noexcept { return !weight_id_.empty(); }

  /// Node i's memory ceiling: the most samples one of its workers takes in one forward (its
  /// share runs as micro-batches of at most this many), or 0 for none. Precondition:
  /// i < node_count().
  [[nodiscard]] int max_batch(std::size_t i) const noexcept {
    detail::expects(i < node_count(), "max_batch(i): node index out of range");
    return max_batch_.empty() ? 0 : max_batch_[i];
  }
  /// Gives node i the ceiling `m` (0: none). Preconditions: i < node_count(), m >= 0.
  void set_max_batch(std::size_t i, int m) {
    detail::expects(i < node_count(), "set_max_batch(i, m): node index out of range");
    detail::expects(m >= 0, "set_max_batch(i, m): m must not be negative");
    if (max_batch_.empty()) {
      if (m == 0) return;
      max_batch_.assign(node_count(), 0);
    }
    max_batch_[i] = m;
  }
  /// Whether some node has a ceiling. O(1).
  [[nodiscard]] bool has_max_batches() const noexcept { return !max_batch_.empty(); }

  /// The nodes in node order, as a view of this cluster that copies nothing (as
  /// fixed_cluster::nodes() gives its array). Its node_specs view this cluster's strings. A
  /// cluster built from it is a copy of this one, device lists included; it converts to a
  /// std::vector<node_spec> when a list of specs is wanted.
  class node_list {
    const basic_cluster* c_;

   public:
    explicit node_list(const basic_cluster& c) noexcept : c_(&c) {}
    class iterator {
      const basic_cluster* c_ = nullptr;
      std::size_t i_ = 0;

     public:
      using iterator_category = std::forward_iterator_tag;
      using value_type = node_spec;
      using difference_type = std::ptrdiff_t;
      using pointer = void;
      using reference = node_spec;
      iterator() = default;
      iterator(const basic_cluster* c, std::size_t i) noexcept : c_(c), i_(i) {}
      node_spec operator*() const noexcept { return c_->node_unchecked(i_); }
      iterator& operator++() noexcept { return ++i_, *this; }
      iterator operator++(int) noexcept {
        iterator old = *this;
        ++i_;
        return old;
      }
      friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.i_ == b.i_; }
      friend bool operator!=(const iterator& a, const iterator& b) noexcept { return a.i_ != b.i_; }
    };
    [[nodiscard]] std::size_t size() const noexcept { return c_->node_count(); }
    [[nodiscard]] bool empty() const noexcept { return size() == 0; }
    /// Precondition: i < size().
    node_spec operator[](std::size_t i) const noexcept { return c_->node(i); }
    [[nodiscard]] iterator begin() const noexcept { return {c_, 0}; }
    [[nodiscard]] iterator end() const noexcept { return {c_, size()}; }
    /// The cluster this list views.
    [[nodiscard]] const basic_cluster& source() const noexcept { return *c_; }
    operator vector<node_spec>() const { return vector<node_spec>(begin(), end()); }  // NOLINT
  };
  [[nodiscard]] node_list nodes() const noexcept { return node_list(*this); }
  /// A copy of the cluster `nodes` views, device lists included.
  basic_cluster(const node_list& nodes)
      : basic_cluster(nodes.source()) {}  // NOLINT: a view of a cluster copies it
};

/// Builds a cluster node by node without an intermediate list: the parsers use it so that a
/// million hosts cost their characters and 16 bytes each.
template <class Unused>
class basic_cluster_builder {
  template <class T>
  using vector = detail::deferred<std::vector<T>, Unused>;
  basic_cluster<Unused> c_;
  // Each run of equal roles gets an id as it comes; finish() gives equal roles one id. The runs'
  // texts live in one buffer, addressed by offset.
  std::string role_text_;
  vector<std::pair<std::size_t, std::size_t>> runs_;  // (begin, size) in role_text_
  vector<int> ceilings_;  // empty, or one max_batch per node added so far
  std::string_view run_text(std::size_t r) const noexcept {
    return std::string_view(role_text_).substr(runs_[r].first, runs_[r].second);
  }

 public:
  /// Reserves room for `nodes` nodes whose hosts have `host_chars` characters in all.
  void reserve(std::size_t nodes, std::size_t host_chars) { c_.reserve(nodes, host_chars); }
  /// Appends a node. O(1) amortized.
  void add(std::string_view host, int nproc, std::string_view role = "default",
           std::string_view weight = "1") {
    if (runs_.empty() || !detail::same_text(role, run_text(runs_.size() - 1))) {
      runs_.emplace_back(role_text_.size(), role.size());
      role_text_.append(role.data(), role.size());
    }
    c_.append(host, nproc, static_cast<std::uint32_t>(runs_.size() - 1), weight);
    if (!ceilings_.empty()) ceilings_.push_back(0);
  }
  /// Appends a node with everything it has: host, nproc, role, weight and ceiling. A cluster made
  /// from another's nodes keeps each field by this one call. O(1) amortized.
  void add(const node_spec& n) {
    add(n.host, n.nproc, n.role, n.weight);
    if (n.max_batch > 0 && ceilings_.empty()) ceilings_.assign(c_.node_count(), 0);
    if (!ceilings_.empty()) ceilings_.back() = n.max_batch > 0 ? n.max_batch : 0;
  }
  [[nodiscard]] std::size_t node_count() const noexcept { return c_.node_count(); }
  /// The cluster; the builder is left empty. O(n + r log r) for r runs of roles.
  [[nodiscard]] basic_cluster<Unused> finish() {
    // Runs sorted by text give each distinct role one id, in order of first appearance.
    const std::size_t r = runs_.size();
    vector<std::size_t> order(r);
    for (std::size_t k = 0; k < r; ++k) order[k] = k;
    detail::heap_sort(order.data(), r, [this](std::size_t a, std::size_t b) {
      const int cmp = run_text(a).compare(run_text(b));
      return cmp < 0 || (cmp == 0 && a < b);
    });
    vector<std::uint32_t> first_run(r);  // the first run with the same text
    for (std::size_t k = 0; k < r; ++k)
      first_run[order[k]] = k > 0 && run_text(order[k]) == run_text(order[k - 1])
                                ? first_run[order[k - 1]]
                                : static_cast<std::uint32_t>(order[k]);
    vector<std::uint32_t> id(r);
    vector<std::string_view> roles;
    for (std::size_t k = 0; k < r; ++k) {
      if (first_run[k] == k) {
        id[k] = static_cast<std::uint32_t>(roles.size());
        roles.push_back(run_text(k));
      } else {
        id[k] = id[first_run[k]];
      }
    }
    if (roles.size() > 1)
      for (std::uint32_t& role : c_.role_id_) role = id[role];
    else
      c_.role_id_.clear();
    c_.finish(roles);
    c_.max_batch_ = std::move(ceilings_);
    basic_cluster<Unused> out = std::move(c_);
    *this = basic_cluster_builder();
    return out;
  }
};

/// The run-time topology (see basic_cluster above).
using cluster = basic_cluster<>;
/// Builds a cluster node by node (see basic_cluster_builder above).
using cluster_builder = basic_cluster_builder<>;

template <class Unused>
template <class It>
void basic_cluster<Unused>::assign(It first, It last, std::size_t n) {
  basic_cluster_builder<Unused> b;
  std::size_t chars = 0;
  for (It it = first; it != last; ++it) chars += it->host.size();
  b.reserve(n, chars);
  for (It it = first; it != last; ++it) b.add(*it);
  *this = b.finish();
}

/// The first problem of a fixed topology in node order, or a diagnostic that converts to false.
/// O(N log N); usable in constant expressions, where it validates thousands of nodes within the
/// compilers' default limits.
template <std::size_t N>
[[nodiscard]] constexpr diagnostic first_error(const fixed_cluster<N>& c,
                                               validate_options options = {}) noexcept {
  std::array<std::size_t, N> idx{}, idx_tmp{}, dup_of{};
  std::array<std::uint64_t, N> key{}, key_tmp{};
  diagnostic first{};
  const node_spec* nodes = c.nodes_.data();
  const auto node_at = [nodes](std::size_t i) { return nodes[i]; };
  if (!options.allow_duplicate_hosts)
    detail::find_duplicate_hosts(N, node_at,
                                 detail::validation_scratch{idx.data(), idx_tmp.data(), key.data(),
                                                            key_tmp.data(), dup_of.data()});
  detail::validate_nodes(N, node_at, options, dup_of.data(), [&first](const diagnostic& d) {
    first = d;
    return false;
  });
  return first;
}

namespace detail {
// Every node whose host an earlier node has, as (node, first node with that host), in node
// order. Keys pack the upper 32 bits of the host's hash with the node index, so sorting them
// brings equal hosts together in node order: 8 bytes a node, O(n) as a rule. Runs that share the
// hash bits (duplicates, or rare collisions) are sorted on (full hash, host, index), O(k log k),
// so the worst case is O(n log n).
template <class NodeAt>
deferred<std::vector<std::pair<std::size_t, std::size_t>>, NodeAt> duplicate_hosts(std::size_t n,
                                                                                   NodeAt node_at) {
  deferred<std::vector<std::pair<std::size_t, std::size_t>>, NodeAt> dups;
  if (n > 0xffffffffu) {  // more nodes than 32-bit indices: the general algorithm
    deferred<std::vector<std::size_t>, NodeAt> idx(n), idx_tmp(n), dup_of(n);
    deferred<std::vector<std::uint64_t>, NodeAt> key(n), key_tmp(n);
    find_duplicate_hosts(
        n, node_at,
        validation_scratch{idx.data(), idx_tmp.data(), key.data(), key_tmp.data(), dup_of.data()});
    for (std::size_t i = 0; i < n; ++i)
      if (dup_of[i] != n) dups.emplace_back(i, dup_of[i]);
    return dups;
  }
  deferred<std::vector<std::uint64_t>, NodeAt> keys(n);
  for (std::size_t i = 0; i < n; ++i)
    keys[i] = (host_hash(node_at(i).host) & 0xffffffff00000000ull) | i;
  // In place, by the top 16 bits (American flag sort), then each bucket by its whole key: the
  // buckets hold n / 65536 keys on average, so this is linear, and it needs no second array.
  const auto less = [](std::uint64_t a, std::uint64_t b) { return a < b; };
  if (n <= 65536) {
    heap_sort(keys.data(), n, less);
  } else {
    deferred<std::vector<std::size_t>, NodeAt> start(65537, 0);
    for (std::size_t i = 0; i < n; ++i) ++start[(keys[i] >> 48) + 1];
    for (std::size_t b = 1; b <= 65536; ++b) start[b] += start[b - 1];
    deferred<std::vector<std::size_t>, NodeAt> next(start.begin(), start.end() - 1);
    for (std::size_t b = 0; b < 65536; ++b)
      while (next[b] < start[b + 1]) {
        std::uint64_t k = keys[next[b]];
        std::size_t home = static_cast<std::size_t>(k >> 48);
        while (home != b) {  // cycle each key to its bucket
          const std::uint64_t displaced = keys[next[home]];
          keys[next[home]++] = k;
          k = displaced;
          home = static_cast<std::size_t>(k >> 48);
        }
        keys[next[b]++] = k;
      }
    for (std::size_t b = 0; b < 65536; ++b)
      if (start[b + 1] - start[b] > 1)
        heap_sort(keys.data() + start[b], start[b + 1] - start[b], less);
  }
  deferred<std::vector<std::uint64_t>, NodeAt> full;  // a run's full hashes
  deferred<std::vector<std::size_t>, NodeAt> order;   // a run's positions, sorted
  std::size_t start = 0;
  while (start < n) {
    std::size_t end = start + 1;
    while (end < n && (keys[end] >> 32) == (keys[start] >> 32)) ++end;
    if (end - start > 1) {
      const std::size_t run = end - start;
      const std::uint64_t* run_keys = keys.data() + start;
      full.resize(run);
      order.resize(run);
      find_run_duplicates(
          run, node_at,
          [run_keys](std::size_t k) { return static_cast<std::size_t>(run_keys[k] & 0xffffffffu); },
          full.data(), order.data(),
          [&dups](std::size_t node, std::size_t first) { dups.emplace_back(node, first); });
    }
    start = end;
  }
  heap_sort(dups.data(), dups.size(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return dups;
}

// Every problem, or only the first when `first_only`.
template <class NodeAt>
deferred<std::vector<diagnostic>, NodeAt> validate_all(std::size_t n, NodeAt node_at,
                                                       validate_options options,
                                                       bool first_only = false) {
  deferred<std::vector<std::pair<std::size_t, std::size_t>>, NodeAt> dups;
  if (!options.allow_duplicate_hosts) dups = duplicate_hosts(n, node_at);
  // The sparse duplicates read as the array validate_nodes expects, in increasing node order.
  struct sparse_duplicates {
    const deferred<std::vector<std::pair<std::size_t, std::size_t>>, NodeAt>& dups;
    std::size_t n;
    std::size_t next = 0;
    std::size_t operator[](std::size_t i) {
      while (next < dups.size() && dups[next].first < i) ++next;
      return next < dups.size() && dups[next].first == i ? dups[next].second : n;
    }
  } duplicate_of{dups, n};
  deferred<std::vector<diagnostic>, NodeAt> out;
  validate_nodes(n, node_at, options, duplicate_of, [&out, first_only](const diagnostic& d) {
    out.push_back(d);
    return !first_only;
  });
  return out;
}
}  // namespace detail

/// Every problem of a topology, in node order (empty when it is valid), as a
/// std::vector<diagnostic> (named through the template parameter, so that it is compiled only
/// where validate is called). O(N log N). The diagnostics own their text: they may outlive `c`.
template <class Unused>
[[nodiscard]] detail::deferred<std::vector<diagnostic>, Unused> validate(
    const basic_cluster<Unused>& c, validate_options options = {}) {
  return detail::validate_all(
      c.node_count(), [&c](std::size_t i) { return c.node(i); }, options);
}
/// Every problem of a fixed topology, in node order, as a std::vector<diagnostic>.
template <std::size_t N>
[[nodiscard]] detail::deferred<std::vector<diagnostic>, fixed_cluster<N>> validate(
    const fixed_cluster<N>& c, validate_options options = {}) {
  return detail::validate_all(
      N, [&c](std::size_t i) { return c.node(i); }, options);
}
/// The first problem of a run-time topology, or a diagnostic that converts to false.
template <class Unused>
[[nodiscard]] diagnostic first_error(const basic_cluster<Unused>& c,
                                     validate_options options = {}) {
  const auto first = detail::validate_all(
      c.node_count(), [&c](std::size_t i) { return c.node(i); }, options, true);
  return first.empty() ? diagnostic{} : first.front();
}

namespace detail {
// Instantiated by HETLAUNCH_STATIC_VALIDATE with the first problem's code and node index, which
// the compiler prints in "required from" notes; the failing assertion below says what it means.
template <errc Code, std::size_t Node>
struct static_validation {
  static_assert(Code != errc::empty_cluster,
                "hetlaunch: invalid topology: the cluster has no nodes");
  static_assert(
      Code != errc::bad_nproc,
      "hetlaunch: invalid topology: nproc must be at least 1 (the node index is static_validation's second argument)");
  static_assert(
      Code != errc::world_size_overflow,
      "hetlaunch: invalid topology: the world size exceeds INT_MAX (torch.distributed ranks are 32-bit)");
  static_assert(
      Code != errc::bad_host,
      "hetlaunch: invalid topology: a host is not a valid RFC 1123 name or IP literal (the node index is static_validation's second argument)");
  static_assert(
      Code != errc::duplicate_host,
      "hetlaunch: invalid topology: duplicate host; allow it with validate_options::allow_duplicate_hosts (the node index is static_validation's second argument)");
  static_assert(
      Code != errc::empty_role,
      "hetlaunch: invalid topology: a role is empty (the node index is static_validation's second argument)");
  static_assert(
      Code != errc::bad_role,
      "hetlaunch: invalid topology: a role has a blank or control character or starts with '-' (the node index is static_validation's second argument)");
  static_assert(
      Code != errc::bad_weight,
      "hetlaunch: invalid topology: a weight is not a decimal above 0 and at most 1000000 with at most 6 fractional digits (the node index is static_validation's second argument)");
  static constexpr bool ok = Code == errc::ok;
};
}  // namespace detail

}  // namespace hetlaunch

/// Fails the build when the fixed topology `c` (a constexpr variable) is invalid, with a message
/// that says what is wrong and, in the instantiation note, the node index. A declaration: usable
/// at namespace, class and block scope.
///   constexpr auto c = hetlaunch::make_cluster({{"a", 8}, {"a", 4}});
///   HETLAUNCH_STATIC_VALIDATE(c);
///   // error: ... duplicate host ... static_validation<errc::duplicate_host, 1>
#define HETLAUNCH_STATIC_VALIDATE(c) \
  HETLAUNCH_STATIC_VALIDATE_WITH(c, ::hetlaunch::validate_options{})

/// HETLAUNCH_STATIC_VALIDATE with options, e.g. to allow several agents on one host:
///   constexpr hetlaunch::validate_options shared{/*allow_duplicate_hosts=*/true};
///   HETLAUNCH_STATIC_VALIDATE_WITH(c, shared);
#define HETLAUNCH_STATIC_VALIDATE_WITH(c, options)                                               \
  static_assert(                                                                                 \
      ::hetlaunch::detail::static_validation<::hetlaunch::first_error((c), (options)).code,      \
                                             ::hetlaunch::first_error((c), (options)).node>::ok, \
      "hetlaunch: invalid topology (see the message above)")

#endif  // HETLAUNCH_CLUSTER_HPP
// ---- hetlaunch/shares.hpp
// hetlaunch: work shares, the split of each optimizer step's global batch over nodes and ranks in
// proportion to the nodes' weights, in exact integer arithmetic.
#ifndef HETLAUNCH_SHARES_HPP
#define HETLAUNCH_SHARES_HPP

#include <algorithm>


#if !defined(__SIZEOF_INT128__)
#error "hetlaunch/shares.hpp needs a 128-bit integer type (GCC or Clang on a 64-bit target)"
#endif

namespace hetlaunch {

/// A node's part of each step: `batch` samples (n_i), starting at `offset` (o_i) within the step.
struct node_batch {
  int batch = 0;
  int offset = 0;
  friend constexpr bool operator==(const node_batch& a, const node_batch& b) noexcept {
    return a.batch == b.batch && a.offset == b.offset;
  }
  friend constexpr bool operator!=(const node_batch& a, const node_batch& b) noexcept {
    return !(a == b);
  }
};

/// A rank's part of each step: `batch` samples (b) from `offset` within the step.
struct rank_batch {
  int batch = 0;
  int offset = 0;
  friend constexpr bool operator==(const rank_batch& a, const rank_batch& b) noexcept {
    return a.batch == b.batch && a.offset == b.offset;
  }
  friend constexpr bool operator!=(const rank_batch& a, const rank_batch& b) noexcept {
    return !(a == b);
  }
};

/// Local rank `local_rank`'s part of its node's samples: the node's n samples dealt out evenly
/// over its `nproc` workers, the lower local ranks taking one more when they do not divide:
/// b = n / nproc + (local_rank < n % nproc), from offset + local_rank * (n / nproc) +
/// min(local_rank, n % nproc). What a worker computes from HETLAUNCH_NODE_BATCH,
/// HETLAUNCH_NODE_BATCH_OFFSET, LOCAL_RANK and LOCAL_WORLD_SIZE.
/// Preconditions: nproc >= 1, 0 <= local_rank < nproc, node.batch >= 0.
[[nodiscard]] constexpr rank_batch batch_of_rank(node_batch node, int nproc,
                                                 int local_rank) noexcept {
  detail::expects(nproc >= 1 && local_rank >= 0 && local_rank < nproc,
                  "batch_of_rank(node, nproc, local_rank): local rank out of range");
  const int base = node.batch / nproc;
  const int extra = node.batch % nproc;
  // local_rank * base <= node.batch: no wrap.
  return {base + (local_rank < extra ? 1 : 0),
          node.offset + local_rank * base + (local_rank < extra ? local_rank : extra)};
}

/// What a rank multiplies its mean loss by before backward(), so that DDP's average of the ranks'
/// gradients (it divides their sum by the world size) is the mean over the whole global batch:
/// b * world_size / global_batch. Preconditions: global_batch >= 1.
[[nodiscard]] constexpr double loss_scale(rank_batch rank, int world_size,
                                          int global_batch) noexcept {
  return static_cast<double>(rank.batch) * static_cast<double>(world_size) /
         static_cast<double>(global_batch);
}

namespace detail {

__extension__ typedef unsigned __int128 uint128;  // E * p_i * w_i reaches 2^102

// The split, up to the samples left. n nodes; nproc_at(i) >= 1 and micros_at(i) in [1, 10^12]
// (a checked weight), world = their nproc's sum <= INT_MAX, world <= global_batch <= INT_MAX.
// Node i gets p_i + floor(E * d_i / D) in out[i].batch (E = B - W, d_i = p_i * w_i, D = the sum
// of d_i) and its remainder E * d_i mod D in rem[i]. Returns the samples left, fewer than n (the
// remainders are each below D and add up to a multiple of it): they go one each to the nodes
// with the largest remainders, ties to the lower index (remainder_order). With d_i < 2^71 and
// E < 2^31, every product fits 128 bits.
template <class NprocAt, class MicrosAt>
constexpr std::size_t split_floors(std::size_t n, NprocAt nproc_at, MicrosAt micros_at,
                                   long long world, int global_batch, node_batch* out,
                                   uint128* rem) noexcept {
  const auto extra = static_cast<uint128>(static_cast<long long>(global_batch) - world);
  uint128 total = 0;
  for (std::size_t i = 0; i < n; ++i)
    total += static_cast<uint128>(nproc_at(i)) * static_cast<uint128>(micros_at(i));
  long long given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const uint128 part =
        extra * (static_cast<uint128>(nproc_at(i)) * static_cast<uint128>(micros_at(i)));
    const auto floor_part = static_cast<long long>(part / total);  // <= E < 2^31
    rem[i] = part % total;
    out[i].batch = static_cast<int>(nproc_at(i) + floor_part);
    given += floor_part;
  }
  return static_cast<std::size_t>(static_cast<long long>(extra) - given);
}

// Which of two nodes gets a sample left first: the larger remainder, then the lower index.
struct remainder_order {
  const uint128* rem;
  constexpr bool operator()(std::size_t a, std::size_t b) const noexcept {
    return rem[a] > rem[b] || (rem[a] == rem[b] && a < b);
  }
};

// Sets every node's offset: the prefix sums of the batches.
constexpr void set_offsets(std::size_t n, node_batch* out) noexcept {
  int offset = 0;
  for (std::size_t i = 0; i < n; ++i) {
    out[i].offset = offset;
    offset += out[i].batch;  // the sum is the global batch: no wrap
  }
}

// The problem, if any, that stops the split of `global_batch` over n nodes: a node without
// workers, a world size past INT_MAX, a bad weight, or a global batch below the world size.
// Hosts and roles do not matter to it. Sets `world`.
template <class NodeAt>
constexpr diagnostic split_problem(std::size_t n, NodeAt node_at, int global_batch,
                                   long long& world) noexcept {
  world = 0;
  if (n == 0) return diagnostic::of(errc::empty_cluster);
  for (std::size_t i = 0; i < n; ++i) {
    const node_spec node = node_at(i);
    const auto at_node = [&](errc code) {
      return diagnostic::of(code).with_node(i).with_host(node.host).with_role(node.role);
    };
    if (node.nproc < 1) return at_node(errc::bad_nproc).with_value(node.nproc);
    world += node.nproc;
    if (world > INT_MAX)
      return at_node(errc::world_size_overflow).with_value(world).with_limit(INT_MAX);
    if (!is_default_weight(node.weight)) {
      const weight_check wc = check_weight(node.weight);
      if (!wc)
        return at_node(errc::bad_weight)
            .with_weight(wc.issue)
            .with_position(wc.position)
            .with_text(node.weight);
    }
  }
  if (global_batch < 0)
    return diagnostic::of(errc::bad_global_batch)
        .with_value(global_batch)
        .with_variable("global_batch");
  if (global_batch < world)
    return diagnostic::of(errc::global_batch_too_small)
        .with_value(global_batch)
        .with_limit(world)
        .with_variable("global_batch");
  return diagnostic{};
}

template <class NodeAt>
constexpr std::int64_t weight_micros(NodeAt node_at, std::size_t i) noexcept {
  const std::string_view w = node_at(i).weight;
  return is_default_weight(w) ? weight_scale : check_weight(w).micros;
}

// Run time, for a topology known to be valid: the split in O(n) and 12 bytes a node beside the
// result. When every E * d_i and their sum fit 64 bits (any real cluster) the arithmetic is
// 64-bit, else 128-bit. The nodes that get a sample left are found by selection, not sorting.
// d_i is computed again where it is needed rather than stored: fresh memory costs more than
// the arithmetic. A run of equal weight texts is read once.
template <class WeightAt>
struct weight_reader {
  WeightAt weight_at;
  std::string_view last = "1";
  std::int64_t micros = weight_scale;
  std::int64_t operator()(std::size_t i) {
    const std::string_view w = weight_at(i);
    if (w != last) {
      last = w;
      micros = check_weight(w).micros;
    }
    return micros;
  }
};

template <class Word, class Index, class NprocAt, class WeightAt>
std::vector<node_batch> split_with(std::size_t n, NprocAt nproc_at, WeightAt weight_at,
                                   uint128 total, long long world, int global_batch) {
  std::vector<node_batch> out(n);
  std::vector<Word> rem(n);
  weight_reader<WeightAt> micros_of{weight_at};
  const auto extra = static_cast<Word>(static_cast<long long>(global_batch) - world);
  const auto divisor = static_cast<Word>(total);
  long long given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Word part = extra * (static_cast<Word>(nproc_at(i)) * static_cast<Word>(micros_of(i)));
    const Word q = part / divisor;  // <= E < 2^31
    rem[i] = part % divisor;
    out[i].batch = static_cast<int>(nproc_at(i) + static_cast<long long>(q));
    given += static_cast<long long>(q);
  }
  const auto left = static_cast<std::size_t>(static_cast<long long>(extra) - given);
  if (left > 0) {
    std::vector<Index> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<Index>(i);
    const Word* r = rem.data();
    std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(left - 1),
                     order.end(),
                     [r](Index a, Index b) { return r[a] > r[b] || (r[a] == r[b] && a < b); });
    for (std::size_t k = 0; k < left; ++k) ++out[order[k]].batch;
  }
  set_offsets(n, out.data());
  return out;
}

template <class NprocAt, class WeightAt>
std::vector<node_batch> split_valid(std::size_t n, NprocAt nproc_at, WeightAt weight_at,
                                    long long world, int global_batch) {
  uint128 total = 0, largest = 0;
  weight_reader<WeightAt> micros_of{weight_at};
  for (std::size_t i = 0; i < n; ++i) {
    const uint128 d = static_cast<uint128>(nproc_at(i)) * static_cast<uint128>(micros_of(i));
    total += d;
    if (d > largest) largest = d;
  }
  const auto extra = static_cast<uint128>(static_cast<long long>(global_batch) - world);
  const uint128 max64 = ~std::uint64_t{0};
  const bool narrow = total <= max64 && (extra == 0 || largest <= max64 / extra);
  if (n <= 0xffffffffu)
    return narrow ? split_with<std::uint64_t, std::uint32_t>(n, nproc_at, weight_at, total, world,
                                                             global_batch)
                  : split_with<uint128, std::uint32_t>(n, nproc_at, weight_at, total, world,
                                                       global_batch);
  return narrow
             ? split_with<std::uint64_t, std::size_t>(n, nproc_at, weight_at, total, world,
                                                      global_batch)
             : split_with<uint128, std::size_t>(n, nproc_at, weight_at, total, world, global_batch);
}

// Run time: every problem checked, then the split.
template <class NodeAt>
result<std::vector<node_batch>, diagnostic> split_batch(std::size_t n, NodeAt node_at,
                                                        int global_batch) {
  long long world = 0;
  if (const diagnostic d = split_problem(n, node_at, global_batch, world)) return d;
  return split_valid(
      n, [&node_at](std::size_t i) { return node_at(i).nproc; },
      [&node_at](std::size_t i) { return node_at(i).weight; }, world, global_batch);
}

}  // namespace detail

/// The work shares of a fixed topology: every node's part of a global batch, or the problem that
/// stops the split (error converts to true then, and the parts are all zero).
template <std::size_t N>
struct fixed_batch_split {
  diagnostic error{};
  std::array<node_batch, N> nodes{};
  /// Node i's part. Precondition: i < N.
  [[nodiscard]] constexpr node_batch node(std::size_t i) const noexcept {
    detail::expects(i < N, "node(i): node index out of range");
    return nodes[i];
  }
};

/// Splits each step's `global_batch` samples over the nodes of `c` by weight:
/// node i gets p_i + floor(E * p_i * w_i / D) samples, E = global_batch - world size, D the sum of
/// p_i * w_i, and the samples left go one each to the largest remainders, ties to the lower index;
/// offsets are the prefix sums. Exact (no floating point, no wrap for any valid input); usable in
/// constant expressions, O(N log N) there:
///   constexpr auto c = hetlaunch::make_cluster({{"a100", 8, "default", "3"}, {"t4", 4}});
///   constexpr auto s = hetlaunch::split_batch(c, 100);
///   static_assert(s.node(0).batch == 83 && s.node(1) == hetlaunch::node_batch{17, 83});
/// Errors: empty_cluster, bad_nproc, world_size_overflow, bad_weight, bad_global_batch (below 0),
/// global_batch_too_small (below the world size).
template <std::size_t N>
[[nodiscard]] constexpr fixed_batch_split<N> split_batch(const fixed_cluster<N>& c,
                                                         int global_batch) noexcept {
  fixed_batch_split<N> out{};
  const auto node_at = [&c](std::size_t i) { return c.node(i); };
  long long world = 0;
  out.error = detail::split_problem(N, node_at, global_batch, world);
  if (out.error) return out;
  std::array<detail::uint128, N> rem{};
  std::array<std::size_t, N> order{};
  const std::size_t left = detail::split_floors(
      N, [&node_at](std::size_t i) { return node_at(i).nproc; },
      [&node_at](std::size_t i) { return detail::weight_micros(node_at, i); }, world, global_batch,
      out.nodes.data(), rem.data());
  for (std::size_t i = 0; i < N; ++i) order[i] = i;
  if (left > 0) detail::heap_sort(order.data(), N, detail::remainder_order{rem.data()});
  for (std::size_t k = 0; k < left; ++k) ++out.nodes[order[k]].batch;
  detail::set_offsets(N, out.nodes.data());
  return out;
}

/// split_batch for a run-time topology: every node's part, in node order, or the first problem.
/// O(N) time; 32 bytes a node of scratch.
template <class Unused>
[[nodiscard]] result<std::vector<node_batch>, diagnostic> split_batch(
    const basic_cluster<Unused>& c, int global_batch) {
  return detail::split_batch(
      c.node_count(), [&c](std::size_t i) { return c.node(i); }, global_batch);
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SHARES_HPP
// ---- hetlaunch/shell.hpp
// hetlaunch: quoting arguments for POSIX sh, so that `sh -c` (and ssh's remote shell) sees
// exactly the argv.
#ifndef HETLAUNCH_SHELL_HPP
#define HETLAUNCH_SHELL_HPP



namespace hetlaunch {

namespace detail {

inline bool safe_for_shell(std::string_view arg) noexcept {
  if (arg.empty()) return false;
  for (char c : arg) {
    const bool plain = is_alpha(c) || is_digit(c) || c == '_' || c == '-' || c == '.' || c == '/' ||
                       c == ',' || c == ':' || c == '=' || c == '+' || c == '@' || c == '%';
    if (!plain) return false;
  }
  return true;
}

}  // namespace detail

/// Quotes one argument for POSIX sh: unchanged when it is made only of characters sh never
/// interprets, else in single quotes with each ' written as '\''. Empty gives ''.
/// Precondition: no NUL byte (no process argument can hold one).
[[nodiscard]] inline std::string shell_quote(std::string_view arg) {
  if (detail::safe_for_shell(arg)) return std::string(arg);
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += '\'';
  return out;
}

/// Joins an argv into one line for POSIX sh: `sh -c "$(shell_join(argv))"` runs exactly argv,
/// whatever bytes the arguments hold (quotes, $(), backticks, newlines, globs, blanks, '').
[[nodiscard]] inline std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (i) out += ' ';
    out += shell_quote(argv[i]);
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SHELL_HPP
// ---- hetlaunch/launch_options.hpp
// hetlaunch: what a launch needs besides the topology (launch_options), and which of its values
// each output refuses.
#ifndef HETLAUNCH_LAUNCH_OPTIONS_HPP
#define HETLAUNCH_LAUNCH_OPTIONS_HPP


// ---- hetlaunch/numa_binding.hpp
// hetlaunch: the CPU binding modes a launch can ask for (torchrun's --numa-binding), by name.
#ifndef HETLAUNCH_NUMA_BINDING_HPP
#define HETLAUNCH_NUMA_BINDING_HPP


namespace hetlaunch {

/// torchrun's --numa-binding modes; `none` binds nothing.
enum class numa_binding {
  none,
  node,    ///< every CPU of the GPU's NUMA node
  socket,  ///< every CPU of every NUMA node of the GPU's socket
  /// the node's physical cores split evenly among its GPUs, lower GPUs taking the extra
  exclusive,
  /// one last-level-cache group per GPU of the node, the largest groups first, cycling
  core_complex,
};

/// The mode's name as torchrun spells it ("node", "socket", "exclusive", "core-complex"; "none").
[[nodiscard]] constexpr std::string_view numa_binding_name(numa_binding mode) noexcept {
  switch (mode) {
    case numa_binding::node:
      return "node";
    case numa_binding::socket:
      return "socket";
    case numa_binding::exclusive:
      return "exclusive";
    case numa_binding::core_complex:
      return "core-complex";
    case numa_binding::none:
      break;
  }
  return "none";
}

/// The mode of that name (numa_binding_name's), or nothing.
[[nodiscard]] constexpr std::optional<numa_binding> numa_binding_from_name(
    std::string_view name) noexcept {
  for (numa_binding mode : {numa_binding::none, numa_binding::node, numa_binding::socket,
                            numa_binding::exclusive, numa_binding::core_complex})
    if (numa_binding_name(mode) == name) return mode;
  return std::nullopt;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_NUMA_BINDING_HPP

namespace hetlaunch {

/// torchrun --rdzv_backend: `static_tcp` (torchrun's `static`, the default) or `c10d`.
/// Only the static rendezvous honours --node_rank; with c10d torchrun orders the nodes by host
/// name and process id when they meet, so their ranks cannot be known in advance.
enum class rendezvous { static_tcp, c10d };

/// How torchrun's options are spelled: `--nproc_per_node` (every torch since 1.9) or
/// `--nproc-per-node` (torch 2.0 and later only).
enum class flag_style { underscore, dash };

/// The torch the nodes run. It decides the NCCL async-error variable's name
/// (NCCL_ASYNC_ERROR_HANDLING before 2.2, TORCH_NCCL_ASYNC_ERROR_HANDLING from 2.2), whether
/// dash spellings exist (2.0) and whether torchrun sets TORCHELASTIC_SIGNALS_TO_HANDLE (2.9). The
/// default is the newest torch whose rules hetlaunch knows; a newer one gets the same rules.
struct torch_version {
  int major = 2;
  int minor = 14;
  [[nodiscard]] constexpr int code() const noexcept { return major * 100 + minor; }
};

/// The newest torch whose rules hetlaunch knows (and the default of launch_options::torch).
inline constexpr torch_version newest_known_torch{2, 14};

/// What torchrun needs besides the topology.
struct launch_options {
  /// static: --master_addr (every node connects here; node 0 hosts the store). c10d: the host of
  /// --rdzv_endpoint. Empty means node 0's host. IPv6 literals may be given with or without
  /// brackets.
  std::string master_addr;
  int master_port = 29500;
  rendezvous backend = rendezvous::static_tcp;
  /// --rdzv_id; workers see it as TORCHELASTIC_RUN_ID. c10d needs a real one ("none" is refused).
  std::string rdzv_id = "none";
  int max_restarts = 0;
  /// The launcher: {"torchrun"}, or {"python3", "-m", "torch.distributed.run"}.
  std::vector<std::string> program = {"torchrun"};
  /// Extra torchrun options, placed after hetlaunch's and before the script.
  std::vector<std::string> torchrun_args;
  bool module = false;  ///< -m: `script` names a Python module
  std::string script;   ///< the training script (or module)
  std::vector<std::string> script_args;
  flag_style flags = flag_style::underscore;
  // Additions beyond torchrun's own flags:
  torch_version torch{};
  /// Static rendezvous timeout in seconds (--rdzv_conf=timeout=N): how long the agents wait for a
  /// node that never comes. 0 keeps torchrun's default (900 s).
  int rendezvous_timeout = 0;
  /// Direct spawn: the Python interpreter (torchrun uses its own sys.executable).
  std::string python = "python3";
  /// How the topology is validated before a command or environment is built; for example
  /// `validation.allow_duplicate_hosts = true` to run several agents on one host.
  validate_options validation{};
  /// The samples of one optimizer step over the whole job, split over the nodes by weight
  /// (shares.hpp), or 0 for no work shares. When above 0 it must be at least the world size, and
  /// every worker gets HETLAUNCH_GLOBAL_BATCH, HETLAUNCH_NODE_BATCH and
  /// HETLAUNCH_NODE_BATCH_OFFSET (see worker_env).
  int global_batch = 0;
  /// N above 0: every worker gets HETLAUNCH_CALIBRATE_STEPS=N, and its sampler measures N steps,
  /// reports the ranks' rates and stops (`hetlaunch calibrate`). 0: never set, and an inherited
  /// one is removed.
  int calibrate_steps = 0;
  /// M above 0: every worker gets HETLAUNCH_PROGRESS_SECONDS (M / 1000 seconds), and each rank
  /// reports its progress that often (hetlaunch_shares; rank_health.hpp judges it): `hetlaunch
  /// run --hang-timeout` sets it. 0: never set, and an inherited one is removed.
  int progress_milliseconds = 0;
  /// true: every worker gets HETLAUNCH_ON_SLOW=rebalance, and a sampler that does not rebalance
  /// by itself rebalances every window (`hetlaunch run --on-slow rebalance`). false: never set,
  /// and an inherited one is removed.
  bool rebalance_slow_ranks = false;
  /// What preflight found of the job's GPUs (`hetlaunch run --preflight`): every worker gets
  /// HETLAUNCH_MIN_COMPUTE_CAPABILITY (this text, "7.5") and HETLAUNCH_BF16 ("1" or "0"). Empty:
  /// never set (no preflight, or hosts without GPUs), and inherited ones are removed.
  std::string min_compute_capability = {};
  bool bf16 = false;
  /// Each worker runs on the CPUs this mode gives its GPU (torchrun's --numa-binding modes, on
  /// every torch): torchrun starts it with --no-python through `bind_program bind --numa-binding
  /// MODE -- python -u SCRIPT ...`, which sets its CPUs and executes the real command.
  numa_binding binding = numa_binding::none;
  /// The hetlaunch the nodes run for the binding.
  std::string bind_program = "hetlaunch";
};

/// Environment variables as (name, value) pairs, in a documented, stable order.
using environment = std::vector<std::pair<std::string, std::string>>;

namespace detail {

// "[::1]" -> "::1"; every other address unchanged.
inline std::string_view unbracketed(std::string_view addr) noexcept {
  if (addr.size() >= 2 && addr.front() == '[' && addr.back() == ']')
    return addr.substr(1, addr.size() - 2);
  return addr;
}

template <class Topology>
std::string_view master_host(const Topology& c, const launch_options& o) noexcept {
  if (!o.master_addr.empty()) return unbracketed(o.master_addr);
  return c.node_count() ? c.node(0).host : std::string_view();
}

// Whether extra argument `arg` ("--name" or "--name=value", '-' or '_' between words) names
// torchrun's option `option` (underscore spelling): in full, or abbreviated to at least
// `shortest` characters, as argparse accepts a unique prefix.
inline bool names_option(std::string_view arg, std::string_view option,
                         std::size_t shortest) noexcept {
  if (arg.size() < 3 || arg[0] != '-' || arg[1] != '-') return false;
  std::string_view name = arg.substr(2);
  name = name.substr(0, name.find('='));
  if (name.empty() || name.size() < shortest || name.size() > option.size()) return false;
  for (std::size_t k = 0; k < name.size(); ++k)
    if ((name[k] == '-' ? '_' : name[k]) != option[k]) return false;
  return true;
}

// torchrun's options that hetlaunch computes; an extra argument naming one (in either spelling,
// or abbreviated, which argparse accepts) would silently replace the computed value.
inline bool overrides_computed_flag(std::string_view arg) noexcept {
  static constexpr const char* computed[] = {
      "nnodes",        "node_rank", "nproc_per_node", "master_addr",  "master_port", "rdzv_backend",
      "rdzv_endpoint", "rdzv_id",   "rdzv_conf",      "max_restarts", "role",        "standalone"};
  for (const char* full : computed)
    if (names_option(arg, full, 1)) return true;
  return false;
}

// The value of one of torchrun's own options among the extra arguments: "--name=v" or "--name v",
// in either spelling; the last one wins, as for argparse. Abbreviations are not recognised.
inline std::optional<std::string> torchrun_arg_value(const launch_options& o,
                                                     std::string_view name) {
  std::optional<std::string> value;
  for (std::size_t i = 0; i < o.torchrun_args.size(); ++i) {
    const std::string_view arg = o.torchrun_args[i];
    if (!names_option(arg, name, name.size())) continue;
    const std::size_t eq = arg.find('=');
    if (eq != std::string_view::npos)
      value = std::string(arg.substr(eq + 1));
    else if (i + 1 < o.torchrun_args.size())
      value = o.torchrun_args[++i];
  }
  return value;
}

// torch 2.14's --virtual-local-rank (or an abbreviation argparse would accept).
inline bool is_virtual_local_rank(std::string_view arg) noexcept {
  return names_option(arg, "virtual_local_rank", 3);
}

// torchrun's --no-python (or an abbreviation argparse would accept): the script is a program.
inline bool is_no_python(std::string_view arg) noexcept {
  return names_option(arg, "no_python", 4);
}

// Extra torchrun arguments that change how a worker is started, which a binding replaces.
inline void binding_problems(const launch_options& o, std::vector<diagnostic>& out) {
  if (o.binding == numa_binding::none) return;
  for (const std::string& arg : o.torchrun_args)
    if (names_option(arg, "run_path", 4) || names_option(arg, "numa_binding", 4)) {
      out.push_back(diagnostic::of(errc::binding_entrypoint).with_text(arg));
    }
}

// Extra torchrun arguments that change the workers' environment in a way the plan does not
// describe: every output that the workers' variables depend on refuses them.
inline void unpredictable_torchrun_args(const launch_options& o, std::vector<diagnostic>& out) {
  for (const std::string& arg : o.torchrun_args)
    if (is_virtual_local_rank(arg)) {
      out.push_back(diagnostic::of(errc::virtual_local_rank).with_text(arg));
    }
}

// A negative global batch, or one below the world size (when the topology has one: a topology
// whose counts are invalid has its own problems).
// The global batch against `world` workers (-1: a topology too broken to count them).
inline void global_batch_problems(const launch_options& o, long long world,
                                  std::vector<diagnostic>& out) {
  if (o.global_batch == 0) return;
  if (o.global_batch < 0) {
    out.push_back(diagnostic::of(errc::bad_global_batch)
                      .with_value(o.global_batch)
                      .with_variable("global_batch"));
    return;
  }
  if (world < 0 || o.global_batch >= world) return;
  out.push_back(diagnostic::of(errc::global_batch_too_small)
                    .with_value(o.global_batch)
                    .with_variable("global_batch")
                    .with_limit(world));
}

template <class Topology>
void batch_problems(const Topology& c, const launch_options& o, std::vector<diagnostic>& out) {
  if (o.global_batch == 0) return;
  long long world = 0;
  for (std::size_t i = 0; i < c.node_count() && world >= 0; ++i) {
    world = c.node(i).nproc < 1 ? -1 : world + c.node(i).nproc;
    if (world > INT_MAX) world = -1;
  }
  global_batch_problems(o, world, out);
}

// Problems of the options that every output depends on: the rendezvous address and port, the
// run id with c10d, the restart limit. The topology gives the master address when none is set.
// `addr` is checked only when `check_addr`.
inline void environment_problems_at(const launch_options& o, std::string_view addr, bool check_addr,
                                    std::vector<diagnostic>& out) {
  if (o.master_port < 1 || o.master_port > 65535) {
    out.push_back(
        diagnostic::of(errc::bad_port).with_value(o.master_port).with_variable("master_port"));
  }
  if (check_addr && check_host(addr, /*allow_underscore=*/true).issue != host_issue::none) {
    out.push_back(
        diagnostic::of(errc::bad_master_addr).with_variable("master_addr").with_text(addr));
  }
  if (o.backend == rendezvous::c10d && (o.rdzv_id.empty() || o.rdzv_id == "none"))
    out.push_back(diagnostic::of(errc::missing_rdzv_id));
  if (o.max_restarts < 0) {
    out.push_back(diagnostic::of(errc::bad_max_restarts).with_value(o.max_restarts));
  }
}
template <class Topology>
void environment_problems(const Topology& c, const launch_options& o,
                          std::vector<diagnostic>& out) {
  environment_problems_at(o, master_host(c, o), c.node_count() != 0, out);
}

// Problems of what only a command line carries. `torchrun` false: accelerate's command, which
// has its own program and no torchrun options.
inline void command_problems(const launch_options& o, bool torchrun, std::vector<diagnostic>& out) {
  if (torchrun && (o.program.empty() || o.program.front().empty()))
    out.push_back(diagnostic::of(errc::empty_program));
  if (torchrun && o.rendezvous_timeout < 0) {
    out.push_back(diagnostic::of(errc::bad_rendezvous_timeout).with_value(o.rendezvous_timeout));
  }
  if (torchrun && o.flags == flag_style::dash && o.torch.code() < 200) {
    out.push_back(diagnostic::of(errc::dash_flags_need_torch_2).with_value(o.torch.code()));
  }
  if (torchrun)
    for (const std::string& arg : o.torchrun_args)
      if (overrides_computed_flag(arg)) {
        out.push_back(diagnostic::of(errc::overriding_torchrun_arg).with_text(arg));
      }
  if (torchrun) unpredictable_torchrun_args(o, out);
  if (torchrun) binding_problems(o, out);
  if (!o.script.empty() && o.script[0] == '-') {
    out.push_back(diagnostic::of(errc::script_looks_like_option).with_text(o.script));
  }
}

// Every problem of the options as a plan holds them (a plan without a script is valid).
template <class Topology>
std::vector<diagnostic> option_problems(const Topology& c, const launch_options& o) {
  std::vector<diagnostic> out;
  environment_problems(c, o, out);
  batch_problems(c, o, out);
  command_problems(o, true, out);
  return out;
}

}  // namespace detail

/// The launch options' problems before the nodes are known, as a batch script's are: those of
/// validate_plan that do not depend on the hosts, with `world_size` workers for the global batch
/// (port, master_addr when it is set, rdzv_id with c10d, max_restarts, global_batch, program,
/// rendezvous_timeout, flag style, extra torchrun arguments that name a computed option, the
/// binding, a script that starts with '-').
[[nodiscard]] inline std::vector<diagnostic> launch_option_problems(const launch_options& options,
                                                                    int world_size) {
  std::vector<diagnostic> out;
  detail::environment_problems_at(options, options.master_addr, !options.master_addr.empty(), out);
  detail::global_batch_problems(options, world_size, out);
  detail::command_problems(options, true, out);
  return out;
}

// validate_launch(c, node, options) is in plan.hpp, beside the plan whose outputs it describes.

}  // namespace hetlaunch

#endif  // HETLAUNCH_LAUNCH_OPTIONS_HPP
// ---- hetlaunch/worker_env.hpp
// hetlaunch: every worker's environment as torchrun's agent gives it with the static rendezvous,
// and what torchrun's own environment on a node needs.
#ifndef HETLAUNCH_WORKER_ENV_HPP
#define HETLAUNCH_WORKER_ENV_HPP



namespace hetlaunch {

namespace detail {

enum class spawn_mode { torchrun, direct };

// Only a run-time cluster carries device lists.
inline const std::vector<int>* node_devices(const cluster& c, std::size_t node) {
  return c.devices(node).empty() ? nullptr : &c.devices(node);
}
template <std::size_t N>
const std::vector<int>* node_devices(const fixed_cluster<N>&, std::size_t) {
  return nullptr;
}

// The value of `name` in the agent's environment (the later of two equal names wins), if given.
inline const std::string* agent_value(const environment* agent, std::string_view name) {
  const std::string* found = nullptr;
  if (agent)
    for (const auto& v : *agent)
      if (v.first == name) found = &v.second;
  return found;
}

inline constexpr std::string_view default_signals_to_handle = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";

// `agent`: torchrun's own environment, or nullptr for one that sets none of the variables torchrun
// passes on (TORCH_NCCL_ASYNC_ERROR_HANDLING, OMP_NUM_THREADS, PET_SIGNALS_TO_HANDLE).
// The variables of a node's work share, which torchrun passes on from its own environment; none
// without a global batch.
// The node's ceiling follows them, when it has one (with or without a global batch).
inline void append_batch_env(environment& env, const launch_options& o, const node_batch* share,
                             int max_batch, std::string_view host) {
  if (o.global_batch > 0 && share != nullptr) {
    env.emplace_back(variables::global_batch, std::to_string(o.global_batch));
    env.emplace_back(variables::node_batch, std::to_string(share->batch));
    env.emplace_back(variables::node_batch_offset, std::to_string(share->offset));
    env.emplace_back(variables::node_host, std::string(host));
  }
  if (max_batch > 0) env.emplace_back(variables::max_batch, std::to_string(max_batch));
  if (o.calibrate_steps > 0)
    env.emplace_back(variables::calibrate_steps, std::to_string(o.calibrate_steps));
  if (o.progress_milliseconds > 0) {
    // Seconds with at most three decimals, no trailing zeros: 250 -> "0.25", 1000 -> "1".
    std::string text = std::to_string(o.progress_milliseconds / 1000);
    int fraction = o.progress_milliseconds % 1000;
    if (fraction) {
      std::string digits = std::to_string(1000 + fraction).substr(1);
      while (digits.back() == '0') digits.pop_back();
      text += "." + digits;
    }
    env.emplace_back(variables::progress_seconds, std::move(text));
  }
  if (o.rebalance_slow_ranks) env.emplace_back(variables::on_slow, "rebalance");
  if (!o.min_compute_capability.empty()) {
    env.emplace_back(variables::min_compute_capability, o.min_compute_capability);
    env.emplace_back(variables::bf16, o.bf16 ? "1" : "0");
  }
}
// Node i's ceiling: a fixed topology has none.
inline int node_max_batch(const cluster& c, std::size_t i) { return c.max_batch(i); }
template <std::size_t N>
int node_max_batch(const fixed_cluster<N>&, std::size_t) {
  return 0;
}

// Node `node`'s work share, computed for this one call (O(N)); the plan keeps every node's.
// Precondition: the topology and global batch are valid.
template <class Topology>
node_batch one_node_batch(const Topology& c, std::size_t node, const launch_options& o) {
  if (o.global_batch <= 0) return {};
  return split_batch(c, o.global_batch).value()[node];
}
template <std::size_t N>
node_batch one_node_batch(const fixed_cluster<N>& c, std::size_t node, const launch_options& o) {
  if (o.global_batch <= 0) return {};
  return split_batch(cluster(c), o.global_batch).value()[node];
}

// `share`: the node's work share (used when the options have a global batch).
template <class Topology>
environment build_worker_env(const Topology& c, std::size_t node, int local_rank,
                             const launch_options& o, int restart_count, spawn_mode mode,
                             const environment* agent = nullptr,
                             const node_batch* share = nullptr) {
  const node_spec spec = c.node(node);
  environment env;
  const auto set = [&env](const char* name, std::string value) {
    env.emplace_back(name, std::move(value));
  };
  set("LOCAL_RANK", std::to_string(local_rank));
  set("RANK", std::to_string(c.global_rank(node, local_rank)));
  set("GROUP_RANK", std::to_string(node));
  set("ROLE_RANK", std::to_string(c.role_rank(node, local_rank)));
  set("ROLE_NAME", std::string(spec.role));
  set("LOCAL_WORLD_SIZE", std::to_string(spec.nproc));
  set("WORLD_SIZE", std::to_string(c.world_size()));
  set("GROUP_WORLD_SIZE", std::to_string(c.node_count()));
  set("ROLE_WORLD_SIZE", std::to_string(c.role_world_size(node)));
  set("MASTER_ADDR", std::string(master_host(c, o)));
  set("MASTER_PORT", std::to_string(o.master_port));
  if (mode == spawn_mode::torchrun) {
    set("TORCHELASTIC_RESTART_COUNT", std::to_string(restart_count));
    set("TORCHELASTIC_MAX_RESTARTS", std::to_string(o.max_restarts));
    set("TORCHELASTIC_RUN_ID", o.rdzv_id);
    set("TORCHELASTIC_USE_AGENT_STORE", "True");
  } else {
    // No agent hosts a store: worker RANK 0 must host it. "True" would make every rank a client.
    set("TORCHELASTIC_USE_AGENT_STORE", "False");
  }
  // The agent passes its own value on, with "1" as the default.
  const char* nccl =
      o.torch.code() >= 202 ? "TORCH_NCCL_ASYNC_ERROR_HANDLING" : "NCCL_ASYNC_ERROR_HANDLING";
  const std::string* agent_nccl = agent_value(agent, nccl);
  set(nccl, agent_nccl ? *agent_nccl : std::string("1"));
  // torchrun sets OMP_NUM_THREADS=1 in its own environment for more than one worker, unless it is
  // set already; workers get the agent's value.
  if (const std::string* omp = agent_value(agent, "OMP_NUM_THREADS"))
    set("OMP_NUM_THREADS", *omp);
  else if (spec.nproc > 1)
    set("OMP_NUM_THREADS", "1");
  // torch 2.9 (pytorch/pytorch#160690): the launcher sets --signals-to-handle in its own
  // environment (default from PET_SIGNALS_TO_HANDLE), and every worker inherits it.
  if (mode == spawn_mode::torchrun && o.torch.code() >= 209) {
    std::optional<std::string> signals = torchrun_arg_value(o, "signals_to_handle");
    if (!signals)
      if (const std::string* pet = agent_value(agent, "PET_SIGNALS_TO_HANDLE")) signals = *pet;
    set("TORCHELASTIC_SIGNALS_TO_HANDLE",
        signals ? *signals : std::string(default_signals_to_handle));
  }
  if (const std::vector<int>* ids = node_devices(c, node))
    set("CUDA_VISIBLE_DEVICES", join_ids(*ids));
  append_batch_env(env, o, share, node_max_batch(c, node), spec.host);
  return env;
}

}  // namespace detail

/// What a launcher does to a node's environment (launch_plan::try_node_variables): the variables
/// to set, in order, and the names to remove from what the node inherits (names of
/// hetlaunch::variables, which live for the whole program).
struct node_variables {
  environment set;
  std::vector<std::string_view> unset;
};

/// A variable torchrun gives a worker whose value it decides only when it starts the worker.
struct runtime_variable {
  std::string name;
  /// The value's shape, as a shell pattern (fnmatch): `*` stands for what cannot be known ahead.
  std::string pattern;
  std::string meaning;
};

/// The variables torchrun sets in worker `local_rank`'s environment besides worker_env's, whose
/// values are decided when the worker starts: TORCHELASTIC_ERROR_FILE, where the worker's error
/// handler writes its error, under the agent's log directory (a fresh temporary directory unless
/// --log-dir is given): `*/attempt_<restart_count>/<local_rank>/error.json`, or empty with
/// `--log-dir /dev/null` (torch 2.x).
[[nodiscard]] inline std::vector<runtime_variable> worker_runtime_variables(
    int local_rank, const launch_options& options, int restart_count = 0) {
  const std::optional<std::string> log_dir = detail::torchrun_arg_value(options, "log_dir");
  std::string pattern =
      log_dir && *log_dir == "/dev/null" && options.torch.code() >= 200
          ? std::string()
          : detail::concat("*/attempt_", restart_count, "/", local_rank, "/error.json");
  return {
      {"TORCHELASTIC_ERROR_FILE", std::move(pattern),
       "the file the worker's error handler (torch.distributed.elastic.multiprocessing.errors.record) writes"}};
}

/// What torchrun's own environment on `node` needs beyond the usual: CUDA_VISIBLE_DEVICES when the
/// node carries a device list (torchrun passes it on to every worker). Empty otherwise.
/// Precondition: node < c.node_count() (launch_plan::try_agent_env checks it instead).
[[nodiscard]] inline environment agent_env(const cluster& c, std::size_t node) {
  detail::expects(node < c.node_count(), "agent_env(c, node): node index out of range");
  environment env;
  if (const std::vector<int>* ids = detail::node_devices(c, node))
    env.emplace_back("CUDA_VISIBLE_DEVICES", detail::join_ids(*ids));
  return env;
}
// worker_env, worker_env_from_agent and try_agent_env(c, node, options) are in plan.hpp: each
// makes a plan and asks it.

}  // namespace hetlaunch

#endif  // HETLAUNCH_WORKER_ENV_HPP
// ---- hetlaunch/torchrun_argv.hpp
// hetlaunch: every node's torchrun command line, with the static or the c10d rendezvous.
#ifndef HETLAUNCH_TORCHRUN_ARGV_HPP
#define HETLAUNCH_TORCHRUN_ARGV_HPP



namespace hetlaunch {

namespace detail {

inline std::string flag(const launch_options& o, std::string_view name) {
  std::string out = "--";
  for (char c : name) out += (o.flags == flag_style::dash && c == '_') ? '-' : c;
  return out;
}
inline std::string flag(const launch_options& o, std::string_view name, std::string_view value) {
  std::string out = flag(o, name);
  out += '=';
  out.append(value.data(), value.size());
  return out;
}

// With `node_rank_at`, a static launch's --node_rank is left out and *node_rank_at says where it
// goes: a JobSet pod puts its own there.
template <class Topology>
std::vector<std::string> build_torchrun_argv(const Topology& c, std::size_t node,
                                             const launch_options& o,
                                             std::size_t* node_rank_at = nullptr) {
  std::vector<std::string> argv = o.program;
  const node_spec spec = c.node(node);
  argv.push_back(flag(o, "nnodes", std::to_string(c.node_count())));
  if (node_rank_at)
    *node_rank_at = argv.size();
  else if (o.backend == rendezvous::static_tcp)
    argv.push_back(flag(o, "node_rank", std::to_string(node)));
  argv.push_back(flag(o, "nproc_per_node", std::to_string(spec.nproc)));
  if (spec.role != "default") argv.push_back(flag(o, "role", spec.role));
  argv.push_back(flag(o, "max_restarts", std::to_string(o.max_restarts)));
  const std::string_view host = master_host(c, o);
  if (o.backend == rendezvous::static_tcp) {
    argv.push_back(flag(o, "master_addr", host));
    argv.push_back(flag(o, "master_port", std::to_string(o.master_port)));
    if (o.rendezvous_timeout > 0)
      argv.push_back(flag(o, "rdzv_conf", concat("timeout=", o.rendezvous_timeout)));
  } else {
    argv.push_back(flag(o, "rdzv_backend", "c10d"));
    argv.push_back(flag(o, "rdzv_endpoint",
                        is_ipv6_literal(host) ? concat("[", host, "]:", o.master_port)
                                              : concat(host, ":", o.master_port)));
    if (o.rendezvous_timeout > 0)
      argv.push_back(flag(o, "rdzv_conf", concat("join_timeout=", o.rendezvous_timeout)));
  }
  if (o.rdzv_id != "none" || o.backend == rendezvous::c10d)
    argv.push_back(flag(o, "rdzv_id", o.rdzv_id));
  bool no_python = false;
  for (const std::string& arg : o.torchrun_args) no_python = no_python || is_no_python(arg);
  if (o.binding != numa_binding::none && !no_python) argv.push_back(flag(o, "no_python"));
  argv.insert(argv.end(), o.torchrun_args.begin(), o.torchrun_args.end());
  if (o.binding != numa_binding::none) {
    // torchrun runs the binder as the worker; it executes the command torchrun would have run.
    argv.insert(argv.end(), {o.bind_program, "bind", "--numa-binding",
                             std::string(numa_binding_name(o.binding)), "--"});
    if (!no_python) argv.insert(argv.end(), {o.python, "-u"});
  }
  if (o.module) argv.push_back("-m");
  argv.push_back(o.script);
  argv.insert(argv.end(), o.script_args.begin(), o.script_args.end());
  return argv;
}

}  // namespace detail

// The public torchrun_argv and try_torchrun_argv are in plan.hpp: each makes a plan and asks it.

}  // namespace hetlaunch

#endif  // HETLAUNCH_TORCHRUN_ARGV_HPP
// ---- hetlaunch/spawn.hpp
// hetlaunch: starting workers without torchrun: their environment, their command and an envp block.
#ifndef HETLAUNCH_SPAWN_HPP
#define HETLAUNCH_SPAWN_HPP



namespace hetlaunch {

// direct_worker_env is in plan.hpp: it makes a plan and asks it.

/// Replaces the local rank in one script argument as torchrun does (Python's
/// string.Template.safe_substitute with local_rank): "${local_rank}" and "$local_rank" become the
/// number, "$$" becomes "$", anything else stays as it is.
[[nodiscard]] inline std::string substitute_local_rank(std::string_view arg, int local_rank) {
  std::string out;
  const std::string value = std::to_string(local_rank);
  const auto ident_char = [](char c, bool first) {
    return detail::is_alpha(c) || c == '_' || (!first && detail::is_digit(c));
  };
  std::size_t i = 0;
  while (i < arg.size()) {
    if (arg[i] != '$' || i + 1 == arg.size()) {
      out += arg[i++];
      continue;
    }
    const char next = arg[i + 1];
    if (next == '$') {
      out += '$';
      i += 2;
    } else if (next == '{') {
      std::size_t end = i + 2;
      while (end < arg.size() && ident_char(arg[end], end == i + 2)) ++end;
      if (end < arg.size() && arg[end] == '}' && arg.substr(i + 2, end - i - 2) == "local_rank") {
        out += value;
        i = end + 1;
      } else {
        out += arg[i++];
      }
    } else if (ident_char(next, true)) {
      std::size_t end = i + 1;
      while (end < arg.size() && ident_char(arg[end], end == i + 1)) ++end;
      if (arg.substr(i + 1, end - i - 1) == "local_rank")
        out += value;
      else
        out.append(arg.data() + i, end - i);
      i = end;
    } else {
      out += arg[i++];
    }
  }
  return out;
}

/// The command torchrun's agent runs for a worker, for launchers that start workers themselves:
/// {python, "-u", ("-m",) script, script_args with the local rank substituted}; with a
/// numa_binding, behind {bind_program, "bind", "--numa-binding", MODE, "--"}.
[[nodiscard]] inline std::vector<std::string> worker_argv(int local_rank,
                                                          const launch_options& options) {
  std::vector<std::string> argv;
  if (options.binding != numa_binding::none)
    argv = {options.bind_program, "bind", "--numa-binding",
            std::string(numa_binding_name(options.binding)), "--"};
  argv.insert(argv.end(), {options.python, "-u"});
  if (options.module) argv.push_back("-m");
  argv.push_back(options.script);
  for (const std::string& a : options.script_args)
    argv.push_back(substitute_local_rank(a, local_rank));
  return argv;
}

/// An environment block for execve / posix_spawn: `vars` over a base environment (usually
/// `environ`). A base entry is dropped when `vars` sets the same name, and so are the base's
/// TORCHELASTIC_* and TORCH_ELASTIC_WORKER_IDENTICAL, which describe some other launch, and
/// every variable the launch owns (variables::owned) that `vars` does not set: the rule of
/// launch_plan::try_node_variables.
/// envp() stays valid while this object lives and is not modified.
class spawn_environment {
  std::vector<std::string> entries_;
  std::vector<char*> pointers_;

 public:
  spawn_environment(const environment& vars, const char* const* base) {
    const auto overridden = [&vars](std::string_view name) {
      // An inherited owned variable would give the worker a share, a ceiling, an attempt or a
      // calibration the plan does not have.
      if (name.substr(0, 13) == "TORCHELASTIC_" || name == variables::worker_identical ||
          is_owned_variable(name))
        return true;
      for (const auto& v : vars)
        if (v.first == name) return true;
      return false;
    };
    for (const char* const* e = base; e && *e; ++e) {
      const std::string_view entry(*e);
      const std::size_t eq = entry.find('=');
      if (eq == std::string_view::npos || !overridden(entry.substr(0, eq)))
        entries_.emplace_back(entry);
    }
    for (const auto& v : vars) entries_.push_back(detail::concat(v.first, "=", v.second));
    for (std::string& s : entries_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  spawn_environment(const spawn_environment&) = delete;
  spawn_environment& operator=(const spawn_environment&) = delete;

  /// The null-terminated array of "NAME=value" strings.
  [[nodiscard]] char* const* envp() const noexcept { return pointers_.data(); }
  [[nodiscard]] const std::vector<std::string>& entries() const noexcept { return entries_; }
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_SPAWN_HPP
// ---- hetlaunch/worker_check.hpp
// hetlaunch: checking the environment a worker actually got against the plan.
#ifndef HETLAUNCH_WORKER_CHECK_HPP
#define HETLAUNCH_WORKER_CHECK_HPP



namespace hetlaunch {

namespace detail {

// Whether the nodes run different numbers of workers, which TORCH_ELASTIC_WORKER_IDENTICAL=1
// would make torchrun ignore.
inline bool nodes_differ(const cluster& c) noexcept {
  for (std::size_t i = 1; i < c.node_count(); ++i)
    if (c.nproc(i) != c.nproc(0)) return true;
  return false;
}

// Reads variable `name` of a worker's environment as an integer (with a leading '-' only when
// `may_be_negative`). When it is not set (env_missing) or not such an integer (env_not_a_number),
// reports why to `out` and returns false.
template <class Getenv>
bool read_env_integer(Getenv&& get, const char* name, bool may_be_negative, long long& value,
                      std::vector<diagnostic>& out) {
  const char* text = get(name);
  if (text == nullptr) {
    out.push_back(diagnostic::of(errc::env_missing).with_variable(name));
    return false;
  }
  const std::string_view s(text);
  if (!(may_be_negative ? parse_signed(s, LLONG_MAX, value) : parse_decimal(s, LLONG_MAX, value))) {
    out.push_back(diagnostic::of(errc::env_not_a_number).with_variable(name).with_text(s));
    return false;
  }
  return true;
}

template <class Getenv>
std::vector<diagnostic> compare_worker_env(const cluster& c, Getenv&& get) {
  std::vector<diagnostic> out;
  // A negative rank is read as a number, and then reported as out of range.
  const auto read = [&](const char* name, long long& value) {
    return read_env_integer(get, name, /*may_be_negative=*/true, value, out);
  };
  long long world = 0, group = 0, local_world = 0, rank = 0, local = 0;
  const bool have_world = read("WORLD_SIZE", world);
  const bool have_group = read("GROUP_RANK", group);
  const bool have_local_world = read("LOCAL_WORLD_SIZE", local_world);
  const bool have_rank = read("RANK", rank);
  const bool have_local = read("LOCAL_RANK", local);
  const long long planned_world = c.node_count() ? c.world_size() : 0;
  if (have_world && world != planned_world) {
    out.push_back(diagnostic::of(errc::world_size_mismatch)
                      .with_variable("WORLD_SIZE")
                      .with_value(world)
                      .with_limit(planned_world));
  }
  const char* identical = get(variables::worker_identical.data());
  if (nodes_differ(c) && identical && std::string_view(identical) == "1") {
    out.push_back(diagnostic::of(errc::identical_workers_on_heterogeneous)
                      .with_variable(variables::worker_identical));
  }
  if (!have_group) return out;
  if (group < 0 || static_cast<unsigned long long>(group) >= c.node_count()) {
    out.push_back(diagnostic::of(errc::group_rank_out_of_range)
                      .with_variable("GROUP_RANK")
                      .with_value(group)
                      .with_limit(static_cast<long long>(c.node_count())));
    return out;
  }
  const auto node = static_cast<std::size_t>(group);
  const node_spec spec = c.node(node);
  // A problem of this node's worker.
  const auto here = [&](errc code, const char* variable, long long value, long long limit) {
    return diagnostic::of(code)
        .with_node(node)
        .with_host(spec.host)
        .with_role(spec.role)
        .with_variable(variable)
        .with_value(value)
        .with_limit(limit);
  };
  if (have_local_world && local_world != spec.nproc)
    out.push_back(
        here(errc::local_world_size_mismatch, "LOCAL_WORLD_SIZE", local_world, spec.nproc));
  if (have_local && (local < 0 || local >= spec.nproc)) {
    out.push_back(here(errc::local_rank_out_of_range, "LOCAL_RANK", local, spec.nproc));
  } else if (have_local && have_rank && rank != c.global_rank(node, static_cast<int>(local))) {
    out.push_back(
        here(errc::rank_mismatch, "RANK", rank, c.global_rank(node, static_cast<int>(local)))
            .with_local_rank(static_cast<int>(local)));
  }
  return out;
}

}  // namespace detail

/// Compares the variables a worker actually got with the plan (static rendezvous), and returns
/// every disagreement: WORLD_SIZE, GROUP_RANK outside the plan, LOCAL_WORLD_SIZE not the node's
/// nproc (a node started with the wrong --nproc_per_node), LOCAL_RANK outside the node, RANK not
/// the planned global rank, missing or non-numeric variables, and TORCH_ELASTIC_WORKER_IDENTICAL=1
/// on a layout whose nodes differ. `get(name)` returns the value or nullptr, as std::getenv does:
///   for (const auto& d : hetlaunch::check_worker_env(plan, std::getenv)) std::cerr << d.message();
/// The diagnostics own copies of the values they quote.
template <class Getenv>
[[nodiscard]] std::vector<diagnostic> check_worker_env(const cluster& c, Getenv&& get) {
  return detail::compare_worker_env(c, std::forward<Getenv>(get));
}
namespace detail {
// An environment list read as std::getenv reads the process's: the later of two equal names wins.
struct environment_lookup {
  const environment& env;
  const char* operator()(const char* name) const {
    const char* found = nullptr;
    for (const auto& v : env)
      if (v.first == name) found = v.second.c_str();
    return found;
  }
};
}  // namespace detail

/// check_worker_env over an environment list (the later of two equal names wins).
[[nodiscard]] inline std::vector<diagnostic> check_worker_env(const cluster& c,
                                                              const environment& env) {
  return detail::compare_worker_env(c, detail::environment_lookup{env});
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_WORKER_CHECK_HPP
// ---- hetlaunch/accelerate.hpp
// hetlaunch: the `accelerate launch` command of each machine of a heterogeneous job.
#ifndef HETLAUNCH_ACCELERATE_HPP
#define HETLAUNCH_ACCELERATE_HPP



namespace hetlaunch {

namespace detail {
// The texts of accelerate's problems; the codes it shares with the core keep the core's.
inline std::string accelerate_message(const diagnostic& d) {
  switch (d.code) {
    case errc::too_few_processes:
      return concat("accelerate launch --multi_gpu needs at least 2 processes; this job has ",
                    d.value);
    case errc::binding_not_carried:
      return "accelerate's command cannot carry --numa-binding (accelerate starts the workers itself); leave it out, "
             "or use accelerate's own --enable_cpu_affinity";
    default:
      return core_message(d);
  }
}

inline diagnostic accelerate_problem(errc code) {
  return diagnostic::of(code).with_describe(&accelerate_message);
}

// Machine `node`'s command from options already checked: only the machine's own process count
// can still refuse, so this costs the command's size.
inline result<std::vector<std::string>, diagnostic> build_accelerate_argv(const cluster& c,
                                                                          std::size_t node,
                                                                          const launch_options& o) {
  if (o.binding != numa_binding::none) return accelerate_problem(errc::binding_not_carried);
  const long long total =
      static_cast<long long>(c.nproc(node)) * static_cast<long long>(c.node_count());
  if (total < 2) {
    return accelerate_problem(errc::too_few_processes).with_value(total);
  }
  std::vector<std::string> argv = {"accelerate",
                                   "launch",
                                   "--multi_gpu",
                                   "--num_machines",
                                   std::to_string(c.node_count()),
                                   "--machine_rank",
                                   std::to_string(node),
                                   "--num_processes",
                                   std::to_string(total),
                                   "--main_process_ip",
                                   std::string(master_host(c, o)),
                                   "--main_process_port",
                                   std::to_string(o.master_port),
                                   "--rdzv_backend",
                                   "static",
                                   "--max_restarts",
                                   std::to_string(o.max_restarts)};
  if (o.module) argv.push_back("-m");
  argv.push_back(o.script);
  argv.insert(argv.end(), o.script_args.begin(), o.script_args.end());
  return argv;
}
}  // namespace detail

// accelerate_argv is in plan.hpp: it makes a plan and asks it (launch_plan::try_accelerate_argv).

}  // namespace hetlaunch

#endif  // HETLAUNCH_ACCELERATE_HPP
// ---- hetlaunch/plan.hpp
// hetlaunch: launch_plan, a topology and launch options validated once, whose every output then
// costs only its own size.
#ifndef HETLAUNCH_PLAN_HPP
#define HETLAUNCH_PLAN_HPP



namespace hetlaunch {

class launch_plan;

/// What a plan is made for (make_plan's third argument); the values combine with `|`. A plan
/// refuses to be made only for the problems of what it is made for; its other outputs refuse
/// for theirs when asked.
enum class plan_outputs : unsigned {
  torchrun_commands = 1U,    ///< torchrun_argv
  worker_environments = 2U,  ///< worker_env, worker_env_from_agent, direct_worker_env
  work_shares = 4U,          ///< agent_env, node_batch, rank_batch
  accelerate_commands = 8U,  ///< accelerate_argv
  all = 15U,
};
[[nodiscard]] constexpr plan_outputs operator|(plan_outputs a, plan_outputs b) noexcept {
  return static_cast<plan_outputs>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}

namespace detail {
// The topology's problems, then the options'.
template <class Topology>
std::vector<diagnostic> plan_problems(const Topology& c, const launch_options& options) {
  std::vector<diagnostic> out = validate(c, options.validation);
  for (const diagnostic& d : option_problems(c, options)) out.push_back(d);
  return out;
}

// The outputs an option's problem stops. A worker's environment carries the rendezvous, the
// restart limit and the share, but no command; torchrun's command carries no share; accelerate's
// has its own program and rendezvous (always static) and no torchrun arguments; a work share is
// the topology and the global batch alone.
constexpr plan_outputs outputs_stopped_by(errc code) noexcept {
  using o = plan_outputs;
  switch (code) {
    case errc::bad_port:
    case errc::bad_master_addr:
    case errc::bad_max_restarts:
      return o::torchrun_commands | o::worker_environments | o::accelerate_commands;
    case errc::missing_rdzv_id:
    case errc::virtual_local_rank:
      return o::torchrun_commands | o::worker_environments;
    case errc::bad_global_batch:
    case errc::global_batch_too_small:
      return o::worker_environments | o::work_shares;
    case errc::script_looks_like_option:
      return o::torchrun_commands | o::accelerate_commands;
    case errc::empty_program:
    case errc::bad_rendezvous_timeout:
    case errc::dash_flags_need_torch_2:
    case errc::overriding_torchrun_arg:
    case errc::binding_entrypoint:
      return o::torchrun_commands;
    default:  // the topology's: every output
      return o::all;
  }
}
// Whether a problem with `code` stops any of `outputs`.
constexpr bool stops(errc code, plan_outputs outputs) noexcept {
  return (static_cast<unsigned>(outputs_stopped_by(code)) & static_cast<unsigned>(outputs)) != 0;
}
// Node index `node` of a topology of `count` nodes, which it is not.
inline diagnostic node_out_of_range(std::size_t node, std::size_t count) {
  return diagnostic::of(errc::node_out_of_range)
      .with_value(static_cast<long long>(node))
      .with_limit(static_cast<long long>(count));
}
}  // namespace detail

/// Every problem of the topology and the launch options at once, in order: the topology's
/// (validate), then the options' (port, master address, rdzv_id with c10d, program, max_restarts,
/// rendezvous_timeout, flag style, extra torchrun arguments that name a computed option, a script
/// that starts with '-'). A missing script is not a problem: a plan without one serves
/// environments. The diagnostics own their text. O(N).
[[nodiscard]] inline std::vector<diagnostic> validate_plan(const cluster& c,
                                                           const launch_options& options) {
  return detail::plan_problems(c, options);
}

/// The launch options' problems alone, for a topology that was validated already (one a
/// hostfile or Slurm reader returned, or a plan's): validate_plan without validate's checks.
[[nodiscard]] inline std::vector<diagnostic> launch_option_problems(const cluster& c,
                                                                    const launch_options& options) {
  return detail::option_problems(c, options);
}

/// A topology and its launch options, validated once by make_plan. It owns copies of both, so
/// nothing it returns refers to the caller's storage, and every output costs O(its own size):
/// building every node's command of a 100,000-node plan is linear, not quadratic. Its topology is
/// valid, and so are the options of the outputs it was made for (all of them unless make_plan
/// was told otherwise); a problem of its options stops only the outputs that depend on that
/// option, and problems() lists them.
///
///   auto plan = hetlaunch::make_plan(c, options);
///   if (!plan) { for (const auto& d : plan.error()) std::cerr << d.message() << '\n'; return 1; }
///   for (std::size_t i = 0; i < plan->topology().node_count(); ++i)
///     std::cout << hetlaunch::shell_join(plan->torchrun_argv(i)) << '\n';
class launch_plan {
  cluster topology_;
  launch_options options_;
  std::vector<diagnostic> problems_;  // the options', in validate_plan's order
  bool counts_differ_ = false;
  std::vector<node_batch> batches_;  // every node's work share; empty without a global batch

  launch_plan(cluster c, launch_options o, std::vector<diagnostic> problems)
      : topology_(std::move(c)),
        options_(std::move(o)),
        problems_(std::move(problems)),
        counts_differ_(detail::nodes_differ(topology_)) {
    // Validated already: the split alone, O(N).
    if (options_.global_batch > 0 && !first_problem(plan_outputs::work_shares))
      batches_ = detail::split_valid(
          topology_.node_count(), [this](std::size_t i) { return topology_.nproc(i); },
          [this](std::size_t i) { return topology_.node(i).weight; }, topology_.world_size(),
          options_.global_batch);
  }
  const node_batch* share(std::size_t node) const noexcept {
    return batches_.empty() ? nullptr : &batches_[node];
  }
  friend result<launch_plan, std::vector<diagnostic>> make_plan(const cluster&,
                                                                const launch_options&,
                                                                plan_outputs);

  // The first problem of the options that stops `output`, if any.
  const diagnostic* first_problem(plan_outputs output) const noexcept {
    for (const diagnostic& d : problems_)
      if (detail::stops(d.code, output)) return &d;
    return nullptr;
  }
  diagnostic node_error(std::size_t node) const {
    return detail::node_out_of_range(node, topology_.node_count());
  }
  // Why `node`'s `output` cannot be given, if it cannot: the index, then the options.
  result<bool, diagnostic> output_error(std::size_t node, plan_outputs output) const {
    if (node >= topology_.node_count()) return node_error(node);
    if (const diagnostic* d = first_problem(output)) return *d;
    return true;
  }
  // Why worker `local_rank` of `node` has no environment to give, if it has none.
  result<bool, diagnostic> worker_error(std::size_t node, int local_rank) const {
    if (auto e = output_error(node, plan_outputs::worker_environments); !e) return e.error();
    if (options_.backend == rendezvous::c10d)
      return diagnostic::of(errc::ranks_decided_at_rendezvous);
    const auto rank = topology_.try_global_rank(node, local_rank);
    if (!rank) return rank.error();
    return true;
  }

 public:
  /// The topology (fixed_cluster inputs are copied into a cluster).
  [[nodiscard]] const cluster& topology() const noexcept { return topology_; }
  /// The launch options.
  [[nodiscard]] const launch_options& options() const noexcept { return options_; }
  /// Whether the nodes run different numbers of workers (then TORCH_ELASTIC_WORKER_IDENTICAL=1
  /// would break the job). O(1): computed once.
  [[nodiscard]] bool counts_differ() const noexcept { return counts_differ_; }
  /// The problems of the options, in validate_plan's order, of a plan made for some outputs only;
  /// each stops only the outputs that depend on its option (the port stops the commands and the
  /// workers' environments, the global batch the environments and the shares, the program
  /// torchrun's command). Empty for a plan made for all outputs.
  [[nodiscard]] const std::vector<diagnostic>& problems() const noexcept { return problems_; }
  /// Node `node`'s torchrun argv (see hetlaunch::torchrun_argv); node_out_of_range, the first
  /// problem of the options the command depends on (every one but the global batch's), or
  /// empty_script when the plan has no script.
  [[nodiscard]] result<std::vector<std::string>, diagnostic> try_torchrun_argv(
      std::size_t node) const {
    if (auto e = output_error(node, plan_outputs::torchrun_commands); !e) return e.error();
    if (options_.script.empty()) return diagnostic::of(errc::empty_script);
    return detail::build_torchrun_argv(topology_, node, options_);
  }
  /// try_torchrun_argv(node).value(). Preconditions: node < node_count() and a script.
  [[nodiscard]] std::vector<std::string> torchrun_argv(std::size_t node) const {
    return try_torchrun_argv(node).value();
  }

  /// The environment torchrun's agent gives worker `local_rank` of `node` (see
  /// hetlaunch::worker_env): node_out_of_range, the first problem of the options an environment
  /// depends on (the port, the master address, the run id with c10d, the restart limit, the
  /// global batch, an extra torchrun argument that changes the ranks), ranks_decided_at_rendezvous
  /// with c10d, or local_rank_out_of_range.
  [[nodiscard]] result<environment, diagnostic> try_worker_env(std::size_t node, int local_rank,
                                                               int restart_count = 0) const {
    if (auto e = worker_error(node, local_rank); !e) return e.error();
    return detail::build_worker_env(topology_, node, local_rank, options_, restart_count,
                                    detail::spawn_mode::torchrun, nullptr, share(node));
  }
  /// try_worker_env(...).value().
  [[nodiscard]] environment worker_env(std::size_t node, int local_rank,
                                       int restart_count = 0) const {
    return try_worker_env(node, local_rank, restart_count).value();
  }
  /// The environment torchrun gives the worker when torchrun runs with `agent` (see
  /// hetlaunch::worker_env_from_agent); the same errors as try_worker_env.
  [[nodiscard]] result<environment, diagnostic> try_worker_env_from_agent(
      std::size_t node, int local_rank, const environment& agent, int restart_count = 0) const {
    if (auto e = worker_error(node, local_rank); !e) return e.error();
    return detail::build_worker_env(topology_, node, local_rank, options_, restart_count,
                                    detail::spawn_mode::torchrun, &agent, share(node));
  }
  /// The environment for starting the worker without torchrun (see hetlaunch::direct_worker_env).
  [[nodiscard]] result<environment, diagnostic> try_direct_worker_env(std::size_t node,
                                                                      int local_rank) const {
    if (auto e = worker_error(node, local_rank); !e) return e.error();
    return detail::build_worker_env(topology_, node, local_rank, options_, 0,
                                    detail::spawn_mode::direct, nullptr, share(node));
  }
  /// try_direct_worker_env(...).value().
  [[nodiscard]] environment direct_worker_env(std::size_t node, int local_rank) const {
    return try_direct_worker_env(node, local_rank).value();
  }
  /// What torchrun's own environment on `node` needs (see hetlaunch::try_agent_env): the node's
  /// devices and, with a global batch, its work share; node_out_of_range, or the global batch's
  /// problem.
  [[nodiscard]] result<environment, diagnostic> try_agent_env(std::size_t node) const {
    if (auto e = output_error(node, plan_outputs::work_shares); !e) return e.error();
    environment env = hetlaunch::agent_env(topology_, node);
    detail::append_batch_env(env, options_, share(node), topology_.max_batch(node),
                             topology_.node(node).host);
    return env;
  }
  /// try_agent_env(node).value().
  [[nodiscard]] environment agent_env(std::size_t node) const {
    return try_agent_env(node).value();
  }
  /// The one rule for what a launcher does to node `node`'s environment before its torchrun
  /// starts (the ssh node script, `exec`, a direct spawn, `env`, a JobSet pod, a Slurm step):
  /// `set` is the node's agent_env, then `user` (the caller's own variables: --env, an env
  /// file), then HETLAUNCH_RESTART_COUNT when `restart_count` is 0 or more; `unset` names every
  /// variable the launch owns that `set` has no value for (an inherited one would hand the
  /// workers a share, a ceiling, an attempt or a calibration that this launch does not have), and
  /// TORCH_ELASTIC_WORKER_IDENTICAL when the nodes' counts differ. Errors: those of
  /// try_agent_env, and owned_variable for a name of `user` that the launch owns.
  [[nodiscard]] result<node_variables, diagnostic> try_node_variables(
      std::size_t node, const environment& user = {}, int restart_count = -1) const {
    auto agent = try_agent_env(node);
    if (!agent) return agent.error();
    node_variables out;
    out.set = std::move(*agent);
    for (const auto& v : user) {
      if (is_owned_variable(v.first))
        return diagnostic::of(errc::owned_variable).with_text(v.first);
      out.set.push_back(v);
    }
    if (restart_count >= 0)
      out.set.emplace_back(variables::restart_count, std::to_string(restart_count));
    for (std::string_view name : variables::owned) {
      bool given = false;
      for (const auto& v : out.set) given = given || v.first == name;
      if (!given) out.unset.push_back(name);
    }
    if (counts_differ_) out.unset.push_back(variables::worker_identical);
    return out;
  }
  /// try_node_variables(...).value().
  [[nodiscard]] node_variables node_variables_of(std::size_t node, const environment& user = {},
                                                 int restart_count = -1) const {
    return try_node_variables(node, user, restart_count).value();
  }
  /// Whether the plan splits a global batch (launch_options::global_batch above 0).
  [[nodiscard]] bool has_shares() const noexcept { return !batches_.empty(); }
  /// Node `node`'s part of each step (see split_batch): node_out_of_range, the global batch's
  /// problem, or bad_global_batch when the plan has no global batch. O(1).
  [[nodiscard]] result<node_batch, diagnostic> try_node_batch(std::size_t node) const {
    if (auto e = output_error(node, plan_outputs::work_shares); !e) return e.error();
    if (batches_.empty()) {
      return diagnostic::of(errc::bad_global_batch).with_variable("global_batch");
    }
    return batches_[node];
  }
  /// try_node_batch(node).value().
  [[nodiscard]] node_batch node_batch_of(std::size_t node) const {
    return try_node_batch(node).value();
  }
  /// Worker `local_rank` of `node`'s part of each step (see batch_of_rank); the errors of
  /// try_node_batch, and local_rank_out_of_range. O(1).
  [[nodiscard]] result<rank_batch, diagnostic> try_rank_batch(std::size_t node,
                                                              int local_rank) const {
    const auto n = try_node_batch(node);
    if (!n) return n.error();
    if (const auto rank = topology_.try_global_rank(node, local_rank); !rank) return rank.error();
    return batch_of_rank(*n, topology_.nproc(node), local_rank);
  }
  /// try_rank_batch(node, local_rank).value().
  [[nodiscard]] rank_batch rank_batch_of(std::size_t node, int local_rank) const {
    return try_rank_batch(node, local_rank).value();
  }

  /// Machine `node`'s `accelerate launch` argv (see hetlaunch::accelerate_argv): node_out_of_range,
  /// the first problem of the options the command depends on (the port, the master address, the
  /// restart limit, a script that starts with '-'), empty_script, binding_not_carried, or
  /// too_few_processes when the machine's count times the machine count is below 2. The command
  /// has its own program and always the static rendezvous, and carries no torchrun arguments.
  /// This costs the command's own size.
  [[nodiscard]] result<std::vector<std::string>, diagnostic> try_accelerate_argv(
      std::size_t node) const {
    if (auto e = output_error(node, plan_outputs::accelerate_commands); !e) return e.error();
    if (options_.script.empty()) return diagnostic::of(errc::empty_script);
    return detail::build_accelerate_argv(topology_, node, options_);
  }
  /// try_accelerate_argv(node).value(). Preconditions: node < node_count(), a script, and at least
  /// two processes in the machine's command.
  [[nodiscard]] std::vector<std::string> accelerate_argv(std::size_t node) const {
    return try_accelerate_argv(node).value();
  }
};

/// Validates `c` and `options` once (validate_plan) and, when there is no problem of the topology
/// or of the options the outputs `made_for` depend on, returns a plan that owns copies of both;
/// otherwise every problem, the options' included (diagnostics own their text). Made for all
/// outputs (the default), a plan has no problem left; made for some, its other outputs refuse for
/// the options' problems that concern them (problems()). A scheduler that wants only the
/// workers' environments makes a plan for plan_outputs::worker_environments: it needs no script
/// and no program.
[[nodiscard]] inline result<launch_plan, std::vector<diagnostic>> make_plan(
    const cluster& c, const launch_options& options, plan_outputs made_for = plan_outputs::all) {
  std::vector<diagnostic> problems = validate(c, options.validation);
  bool refused = !problems.empty();
  for (diagnostic& d : detail::option_problems(c, options)) {
    refused = refused || detail::stops(d.code, made_for);
    problems.push_back(std::move(d));
  }
  if (refused) return problems;
  return launch_plan(c, options, std::move(problems));
}
/// make_plan for a fixed topology, copied into a cluster.
template <std::size_t N>
[[nodiscard]] result<launch_plan, std::vector<diagnostic>> make_plan(
    const fixed_cluster<N>& c, const launch_options& options,
    plan_outputs made_for = plan_outputs::all) {
  if (!validate(c, options.validation).empty()) return detail::plan_problems(c, options);
  return make_plan(cluster(c), options, made_for);
}

/// Every problem that stops torchrun_argv(c, node, options), in order: the topology's (validate),
/// the node index, master_port, master_addr, rdzv_id (c10d), max_restarts, program,
/// rendezvous_timeout, flag style, extra torchrun arguments naming a computed option, a script
/// that starts with '-', and a missing script. Empty when the command can be built. A c10d
/// launch is sound, but its workers' ranks are decided when the agents meet: try_worker_env
/// refuses it with ranks_decided_at_rendezvous, since no environment can be predicted.
[[nodiscard]] inline std::vector<diagnostic> validate_launch(const cluster& c, std::size_t node,
                                                             const launch_options& options) {
  std::vector<diagnostic> out = validate(c, options.validation);
  if (node >= c.node_count()) out.push_back(detail::node_out_of_range(node, c.node_count()));
  for (diagnostic& d : detail::option_problems(c, options))
    if (detail::stops(d.code, plan_outputs::torchrun_commands)) out.push_back(std::move(d));
  if (options.script.empty()) out.push_back(diagnostic::of(errc::empty_script));
  return out;
}

// The one-call functions: each makes a plan of its topology and options for its own output, and
// gives that plan's output, so both ways refuse for the same problems. Each validates the whole
// topology again: O(N) a call; for many outputs, make the plan once.
namespace detail {
// The first problem of a refused plan that stops `made_for` for `node`, in validate_launch's
// order: the topology's, the node index, the options'.
template <class Topology>
diagnostic first_refusal(const Topology& c, const std::vector<diagnostic>& problems,
                         plan_outputs made_for, std::size_t node) {
  for (const diagnostic& d : problems)
    if (outputs_stopped_by(d.code) == plan_outputs::all) return d;
  if (node >= c.node_count()) return node_out_of_range(node, c.node_count());
  for (const diagnostic& d : problems)
    if (stops(d.code, made_for)) return d;
  return problems.front();  // not reached: a refused plan has a problem of its outputs
}

template <class Topology, class Output>
auto from_plan(const Topology& c, const launch_options& options, plan_outputs made_for,
               std::size_t node, Output output)
    -> decltype(output(std::declval<const launch_plan&>())) {
  const auto plan = make_plan(c, options, made_for);
  if (!plan) return first_refusal(c, plan.error(), made_for, node);
  return output(*plan);
}
}  // namespace detail

/// torchrun's argv for `node`: program, then --nnodes, --node_rank (static), --nproc_per_node
/// (this node's own count), --role (when not "default"), --max_restarts, the rendezvous
/// (--master_addr/--master_port, or --rdzv_backend=c10d --rdzv_endpoint=HOST:PORT with IPv6
/// bracketed), --rdzv_id (when set), the extra torchrun_args, -m, the script and its arguments.
/// With a numa_binding, --no_python follows --rdzv_id (unless the extra arguments have it) and the
/// worker command is `bind_program bind --numa-binding MODE -- python -u [-m] SCRIPT ARGS...`
/// (without `python -u` when the extra arguments say --no-python).
/// Full option names only, all before the script. The first problem (see validate_launch) is
/// the error: launch_plan::try_torchrun_argv of make_plan(c, options,
/// plan_outputs::torchrun_commands).
///
/// Example, node 1 of {{"gpu-a", 8}, {"gpu-b", 4}} with script "train.py":
///   torchrun --nnodes=2 --node_rank=1 --nproc_per_node=4 --max_restarts=0
///            --master_addr=gpu-a --master_port=29500 train.py
[[nodiscard]] inline result<std::vector<std::string>, diagnostic> try_torchrun_argv(
    const cluster& c, std::size_t node, const launch_options& options) {
  return detail::from_plan(c, options, plan_outputs::torchrun_commands, node,
                           [&](const launch_plan& p) { return p.try_torchrun_argv(node); });
}
template <std::size_t N>
[[nodiscard]] result<std::vector<std::string>, diagnostic> try_torchrun_argv(
    const fixed_cluster<N>& c, std::size_t node, const launch_options& options) {
  return detail::from_plan(c, options, plan_outputs::torchrun_commands, node,
                           [&](const launch_plan& p) { return p.try_torchrun_argv(node); });
}
/// try_torchrun_argv(...).value(): on a problem throws bad_result_access (or, without
/// exceptions, reports through HETLAUNCH_ON_FAILURE).
[[nodiscard]] inline std::vector<std::string> torchrun_argv(const cluster& c, std::size_t node,
                                                            const launch_options& options) {
  return try_torchrun_argv(c, node, options).value();
}
template <std::size_t N>
[[nodiscard]] std::vector<std::string> torchrun_argv(const fixed_cluster<N>& c, std::size_t node,
                                                     const launch_options& options) {
  return try_torchrun_argv(c, node, options).value();
}

/// The environment torchrun's agent gives worker `local_rank` of `node` (static rendezvous), with
/// torchrun's names and values, in this order: LOCAL_RANK RANK GROUP_RANK ROLE_RANK ROLE_NAME
/// LOCAL_WORLD_SIZE WORLD_SIZE GROUP_WORLD_SIZE ROLE_WORLD_SIZE MASTER_ADDR MASTER_PORT
/// TORCHELASTIC_RESTART_COUNT TORCHELASTIC_MAX_RESTARTS TORCHELASTIC_RUN_ID
/// TORCHELASTIC_USE_AGENT_STORE=True, NCCL_ASYNC_ERROR_HANDLING=1 (torch < 2.2) or
/// TORCH_NCCL_ASYNC_ERROR_HANDLING=1, OMP_NUM_THREADS=1 when the node runs more than one
/// worker, TORCHELASTIC_SIGNALS_TO_HANDLE=SIGTERM,SIGINT,SIGHUP,SIGQUIT (torch 2.9 and later; an
/// extra `--signals-to-handle` argument's value when given), and CUDA_VISIBLE_DEVICES when the
/// node carries a device list (cluster::devices): every worker of the node sees all of the node's
/// devices, as under torchrun, which passes its own CUDA_VISIBLE_DEVICES on to each worker (so set
/// agent_env's value in torchrun's environment); with a global batch,
/// HETLAUNCH_GLOBAL_BATCH, HETLAUNCH_NODE_BATCH and HETLAUNCH_NODE_BATCH_OFFSET, the node's work
/// share (see split_batch), and HETLAUNCH_MAX_BATCH for a node with a ceiling, which torchrun
/// passes on from its own environment too (so set agent_env's values there). torchrun also passes
/// on its own environment; this assumes that environment sets none of the variables torchrun
/// passes on (worker_env_from_agent takes it into account). TORCHELASTIC_ERROR_FILE, whose value
/// torchrun decides when it starts the worker, is described by worker_runtime_variables.
/// `restart_count` is TORCHELASTIC_RESTART_COUNT: 0 at the first start, then the number of failure
/// restarts so far (membership changes do not count). No script or program is needed. The errors:
/// launch_plan::try_worker_env's of make_plan(c, options,
/// plan_outputs::worker_environments); with the c10d rendezvous,
/// ranks_decided_at_rendezvous.
[[nodiscard]] inline result<environment, diagnostic> try_worker_env(const cluster& c,
                                                                    std::size_t node,
                                                                    int local_rank,
                                                                    const launch_options& options,
                                                                    int restart_count = 0) {
  return detail::from_plan(
      c, options, plan_outputs::worker_environments, node,
      [&](const launch_plan& p) { return p.try_worker_env(node, local_rank, restart_count); });
}
/// try_worker_env(...).value().
[[nodiscard]] inline environment worker_env(const cluster& c, std::size_t node, int local_rank,
                                            const launch_options& options, int restart_count = 0) {
  return try_worker_env(c, node, local_rank, options, restart_count).value();
}
template <std::size_t N>
[[nodiscard]] environment worker_env(const fixed_cluster<N>& c, std::size_t node, int local_rank,
                                     const launch_options& options, int restart_count = 0) {
  return detail::from_plan(c, options, plan_outputs::worker_environments, node,
                           [&](const launch_plan& p) {
                             return p.try_worker_env(node, local_rank, restart_count);
                           })
      .value();
}

/// The environment torchrun gives the worker when torchrun itself runs with `agent` (its whole
/// environment, or the part of it that matters): worker_env's variables, except that a
/// TORCH_NCCL_ASYNC_ERROR_HANDLING (NCCL_ASYNC_ERROR_HANDLING before torch 2.2) or OMP_NUM_THREADS
/// set in `agent` is passed on as it is, and PET_SIGNALS_TO_HANDLE there is the default of
/// TORCHELASTIC_SIGNALS_TO_HANDLE (torch 2.9 and later). Every other variable of `agent` reaches
/// the worker unchanged and is not listed. The same errors as try_worker_env.
[[nodiscard]] inline result<environment, diagnostic> try_worker_env_from_agent(
    const cluster& c, std::size_t node, int local_rank, const launch_options& options,
    const environment& agent, int restart_count = 0) {
  return detail::from_plan(
      c, options, plan_outputs::worker_environments, node, [&](const launch_plan& p) {
        return p.try_worker_env_from_agent(node, local_rank, agent, restart_count);
      });
}
/// try_worker_env_from_agent(...).value().
[[nodiscard]] inline environment worker_env_from_agent(const cluster& c, std::size_t node,
                                                       int local_rank,
                                                       const launch_options& options,
                                                       const environment& agent,
                                                       int restart_count = 0) {
  return try_worker_env_from_agent(c, node, local_rank, options, agent, restart_count).value();
}

/// The environment for a launcher that starts the workers itself, without torchrun: the same
/// rank variables as worker_env, TORCHELASTIC_USE_AGENT_STORE=False (no agent hosts a store, so
/// worker RANK 0 hosts it at MASTER_ADDR:MASTER_PORT; claiming an agent store would leave every
/// rank waiting as a client), and no TORCHELASTIC_RUN_ID / _RESTART_COUNT / _MAX_RESTARTS, so
/// torch.distributed.is_torchelastic_launched() is false. The same errors as try_worker_env.
[[nodiscard]] inline result<environment, diagnostic> try_direct_worker_env(
    const cluster& c, std::size_t node, int local_rank, const launch_options& options) {
  return detail::from_plan(
      c, options, plan_outputs::worker_environments, node,
      [&](const launch_plan& p) { return p.try_direct_worker_env(node, local_rank); });
}
/// try_direct_worker_env(...).value().
[[nodiscard]] inline environment direct_worker_env(const cluster& c, std::size_t node,
                                                   int local_rank, const launch_options& options) {
  return try_direct_worker_env(c, node, local_rank, options).value();
}

/// agent_env(c, node), then, with a global batch, the node's work share: HETLAUNCH_GLOBAL_BATCH,
/// HETLAUNCH_NODE_BATCH and HETLAUNCH_NODE_BATCH_OFFSET; and HETLAUNCH_MAX_BATCH when the node has
/// a ceiling. Errors: launch_plan::try_agent_env's of make_plan(c, options, plan_outputs::work_shares) (the topology's, the
/// node index, the global batch's).
[[nodiscard]] inline result<environment, diagnostic> try_agent_env(const cluster& c,
                                                                   std::size_t node,
                                                                   const launch_options& options) {
  return detail::from_plan(c, options, plan_outputs::work_shares, node,
                           [&](const launch_plan& p) { return p.try_agent_env(node); });
}

/// The `accelerate launch` argv for machine `node` that really yields the heterogeneous job:
/// accelerate divides --num_processes by --num_machines to get each machine's
/// --nproc_per_node, so each machine is given its own nproc times the machine count:
///   accelerate launch --multi_gpu --num_machines N --machine_rank i --num_processes nproc_i*N
///     --main_process_ip ADDR --main_process_port PORT --rdzv_backend static
///     --max_restarts K [-m] script args...
/// A numa_binding is refused (binding_not_carried): accelerate starts the workers itself.
/// The static backend keeps --machine_rank meaningful. Roles and torchrun_args are not forwarded
/// (accelerate has no such options); program[0] is ignored in favour of "accelerate". Errors:
/// launch_plan::try_accelerate_argv's of make_plan(c, options,
/// plan_outputs::accelerate_commands).
[[nodiscard]] inline result<std::vector<std::string>, diagnostic> try_accelerate_argv(
    const cluster& c, std::size_t node, const launch_options& options) {
  return detail::from_plan(c, options, plan_outputs::accelerate_commands, node,
                           [&](const launch_plan& p) { return p.try_accelerate_argv(node); });
}
/// try_accelerate_argv(...).value().
[[nodiscard]] inline std::vector<std::string> accelerate_argv(const cluster& c, std::size_t node,
                                                              const launch_options& options) {
  return try_accelerate_argv(c, node, options).value();
}

/// check_worker_env against a plan: the topology's variables, and with a global batch also
/// HETLAUNCH_GLOBAL_BATCH, HETLAUNCH_NODE_BATCH and HETLAUNCH_NODE_BATCH_OFFSET, which must be
/// set and equal the plan's for the worker's node (GROUP_RANK); a difference is batch_mismatch,
/// and a HETLAUNCH_NODE_HOST unset or other than the node's host is host_mismatch.
/// Without a global batch, each of them that is set is unplanned_share. A HETLAUNCH_MAX_BATCH
/// that differs from the node's ceiling, or is set for a node without one, is batch_mismatch too.
///   for (const auto& d : hetlaunch::check_worker_env(plan, std::getenv))
///     std::cerr << d.message() << '\n';
template <class Getenv,
          std::enable_if_t<!std::is_convertible<Getenv, const environment&>::value, int> = 0>
[[nodiscard]] std::vector<diagnostic> check_worker_env(const launch_plan& plan, Getenv&& get) {
  std::vector<diagnostic> out = detail::compare_worker_env(plan.topology(), get);
  if (!plan.has_shares()) {
    for (std::string_view name : variables::share)
      if (const char* value = get(name.data()))
        out.push_back(diagnostic::of(errc::unplanned_share).with_variable(name).with_text(value));
  }
  // A batch and an offset are counts: a '-' makes them no number.
  const auto read = [&](const char* name, long long& value) {
    return detail::read_env_integer(get, name, /*may_be_negative=*/false, value, out);
  };
  long long group = -1;
  const char* group_text = get("GROUP_RANK");
  const bool have_node = group_text && detail::parse_decimal(group_text, LLONG_MAX, group) &&
                         static_cast<unsigned long long>(group) < plan.topology().node_count();
  const auto compare = [&](const char* name, long long planned, bool per_node) {
    long long value = 0;
    if (!read(name, value) || value == planned) return;
    diagnostic d = diagnostic::of(errc::batch_mismatch)
                       .with_variable(name)
                       .with_value(value)
                       .with_limit(planned)
                       .with_text(get(name));
    if (per_node) {
      const node_spec spec = plan.topology().node(static_cast<std::size_t>(group));
      d.with_node(static_cast<std::size_t>(group)).with_host(spec.host).with_role(spec.role);
    }
    out.push_back(d);
  };
  if (plan.has_shares())
    compare(variables::global_batch.data(), plan.options().global_batch, false);
  if (plan.has_shares() && have_node) {
    const node_batch share = plan.node_batch_of(static_cast<std::size_t>(group));
    compare(variables::node_batch.data(), share.batch, true);
    compare(variables::node_batch_offset.data(), share.offset, true);
    // The host the sampler keeps its learned rates by: a worker with another would give a
    // checkpoint's rates to the wrong node.
    const node_spec spec = plan.topology().node(static_cast<std::size_t>(group));
    const char* host = get(variables::node_host.data());
    if (host == nullptr || std::string_view(host) != spec.host || !*host)
      out.push_back(diagnostic::of(errc::host_mismatch)
                        .with_variable(variables::node_host)
                        .with_text(host ? host : "")
                        .with_node(static_cast<std::size_t>(group))
                        .with_host(spec.host)
                        .with_role(spec.role));
  }
  // The node's ceiling, when it has one and the worker was given one; one inherited by a worker
  // of a node without a ceiling would cut its share into micro-batches nobody planned.
  if (have_node && (plan.topology().max_batch(static_cast<std::size_t>(group)) > 0 ||
                    get(variables::max_batch.data())))
    compare(variables::max_batch.data(), plan.topology().max_batch(static_cast<std::size_t>(group)),
            true);
  return out;
}
/// check_worker_env against a plan, over an environment list (the later of two equal names wins).
[[nodiscard]] inline std::vector<diagnostic> check_worker_env(const launch_plan& plan,
                                                              const environment& env) {
  return check_worker_env(plan, detail::environment_lookup{env});
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_PLAN_HPP
// ---- hetlaunch/restart.hpp
// hetlaunch: gang restarts. After a failed attempt the whole job starts again, on the same nodes
// or without the ones that failed; this is the decision and the smaller topology, computed
// without any process (the launcher starts and stops the nodes).
#ifndef HETLAUNCH_RESTART_HPP
#define HETLAUNCH_RESTART_HPP



namespace hetlaunch {

/// How a failed job is started again (`hetlaunch run --restarts N [--exclude-failed]
/// [--min-nodes M]`).
struct restart_options {
  /// At most this many restarts after failures: restarts + 1 attempts in all. 0: none.
  int restarts = 0;
  /// Each restart leaves out the nodes that failed (the first one to fail, and every node whose
  /// host could not be reached); the plan is made again over the nodes that remain.
  bool exclude_failed = false;
  /// The fewest nodes the job may shrink to; below it the job fails instead of restarting.
  std::size_t min_nodes = 1;
};

/// Why an attempt is the last, or that it is not.
enum class restart_verdict {
  restart,          ///< start the job again (on `nodes`)
  succeeded,        ///< every node succeeded: done
  interrupted,      ///< stopped by a signal (SIGINT, SIGTERM, SIGHUP): never restarted
  no_restart_left,  ///< the failure came after the last restart allowed
  too_few_nodes,    ///< leaving the failed nodes out would go below min_nodes (or to none)
};

/// A host that stands by (`hetlaunch run --spare HOSTS`): at a restart it takes the place of a
/// failed node of at most its worker count.
struct spare_host {
  std::string host;
  /// Its worker count. 0: not known yet (a slots=auto spare not asked): it replaces no node.
  int nproc = 0;
};

/// A failed node whose place a spare takes in the next attempt.
struct node_replacement {
  std::size_t node;   ///< the failed node, an index into the attempt's topology
  std::size_t spare;  ///< an index into the spares given to decide_restart
  friend bool operator==(const node_replacement& a, const node_replacement& b) noexcept {
    return a.node == b.node && a.spare == b.spare;
  }
};

/// What follows an attempt: the verdict, and for a restart the nodes of the next attempt, as
/// indices into the attempt's topology, in their order there, and the spares that replace some
/// of them (ascending by node).
struct restart_decision {
  restart_verdict verdict = restart_verdict::succeeded;
  std::vector<std::size_t> nodes;
  std::vector<node_replacement> replaced;
  [[nodiscard]] bool restart() const noexcept { return verdict == restart_verdict::restart; }
};

namespace detail {
// The decision, with each node's worker count given by nproc_of(i) (spares fit by it).
template <class NprocOf>
restart_decision decide_restart(const restart_options& options, int restarts_done,
                                std::size_t node_count, NprocOf nproc_of,
                                const std::vector<std::size_t>& failed, bool interrupted,
                                const std::vector<spare_host>& spares) {
  restart_decision d;
  if (interrupted) {
    d.verdict = restart_verdict::interrupted;
    return d;
  }
  if (failed.empty()) return d;
  if (restarts_done >= options.restarts) {
    d.verdict = restart_verdict::no_restart_left;
    return d;
  }
  std::vector<bool> blamed(node_count, false);
  std::vector<std::size_t> blamed_nodes;  // each once, in the order of `failed`
  for (std::size_t i : failed)
    if (i < node_count && !blamed[i]) blamed[i] = true, blamed_nodes.push_back(i);
  // The most failed nodes a spare can replace: the nodes by worker count (fewest first), each
  // taking the smallest spare that still fits; every spare passed over is too small for the
  // nodes that follow too. Ties go to the node that failed first and the spare given first.
  std::vector<std::size_t> by_size = blamed_nodes, spare_order;
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](std::size_t a, std::size_t b) { return nproc_of(a) < nproc_of(b); });
  for (std::size_t s = 0; s < spares.size(); ++s)
    if (spares[s].nproc > 0) spare_order.push_back(s);
  std::stable_sort(spare_order.begin(), spare_order.end(),
                   [&](std::size_t a, std::size_t b) { return spares[a].nproc < spares[b].nproc; });
  std::size_t next_spare = 0;
  for (std::size_t i : by_size) {
    while (next_spare < spare_order.size() && spares[spare_order[next_spare]].nproc < nproc_of(i))
      ++next_spare;
    if (next_spare == spare_order.size()) break;
    d.replaced.push_back({i, spare_order[next_spare++]});
    blamed[i] = false;  // it stays, on its spare
  }
  std::sort(d.replaced.begin(), d.replaced.end(),
            [](const node_replacement& a, const node_replacement& b) { return a.node < b.node; });
  for (std::size_t i = 0; i < node_count; ++i)
    if (!(options.exclude_failed && blamed[i])) d.nodes.push_back(i);
  const std::size_t least = options.min_nodes > 0 ? options.min_nodes : 1;
  if (d.nodes.size() < least) {
    d.nodes.clear();
    d.replaced.clear();
    d.verdict = restart_verdict::too_few_nodes;
    return d;
  }
  d.verdict = restart_verdict::restart;
  return d;
}
}  // namespace detail

/// The decision after attempt `restarts_done` (0 for the first) of a job on `node_count` nodes.
/// `failed`: the nodes to blame, the first to fail first, then every node whose host could not
/// be reached (empty when the attempt succeeded); `interrupted`: a signal stopped the job.
/// Without exclude_failed every node stays; with it, the failed nodes are left out. O(N).
[[nodiscard]] inline restart_decision decide_restart(const restart_options& options,
                                                     int restarts_done, std::size_t node_count,
                                                     const std::vector<std::size_t>& failed,
                                                     bool interrupted) {
  return detail::decide_restart(options, restarts_done, node_count, [](std::size_t) { return 0; },
                                failed, interrupted, {});
}

/// The same decision for a job with hosts standing by: each failed node of `topology` that a
/// spare fits (a spare of at least the node's nproc) stays, on that spare; as many as can be,
/// each spare at most once. Only the failed nodes no spare fits are left out (exclude_failed),
/// or start again on their own hosts. The next attempt's topology is restart_topology(topology,
/// decision, spares). `spares`: the hosts still unused (a caller drops each spare it used).
/// O(N + F log F + S log S) for F failed nodes and S spares.
[[nodiscard]] inline restart_decision decide_restart(const restart_options& options,
                                                     int restarts_done, const cluster& topology,
                                                     const std::vector<std::size_t>& failed,
                                                     bool interrupted,
                                                     const std::vector<spare_host>& spares) {
  return detail::decide_restart(
      options, restarts_done, topology.node_count(),
      [&](std::size_t i) { return topology.node(i).nproc; }, failed, interrupted, spares);
}

/// The topology of the nodes `keep` (indices into `c`, ascending), in their order in `c`, with
/// each node's role, weight, ceiling and device list. Node indices, rank offsets and the world size are
/// those of the smaller topology. Precondition: every index is below c.node_count(). O(N).
[[nodiscard]] inline cluster keep_nodes(const cluster& c, const std::vector<std::size_t>& keep) {
  cluster_builder builder;
  std::size_t chars = 0;
  for (std::size_t i : keep) {
    detail::expects(i < c.node_count(), "keep_nodes(c, keep): node index out of range");
    chars += c.node(i).host.size();
  }
  builder.reserve(keep.size(), chars);
  for (std::size_t i : keep) builder.add(c.node(i));  // every field of the node
  cluster out = builder.finish();
  for (std::size_t k = 0; k < keep.size(); ++k)
    if (!c.devices(keep[k]).empty()) out.set_devices(k, c.devices(keep[k]));
  return out;
}

/// The topology of a restart: the nodes d.nodes of `c`, in their order, each replaced node on
/// its spare's host with the node's nproc, role, weight and ceiling, so that ranks, the world size and
/// the shares stay the node's. A replaced node's device list is dropped: it named the failed
/// host's GPUs. Precondition: `d` came from decide_restart over `c` and these `spares`. O(N).
[[nodiscard]] inline cluster restart_topology(const cluster& c, const restart_decision& d,
                                              const std::vector<spare_host>& spares) {
  cluster_builder builder;
  std::size_t chars = 0, r = 0;
  for (std::size_t i : d.nodes) {
    detail::expects(i < c.node_count(), "restart_topology(c, d, spares): node index out of range");
    chars += c.node(i).host.size();
  }
  for (const node_replacement& x : d.replaced) {
    detail::expects(x.spare < spares.size(), "restart_topology(c, d, spares): no such spare");
    chars += spares[x.spare].host.size();
  }
  builder.reserve(d.nodes.size(), chars);
  std::vector<bool> replaced(d.nodes.size(), false);
  for (std::size_t k = 0; k < d.nodes.size(); ++k) {
    node_spec n = c.node(d.nodes[k]);  // every field of the node, its ceiling too
    while (r < d.replaced.size() && d.replaced[r].node < d.nodes[k]) ++r;
    if (r < d.replaced.size() && d.replaced[r].node == d.nodes[k]) {
      n.host = spares[d.replaced[r].spare].host;  // the spare's host, the node's all else
      replaced[k] = true;
    }
    builder.add(n);
  }
  cluster out = builder.finish();
  for (std::size_t k = 0; k < d.nodes.size(); ++k)
    if (!replaced[k] && !c.devices(d.nodes[k]).empty()) out.set_devices(k, c.devices(d.nodes[k]));
  return out;
}

/// Whether the rendezvous address given in `o` (master_addr, or c10d's endpoint host) must move
/// when only the nodes `keep` (indices into `before`, ascending) of `before` remain. Node 0 hosts
/// the static rendezvous, and c10d's store when the endpoint names it. The address points at a
/// node left out when it is the host of a node left out, or when node 0 is left out and the
/// address is the host of no node that remains (node 0's fast-network address, say): every
/// agent of the restart would wait for that node. It then becomes the new node 0's host (clear
/// master_addr). An address not given (empty) is node 0's host already: it never moves. O(N).
[[nodiscard]] inline bool rendezvous_moves(const cluster& before,
                                           const std::vector<std::size_t>& keep,
                                           const launch_options& o) {
  if (o.master_addr.empty() || before.node_count() == 0) return false;
  const std::string_view addr = detail::unbracketed(o.master_addr);
  std::vector<bool> kept(before.node_count(), false);
  for (std::size_t i : keep)
    if (i < kept.size()) kept[i] = true;
  bool names_left_out = false, names_kept = false;
  for (std::size_t i = 0; i < kept.size(); ++i)
    if (before.node(i).host == addr) (kept[i] ? names_kept : names_left_out) = true;
  // c10d's endpoint on no host of the job is a store of its own: it stays where it is.
  if (o.backend == rendezvous::c10d && !names_kept && !names_left_out) return false;
  return names_left_out || (!kept[0] && !names_kept);
}

/// Whether the rendezvous address given in `o` must move when the job's topology goes from
/// `before` to `after` (a restart that leaves nodes out, or puts spares in their place): when it
/// is no host of `after`, and it named a host of `before` or node 0 is now on another host (the
/// address was node 0's other name, a fast network's, say). It then becomes the new node 0's
/// host. An address not given never moves. O(N) expected.
[[nodiscard]] inline bool rendezvous_moves(const cluster& before, const cluster& after,
                                           const launch_options& o) {
  if (o.master_addr.empty() || before.node_count() == 0 || after.node_count() == 0) return false;
  const std::string_view addr = detail::unbracketed(o.master_addr);
  bool named_before = false;
  for (std::size_t i = 0; i < before.node_count(); ++i)
    named_before = named_before || before.node(i).host == addr;
  for (std::size_t i = 0; i < after.node_count(); ++i)
    if (after.node(i).host == addr) return false;
  // c10d's endpoint on no host of the job is a store of its own: it stays where it is.
  if (o.backend == rendezvous::c10d && !named_before) return false;
  return named_before || before.node(0).host != after.node(0).host;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_RESTART_HPP
// ---- hetlaunch/grow_back.hpp
// hetlaunch: growing back. A job that restarted without some of its nodes (left out after a
// failure, or replaced by a spare) keeps, for each node it runs, the place that node had in the
// job as first given. A host that left and answers again re-enters at its own place, with its
// node's record as first given; a host whose place a spare holds stands by as a spare instead.
// Computed without any process: the launcher probes the hosts and restarts the job.
#ifndef HETLAUNCH_GROW_BACK_HPP
#define HETLAUNCH_GROW_BACK_HPP



namespace hetlaunch {

/// A job across its restarts: the topology as first given, and for each node of the current
/// attempt the index of the first topology's node whose place it holds (ascending: restarts
/// keep the nodes' order).
struct job_places {
  cluster first;
  std::vector<std::size_t> places;
};

/// A job that has not restarted: every node in its own place.
[[nodiscard]] inline job_places places_of(const cluster& first) {
  job_places p{first, {}};
  p.places.reserve(first.node_count());
  for (std::size_t i = 0; i < first.node_count(); ++i) p.places.push_back(i);
  return p;
}

/// The places after a failure's restart: the nodes `d.nodes` (indices into the attempt's
/// topology) keep the places they held; a node on a spare keeps its place too. O(N).
/// Precondition: `d` came from decide_restart over the attempt whose places `p` holds.
[[nodiscard]] inline job_places places_after_restart(const job_places& p,
                                                     const restart_decision& d) {
  job_places next{p.first, {}};
  next.places.reserve(d.nodes.size());
  for (std::size_t k : d.nodes) {
    detail::expects(k < p.places.size(), "places_after_restart(p, d): node index out of range");
    next.places.push_back(p.places[k]);
  }
  return next;
}

/// The hosts that left the job: the first topology's hosts whose nodes are out or held by a
/// spare, less every host the attempt `current` runs on and every host of `spares` (each may
/// have come back in another role). In the first topology's order, each once. O(N + S) expected.
[[nodiscard]] inline std::vector<std::string> hosts_that_left(
    const job_places& p, const cluster& current, const std::vector<spare_host>& spares) {
  std::vector<bool> held_by_own(p.first.node_count(), false);
  for (std::size_t k = 0; k < p.places.size() && k < current.node_count(); ++k)
    if (p.places[k] < held_by_own.size() && current.node(k).host == p.first.node(p.places[k]).host)
      held_by_own[p.places[k]] = true;
  std::vector<std::string_view> busy;
  busy.reserve(current.node_count() + spares.size());
  for (std::size_t k = 0; k < current.node_count(); ++k) busy.push_back(current.node(k).host);
  for (const spare_host& s : spares) busy.emplace_back(s.host);
  std::sort(busy.begin(), busy.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < p.first.node_count(); ++i) {
    const std::string_view host = p.first.node(i).host;
    if (held_by_own[i] || std::binary_search(busy.begin(), busy.end(), host)) continue;
    if (std::find(out.begin(), out.end(), host) == out.end()) out.emplace_back(host);
  }
  return out;
}

/// What the hosts that answered again change.
struct grow_decision {
  /// The first topology's nodes that re-enter on their own hosts, ascending.
  std::vector<std::size_t> readmitted;
  /// The returned hosts whose place a spare holds: they stand by, with their node's nproc.
  std::vector<spare_host> new_spares;
  /// Whether anything changes: a restart is worth it only when a node re-enters.
  [[nodiscard]] bool grows() const noexcept { return !readmitted.empty(); }
};

/// Which of the `returned` hosts (hosts_that_left that answered) re-enter: each first-topology
/// node that is out and whose host returned takes its place again; a returned host whose place
/// a spare holds joins the spares. A host not among hosts_that_left changes nothing. O(N + R)
/// expected.
[[nodiscard]] inline grow_decision decide_grow(const job_places& p, const cluster& current,
                                               const std::vector<spare_host>& spares,
                                               const std::vector<std::string>& returned) {
  grow_decision g;
  std::vector<std::string> left = hosts_that_left(p, current, spares);
  std::sort(left.begin(), left.end());
  std::vector<bool> in_job(p.first.node_count(), false);
  for (std::size_t place : p.places)
    if (place < in_job.size()) in_job[place] = true;
  std::vector<std::string_view> answered;
  for (const std::string& host : returned)
    if (std::binary_search(left.begin(), left.end(), host)) answered.emplace_back(host);
  std::sort(answered.begin(), answered.end());
  std::vector<std::string_view> spared;  // one spare a host, whatever its node count
  for (std::size_t i = 0; i < p.first.node_count(); ++i) {
    const node_spec n = p.first.node(i);
    if (!std::binary_search(answered.begin(), answered.end(), n.host)) continue;
    if (!in_job[i])
      g.readmitted.push_back(i);
    else
      spared.push_back(n.host);
  }
  std::sort(spared.begin(), spared.end());
  spared.erase(std::unique(spared.begin(), spared.end()), spared.end());
  // In the first topology's order, with the nproc of the host's first node.
  for (std::size_t i = 0; i < p.first.node_count() && !spared.empty(); ++i) {
    const node_spec n = p.first.node(i);
    const auto at = std::lower_bound(spared.begin(), spared.end(), n.host);
    if (at == spared.end() || *at != n.host) continue;
    g.new_spares.push_back({std::string(n.host), n.nproc});
    spared.erase(at);
  }
  return g;
}

/// The next attempt after a grow: every node of `current` in its place, and each readmitted
/// node in its own, in the first topology's order. Every node has its record as first given
/// (weight, ceiling, role, nproc); a node on a spare keeps the spare's host, and a node on its
/// own host its devices. Precondition: `g` came from decide_grow over `p` and `current`. O(N).
[[nodiscard]] inline job_places grow_places(const job_places& p, const grow_decision& g) {
  job_places next{p.first, {}};
  std::size_t a = 0, b = 0;
  while (a < p.places.size() || b < g.readmitted.size()) {
    if (b == g.readmitted.size() || (a < p.places.size() && p.places[a] < g.readmitted[b]))
      next.places.push_back(p.places[a++]);
    else
      next.places.push_back(g.readmitted[b++]);
  }
  return next;
}

/// The topology of `next` (grow_places of `p`), with each node's host: its host in `current`
/// when it held its place there (its own, or a spare's), else its own.
[[nodiscard]] inline cluster grow_topology(const job_places& p, const cluster& current,
                                           const job_places& next) {
  cluster_builder builder;
  std::vector<std::size_t> from_current(next.places.size(), current.node_count());
  std::size_t k = 0;
  for (std::size_t j = 0; j < next.places.size(); ++j) {
    while (k < p.places.size() && p.places[k] < next.places[j]) ++k;
    if (k < p.places.size() && p.places[k] == next.places[j]) from_current[j] = k;
  }
  for (std::size_t j = 0; j < next.places.size(); ++j) {
    node_spec n = p.first.node(next.places[j]);  // the record as first given
    if (from_current[j] < current.node_count()) n.host = current.node(from_current[j]).host;
    builder.add(n);
  }
  cluster out = builder.finish();
  for (std::size_t j = 0; j < next.places.size(); ++j) {
    const std::size_t i = next.places[j];
    const bool own_host = out.node(j).host == p.first.node(i).host;
    if (own_host && !p.first.devices(i).empty()) out.set_devices(j, p.first.devices(i));
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_GROW_BACK_HPP
// ---- hetlaunch/checkpoint_line.hpp
// hetlaunch: the line a training script's rank 0 prints once a checkpoint is complete on every
// rank (hetlaunch_shares.checkpoint_saved): `HETLAUNCH_CHECKPOINT {"step": S}`. A launcher reads
// it to restart the job at a moment that loses no work (growing back, leaving a slow node out).
#ifndef HETLAUNCH_CHECKPOINT_LINE_HPP
#define HETLAUNCH_CHECKPOINT_LINE_HPP

#include <cmath>

// ---- hetlaunch/calibration.hpp
// hetlaunch: weights from measured speeds. A calibration run measures each node's samples per
// second per worker; the weights a hostfile needs are those speeds over the slowest node's, as
// exact decimals. Also the line a calibrating script prints, read strictly: `hetlaunch
// calibrate` trusts no number it has not checked.
#ifndef HETLAUNCH_CALIBRATION_HPP
#define HETLAUNCH_CALIBRATION_HPP



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
// ---- hetlaunch/rank_health.hpp
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
// ---- hetlaunch/failure_report.hpp
// hetlaunch: a failed worker's own report, the root cause a scheduler acts on. torchrun writes
// the error of a worker whose entry point is wrapped in @record
// (torch.distributed.elastic.multiprocessing.errors) to the worker's TORCHELASTIC_ERROR_FILE.
// The line writer of a node's workers (ssh.hpp) relays the first line of that error, once the
// worker has ended, as `HETLAUNCH_ERROR {"rank": R, "local_rank": L, "error": "..."}`; torchrun's
// own "failed (exitcode: N) local_rank: L" line names which worker failed first and its exit code.
#ifndef HETLAUNCH_FAILURE_REPORT_HPP
#define HETLAUNCH_FAILURE_REPORT_HPP



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
// ---- hetlaunch/preflight.hpp
// hetlaunch: preflight, what each host's Python says of its torch, CUDA, NCCL and GPUs, and
// whether a job across those hosts can run at all. Nodes of different generations carry
// different torch builds; a job whose nodes disagree hangs or dies at its first collective, with
// an error that names neither node. The rules refuse it before any node starts, naming the hosts
// and both versions.
#ifndef HETLAUNCH_PREFLIGHT_HPP
#define HETLAUNCH_PREFLIGHT_HPP



namespace hetlaunch {

/// What a host's preflight answer line begins with; its JSON follows.
inline constexpr std::string_view host_facts_prefix = "HETLAUNCH_FACTS ";

/// One GPU as torch sees it.
struct gpu_facts {
  std::string name;
  int major = 0;  ///< compute capability, torch.cuda.get_device_capability
  int minor = 0;
};

/// A host's facts: its Python, and torch's versions and devices there.
struct host_facts {
  std::string host;
  std::string python;                ///< platform.python_version()
  std::optional<std::string> torch;  ///< torch.__version__; none: torch cannot be imported
  std::string torch_error;           ///< why it cannot (the import's first line)
  std::optional<std::string> cuda;   ///< torch.version.cuda; none: a CPU build
  std::optional<std::string> nccl;   ///< "2.21.5"; none: no NCCL (a CPU build)
  std::vector<gpu_facts> gpus;       ///< torch.cuda's devices, in order
};

/// The Python program a host runs for its facts: it prints one line, host_facts_prefix and the
/// JSON parse_host_facts reads, and exits 0 whether or not torch imports. Single quotes never
/// appear in it (it is sent inside them).
inline std::string_view host_facts_program() {
  return R"py(import json, platform
f = {"python": platform.python_version(), "torch": None, "cuda": None, "nccl": None, "gpus": []}
try:
    import torch
except Exception as e:
    f["torch_error"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
else:
    f["torch"] = str(torch.__version__)
    f["cuda"] = torch.version.cuda
    try:
        if torch.version.cuda is not None:
            v = torch.cuda.nccl.version()
            if isinstance(v, int):
                v = (v // 10000, v % 10000 // 100, v % 100) if v >= 10000 else (v // 1000, v % 1000 // 100, v % 100)
            f["nccl"] = ".".join(str(x) for x in v)
        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                c = torch.cuda.get_device_capability(i)
                f["gpus"].append({"name": str(torch.cuda.get_device_name(i)), "capability": "%d.%d" % (c[0], c[1])})
    except Exception as e:
        f["gpu_error"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
print("HETLAUNCH_FACTS " + json.dumps(f))
)py";
}

/// Reads the JSON of a HETLAUNCH_FACTS line (after the prefix) as host `host`'s facts:
/// {"python": "3.11.2", "torch": "2.6.0" | null, "torch_error": "...", "cuda": "12.4" | null,
/// "nccl": "2.21.5" | null, "gpus": [{"name": "...", "capability": "8.0"}, ...]}; python, torch and
/// gpus are required. Other keys are skipped (keys are only ever added). Refused, with the column
/// (bad_host_facts): text that is not such an object, a key given twice, a capability that is not
/// MAJOR.MINOR, more than 4,096 GPUs. O(text).
[[nodiscard]] inline result<host_facts, parse_error> parse_host_facts(std::string_view text,
                                                                      std::string_view host) {
  detail::measured_reader r(text, errc::bad_host_facts);
  host_facts f;
  f.host = std::string(host);
  static constexpr std::array<std::string_view, 6> keys = {"python", "torch", "gpus",
                                                           "cuda",   "nccl",  "torch_error"};
  std::string key, value;
  const auto optional_string = [&](std::optional<std::string>& out) {
    if (r.null()) return true;
    if (!r.string(value)) return false;
    out = value;
    return true;
  };
  const auto capability = [&](gpu_facts& g) {
    const std::size_t column = r.next_column();
    if (!r.string(value)) return false;
    const std::size_t dot = value.find('.');
    const auto major = parse_integer(std::string_view(value).substr(0, dot), 0, 1000);
    const auto minor = dot == std::string::npos
                           ? std::nullopt
                           : parse_integer(std::string_view(value).substr(dot + 1), 0, 1000);
    if (!major || !minor)
      return r.fail_at(
          column, detail::concat("capability must be MAJOR.MINOR, got ", detail::quoted(value)));
    g.major = static_cast<int>(*major);
    g.minor = static_cast<int>(*minor);
    return true;
  };
  const auto gpu = [&]() {
    gpu_facts g;
    if (!r.expect('{')) return false;
    if (!r.eat('}')) {
      do {
        if (!(r.string(key) && r.expect(':'))) return false;
        if (key == "name") {
          if (!r.string(g.name)) return false;
        } else if (key == "capability") {
          if (!capability(g)) return false;
        } else if (!r.skip(3)) {
          return false;
        }
      } while (r.eat(','));
      if (!r.expect('}')) return false;
    }
    if (f.gpus.size() == 4096) return r.fail("more than 4096 GPUs");
    f.gpus.push_back(std::move(g));
    return true;
  };
  const auto take = [&](std::size_t k) -> bool {
    const std::string_view name = keys[k];
    if (name == "python") return r.string(f.python);
    if (name == "torch") return optional_string(f.torch);
    if (name == "torch_error") return r.null() || r.string(f.torch_error);
    if (name == "cuda") return optional_string(f.cuda);
    if (name == "nccl") return optional_string(f.nccl);
    // gpus
    if (!r.expect('[')) return false;
    if (r.eat(']')) return true;
    do
      if (!gpu()) return false;
    while (r.eat(','));
    return r.expect(']');
  };
  const auto read = [&] { return r.object(keys, 3, take); };
  if (!read()) return r.error();
  return f;
}

/// The first `parts` dot-separated numbers of a version ("2.14.1+debian" → "2.14" for 2,
/// "12.4" → "12" for 1): the part preflight compares. A version with fewer parts is kept whole.
[[nodiscard]] inline std::string version_prefix(std::string_view version, int parts) {
  std::size_t end = 0;
  for (int k = 0; k < parts; ++k) {
    end = version.find_first_not_of("0123456789", end);
    if (end == std::string_view::npos) return std::string(version);
    if (k + 1 < parts) {
      if (version[end] != '.') return std::string(version.substr(0, end));
      ++end;
    }
  }
  return std::string(version.substr(0, end));
}

/// Why a set of hosts cannot run one job.
enum class preflight_issue {
  no_torch,       ///< host_a cannot import torch (value_a: why)
  torch_differs,  ///< host_a's torch major.minor is not host_b's
  cuda_differs,   ///< CUDA major (or a CUDA build beside a CPU build)
  nccl_differs,   ///< NCCL major.minor
  gpus_on_some,   ///< host_a has GPUs, host_b none
  too_few_gpus,   ///< host_a has fewer GPUs (value_a) than its nproc (value_b)
};

/// One refusal, with the hosts and values it names, and its sentence.
struct preflight_problem {
  preflight_issue issue = preflight_issue::no_torch;
  std::string host_a, value_a, host_b, value_b;
  std::string message;
};

/// What preflight concludes.
struct preflight_verdict {
  std::vector<preflight_problem> problems;  ///< empty: the job may start
  /// The least compute capability over every GPU ("7.5"), and whether every GPU has bf16 (8.0
  /// or more): none when the hosts have no GPU.
  std::optional<std::string> min_capability;
  std::optional<bool> bf16;
  bool passes() const noexcept { return problems.empty(); }
};

namespace detail {
inline std::string or_none(const std::optional<std::string>& v, std::string_view none) {
  return v ? *v : std::string(none);
}
}  // namespace detail

/// Whether hosts with these facts can run one job, `nproc[i]` workers on host i (nproc may be
/// shorter than hosts: those hosts are not checked for GPUs against a count). Each host is
/// compared with the first host that has torch: torch major.minor, CUDA major (a CPU build
/// beside a CUDA build differs too), NCCL major.minor; a host without torch, hosts with GPUs
/// beside hosts with none, and a host with GPUs but fewer than its nproc are refused. A job of
/// CPU-only hosts (gloo) passes on versions alone. Each problem names the hosts and both values.
/// O(hosts + GPUs).
[[nodiscard]] inline preflight_verdict check_preflight(const std::vector<host_facts>& hosts,
                                                       const std::vector<int>& nproc = {}) {
  preflight_verdict v;
  const auto problem = [&v](preflight_issue issue, const host_facts& a, std::string value_a,
                            const host_facts* b, std::string value_b, std::string message) {
    v.problems.push_back({issue, a.host, std::move(value_a), b ? b->host : std::string(),
                          std::move(value_b), std::move(message)});
  };
  const host_facts* first = nullptr;
  for (const host_facts& h : hosts)
    if (h.torch && !first) first = &h;
  for (const host_facts& h : hosts)
    if (!h.torch)
      problem(preflight_issue::no_torch, h, h.torch_error, nullptr, "",
              detail::concat("host ", detail::quoted(h.host), " (Python ", h.python,
                             ") cannot import torch", h.torch_error.empty() ? "" : ": ",
                             h.torch_error));
  const host_facts* with_gpus = nullptr;
  const host_facts* without_gpus = nullptr;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const host_facts& h = hosts[i];
    const host_facts*& kind = h.gpus.empty() ? without_gpus : with_gpus;
    if (!kind) kind = &h;
    if (!h.gpus.empty() && i < nproc.size() && static_cast<int>(h.gpus.size()) < nproc[i])
      problem(preflight_issue::too_few_gpus, h, std::to_string(h.gpus.size()), nullptr,
              std::to_string(nproc[i]),
              detail::concat("host ", detail::quoted(h.host), " has ", h.gpus.size(), " GPU",
                             h.gpus.size() == 1 ? "" : "s", " for its ", nproc[i], " workers"));
    if (!h.torch || !first || &h == first) continue;
    // `mine`, `theirs`: the parts compared, of this host and of the first one.
    const auto differs = [&](preflight_issue issue, const char* what, const std::string& mine,
                             const std::string& theirs, const std::string& full_mine,
                             const std::string& full_theirs) {
      if (mine == theirs) return;
      problem(issue, *first, full_theirs, &h, full_mine,
              detail::concat("hosts ", detail::quoted(first->host), " and ", detail::quoted(h.host),
                             " differ in ", what, ": ", full_theirs, " and ", full_mine));
    };
    differs(preflight_issue::torch_differs, "torch (major.minor)", version_prefix(*h.torch, 2),
            version_prefix(*first->torch, 2), *h.torch, *first->torch);
    const std::string my_cuda = detail::or_none(h.cuda, "none (a CPU build)");
    const std::string their_cuda = detail::or_none(first->cuda, "none (a CPU build)");
    differs(preflight_issue::cuda_differs, "CUDA (major)", h.cuda ? version_prefix(*h.cuda, 1) : "",
            first->cuda ? version_prefix(*first->cuda, 1) : "", my_cuda, their_cuda);
    if (h.nccl && first->nccl)
      differs(preflight_issue::nccl_differs, "NCCL (major.minor)", version_prefix(*h.nccl, 2),
              version_prefix(*first->nccl, 2), *h.nccl, *first->nccl);
  }
  if (with_gpus && without_gpus)
    problem(preflight_issue::gpus_on_some, *with_gpus, std::to_string(with_gpus->gpus.size()),
            without_gpus, "0",
            detail::concat("host ", detail::quoted(with_gpus->host), " has ",
                           with_gpus->gpus.size(), " GPU", with_gpus->gpus.size() == 1 ? "" : "s",
                           " and host ", detail::quoted(without_gpus->host),
                           " none: one job cannot use both (NCCL needs a GPU a rank)"));
  const gpu_facts* least = nullptr;
  bool bf16 = true;
  for (const host_facts& h : hosts)
    for (const gpu_facts& g : h.gpus) {
      if (!least || g.major < least->major || (g.major == least->major && g.minor < least->minor))
        least = &g;
      bf16 = bf16 && g.major >= 8;
    }
  if (least) {
    v.min_capability = detail::concat(least->major, ".", least->minor);
    v.bf16 = bf16;
  }
  return v;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_PREFLIGHT_HPP
// ---- hetlaunch/metrics.hpp
// hetlaunch: a running job as a Prometheus text exposition (format 0.0.4), the file that
// node_exporter's textfile collector reads: the job's attempt, world size and restarts, whether
// each node runs, and each rank's step and rates against its own expected rate. A monitor alerts
// on a slow or hung rank from these alone, without reading the job's events.
#ifndef HETLAUNCH_METRICS_HPP
#define HETLAUNCH_METRICS_HPP



namespace hetlaunch {

/// A node of the job as the metrics show it.
struct node_metrics {
  std::size_t node = 0;
  std::string host;
  bool up = false;  ///< its launcher runs (started, not yet ended)
};

/// A rank that reported its progress.
struct rank_metrics {
  long long rank = 0;
  std::size_t node = 0;
  std::string host;
  long long step = 0;
  double samples_per_second = 0;  ///< its last window's rate; 0: no window yet (not shown)
  double expected = 0;            ///< its own expected rate; 0: too few windows yet (not shown)
  double seconds_since_progress = 0;
};

/// Everything one exposition shows.
struct job_metrics {
  long long attempt = 0;  ///< 0 for the first attempt, as the events count them
  long long world_size = 0;
  long long restarts = 0;  ///< restarts of every kind so far (a failure's, a grow-back's, ...)
  std::vector<node_metrics> nodes;
  std::vector<rank_metrics> ranks;
};

namespace detail {
// A label value as the text format quotes it: backslash, double quote and line feed escaped.
inline void append_label_value(std::string& out, std::string_view v) {
  out += '"';
  for (const char ch : v) {
    if (ch == '\\' || ch == '"') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  out += '"';
}

// A sample value as the text format writes it: NaN, +Inf and -Inf by name.
inline std::string metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return number_text(v);
}

inline void append_family(std::string& out, std::string_view name, std::string_view type,
                          std::string_view help) {
  out += concat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

inline void append_rank_sample(std::string& out, std::string_view name, const rank_metrics& r,
                               std::string_view value) {
  out += concat(name, "{rank=\"", r.rank, "\",node=\"", r.node, "\",host=");
  append_label_value(out, r.host);
  out += concat("} ", value, "\n");
}
}  // namespace detail

/// The exposition of `m`: each family once, with HELP and TYPE, its samples together, no
/// timestamps (the textfile collector refuses them), and labels quoted as the format says. A
/// rank's rate appears once it has a window, its expected rate once it has one, so that an alert
/// comparing the two never fires on a rank still starting. O(nodes + ranks).
[[nodiscard]] inline std::string metrics_exposition(const job_metrics& m) {
  std::string out;
  out.reserve(512 + 96 * m.nodes.size() + 480 * m.ranks.size());
  detail::append_family(out, "hetlaunch_job_attempt", "gauge",
                        "The job's attempt, 0 for the first (hetlaunch run's events count alike).");
  out += detail::concat("hetlaunch_job_attempt ", m.attempt, "\n");
  detail::append_family(out, "hetlaunch_job_world_size", "gauge",
                        "Worker processes of the attempt running.");
  out += detail::concat("hetlaunch_job_world_size ", m.world_size, "\n");
  detail::append_family(out, "hetlaunch_restarts_total", "counter",
                        "Restarts of the job so far, of any reason.");
  out += detail::concat("hetlaunch_restarts_total ", m.restarts, "\n");
  detail::append_family(out, "hetlaunch_node_up", "gauge",
                        "1 while the node's launcher runs, else 0.");
  for (const node_metrics& n : m.nodes) {
    out += detail::concat("hetlaunch_node_up{node=\"", n.node, "\",host=");
    detail::append_label_value(out, n.host);
    out += n.up ? "} 1\n" : "} 0\n";
  }
  struct rank_family {
    std::string_view name, help;
    double rank_metrics::*field;
    bool zero_is_unknown;
  };
  static constexpr rank_family families[] = {
      {"hetlaunch_rank_step", "The step the rank last reported.", nullptr, false},
      {"hetlaunch_rank_samples_per_second",
       "The rank's samples per second of computation over its last window.",
       &rank_metrics::samples_per_second, true},
      {"hetlaunch_rank_expected_samples_per_second",
       "The rank's own expected rate: the median of its earlier healthy windows.",
       &rank_metrics::expected, true},
      {"hetlaunch_rank_seconds_since_progress", "Seconds since the rank's last progress report.",
       &rank_metrics::seconds_since_progress, false},
  };
  for (const rank_family& f : families) {
    detail::append_family(out, f.name, "gauge", f.help);
    for (const rank_metrics& r : m.ranks) {
      if (!f.field) {  // a step is a whole number, written whole
        detail::append_rank_sample(out, f.name, r, detail::concat(r.step));
        continue;
      }
      const double value = r.*f.field;
      if (f.zero_is_unknown && !(value > 0)) continue;
      detail::append_rank_sample(out, f.name, r, detail::metric_value(value));
    }
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_METRICS_HPP
// ---- hetlaunch/step_prediction.hpp
// hetlaunch: which nodes pay their way. From each node's measured rate (samples per second of one
// worker), each node's own work between steps (its optimizer's step, loop and loader) and the
// gradient all-reduce (of the whole job, and of the job without each node: an all-reduce is as
// slow as its slowest member), the predicted step of the whole job and of the job without each
// node: the global batch split again over the rest by their rates, and the step as long as its
// slowest rank's share over its rate plus its own work between steps, plus the all-reduce. A
// node whose removal shortens the step slows the job.
#ifndef HETLAUNCH_STEP_PREDICTION_HPP
#define HETLAUNCH_STEP_PREDICTION_HPP



namespace hetlaunch {

/// The predicted step of a job of some of the nodes.
struct predicted_step {
  std::optional<std::size_t> without;  ///< the node left out; none: the whole job
  double step_seconds = 0;
  /// Whether leaving that node out shortens the step (never for the whole job).
  bool slows_the_job = false;
  double allreduce_seconds = 0;  ///< the all-reduce the step counts
};

/// The longest of the ranks' share over their rate plus their node's `overhead_seconds`, with
/// `global_batch` split over `nodes` (their nproc and ceilings as given) by weights from `rates`
/// (one a node, samples per second of one worker, above 0), plus `allreduce_seconds`; none when
/// that split is refused, a figure of seconds is not 0 to max_measured_seconds, or a rank's
/// share over its rate is past it. `overhead_seconds`:
/// one a node, or empty for none.
[[nodiscard]] inline std::optional<double> predict_step(
    const cluster& nodes, const std::vector<double>& rates, int global_batch,
    double allreduce_seconds, const std::vector<double>& overhead_seconds = {}) {
  if (rates.size() != nodes.node_count() || nodes.node_count() == 0) return std::nullopt;
  if (!overhead_seconds.empty() && overhead_seconds.size() != nodes.node_count())
    return std::nullopt;
  const auto seconds = [](double v) { return v >= 0 && v <= max_measured_seconds; };
  if (!seconds(allreduce_seconds)) return std::nullopt;
  for (const double own : overhead_seconds)
    if (!seconds(own)) return std::nullopt;
  const auto weights = weights_from_rates(rates);
  if (!weights) return std::nullopt;
  cluster_builder weighted;
  for (std::size_t i = 0; i < nodes.node_count(); ++i) {
    node_spec n = nodes.node(i);
    n.weight = (*weights)[i];
    weighted.add(n);
  }
  const cluster split_over = weighted.finish();
  const auto split = split_batch(split_over, global_batch);
  if (!split) return std::nullopt;
  double slowest = 0;
  for (std::size_t i = 0; i < nodes.node_count(); ++i) {
    // Local rank 0 takes the most samples of its node.
    const rank_batch most = batch_of_rank((*split)[i], nodes.nproc(i), 0);
    const double share_seconds = most.batch / rates[i];
    // A rate so low that its share takes past max_measured_seconds is no measurement to plan by
    // (a rate of 1e-300 would predict a step of 1e300 s).
    if (!(share_seconds <= max_measured_seconds)) return std::nullopt;
    const double own = overhead_seconds.empty() ? 0.0 : overhead_seconds[i];
    slowest = std::max(slowest, share_seconds + own);
  }
  return slowest + allreduce_seconds;
}

/// The whole job's predicted step, then the job's without each node in turn (when it has more
/// than one), each marked when it is shorter than the whole job's. A job without a node whose
/// split is refused (the global batch cannot be split over the rest) is left out. The job
/// without node j has the all-reduce `allreduce_seconds_without[j]` (one a node; empty: the
/// whole job's, `allreduce_seconds`). O(N^2).
[[nodiscard]] inline std::vector<predicted_step> predict_steps(
    const cluster& nodes, const std::vector<double>& rates, int global_batch,
    double allreduce_seconds, const std::vector<double>& overhead_seconds = {},
    const std::vector<double>& allreduce_seconds_without = {}) {
  if (!allreduce_seconds_without.empty() && allreduce_seconds_without.size() != nodes.node_count())
    return {};
  for (const double allreduce : allreduce_seconds_without)
    if (!(allreduce >= 0 && allreduce <= max_measured_seconds)) return {};
  std::vector<predicted_step> out;
  const std::optional<double> whole =
      predict_step(nodes, rates, global_batch, allreduce_seconds, overhead_seconds);
  if (!whole) return out;
  out.push_back({std::nullopt, *whole, false, allreduce_seconds});
  if (nodes.node_count() < 2) return out;
  for (std::size_t left_out = 0; left_out < nodes.node_count(); ++left_out) {
    cluster_builder rest;
    std::vector<double> rest_rates, rest_overheads;
    for (std::size_t i = 0; i < nodes.node_count(); ++i)
      if (i != left_out) {
        rest.add(nodes.node(i));
        rest_rates.push_back(rates[i]);
        if (!overhead_seconds.empty()) rest_overheads.push_back(overhead_seconds[i]);
      }
    const double allreduce =
        allreduce_seconds_without.empty() ? allreduce_seconds : allreduce_seconds_without[left_out];
    const std::optional<double> without =
        predict_step(rest.finish(), rest_rates, global_batch, allreduce, rest_overheads);
    if (without) out.push_back({left_out, *without, *without < *whole, allreduce});
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_STEP_PREDICTION_HPP
// ---- hetlaunch/cpu_topology.hpp
// hetlaunch: a machine's CPUs, NUMA nodes, cores, caches and GPUs' PCI devices as Linux's sysfs
// describes them, read through a function the caller gives (the library opens no file).
#ifndef HETLAUNCH_CPU_TOPOLOGY_HPP
#define HETLAUNCH_CPU_TOPOLOGY_HPP

#include <functional>
#include <map>


namespace hetlaunch {

/// Why a CPU list, a topology or a binding could not be had: the library's one error, without a
/// line (`message` names what and where). Its code: bad_cpu_topology, bad_syntax (a CPU or PCI
/// list), bad_visible_devices, no_binding, or nul_byte for a text no file can hold. A sysfs
/// reader says why a file cannot be read as `binding_error{"cannot be read: ..."}`.
using binding_error = parse_error;

/// CPU numbers, ascending and distinct.
using cpu_list = std::vector<unsigned>;

/// The highest CPU number a list may name. Linux's own limit (NR_CPUS) is at most 8,192; the bound
/// keeps a hostile "0-4294967295" from taking gigabytes.
inline constexpr unsigned max_cpu_number = 65535;

namespace detail {

inline std::string_view trimmed(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n' ||
                           text.front() == '\r'))
    text.remove_prefix(1);
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

// A decimal of at most `max`, with an optional '-' when `negative_allowed`.
inline std::optional<long long> small_integer(std::string_view text, long long max,
                                              bool negative_allowed) {
  text = trimmed(text);
  const bool negative = negative_allowed && !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  long long value = 0;
  if (!parse_decimal(text, max, value)) return std::nullopt;
  return negative ? -value : value;
}

}  // namespace detail

/// A Linux CPU list ("0-3,8,10-11", as in sysfs's cpulist files and taskset -c): surrounding
/// blank space and a trailing newline are ignored, the empty list is valid. Numbers above
/// max_cpu_number, a range whose end is below its start, and anything but digits, '-' and ','
/// are errors.
[[nodiscard]] inline result<cpu_list, binding_error> parse_cpulist(std::string_view text) {
  const std::string_view list = detail::trimmed(text);
  std::vector<std::pair<unsigned, unsigned>> ranges;
  std::size_t start = 0;
  while (start < list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view item = detail::trimmed(list.substr(start, end - start));
    const std::size_t dash = item.find('-');
    const auto first = detail::small_integer(item.substr(0, dash), max_cpu_number, false);
    const auto last = dash == std::string_view::npos
                          ? first
                          : detail::small_integer(item.substr(dash + 1), max_cpu_number, false);
    if (!first || !last || *last < *first)
      return binding_error{
          detail::concat("not a CPU list: ", detail::quoted(text), " (at ", detail::quoted(item),
                         "; CPUs are numbered 0 to ", max_cpu_number, ")"),
          errc::bad_syntax};
    if (end + 1 == list.size())
      return binding_error{
          detail::concat("not a CPU list: ", detail::quoted(text), " (ends with ',')"),
          errc::bad_syntax};
    ranges.emplace_back(static_cast<unsigned>(*first), static_cast<unsigned>(*last));
    start = end + 1;
  }
  // Sorted ranges, merged as they are emitted: the work is bounded by the input and the CPU count.
  std::sort(ranges.begin(), ranges.end());
  cpu_list out;
  for (const auto& [first, last] : ranges)
    for (unsigned cpu = out.empty() ? first : std::max(first, out.back() + 1);
         cpu <= last && (out.empty() || cpu > out.back()); ++cpu)
      out.push_back(cpu);
  return out;
}

/// The list as Linux writes it: ascending, runs merged ("0-3,8,10-11"); "" for none.
[[nodiscard]] inline std::string format_cpulist(const cpu_list& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += detail::concat("-", cpus[j]);
    i = j + 1;
  }
  return out;
}

/// The CPUs in both lists.
[[nodiscard]] inline cpu_list cpu_intersection(const cpu_list& a, const cpu_list& b) {
  cpu_list out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

/// The CPUs in either list.
[[nodiscard]] inline cpu_list cpu_union(const cpu_list& a, const cpu_list& b) {
  cpu_list out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

/// A GPU as the node's driver numbers it: its physical index (nvidia-smi's, PCI bus order) and
/// its PCI address in sysfs's form ("0000:07:00.0").
struct gpu_device {
  unsigned index = 0;
  std::string pci;
  friend bool operator==(const gpu_device& a, const gpu_device& b) {
    return a.index == b.index && a.pci == b.pci;
  }
};

/// A PCI address in the form sysfs names it (`0000:3b:00.0`: a domain of at least 4 lower-case hex
/// digits, bus, device, function), from nvidia-smi's (`00000000:3B:00.0`, an 8-digit upper-case
/// domain) or sysfs's own.
[[nodiscard]] inline result<std::string, binding_error> sysfs_pci_address(
    std::string_view address) {
  const std::string_view a = detail::trimmed(address);
  const auto bad = [&] {
    return binding_error{
        detail::concat("not a PCI address: ", detail::quoted(address),
                       " (expected DOMAIN:BUS:DEVICE.FUNCTION, as 00000000:07:00.0)"),
        errc::bad_syntax};
  };
  const std::size_t c1 = a.find(':');
  const std::size_t c2 = c1 == std::string_view::npos ? c1 : a.find(':', c1 + 1);
  const std::size_t dot = c2 == std::string_view::npos ? c2 : a.find('.', c2 + 1);
  if (dot == std::string_view::npos) return bad();
  const auto hex = [](std::string_view part, std::size_t min_digits,
                      std::size_t max_digits) -> std::optional<std::string> {
    if (part.size() < min_digits || part.size() > max_digits) return std::nullopt;
    std::string out;
    for (char ch : part) {
      if (ch >= 'A' && ch <= 'F') ch = static_cast<char>(ch - 'A' + 'a');
      if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return std::nullopt;
      out += ch;
    }
    return out;
  };
  std::optional<std::string> domain = hex(a.substr(0, c1), 1, 8);
  const std::optional<std::string> bus = hex(a.substr(c1 + 1, c2 - c1 - 1), 2, 2);
  const std::optional<std::string> device = hex(a.substr(c2 + 1, dot - c2 - 1), 2, 2);
  const std::optional<std::string> function = hex(a.substr(dot + 1), 1, 1);
  if (!domain || !bus || !device || !function || (*function)[0] > '7') return bad();
  while (domain->size() > 4 && domain->front() == '0') domain->erase(0, 1);
  if (domain->size() < 4) domain->insert(0, 4 - domain->size(), '0');
  return detail::concat(*domain, ":", *bus, ":", *device, ".", *function);
}

/// The node's GPUs from `nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader`: one
/// "INDEX, ADDRESS" line each, blank lines ignored, sorted by index. A malformed line, an address
/// that is not one, or an index given twice is an error with its line and column.
[[nodiscard]] inline result<std::vector<gpu_device>> parse_gpu_pci_list(std::string_view text) {
  std::vector<gpu_device> gpus;
  std::size_t line_no = 0;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    ++line_no;
    start = end + 1;
    if (detail::trimmed(line).empty()) continue;
    const std::size_t comma = line.find(',');
    const auto index = comma == std::string_view::npos
                           ? std::nullopt
                           : detail::small_integer(line.substr(0, comma), 0x7fffffff, false);
    if (!index)
      return parse_error{
          line_no, 1,
          detail::concat("expected 'INDEX, PCI ADDRESS' (nvidia-smi --query-gpu=index,pci.bus_id "
                         "--format=csv,noheader), got ",
                         detail::quoted(line))};
    result<std::string, binding_error> pci = sysfs_pci_address(line.substr(comma + 1));
    if (!pci) return parse_error{line_no, comma + 2, pci.error().message};
    for (const gpu_device& g : gpus)
      if (g.index == static_cast<unsigned>(*index))
        return parse_error{line_no, 1, detail::concat("GPU ", *index, " is listed twice")};
    gpus.push_back({static_cast<unsigned>(*index), *std::move(pci)});
  }
  std::sort(gpus.begin(), gpus.end(),
            [](const gpu_device& a, const gpu_device& b) { return a.index < b.index; });
  return gpus;
}

/// What a sysfs tree says about the CPUs, the NUMA nodes and the GPUs' PCI devices. It is read
/// once (`read`); what the tree lacks or garbles is kept as the sentence that says so and is
/// reported only by a query that needs it, as a binding refuses only for what it depends on.
class cpu_topology {
 public:
  /// Reads the tree through `read_file(path)`, for paths relative to the sysfs root
  /// ("devices/system/node/possible"). It returns a file's text, or nothing for a file the tree
  /// lacks: a std::optional<std::string>, or a result<std::optional<std::string>, binding_error>
  /// whose error says why a file that is there cannot be read ("cannot be read: Is a directory"),
  /// which the queries then report after the file's path instead of calling it missing. Reads each GPU's
  /// `bus/pci/devices/ADDRESS/numa_node`, the possible NUMA nodes, the CPU list of each of them and
  /// of each GPU's node, every listed CPU's package, and the core (thread_siblings_list) and
  /// caches of the CPUs on the GPUs' nodes, which are all a binding of these GPUs asks for: pass
  /// the GPUs the workers see (visible_gpus), not necessarily all of the machine's.
  template <class ReadFile>
  [[nodiscard]] static cpu_topology read(ReadFile&& read_file,
                                         const std::vector<gpu_device>& gpus) {
    cpu_topology t;
    const auto missing = [](const std::string& path) {
      return binding_error{detail::concat("the CPU topology has no ", path),
                           errc::bad_cpu_topology};
    };
    // The file's text; nothing for a file the tree lacks; an error for one that is there but
    // cannot be read.
    using file_text = result<std::optional<std::string>, binding_error>;
    const auto text_at = [&](const std::string& path) -> file_text {
      auto text = read_file(path);
      if constexpr (std::is_same_v<std::decay_t<decltype(text)>, std::optional<std::string>>) {
        return file_text(std::move(text));
      } else {
        if (!text)
          return binding_error{
              detail::concat("the CPU topology's ", path, " ", text.error().message),
              errc::bad_cpu_topology};
        return file_text(std::move(*text));
      }
    };
    const auto garbled = [](const std::string& path, const std::string& text,
                            std::string_view expected) {
      return binding_error{
          detail::concat("the CPU topology's ", path, " holds ",
                         detail::quoted(detail::trimmed(text)), ", not ", expected),
          errc::bad_cpu_topology};
    };
    // A file holding a CPU list, an integer, or its text.
    const auto list_at = [&](const std::string& path) -> result<cpu_list, binding_error> {
      const file_text read = text_at(path);
      if (!read) return read.error();
      if (!*read) return missing(path);
      const std::optional<std::string>& text = *read;
      result<cpu_list, binding_error> cpus = parse_cpulist(*text);
      if (!cpus) return garbled(path, *text, "a CPU list");
      return cpus;
    };
    // The lowest CPU of a list. Many CPUs share one list (a core's siblings, a cache shared by a
    // package), which may name every CPU: each text is parsed once, so the work stays that of
    // reading the files, not of the CPUs times the length of their lists.
    // Each text's outcome: not a list (nullopt), the empty list (-1), or its lowest CPU.
    std::map<std::string, std::optional<long long>, std::less<>> lowest_of_text;
    const auto lowest_at =
        [&](const std::string& path) -> result<std::optional<unsigned>, binding_error> {
      const file_text read = text_at(path);
      if (!read) return read.error();
      if (!*read) return missing(path);
      const std::string& text = **read;
      auto known = lowest_of_text.find(text);
      if (known == lowest_of_text.end()) {
        const result<cpu_list, binding_error> cpus = parse_cpulist(text);
        std::optional<long long> outcome;
        if (cpus) outcome = cpus->empty() ? -1 : static_cast<long long>(cpus->front());
        known = lowest_of_text.emplace(text, outcome).first;
      }
      if (!known->second) return garbled(path, text, "a CPU list");
      if (*known->second < 0) return std::optional<unsigned>();
      return std::optional<unsigned>(static_cast<unsigned>(*known->second));
    };
    const auto integer_at = [&](const std::string& path) -> result<long long, binding_error> {
      const file_text read = text_at(path);
      if (!read) return read.error();
      if (!*read) return missing(path);
      const std::optional<std::string>& text = *read;
      const auto value = detail::small_integer(*text, 0x7fffffff, true);
      if (!value) return garbled(path, *text, "an integer");
      return *value;
    };

    for (const gpu_device& g : gpus) {
      const std::string path = detail::concat("bus/pci/devices/", g.pci, "/numa_node");
      result<long long, binding_error> node = integer_at(path);
      t.pci_numa_node_.emplace(g.pci, node ? result<int, binding_error>(static_cast<int>(*node))
                                           : result<int, binding_error>(node.error()));
    }
    t.possible_ = list_at("devices/system/node/possible");
    cpu_list nodes = t.possible_ ? *t.possible_ : cpu_list{};
    for (const auto& [pci, node] : t.pci_numa_node_)
      if (node) nodes = cpu_union(nodes, {static_cast<unsigned>(std::max(*node, 0))});
    cpu_list all, near_gpus;
    for (unsigned n : nodes) {
      result<cpu_list, binding_error> cpus =
          list_at(detail::concat("devices/system/node/node", n, "/cpulist"));
      if (cpus) all = cpu_union(all, *cpus);
      for (const auto& [pci, node] : t.pci_numa_node_)
        if (cpus && node && static_cast<unsigned>(std::max(*node, 0)) == n)
          near_gpus = cpu_union(near_gpus, *cpus);
      t.node_cpus_.emplace(n, std::move(cpus));
    }
    for (unsigned cpu : all) {
      const std::string dir = detail::concat("devices/system/cpu/cpu", cpu, "/");
      cpu_facts f{integer_at(dir + "topology/physical_package_id"), not_read(cpu), not_read(cpu)};
      if (std::binary_search(near_gpus.begin(), near_gpus.end(), cpu)) {
        const std::string siblings = dir + "topology/thread_siblings_list";
        const result<std::optional<unsigned>, binding_error> core = lowest_at(siblings);
        if (!core)
          f.core = core.error();
        else if (!*core)
          f.core = garbled(siblings, "", "a CPU list");
        else
          f.core = **core;
        f.cache_group = largest_cache(text_at, lowest_at, dir, cpu);
      }
      t.cpus_.emplace(cpu, std::move(f));
    }
    t.all_ = std::move(all);
    return t;
  }

  /// devices/system/node/possible.
  [[nodiscard]] result<cpu_list, binding_error> possible_numa_nodes() const { return possible_; }

  /// devices/system/node/nodeN/cpulist.
  [[nodiscard]] result<cpu_list, binding_error> numa_node_cpus(unsigned node) const {
    const auto it = node_cpus_.find(node);
    if (it == node_cpus_.end())
      return binding_error{
          detail::concat("the CPU topology has no devices/system/node/node", node, "/cpulist"),
          errc::bad_cpu_topology};
    return it->second;
  }

  /// The NUMA node sysfs gives the PCI device (bus/pci/devices/ADDRESS/numa_node), which is -1
  /// on machines with one node.
  [[nodiscard]] result<int, binding_error> pci_numa_node(const std::string& pci) const {
    const auto it = pci_numa_node_.find(pci);
    if (it == pci_numa_node_.end())
      return binding_error{
          detail::concat("the CPU topology has no bus/pci/devices/", pci, "/numa_node"),
          errc::bad_cpu_topology};
    return it->second;
  }

  /// topology/physical_package_id: the CPU's socket.
  [[nodiscard]] result<long long, binding_error> package_of(unsigned cpu) const {
    const auto it = cpus_.find(cpu);
    if (it == cpus_.end()) return not_listed(cpu);
    return it->second.package;
  }

  /// The physical core, named by the lowest CPU of its thread_siblings_list (for CPUs on a GPU's
  /// NUMA node).
  [[nodiscard]] result<unsigned, binding_error> core_of(unsigned cpu) const {
    const auto it = cpus_.find(cpu);
    if (it == cpus_.end()) return not_listed(cpu);
    return it->second.core;
  }

  /// The group of CPUs sharing the CPU's highest-level data or unified cache, named by the lowest
  /// CPU of that cache's shared_cpu_list (for CPUs on a GPU's NUMA node).
  [[nodiscard]] result<unsigned, binding_error> cache_group_of(unsigned cpu) const {
    const auto it = cpus_.find(cpu);
    if (it == cpus_.end()) return not_listed(cpu);
    return it->second.cache_group;
  }

  /// Every CPU of the NUMA nodes read.
  [[nodiscard]] const cpu_list& all_cpus() const noexcept { return all_; }

 private:
  struct cpu_facts {
    result<long long, binding_error> package;
    result<unsigned, binding_error> core;
    result<unsigned, binding_error> cache_group;
  };

  static binding_error not_read(unsigned cpu) {
    return binding_error{
        detail::concat("CPU ", cpu,
                       " is on no GPU's NUMA node, so its core and caches were not read"),
        errc::bad_cpu_topology};
  }
  static binding_error not_listed(unsigned cpu) {
    return binding_error{
        detail::concat("CPU ", cpu, " is in no NUMA node's cpulist of the CPU topology"),
        errc::bad_cpu_topology};
  }

  // cache/index0, index1, ... (Linux numbers them without gaps): the first Unified or Data cache
  // of the highest level, as torch's binding code picks it.
  // `text_at(path)`: a file's text or why there is none; `lowest_at(path)`: a list's lowest CPU.
  template <class TextAt, class LowestAt>
  static result<unsigned, binding_error> largest_cache(const TextAt& text_at,
                                                       const LowestAt& lowest_at,
                                                       const std::string& dir, unsigned cpu) {
    long long best_level = -1;
    std::optional<std::string> best;
    for (int index = 0; index < 64; ++index) {
      const std::string cache = detail::concat(dir, "cache/index", index, "/");
      const auto type = text_at(cache + "type");
      // A file that is there but cannot be read is an error wherever it is; no index0 at all is
      // one too, and the first index past the last ends the caches.
      if (!type) return type.error();
      if (!*type) {
        if (index == 0)
          return binding_error{detail::concat("the CPU topology has no ", cache, "type"),
                               errc::bad_cpu_topology};
        break;
      }
      const std::string_view kind = detail::trimmed(**type);
      if (kind != "Unified" && kind != "Data") continue;
      const auto level_text = text_at(cache + "level");
      if (!level_text) return level_text.error();
      const auto level =
          *level_text ? detail::small_integer(**level_text, 1000, false) : std::nullopt;
      if (!level)
        return binding_error{detail::concat("the CPU topology's ", cache, "level is ",
                                            *level_text ? "not a level" : "missing"),
                             errc::bad_cpu_topology};
      if (*level <= best_level) continue;
      best_level = *level;
      best = cache + "shared_cpu_list";
    }
    if (!best)
      return binding_error{
          detail::concat("CPU ", cpu, " has no data or unified cache in the CPU topology"),
          errc::bad_cpu_topology};
    const result<std::optional<unsigned>, binding_error> lowest = lowest_at(*best);
    if (!lowest) return lowest.error();
    if (!*lowest)
      return binding_error{detail::concat("CPU ", cpu, "'s largest cache is shared by no CPU"),
                           errc::bad_cpu_topology};
    return **lowest;
  }

  result<cpu_list, binding_error> possible_ = binding_error{};
  std::map<unsigned, result<cpu_list, binding_error>> node_cpus_;
  std::map<std::string, result<int, binding_error>> pci_numa_node_;
  std::map<unsigned, cpu_facts> cpus_;
  cpu_list all_;
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_CPU_TOPOLOGY_HPP
// ---- hetlaunch/cpu_binding.hpp
// hetlaunch: which CPUs each local rank's worker runs on, by torchrun's --numa-binding modes (the
// rules of torch 2.14's torch/numa/binding.py), computed from a cpu_topology.
#ifndef HETLAUNCH_CPU_BINDING_HPP
#define HETLAUNCH_CPU_BINDING_HPP



namespace hetlaunch {

/// One local rank's binding: its GPU (physical index and PCI address), the GPU's NUMA node (0
/// when sysfs says -1) and the CPUs the worker runs on.
struct local_rank_cpus {
  int local_rank = 0;
  unsigned gpu = 0;
  std::string pci;
  int numa_node = 0;
  cpu_list cpus;
};

/// The GPUs a worker sees, in CUDA's order: CUDA_VISIBLE_DEVICES's physical indices (a comma
/// list), or every GPU of `gpus` by index when it is not set. An index the node does not have,
/// one given twice, or anything but decimal indices (UUIDs, MIG names) is an error.
[[nodiscard]] inline result<std::vector<gpu_device>, binding_error> visible_gpus(
    const std::vector<gpu_device>& gpus, std::optional<std::string_view> cuda_visible_devices) {
  if (!cuda_visible_devices) return gpus;
  std::vector<gpu_device> out;
  const std::string_view list = detail::trimmed(*cuda_visible_devices);
  for (std::size_t start = 0; start < list.size();) {
    std::size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view item = list.substr(start, end - start);
    start = end + 1;
    const auto index = detail::small_integer(item, 0x7fffffff, false);
    if (!index)
      return binding_error{
          detail::concat("the visible devices ", detail::quoted(list), " hold ",
                         detail::quoted(item),
                         ", not a GPU index (UUIDs and MIG devices cannot be bound)"),
          errc::bad_visible_devices};
    const auto found = std::find_if(gpus.begin(), gpus.end(),
                                    [&](const gpu_device& g) { return g.index == *index; });
    if (found == gpus.end()) {
      std::string have;
      for (const gpu_device& g : gpus) have += detail::concat(have.empty() ? "" : ",", g.index);
      return binding_error{
          detail::concat("the visible devices ", detail::quoted(list), " name GPU ", *index,
                         ", which the node does not have (it has ", have.empty() ? "none" : have,
                         ")"),
          errc::bad_visible_devices};
    }
    for (const gpu_device& g : out)
      if (g.index == found->index)
        return binding_error{detail::concat("the visible devices ", detail::quoted(list),
                                            " name GPU ", *index, " twice"),
                             errc::bad_visible_devices};
    out.push_back(*found);
  }
  return out;
}

namespace detail {

struct binding_context {
  const cpu_topology& topology;
  const std::vector<gpu_device>& visible;
  const cpu_list& allowed;
};

// The GPU's NUMA node; -1 (one-node machines) counts as node 0.
inline result<int, binding_error> gpu_numa_node(const binding_context& b,
                                                std::size_t visible_index) {
  result<int, binding_error> node = b.topology.pci_numa_node(b.visible[visible_index].pci);
  if (!node) return node;
  return std::max(*node, 0);
}

inline result<cpu_list, binding_error> allowed_node_cpus(const binding_context& b, unsigned node) {
  result<cpu_list, binding_error> cpus = b.topology.numa_node_cpus(node);
  if (!cpus) return cpus;
  return cpu_intersection(*cpus, b.allowed);
}

// The positions among the visible GPUs of those on `node`: a GPU's share in `exclusive` and
// `core-complex` depends on all of them, whether or not a worker runs on it.
inline result<std::vector<std::size_t>, binding_error> gpus_of_node(const binding_context& b,
                                                                    int node) {
  std::vector<std::size_t> out;
  for (std::size_t j = 0; j < b.visible.size(); ++j) {
    result<int, binding_error> n = gpu_numa_node(b, j);
    if (!n) return n.error();
    if (*n == node) out.push_back(j);
  }
  return out;
}

// CPUs grouped by a key (a core, a cache group), each group ascending, the groups by key.
template <class KeyOf>
result<std::map<unsigned, cpu_list>, binding_error> grouped(const cpu_list& cpus, KeyOf key_of) {
  std::map<unsigned, cpu_list> groups;
  for (unsigned cpu : cpus) {
    result<unsigned, binding_error> key = key_of(cpu);
    if (!key) return key.error();
    groups[*key].push_back(cpu);
  }
  return groups;
}

inline result<long long, binding_error> socket_of_node(const binding_context& b, unsigned node) {
  result<cpu_list, binding_error> cpus = allowed_node_cpus(b, node);
  if (!cpus) return cpus.error();
  if (cpus->empty())
    return binding_error{
        concat("NUMA node ", node, " has no CPU this worker may use, so its socket is unknown"),
        errc::no_binding};
  return b.topology.package_of(cpus->front());
}

inline result<cpu_list, binding_error> socket_cpus(const binding_context& b, int node) {
  result<long long, binding_error> socket = socket_of_node(b, static_cast<unsigned>(node));
  if (!socket) return socket.error();
  result<cpu_list, binding_error> nodes = b.topology.possible_numa_nodes();
  if (!nodes) return nodes;
  cpu_list out;
  for (unsigned n : *nodes) {
    result<long long, binding_error> s = socket_of_node(b, n);
    if (!s) return s.error();
    if (*s != *socket) continue;
    result<cpu_list, binding_error> cpus = allowed_node_cpus(b, n);
    out = cpu_union(out, *cpus);
  }
  return out;
}

// What `exclusive` and `core-complex` split: the node's allowed CPUs grouped by `key_of` (a core,
// a cache), and this GPU's place among the node's visible GPUs.
struct node_split {
  std::size_t position = 0;
  std::size_t gpus = 0;
  std::map<unsigned, cpu_list> groups;
};

template <class KeyOf>
result<node_split, binding_error> split_of_node(const binding_context& b, int node,
                                                std::size_t rank, KeyOf key_of) {
  result<std::vector<std::size_t>, binding_error> gpus = gpus_of_node(b, node);
  if (!gpus) return gpus.error();
  result<cpu_list, binding_error> cpus = allowed_node_cpus(b, static_cast<unsigned>(node));
  if (!cpus) return cpus.error();
  result<std::map<unsigned, cpu_list>, binding_error> groups = grouped(*cpus, key_of);
  if (!groups) return groups.error();
  const std::size_t position =
      static_cast<std::size_t>(std::find(gpus->begin(), gpus->end(), rank) - gpus->begin());
  return node_split{position, gpus->size(), *std::move(groups)};
}

inline result<cpu_list, binding_error> exclusive_cpus(const binding_context& b, int node,
                                                      std::size_t rank) {
  result<node_split, binding_error> split =
      split_of_node(b, node, rank, [&](unsigned cpu) { return b.topology.core_of(cpu); });
  if (!split) return split.error();
  const std::size_t cores = split->groups.size(), position = split->position;
  const std::size_t per_gpu = cores / split->gpus;
  const std::size_t extra = cores % split->gpus;
  if (per_gpu < 1)
    return binding_error{concat("exclusive: NUMA node ", node, " has ", cores, " physical core",
                                cores == 1 ? "" : "s", " this worker may use, fewer than its ",
                                split->gpus, " GPUs"),
                         errc::no_binding};
  const std::size_t first = position * per_gpu + std::min(position, extra);
  const std::size_t count = per_gpu + (position < extra ? 1 : 0);
  cpu_list out;
  std::size_t k = 0;
  for (const auto& core : split->groups) {
    if (k >= first && k < first + count)
      out.insert(out.end(), core.second.begin(), core.second.end());
    ++k;
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline result<cpu_list, binding_error> core_complex_cpus(const binding_context& b, int node,
                                                         std::size_t rank) {
  result<node_split, binding_error> split =
      split_of_node(b, node, rank, [&](unsigned cpu) { return b.topology.cache_group_of(cpu); });
  if (!split) return split.error();
  if (split->groups.empty())
    return binding_error{concat("NUMA node ", node, " has no CPU this worker may use"),
                         errc::no_binding};
  std::vector<std::pair<unsigned, cpu_list>> order(split->groups.begin(), split->groups.end());
  // The groups with the most CPUs the worker may use first, then by their lowest CPU.
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& c) { return a.second.size() > c.second.size(); });
  return order[split->position % order.size()].second;
}

}  // namespace detail

/// The CPUs of local rank `local_rank`'s worker: its GPU is `visible[local_rank]` (the GPUs in
/// CUDA's order, see visible_gpus); the mode's CPUs of that GPU, always within `allowed` (the CPUs
/// the worker may use: its affinity, or every CPU of a recorded tree). Errors, each naming the
/// rank and its GPU: a rank without a GPU, what the topology lacks that the mode needs, no CPU
/// left, and `exclusive` with fewer cores than the node's GPUs.
[[nodiscard]] inline result<local_rank_cpus, binding_error> local_rank_binding(
    const cpu_topology& topology, numa_binding mode, const std::vector<gpu_device>& visible,
    int local_rank, const cpu_list& allowed) {
  if (local_rank < 0 || static_cast<std::size_t>(local_rank) >= visible.size())
    return binding_error{detail::concat("local rank ", local_rank, " has no GPU: the node shows ",
                                        visible.size(), visible.size() == 1 ? " GPU" : " GPUs",
                                        " (CUDA_VISIBLE_DEVICES, --devices)"),
                         errc::no_binding};
  const std::size_t rank = static_cast<std::size_t>(local_rank);
  const gpu_device& gpu = visible[rank];
  const auto failed = [&](const binding_error& e) {
    return binding_error{detail::concat("local rank ", local_rank, " (GPU ", gpu.index, ", ",
                                        gpu.pci, "): ", e.message),
                         e.code};
  };
  const detail::binding_context b{topology, visible, allowed};
  result<int, binding_error> node = detail::gpu_numa_node(b, rank);
  if (!node) return failed(node.error());
  result<cpu_list, binding_error> cpus = binding_error{};
  switch (mode) {
    case numa_binding::none:
      cpus = allowed;
      break;
    case numa_binding::node:
      cpus = detail::allowed_node_cpus(b, static_cast<unsigned>(*node));
      break;
    case numa_binding::socket:
      cpus = detail::socket_cpus(b, *node);
      break;
    case numa_binding::exclusive:
      cpus = detail::exclusive_cpus(b, *node, rank);
      break;
    case numa_binding::core_complex:
      cpus = detail::core_complex_cpus(b, *node, rank);
      break;
  }
  if (!cpus) return failed(cpus.error());
  if (cpus->empty())
    return failed(
        binding_error{detail::concat(numa_binding_name(mode), ": no CPU of NUMA node ", *node,
                                     " is one this worker may use (allowed: ",
                                     allowed.empty() ? "none" : format_cpulist(allowed), ")"),
                      errc::no_binding});
  return local_rank_cpus{local_rank, gpu.index, gpu.pci, *node, *std::move(cpus)};
}

/// local_rank_binding for local ranks 0 to nproc - 1; the first error stops.
[[nodiscard]] inline result<std::vector<local_rank_cpus>, binding_error> local_rank_bindings(
    const cpu_topology& topology, numa_binding mode, const std::vector<gpu_device>& visible,
    int nproc, const cpu_list& allowed) {
  std::vector<local_rank_cpus> out;
  for (int rank = 0; rank < nproc; ++rank) {
    result<local_rank_cpus, binding_error> one =
        local_rank_binding(topology, mode, visible, rank, allowed);
    if (!one) return one.error();
    out.push_back(*std::move(one));
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_CPU_BINDING_HPP
// ---- hetlaunch/ssh.hpp
// hetlaunch: starting a plan's nodes over ssh: each node's ssh command line, the remote command
// that runs torchrun and stops it with all its workers when the connection ends, and the
// environment a launcher forwards. Pure computation; `hetlaunch run` manages the processes.
#ifndef HETLAUNCH_SSH_HPP
#define HETLAUNCH_SSH_HPP



namespace hetlaunch {

/// How a node is reached and what it is given besides torchrun's own command.
struct ssh_options {
  /// The ssh client, word by word.
  std::vector<std::string> program = {"ssh"};
  /// Arguments for ssh before the host: "-o", "BatchMode=yes", "-i", "key", "-p", "2222", ...
  std::vector<std::string> args;
  /// Variables set on the node before torchrun starts, in order (a later one wins). None may be
  /// one the launch owns (worker_variables.hpp): the plan sets those.
  environment env;
  /// A launcher with restarts: the attempt, 0 first, given to every worker as
  /// HETLAUNCH_RESTART_COUNT. -1: none.
  int restart_count = -1;
  /// The directory torchrun runs in on the node; empty: the login directory.
  std::string chdir;
  /// When the connection ends (the launcher stops the node, fails or dies), torchrun and every
  /// process under it get SIGTERM, and SIGKILL this many seconds later if they still run.
  int kill_after = 10;
  /// Each worker's lines reach the node's output whole and begun with "[rank R] " (R its RANK),
  /// stdout to stdout and stderr to stderr. Without it the lines of a node's workers glue
  /// together: torchrun starts them with `python -u`, where print writes a line and its newline
  /// in two writes. It takes effect where rank_lines_apply says.
  bool rank_lines = true;
};

/// The first line a node's remote command writes to its standard output, once torchrun has been
/// started: a launcher reads it to know that the node is up, and does not show it.
constexpr std::string_view node_started_line = "hetlaunch: node started";
/// The line the node script prints last, before it exits with its command's status: "hetlaunch:
/// node ended STATUS". A launcher that saw it knows an ssh status of 255 was the command's own,
/// not a lost connection.
constexpr std::string_view node_ended_prefix = "hetlaunch: node ended ";

namespace detail {

// The worker torchrun starts when rank_lines applies, as `python -u PROGRAM [-m] SCRIPT ARGS`:
// it forks a writer (twice, so that the worker never has it as a child to wait for) and then
// becomes the worker, `python -u [-m] SCRIPT ARGS` under the interpreter torchrun chose, its
// stdout and stderr pipes to the writer. So the worker keeps its pid, its signals, its exit
// status and its error file. The writer reads both pipes until every holder has closed them, cuts
// the bytes at each newline (a progress bar's carriage returns stay in its line, as a launcher
// that shows whole lines shows them), and writes the lines with the prefix in writes of at most
// 4 KiB that end at a line's end (a longer line in one write), each under an exclusive flock of
// the program's file, which every writer of the node shares: a pipe keeps only 4 KiB whole among
// other writers', and a socket nothing. A line
// with no end yet is held up to 16 MiB (the longest measured line) and then written with a
// newline, as is what is held when the pipe closes. It ignores the signals meant for the worker
// (torch 2.x sends them to the whole process group) and ends when the pipes close: then, when the
// worker left an error in its TORCHELASTIC_ERROR_FILE (an entry point wrapped in torch's @record),
// it writes the error's first line as one HETLAUNCH_ERROR line (failure_report.hpp) on stderr.
inline std::string_view rank_lines_program() {
  return R"py(import fcntl, json, os, select, signal, sys
LONGEST = 16 << 20
def put(fd, pieces, lock):
    batch = b""
    for piece in pieces + [b""]:
        if batch and (not piece or len(batch) + len(piece) > 4096):
            try:
                if lock is not None:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                while batch:
                    batch = batch[os.write(fd, batch):]
            except OSError:
                pass
            finally:
                if lock is not None:
                    fcntl.flock(lock, fcntl.LOCK_UN)
            batch = b""
        batch += piece
def pump(into, prefix, lock):
    poller = select.poll()
    held = {}
    for fd in into:
        poller.register(fd, select.POLLIN)
        held[fd] = ([], 0)
    while held:
        for fd, _ in poller.poll():
            if fd not in held:
                continue
            data = os.read(fd, 65536)
            chunks, size = held[fd]
            pieces = []
            last = data.rfind(b"\n")
            if last >= 0:
                text = b"".join(chunks + [data[:last]])
                pieces = [prefix + line + b"\n" for line in text.split(b"\n")]
                chunks, size = [], 0
            if data[last + 1:]:
                chunks.append(data[last + 1:])
                size += len(data) - last - 1
            if chunks and (size >= LONGEST or not data):
                pieces.append(prefix + b"".join(chunks) + b"\n")
                chunks, size = [], 0
            put(into[fd], pieces, lock)
            held[fd] = (chunks, size)
            if not data:
                poller.unregister(fd)
                del held[fd]
def relay_error(prefix, lock):
    try:
        with open(os.environ["TORCHELASTIC_ERROR_FILE"], "rb") as f:
            message = json.loads(f.read(1 << 20).decode("utf-8", "replace"))["message"]
        if isinstance(message, dict):
            message = message["message"]
        line = "".join(c if c >= " " else " " for c in (str(message).splitlines() or [""])[0])
        line = line.encode("utf-8", "replace")[:1024].decode("utf-8", "ignore")
        said = {"rank": int(os.environ["RANK"]), "local_rank": int(os.environ["LOCAL_RANK"]), "error": line}
    except (KeyError, OSError, TypeError, ValueError):
        return
    put(2, [prefix + b"HETLAUNCH_ERROR " + json.dumps(said, ensure_ascii=False).encode("utf-8", "replace") + b"\n"], lock)
def main():
    prefix = ("[rank %s] " % os.environ.get("RANK", "?")).encode()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            if os.fork() == 0:
                for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGPIPE"):
                    signal.signal(getattr(signal, name), signal.SIG_IGN)
                for fd in (0, out_w, err_w):
                    os.close(fd)
                try:
                    lock = os.open(sys.argv[0], os.O_RDONLY)
                except OSError:
                    lock = None
                pump({out_r: 1, err_r: 2}, prefix, lock)
                relay_error(prefix, lock)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    for fd in (out_r, out_w, err_r, err_w):
        os.close(fd)
    try:
        os.execv(sys.executable, [sys.executable, "-u"] + sys.argv[1:])
    except OSError as e:
        os.write(2, ("hetlaunch: cannot start %s: %s\n" % (sys.executable, e)).encode())
        os._exit(127)
main()
)py";
}

// The remote side of a node, a POSIX sh script run as
//   sh -c SCRIPT hetlaunch-node KILL_AFTER DIR COUNT NAME=VALUE... COMMAND...
// It removes the variables the launch owns from the login environment (the plan's are among the
// NAME=VALUEs), starts COMMAND in the background, in a session of its own where setsid exists,
// and watches standard input, which the launcher holds open for as long as the node should run.
// ssh gives a command without a terminal no signal when the connection ends, so end of input is
// the signal: every process of the job then gets SIGTERM, and SIGKILL after KILL_AFTER seconds.
// The job's processes are COMMAND's descendants and every process of a session one of them
// belongs to (NSsid, Linux 4.1 and later), the script's own session never counting. A process
// keeps its session when its parent dies, so a child forked during the teardown whose parent
// then exits (a wrapper's, a worker's started in a session of its own by torch) is still found.
// The first look reads all of /proc/*/status, breadth first from COMMAND (grep -s reads them:
// mawk's getline ends the program at a file whose process ended between its open and its read). A
// later look (once signalled processes have ended, and after SIGKILL) reads only the job's known
// processes and those created since the previous look, and needs no reading at all when the known
// ones are gone and nothing was created: the kernel hands out pids in a cycle, so a process created
// since the previous look has a pid between the pid cursor then and now (the last pid of
// /proc/loadavg), and one that existed then and was not of the job cannot join it later (it can
// neither enter a session of the job nor become a child of a job process). That holds while the
// cursor cannot have gone the whole way round, which takes at least pid_max - 300 pids given out or
// skipped as in use; with fewer than that in forks since (the processes line of /proc/stat) plus
// tasks then, the later look is partial, otherwise it reads everything again (pid_max comes from
// the first look's awk: sh's read takes a /proc/sys file one byte at a time and gets one). Pids
// chosen outright (ns_last_pid, clone3's set_tid: checkpoint and restore, with privilege) are
// outside this. The partial looks spare a host that runs many node scripts most of its work.
// While the job's COMMAND runs, the watcher sleeps until the deadline and is woken when COMMAND
// ends: the script signals it with USR1, whose trap also kills the sleep, so that a signal that
// comes between the watcher's check and its wait still wakes it. Once COMMAND is gone it checks
// the signalled processes every 0.1 s for a second (most end within it), then at doubling
// intervals up to a second. A process that appears while none ends gets SIGKILL at the deadline.
// SIGTERM goes once to each process, SIGKILL to all that remain. The watcher ignores SIGTERM once
// it is tearing down, so that COMMAND ending early does not cut the teardown short. The script
// exits with COMMAND's status, which ssh passes on.
// The variables it removes come before it, from launch_plan::try_node_variables.
// `after_exports` runs once the variables are exported, before COMMAND starts (rank_lines_script).
inline std::string node_script(std::string_view after_exports = {}) {
  return concat(R"sh(kill_after=$1 dir=$2 n=$3 lines_py=""
shift 3
if [ -n "$dir" ]; then cd -- "$dir" || { echo "hetlaunch: cannot enter $dir on $(hostname)" >&2; exit 126; }; fi
)sh",
                R"sh(while [ "$n" -gt 0 ]; do export "$1" || exit 126; shift; n=$((n - 1)); done
)sh",
                after_exports, R"sh(read -r self_stat < /proc/$$/stat
rest=${self_stat##*) }; rest=${rest#* }; rest=${rest#* }; rest=${rest#* }; self_session=${rest%% *}
sessions="" pids="" cursor="" forks="" tasks=""
mark() {
  read -r _ _ _ tasks_now cursor_now < /proc/loadavg
  tasks_now=${tasks_now#*/} forks_now=""
  while read -r key value _; do [ "$key" = processes ] && { forks_now=$value; break; }; done < /proc/stat
}
look() {
  found=$(grep -s -e "^State:" -e "^PPid:" -e "^NSsid:" "$@" | awk -F "[/:\t ]+" -v root="$job" -v known="$sessions" -v own="$self_session" "
    BEGIN { getline pid_max < \"/proc/sys/kernel/pid_max\"; pid_max += 0 }
    function take(p) { if (!(p in want)) { want[p] = 1; queue[++tail] = p } }
    function join(s, i, n, m) { if (s == own || (s in in_job)) return; in_job[s] = 1
      n = split(members[s], m, \" \"); for (i = 1; i <= n; i++) take(m[i]) }
    \$5 == \"State\" { zombie = \$6 == \"Z\" }
    \$5 == \"PPid\" && !zombie { kids[\$6] = kids[\$6] \" \" \$3; live[\$3] = 1 }
    \$5 == \"NSsid\" && !zombie { members[\$6] = members[\$6] \" \" \$3; session[\$3] = \$6 }
    END { n = split(known, k, \" \"); for (x = 1; x <= n; x++) join(k[x]); join(root); take(root)
      for (head = 1; head <= tail; head++) { p = queue[head]; if (p in session) join(session[p])
        c = split(kids[p], ch, \" \"); for (y = 1; y <= c; y++) take(ch[y]) }
      line = \"\"; for (p in want) if (p in live) line = line \" \" p; line = line \";\"
      for (q in in_job) line = line \" \" q; print line \";\" pid_max }")
  pids=${found%%;*} found=${found#*;} sessions=${found%;*} pid_max=${found##*;}
}
scan() {
  from=$cursor forks_then=$forks tasks_then=$tasks
  mark
  cursor=$cursor_now forks=$forks_now tasks=$tasks_now
  if [ -z "$from" ] || [ -z "$forks_then" ] || [ -z "$forks" ] || [ "${pid_max:-0}" -le 300 ]; then
    look /proc/[0-9]*/status
    return
  fi
  files="" alive=""
  for p in $pids; do files="$files /proc/$p/status"; ! kill -0 "$p" 2>/dev/null || alive=1; done
  listed=""
  for f in /proc/[0-9]*; do
    p=${f#/proc/}
    case $p in *[!0-9]*) ;; *) listed="$listed $p" ;; esac
  done
  mark
  if [ $((2 * (forks_now - forks_then) + tasks_then)) -ge $((pid_max - 300)) ]; then look /proc/[0-9]*/status; return; fi
  for p in $listed; do
    if [ "$cursor_now" -ge "$from" ]; then [ "$p" -gt "$from" ] && [ "$p" -le "$cursor_now" ] || continue
    else [ "$p" -gt "$from" ] || [ "$p" -le "$cursor_now" ] || continue; fi
    files="$files /proc/$p/status" alive=1
  done
  if [ -n "$alive" ]; then look /dev/null $files; else pids=""; fi
}
all_alive() { for p in "$@"; do kill -0 "$p" 2>/dev/null || return 1; done; return 0; }
any_alive() { for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
now_cs() { read -r up rest < /proc/uptime; now=${up%.*}${up#*.}; }
echo "hetlaunch: node started"
exec 3<&0 </dev/null
if command -v setsid >/dev/null 2>&1; then setsid "$@" 3<&- & else "$@" 3<&- & fi
job=$!
(
  trap "" USR1
  while IFS= read -r line <&3; do :; done
  trap "" TERM
  sleeper=""
  trap 'woken=1; [ -z "$sleeper" ] || kill -KILL "$sleeper" 2>/dev/null' USR1
  export LC_ALL=C
  signalled=" "
  now_cs
  deadline=$((now + kill_after * 100))
  scan
  while [ -n "$pids" ]; do
    for p in $pids; do case "$signalled" in *" $p "*) ;; *) kill -TERM "$p" 2>/dev/null; signalled="$signalled$p " ;; esac; done
    pause=10 polls=0
    while woken=""; all_alive $pids; do
      now_cs
      [ "$now" -lt "$deadline" ] || break
      left=$((deadline - now))
      case " $pids " in *" $job "*) pause=$left ;; *) [ "$left" -ge "$pause" ] || pause=$left ;; esac
      sleep $((pause / 100)).$((pause % 100 / 10))$((pause % 10)) &
      sleeper=$!
      [ -n "$woken" ] || wait "$sleeper" 2>/dev/null
      kill -KILL "$sleeper" 2>/dev/null
      ended=$sleeper sleeper=""
      wait "$ended" 2>/dev/null
      polls=$((polls + 1))
      [ "$polls" -lt 10 ] || [ "$pause" -ge 100 ] || pause=$((pause * 2))
    done
    now_cs
    [ "$now" -lt "$deadline" ] || break
    scan
  done
  rounds=50
  while [ -n "$pids" ] && [ "$rounds" -gt 0 ]; do
    kill -KILL $pids 2>/dev/null
    ! any_alive $pids || sleep 0.1
    rounds=$((rounds - 1))
    scan
  done
) &
watcher=$!
exec 3<&-
wait "$job" 2>/dev/null
status=$?
kill "$watcher" 2>/dev/null
kill -USR1 "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
[ -z "$lines_py" ] || rm -f -- "$lines_py"
echo "hetlaunch: node ended $status"
exit "$status")sh");
}

// The node script's part that writes rank_lines_program to a file of its own (removed when the
// node ends) and puts the file's path in place of argument `at` of COMMAND.
inline std::string rank_lines_script(std::size_t at) {
  return concat(R"sh(lines_code=')sh", rank_lines_program(), R"sh('
i=0
while :; do
  lines_py=${TMPDIR:-/tmp}/hetlaunch-rank-lines.$$.$i.py
  (umask 077 && set -C && printf "%s\n" "$lines_code" > "$lines_py") 2>/dev/null && break
  i=$((i + 1))
  [ "$i" -lt 20 ] || { echo "hetlaunch: cannot write $lines_py on $(hostname)" >&2; exit 126; }
done
i=0
for a in "$@"; do shift; [ "$i" != )sh",
                std::to_string(at), R"sh( ] || a=$lines_py; set -- "$@" "$a"; i=$((i + 1)); done
)sh");
}

// The texts of the ssh options' problems; the codes it shares with the core keep the core's.
inline std::string ssh_message(const diagnostic& d) {
  switch (d.code) {
    case errc::nul_byte:
      return concat("the ", d.variable, " ", quoted(d.text), " holds a NUL byte at position ",
                    d.position, ", which no argument or variable can carry");
    case errc::bad_kill_after:
      return concat("kill_after must be 1..3600 seconds, got ", d.value);
    default:
      return core_message(d);
  }
}

inline diagnostic ssh_problem(errc code, std::string_view text) {
  return diagnostic::of(code).with_text(text).with_describe(&ssh_message);
}

}  // namespace detail

/// Every problem of the ssh options, in order: an empty program, a variable name that is not a
/// shell name (letters, digits, '_', not starting with a digit) or that the launch owns
/// (owned_variable: the work share's and HETLAUNCH_RESTART_COUNT), a NUL byte in a variable's value
/// or in the directory (nul_byte), kill_after outside 1..3600.
[[nodiscard]] inline std::vector<diagnostic> validate_ssh(const ssh_options& ssh) {
  std::vector<diagnostic> out;
  if (ssh.program.empty() || ssh.program.front().empty()) {
    out.push_back(detail::ssh_problem(errc::empty_program, "").with_variable("ssh program"));
  }
  // A NUL cannot reach the node: the remote command is one C string, and sh would cut it there.
  const auto nul = [&out](std::string_view what, std::string_view text) {
    const std::size_t at = text.find('\0');
    if (at == std::string_view::npos) return;
    out.push_back(detail::ssh_problem(errc::nul_byte, text).with_variable(what).with_position(at));
  };
  for (const auto& v : ssh.env) {
    if (!detail::is_env_name(v.first))
      out.push_back(detail::ssh_problem(errc::bad_env_name, v.first));
    else if (is_owned_variable(v.first))
      out.push_back(detail::ssh_problem(errc::owned_variable, v.first));
    nul("value of variable", v.second);
  }
  nul("directory", ssh.chdir);
  if (ssh.kill_after < 1 || ssh.kill_after > 3600) {
    out.push_back(detail::ssh_problem(errc::bad_kill_after, "").with_value(ssh.kill_after));
  }
  return out;
}

/// Whether ssh_options::rank_lines changes a node's command: it is on, the program is torchrun
/// (a file named torchrun, or `PYTHON -m torch.distributed.run`), and torchrun starts its workers
/// with Python (torchrun_args has no --no-python and no --run-path). Another program's workers
/// may not be started as torchrun's are, so their lines are left as they come.
[[nodiscard]] inline bool rank_lines_apply(const launch_options& o,
                                           const ssh_options& ssh) noexcept {
  if (!ssh.rank_lines || o.program.empty()) return false;
  const std::string_view first = o.program.front();
  bool torchrun = first.substr(first.rfind('/') + 1) == "torchrun";
  for (std::size_t i = 1; i + 1 < o.program.size(); ++i)
    torchrun = torchrun || (o.program[i] == "-m" && o.program[i + 1] == "torch.distributed.run");
  if (!torchrun) return false;
  for (const std::string& arg : o.torchrun_args)
    if (detail::is_no_python(arg) || detail::names_option(arg, "run_path", 4)) return false;
  return true;
}

/// The command the node's shell runs: {"sh", "-c", SCRIPT, "hetlaunch-node", KILL_AFTER, DIR,
/// COUNT, the variables (launch_plan::try_node_variables of the node, ssh.env and
/// ssh.restart_count: the plan's agent_env, then ssh.env, then HETLAUNCH_RESTART_COUNT) as
/// NAME=VALUE, then the node's torchrun argv}. SCRIPT first unsets what the same rule removes:
/// the owned variables the node is not given, and TORCH_ELASTIC_WORKER_IDENTICAL when the plan's
/// nodes differ (torch 2.5+ would compute ranks as if every node ran this node's count). Where
/// rank_lines_apply, the torchrun argv has "hetlaunch-rank-lines.py" before the script (and -m
/// after it), which SCRIPT replaces with the path of the file it writes the line writer to.
/// Errors: node_out_of_range, empty_script, and those of validate_ssh.
[[nodiscard]] inline result<std::vector<std::string>, diagnostic> try_remote_argv(
    const launch_plan& plan, std::size_t node, const ssh_options& ssh) {
  auto argv = plan.try_torchrun_argv(node);
  if (!argv) return argv.error();
  if (const std::vector<diagnostic> problems = validate_ssh(ssh); !problems.empty())
    return problems.front();
  auto vars = plan.try_node_variables(node, ssh.env, ssh.restart_count);
  if (!vars) return vars.error();
  std::string script = "unset";
  for (std::string_view name : vars->unset) script.append(" ").append(name);
  std::string after_exports;
  if (rank_lines_apply(plan.options(), ssh)) {
    // The writer goes in as the script torchrun's Python runs; -m moves behind it.
    std::size_t at = argv->size() - plan.options().script_args.size() - 1;
    if (plan.options().module) argv->erase(argv->begin() + static_cast<std::ptrdiff_t>(--at));
    argv->insert(argv->begin() + static_cast<std::ptrdiff_t>(at), "hetlaunch-rank-lines.py");
    if (plan.options().module)
      argv->insert(argv->begin() + static_cast<std::ptrdiff_t>(at + 1), "-m");
    after_exports = detail::rank_lines_script(at);
  }
  script = script.size() > 5 ? script + "\n" + detail::node_script(after_exports)
                             : detail::node_script(after_exports);
  std::vector<std::string> out = {"sh",
                                  "-c",
                                  std::move(script),
                                  "hetlaunch-node",
                                  std::to_string(ssh.kill_after),
                                  ssh.chdir,
                                  std::to_string(vars->set.size())};
  out.reserve(out.size() + vars->set.size() + argv->size());
  for (const auto& v : vars->set) out.push_back(detail::concat(v.first, "=", v.second));
  for (std::string& a : *argv) out.push_back(std::move(a));
  return out;
}

/// ssh's argv that runs `remote_command` (one string, for the remote login shell) on `host`:
/// ssh.program, ssh.args, "--", the host, the command. Every ssh command line of a launcher has
/// this shape: a node's (ssh_argv), and a question to a host (`hetlaunch discover`'s GPU count).
[[nodiscard]] inline std::vector<std::string> ssh_command_argv(const ssh_options& ssh,
                                                               std::string_view host,
                                                               std::string remote_command) {
  std::vector<std::string> out = ssh.program;
  out.insert(out.end(), ssh.args.begin(), ssh.args.end());
  out.emplace_back("--");
  out.emplace_back(host);
  out.push_back(std::move(remote_command));
  return out;
}

/// ssh's argv for `node`: ssh.program, ssh.args, "--", the node's host, and the remote command
/// (try_remote_argv) quoted once more for the remote login shell, which must be a POSIX shell
/// (sh, bash, dash, zsh, ksh). Every argument of the script arrives byte for byte: quotes, $(),
/// newlines, bytes that are not UTF-8. ssh must not be given -n or -f: the node runs for as long
/// as ssh's standard input stays open (see ssh_options::kill_after).
///
/// Example, node 1 of {{"gpu-a", 8}, {"gpu-b", 4}}:
///   ssh -- gpu-b 'exec sh -c '\''...'\'' hetlaunch-node 10 /work 0 torchrun --nnodes=2 ...'
[[nodiscard]] inline result<std::vector<std::string>, diagnostic> try_ssh_argv(
    const launch_plan& plan, std::size_t node, const ssh_options& ssh) {
  auto remote = try_remote_argv(plan, node, ssh);
  if (!remote) return remote.error();
  return ssh_command_argv(ssh, plan.topology().node(node).host,
                          detail::concat("exec ", shell_join(*remote)));
}
/// try_ssh_argv(...).value().
[[nodiscard]] inline std::vector<std::string> ssh_argv(const launch_plan& plan, std::size_t node,
                                                       const ssh_options& ssh) {
  return try_ssh_argv(plan, node, ssh).value();
}

/// Whether a launcher forwards the variable to every node unless told otherwise: NCCL_*, GLOO_*,
/// TORCH_* (but not TORCH_ELASTIC_WORKER_IDENTICAL, which would break a mixed job), UCX_*, FI_*
/// and PYTHONPATH: what the fabric and torch read, as DeepSpeed's launcher forwards them.
[[nodiscard]] inline bool forwarded_by_default(std::string_view name) noexcept {
  if (name == variables::worker_identical || is_owned_variable(name)) return false;
  for (std::string_view prefix : {"NCCL_", "GLOO_", "TORCH_", "UCX_", "FI_"})
    if (name.substr(0, prefix.size()) == prefix) return true;
  return name == "PYTHONPATH";
}

/// The variables of `envp` (a NULL-terminated "NAME=VALUE" array, such as environ) that
/// forwarded_by_default accepts, in their order.
[[nodiscard]] inline environment forwarded_environment(const char* const* envp) {
  environment out;
  for (const char* const* e = envp; e && *e; ++e) {
    const std::string_view entry(*e);
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos || !forwarded_by_default(entry.substr(0, eq))) continue;
    out.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return out;
}

/// Reads NAME=VALUE lines, as DeepSpeed's .deepspeed_env holds them: the value is everything after
/// the first '=' (taken as it is: no quotes are removed); blank lines and lines starting with '#'
/// are skipped; a trailing '\r' is dropped. A line without '=', with a name that is not a shell
/// name, or with a name the launch owns (owned_variable: the plan sets those, and ssh_options::env
/// may not hold them) is an error at its line and column, and so is a NUL byte anywhere, comments
/// included (no variable can hold one, and a file with one is not text).
[[nodiscard]] inline result<environment> parse_env_file(std::string_view text) {
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    const std::size_t newline = text.rfind('\n', nul);
    const std::size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
    std::size_t line_no = 1;
    for (std::size_t i = 0; i < line_start; ++i)
      if (text[i] == '\n') ++line_no;
    return parse_error{line_no, nul - line_start + 1,
                       "a NUL byte, which no variable can hold (is this a text file?)",
                       errc::nul_byte};
  }
  environment out;
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    ++line_no;
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t first = 0;
    while (first < line.size() && (line[first] == ' ' || line[first] == '\t')) ++first;
    if (first == line.size() || line[first] == '#') continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      return parse_error{line_no, first + 1,
                         detail::concat("expected NAME=VALUE, got ", detail::quoted(line))};
    const std::string_view name = line.substr(first, eq - first);
    if (!detail::is_env_name(name))
      return parse_error{line_no, first + 1, env_name_refusal(name), errc::bad_env_name};
    if (is_owned_variable(name))
      return parse_error{line_no, first + 1,
                         diagnostic::of(errc::owned_variable).with_text(name).message(),
                         errc::owned_variable};
    out.emplace_back(std::string(name), std::string(line.substr(eq + 1)));
  }
  return out;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SSH_HPP
// ---- hetlaunch/node_group.hpp
// hetlaunch: nodes of one shape, for a scheduler that picks the hosts itself (a JobSet's pods, a
// Slurm batch job's components): the job is known by its groups, the hosts only when it runs.
#ifndef HETLAUNCH_NODE_GROUP_HPP
#define HETLAUNCH_NODE_GROUP_HPP


namespace hetlaunch {

/// Nodes of one shape: `nodes` nodes (pods), each running `gpus` workers and asking for that
/// many GPUs.
struct node_group {
  int nodes = 1;
  int gpus = 1;
  /// The pods' nodeSelector (for example {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"});
  /// JobSet only.
  std::vector<std::pair<std::string, std::string>> node_selector;
  /// Each node's weight (node_spec::weight): its workers' share of a global batch.
  std::string weight = "1";
};

}  // namespace hetlaunch

#endif  // HETLAUNCH_NODE_GROUP_HPP
// ---- hetlaunch/document.hpp
// hetlaunch: a JSON-shaped document, written as JSON or as YAML that every YAML reader reads the
// same way (the JobSet manifest is built as one).
#ifndef HETLAUNCH_DOCUMENT_HPP
#define HETLAUNCH_DOCUMENT_HPP



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
// ---- hetlaunch/jobset.hpp
// hetlaunch: a Kubernetes JobSet (jobset.x-k8s.io/v1alpha2) that runs a mixed-GPU torchrun job:
// one replicatedJob per group of equal nodes, each pod torchrun's node offset(group) + its index.
#ifndef HETLAUNCH_JOBSET_HPP
#define HETLAUNCH_JOBSET_HPP



namespace hetlaunch {

/// What a JobSet needs besides the groups. `launch` gives torchrun's options (master_port,
/// max_restarts, program, torchrun_args, module, script, script_args, flags); its master_addr is
/// ignored: node 0 is the first pod's stable host name.
/// How JobSet restarts a failed set (spec.failurePolicy.restartStrategy): `recreate` deletes
/// and recreates every Job at once (JobSet's default), `blocking_recreate` creates the new Jobs
/// only once every old Job and pod is gone. `unset` leaves the field out.
enum class jobset_restart_strategy { unset, recreate, blocking_recreate };

struct jobset_options {
  std::string name;        ///< the JobSet's name: a DNS label (lower case, digits, '-')
  std::string namespace_;  ///< metadata.namespace; empty: none (kubectl's current namespace)
  std::string image;       ///< the container image; it needs torchrun and the script, not hetlaunch
  launch_options launch;
  environment env;     ///< the container's variables, in order
  std::string cpu;     ///< resources.requests.cpu of each pod ("8", "500m"); empty: none
  std::string memory;  ///< resources.requests.memory ("64Gi"); empty: none
  int jobset_max_restarts =
      0;  ///< spec.failurePolicy.maxRestarts: how often every Job is recreated
  jobset_restart_strategy restart_strategy =
      jobset_restart_strategy::unset;  ///< failurePolicy.restartStrategy
  std::string gpu_resource = "nvidia.com/gpu";
};

/// The variable each pod's command reads its index in its group from (the downward API gives it
/// the Job's completion index annotation).
constexpr std::string_view pod_index_variable = variables::pod_index;

/// The annotation JobSet gives every pod with the set's restart attempt (0 at first); each pod's
/// HETLAUNCH_RESTART_COUNT reads it through the downward API.
constexpr std::string_view restart_attempt_annotation = "jobset.sigs.k8s.io/restart-attempt";

namespace detail {

// A DNS-1035 label, as Kubernetes checks names that become host names: lower-case letters,
// digits and '-', starting with a letter, ending with a letter or digit.
inline std::size_t dns_label_problem(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok =
        (c >= 'a' && c <= 'z') || (c == '-' && i > 0 && i + 1 < s.size()) || (is_digit(c) && i > 0);
    if (!ok) return i;
  }
  return s.empty() ? 0 : s.size();
}

// The texts of the JobSet's problems; the codes it shares with the core keep the core's.
inline std::string jobset_message(const diagnostic& d) {
  const std::string text = quoted(d.text);
  switch (d.code) {
    case errc::bad_name:
      return concat("the ", d.variable, " ", text,
                    " is not a DNS label (lower-case letters, digits and '-', "
                    "starting with a letter and not ending with '-'): position ",
                    d.position);
    case errc::name_too_long:
      return concat("the ", d.variable, " ", text, " makes pod host names of ", d.value,
                    " characters, more than ", d.limit, " (NAME-gG-0-K): shorten it");
    case errc::empty_image:
      return "no container image given";
    case errc::bad_group:
      return concat("group ", d.text, " must have at least ", d.limit, " ", d.variable, ", got ",
                    d.value);
    case errc::too_many_pods:
      return concat(
          d.text, " would have ", d.value, " pods, more than ", d.limit,
          d.text == "the job" ? "" : " (the completions Kubernetes allows an Indexed Job)");
    case errc::not_utf8:
      return concat("the ", d.variable, " ", text, " is not UTF-8 (byte ", d.position,
                    " does not start a character): Kubernetes carries only UTF-8 text");
    default:
      return core_message(d);
  }
}

inline diagnostic jobset_problem(errc code, std::string_view variable, std::string_view text,
                                 long long value = 0, long long limit = 0) {
  return diagnostic::of(code)
      .with_variable(variable)
      .with_text(text)
      .with_value(value)
      .with_limit(limit)
      .with_describe(&jobset_message);
}

// A problem at a character of `text`: its offset is the diagnostic's position.
inline diagnostic jobset_problem_at(errc code, std::string_view variable, std::string_view text,
                                    std::size_t position) {
  return jobset_problem(code, variable, text).with_position(position);
}

}  // namespace detail

/// Kubernetes' limit on an Indexed Job's completions, and so on the pods of one group.
constexpr long long max_indexed_completions = 100000;
/// The most pods of one JobSet (the default max_hosts of host lists).
constexpr long long max_jobset_pods = 1 << 20;

/// The name of group `g`'s replicatedJob: "g0", "g1", ...
inline std::string jobset_group_name(std::size_t g) { return detail::concat("g", g); }

/// The stable host name of pod `k` of group `g`: NAME-gG-0-K.NAME (JobSet's
/// <jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>, with the subdomain its name).
inline std::string jobset_pod_host(const jobset_options& o, std::size_t g, std::size_t k) {
  return detail::concat(o.name, "-", jobset_group_name(g), "-0-", k, ".", o.name);
}

/// Every problem of the groups and options, in order: the name (a DNS label, short enough that
/// the longest pod host name, NAME-gG-0-K, is at most 63 characters), an empty image, groups
/// without nodes or GPUs or with more than 100,000 pods, more than 2^20 pods in all, variable
/// names a shell cannot set, a negative jobset_max_restarts, and any text of the manifest that is
/// not UTF-8 (not_utf8, naming which text). try_jobset_document adds the plan's problems.
[[nodiscard]] inline std::vector<diagnostic> validate_jobset(const std::vector<node_group>& groups,
                                                             const jobset_options& o) {
  std::vector<diagnostic> out;
  const std::size_t bad = detail::dns_label_problem(o.name);
  if (o.name.empty() || bad < o.name.size())
    out.push_back(detail::jobset_problem_at(errc::bad_name, "name", o.name, bad));
  long long longest = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const long long last = groups[g].nodes > 0 ? groups[g].nodes - 1 : 0;
    const long long length = static_cast<long long>(
        o.name.size() + 1 + jobset_group_name(g).size() + 3 + std::to_string(last).size());
    if (length > longest) longest = length;
  }
  if (!o.name.empty() && bad == o.name.size() && longest > 63)
    out.push_back(detail::jobset_problem(errc::name_too_long, "name", o.name, longest, 63));
  if (!o.namespace_.empty() && detail::dns_label_problem(o.namespace_) < o.namespace_.size())
    out.push_back(detail::jobset_problem_at(errc::bad_name, "namespace", o.namespace_,
                                            detail::dns_label_problem(o.namespace_)));
  if (o.image.empty()) out.push_back(detail::jobset_problem(errc::empty_image, "image", ""));
  if (groups.empty()) out.push_back(detail::jobset_problem(errc::empty_cluster, "groups", ""));
  long long pods = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].nodes > 0) pods += groups[g].nodes;  // at most 2^31 a group: cannot wrap
    if (groups[g].nodes > max_indexed_completions)
      out.push_back(detail::jobset_problem(errc::too_many_pods, "nodes",
                                           detail::concat("group ", jobset_group_name(g)),
                                           groups[g].nodes, max_indexed_completions));
    if (groups[g].nodes < 1)
      out.push_back(detail::jobset_problem(errc::bad_group, "nodes", jobset_group_name(g),
                                           groups[g].nodes, 1));
    if (groups[g].gpus < 1)
      out.push_back(
          detail::jobset_problem(errc::bad_group, "gpus", jobset_group_name(g), groups[g].gpus, 1));
  }
  // The pods are planned as a cluster, which costs memory for each: bounded as host lists are.
  if (pods > max_jobset_pods && out.empty())
    out.push_back(
        detail::jobset_problem(errc::too_many_pods, "nodes", "the job", pods, max_jobset_pods));
  // Kubernetes takes the later of two equal names: the plan's own variables cannot be given.
  for (const auto& v : o.env)
    if (!detail::is_env_name(v.first))
      out.push_back(detail::jobset_problem(errc::bad_env_name, "env", v.first));
    else if (is_owned_variable(v.first))
      out.push_back(detail::jobset_problem(errc::owned_variable, "env", v.first));
  if (o.jobset_max_restarts < 0)
    out.push_back(detail::jobset_problem(errc::bad_max_restarts, "jobset_max_restarts", "",
                                         o.jobset_max_restarts));
  // Kubernetes stores text as UTF-8: kubectl refuses a manifest with other bytes (YAML) or turns
  // them into U+FFFD without a word (JSON). Every text of the manifest, each named.
  const auto utf8 = [&out](std::string_view what, std::string_view text) {
    const std::size_t at = detail::first_non_utf8(text);
    if (at < text.size()) out.push_back(detail::jobset_problem_at(errc::not_utf8, what, text, at));
  };
  utf8("image", o.image);
  utf8("cpu request", o.cpu);
  utf8("memory request", o.memory);
  utf8("GPU resource", o.gpu_resource);
  for (const std::string& w : o.launch.program) utf8("program word", w);
  for (const std::string& a : o.launch.torchrun_args) utf8("torchrun argument", a);
  utf8("script", o.launch.script);
  for (const std::string& a : o.launch.script_args) utf8("script argument", a);
  for (const auto& v : o.env) utf8("value of variable", v.second);
  for (const node_group& g : groups)
    for (const auto& kv : g.node_selector) {
      utf8("nodeSelector key", kv.first);
      utf8("nodeSelector value", kv.second);
    }
  return out;
}

namespace detail {

// The pods as a cluster: what make_plan validates and torchrun_argv is built from.
inline cluster jobset_cluster(const std::vector<node_group>& groups, const jobset_options& o) {
  cluster_builder b;
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (int k = 0; k < groups[g].nodes; ++k)
      b.add(jobset_pod_host(o, g, static_cast<std::size_t>(k)), groups[g].gpus, "default",
            groups[g].weight);
  return b.finish();
}

// The first line of the error in a torchrun error file (argv[1]), at most 1,024 bytes, as a JSON
// string; nothing when it has none. Single quotes never appear in it.
inline std::string_view error_line_program() {
  return R"py(import json, sys
m = json.load(open(sys.argv[1]))["message"]
m = m["message"] if isinstance(m, dict) else m
line = "".join(c if c >= " " else " " for c in (str(m).splitlines() or [""])[0])
line = line.encode("utf-8", "replace")[:1024].decode("utf-8", "ignore")
print(json.dumps(line) if line else "")
)py";
}

// Runs the torchrun argv with --node_rank=OFFSET+INDEX put in at its place (`at`, after the
// program and --nnodes); the index comes from the downward API.
// With a work share, the pod's part of each step first: a group's nodes are alike, so the samples
// left after the floors went to a prefix of them (equal remainders, ties to the lower index), and
// pod k gets base + (k < extra) samples from first_offset + k * base + min(k, extra).
struct group_share {
  long long base = 0, extra = 0, first_offset = 0;
  std::string host_head, host_tail;  // pod k's host: host_head, k, host_tail (jobset_pod_host)
};
// Then torchrun runs as the shell's child, with SIGTERM and SIGINT passed on (the shell is the
// container's first process, which ignores them by default), and its end is written as the
// node's node_exited JSON to the termination message file (terminationMessagePath, or
// HETLAUNCH_TERMINATION_LOG where it runs outside Kubernetes): node, host, status, reason, and
// the error's first line when torchrun copied a worker's error file into its own
// (TORCHELASTIC_ERROR_FILE, the worker's entry point wrapped in @record). Well under 4,096 bytes.
inline std::string pod_script(long long offset, std::size_t at, std::string_view node_rank_flag,
                              std::string_view host_head, std::string_view host_tail,
                              const group_share* share = nullptr) {
  const std::string batch =
      share == nullptr
          ? std::string()
          : concat("k=$((", pod_index_variable, "))\n", "export ", variables::node_batch, "=$((",
                   share->base, " + (k < ", share->extra, ")))\n", "export ",
                   variables::node_batch_offset, "=$((", share->first_offset, " + k * ",
                   share->base, " + (k < ", share->extra, " ? k : ", share->extra, ")))\n",
                   "export ", variables::node_host, "=\"", share->host_head, "$k", share->host_tail,
                   "\"\n");
  return concat(
      batch, "rank=$((", offset, " + ", pod_index_variable, "))\n", "i=0\n",
      "for a; do shift; i=$((i + 1)); set -- \"$@\" \"$a\"; if [ \"$i\" -eq ", at,
      " ]; then set -- \"$@\" \"", node_rank_flag, "=$rank\"; fi; done\n",
      "TORCHELASTIC_ERROR_FILE=${TMPDIR:-/tmp}/hetlaunch-torchrun-error.$$.json\n",
      "export TORCHELASTIC_ERROR_FILE\n", "rm -f \"$TORCHELASTIC_ERROR_FILE\"\n", "\"$@\" &\n",
      "child=$!\n", "trap 'kill -TERM \"$child\" 2>/dev/null' TERM\n",
      "trap 'kill -INT \"$child\" 2>/dev/null' INT\n",
      "while :; do wait \"$child\"; status=$?; kill -0 \"$child\" 2>/dev/null || break; done\n",
      "reason=succeeded; [ \"$status\" -eq 0 ] || reason=failed\n", "error=\n",
      "if [ -s \"$TORCHELASTIC_ERROR_FILE\" ]; then error=$(python3 -c '", error_line_program(),
      "' \"$TORCHELASTIC_ERROR_FILE\" 2>/dev/null); fi\n", "rm -f \"$TORCHELASTIC_ERROR_FILE\"\n",
      "printf '{\"event\": \"node_exited\", \"node\": %s, \"host\": \"%s\", \"status\": %s, "
      "\"reason\": \"%s\"%s}\\n' \"$rank\" \"",
      host_head, "$", pod_index_variable, host_tail,
      "\" \"$status\" \"$reason\" \"${error:+, \\\"error\\\": $error}\" > "
      "\"${HETLAUNCH_TERMINATION_LOG:-/dev/termination-log}\" 2>/dev/null\n",
      "exit \"$status\"");
}

}  // namespace detail

/// The JobSet as a document (see jobset_manifest), or the first problem (validate_jobset).
[[nodiscard]] inline result<document, diagnostic> try_jobset_document(
    const std::vector<node_group>& groups, const jobset_options& o) {
  if (const auto problems = validate_jobset(groups, o); !problems.empty()) return problems.front();
  launch_options launch = o.launch;
  launch.master_addr.clear();  // node 0: the first pod
  launch.backend = rendezvous::static_tcp;
  if (launch.script.empty()) return diagnostic::of(errc::empty_script);
  auto plan = make_plan(detail::jobset_cluster(groups, o), launch);
  if (!plan) return plan.error().front();
  document root = document::object();
  root.add("apiVersion", document::str("jobset.x-k8s.io/v1alpha2"));
  root.add("kind", document::str("JobSet"));
  document& meta = root.add("metadata", document::object());
  meta.add("name", document::str(o.name));
  if (!o.namespace_.empty()) meta.add("namespace", document::str(o.namespace_));
  document& spec = root.add("spec", document::object());
  document& network = spec.add("network", document::object());
  network.add("enableDNSHostnames", document::boolean(true));
  network.add("subdomain", document::str(o.name));
  document& failure_policy = spec.add("failurePolicy", document::object());
  failure_policy.add("maxRestarts", document::num(o.jobset_max_restarts));
  if (o.restart_strategy != jobset_restart_strategy::unset)
    failure_policy.add("restartStrategy",
                       document::str(o.restart_strategy == jobset_restart_strategy::recreate
                                         ? "Recreate"
                                         : "BlockingRecreate"));
  // A Job failed by its podFailurePolicy (invalid input, failed preflight) fails the whole set:
  // recreating it would fail the same way.
  document& rule = failure_policy.add("rules", document::array()).push(document::object());
  rule.add("name", document::str("FailOnInvalidInput"));
  rule.add("action", document::str("FailJobSet"));
  rule.add("onJobFailureReasons", document::array()).push(document::str("PodFailurePolicy"));
  document& jobs = spec.add("replicatedJobs", document::array());
  std::size_t first_node = 0;
  const std::string rank_flag = detail::flag(launch, "node_rank");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const node_group& group = groups[g];
    // The first pod's command, without its --node_rank: every pod of the group has the same.
    std::size_t at = 0;
    const std::vector<std::string> argv =
        detail::build_torchrun_argv(plan->topology(), first_node, plan->options(), &at);
    document& rj = jobs.push(document::object());
    rj.add("name", document::str(jobset_group_name(g)));
    rj.add("replicas", document::num(1));
    document& job_spec = rj.add("template", document::object()).add("spec", document::object());
    job_spec.add("completionMode", document::str("Indexed"));
    job_spec.add("completions", document::num(group.nodes));
    job_spec.add("parallelism", document::num(group.nodes));
    job_spec.add("backoffLimit", document::num(0));
    // Invalid input and a failed preflight (exit statuses 2 and 6, as --exit-status-by-reason
    // gives them; torchrun's own usage error is 2) fail the Job at once: no retry helps.
    document& fail_at_once = job_spec.add("podFailurePolicy", document::object())
                                 .add("rules", document::array())
                                 .push(document::object());
    fail_at_once.add("action", document::str("FailJob"));
    document& codes = fail_at_once.add("onExitCodes", document::object());
    codes.add("containerName", document::str("torchrun"));
    codes.add("operator", document::str("In"));
    document& values = codes.add("values", document::array());
    values.push(document::num(2));
    values.push(document::num(6));
    document& pod_spec =
        job_spec.add("template", document::object()).add("spec", document::object());
    pod_spec.add("restartPolicy", document::str("Never"));
    if (!group.node_selector.empty()) {
      document& sel = pod_spec.add("nodeSelector", document::object());
      for (const auto& kv : group.node_selector) sel.add(kv.first, document::str(kv.second));
    }
    document& container = pod_spec.add("containers", document::array()).push(document::object());
    container.add("name", document::str("torchrun"));
    container.add("image", document::str(o.image));
    // The node's node_exited JSON, shown in the pod's status; its last log lines when it wrote
    // none (it failed before torchrun ended).
    container.add("terminationMessagePath", document::str("/dev/termination-log"));
    container.add("terminationMessagePolicy", document::str("FallbackToLogsOnError"));
    document& command = container.add("command", document::array());
    command.push(document::str("sh"));
    command.push(document::str("-c"));
    detail::group_share share;
    const std::string host_head = detail::concat(o.name, "-", jobset_group_name(g), "-0-");
    const std::string host_tail = detail::concat(".", o.name);
    if (plan->has_shares()) {
      const node_batch first = plan->node_batch_of(first_node);
      const node_batch last =
          plan->node_batch_of(first_node + static_cast<std::size_t>(group.nodes) - 1);
      share.base = last.batch;
      share.first_offset = first.offset;
      // The pods with one sample more come first: count them from the offsets' growth.
      share.extra = (static_cast<long long>(last.offset) - first.offset) -
                    static_cast<long long>(group.nodes - 1) * last.batch;
      share.host_head = host_head;
      share.host_tail = host_tail;
    }
    command.push(document::str(detail::pod_script(static_cast<long long>(first_node), at, rank_flag,
                                                  host_head, host_tail,
                                                  plan->has_shares() ? &share : nullptr)));
    command.push(document::str("hetlaunch-pod"));
    document& args = container.add("args", document::array());
    for (const std::string& a : argv) args.push(document::str(a));
    document& env = container.add("env", document::array());
    document& index = env.push(document::object());
    index.add("name", document::str(std::string(pod_index_variable)));
    index.add("valueFrom", document::object())
        .add("fieldRef", document::object())
        .add("fieldPath",
             document::str("metadata.annotations['batch.kubernetes.io/job-completion-index']"));
    // The set's restart attempt, for the script to resume from its checkpoint (as in `run
    // --restarts`).
    document& attempt = env.push(document::object());
    attempt.add("name", document::str(std::string(variables::restart_count)));
    attempt.add("valueFrom", document::object())
        .add("fieldRef", document::object())
        .add("fieldPath", document::str(detail::concat("metadata.annotations['",
                                                       restart_attempt_annotation, "']")));
    if (plan->has_shares()) {
      document& e = env.push(document::object());
      e.add("name", document::str(std::string(variables::global_batch)));
      e.add("value", document::str(std::to_string(launch.global_batch)));
    }
    for (const auto& v : o.env) {
      document& e = env.push(document::object());
      e.add("name", document::str(v.first));
      e.add("value", document::str(v.second));
    }
    document& resources = container.add("resources", document::object());
    resources.add("limits", document::object()).add(o.gpu_resource, document::num(group.gpus));
    document& requests = resources.add("requests", document::object());
    requests.add(o.gpu_resource, document::num(group.gpus));
    if (!o.cpu.empty()) requests.add("cpu", document::str(o.cpu));
    if (!o.memory.empty()) requests.add("memory", document::str(o.memory));
    container.add("ports", document::array())
        .push(document::object())
        .add("containerPort", document::num(launch.master_port));
    first_node += static_cast<std::size_t>(group.nodes);
  }
  return root;
}

/// The JobSet manifest, YAML (`json` true: JSON), for `kubectl apply -f -`: one replicatedJob per
/// group ("g0", "g1", ...), each one Indexed Job of `nodes` pods that ask for (and are limited
/// to) `gpus` GPUs. Pod k of group g runs torchrun as node offset(g) + k with the group's
/// --nproc_per_node, the static rendezvous on the first pod's stable host name
/// (NAME-g0-0-0.NAME) and launch.master_port. Errors: validate_jobset's, then make_plan's.
[[nodiscard]] inline result<std::string, diagnostic> try_jobset_manifest(
    const std::vector<node_group>& groups, const jobset_options& o, bool json = false) {
  auto doc = try_jobset_document(groups, o);
  if (!doc) return doc.error();
  return json ? to_json(*doc) : to_yaml(*doc);
}
/// try_jobset_manifest(...).value().
[[nodiscard]] inline std::string jobset_manifest(const std::vector<node_group>& groups,
                                                 const jobset_options& o, bool json = false) {
  return try_jobset_manifest(groups, o, json).value();
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_JOBSET_HPP
// ---- hetlaunch/slurm_batch.hpp
// hetlaunch: a Slurm batch script for a mixed job: one hetjob component a node group, every node
// running `hetlaunch exec --slurm`, which plans the job from Slurm's variables when it runs.
#ifndef HETLAUNCH_SLURM_BATCH_HPP
#define HETLAUNCH_SLURM_BATCH_HPP



namespace hetlaunch {

/// What a batch script needs besides the node groups. The nodes run `hetlaunch_program` (`plan`,
/// then `exec --slurm`) with `launch_args`, so the launch options are read on the nodes exactly as
/// hetlaunch's command line reads them; the plan is made there, from Slurm's variables.
struct slurm_batch_options {
  /// sbatch options for the first component, one #SBATCH line each: "--account=a", "-A a",
  /// "-Aa", "--comment=two words". Each is read against sbatch's own option table: an option
  /// that takes a value must have it in the same string (hetlaunch's --sbatch-arg).
  std::vector<std::string> sbatch_args;
  /// Every component's --partition and --time; empty: none.
  std::string partition, time;
  /// The hetlaunch the nodes run, as a path (or name) there.
  std::string hetlaunch_program = "hetlaunch";
  /// The launch options for the nodes' hetlaunch, as its command line spells them:
  /// {"--master-port", "29500", "--global-batch", "64", ...}.
  std::vector<std::string> launch_args;
  /// The training script and its arguments.
  std::vector<std::string> command;
  /// Gang restarts, with the options `hetlaunch run` takes (restart.hpp); empty: the step runs
  /// once. The step runs again in the allocation after a failure, at most restarts times, each
  /// worker seeing HETLAUNCH_RESTART_COUNT. With exclude_failed the job goes on without a node
  /// Slurm lost (--no-kill), the plan made again over the nodes left, down to min_nodes: a job of
  /// one group only (Slurm cancels a heterogeneous job when one of its nodes fails).
  std::optional<restart_options> restart;
};

namespace detail {

// sbatch's options (Slurm's src/common/slurm_opt.c, the ones sbatch reads): those that take a
// value, and those that take none or only an optional one written with '='. sbatch reads all of
// a component's #SBATCH lines as one argv, so an option that takes a value given without one
// would take the next line (hetlaunch's own "--partition=gpu") as its value.
inline constexpr std::string_view sbatch_options_with_value[] = {"account",
                                                                 "acctg-freq",
                                                                 "array",
                                                                 "autocomplete",
                                                                 "batch",
                                                                 "bb",
                                                                 "bbf",
                                                                 "begin",
                                                                 "chdir",
                                                                 "cluster",
                                                                 "cluster-constraint",
                                                                 "clusters",
                                                                 "comment",
                                                                 "constraint",
                                                                 "container",
                                                                 "container-id",
                                                                 "context",
                                                                 "core-spec",
                                                                 "cores-per-socket",
                                                                 "cpu-freq",
                                                                 "cpus-per-gpu",
                                                                 "cpus-per-task",
                                                                 "deadline",
                                                                 "delay-boot",
                                                                 "dependency",
                                                                 "distribution",
                                                                 "error",
                                                                 "exclude",
                                                                 "export",
                                                                 "export-file",
                                                                 "extra",
                                                                 "extra-node-info",
                                                                 "gid",
                                                                 "gpu-bind",
                                                                 "gpu-freq",
                                                                 "gpus",
                                                                 "gpus-per-node",
                                                                 "gpus-per-socket",
                                                                 "gpus-per-task",
                                                                 "gres",
                                                                 "gres-flags",
                                                                 "hint",
                                                                 "input",
                                                                 "job-name",
                                                                 "kill-on-invalid-dep",
                                                                 "licenses",
                                                                 "mail-type",
                                                                 "mail-user",
                                                                 "mcs-label",
                                                                 "mem",
                                                                 "mem-bind",
                                                                 "mem-per-cpu",
                                                                 "mem-per-gpu",
                                                                 "mem-update",
                                                                 "mincpus",
                                                                 "network",
                                                                 "nodefile",
                                                                 "nodelist",
                                                                 "nodes",
                                                                 "ntasks",
                                                                 "ntasks-per-core",
                                                                 "ntasks-per-gpu",
                                                                 "ntasks-per-node",
                                                                 "ntasks-per-socket",
                                                                 "ntasks-per-tres",
                                                                 "open-mode",
                                                                 "output",
                                                                 "partition",
                                                                 "power",
                                                                 "prefer",
                                                                 "priority",
                                                                 "profile",
                                                                 "qos",
                                                                 "reservation",
                                                                 "resources",
                                                                 "runtime",
                                                                 "segment",
                                                                 "signal",
                                                                 "sockets-per-node",
                                                                 "switches",
                                                                 "tasks-per-node",
                                                                 "thread-spec",
                                                                 "threads-per-core",
                                                                 "time",
                                                                 "time-min",
                                                                 "tmp",
                                                                 "tres-bind",
                                                                 "tres-per-task",
                                                                 "uid",
                                                                 "wait-all-nodes",
                                                                 "wckey",
                                                                 "wrap"};
inline constexpr std::string_view sbatch_options_without_value[] = {"consolidate-segments",
                                                                    "contiguous",
                                                                    "exclusive",
                                                                    "external",
                                                                    "get-user-env",
                                                                    "help",
                                                                    "hold",
                                                                    "ignore-pbs",
                                                                    "nice",
                                                                    "no-kill",
                                                                    "no-requeue",
                                                                    "oom-kill-step",
                                                                    "overcommit",
                                                                    "oversubscribe",
                                                                    "parsable",
                                                                    "propagate",
                                                                    "quiet",
                                                                    "reboot",
                                                                    "requeue",
                                                                    "resv-ports",
                                                                    "spread-job",
                                                                    "spread-segments",
                                                                    "stepmgr",
                                                                    "test-only",
                                                                    "usage",
                                                                    "use-min-nodes",
                                                                    "verbose",
                                                                    "version",
                                                                    "wait"};
// Short options: with a value, and without one (-k takes an optional value, attached).
inline constexpr std::string_view sbatch_short_with_value = "ABCDFGJLMNSabcdeimnopqtwx";
inline constexpr std::string_view sbatch_short_without_value = "HOQVWhksv";

// Whether the long option `name` (without "--") takes a value, as getopt_long resolves it: an
// exact name, or an abbreviation that only options with a value (or only ones without) share.
// Unknown or ambiguous: sbatch itself refuses it, so it cannot take the next line.
enum class sbatch_value { yes, no, unknown };
inline sbatch_value long_option_value(std::string_view name) noexcept {
  bool with = false, without = false;
  for (std::string_view o : sbatch_options_with_value) {
    if (o == name) return sbatch_value::yes;
    with = with || o.substr(0, name.size()) == name;
  }
  for (std::string_view o : sbatch_options_without_value) {
    if (o == name) return sbatch_value::no;
    without = without || o.substr(0, name.size()) == name;
  }
  if (with != without) return with ? sbatch_value::yes : sbatch_value::no;
  return sbatch_value::unknown;
}

// The texts of the batch script's problems. bad_sbatch_option: `text` the option as given,
// `value` 0 not an option, 1 a value-taking option without its value (`position`: the option's
// length in `text`), 2 a line break or NUL.
inline std::string slurm_batch_message(const diagnostic& d) {
  const std::string text(d.text.view());
  switch (d.code) {
    case errc::bad_sbatch_option:
      if (d.value == 2)
        return concat("an #SBATCH option cannot hold a line break or a NUL byte: ",
                      detail::quoted(text));
      if (d.value == 1) {
        const std::string option = text.substr(0, d.position);
        const bool long_option = option.compare(0, 2, "--") == 0;
        return concat("--sbatch-arg ", detail::quoted(text), ": sbatch's ", option,
                      " takes a value, which must be in the same --sbatch-arg (\"", option,
                      long_option ? "=" : "", "VALUE\" or \"", option,
                      " VALUE\"): alone, it would take the next #SBATCH line as its value");
      }
      return concat("--sbatch-arg ", detail::quoted(text),
                    " is not an sbatch option (\"--job-name=x\", \"-A acct\" or \"-Aacct\")");
    case errc::world_size_overflow:
      return concat("the groups up to ", detail::quoted(text), " hold more than ", d.limit,
                    " workers, more than torch's ranks can count");
    case errc::shrink_needs_one_group:
      return "--exclude-failed needs a single --group: Slurm cancels a heterogeneous job when one "
             "of its nodes fails, even with --no-kill (it requeues the whole job instead); give "
             "the nodes one group, or leave --exclude-failed out";
    case errc::bad_min_nodes:
      return concat("--min-nodes ", d.value,
                    d.value < 1 ? " is less than 1" : " is more than the job's ",
                    d.value < 1 ? std::string() : concat(d.limit, " nodes"));
    case errc::bad_group:
      return d.value < 0 ? std::string("a batch script needs at least one node group")
                         : concat("group ", d.node, " (", detail::quoted(text),
                                  ") needs at least one node and one GPU");
    default:
      return core_message(d);
  }
}

inline diagnostic slurm_batch_problem(errc code, std::string_view text) {
  return diagnostic::of(code).with_text(text).with_describe(&slurm_batch_message);
}

// "NODES:GPUS[:WEIGHT]", as hetlaunch's --group spells a group.
inline std::string group_text(const node_group& g) {
  return concat(g.nodes, ":", g.gpus, g.weight == "1" ? std::string() : concat(":", g.weight));
}

// One #SBATCH line a word, written so that sbatch reads back exactly that word. sbatch splits an
// #SBATCH line at blanks, removes quotes, takes a backslash as an escape, ends the line at an
// unquoted '#' and stops at an unmatched quote (src/sbatch/opt.c, _get_argument); a word that
// needs it is therefore written in double quotes, with a backslash before each '"' and backslash
// in it. (A line break or a NUL cannot be written at all: validate_slurm_batch refuses them.)
inline std::string directive_word(const std::string& word) {
  bool plain = !word.empty() && word[0] != ':';  // sbatch refuses a word that starts with ':'
  for (const char c : word)
    plain = plain && !(c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '"' || c == '\'' ||
                       c == '\\' || c == '#');
  if (plain) return word;
  std::string out = "\"";
  for (const char c : word) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
inline std::string directive(const std::vector<std::string>& words) {
  std::string out = "#SBATCH";
  for (const std::string& w : words) out.append(" ").append(directive_word(w));
  return out + "\n";
}
inline bool breaks_line(std::string_view s) noexcept {
  return s.find_first_of(std::string_view("\n\r\0", 3)) != std::string_view::npos;
}

}  // namespace detail

/// The words of the #SBATCH line for one sbatch option: the option with its value in one word
/// ("--job-name=x", "-Jx"), or an option and its value as two ("-A acct", "--account acct").
/// Errors (bad_sbatch_option): not an option, an option that takes a value given without one
/// (alone, it would take the next #SBATCH line as its value), a line break or NUL byte.
[[nodiscard]] inline result<std::vector<std::string>, diagnostic> sbatch_directive_words(
    const std::string& arg) {
  using detail::sbatch_value;
  const auto problem = [&](long long kind, std::size_t option_size = 0) {
    return detail::slurm_batch_problem(errc::bad_sbatch_option, arg)
        .with_value(kind)
        .with_position(option_size);
  };
  if (detail::breaks_line(arg)) return problem(2);
  if (arg.size() < 2 || arg[0] != '-') return problem(0);
  const std::size_t blank = arg.find_first_of(" \t");
  const std::string option = arg.substr(0, blank);
  std::string value;
  if (blank != std::string::npos) {
    const std::size_t start = arg.find_first_not_of(" \t", blank);
    value = arg.substr(start == std::string::npos ? arg.size() : start);
  }
  const bool split = blank != std::string::npos && !value.empty();
  if (arg.compare(0, 2, "--") == 0) {
    if (option.find('=') != std::string::npos) return std::vector<std::string>{arg};
    if (detail::long_option_value(option.substr(2)) == sbatch_value::yes) {
      if (!split) return problem(1, option.size());
      return std::vector<std::string>{option, value};
    }
    return std::vector<std::string>{arg};  // a switch, or an option sbatch will refuse itself
  }
  // A cluster of short options: switches, then at most one that takes the rest as its value.
  for (std::size_t k = 1; k < option.size(); ++k) {
    const char letter = option[k];
    if (detail::sbatch_short_with_value.find(letter) != std::string_view::npos) {
      if (k + 1 < option.size()) return std::vector<std::string>{arg};  // "-Jname"
      if (!split) return problem(1, option.size());
      return std::vector<std::string>{option, value};
    }
    if (detail::sbatch_short_without_value.find(letter) == std::string_view::npos) break;
  }
  return std::vector<std::string>{arg};
}

/// Every problem of the groups and options, in order: no group, a group without nodes or GPUs
/// (bad_group), a weight that is not one (bad_weight), more workers than torch's ranks can count
/// (world_size_overflow), exclude_failed with several groups (shrink_needs_one_group), min_nodes
/// outside 1..the job's nodes (bad_min_nodes), and each sbatch option, partition or time that
/// sbatch would read otherwise (bad_sbatch_option). The launch options are the nodes' to check.
[[nodiscard]] inline std::vector<diagnostic> validate_slurm_batch(
    const std::vector<node_group>& groups, const slurm_batch_options& o) {
  std::vector<diagnostic> out;
  if (groups.empty())
    out.push_back(detail::slurm_batch_problem(errc::bad_group, "").with_value(-1));
  long long nodes = 0, world = 0;
  bool counted = true;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const node_group& group = groups[g];
    if (group.nodes < 1 || group.gpus < 1) {
      out.push_back(
          detail::slurm_batch_problem(errc::bad_group, detail::group_text(group)).with_node(g));
      counted = false;
      continue;
    }
    if (const weight_check wc = check_weight(group.weight); !wc)
      out.push_back(diagnostic::of(errc::bad_weight)
                        .with_node(g)
                        .with_text(group.weight)
                        .with_weight(wc.issue));
    nodes += group.nodes;
    // Each term is below 2^62 and the sum stops at the first past INT_MAX: nothing wraps.
    world += static_cast<long long>(group.nodes) * group.gpus;
    if (counted && world > INT_MAX) {
      out.push_back(
          detail::slurm_batch_problem(errc::world_size_overflow, detail::group_text(group))
              .with_node(g)
              .with_limit(INT_MAX));
      counted = false;
    }
  }
  const restart_options r = o.restart.value_or(restart_options{});
  if (r.exclude_failed && groups.size() > 1)
    out.push_back(detail::slurm_batch_problem(errc::shrink_needs_one_group, ""));
  if (counted && !groups.empty() &&
      (r.min_nodes < 1 || r.min_nodes > static_cast<unsigned long long>(nodes)))
    out.push_back(detail::slurm_batch_problem(errc::bad_min_nodes, "")
                      .with_value(static_cast<long long>(
                          std::min<unsigned long long>(r.min_nodes, LLONG_MAX)))
                      .with_limit(nodes));
  for (const std::string& a : o.sbatch_args)
    if (auto words = sbatch_directive_words(a); !words) out.push_back(words.error());
  for (const std::string* s : {&o.partition, &o.time})
    if (detail::breaks_line(*s))
      out.push_back(detail::slurm_batch_problem(
                        errc::bad_sbatch_option,
                        detail::concat(s == &o.partition ? "--partition=" : "--time=", *s))
                        .with_value(2));
  return out;
}

namespace detail {

// After a failed step with exclude_failed: the nodes the job still has (Slurm takes a lost node
// out of a --no-kill job; the step's variables keep the first list), the plan made again over
// them when they are fewer, and the variables `hetlaunch exec --slurm` reads set to them.
inline std::string exclude_failed_block(const restart_options& o, const node_group& g,
                                        const std::string& program, const std::string& tail) {
  return concat(
      "  # The nodes the job still has: Slurm takes a lost node out of a --no-kill job.\n"
      "  nodes=$(scontrol show job \"$SLURM_JOB_ID\" | sed -n 's/^ *NodeList=//p')\n"
      "  count=$(scontrol show hostnames \"$nodes\" | wc -l)\n"
      "  if [ \"$count\" -lt ",
      o.min_nodes,
      " ]; then\n"
      "    echo \"hetlaunch: the step failed (exit status $status); the job has $count node(s) "
      "left ($nodes), fewer than --min-nodes ",
      o.min_nodes,
      "\" >&2\n"
      "    exit \"$status\"\n  fi\n"
      "  if [ \"$count\" -ne \"$SLURM_JOB_NUM_NODES\" ]; then\n"
      "    echo \"hetlaunch: the step failed (exit status $status) and the job lost nodes: "
      "restart $attempt of ",
      o.restarts,
      " on the $count nodes left ($nodes), plan made again\" >&2\n"
      "    export SLURM_JOB_NODELIST=\"$nodes\" SLURM_NODELIST=\"$nodes\" "
      "SLURM_JOB_NUM_NODES=\"$count\" SLURM_NNODES=\"$count\"\n"
      "    export ",
      variables::tasks_per_node, "=\"", g.gpus,
      "(x$count)\"\n"
      "    ",
      program, " plan ", tail,
      "\n"
      "  else\n"
      "    echo \"hetlaunch: the step failed (exit status $status): restart $attempt of ",
      o.restarts,
      "\" >&2\n"
      "  fi\n");
}

inline std::string count_of(long long n, const char* one, const char* many) {
  return concat(n, " ", n == 1 ? one : many);
}

// The script's part that keeps the step's stderr (srun's own lines and torchrun's, which it
// forwards) and, when the job fails, sets the job's comment from them: the reason, and the node,
// host and rank of the first failure, as far as they are known. torchrun's summary of a failed
// group names its first failure's time, host and global rank ("Root Cause (first observed
// failure):"); every node that failed prints one, and the earliest is the cause (the node that
// failed first need not be the first whose task srun sees end). Without a summary (a torchrun
// stopped before it printed one), srun's first failed task names the host ("srun: error: h2:
// task 0: Exited with exit code 1") and torchrun's line the local rank ("failed (exitcode: 1)
// local_rank: 0"). The plan's table (`plan`, run again) gives the host's node and first rank;
// with `moved` (nodes left out between attempts) the node is not named.
inline std::string failure_comment_block(const std::string& plan, bool moved) {
  return concat(
      "# On a failure the job's comment names it (scontrol show job, squeue -o %k): the reason,\n"
      "# and the node, host and rank of the first failure that torchrun and srun report.\n",
      "step_log=$(mktemp \"${TMPDIR:-/tmp}/hetlaunch-step.XXXXXX\")\n",
      "trap 'rm -f \"$step_log\"' EXIT\n", "say_failure() {\n", "  local what\n", "  what=$(", plan,
      " 2>/dev/null | awk -v steplog=\"$step_log\" -v moved=", moved ? 1 : 0, " '\n",
      "    NF >= 6 && $1 ~ /^[0-9]+$/ && $5 ~ /^[0-9]+$/ { node[$2] = $1; first[$2] = $5 }\n",
      "    END {\n", "      while ((getline line < steplog) > 0) {\n",
      "        if (line ~ /Root Cause \\(first observed failure\\)/) { root = 1; t = \"\"; h = \"\"; continue }\n",
      "        n = split(line, f, \" \")\n",
      "        if (root && n >= 3 && f[1] == \"time\") t = f[3]\n",
      "        if (root && n >= 3 && f[1] == \"host\") h = f[3]\n",
      "        if (root && n >= 3 && f[1] == \"rank\") { root = 0\n",
      "          if (h != \"\" && (best == \"\" || t < best)) { best = t; host = h; rank = f[3] } }\n",
      "        if (best == \"\" && failed == \"\" && match(line, /^srun: error: [^:]+: task/)) failed = substr(line, 14, "
      "RLENGTH - 19)\n",
      "        if (lr == \"\" && line !~ /^\\[/ && match(line, /failed \\(exitcode: -?[0-9]+\\) "
      "local_rank: [0-9]+/)) {\n",
      "          n = split(substr(line, RSTART, RLENGTH), w, \" \"); lr = w[n] }\n", "      }\n",
      "      if (host == \"\") host = failed\n", "      if (host == \"\") exit\n",
      "      short = host; sub(/\\..*/, \"\", short)\n",
      "      if (!(host in node) && (short in node)) host = short\n",
      "      if (rank == \"\" && !moved && (host in first) && lr != \"\") rank = first[host] + lr\n",
      "      if (!moved && (host in node)) printf \"node %s \", node[host]\n",
      "      printf \"host %s\", host\n", "      if (rank != \"\") printf \" rank %s\", rank\n",
      "    }')\n",
      "  scontrol update JobId=\"$SLURM_JOB_ID\" Comment=\"hetlaunch: $1${what:+ $what}\" "
      "2>/dev/null || true\n",
      "}\n");
}

}  // namespace detail

/// The batch script, for `sbatch`: one hetjob component a group (a job without components for one
/// group), each node a task that sees all of its GPUs; every component's layout in #SBATCH lines,
/// the sbatch options in the first. The job prints its plan (`hetlaunch plan`, which stops an
/// inconsistent job before anything starts), then one `srun` step runs `hetlaunch exec --slurm`
/// on every node. A group's weight names its component's nodes, which the job knows only when it
/// runs. With restarts the step runs again after a failure (never after a signal), and with
/// exclude_failed over the nodes the job has left. Errors: validate_slurm_batch's.
[[nodiscard]] inline result<std::string, diagnostic> try_slurm_batch_script(
    const std::vector<node_group>& groups, const slurm_batch_options& o) {
  using detail::concat;
  using detail::count_of;
  if (const std::vector<diagnostic> problems = validate_slurm_batch(groups, o); !problems.empty())
    return problems.front();
  long long nodes = 0, world = 0;
  for (const node_group& g : groups) {
    nodes += g.nodes;
    world += static_cast<long long>(g.nodes) * g.gpus;
  }
  std::vector<std::string> exec_args{"--slurm"};
  exec_args.insert(exec_args.end(), o.launch_args.begin(), o.launch_args.end());
  std::string weights;
  for (std::size_t c = 0; c < groups.size(); ++c)
    if (groups[c].weight != "1")
      // Slurm 19.05 and earlier name a component's variables *_PACK_GROUP_<n>.
      weights += concat(" --weight \"",
                        groups.size() == 1 ? std::string("$SLURM_JOB_NODELIST")
                                           : concat("${SLURM_JOB_NODELIST_HET_GROUP_", c,
                                                    ":-$SLURM_JOB_NODELIST_PACK_GROUP_", c, "}"),
                        "\"=", shell_quote(groups[c].weight));
  std::vector<std::string> command{"--"};
  command.insert(command.end(), o.command.begin(), o.command.end());
  const std::string tail = shell_join(exec_args) + weights + " " + shell_join(command);
  const std::string program = shell_quote(o.hetlaunch_program);

  std::string out = "#!/bin/bash\n";
  out += groups.size() == 1
             ? concat("# hetlaunch: a job of ", count_of(nodes, "node", "nodes"), " and ",
                      count_of(world, "worker", "workers"), ":\n")
             : concat("# hetlaunch: a heterogeneous job of ", count_of(nodes, "node", "nodes"),
                      " and ", count_of(world, "worker", "workers"),
                      ", one component a node group:\n");
  long long first = 0, rank = 0;
  for (std::size_t c = 0; c < groups.size(); ++c) {
    const node_group& g = groups[c];
    const long long workers = static_cast<long long>(g.nodes) * g.gpus;
    const long long last_rank = rank + workers - 1;
    out += concat("#   component ", c, ": ", count_of(g.nodes, "node", "nodes"), " of ",
                  count_of(g.gpus, "GPU", "GPUs"),
                  g.weight == "1" ? std::string() : concat(" weighing ", g.weight),
                  g.nodes > 1 ? concat(" (nodes ", first, "-", first + g.nodes - 1)
                              : concat(" (node ", first),
                  last_rank > rank ? concat(", ranks ", rank, "-", last_rank, ")\n")
                                   : concat(", rank ", rank, ")\n"));
    first += g.nodes;
    rank += workers;
  }
  for (std::size_t c = 0; c < groups.size(); ++c) {
    if (c > 0) out += "#SBATCH hetjob\n";
    if (c == 0)
      for (const std::string& a : o.sbatch_args)
        out += detail::directive(*sbatch_directive_words(a));
    if (!o.partition.empty()) out += detail::directive({"--partition=" + o.partition});
    if (!o.time.empty()) out += detail::directive({"--time=" + o.time});
    // A task a GPU: Slurm then reports each component's layout in
    // SLURM_TASKS_PER_NODE_HET_GROUP_<n>.
    out += detail::directive({concat("--nodes=", groups[c].nodes)});
    out += detail::directive({concat("--ntasks-per-node=", groups[c].gpus)});
    out += detail::directive({concat("--gpus-per-node=", groups[c].gpus)});
    if (o.restart && o.restart->exclude_failed)
      out += detail::directive({"--no-kill"});  // a lost node does not end the job
  }
  out += "set -eu\n\n";
  // Without hetjob components the job's layout is in SLURM_TASKS_PER_NODE, which srun replaces
  // with its step's: keep it for the steps. (A hetjob's own variables survive in every step.)
  if (groups.size() == 1)
    out += concat("export ", variables::tasks_per_node, "=\"$SLURM_TASKS_PER_NODE\"\n\n");
  out += "# The plan in the job log before anything starts; an inconsistent job stops here.\n";
  out += concat(program, " plan ", tail, "\n\n");
  // With restarts the step runs again in this allocation after a failure; a node that fails ends
  // the whole step at once (--kill-on-bad-exit), so the next attempt need not wait for the
  // others' collectives to time out.
  const bool restarting = o.restart.has_value();
  const restart_options r = o.restart.value_or(restart_options{});
  const std::string indent = restarting ? "  " : "";
  out += detail::failure_comment_block(concat(program, " plan ", tail), r.exclude_failed);
  out +=
      "\n# One task a node in every component, each seeing all of its node's GPUs; each runs its\n"
      "# node's torchrun (SLURM_NODEID counts the nodes in component order).\n";
  if (restarting)
    out += concat("# The step runs again on a failure, at most ", r.restarts,
                  " times (--restarts); every worker gets\n# ", variables::restart_count,
                  ", the attempt's number from 0.\n",
                  "# A signal never restarts it: Ctrl-C under salloc, scancel --signal=SIG --full "
                  "(or --batch),\n"
                  "# the time limit's SIGTERM. srun takes a SIGINT itself and returns a status, so "
                  "the script\n"
                  "# notes the signal and ends after the step.\n",
                  "interrupted=\nfor signal in INT TERM HUP; do trap \"interrupted=$signal\" "
                  "\"$signal\"; done\n",
                  "attempt=0\nwhile :; do\n",
                  "  [ -z \"$interrupted\" ] || exit $((128 + $(kill -l \"$interrupted\")))\n");
  // The step's stderr also goes to the step log, which only its last attempt's failure reads.
  out += concat(indent, "status=0\n", indent, ": > \"$step_log\"\n", indent, "( ",
                restarting ? "srun --kill-on-bad-exit=1" : "srun");
  for (std::size_t c = 0; c < groups.size(); ++c) {
    if (c > 0) out += concat(" : \\\n    ", indent);
    // With exclude_failed the job's node count can shrink between attempts.
    const std::string step_nodes =
        r.exclude_failed ? std::string("\"$SLURM_JOB_NUM_NODES\"") : concat(groups[c].nodes);
    out += concat(" --nodes=", step_nodes, " --ntasks=", step_nodes,
                  " --ntasks-per-node=1 --gpus-per-node=", groups[c].gpus);
  }
  // The attempt reaches exec as a flag: an inherited HETLAUNCH_RESTART_COUNT is another launch's,
  // and exec removes it.
  out += concat(" \\\n  ", indent, program, " exec ",
                restarting ? "--restart-count \"$attempt\" " : "", tail,
                " 2>&1 1>&3 3>&- | tee -a \"$step_log\" >&2; exit \"${PIPESTATUS[0]}\" ) 3>&1 || "
                "status=$?\n");
  if (!restarting)
    out += "if [ \"$status\" -ne 0 ]; then say_failure worker_failed; exit \"$status\"; fi\n";
  if (restarting)
    out += concat(
        "  if [ -n \"$interrupted\" ]; then\n",
        "    echo \"hetlaunch: the step ended after SIG$interrupted (exit status $status): a "
        "signal never restarts it\" >&2\n",
        "    say_failure interrupted\n", "    exit $((128 + $(kill -l \"$interrupted\")))\n  fi\n",
        "  [ \"$status\" -eq 0 ] && exit 0\n", "  if [ \"$attempt\" -ge ", r.restarts, " ]; then\n",
        "    echo \"hetlaunch: the step failed (exit status $status); no restart left (--restarts ",
        r.restarts, ")\" >&2\n", "    say_failure restarts_exhausted\n",
        "    exit \"$status\"\n  fi\n", "  attempt=$((attempt + 1))\n",
        r.exclude_failed
            ? detail::exclude_failed_block(r, groups[0], program, tail)
            : concat("  echo \"hetlaunch: the step failed (exit status $status): restart $attempt "
                     "of ",
                     r.restarts, "\" >&2\n"),
        "done\n");
  return out;
}

/// try_slurm_batch_script(...).value().
[[nodiscard]] inline std::string slurm_batch_script(const std::vector<node_group>& groups,
                                                    const slurm_batch_options& o) {
  return try_slurm_batch_script(groups, o).value();
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SLURM_BATCH_HPP
// ---- hetlaunch/device_filter.hpp
// hetlaunch: DeepSpeed's --include/--exclude device filters ("w0@w1:0,2") applied to a cluster.
#ifndef HETLAUNCH_DEVICE_FILTER_HPP
#define HETLAUNCH_DEVICE_FILTER_HPP

#include <unordered_map>


namespace hetlaunch {

/// A cluster after a device filter, and where each of its nodes came from.
struct filtered_cluster {
  cluster nodes;
  /// source_node[k]: the index, in the cluster that was filtered, of node k.
  std::vector<std::size_t> source_node;
};

namespace detail {
constexpr std::size_t max_listed_devices = 65536;

// "0,1,2,3", or the first ids and the count for a long list; "0..N-1" for a node's own range.
inline std::string describe_devices(const std::vector<int>& ids, int nproc) {
  if (ids.empty())
    return nproc <= 16 ? join_ids([&] {
      std::vector<int> all;
      for (int d = 0; d < nproc; ++d) all.push_back(d);
      return all;
    }())
                       : concat("0..", nproc - 1);
  if (ids.size() <= 16) return join_ids(ids);
  return concat(join_ids(std::vector<int>(ids.begin(), ids.begin() + 16)), ",... (", ids.size(),
                " devices)");
}
}  // namespace detail

/// filter_devices, also saying which node of `c` each kept node is (see filtered_cluster).
[[nodiscard]] inline result<filtered_cluster> filter_devices_mapped(const cluster& c,
                                                                    std::string_view include,
                                                                    std::string_view exclude = {}) {
  if (!include.empty() && !exclude.empty())
    return parse_error{1, 1, "include and exclude are mutually exclusive"};
  const bool including = !include.empty();
  const std::string_view text = including ? include : exclude;
  const std::size_t n = c.node_count();
  // Hosts by name (case-insensitively, the first node of a name first): O(n log n), then O(log n)
  // a node spec.
  std::vector<std::size_t> by_host(n);
  for (std::size_t i = 0; i < n; ++i) by_host[i] = i;
  std::sort(by_host.begin(), by_host.end(), [&c](std::size_t a, std::size_t b) {
    const int cmp = detail::compare_host(c.node(a).host, c.node(b).host);
    return cmp < 0 || (cmp == 0 && a < b);
  });
  const auto find_node = [&](std::string_view host) {
    const auto it = std::lower_bound(by_host.begin(), by_host.end(), host,
                                     [&c](std::size_t a, std::string_view h) {
                                       return detail::compare_host(c.node(a).host, h) < 0;
                                     });
    return it != by_host.end() && detail::compare_host(c.node(*it).host, host) == 0 ? *it : n;
  };
  const auto has_device = [&c](std::size_t node, long long id) {
    const std::vector<int>& listed = c.devices(node);
    if (listed.empty()) return id < c.nproc(node);
    return std::find(listed.begin(), listed.end(), id) != listed.end();
  };
  // The nodes the filter names: all of their devices (whole), or the ids listed.
  struct selection {
    bool whole = false;
    std::vector<int> ids;
  };
  std::unordered_map<std::size_t, selection> named;
  std::size_t start = 0;
  while (!text.empty()) {
    std::size_t at = text.find('@', start);
    if (at == std::string_view::npos) at = text.size();
    const std::string_view spec = text.substr(start, at - start);
    const std::size_t column = start + 1;
    if (spec.empty()) return parse_error{1, column, "empty node spec; expected host or host:0,1"};
    const std::size_t colon = spec.find(':');
    if (colon != std::string_view::npos && spec.find(':', colon + 1) != std::string_view::npos)
      return parse_error{1, column, "IPv6 hosts cannot be named in include/exclude filters"};
    const std::string_view host = spec.substr(0, colon);
    const std::size_t node = find_node(host);
    if (node == n)
      return parse_error{1, column,
                         detail::concat("host ", detail::quoted(host), " is not in the cluster"),
                         errc::unknown_host};
    selection& sel = named[node];
    if (colon == std::string_view::npos) {
      sel.whole = true;
    } else {
      std::size_t s = colon + 1;
      while (true) {
        std::size_t comma = spec.find(',', s);
        if (comma == std::string_view::npos) comma = spec.size();
        const std::string_view id_text = spec.substr(s, comma - s);
        long long id = 0;
        if (!detail::parse_decimal(id_text, INT_MAX, id))
          return parse_error{1, column + s,
                             detail::concat("device id must be a non-negative integer, got ",
                                            detail::quoted(id_text))};
        if (!has_device(node, id))
          return parse_error{
              1, column + s,
              detail::concat("device ", id, " is not on host ", detail::quoted(host),
                             ", which has devices ",
                             detail::describe_devices(c.devices(node), c.nproc(node))),
              errc::unknown_host};
        sel.ids.push_back(static_cast<int>(id));
        if (comma == spec.size()) break;
        s = comma + 1;
      }
    }
    if (at == text.size()) break;
    start = at + 1;
  }
  for (auto& entry : named) {
    std::sort(entry.second.ids.begin(), entry.second.ids.end());
    entry.second.ids.erase(std::unique(entry.second.ids.begin(), entry.second.ids.end()),
                           entry.second.ids.end());
  }
  // Each node keeps its devices in their order, less (exclude) or only (include) those selected.
  cluster_builder builder;
  std::vector<std::vector<int>> kept;
  filtered_cluster out;
  for (std::size_t i = 0; i < n; ++i) {
    const auto found = named.find(i);
    const selection* sel = found == named.end() ? nullptr : &found->second;
    const auto selected = [sel](int d) {
      return sel && (sel->whole || std::binary_search(sel->ids.begin(), sel->ids.end(), d));
    };
    if (including && !sel) continue;
    if (!including && sel && sel->whole) continue;
    const std::vector<int>& listed = c.devices(i);
    // How many devices the node keeps, before any list is built.
    long long keep = 0;
    if (including)
      keep = sel->whole ? (listed.empty() ? c.nproc(i) : static_cast<long long>(listed.size()))
                        : static_cast<long long>(sel->ids.size());
    else
      keep = (listed.empty() ? c.nproc(i) : static_cast<long long>(listed.size())) -
             (sel ? static_cast<long long>(sel->ids.size()) : 0);
    if (keep <= 0) continue;
    if (keep > static_cast<long long>(detail::max_listed_devices))
      return parse_error{
          1, 1,
          detail::concat("node ", i, " (", detail::quoted(c.node(i).host), ") would list ", keep,
                         " devices, more than ", detail::max_listed_devices,
                         " (a filtered node lists every device it keeps)"),
          errc::limit_exceeded};
    std::vector<int> ids;
    ids.reserve(static_cast<std::size_t>(keep));
    if (listed.empty() && including && !sel->whole) {
      ids = sel->ids;  // sorted, and each one of the node's 0 .. nproc-1
    } else if (listed.empty()) {
      // All of 0 .. nproc-1 but the excluded: nproc is at most max_listed_devices plus their count.
      for (int d = 0; d < c.nproc(i); ++d)
        if (including ? selected(d) : !selected(d)) ids.push_back(d);
    } else {
      for (int d : listed)
        if (including ? selected(d) : !selected(d)) ids.push_back(d);
    }
    node_spec spec = c.node(i);  // every field of the node, its ceiling too
    spec.nproc = static_cast<int>(ids.size());
    builder.add(spec);
    kept.push_back(std::move(ids));
    out.source_node.push_back(i);
  }
  if (kept.empty()) return parse_error{1, 1, "the filter leaves no devices", errc::no_devices};
  out.nodes = builder.finish();
  for (std::size_t k = 0; k < kept.size(); ++k) out.nodes.set_devices(k, std::move(kept[k]));
  return out;
}

/// Applies DeepSpeed's --include or --exclude filter to a cluster:
///   include "worker-0@worker-1:0,2"  keeps all of worker-0's, and devices 0 and 2 of worker-1
///   exclude "worker-1:0"             keeps everything but device 0 of worker-1
/// Nodespecs are separated by '@'; `host` alone means all of its devices (DeepSpeed's documented
/// meaning, which its code lost in 0.15.2). A node's devices are cluster::devices(i), or 0 ..
/// nproc-1 when it has none. The result keeps the cluster's node order; each kept node runs one
/// worker per selected device and carries the list (CUDA_VISIBLE_DEVICES). Errors, with the
/// column: both filters given, an unknown host, a device the host does not have (upstream
/// accepts it), a malformed device id, an IPv6 host (the ':' is the devices'), a filter that
/// leaves no device, and a node that would list more than 65536 devices. O(n log n + filter).
[[nodiscard]] inline result<cluster> filter_devices(const cluster& c, std::string_view include,
                                                    std::string_view exclude = {}) {
  auto r = filter_devices_mapped(c, include, exclude);
  if (!r) return r.error();
  return std::move(r->nodes);
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_DEVICE_FILTER_HPP
// ---- hetlaunch/hostfile.hpp
// hetlaunch: the host lists clusters already have — DeepSpeed and Open MPI hostfiles, MPICH
// "host:N" files, Horovod "-H h1:4,h2:8" lists. DeepSpeed's --include/--exclude filters, which
// go with them, are in device_filter.hpp (included here).
#ifndef HETLAUNCH_HOSTFILE_HPP
#define HETLAUNCH_HOSTFILE_HPP



namespace hetlaunch {

/// What host-list parsing tolerates.
struct hostfile_options {
  /// '_' in host names (RFC 1123 forbids it; some clusters use it).
  bool allow_underscore = false;
  /// A host named twice (several agents on one host), as validate_options::allow_duplicate_hosts.
  bool allow_duplicate_hosts = false;
  /// `slots=auto` (`host:auto`): the host's GPU count, to be asked for by a launcher. Such a node
  /// gets nproc 0, which validation refuses: give it its count before planning. Off by default,
  /// and then `auto` is an error that says who can resolve it.
  bool allow_auto_slots = false;
};

namespace detail {
// How many single-character edits (insert, delete, replace) turn a into b, for words of up to 31
// characters (a typo of a key or a flag); SIZE_MAX for longer ones. Allocates nothing.
[[nodiscard]] inline std::size_t edit_distance(std::string_view a, std::string_view b) noexcept {
  if (a.size() > 31 || b.size() > 31) return static_cast<std::size_t>(-1);
  std::size_t row[32];
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const std::size_t replace = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min(std::min(row[j] + 1, row[j - 1] + 1), replace);
      diagonal = up;
    }
  }
  return row[b.size()];
}
// Whether a is a typo of b: at most two edits away.
[[nodiscard]] inline bool within_two_edits(std::string_view a, std::string_view b) noexcept {
  return edit_distance(a, b) <= 2;
}
}  // namespace detail

namespace detail {

constexpr bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }

// A positive decimal int: ASCII digits only, at most INT_MAX.
inline bool positive_int(std::string_view text, int& value) {
  long long v = 0;
  if (!parse_decimal(text, INT_MAX, v) || v < 1) return false;
  value = static_cast<int>(v);
  return true;
}

// A slot count: a positive int, or "auto" (-1) when allowed. The message of a refused "auto"
// says who can resolve it.
inline bool slot_count(std::string_view text, bool allow_auto, int& value) {
  if (allow_auto && text == "auto") {
    value = -1;
    return true;
  }
  return positive_int(text, value);
}
inline std::string slot_count_problem(std::string_view key, std::string_view text) {
  if (text == "auto")
    return concat(
        key,
        "=auto asks the host for its GPU count, which only a launcher can do: use `hetlaunch discover` ",
        "or `hetlaunch run` (hostfile_options::allow_auto_slots)");
  return concat(key, " must be a positive integer, got ", quoted(text));
}

inline std::string host_problem_text(std::string_view host, const host_check& hc) {
  return concat("host ", quoted(host), " is not a valid RFC 1123 name or IP literal: ",
                describe_host_issue(host, hc.issue, hc.position));
}

inline const char* const slot_keys[] = {"slots", "count", "cpu"};
inline const char* const max_slot_keys[] = {"max_slots", "max-slots", "slots_max", "slots-max",
                                            "cpu_max",   "cpu-max",   "max_cpu",   "max-cpu",
                                            "count_max", "count-max", "max_count", "max-count"};
template <std::size_t N>
bool one_of(std::string_view key, const char* const (&keys)[N]) {
  for (const char* k : keys)
    if (key == k) return true;
  return false;
}

// One line of a hostfile, read: a host and its slots, or nothing (blank or comment).
struct hostfile_entry {
  bool has_host = false;
  std::string_view host;
  std::size_t column = 0;  // of the host, from 1
  int slots = 0;
  std::string_view weight = "1";
  int max_batch = 0;  // 0: none
};

// A node's ceiling: a positive integer up to INT_MAX, ASCII digits only.
inline bool parse_max_batch(std::string_view text, int& out) {
  long long v = 0;
  if (!parse_decimal(text, INT_MAX, v) || v < 1) return false;
  out = static_cast<int>(v);
  return true;
}
inline std::string max_batch_problem(std::string_view text) {
  return concat(
      "max_batch must be a positive integer up to 2147483647 (the most samples one "
      "worker takes in one forward), got ",
      quoted(text));
}

// Reads one line (without its '\n'). Fields are key=value, with blanks allowed around '=' as
// Open MPI allows them ("slots = 4").
// `checked`: the line was read before without error, so the host need not be checked again.
inline result<hostfile_entry> read_hostfile_line(std::string_view line, std::size_t line_no,
                                                 const hostfile_options& options, bool checked) {
  const bool allow_underscore = options.allow_underscore, allow_auto = options.allow_auto_slots;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const std::size_t hash = line.find('#');
  if (hash != std::string_view::npos) line = line.substr(0, hash);
  const auto error = [line_no](std::size_t column, std::string message,
                               errc code = errc::bad_syntax) {
    return parse_error{line_no, column, std::move(message), code};
  };
  std::size_t i = 0;
  const auto skip_blanks = [&] {
    while (i < line.size() && is_blank(line[i])) ++i;
  };
  skip_blanks();
  hostfile_entry e;
  if (i == line.size()) return e;
  const std::size_t host_start = i;
  while (i < line.size() && !is_blank(line[i])) ++i;
  e.has_host = true;
  e.host = line.substr(host_start, i - host_start);
  e.column = host_start + 1;
  int slots = 0, max_slots = 0;
  std::size_t slots_column = 0;
  std::string_view slots_key;  // the key that gave the slots, for "given twice"
  bool has_weight = false, has_max_batch = false;
  const std::size_t colon = e.host.find(':');
  if (colon != std::string_view::npos &&
      e.host.find(':', colon + 1) == std::string_view::npos) {  // MPICH host:N
    const std::string_view count = e.host.substr(colon + 1);
    if (!slot_count(count, allow_auto, slots))
      return error(e.column + colon + 1, slot_count_problem("slots", count), errc::bad_nproc);
    slots_column = e.column + colon + 1;
    slots_key = "host:N";
    e.host = e.host.substr(0, colon);
  }
  if (!checked) {
    const host_check hc = check_host(e.host, allow_underscore);
    if (hc.issue != host_issue::none)
      return error(e.column + hc.position, host_problem_text(e.host, hc), errc::bad_host);
  }
  while (true) {
    skip_blanks();
    if (i == line.size()) break;
    const std::size_t field_start = i;
    while (i < line.size() && !is_blank(line[i]) && line[i] != '=') ++i;
    const std::string_view key = line.substr(field_start, i - field_start);
    skip_blanks();
    const bool has_value = i < line.size() && line[i] == '=';
    std::string_view value;
    std::size_t value_start = i;
    if (has_value) {
      ++i;
      skip_blanks();
      value_start = i;
      while (i < line.size() && !is_blank(line[i])) ++i;
      value = line.substr(value_start, i - value_start);
    }
    const bool is_slots = has_value && one_of(key, slot_keys);
    const bool is_max = has_value && one_of(key, max_slot_keys);
    if (has_value && key == "weight") {
      if (has_weight)
        return error(field_start + 1, concat("weight is given twice for host ", quoted(e.host)));
      const weight_check wc = check_weight(value);
      if (!wc)
        return error(value_start + 1 + wc.position, weight_refusal(value, wc.issue),
                     errc::bad_weight);
      has_weight = true;
      e.weight = value;
      continue;
    }
    if (has_value && key == "max_batch") {
      if (has_max_batch)
        return error(field_start + 1, concat("max_batch is given twice for host ", quoted(e.host)));
      if (!parse_max_batch(value, e.max_batch))
        return error(value_start + 1, max_batch_problem(value), errc::bad_max_batch);
      has_max_batch = true;
      continue;
    }
    if (!is_slots && !is_max) {
      const std::size_t shown_end = has_value ? i : field_start + key.size();
      std::string_view nearest;
      if (has_value)  // a key's typo: "slot=4", "wieght=2"
        for (std::string_view known : {"slots", "max_slots", "weight", "max_batch"})
          if (detail::within_two_edits(key, known)) nearest = known;
      return error(
          field_start + 1,
          concat("unexpected ", quoted(line.substr(field_start, shown_end - field_start)),
                 nearest.empty() ? std::string() : concat(" (did you mean ", nearest, "=?)"),
                 "; expected slots=N, max_slots=N, weight=W or max_batch=M"));
    }
    int number = 0;
    if (!slot_count(value, allow_auto && is_slots, number))
      return error(value_start + 1,
                   slot_count_problem(is_slots ? key : std::string_view("max_slots"), value),
                   errc::bad_nproc);
    if (is_slots) {
      if (slots != 0)
        return error(
            field_start + 1,
            key == slots_key || slots_key.empty()
                ? concat(key, " is given twice for host ", quoted(e.host))
                : concat(key, "= gives the slots of host ", quoted(e.host), " again (", slots_key,
                         slots_key == "host:N" ? " gave them)" : "= gave them)"));
      slots = number;
      slots_key = key;
      slots_column = value_start + 1;
    } else {
      if (max_slots != 0)
        return error(field_start + 1, concat("max_slots is given twice for host ", quoted(e.host)));
      max_slots = number;
    }
  }
  if (max_slots != 0 && slots > 0 && max_slots < slots)
    return error(slots_column,
                 concat("max_slots (", max_slots, ") is less than slots (", slots, ")"));
  e.slots = slots == -1 ? 0 : slots != 0 ? slots : (max_slots != 0 ? max_slots : 1);
  return e;
}

// Calls visit(line, line_no) for every line; stops when visit returns false.
template <class Visit>
void each_line(std::string_view text, Visit visit) {
  std::size_t pos = 0, line_no = 0;
  while (pos <= text.size()) {
    ++line_no;
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    if (!visit(text.substr(pos, end - pos), line_no)) return;
    if (end == text.size()) return;
    pos = end + 1;
  }
}

// One host of a list, where it was read.
struct list_entry {
  std::string_view host;
  int slots = 0;
  std::size_t line = 0, column = 0;
  std::string_view weight = "1";
  int max_batch = 0;
};

// The cluster of a host list read by `each(checked, visit)`, which calls visit(list_entry) for
// every host in order until visit returns false, and returns the first error of the text (with
// `checked`, the text is known to have none). Three passes: every error and the exact size; the
// cluster, at that size; and, for a host named twice or a world size past INT_MAX (all a single
// entry cannot tell), the place of the node concerned, named by `where(line, column)` ("line 3",
// "column 7"). Every other problem was refused where it was read.
template <class Each, class Where>
result<cluster> parse_entries(Each each, validate_options options, Where where,
                              const char* no_hosts) {
  std::size_t hosts = 0, chars = 0;
  if (auto r = each(false,
                    [&](const list_entry& e) {
                      ++hosts;
                      chars += e.host.size();
                      return true;
                    });
      !r)
    return r.error();
  if (hosts == 0) return parse_error{1, 1, no_hosts, errc::empty_cluster};
  cluster_builder builder;
  builder.reserve(hosts, chars);
  bool ceilings = false;
  (void)each(true, [&](const list_entry& e) {
    builder.add(e.host, e.slots, "default", e.weight);
    ceilings = ceilings || e.max_batch > 0;
    return true;
  });
  cluster c = builder.finish();  // not const: returned by move
  if (ceilings) {
    std::size_t node = 0;
    (void)each(true, [&](const list_entry& e) {
      c.set_max_batch(node++, e.max_batch);
      return true;
    });
  }
  const auto place = [&each](std::size_t node) {
    std::pair<std::size_t, std::size_t> at{1, 1};
    std::size_t seen = 0;
    (void)each(true, [&](const list_entry& e) {
      if (seen++ < node) return true;
      at = {e.line, e.column};
      return false;
    });
    return at;
  };
  // Every host was checked and every count is positive where it was read; what is left is the
  // first node, in node order, that repeats a host or takes the world size past INT_MAX.
  std::size_t overflow = c.node_count();
  long long world = 0;
  for (std::size_t i = 0; i < c.node_count() && overflow == c.node_count(); ++i)
    if ((world += c.nproc(i)) > INT_MAX) overflow = i;
  std::pair<std::size_t, std::size_t> dup{c.node_count(), 0};
  if (!options.allow_duplicate_hosts) {
    const auto dups = duplicate_hosts(c.node_count(), [&c](std::size_t i) { return c.node(i); });
    if (!dups.empty()) dup = dups.front();
  }
  if (dup.first < overflow) {
    const std::pair<std::size_t, std::size_t> at = place(dup.first), earlier = place(dup.second);
    return parse_error{at.first, at.second,
                       concat("host ", quoted(c.node(dup.first).host), " is already ",
                              where(earlier.first, earlier.second)),
                       errc::duplicate_host};
  }
  if (overflow < c.node_count()) {
    const std::pair<std::size_t, std::size_t> at = place(overflow);
    return parse_error{at.first, at.second,
                       concat("the world size would be ", world, ", more than ", INT_MAX,
                              " (torch.distributed ranks are 32-bit)"),
                       errc::world_size_overflow};
  }
  return c;
}

}  // namespace detail

/// A node's memory ceiling as a hostfile's max_batch= or --max-batch gives it: a positive integer
/// up to INT_MAX, ASCII digits only. Refused with bad_max_batch and the message a hostfile's
/// error carries.
[[nodiscard]] inline result<int> parse_max_batch(std::string_view text) {
  int ceiling = 0;
  if (!detail::parse_max_batch(text, ceiling))
    return parse_error{detail::max_batch_problem(text), errc::bad_max_batch};
  return ceiling;
}

/// Parses a hostfile into a cluster, one node per host line, in file order:
///   worker-0 slots=8            # DeepSpeed and Open MPI
///   worker-1 slots=4 max_slots=4
///   worker-2:2                  # MPICH
///   worker-3                    # a bare host: 1 slot
///   worker-4 slots=8 weight=2.5 # each worker's share of a global batch (shares.hpp)
///   worker-5 slots=4 max_batch=16 # at most 16 samples a worker in one forward
/// `#` starts a comment anywhere on a line; blank lines, tabs and CRLF line ends are fine, and so
/// are blanks around '=' ("slots = 4"), as Open MPI allows. Open MPI's `count=`/`cpu=` mean slots,
/// and `max_slots` (or a synonym such as `max-slots`) alone sets the slots; max_slots below slots
/// is an error. Hosts must be RFC 1123 names or IP literals (IPv6 without brackets, and then
/// without `:N`). Any other field, a repeated field, a host named twice, a count that is not a
/// positive integer, a byte order mark, or a file without hosts is an error with its line and
/// column:
///   line 3, column 11: slots must be a positive integer, got '0'
/// Time and memory are linear in the text; the cluster costs 16 bytes a host plus its name.
[[nodiscard]] inline result<cluster> parse_hostfile(std::string_view text,
                                                    hostfile_options options = {}) {
  if (text.substr(0, 3) == "\xef\xbb\xbf")
    return parse_error{
        1, 1,
        "the file starts with a UTF-8 byte order mark (U+FEFF), which is not part of a "
        "host name; save it without one"};
  const auto each = [text, &options](bool checked, auto visit) -> result<bool> {
    parse_error error{};
    bool failed = false;
    detail::each_line(text, [&](std::string_view line, std::size_t line_no) {
      const auto e = detail::read_hostfile_line(line, line_no, options, checked);
      if (!e) {
        error = e.error();
        failed = true;
        return false;
      }
      return !e->has_host || visit(detail::list_entry{e->host, e->slots, line_no, e->column,
                                                      e->weight, e->max_batch});
    });
    if (failed) return error;
    return true;
  };
  const auto where = [](std::size_t line, std::size_t) { return detail::concat("on line ", line); };
  return detail::parse_entries(each, {options.allow_duplicate_hosts, options.allow_underscore},
                               where, "the hostfile names no hosts");
}

namespace detail {
// One item of a host:slots list, read.
struct host_list_item {
  std::string_view host;
  std::size_t column = 0;
  int slots = 0;
};
inline result<host_list_item> read_host_list_item(std::string_view text, std::size_t b,
                                                  std::size_t e, bool allow_underscore,
                                                  bool allow_auto = false) {
  while (b < e && is_blank(text[b])) ++b;
  while (e > b && is_blank(text[e - 1])) --e;
  const std::string_view item = text.substr(b, e - b);
  const std::size_t column = b + 1;
  if (item.empty()) return parse_error{1, column, "empty item; expected host:slots"};
  const std::size_t colon = item.rfind(':');
  if (colon == std::string_view::npos)
    return parse_error{1, column, concat(quoted(item), " has no slot count; expected host:slots")};
  const std::string_view host = item.substr(0, colon);
  const host_check hc = check_host(host, allow_underscore);
  if (host.find(':') != std::string_view::npos && hc.issue == host_issue::none)
    return parse_error{1, column, "IPv6 addresses cannot be written in host:slots lists"};
  if (host.find(':') != std::string_view::npos && hc.issue == host_issue::bad_ipv6)
    return parse_error{1, column,
                       concat(quoted(item),
                              " has more than one ':'; expected host:slots (an IPv6 address "
                              "cannot be written in host:slots lists)")};
  int slots = 0;
  if (!slot_count(item.substr(colon + 1), allow_auto, slots))
    return parse_error{1, column + colon + 1, slot_count_problem("slots", item.substr(colon + 1)),
                       errc::bad_nproc};
  if (hc.issue != host_issue::none)
    return parse_error{1, column + hc.position, host_problem_text(host, hc), errc::bad_host};
  return host_list_item{host, column, slots == -1 ? 0 : slots};
}
template <class Visit>
void each_item(std::string_view text, Visit visit) {
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    if (!visit(start, comma)) return;
    if (comma == text.size()) return;
    start = comma + 1;
  }
}
}  // namespace detail

/// Parses a Horovod-style host list, "h1:4,h2:8": comma-separated `host:slots` with blanks
/// allowed around items; every item needs its slot count. Errors have line 1 and the column of
/// the offending item (a host named twice, a count that is not a positive integer, an empty
/// item). IPv6 literals cannot be written here (the ':' is the count's). Linear in the text.
[[nodiscard]] inline result<cluster> parse_host_list(std::string_view text,
                                                     hostfile_options options = {}) {
  const auto each = [text, &options](bool, auto visit) -> result<bool> {
    parse_error error{};
    bool failed = false;
    detail::each_item(text, [&](std::size_t b, std::size_t e) {
      const auto item = detail::read_host_list_item(text, b, e, options.allow_underscore,
                                                    options.allow_auto_slots);
      if (!item) {
        error = item.error();
        failed = true;
        return false;
      }
      return visit(detail::list_entry{item->host, item->slots, 1, item->column});
    });
    if (failed) return error;
    return true;
  };
  const auto where = [](std::size_t, std::size_t column) {
    return detail::concat("at column ", column);
  };
  return detail::parse_entries(each, {options.allow_duplicate_hosts, options.allow_underscore},
                               where, "the host list names no hosts");
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_HOSTFILE_HPP
// ---- hetlaunch/slurm_hostlist.hpp
// hetlaunch: Slurm host lists ("gpu[01-04],cpu7") and count lists ("2(x3),1"), read and written
// with Slurm's own semantics and errors where Slurm would silently go wrong.
#ifndef HETLAUNCH_SLURM_HOSTLIST_HPP
#define HETLAUNCH_SLURM_HOSTLIST_HPP



namespace hetlaunch {

namespace detail {

// Slurm's limits (src/common/hostlist.c): hosts in one range item, items in one bracket, and
// hosts of one bracket that is not the last of its name.
constexpr unsigned long long slurm_max_range = 65536;
constexpr std::size_t slurm_max_ranges = 256 * 1024;
constexpr unsigned long long slurm_max_prefix_count = 65536;

constexpr bool is_hostlist_separator(char c) noexcept {
  return c == ',' || c == ' ' || c == '\t' || c == '\n';
}
constexpr bool is_c_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

struct slurm_range {
  unsigned long long lo = 0, hi = 0;
  std::size_t width = 0;  // printed with at least this many digits: the low bound's text length
};

// One bracket of a name: its ranges, the number of values, and the bytes those values print as.
struct slurm_bracket {
  std::vector<slurm_range> ranges;
  unsigned long long count = 0;
  unsigned long long digits = 0;  // the sum of the printed lengths of every value
};

// A name with brackets, as Slurm reads it: text[0] [b0] text[1] [b1] ... [b(k-1)] text[k].
struct slurm_name {
  std::vector<std::string_view> text;
  std::vector<slurm_bracket> brackets;
};

inline std::size_t decimal_digits(unsigned long long n) noexcept {
  std::size_t d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

// Where the run of digits at the end of `text` starts (text.size() when there is none).
inline std::size_t trailing_digits(std::string_view text) noexcept {
  std::size_t i = text.size();
  while (i > 0 && is_digit(text[i - 1])) --i;
  return i;
}

// The value of a run of decimal digits; false when it passes 2^64 - 1, which Slurm saturates.
inline bool digits_value(std::string_view digits, unsigned long long& value) noexcept {
  const digit_run run = read_digits(digits, 0);
  value = run.value;
  return !run.too_large;
}

// Sum over v in [lo, hi] of max(width, digits(v)), by decades: O(20) whatever the range.
inline unsigned long long printed_length(const slurm_range& r) noexcept {
  unsigned long long sum = 0;
  unsigned long long decade_lo = 0, decade_hi = 9;
  for (std::size_t d = 1; d <= 20; ++d) {
    const unsigned long long a = r.lo > decade_lo ? r.lo : decade_lo;
    const unsigned long long b = r.hi < decade_hi ? r.hi : decade_hi;
    if (a <= b) sum += (b - a + 1) * (r.width > d ? r.width : d);  // at most 65536 * 20
    if (decade_hi == ~0ull || decade_hi >= r.hi) break;
    decade_lo = decade_hi + 1;
    decade_hi = decade_hi > (~0ull - 9) / 10 ? ~0ull : decade_hi * 10 + 9;
  }
  return sum;
}

inline void append_number(std::string& out, unsigned long long n, std::size_t width) {
  char digits[20];
  std::size_t len = 0;
  do {
    digits[len++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0);
  if (len < width) out.append(width - len, '0');
  while (len > 0) out += digits[--len];
}

struct hostlist_parser {
  std::string_view expr;
  std::size_t max_hosts;
  std::size_t max_bytes;
  parse_error error{};
  bool failed = false;
  unsigned long long hosts = 0;  // names counted so far
  unsigned long long bytes = 0;  // their bytes

  bool fail(std::size_t offset, std::string message, errc code = errc::bad_syntax) {
    if (!failed) error = {1, offset + 1, std::move(message), code};
    failed = true;
    return false;
  }

  // strtoul's grammar as Slurm relies on it: blanks, an optional '+', decimal digits. Returns the
  // end of the digits (0 when there are none). Unlike strtoul, overflow is an error.
  bool parse_number(std::string_view text, std::size_t offset, std::size_t& end,
                    unsigned long long& value) {
    std::size_t i = 0;
    while (i < text.size() && is_c_space(text[i])) ++i;
    if (i < text.size() && text[i] == '+') ++i;
    const std::size_t digits = i;
    while (i < text.size() && is_digit(text[i])) ++i;
    if (!digits_value(text.substr(digits, i - digits), value))
      return fail(offset, concat("number ", quoted(text.substr(digits, i - digits)),
                                 " is larger than 2^64 - 1 (Slurm would silently change it)"));
    end = i == digits ? 0 : i;
    return true;
  }

  // One item of a bracket: "7", "01-10", as _parse_single_range reads it.
  bool parse_range(std::string_view item, std::size_t offset, slurm_range& out) {
    const auto invalid = [&](const char* why) {
      return fail(offset, concat("invalid range ", quoted(item), ": ", why));
    };
    if (item.find('x') != std::string_view::npos)
      return invalid("'x' (box syntax) is for multi-dimensional clusters");
    const std::size_t dash = item.find('-');
    const std::string_view lo_text = item.substr(0, dash);
    const std::string_view hi_text =
        dash == std::string_view::npos ? std::string_view() : item.substr(dash + 1);
    if (!hi_text.empty() && hi_text[0] == '-') return invalid("negative numbers are not allowed");
    std::size_t lo_end = 0, hi_end = 0;
    if (!parse_number(lo_text, offset, lo_end, out.lo)) return false;
    if (lo_end == 0) {
      if (item.empty()) return fail(offset, "empty range item");
      if (lo_text.empty()) return invalid("negative numbers are not allowed");
      return invalid("expected a number");
    }
    out.width = lo_text.size();
    if (!hi_text.empty()) {
      if (!parse_number(hi_text, offset, hi_end, out.hi)) return false;
      if (hi_end == 0) return invalid("expected a number after '-'");
      if (hi_end != hi_text.size())
        return invalid("unexpected text after the high bound (Slurm has no steps)");
    } else {
      out.hi = out.lo;  // "1-" means "1", as in Slurm
      if (lo_end != lo_text.size()) return invalid("expected a number");
    }
    if (out.lo > out.hi) return invalid("the low bound is above the high bound");
    if (out.hi - out.lo >= slurm_max_range)  // hi - lo + 1 would wrap for [0-18446744073709551615]
      return fail(offset,
                  concat("too many hosts in range ", quoted(item), " (Slurm's limit is 65536)"),
                  errc::limit_exceeded);
    return true;
  }

  bool parse_bracket(std::string_view text, std::size_t offset, slurm_bracket& out) {
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = text.find(',', start);
      const std::string_view item = text.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (out.ranges.size() == slurm_max_ranges)
        return fail(offset, "more than 262144 items in one bracket", errc::limit_exceeded);
      slurm_range r;
      if (!parse_range(item, offset + start, r)) return false;
      out.ranges.push_back(r);
      out.count += r.hi - r.lo + 1;     // at most 2^18 items of 2^16: no wrap
      out.digits += printed_length(r);  // at most 2^18 * 2^16 * 20: no wrap
      if (comma == std::string_view::npos) return true;
      start = comma + 1;
    }
  }

  std::string too_many_hosts() const {
    return concat("the host list names more than ", max_hosts,
                  " hosts, the limit (max_hosts; hetlaunch's --max-hosts raises it)");
  }
  std::string too_many_bytes() const {
    return concat("the host list's names take more than ", max_bytes,
                  " bytes, the limit (max_bytes; hetlaunch's --max-bytes raises it)");
  }

  // Adds the names of one token: `count` names of `bytes` bytes, refusing more than the limits.
  bool add(unsigned long long count, unsigned long long name_bytes, bool bytes_overflow,
           std::size_t offset) {
    unsigned long long total = 0;
    if (!checked_add(hosts, count, total) || total > max_hosts)
      return fail(offset, too_many_hosts(), errc::limit_exceeded);
    unsigned long long size = 0;
    if (bytes_overflow || !checked_add(bytes, name_bytes, size) || size > max_bytes)
      return fail(offset, too_many_bytes(), errc::limit_exceeded);
    hosts = total;
    bytes = size;
    return true;
  }

  // A plain name keeps a trailing number only if it fits 64 bits; Slurm saturates a larger one.
  bool check_plain(std::string_view name, std::size_t offset) {
    const std::size_t i = trailing_digits(name);
    unsigned long long value = 0;
    if (digits_value(name.substr(i), value)) return true;
    return fail(offset + i, concat("the number at the end of ", quoted(name),
                                   " is larger than 2^64 - 1 (Slurm would silently change it)"));
  }

  // Reads a token with brackets as Slurm's _push_range_list does: the last '[' ... ']' is the
  // innermost loop; what comes before it is searched from the right for earlier brackets, each a
  // '[' after which the prefix's last ']' stands. Text around the brackets is kept as it is.
  bool parse_name(std::string_view tok, std::size_t offset, std::size_t open, slurm_name& name) {
    const std::size_t close = tok.find(']', open);
    if (close == std::string_view::npos) return fail(offset + open, "'[' without a matching ']'");
    name.text.push_back(tok.substr(close + 1));
    name.brackets.emplace_back();
    if (!parse_bracket(tok.substr(open + 1, close - open - 1), offset + open + 1,
                       name.brackets.back()))
      return false;
    std::string_view prefix = tok.substr(0, open);
    while (true) {
      const std::size_t o = prefix.rfind('[');
      const std::size_t c =
          o == std::string_view::npos ? std::string_view::npos : prefix.rfind(']');
      if (o == std::string_view::npos || c == std::string_view::npos || c < o) break;
      name.text.push_back(prefix.substr(c + 1));
      name.brackets.emplace_back();
      slurm_bracket& b = name.brackets.back();
      if (!parse_bracket(prefix.substr(o + 1, c - o - 1), offset + o + 1, b)) return false;
      if (b.count > slurm_max_prefix_count)
        return fail(offset + o,
                    "a bracket before the last one of a name expands to more than 65536 hosts",
                    errc::limit_exceeded);
      prefix = prefix.substr(0, o);
    }
    name.text.push_back(prefix);
    // Collected from the right: put text and brackets in reading order.
    std::reverse(name.text.begin(), name.text.end());
    std::reverse(name.brackets.begin(), name.brackets.end());
    return true;
  }

  // Counts a name's hosts and bytes exactly: every value of a bracket appears count / its count
  // times, so the bytes are count * text + sum over brackets of digits * (count / bracket count).
  bool count_name(const slurm_name& name, std::size_t offset) {
    unsigned long long count = 1;
    bool overflow = false;
    for (const slurm_bracket& b : name.brackets)
      if (!checked_mul(count, b.count, count))
        return fail(offset, too_many_hosts(), errc::limit_exceeded);
    unsigned long long text = 0;
    for (std::string_view t : name.text) text += t.size();
    unsigned long long name_bytes = 0;
    overflow = !checked_mul(count, text, name_bytes);
    for (const slurm_bracket& b : name.brackets) {
      unsigned long long part = 0;
      overflow = overflow || !checked_mul(b.digits, count / b.count, part) ||
                 !checked_add(name_bytes, part, name_bytes);
    }
    return add(count, name_bytes, overflow, offset);
  }

  // Writes a name's hosts in Slurm's order: the last bracket varies fastest, then the first,
  // the second, ... and the last but one slowest (brackets before the last are expanded right
  // to left, each an outer loop of those to its left).
  template <class Visit>
  static void emit(const slurm_name& name, Visit&& visit) {
    const std::size_t k = name.brackets.size();
    std::vector<std::size_t> order;  // brackets from fastest to slowest
    order.push_back(k - 1);
    for (std::size_t j = 0; j + 1 < k; ++j) order.push_back(j);
    std::vector<std::size_t> item(k, 0);
    std::vector<unsigned long long> value(k);
    for (std::size_t j = 0; j < k; ++j) value[j] = name.brackets[j].ranges.front().lo;
    std::string host;
    while (true) {
      host.clear();
      for (std::size_t j = 0; j < k; ++j) {
        host.append(name.text[j].data(), name.text[j].size());
        append_number(host, value[j], name.brackets[j].ranges[item[j]].width);
      }
      host.append(name.text[k].data(), name.text[k].size());
      visit(std::string_view(host));
      // Advance the odometer.
      std::size_t digit = 0;
      for (; digit < k; ++digit) {
        const std::size_t j = order[digit];
        const std::vector<slurm_range>& ranges = name.brackets[j].ranges;
        if (value[j] != ranges[item[j]].hi) {
          ++value[j];
          break;
        }
        if (item[j] + 1 < ranges.size()) {
          ++item[j];
          value[j] = ranges[item[j]].lo;
          break;
        }
        item[j] = 0;
        value[j] = ranges.front().lo;
      }
      if (digit == k) return;
    }
  }

  // Tokens end at a separator, except between a '[' and the next ']' (Slurm's _next_tok). The
  // next ']' is remembered, so a text of many '[' is still read once.
  template <class Visit>
  bool each_token(Visit visit) {
    std::size_t i = 0;
    std::size_t next_close = 0;  // the first ']' at or after next_close's search start, or npos
    bool close_known = false;
    while (i < expr.size()) {
      while (i < expr.size() && is_hostlist_separator(expr[i])) ++i;
      if (i == expr.size()) break;
      const std::size_t start = i;
      while (i < expr.size() && !is_hostlist_separator(expr[i])) {
        if (expr[i] == '[') {
          if (!close_known || (next_close != std::string_view::npos && next_close < i)) {
            next_close = expr.find(']', i);
            close_known = true;
          }
          i = next_close == std::string_view::npos ? i + 1 : next_close + 1;
        } else {
          ++i;
        }
      }
      if (!visit(expr.substr(start, i - start), start)) return false;
    }
    return true;
  }
};

}  // namespace detail

/// Expands a Slurm host list as current Slurm (23.11 and later) does: "gpu[01-03],cpu[1,3]" gives
/// gpu01 gpu02 gpu03 cpu1 cpu3. Order and duplicates are kept; a range is zero-padded to the
/// length of its low bound's text ("[08-010]" gives 08 09 10); names may go on after a bracket
/// ("node[1-2]-ib"); with several brackets in a name the last is the innermost loop and the
/// others are expanded right to left, Slurm's own order. Separators are ',', blanks, tabs and
/// newlines, but not inside brackets.
///
/// Errors, with the column of the offending text: what Slurm refuses (a '[' without ']', an empty
/// item, letters, 'x', negative numbers, low above high, step syntax, more than 65536 hosts in
/// one range), and what Slurm silently turns into garbage: numbers past 2^64 - 1 (Slurm
/// saturates), an empty list. More than `max_hosts` names, or names of more than `max_bytes`
/// bytes in all, is an error found before anything is allocated. Time and memory are linear in
/// the input plus the output; nothing recurses.
namespace detail {
// A host list read and counted but not yet expanded: its names are visited one by one, each a
// view that lasts until the next, so a caller stores each host once, where it keeps it.
struct parsed_hostlist {
  std::vector<slurm_name> names;  // tokens with brackets, in order; plain ones are views
  std::vector<std::pair<std::string_view, std::size_t>>
      tokens;  // (token, index into names or npos)
  std::size_t hosts = 0;
  std::size_t bytes = 0;

  template <class Visit>
  void each(Visit&& visit) const {
    for (const auto& t : tokens) {
      if (t.second == std::string_view::npos)
        visit(t.first);
      else
        hostlist_parser::emit(names[t.second], visit);
    }
  }
};

inline result<parsed_hostlist> parse_hostlist(std::string_view expr, std::size_t max_hosts,
                                              std::size_t max_bytes) {
  parsed_hostlist out;
  std::vector<slurm_name>& names = out.names;
  std::vector<std::pair<std::string_view, std::size_t>>& tokens = out.tokens;
  hostlist_parser p{expr, max_hosts, max_bytes};
  p.each_token([&](std::string_view tok, std::size_t offset) {
    const std::size_t open = tok.rfind('[');
    if (open == std::string_view::npos) {
      if (!p.check_plain(tok, offset) || !p.add(1, tok.size(), false, offset)) return false;
      tokens.emplace_back(tok, std::string_view::npos);
      return true;
    }
    names.emplace_back();
    if (!p.parse_name(tok, offset, open, names.back()) || !p.count_name(names.back(), offset))
      return false;
    tokens.emplace_back(tok, names.size() - 1);
    return true;
  });
  if (p.failed) return p.error;
  if (p.hosts == 0) return parse_error{1, 1, "the host list is empty", errc::empty_cluster};
  out.hosts = static_cast<std::size_t>(p.hosts);
  out.bytes = static_cast<std::size_t>(p.bytes);
  return out;
}
}  // namespace detail

[[nodiscard]] inline result<std::vector<std::string>> expand_hostlist(
    std::string_view expr, std::size_t max_hosts = std::size_t{1} << 20,
    std::size_t max_bytes = std::size_t{1} << 27) {
  auto parsed = detail::parse_hostlist(expr, max_hosts, max_bytes);
  if (!parsed) return parsed.error();
  std::vector<std::string> hosts;
  hosts.reserve(parsed->hosts);
  parsed->each([&](std::string_view host) { hosts.emplace_back(host); });
  return hosts;
}

namespace detail {
// A host as Slurm's hostname_create splits it: text, then a run of trailing digits.
struct split_host {
  std::string_view prefix;
  bool numbered = false;
  unsigned long long number = 0;
  std::size_t width = 0;
};
inline split_host split_trailing_number(std::string_view host) {
  const std::size_t i = trailing_digits(host);
  split_host s{host};
  // No digits, or more than fit a number: the whole name is text.
  if (i == host.size() || !digits_value(host.substr(i), s.number)) return {host};
  s.prefix = host.substr(0, i);
  s.numbered = true;
  s.width = host.size() - i;
  return s;
}
// Slurm's _width_equiv: two widths print the same numbers when the zero padding of each number
// is the same under either width; then the narrower-padded width is taken for both.
inline bool widths_combine(unsigned long long n, std::size_t& wn, unsigned long long m,
                           std::size_t& wm) {
  if (wn == wm) return true;
  const auto pad = [](unsigned long long v, std::size_t w) {
    return w > decimal_digits(v) ? w - decimal_digits(v) : 0;
  };
  const bool n_same = pad(n, wn) == pad(n, wm);
  const bool m_same = pad(m, wm) == pad(m, wn);
  if (!n_same && !m_same) return false;
  if (!n_same)
    wm = wn;
  else
    wn = wm;
  return true;
}
}  // namespace detail

/// The inverse of expand_hostlist, as `scontrol show hostlist` prints it: consecutive hosts that
/// differ only in a trailing number of compatible width become a range, and neighbouring ranges
/// of one prefix share a bracket: {a1, a2, a3, b08, b09} gives "a[1-3],b[08-09]". Order and
/// duplicates are kept (sort first for the shortest form); names without a trailing number
/// stay as they are.
[[nodiscard]] inline std::string compress_hostlist(const std::vector<std::string>& hosts) {
  struct range {
    detail::split_host host;
    unsigned long long hi;
  };
  std::vector<range> ranges;
  for (const std::string& h : hosts) {
    const detail::split_host s = detail::split_trailing_number(h);
    if (!ranges.empty()) {
      range& tail = ranges.back();
      std::size_t tail_width = tail.host.width, width = s.width;
      if (tail.host.numbered && s.numbered && tail.host.prefix == s.prefix && tail.hi != ~0ull &&
          tail.hi + 1 == s.number &&
          detail::widths_combine(tail.host.number, tail_width, s.number, width)) {
        tail.host.width = tail_width;
        tail.hi = s.number;
        continue;
      }
    }
    ranges.push_back({s, s.number});
  }
  std::string out;
  const auto number = [&out](unsigned long long n, std::size_t width) {
    detail::append_number(out, n, width);
  };
  for (std::size_t i = 0; i < ranges.size();) {
    if (!out.empty()) out += ',';
    const range& first = ranges[i];
    out.append(first.host.prefix.data(), first.host.prefix.size());
    if (!first.host.numbered) {
      ++i;
      continue;
    }
    std::size_t end = i + 1;
    while (end < ranges.size() && ranges[end].host.numbered &&
           ranges[end].host.prefix == first.host.prefix)
      ++end;
    const bool bracket = end - i > 1 || first.hi != first.host.number;
    if (bracket) out += '[';
    for (std::size_t k = i; k < end; ++k) {
      if (k > i) out += ',';
      number(ranges[k].host.number, ranges[k].host.width);
      if (ranges[k].hi != ranges[k].host.number) {
        out += '-';
        number(ranges[k].hi, ranges[k].host.width);
      }
    }
    if (bracket) out += ']';
    i = end;
  }
  return out;
}

/// compress_hostlist, for names from the input: an error, naming the host and its place (from 1),
/// when a name is not one that its own host list gives back (expand_hostlist(name) == {name}):
/// an empty name, and names with ',', brackets or blanks, which a reader of the list would split
/// or expand ("a[1]" reads back as "a1", "a,b" as two hosts, "x[" not at all).
[[nodiscard]] inline result<std::string> try_compress_hostlist(
    const std::vector<std::string>& hosts) {
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const std::string& h = hosts[i];
    std::string why;
    if (h.empty()) {
      why = "an empty name";
    } else {
      const auto back =
          expand_hostlist(h, 2, 2 * h.size() + 2);  // no name it gives is longer than h
      if (!back)
        why = detail::concat("a host list cannot hold it (", back.error().message, ")");
      else if (back->size() != 1 || back->front() != h)
        why = detail::concat(
            "a host list would read it as ", back->size() == 1 ? "the host " : "the hosts ",
            detail::quoted(back->size() == 1 ? back->front() : compress_hostlist(*back)));
    }
    if (!why.empty())
      return parse_error{0, 0, detail::concat("host ", i + 1, " (", detail::quoted(h), "): ", why),
                         errc::bad_host};
  }
  return compress_hostlist(hosts);
}

namespace detail {
struct count_item {
  int count;
  unsigned long long repeat;
};
struct count_list {
  std::vector<count_item> items;
  unsigned long long total = 0;  // the number of values the list expands to
};

// Reads "2(x3),1" into items without expanding it: memory is linear in the text, and the total
// is exact (a repeat count or a total past 2^64 - 1 is an error, never a wrapped number).
inline result<count_list> parse_count_list(std::string_view expr) {
  count_list list;
  std::size_t i = 0;
  const auto number = [&](unsigned long long limit, unsigned long long& value,
                          const char* what) -> result<bool> {
    const std::size_t start = i;
    const digit_run run = read_digits(expr, start, limit);
    if (run.too_large)
      return parse_error{1, start + 1, concat(what, " is larger than ", limit),
                         errc::limit_exceeded};
    value = run.value;
    i = run.end;
    if (i == start)
      return parse_error{
          1, start + 1,
          concat("expected ", what, ", got ",
                 i < expr.size() ? quoted(character_at(expr, i)) : std::string("the end"))};
    return true;
  };
  if (expr.empty()) return parse_error{1, 1, "the count list is empty"};
  while (true) {
    unsigned long long count = 0, repeat = 1;
    const std::size_t item_start = i;
    if (auto r = number(0x7fffffffull, count, "a count"); !r) return r.error();
    if (i < expr.size() && expr[i] == '(') {
      const std::size_t open = i;
      if (i + 1 >= expr.size() || expr[i + 1] != 'x')
        return parse_error{1, i + 2, "expected 'x' after '(' as in 2(x3)"};
      i += 2;
      if (auto r = number(~0ull, repeat, "a repeat count"); !r) return r.error();
      if (repeat == 0) return parse_error{1, open + 3, "a repeat count must be at least 1"};
      if (i >= expr.size() || expr[i] != ')') return parse_error{1, i + 1, "expected ')'"};
      ++i;
    }
    if (!checked_add(list.total, repeat, list.total))
      return parse_error{1, item_start + 1, "the count list names more than 2^64 - 1 values",
                         errc::limit_exceeded};
    list.items.push_back({static_cast<int>(count), repeat});
    if (i == expr.size()) break;
    if (expr[i] != ',')
      return parse_error{1, i + 1,
                         concat("expected ',' or the end, got ", quoted(character_at(expr, i)))};
    ++i;
  }
  return list;
}

// No reserve here: the lists of a hetjob's components are appended one after another, and an
// exact reserve each time would copy everything so far each time.
inline void append_count_list(const count_list& list, std::vector<int>& out) {
  for (const count_item& it : list.items)
    out.insert(out.end(), static_cast<std::size_t>(it.repeat), it.count);
}

inline std::vector<int> expand_count_list(const count_list& list) {
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(list.total));
  append_count_list(list, out);
  return out;
}
}  // namespace detail

/// Expands a Slurm count list (SLURM_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE): "2(x3),1" gives
/// {2, 2, 2, 1}. Items are `count` or `count(xN)` with decimal digits only; counts are 0 to
/// INT_MAX, repeats 1 or more, and more than `max_nodes` values in all is an error found before
/// anything is allocated.
[[nodiscard]] inline result<std::vector<int>> expand_tasks_per_node(
    std::string_view expr, std::size_t max_nodes = std::size_t{1} << 20) {
  auto list = detail::parse_count_list(expr);
  if (!list) return list.error();
  if (list->total > max_nodes)
    return parse_error{1, 1,
                       detail::concat("the count list names ", list->total, " nodes, more than ",
                                      max_nodes, ", the limit (max_nodes)"),
                       errc::limit_exceeded};
  return detail::expand_count_list(*list);
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SLURM_HOSTLIST_HPP
// ---- hetlaunch/slurm.hpp
// hetlaunch: a Slurm job's topology from its environment (cluster_from_slurm), read with Slurm's
// host lists and task counts (slurm_hostlist.hpp).
#ifndef HETLAUNCH_SLURM_HPP
#define HETLAUNCH_SLURM_HPP



namespace hetlaunch {

/// A job's topology as Slurm describes it, and which node this process runs on.
struct slurm_job {
  /// Every node of the job. In a heterogeneous job, the nodes of component 0, then of
  /// component 1, and so on: the order in which Slurm counts SLURM_NODEID in a step over all
  /// components.
  cluster nodes;
  /// This process's node: SLURM_NODEID where it counts the job's nodes (the batch script, a step
  /// on every node of the job), else this host (SLURMD_NODENAME) found among the nodes.
  std::optional<std::size_t> this_node;
  /// The variable the worker counts came from (the first component's, in a heterogeneous job).
  std::string counts_from;
  /// In a heterogeneous job (SLURM_HET_SIZE), the index of each component's first node in
  /// `nodes`; empty for any other job.
  std::vector<std::size_t> component_first;
  /// Empty in the batch script and in a job step that runs exactly one task on every node of
  /// the job, which is what a launcher that starts one torchrun a node needs. Otherwise the
  /// reason, naming Slurm's variables and what would fix the step: a step on only some nodes
  /// (one hetjob component, `srun -N1`) or with several tasks on a node.
  std::string step_problem;
};

namespace detail {
// A per-component variable of a heterogeneous job: NAME_HET_GROUP_<n>, or the older
// NAME_PACK_GROUP_<n> that Slurm still sets beside it. `found` gets the name that was set.
template <class Var>
const char* component_variable(Var& var, const char* stem, std::size_t component,
                               std::string& found) {
  for (const char* kind : {"_HET_GROUP_", "_PACK_GROUP_"}) {
    found = concat(stem, kind, component);
    if (const char* value = var(found.c_str())) return value;
  }
  found = concat(stem, "_HET_GROUP_", component);
  return nullptr;
}

// Appends the counts of count list `text` (variable `name`), which must give one count for each
// of `hosts` hosts (named by `list_name`); its length is known before it is expanded.
template <class Unused = void>
result<bool> append_host_counts(const std::string& name, const char* text, std::size_t hosts,
                                const std::string& list_name, std::vector<int>& counts) {
  auto parsed = parse_count_list(text);
  if (!parsed)
    return parse_error{0, 0, concat(name, ": ", parsed.error().to_string()), parsed.error().code};
  if (parsed->total != hosts)
    return parse_error{0, 0,
                       concat(name, " gives ", parsed->total, " counts but ", list_name, " names ",
                              hosts, " hosts"),
                       errc::count_mismatch};
  append_count_list(*parsed, counts);
  return true;
}

// Worker counts of one list of hosts (the job, or component `component` of a heterogeneous job),
// from the first of Slurm's variables that is set; returns that variable's name.
template <class Var>
result<std::string> counts_of(Var& var, std::size_t component, bool heterogeneous,
                              std::size_t hosts, const std::string& list_name,
                              std::vector<int>& counts) {
  std::string name;
  const auto lookup = [&](const char* stem) -> const char* {
    if (heterogeneous) return component_variable(var, stem, component, name);
    name = stem;
    return var(stem);
  };
  for (const char* stem :
       {"SLURM_TASKS_PER_NODE", "SLURM_GPUS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE"}) {
    const char* text = lookup(stem);
    if (text == nullptr) continue;
    if (std::string_view(stem) == "SLURM_GPUS_PER_NODE") {
      std::string_view gpus(text);
      const bool one_type =
          gpus.find(',') == std::string_view::npos;  // "a100:4,v100:2" is per type
      const std::size_t colon = gpus.rfind(':');
      if (colon != std::string_view::npos) gpus = gpus.substr(colon + 1);
      auto c = expand_tasks_per_node(gpus, 1);
      if (!c || !one_type)
        return parse_error{0, 0, concat(name, "=", quoted(text), " is not one count ([type:]N)")};
      counts.insert(counts.end(), hosts, c->front());
      return name;
    }
    if (auto r = append_host_counts(name, text, hosts, list_name, counts); !r) return r.error();
    return name;
  }
  return parse_error{
      0, 0,
      heterogeneous
          ? concat("no worker counts for component ", component, ": none of SLURM_TASKS_PER_NODE",
                   "_HET_GROUP_", component, ", SLURM_GPUS_PER_NODE_HET_GROUP_", component,
                   ", SLURM_JOB_CPUS_PER_NODE_HET_GROUP_", component, " is set")
          : std::string("no worker counts: none of HETLAUNCH_TASKS_PER_NODE, SLURM_TASKS_PER_NODE, "
                        "SLURM_GPUS_PER_NODE, SLURM_JOB_CPUS_PER_NODE is set"),
      errc::env_missing};
}
}  // namespace detail

/// Builds the cluster of a Slurm job from its environment. `get(name)` returns a variable's value
/// or nullptr, as std::getenv does.
///
/// Hosts: SLURM_JOB_NODELIST, else SLURM_NODELIST. Workers per node, the first that is set:
///  1. HETLAUNCH_TASKS_PER_NODE: a copy of the batch script's SLURM_TASKS_PER_NODE, taken before
///     `srun` replaces that variable with its own step's layout (one task per node, typically);
///  2. SLURM_TASKS_PER_NODE: one worker per Slurm task (ask for one task per GPU);
///  3. SLURM_GPUS_PER_NODE ("4" or "a100:4"): the same count on every node;
///  4. SLURM_JOB_CPUS_PER_NODE: one worker per allocated CPU.
/// Slurm exports only this node's GPUs (SLURM_GPUS_ON_NODE), so a per-node GPU count of other
/// nodes cannot be read; a heterogeneous layout comes from the task counts.
///
/// A heterogeneous job (SLURM_HET_SIZE, or the older SLURM_PACK_SIZE): the plain variables
/// describe component 0 only, and in a step over several components SLURM_JOB_NODELIST is
/// merged and sorted by name. The nodes are therefore read per component, in component order,
/// from SLURM_JOB_NODELIST_HET_GROUP_<n> and that component's own counts (the variables above
/// with _HET_GROUP_<n>; _PACK_GROUP_<n> too), which Slurm sets in the batch script and in every
/// step. HETLAUNCH_TASKS_PER_NODE, when set, gives the counts of all nodes in that order.
///
/// This node: SLURM_NODEID, which counts the job's nodes in the batch script and in a step on
/// every node (in component order in a hetjob). In a step on only some nodes it counts the step's
/// nodes; this node is then the job's node named SLURMD_NODENAME, and `step_problem` says why such
/// a step cannot start one torchrun a node. A missing variable, a malformed one, or counts that do
/// not match the host count is an error that names the variable. `max_hosts` and `max_bytes` bound
/// the node lists' expansion (of all components together), as for expand_hostlist. The job is
/// validated like any topology (host names, duplicate hosts unless `validation` allows them, the
/// world size): the error has the diagnostic's code and message.
template <class Getenv>
[[nodiscard]] result<slurm_job> cluster_from_slurm(Getenv&& get,
                                                   std::size_t max_hosts = std::size_t{1} << 20,
                                                   std::size_t max_bytes = std::size_t{1} << 27,
                                                   validate_options validation = {}) {
  const auto var = [&](const char* name) -> const char* { return get(name); };
  slurm_job job;
  // The lists are read and counted first, and expanded once, straight into the cluster.
  std::vector<detail::parsed_hostlist> lists;
  std::size_t host_count = 0;
  std::vector<int> counts;
  std::string list_name = "SLURM_JOB_NODELIST";
  const char* copied = var(variables::tasks_per_node.data());
  const char* het_size_name = "SLURM_HET_SIZE";
  const char* het_size = var(het_size_name);
  if (het_size == nullptr) {
    het_size_name = "SLURM_PACK_SIZE";
    het_size = var(het_size_name);
  }
  if (het_size != nullptr) {
    long long components = 0;
    // Every component has a node, so the node limit bounds the components too.
    if (!detail::parse_decimal(het_size,
                               static_cast<long long>(std::min<std::size_t>(max_hosts, 0x7fffffff)),
                               components) ||
        components < 1)
      return parse_error{0, 0,
                         detail::concat(het_size_name, "=", detail::quoted(het_size),
                                        " is not a number of components (1 to ",
                                        std::min<std::size_t>(max_hosts, 0x7fffffff), ")"),
                         errc::env_not_a_number};
    std::size_t bytes = 0;
    for (std::size_t n = 0; n < static_cast<std::size_t>(components); ++n) {
      std::string name;
      const char* list = detail::component_variable(var, "SLURM_JOB_NODELIST", n, name);
      if (list == nullptr)
        return parse_error{
            0, 0, detail::concat(het_size_name, "=", components, " but ", name, " is not set"),
            errc::env_missing};
      auto part = detail::parse_hostlist(list, max_hosts - host_count, max_bytes - bytes);
      // The limits count every component: what is left of them is what this one ran into.
      if (!part)
        return parse_error{
            0, 0,
            detail::concat(name,
                           host_count == 0 ? std::string()
                                           : detail::concat(" (after the ", host_count,
                                                            " hosts of the components before it)"),
                           ": ", part.error().to_string()),
            part.error().code};
      if (copied == nullptr) {
        auto from = detail::counts_of(var, n, true, part->hosts, name, counts);
        if (!from) return from.error();
        if (n == 0) job.counts_from = *from;
      }
      job.component_first.push_back(host_count);
      host_count += part->hosts;
      bytes += part->bytes;
      lists.push_back(std::move(*part));
      if (host_count == max_hosts && n + 1 < static_cast<std::size_t>(components))
        return parse_error{0, 0,
                           detail::concat("the job's components name more than ", max_hosts,
                                          " hosts, the limit (max_hosts)"),
                           errc::limit_exceeded};
    }
    list_name = detail::concat("SLURM_JOB_NODELIST_HET_GROUP_0..", components - 1);
  } else {
    const char* list = var("SLURM_JOB_NODELIST");
    if (list == nullptr) {
      list_name = "SLURM_NODELIST";
      list = var("SLURM_NODELIST");
    }
    if (list == nullptr)
      return parse_error{0, 0, "SLURM_JOB_NODELIST is not set; is this running inside a Slurm job?",
                         errc::env_missing};
    auto all = detail::parse_hostlist(list, max_hosts, max_bytes);
    if (!all)
      return parse_error{0, 0, detail::concat(list_name, ": ", all.error().to_string()),
                         all.error().code};
    host_count = all->hosts;
    lists.push_back(std::move(*all));
  }
  if (copied != nullptr) {
    job.counts_from = std::string(variables::tasks_per_node);
    if (auto r = detail::append_host_counts(job.counts_from, copied, host_count, list_name, counts);
        !r)
      return r.error();
  } else if (job.component_first.empty()) {
    auto from = detail::counts_of(var, 0, false, host_count, list_name, counts);
    if (!from) return from.error();
    job.counts_from = *from;
  }
  cluster_builder nodes;
  std::size_t host_bytes = 0;
  for (const detail::parsed_hostlist& l : lists) host_bytes += l.bytes;
  nodes.reserve(host_count, host_bytes);
  for (const detail::parsed_hostlist& l : lists)
    l.each([&](std::string_view host) { nodes.add(host, counts[nodes.node_count()]); });
  lists.clear();
  job.nodes = nodes.finish();
  // Slurm's node names need not be valid host names for torchrun, and counts can add up past
  // what torch's 32-bit ranks hold: the same checks as every other input.
  if (const diagnostic d = first_error(job.nodes, validation))
    return parse_error{0, 0, detail::concat(list_name, " and ", job.counts_from, ": ", d.message()),
                       d.code};

  // The current step, if any: on how many nodes, with how many tasks on each.
  std::optional<std::size_t> step_nodes;
  if (const char* text = var("SLURM_STEP_NUM_NODES")) {
    long long n = 0;
    if (!detail::parse_decimal(text, 0x7fffffff, n))
      return parse_error{0, 0,
                         detail::concat("SLURM_STEP_NUM_NODES=", detail::quoted(text),
                                        " is not a number of nodes"),
                         errc::env_not_a_number};
    step_nodes = static_cast<std::size_t>(n);
  }
  const char* node_name = var("SLURMD_NODENAME");
  // The srun options of a step with one task on every node, which the messages suggest.
  const auto one_task_a_node = [&] {
    if (job.component_first.empty())
      return detail::concat("srun --ntasks-per-node=1 --ntasks=", host_count);
    std::string out = "srun";
    // Every component's own sizes, up to a message's worth.
    constexpr std::size_t shown = 8;
    for (std::size_t n = 0; n < job.component_first.size() && n < shown; ++n) {
      const std::size_t end =
          n + 1 < job.component_first.size() ? job.component_first[n + 1] : host_count;
      const std::size_t size = end - job.component_first[n];
      out += detail::concat(n > 0 ? " :" : "", " --nodes=", size, " --ntasks=", size);
    }
    if (job.component_first.size() > shown)
      out += detail::concat(" : ... (", job.component_first.size() - shown,
                            " more components, each `--nodes=N --ntasks=N`)");
    return out;
  };
  const auto plan_side = [&] {
    return detail::concat("the plan starts one torchrun on each of the job's ", host_count,
                          " nodes");
  };
  if (step_nodes && *step_nodes != host_count) {
    job.step_problem = detail::concat(
        "this step runs on ", *step_nodes, " of the job's ", host_count,
        " nodes (SLURM_STEP_NUM_NODES=", *step_nodes,
        job.component_first.empty()
            ? std::string(")")
            : detail::concat(", in a job of ", job.component_first.size(), " components)"),
        ", but ", plan_side(),
        ", which would wait for the others: start one task on every node: ", one_task_a_node());
  } else if (const char* layout = var("SLURM_STEP_TASKS_PER_NODE")) {
    auto parsed = detail::parse_count_list(layout);
    if (!parsed)
      return parse_error{0, 0,
                         detail::concat("SLURM_STEP_TASKS_PER_NODE: ", parsed.error().to_string()),
                         parsed.error().code};
    if (parsed->total != host_count)
      return parse_error{0, 0,
                         detail::concat("SLURM_STEP_TASKS_PER_NODE gives ", parsed->total,
                                        " counts but the step runs on ", host_count, " nodes"),
                         errc::count_mismatch};
    const bool one_each = std::all_of(parsed->items.begin(), parsed->items.end(),
                                      [](const detail::count_item& it) { return it.count == 1; });
    if (!one_each)
      job.step_problem =
          detail::concat("this step runs ", detail::quoted(layout),
                         " tasks on its nodes (SLURM_STEP_TASKS_PER_NODE), but ", plan_side(),
                         ": start one task a node: ", one_task_a_node());
  }
  if (const char* id = var("SLURM_NODEID")) {
    long long n = 0;
    if (!detail::parse_decimal(id, 0x7fffffff, n))
      return parse_error{
          0, 0, detail::concat("SLURM_NODEID=", detail::quoted(id), " is not a node index"),
          errc::env_not_a_number};
    if (step_nodes && *step_nodes != host_count) {
      // SLURM_NODEID counts this step's nodes, not the job's: find this host by name instead.
      if (node_name != nullptr)
        for (std::size_t i = 0; i < host_count && !job.this_node; ++i)
          if (job.nodes.node(i).host == std::string_view(node_name)) job.this_node = i;
    } else {
      if (static_cast<std::size_t>(n) >= host_count)
        return parse_error{0, 0,
                           detail::concat("SLURM_NODEID=", n, " is out of range: ", list_name,
                                          " names ", host_count, " hosts"),
                           errc::node_out_of_range};
      job.this_node = static_cast<std::size_t>(n);
    }
  }
  return job;
}

}  // namespace hetlaunch

#endif  // HETLAUNCH_SLURM_HPP

#endif  // HETLAUNCH_HETLAUNCH_HPP
