// SPDX-License-Identifier: MIT
// What the launch tests share: a mixed cluster, a training script's options, and reading one
// variable of an environment.
#ifndef HETLAUNCH_TESTS_SUPPORT_LAUNCH_FIXTURES_HPP
#define HETLAUNCH_TESTS_SUPPORT_LAUNCH_FIXTURES_HPP

#include <hetlaunch/cluster.hpp>
#include <hetlaunch/launch_options.hpp>

#include <string>
#include <vector>

namespace test_support {

using strings = std::vector<std::string>;

// Two nodes of different sizes.
inline const hetlaunch::cluster& gpus() {
  static const hetlaunch::cluster c{{"gpu-a", 8}, {"gpu-b", 4}};
  return c;
}

// `train.py --epochs 3` with every other option at its default.
inline hetlaunch::launch_options train() {
  hetlaunch::launch_options o;
  o.script = "train.py";
  o.script_args = {"--epochs", "3"};
  return o;
}

// The value of `name` in `env`, or "<unset>".
inline std::string value_of(const hetlaunch::environment& env, const std::string& name) {
  for (const auto& v : env)
    if (v.first == name) return v.second;
  return "<unset>";
}

}  // namespace test_support

#endif  // HETLAUNCH_TESTS_SUPPORT_LAUNCH_FIXTURES_HPP
