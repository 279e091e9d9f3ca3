// SPDX-License-Identifier: MIT
// preflight.hpp: each host's facts as its Python reports them, and the rules that refuse a job
// whose hosts cannot run together, naming the hosts and both versions.
#include <doctest/doctest.h>

#include <hetlaunch/preflight.hpp>

#include <string>
#include <vector>

namespace {
using hetlaunch::host_facts;
using hetlaunch::preflight_issue;

host_facts cpu(const char* host, const char* torch) {
  host_facts h;
  h.host = host;
  h.python = "3.11.2";
  h.torch = torch;
  return h;
}

host_facts gpu(const char* host, const char* torch, const char* cuda, const char* nccl, int count,
               int major, int minor = 0) {
  host_facts h = cpu(host, torch);
  h.cuda = cuda;
  h.nccl = nccl;
  for (int k = 0; k < count; ++k) h.gpus.push_back({"Test GPU", major, minor});
  return h;
}

std::vector<preflight_issue> issues(const hetlaunch::preflight_verdict& v) {
  std::vector<preflight_issue> out;
  for (const auto& p : v.problems) out.push_back(p.issue);
  return out;
}
}  // namespace

TEST_SUITE("preflight: facts") {
  TEST_CASE("a host's answer is read: versions, none for a CPU build, each GPU") {
    const auto f = hetlaunch::parse_host_facts(
        R"({"python": "3.11.2", "torch": "2.6.0+cu124", "cuda": "12.4", "nccl": "2.21.5", )"
        R"("gpus": [{"name": "NVIDIA A100", "capability": "8.0"}, {"name": "T4", "capability": "7.5"}], "new": {}})",
        "gpu-a");
    REQUIRE(f);
    CHECK(f->host == "gpu-a");
    CHECK(*f->torch == "2.6.0+cu124");
    CHECK(*f->cuda == "12.4");
    CHECK(*f->nccl == "2.21.5");
    REQUIRE(f->gpus.size() == 2);
    CHECK(f->gpus[1].name == "T4");
    CHECK(f->gpus[1].major == 7);
    CHECK(f->gpus[1].minor == 5);
    const auto cpu_build = hetlaunch::parse_host_facts(
        R"({"python": "3.13.1", "torch": "2.14.1+debian", "cuda": null, "nccl": null, "gpus": []})",
        "b");
    REQUIRE(cpu_build);
    CHECK(!cpu_build->cuda);
    CHECK(cpu_build->gpus.empty());
    const auto none = hetlaunch::parse_host_facts(
        R"({"python": "3.11.2", "torch": null, "torch_error": "No module named 'torch'", "gpus": []})",
        "c");
    REQUIRE(none);
    CHECK(!none->torch);
    CHECK(none->torch_error == "No module named 'torch'");
  }

  TEST_CASE("hostile answers are refused with their column") {
    const struct {
      const char* text;
      const char* says;
    } cases[] = {
        {"", "expected '{'"},
        {"{}", "no \"python\""},
        {R"({"python": "3", "gpus": []})", "no \"torch\""},
        {R"({"python": "3", "torch": 2, "gpus": []})", "expected a string"},
        {R"({"python": "3", "python": "3", "torch": null, "gpus": []})", "given twice"},
        {R"({"python": "3", "torch": null, "gpus": [{"capability": "8"}]})", "MAJOR.MINOR"},
        {R"({"python": "3", "torch": null, "gpus": [{"capability": "x.0"}]})", "MAJOR.MINOR"},
        {R"({"python": "3", "torch": null, "gpus": [{"capability": "99999.0"}]})", "MAJOR.MINOR"},
        {R"({"python": "3", "torch": null, "gpus": []} and more)", "text after the object"},
        {R"({"python": "3", "torch": null, "gpus": [[[[[[[[[[1]]]]]]]]]]})", "expected '{'"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.text);
      const auto f = hetlaunch::parse_host_facts(c.text, "h");
      REQUIRE(!f);
      CHECK(f.error().code == hetlaunch::errc::bad_host_facts);
      CHECK(f.error().column >= 1);
      CHECK(f.error().message.find(c.says) != std::string::npos);
    }
  }

  TEST_CASE("more than 4096 GPUs is refused, never grown without bound") {
    std::string text = R"({"python": "3", "torch": null, "gpus": [)";
    for (int k = 0; k < 4097; ++k) text += std::string(k ? "," : "") + R"({"capability": "8.0"})";
    text += "]}";
    const auto f = hetlaunch::parse_host_facts(text, "h");
    REQUIRE(!f);
    CHECK(f.error().message == "more than 4096 GPUs");
  }

  TEST_CASE("the compared part of a version") {
    CHECK(hetlaunch::version_prefix("2.14.1+debian", 2) == "2.14");
    CHECK(hetlaunch::version_prefix("1.13.1", 2) == "1.13");
    CHECK(hetlaunch::version_prefix("12.4", 1) == "12");
    CHECK(hetlaunch::version_prefix("2.6.0a0+git", 2) == "2.6");
    CHECK(hetlaunch::version_prefix("2", 2) == "2");
    CHECK(hetlaunch::version_prefix("", 2) == "");
    CHECK(hetlaunch::version_prefix("2.x", 2) == "2.");
  }
}

TEST_SUITE("preflight: the rules") {
  TEST_CASE("CPU-only hosts of one torch pass on versions alone, with no capability") {
    const auto v =
        hetlaunch::check_preflight({cpu("a", "2.6.0"), cpu("b", "2.6.3+debian")}, {4, 2});
    CHECK(v.passes());
    CHECK(!v.min_capability);
    CHECK(!v.bf16);
  }

  TEST_CASE("torch 1.13 beside 2.14 is refused, naming both hosts and both versions") {
    const auto v = hetlaunch::check_preflight({cpu("old", "1.13.1"), cpu("new", "2.14.1+debian")});
    REQUIRE(issues(v) == std::vector<preflight_issue>{preflight_issue::torch_differs});
    const auto& p = v.problems.front();
    CHECK(p.host_a == "old");
    CHECK(p.value_a == "1.13.1");
    CHECK(p.host_b == "new");
    CHECK(p.value_b == "2.14.1+debian");
    CHECK(p.message ==
          "hosts 'old' and 'new' differ in torch (major.minor): 1.13.1 and 2.14.1+debian");
  }

  TEST_CASE("CUDA major, a CPU build beside a CUDA build, and NCCL major.minor differ") {
    CHECK(issues(hetlaunch::check_preflight({gpu("a", "2.6.0", "12.4", "2.21.5", 1, 8),
                                             gpu("b", "2.6.1", "11.8", "2.21.1", 1, 8)})) ==
          std::vector<preflight_issue>{preflight_issue::cuda_differs});
    CHECK(issues(hetlaunch::check_preflight({gpu("a", "2.6.0", "12.4", "2.21.5", 1, 8),
                                             gpu("b", "2.6.1", "12.1", "2.20.3", 1, 8)})) ==
          std::vector<preflight_issue>{preflight_issue::nccl_differs});
    const auto v =
        hetlaunch::check_preflight({gpu("a", "2.6.0", "12.4", "2.21.5", 1, 8), cpu("b", "2.6.0")});
    CHECK(issues(v) == std::vector<preflight_issue>{preflight_issue::cuda_differs,
                                                    preflight_issue::gpus_on_some});
    CHECK(v.problems.front().message ==
          "hosts 'a' and 'b' differ in CUDA (major): 12.4 and none (a CPU build)");
  }

  TEST_CASE("a host without torch, and one with fewer GPUs than workers, are named") {
    host_facts none = cpu("c", "");
    none.torch.reset();
    none.torch_error = "No module named 'torch'";
    const auto v = hetlaunch::check_preflight({gpu("a", "2.6.0", "12.4", "2.21.5", 8, 8),
                                               gpu("b", "2.6.0", "12.4", "2.21.5", 2, 7, 5), none},
                                              {8, 4, 1});
    REQUIRE(issues(v) == std::vector<preflight_issue>{preflight_issue::no_torch,
                                                      preflight_issue::too_few_gpus,
                                                      preflight_issue::gpus_on_some});
    CHECK(v.problems[0].message ==
          "host 'c' (Python 3.11.2) cannot import torch: No module named 'torch'");
    CHECK(v.problems[1].message == "host 'b' has 2 GPUs for its 4 workers");
  }

  TEST_CASE("the least capability and bf16 over every GPU") {
    const auto mixed = hetlaunch::check_preflight(
        {gpu("a", "2.6.0", "12.4", "2.21.5", 8, 8), gpu("b", "2.6.0", "12.4", "2.21.5", 4, 7, 5)},
        {8, 4});
    CHECK(mixed.passes());
    CHECK(*mixed.min_capability == "7.5");
    CHECK(*mixed.bf16 == false);
    const auto ampere = hetlaunch::check_preflight(
        {gpu("a", "2.6.0", "12.4", "2.21.5", 8, 9), gpu("b", "2.6.0", "12.4", "2.21.5", 4, 8, 6)});
    CHECK(*ampere.min_capability == "8.6");
    CHECK(*ampere.bf16 == true);
  }

  TEST_CASE(
      "property: hosts that agree pass, and one that differs is named once against the first") {
    const char* versions[] = {"1.13.1", "2.6.0", "2.14.1+debian"};
    for (int n = 1; n <= 6; ++n)
      for (int odd = 0; odd < n; ++odd)
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b) {
            std::vector<host_facts> hosts;
            for (int k = 0; k < n; ++k)
              hosts.push_back(cpu(std::string("h").append(std::to_string(k)).c_str(),
                                  versions[k == odd ? b : a]));
            const auto v = hetlaunch::check_preflight(hosts);
            const bool differs = a != b && n > 1;
            CAPTURE(n);
            CAPTURE(odd);
            CHECK(v.passes() == !differs);
            if (!differs) continue;
            const std::size_t expected = odd == 0 ? static_cast<std::size_t>(n - 1) : 1;
            CHECK(v.problems.size() == expected);
            for (const auto& p : v.problems) CHECK(p.host_a == "h0");
          }
  }
}
