// SPDX-License-Identifier: MIT
// hetlaunch: plan and launch torchrun jobs whose nodes run different numbers of workers, from a
// shell. Exit status: 0 success, 1 invalid input or a failed job, 2 usage error.
#include "cli.hpp"

#include <cstdio>

int main(int argc, char** argv) {
  try {
    const cli::arguments a = cli::parse_args(argc, argv);
    if (a.version && a.command.empty()) {
      std::printf("hetlaunch %d.%d.%d\n", HETLAUNCH_VERSION_MAJOR, HETLAUNCH_VERSION_MINOR,
                  HETLAUNCH_VERSION_PATCH);
      return cli::finish_output(0);
    }
    const cli::command* c = cli::find_command(a.command);
    if (!c) {
      std::fputs(cli::main_help().c_str(), a.help ? stdout : stderr);
      return a.help ? cli::finish_output(0) : cli::exit_usage;
    }
    if (a.help) {
      std::fputs(cli::command_help(*c).c_str(), stdout);
      return cli::finish_output(0);
    }
    // The command binds the command line into its own options, once, and runs on them.
    return cli::finish_output(c->run.start(*c, a));
  } catch (const cli::usage_error& e) {
    std::fprintf(stderr, "hetlaunch: %s\nTry `hetlaunch --help`.\n", e.message.c_str());
    if (!e.recorded) cli::record_usage_error(argc, argv);
    return cli::exit_usage;
  }
}
