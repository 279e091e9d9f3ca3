// SPDX-License-Identifier: MIT
// hetlaunch: preflight, what each host's Python says of its torch, CUDA, NCCL and GPUs, and
// whether a job across those hosts can run at all. Nodes of different generations carry
// different torch builds; a job whose nodes disagree hangs or dies at its first collective, with
// an error that names neither node. The rules refuse it before any node starts, naming the hosts
// and both versions.
#ifndef HETLAUNCH_PREFLIGHT_HPP
#define HETLAUNCH_PREFLIGHT_HPP

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calibration.hpp"
#include "result.hpp"
#include "text.hpp"

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
