// SPDX-License-Identifier: MIT
// Conformance of expand_hostlist and compress_hostlist with Slurm itself (scontrol, Debian's
// slurm-client 22.05): many generated valid expressions must expand to exactly what scontrol
// prints, host lists must compress to what `scontrol show hostlist` prints, and every line of
// the malformed corpus must be an error in both. scontrol exits 0 on invalid input and reports on
// stderr, so the verdict is read from its output.
//
// The generator stays inside what 22.05 and current Slurm agree on: no text after a name's last
// bracket (23.11 added that), no newline separators (23.02). Where they differ, a scontrol of
// 23.11 or later (Debian trixie's 24.11, sid's 26.05: tests/chroot) is run on the current
// behaviour too: the corpus's "current" lines must be refused, and the expressions in
// `current_behaviour` must expand (and compress) as that Slurm does.
//
// usage: slurm_conformance MALFORMED_FILE WORK_DIR
#include <hetlaunch/slurm.hpp>
#include <hetlaunch/torchrun.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct rng {
  std::uint64_t state;
  unsigned below(unsigned n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<unsigned>(state >> 33) % n;
  }
};

struct scontrol_output {
  bool invalid = false;
  std::vector<std::string> lines;
};

scontrol_output scontrol(const std::string& verb, const std::string& argument) {
  const std::string command =
      "scontrol show " + verb + " -- " + hetlaunch::shell_quote(argument) + " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  scontrol_output out;
  if (p == nullptr) {
    out.invalid = true;
    return out;
  }
  std::string text;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  pclose(p);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line.find("Invalid hostlist") != std::string::npos ||
        line.rfind("scontrol: error", 0) == 0 || line.rfind("scontrol: fatal", 0) == 0)
      out.invalid = true;
    else
      out.lines.push_back(line);
    start = end + 1;
  }
  return out;
}

std::string number(unsigned value, unsigned extra_zeros) {
  return std::string(extra_zeros, '0') + std::to_string(value);
}

// A random valid expression: 1-3 names, each with 0-3 bracket groups of 1-3 items.
std::string generate(rng& r) {
  static const char* words[] = {"node", "gpu", "n", "rack", "a", "x-", "c.", "tux", "cn", "b1-"};
  std::string expr;
  const unsigned names = 1 + r.below(3);
  for (unsigned k = 0; k < names; ++k) {
    if (k) expr += ',';
    expr += words[r.below(10)];
    const unsigned groups = r.below(4);
    for (unsigned g = 0; g < groups; ++g) {
      if (g) expr += words[r.below(10)];
      expr += '[';
      const unsigned items = 1 + r.below(3);
      for (unsigned i = 0; i < items; ++i) {
        if (i) expr += ',';
        const unsigned lo = r.below(120);
        const unsigned pad = r.below(3) == 0 ? r.below(3) : 0;
        expr += number(lo, pad);
        if (r.below(2)) expr += '-' + number(lo + r.below(4), r.below(4) == 0 ? 1 : 0);
        if (r.below(6) == 0) {  // a duplicate item
          expr += ',' + number(lo, pad);
        }
      }
      expr += ']';
    }
  }
  return expr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: slurm_conformance MALFORMED_FILE WORK_DIR\n");
    return 2;
  }
  const std::string conf = std::string(argv[2]) + "/slurm.conf";
  std::ofstream(conf) << "ClusterName=x\nSlurmctldHost=localhost\n";
  setenv("SLURM_CONF", conf.c_str(), 1);
  int failures = 0, checked = 0;

  rng r{20261129};
  for (int i = 0; i < 300; ++i) {
    const std::string expr = generate(r);
    const auto ours = hetlaunch::expand_hostlist(expr);
    const scontrol_output theirs = scontrol("hostnames", expr);
    ++checked;
    if (!ours || theirs.invalid || *ours != theirs.lines) {
      ++failures;
      std::printf("FAIL expand %s: ours %s, scontrol %s (%zu hosts)\n", expr.c_str(),
                  ours ? std::to_string(ours->size()).c_str() : ours.error().to_string().c_str(),
                  theirs.invalid ? "invalid" : "valid", theirs.lines.size());
      continue;
    }
    // The same hosts, compressed, as `scontrol show hostlist` prints them.
    const std::string compressed = hetlaunch::compress_hostlist(*ours);
    std::string joined;
    for (const std::string& h : *ours) joined += (joined.empty() ? "" : ",") + h;
    const scontrol_output shown = scontrol("hostlist", joined);
    ++checked;
    if (shown.invalid || shown.lines.size() != 1 || shown.lines[0] != compressed) {
      ++failures;
      std::printf("FAIL compress %s: ours %s, scontrol %s\n", joined.c_str(), compressed.c_str(),
                  shown.lines.empty() ? "(nothing)" : shown.lines[0].c_str());
    }
  }

  // The installed Slurm's version: "slurm 22.05.8" or "slurm-wlm 24.11.5".
  int major = 0, minor = 0;
  if (FILE* p = popen("scontrol --version 2>/dev/null", "r")) {
    char word[64] = {0};
    if (std::fscanf(p, "%63s %d.%d", word, &major, &minor) != 3) major = minor = 0;
    pclose(p);
  }
  const bool current = major * 100 + minor >= 2311;
  std::printf("scontrol: Slurm %d.%02d (%s)\n", major, minor, current ? "current" : "22.05 rules");
  if (current) {
    // Current Slurm keeps a stray ']' as text, allows text after the last bracket and newline
    // separators, and compresses 20-digit numbers into ranges; hetlaunch does all of it alike.
    const char* current_behaviour[] = {"node]",
                                       "n[1-3]]",
                                       "n[[1-2]]",
                                       "a[1-2]-ib",
                                       "a[1-2]b[3-4]c",
                                       "a1\nb2",
                                       "gpu[01-02]\ncpu[7-8]",
                                       "n10000000000000000000,n10000000000000000001",
                                       "x[0-2]]y"};
    for (const char* expr : current_behaviour) {
      const auto ours = hetlaunch::expand_hostlist(expr);
      const scontrol_output theirs = scontrol("hostnames", expr);
      ++checked;
      if (!ours || theirs.invalid || *ours != theirs.lines) {
        ++failures;
        std::printf("FAIL current %s: ours %s, scontrol %s\n", expr,
                    ours ? std::to_string(ours->size()).c_str() : ours.error().to_string().c_str(),
                    theirs.invalid ? "invalid" : std::to_string(theirs.lines.size()).c_str());
        continue;
      }
      std::string joined;
      for (const std::string& h : *ours) joined += (joined.empty() ? "" : ",") + h;
      // Names with brackets in them cannot be written as a host list: Slurm 24.11 compresses
      // n[1],n[2] into n[1-2] (which is n1 n2), hetlaunch keeps n[1],n[2]; neither gives them back.
      if (joined.find('[') != std::string::npos) {
        std::printf("ok   current %-32s %zu hosts (not compressed: names with brackets)\n", expr,
                    ours->size());
        continue;
      }
      const scontrol_output shown = scontrol("hostlist", joined);
      ++checked;
      if (shown.invalid || shown.lines.size() != 1 ||
          shown.lines[0] != hetlaunch::compress_hostlist(*ours)) {
        ++failures;
        std::printf("FAIL current compress %s: ours %s, scontrol %s\n", joined.c_str(),
                    hetlaunch::compress_hostlist(*ours).c_str(),
                    shown.lines.empty() ? "(nothing)" : shown.lines[0].c_str());
      } else {
        std::printf("ok   current %-32s %zu hosts, %s\n", expr, ours->size(),
                    shown.lines[0].c_str());
      }
    }
  }

  std::ifstream corpus(argv[1]);
  std::string line;
  while (std::getline(corpus, line)) {
    if (line.empty() || line[0] == '#') continue;
    const bool current_only = line.rfind("current\t", 0) == 0;
    const bool saturates = line.rfind("saturates\t", 0) == 0;
    const std::string expr = current_only ? line.substr(8) : saturates ? line.substr(10) : line;
    ++checked;
    const auto ours = hetlaunch::expand_hostlist(expr);
    if (ours) {
      ++failures;
      std::printf("FAIL malformed %s: accepted (%zu hosts)\n", expr.c_str(), ours->size());
    } else if (!saturates && (!current_only || current) && !scontrol("hostnames", expr).invalid) {
      ++failures;
      std::printf("FAIL malformed %s: scontrol accepts it, the corpus is wrong\n", expr.c_str());
    } else {
      std::printf("ok   malformed %-32s %s\n", expr.c_str(), ours.error().to_string().c_str());
    }
  }
  std::printf("slurm conformance: %d checks, %d failures\n", checked, failures);
  return failures ? 1 : 0;
}
