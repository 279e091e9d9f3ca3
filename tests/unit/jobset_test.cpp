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
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
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

  TEST_CASE("bytes that are not UTF-8 become \\udcXX, as in every JSON hetlaunch writes") {
    auto o = options();
    o.launch.script_args = {"\xff\x01"};
    CHECK(has(hetlaunch::jobset_manifest({{1, 1, {}}}, o, true), "\"\\udcff\\u0001\""));
  }

  TEST_CASE("names Kubernetes would refuse, and groups without nodes or GPUs") {
    using hetlaunch::errc;
    CHECK(hetlaunch::try_jobset_manifest({{1, 1, {}}}, options("Train")).error().code == errc::bad_name);
    CHECK(hetlaunch::try_jobset_manifest({{1, 1, {}}}, options("-x")).error().code == errc::bad_name);
    CHECK(hetlaunch::try_jobset_manifest({{1, 1, {}}}, options("")).error().code == errc::bad_name);
    const auto long_name = hetlaunch::try_jobset_manifest({{100, 1, {}}}, options(std::string(56, 'a')));
    CHECK(long_name.error().code == errc::name_too_long);
    CHECK(long_name.error().message() ==
          hetlaunch::detail::concat("the name '", std::string(56, 'a'),
                                    "' makes pod host names of 64 characters, more than 63 (NAME-gG-0-K): shorten it"));
    CHECK(hetlaunch::try_jobset_manifest({{10, 1, {}}}, options(std::string(56, 'a'))));  // 63 exactly
    CHECK(hetlaunch::try_jobset_manifest({{0, 1, {}}}, options()).error().code == errc::bad_group);
    CHECK(hetlaunch::try_jobset_manifest({{1, 0, {}}}, options()).error().message() ==
          "group g0 must have at least 1 gpus, got 0");
    CHECK(hetlaunch::try_jobset_manifest({}, options()).error().code == errc::empty_cluster);
    // Bounded before anything is built: a billion pods is an error, not an allocation.
    const auto huge = hetlaunch::try_jobset_manifest({{1000000000, 1, {}}}, options("t"));
    CHECK(huge.error().message() ==
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
    CHECK(hetlaunch::try_jobset_manifest({{1, 1, {}}}, no_script).error().code == errc::empty_script);
    auto overriding = options();
    overriding.launch.torchrun_args = {"--node_rank=3"};
    CHECK(hetlaunch::try_jobset_manifest({{1, 1, {}}}, overriding).error().code == errc::overriding_torchrun_arg);
  }
}
