// SPDX-License-Identifier: MIT
// ssh.hpp: each node's ssh command, the remote command it carries, and the environment a launcher
// forwards. (That the remote command runs torchrun with exactly these arguments, and stops it
// with all its workers when its input ends, is shown against real sshd hosts in
// tests/multihost/ssh_test.py.)
#include <doctest/doctest.h>

#include <hetlaunch/hostfile.hpp>
#include <hetlaunch/ssh.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

using strings = std::vector<std::string>;

namespace {
hetlaunch::launch_plan plan_of(const hetlaunch::cluster& c,
                               std::vector<std::string> script_args = {}) {
  hetlaunch::launch_options o;
  o.script = "train.py";
  o.script_args = std::move(script_args);
  return *hetlaunch::make_plan(c, o);
}
}  // namespace

TEST_SUITE("ssh") {
  TEST_CASE("ssh's argv: the client, its arguments, --, the host, and one remote command") {
    const auto plan = plan_of({{"gpu-a", 2}, {"gpu-b", 1}});
    hetlaunch::ssh_options ssh;
    ssh.args = {"-o", "BatchMode=yes"};
    ssh.chdir = "/srv/job";
    ssh.env = {{"NCCL_DEBUG", "INFO"}};
    const strings argv = hetlaunch::ssh_argv(plan, 1, ssh);
    REQUIRE(argv.size() == 6);
    CHECK(strings(argv.begin(), argv.begin() + 5) ==
          strings{"ssh", "-o", "BatchMode=yes", "--", "gpu-b"});
    const strings remote = hetlaunch::try_remote_argv(plan, 1, ssh).value();
    CHECK(argv[5] == "exec " + hetlaunch::shell_join(remote));
    // sh -c SCRIPT hetlaunch-node KILL_AFTER DIR COUNT VARS... TORCHRUN...
    CHECK(remote[0] == "sh");
    CHECK(remote[1] == "-c");
    CHECK(remote[3] == "hetlaunch-node");
    CHECK(strings(remote.begin() + 4, remote.begin() + 8) ==
          strings{"10", "/srv/job", "1", "NCCL_DEBUG=INFO"});
    strings torchrun = plan.torchrun_argv(1);
    torchrun.insert(torchrun.end() - 1, "hetlaunch-rank-lines.py");
    CHECK(strings(remote.begin() + 8, remote.end()) == torchrun);
    ssh.rank_lines = false;
    const strings as_planned = hetlaunch::try_remote_argv(plan, 1, ssh).value();
    CHECK(strings(as_planned.begin() + 8, as_planned.end()) == plan.torchrun_argv(1));
  }

  TEST_CASE("a torchrun worker's lines get their rank: where the line writer goes, and where not") {
    hetlaunch::launch_options o;
    o.script = "train.py";
    o.script_args = {"--lr", "0.1"};
    const hetlaunch::cluster c{{"a", 2}, {"b", 3}};
    const auto argv_of = [&c](const hetlaunch::launch_options& options,
                              const hetlaunch::ssh_options& ssh) {
      const strings remote =
          hetlaunch::try_remote_argv(*hetlaunch::make_plan(c, options), 1, ssh).value();
      return std::make_pair(strings(remote.begin() + 7, remote.end()), remote[2]);
    };
    const hetlaunch::ssh_options on;
    hetlaunch::ssh_options off;
    off.rank_lines = false;
    // The writer is the script torchrun's Python runs; the node script puts its file's path in
    // place of the argument the script names by its index.
    const auto [plain, script] = argv_of(o, on);
    const std::size_t at = plain.size() - 4;
    CHECK(strings(plain.begin() + static_cast<std::ptrdiff_t>(at), plain.end()) ==
          strings{"hetlaunch-rank-lines.py", "train.py", "--lr", "0.1"});
    CHECK(script.find("[ \"$i\" != " + std::to_string(at) + " ] || a=$lines_py") !=
          std::string::npos);
    CHECK(script.find("rm -f -- \"$lines_py\"") != std::string::npos);
    // The program travels inside single quotes: it has none of its own.
    CHECK(hetlaunch::detail::rank_lines_program().find('\'') == std::string_view::npos);
    // -m moves behind the writer, which passes it on to the interpreter.
    hetlaunch::launch_options module = o;
    module.module = true;
    module.script = "pkg.train";
    const strings by_module = argv_of(module, on).first;
    CHECK(strings(by_module.end() - 5, by_module.end()) ==
          strings{"hetlaunch-rank-lines.py", "-m", "pkg.train", "--lr", "0.1"});
    CHECK(std::count(by_module.begin(), by_module.end(), "-m") == 1);
    // Under a CPU binding the binder runs `python3 -u`, and the writer is its script.
    hetlaunch::launch_options bound = o;
    bound.binding = hetlaunch::numa_binding::socket;
    const strings binder = argv_of(bound, on).first;
    CHECK(strings(binder.end() - 6, binder.end()) ==
          strings{"python3", "-u", "hetlaunch-rank-lines.py", "train.py", "--lr", "0.1"});
    // python -m torch.distributed.run is torchrun too.
    hetlaunch::launch_options by_python = o;
    by_python.program = {"/usr/bin/python3", "-m", "torch.distributed.run"};
    CHECK(hetlaunch::rank_lines_apply(by_python, on));
    by_python.program = {"/opt/venv/bin/torchrun"};
    CHECK(hetlaunch::rank_lines_apply(by_python, on));
    // Nothing changes when it is off, for another program (whose workers may not be Python run
    // as torchrun runs them), or when torchrun runs no Python.
    for (const strings& program : {strings{"sh", "-c", "exec \"$@\"", "sh"}, strings{"torchrun.sh"},
                                   strings{"python3", "-m", "torch"}}) {
      hetlaunch::launch_options other = o;
      other.program = program;
      CHECK_FALSE(hetlaunch::rank_lines_apply(other, on));
      CHECK(argv_of(other, on) == argv_of(other, off));
    }
    for (const char* flag : {"--no-python", "--no_python", "--run-path", "--run_path", "--no-py"}) {
      hetlaunch::launch_options raw = o;
      raw.torchrun_args = {flag};
      CHECK_FALSE(hetlaunch::rank_lines_apply(raw, on));
      CHECK(argv_of(raw, on) == argv_of(raw, off));
    }
    CHECK_FALSE(hetlaunch::rank_lines_apply(o, off));
    CHECK(argv_of(o, off).second.find("lines_code") == std::string::npos);
  }

  TEST_CASE("every ssh command line has one shape: a node's, and a question to a host") {
    hetlaunch::ssh_options ssh;
    ssh.program = {"/opt/ssh", "-q"};
    ssh.args = {"-p", "2222"};
    CHECK(hetlaunch::ssh_command_argv(ssh, "gpu-a", "nvidia-smi -L") ==
          strings{"/opt/ssh", "-q", "-p", "2222", "--", "gpu-a", "nvidia-smi -L"});
    const auto plan = plan_of({{"gpu-a", 2}, {"gpu-b", 1}});
    const strings node = hetlaunch::ssh_argv(plan, 0, ssh);
    const strings question = hetlaunch::ssh_command_argv(ssh, "gpu-a", node.back());
    CHECK(node == question);
  }

  TEST_CASE(
      "a node's device list travels as torchrun's CUDA_VISIBLE_DEVICES, before the user's variables") {
    hetlaunch::cluster c{{"gpu-a", 2}, {"gpu-b", 2}};
    c.set_devices(1, {4, 6});
    const auto plan = plan_of(c);
    hetlaunch::ssh_options ssh;
    ssh.env = {{"A", "1"}};
    const strings remote = hetlaunch::try_remote_argv(plan, 1, ssh).value();
    CHECK(strings(remote.begin() + 6, remote.begin() + 9) ==
          strings{"2", "CUDA_VISIBLE_DEVICES=4,6", "A=1"});
  }

  TEST_CASE(
      "a mixed plan unsets TORCH_ELASTIC_WORKER_IDENTICAL on the node; an even one leaves it") {
    const hetlaunch::ssh_options ssh;
    const auto mixed = hetlaunch::try_remote_argv(plan_of({{"a", 2}, {"b", 1}}), 0, ssh).value();
    const auto even = hetlaunch::try_remote_argv(plan_of({{"a", 2}, {"b", 2}}), 0, ssh).value();
    const std::string first_line = mixed[2].substr(0, mixed[2].find('\n') + 1);
    CHECK(first_line.rfind("unset ", 0) == 0);
    CHECK(first_line.find(" TORCH_ELASTIC_WORKER_IDENTICAL\n") != std::string::npos);
    CHECK(even[2].find("TORCH_ELASTIC_WORKER_IDENTICAL") == std::string::npos);
  }

  TEST_CASE("hostile script arguments are quoted, never interpreted, by the remote shell's parse") {
    const strings hostile = {"it's", "$(touch /tmp/x)", "`id`",  "a\nb", "\xff\xfe", "",
                             "*",    "-- --x",          "\\'\"", "~"};
    const auto plan = plan_of({{"a", 1}}, hostile);
    const strings remote = hetlaunch::try_remote_argv(plan, 0, {}).value();
    CHECK(strings(remote.end() - static_cast<std::ptrdiff_t>(hostile.size()), remote.end()) ==
          hostile);
    // Outside single quotes the remote shell sees only characters it never interprets, and
    // backslash-escaped quotes.
    const std::string line = hetlaunch::ssh_argv(plan, 0, {}).back();
    const std::string plain =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-./,:=+@%";
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (quoted)
        quoted = line[i] != '\'';
      else if (line[i] == '\'')
        quoted = true;
      else if (line[i] == '\\')
        CHECK(line[++i] == '\'');
      else
        CHECK(plain.find(line[i]) != std::string::npos);
    }
    CHECK(!quoted);
  }

  TEST_CASE("refusals: node, script and the ssh options themselves") {
    const auto plan = plan_of({{"a", 1}});
    CHECK(hetlaunch::try_ssh_argv(plan, 1, {}).error().code == hetlaunch::errc::node_out_of_range);
    const auto no_script =
        *hetlaunch::make_plan(hetlaunch::cluster{{"a", 1}}, hetlaunch::launch_options{});
    CHECK(hetlaunch::try_ssh_argv(no_script, 0, {}).error().code == hetlaunch::errc::empty_script);
    hetlaunch::ssh_options bad;
    bad.program.clear();
    bad.env = {{"1X", "y"}, {"OK_1", "z"}, {"A-B", "w"}};
    bad.kill_after = 0;
    const auto problems = hetlaunch::validate_ssh(bad);
    REQUIRE(problems.size() == 4);
    CHECK(problems[0].code == hetlaunch::errc::empty_program);
    CHECK(problems[0].message() == "no ssh program given (it is empty)");
    CHECK(problems[1].message() ==
          "'1X' is not a variable name (letters, digits and '_', not starting with a digit)");
    CHECK(problems[2].code == hetlaunch::errc::bad_env_name);
    CHECK(problems[3].message() == "kill_after must be 1..3600 seconds, got 0");
    CHECK(hetlaunch::try_ssh_argv(plan, 0, bad).error().code == hetlaunch::errc::empty_program);
  }
}

TEST_SUITE("forwarded environment") {
  TEST_CASE(
      "NCCL_, GLOO_, TORCH_, UCX_, FI_ and PYTHONPATH, but never TORCH_ELASTIC_WORKER_IDENTICAL") {
    const char* envp[] = {"NCCL_DEBUG=INFO",
                          "HOME=/root",
                          "TORCH_ELASTIC_WORKER_IDENTICAL=1",
                          "TORCH_LOGS=+dynamo",
                          "PYTHONPATH=/a:/b",
                          "PYTHONPATHX=1",
                          "FI_PROVIDER=efa",
                          "GLOO_SOCKET_IFNAME=eth0",
                          "UCX_TLS=rc",
                          "NCCL",
                          "NCCL_EMPTY=",
                          nullptr};
    const hetlaunch::environment expected = {
        {"NCCL_DEBUG", "INFO"}, {"TORCH_LOGS", "+dynamo"},      {"PYTHONPATH", "/a:/b"},
        {"FI_PROVIDER", "efa"}, {"GLOO_SOCKET_IFNAME", "eth0"}, {"UCX_TLS", "rc"},
        {"NCCL_EMPTY", ""}};
    CHECK(hetlaunch::forwarded_environment(envp) == expected);
    CHECK(hetlaunch::forwarded_environment(nullptr).empty());
  }

  TEST_CASE("env files: NAME=VALUE lines, comments, blank lines, CRLF; errors at line and column") {
    const auto env = hetlaunch::parse_env_file("# job\nNCCL_DEBUG=INFO\r\n\n  X=a=b c\nEMPTY=\n");
    const hetlaunch::environment expected = {{"NCCL_DEBUG", "INFO"}, {"X", "a=b c"}, {"EMPTY", ""}};
    CHECK(env.value() == expected);
    const auto no_eq = hetlaunch::parse_env_file("A=1\nexport B\n");
    CHECK(no_eq.error().to_string() == "line 2, column 1: expected NAME=VALUE, got 'export B'");
    CHECK(no_eq.error().code == hetlaunch::errc::bad_syntax);
    const auto bad_name = hetlaunch::parse_env_file("  9A=1\n");
    CHECK(bad_name.error().line == 1);
    CHECK(bad_name.error().column == 3);
    CHECK(bad_name.error().code == hetlaunch::errc::bad_env_name);
    // A NUL anywhere, in a value, a name or a comment, is refused where it stands.
    const auto nul = hetlaunch::parse_env_file(std::string("A=1\nB=x\0y\n", 10));
    CHECK(nul.error().to_string() ==
          "line 2, column 4: a NUL byte, which no variable can hold (is this a text file?)");
    CHECK(nul.error().code == hetlaunch::errc::nul_byte);
    CHECK(hetlaunch::parse_env_file(std::string("# \0\n", 4)).error().column == 3);
  }

  TEST_CASE("env files: every name the launch owns is refused where it stands, none other") {
    for (std::string_view owned_name : hetlaunch::variables::owned) {
      const std::string name(owned_name);
      const auto owned = hetlaunch::parse_env_file("A=1\n# " + name + "=1\n\t " + name + "=8\n");
      REQUIRE_FALSE(owned.has_value());
      CHECK(owned.error().line == 3);
      CHECK(owned.error().column == 3);
      CHECK(owned.error().code == hetlaunch::errc::owned_variable);
      CHECK(owned.error().message.find(name) != std::string::npos);
      // A name that only begins like one is a variable like any other.
      CHECK(hetlaunch::parse_env_file(name + "_X=1\n").has_value());
    }
  }

  TEST_CASE("a NUL cannot reach the node: refused in a variable's value and in the directory") {
    hetlaunch::ssh_options ssh;
    ssh.env = {{"A", std::string("x\0y", 3)}};
    ssh.chdir = std::string("/w\0", 3);
    const auto problems = hetlaunch::validate_ssh(ssh);
    REQUIRE(problems.size() == 2);
    CHECK(problems[0].code == hetlaunch::errc::nul_byte);
    CHECK(problems[0].message() ==
          "the value of variable 'x\\x00y' holds a NUL byte at position 1, which no argument or "
          "variable can carry");
    CHECK(problems[1].message() ==
          "the directory '/w\\x00' holds a NUL byte at position 2, which no argument or "
          "variable can carry");
  }
}

TEST_SUITE("slots=auto") {
  TEST_CASE("refused unless asked for, with a message that says who can resolve it") {
    const auto refused = hetlaunch::parse_hostfile("a slots=auto\n");
    CHECK(refused.error().message.find("hetlaunch discover") != std::string::npos);
    CHECK(hetlaunch::parse_host_list("a:auto").error().column == 3);
    hetlaunch::hostfile_options allow;
    allow.allow_auto_slots = true;
    const auto c = hetlaunch::parse_hostfile("a slots=auto\nb:auto\nc slots=2\n", allow).value();
    CHECK(c.nproc(0) == 0);
    CHECK(c.nproc(1) == 0);
    CHECK(c.nproc(2) == 2);
    CHECK(hetlaunch::parse_host_list("a:auto,b:3", allow).value().nproc(0) == 0);
    CHECK(!hetlaunch::parse_hostfile("a max_slots=auto\n",
                                     allow));  // only the slots may be asked for
    CHECK(hetlaunch::validate(c).front().code ==
          hetlaunch::errc::bad_nproc);  // planning needs the counts
  }
}
