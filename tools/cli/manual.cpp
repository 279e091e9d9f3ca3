// SPDX-License-Identifier: MIT
// `hetlaunch manual` and `hetlaunch completion`: the manual page (roff) and the shell completion
// scripts, written from the command and flag tables, so that neither can drift from the parser.
#include "cli.hpp"

#include <cstdio>
#include <string_view>

namespace cli {
namespace {

// Text for roff: backslashes and hyphens escaped, and a line that starts with '.' or '\'' (which
// roff would read as a request) made plain.
std::string roff(std::string_view text) {
  std::string out;
  bool line_start = true;
  for (const char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    line_start = c == '\n';
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  return out;
}

// A flag as a tagged paragraph: the spellings in bold, the value in italics, then the help.
std::string flag_item(const flag_view& f) {
  std::string head = concat("\\fB", roff(f.name), "\\fR");
  if (f.alias) head = concat("\\fB", roff(f.alias), "\\fR, ", head);
  if (f.value) head += concat(" \\fI", roff(f.value), "\\fR");
  return concat(".TP\n", head, "\n", roff(f.help), "\n");
}

// What a flag's value completes to: files, directories, the words of "a|b|c", or nothing.
std::string value_completion(const flag_view& f) {
  const std::string_view value = f.value;
  if (value == "FILE" || value == "PATH" || value == "PROGRAM")
    return "COMPREPLY=($(compgen -f -- \"$cur\"))";
  if (value == "DIR") return "COMPREPLY=($(compgen -d -- \"$cur\"))";
  if (value.find('|') != std::string_view::npos && value.find('[') == std::string_view::npos) {
    std::string words(value);
    for (char& c : words)
      if (c == '|') c = ' ';
    return concat("COMPREPLY=($(compgen -W \"", words, "\" -- \"$cur\"))");
  }
  return "COMPREPLY=()";
}

std::string bash_completion() {
  const std::vector<flag_view> flags = flag_list();
  std::string out =
      "# bash completion for hetlaunch; written by `hetlaunch completion bash` from its own tables.\n"
      "_hetlaunch() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} command=\"\" i\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    case ${COMP_WORDS[i]} in -*) ;; *) command=${COMP_WORDS[i]}; break ;; esac\n"
      "  done\n"
      "  if [[ -z $command ]]; then\n"
      "    COMPREPLY=($(compgen -W \"";
  for (const command& c : commands()) out += concat(c.name, " ");
  out += "--help --version\" -- \"$cur\"))\n    return\n  fi\n  case $prev in\n";
  for (const flag_view& f : flags) {
    if (!f.value) continue;
    if (std::string_view(f.name) == "--format") {
      // Each command has its own formats.
      out += "    --format) case $command in\n";
      for (const command& c : commands())
        if (*c.formats) {
          std::string words(c.formats);
          for (char& ch : words)
            if (ch == '|') ch = ' ';
          out += concat("        ", c.name, ") COMPREPLY=($(compgen -W \"", words,
                        "\" -- \"$cur\")) ;;\n");
        }
      out += "        *) COMPREPLY=() ;;\n      esac; return ;;\n";
      continue;
    }
    out += concat("    ", f.name, f.alias ? concat("|", f.alias) : std::string(), ") ",
                  value_completion(f), "; return ;;\n");
  }
  out += "  esac\n  local options\n  case $command in\n";
  for (const command& c : commands()) {
    out += concat("    ", c.name, ") options=\"--help");
    for (const flag_view& f : flags)
      if (command_accepts(c, f.name))
        out += concat(" ", f.name, f.alias ? concat(" ", f.alias) : std::string());
    out += "\" ;;\n";
  }
  out +=
      "    *) options=\"--help\" ;;\n  esac\n"
      "  if [[ $cur == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))\n"
      "  else\n"
      "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
      "  fi\n"
      "}\n"
      "complete -o filenames -F _hetlaunch hetlaunch\n";
  return out;
}

std::string zsh_completion() {
  // zsh runs the bash function through its bash completion layer.
  return concat(
      "#compdef hetlaunch\n# zsh completion for hetlaunch; written by `hetlaunch completion zsh`.\n"
      "autoload -U +X bashcompinit && bashcompinit\n",
      bash_completion());
}

std::string manual_page() {
  const std::vector<flag_view> flags = flag_list();
  std::string out =
      concat(".TH HETLAUNCH 1 \"\" \"hetlaunch ", HETLAUNCH_VERSION_MAJOR, ".",
             HETLAUNCH_VERSION_MINOR, ".", HETLAUNCH_VERSION_PATCH, "\" \"User Commands\"\n");
  out +=
      ".SH NAME\nhetlaunch \\- plan and launch torchrun jobs whose nodes run different numbers of workers\n";
  out +=
      ".SH SYNOPSIS\n.B hetlaunch\n.I COMMAND\n[\\fIOPTIONS\\fR] [\\fB\\-\\-\\fR] [\\fISCRIPT\\fR "
      "[\\fIARGS\\fR...]]\n.br\n.B hetlaunch\n\\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR\n";
  out +=
      ".SH DESCRIPTION\n"
      "hetlaunch computes the world size and every node's rank offset of a torchrun job whose nodes run "
      "different numbers of workers, validates the topology and the launch options, and builds every "
      "node's exact torchrun command and worker environment. It reads hostfiles, host lists and Slurm "
      "jobs, starts the nodes over ssh (\\fBrun\\fR), writes Slurm batch scripts and Kubernetes JobSets, "
      "and splits each step's global batch over GPUs of different speeds (work shares).\n"
      ".PP\nWithout an input option, commands plan a built\\-in example cluster of 8 + 4 + 2 workers.\n";
  out += ".SH COMMANDS\n";
  // The usage line after "hetlaunch NAME", which the page sets in bold itself.
  const auto usage_words = [](const command& c) {
    const std::string line = usage_line(c);
    const std::size_t prefix = std::string("hetlaunch ").size() + std::string(c.name).size();
    return line.size() > prefix ? line.substr(prefix + 1) : std::string();
  };
  for (const command& c : commands()) {
    out += concat(".SS ", c.name, "\n.nf\n\\fBhetlaunch ", c.name, "\\fR ", roff(usage_words(c)),
                  "\n.fi\n.PP\n", roff(description_of(c)));
    std::string own;
    for (const char* name : c.flags)
      for (const flag_view& f : flags)
        if (std::string_view(f.name) == name) own += flag_item(f);
    if (!own.empty()) out += concat(".PP\nOptions of ", c.name, ":\n.RS\n", own, ".RE\n");
  }
  const auto section = [&](const char* title, unsigned group, const char* intro) {
    out += concat(".SH ", title, "\n", intro, "\n");
    for (const flag_view& f : flags)
      if (f.group & group) out += flag_item(f);
  };
  section(
      "INPUT OPTIONS", input_flags,
      "The nodes of the job: one of \\fB\\-\\-hostfile\\fR, \\fB\\-\\-hosts\\fR and \\fB\\-\\-slurm\\fR, "
      "filtered by \\fB\\-\\-include\\fR or \\fB\\-\\-exclude\\fR.");
  section("LAUNCH OPTIONS", launch_flags,
          "What torchrun needs besides the nodes, and the work shares.");
  out +=
      ".SH EXIT STATUS\n.TP\n0\nsuccess\n.TP\n1\ninvalid input, or a job that failed\n.TP\n2\na usage error\n"
      ".TP\n128+N\n\\fBrun\\fR or \\fBdiscover\\fR stopped by signal N\n"
      ".PP\n\\fBrun\\fR otherwise exits with the status of the node that failed first (see \\fBhetlaunch run "
      "\\-\\-help\\fR).\n";
  out +=
      ".SH ENVIRONMENT\n"
      ".TP\n\\fBSLURM_*\\fR\nread by \\fB\\-\\-slurm\\fR: the job's nodes, their task counts and this node\n"
      ".TP\n\\fBHETLAUNCH_TASKS_PER_NODE\\fR\nevery node's worker count in a Slurm job, instead of Slurm's\n"
      ".TP\n\\fBHETLAUNCH_GLOBAL_BATCH\\fR, \\fBHETLAUNCH_NODE_BATCH\\fR, \\fBHETLAUNCH_NODE_BATCH_OFFSET\\fR, "
      "\\fBHETLAUNCH_NODE_HOST\\fR\n"
      "set for every worker with \\fB\\-\\-global\\-batch\\fR: the job's samples a step, the node's "
      "part of them and where it starts, and the node's host; checked by \\fBcheck\\-env\\fR\n";
  out +=
      ".SH EXAMPLES\n.nf\nhetlaunch plan \\-\\-hostfile hosts.txt\n"
      "hetlaunch run \\-\\-hostfile hosts.txt \\-\\-global\\-batch 1024 \\-\\- train.py\n"
      "hetlaunch sbatch \\-\\-group 2:8 \\-\\-group 1:4 \\-\\- train.py | sbatch\n.fi\n";
  out +=
      ".SH SEE ALSO\n\\fBtorchrun\\fR(1), \\fBsbatch\\fR(1), \\fBsrun\\fR(1), \\fBssh\\fR(1); the README and "
      "docs/ of the hetlaunch source\n";
  return out;
}

}  // namespace

int manual_command(const text_options&) {
  // The page is made from both tables at every build (and by cli.manual): a flag a command takes
  // whose part its options lack fails the build there, not each start of the program.
  if (const std::string problem = table_problem(); !problem.empty()) {
    std::fprintf(stderr, "hetlaunch: internal error: %s\n", problem.c_str());
    return 70;  // EX_SOFTWARE
  }
  const std::string page = manual_page();
  std::fwrite(page.data(), 1, page.size(), stdout);
  return 0;
}

int completion_command(const text_options& o) {
  if (o.positional.size() != 1) throw usage_error{"completion takes one shell: bash or zsh"};
  const std::string& shell = o.positional[0];
  if (shell != "bash" && shell != "zsh")
    throw usage_error{concat("completion: no script for ", quoted(shell), "; bash or zsh")};
  const std::string script = shell == "bash" ? bash_completion() : zsh_completion();
  std::fwrite(script.data(), 1, script.size(), stdout);
  return 0;
}

}  // namespace cli
