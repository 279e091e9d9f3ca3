// SPDX-License-Identifier: MIT
// hetlaunch: plan and launch torchrun jobs whose nodes run different numbers of workers, from a
// shell. Exit status: 0 success, 1 invalid input or a failed job, 2 usage error.
#include "cli.hpp"

#include <cstdio>

int main(int argc, char** argv) {
  try {
    cli::options o = cli::parse_args(argc, argv);
    if (o.version && o.command.empty()) {
      std::printf("hetlaunch %d.%d.%d\n", HETLAUNCH_VERSION_MAJOR, HETLAUNCH_VERSION_MINOR,
                  HETLAUNCH_VERSION_PATCH);
      return cli::finish_output(0);
    }
    const cli::command* c = cli::find_command(o.command);
    if (!c) {
      std::fputs(cli::main_help().c_str(), o.help ? stdout : stderr);
      return o.help ? cli::finish_output(0) : cli::exit_usage;
    }
    if (o.help) {
      std::fputs(cli::command_help(*c).c_str(), stdout);
      return cli::finish_output(0);
    }
    cli::check_required(*c, o);
    o.format = cli::output_format(*c, o);
    if (c->script == cli::script_use::required && o.positional.empty())
      throw cli::usage_error{std::string("a training script is needed: hetlaunch ") + c->name +
                             " ... [--] SCRIPT [ARGS...]"};
    if (c->node == cli::node_use::required && !o.node && !o.input.slurm)
      throw cli::usage_error{"--node I is needed"};
    // The command line is bound once; every command then reads it and changes nothing.
    if (c->script == cli::script_use::optional || c->script == cli::script_use::required)
      cli::take_script(o);
    return cli::finish_output(c->run(o));
  } catch (const cli::usage_error& e) {
    std::fprintf(stderr, "hetlaunch: %s\nTry `hetlaunch --help`.\n", e.message.c_str());
    cli::record_usage_error(argc, argv);
    return cli::exit_usage;
  }
}
