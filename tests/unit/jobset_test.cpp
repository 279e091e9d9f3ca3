// SPDX-License-Identifier: MIT
// jobset.hpp: the JobSet of a mixed job, its names, and what it refuses. (The manifests are
// checked against JobSet's own CRD schema, and their pods run as a real torchrun job, in
// tests/jobset/jobset_test.py.)
#include <doctest/doctest.h>

#include <hetlaunch/jobset.hpp>

#include <string>
#include <vector>

namespace {
hetlaunch::jobset_options options(std::string name = "train") {
  hetlaunch::jobset_options o;
  o.name = std::move(name);
  o.image = "img";
  o.launch.script = "train.py";
  return o;
}
bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
}  // namespace

TEST_SUITE("jobset") {
  TEST_CASE("one replicatedJob a group; node 0 is the first pod's stable host name") {
    const std::string yaml = hetlaunch::jobset_manifest({{2, 8, {}}, {1, 4, {}}}, options());
    CHECK(has(yaml, "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\n"));
    CHECK(has(yaml, "  - name: g0\n"));
    CHECK(has(yaml, "  - name: g1\n"));
    CHECK(has(yaml, "\"--master_addr=train-g0-0-0.train\""));
    CHECK(has(yaml, "\"--nproc_per_node=8\""));
    CHECK(has(yaml, "\"--nproc_per_node=4\""));
    CHECK(has(yaml, "rank=$((2 + HETLAUNCH_POD_INDEX))"));  // group 1 starts at node 2
    CHECK(!has(yaml, "--node_rank=0"));                     // each pod computes its own
    CHECK(hetlaunch::jobset_pod_host(options(), 1, 3) == "train-g1-0-3.train");
  }

  TEST_CASE("YAML and JSON carry the same document; strings that YAML could misread are quoted") {
    auto o = options();
    o.env = {{"FLAG", "yes"}, {"N", "007"}, {"TEXT", "a: b # c"}};
    const std::string yaml = hetlaunch::jobset_manifest({{1, 1, {}}}, o);
    CHECK(has(yaml, "value: \"yes\""));
    CHECK(has(yaml, "value: \"007\""));
    CHECK(has(yaml, "value: \"a: b # c\""));
    const std::string json = hetlaunch::jobset_manifest({{1, 1, {}}}, o, true);
    CHECK(json.front() == '{');
    CHECK(has(json, "\"value\": \"a: b # c\""));
  }

  TEST_CASE("control characters are escaped in YAML and JSON alike") {
    auto o = options();
    o.launch.script_args = {"\x01\x7f"};
    CHECK(has(hetlaunch::jobset_manifest({{1, 1, {}}}, o, true), "\"\\u0001\\u007f\""));
    CHECK(has(hetlaunch::jobset_manifest({{1, 1, {}}}, o), "- \"\\u0001\\u007f\"\n"));
  }

  TEST_CASE(
      "a string is plain YAML only when no YAML 1.1 or 1.2 reader takes it for anything else") {
    using hetlaunch::detail::plain_yaml;
    for (const char* s :
         {"train.py", "torchrun", "g0", "Indexed", "Never", "nvidia.com/gpu", "pkg.train", "e1x"})
      CHECK_MESSAGE(plain_yaml(s), s);
    for (const char* s : {"1e-4", "0x2a", "1_000", "012",  ".5",   "1:30",       "-0",   "+1",
                          "~",    "null", "Null",  "yes",  "No",   "ON",         "off",  "y",
                          "N",    "true", "FALSE", "64Gi", "500m", "8",          ".inf", "=",
                          "<<",   "a b",  "a:b",   "",     "--lr", "2001-12-14", "x#y"})
      CHECK_MESSAGE(!plain_yaml(s), s);
  }

  TEST_CASE(
      "C1 controls, separators and the byte order mark are escaped: YAML folds them into spaces") {
    auto o = options();
    o.launch.script_args = {"a\u0085b", "c\u2028d", "\ufeffe", "caf\u00e9"};
    const std::string yaml = hetlaunch::jobset_manifest({{1, 1, {}}}, o);
    CHECK(has(yaml, "- \"a\\u0085b\"\n"));
    CHECK(has(yaml, "- \"c\\u2028d\"\n"));
    CHECK(has(yaml, "- \"\\ufeffe\"\n"));
    CHECK(has(yaml, "- \"caf\u00e9\"\n"));  // a visible character stays as it is
  }

  TEST_CASE("text that is not UTF-8 is refused, naming the text: Kubernetes stores UTF-8 only") {
    auto o = options();
    o.launch.script_args = {"ok", "x\xff"};
    const auto r = hetlaunch::try_jobset_manifest({{1, 1, {}}}, o);
    CHECK(r.error().code == hetlaunch::errc::not_utf8);
    CHECK(
        r.error().message() ==
        "the script argument 'x\\xff' is not UTF-8 (byte 1 does not start a character): Kubernetes carries only UTF-8 text");
    auto env = options();
    env.env = {{"A", "\xc3"}};  // cut short
    CHECK(
        hetlaunch::try_jobset_manifest({{1, 1, {}}}, env).error().message() ==
        "the value of variable '\\xc3' is not UTF-8 (byte 0 does not start a character): Kubernetes carries only UTF-8 text");
    auto selector = options();
    CHECK(hetlaunch::validate_jobset({{1, 1, {{"k", "\xed\xa0\x80"}}}}, selector).front().code ==
          hetlaunch::errc::not_utf8);  // a surrogate
  }

  TEST_CASE("names Kubernetes would refuse, and groups without nodes or GPUs") {
    using hetlaunch::errc;
    CHECK(hetlaunch::try_jobset_manifest({{1, 1, {}}}, options("Train")).error().code ==
          errc::bad_name);
    CHECK(hetlaunch::try_jobset_manifest({{1, 1, {}}}, options("-x")).error().code ==
          errc::bad_name);
    CHECK(hetlaunch::try_jobset_manifest({{1, 1, {}}}, options("")).error().code == errc::bad_name);
    const auto long_name =
        hetlaunch::try_jobset_manifest({{100, 1, {}}}, options(std::string(56, 'a')));
    CHECK(long_name.error().code == errc::name_too_long);
    CHECK(long_name.error().message() ==
          hetlaunch::detail::concat(
              "the name '", std::string(56, 'a'),
              "' makes pod host names of 64 characters, more than 63 (NAME-gG-0-K): shorten it"));
    CHECK(hetlaunch::try_jobset_manifest({{10, 1, {}}},
                                         options(std::string(56, 'a'))));  // 63 exactly
    CHECK(hetlaunch::try_jobset_manifest({{0, 1, {}}}, options()).error().code == errc::bad_group);
    CHECK(hetlaunch::try_jobset_manifest({{1, 0, {}}}, options()).error().message() ==
          "group g0 must have at least 1 gpus, got 0");
    CHECK(hetlaunch::try_jobset_manifest({}, options()).error().code == errc::empty_cluster);
    // Bounded before anything is built: a billion pods is an error, not an allocation.
    const auto huge = hetlaunch::try_jobset_manifest({{1000000000, 1, {}}}, options("t"));
    CHECK(
        huge.error().message() ==
        "group g0 would have 1000000000 pods, more than 100000 (the completions Kubernetes allows an Indexed Job)");
    const std::vector<hetlaunch::node_group> many(11, hetlaunch::node_group{100000, 1, {}});
    CHECK(hetlaunch::try_jobset_manifest(many, options("t")).error().message() ==
          "the job would have 1100000 pods, more than 1048576");
    auto no_image = options();
    no_image.image.clear();
    CHECK(hetlaunch::try_jobset_manifest({{1, 1, {}}}, no_image).error().code == errc::empty_image);
    auto bad_env = options();
    bad_env.env = {{"A-B", "1"}};
    CHECK(hetlaunch::try_jobset_manifest({{1, 1, {}}}, bad_env).error().code == errc::bad_env_name);
    auto no_script = options();
    no_script.launch.script.clear();
    CHECK(hetlaunch::try_jobset_manifest({{1, 1, {}}}, no_script).error().code ==
          errc::empty_script);
    auto overriding = options();
    overriding.launch.torchrun_args = {"--node_rank=3"};
    CHECK(hetlaunch::try_jobset_manifest({{1, 1, {}}}, overriding).error().code ==
          errc::overriding_torchrun_arg);
  }
}
