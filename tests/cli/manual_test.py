#!/usr/bin/env python3
"""The manual page and the shell completion, made from the command and flag tables:

0. Every command's usage line names exactly the options its help lists, and its groups.
1. `hetlaunch manual` renders with groff and with `man -l` without a warning (-ww), and shows
   every command and every flag (name and alias) that the help text lists.
2. `hetlaunch completion bash` offers, for every command, exactly the options its help lists
   (its own, and the input and launch options when it takes them), driven in a real bash:
   commands after `hetlaunch`, a command's flags after `-`, files after --hostfile, directories
   after --chdir, the words of --rdzv, and nothing for a number.
3. `hetlaunch completion zsh` loads in zsh. Without zsh or man the rest runs, and the suite ends
   with 77 (skipped), naming what did not run.

usage: manual_test.py HETLAUNCH
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from harness import Suite  # noqa: E402


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def help_flags(binary):
    """Every command's options, as its --help and the main --help list them."""
    main = run([binary, "--help"]).stdout
    commands = re.findall(r"^  ([a-z-]+) +\S", main.split("commands:")[1].split("\n\n")[0], re.M)
    group = {}
    for title, key in (("input", "INPUT"), ("launch options", "LAUNCH OPTIONS")):
        block = main.split(f"\n{title}")[1].split("\n\n")[0]
        group[key] = re.findall(r"^  (?:(--?[\w-]+), )?(--[\w-]+)", block, re.M)
    out = {}
    for c in commands:
        text = run([binary, c, "--help"]).stdout
        own = re.findall(r"^  (?:(--?[\w-]+), )?(--[\w-]+)", text.split("\noptions:\n")[1], re.M) if "\noptions:\n" in text else []
        flags = set()
        for alias, name in own + (group["INPUT"] if "\nINPUT:" in text else []) + \
                (group["LAUNCH OPTIONS"] if "\nLAUNCH OPTIONS:" in text else []):
            flags.add(name)
            if alias:
                flags.add(alias)
        out[c] = flags
    return out


def complete(script, words, cwd):
    """COMPREPLY of the bash completion for the command line `words` (the last one being typed)."""
    line = " ".join(f"'{w}'" for w in words)
    program = (f"source {script}\nCOMP_WORDS=({line})\nCOMP_CWORD={len(words) - 1}\n_hetlaunch\n"
               'printf "%s\\n" "${COMPREPLY[@]}"\n')
    r = run(["bash", "--norc", "--noprofile", "-c", program], cwd=cwd)
    if r.returncode != 0 or r.stderr:
        return {"<error>", r.stderr}
    return {w for w in r.stdout.splitlines() if w}


def main():
    binary = sys.argv[1]
    skipped = []
    with Suite("manual") as suite:
        check = lambda ok, what: suite.report(what, [] if ok else ["not so"])  # noqa: E731
        pages(binary, check, skipped)
    if skipped and suite.status == 0:
        print(f"skipped: {', '.join(skipped)} not installed; what needs them did not run")
        return 77
    return suite.status


def pages(binary, check, skipped):
    flags = help_flags(binary)
    every_flag = set().union(*flags.values())
    # Each usage line names exactly the command's own options and the groups it takes.
    for c in sorted(flags):
        text = run([binary, c, "--help"]).stdout
        usage = text.split("\n")[0] + " " + " ".join(l for l in text.split("\n")[1:] if l.startswith("       "))
        own = set(re.findall(r"^  (?:--?[\w-]+, )?(--[\w-]+)", text.split("\noptions:\n")[1], re.M)) if "\noptions:\n" in text else set()
        named = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", usage))
        # A flag of a group the command requires (calibrate's --global-batch) comes first, unbracketed.
        own |= set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", usage.split("[")[0]))
        groups = {g for g in ("INPUT", "LAUNCH OPTIONS") if f"[{g}]" in usage}
        listed = {g for g in ("INPUT", "LAUNCH OPTIONS") if f"\n{g}:" in text}
        check(named == own and groups == listed,
              f"{c}'s usage line names its options {sorted(own - named)} {sorted(named - own)} and groups {sorted(groups ^ listed)}")
    with tempfile.TemporaryDirectory() as d:
        page = os.path.join(d, "hetlaunch.1")
        r = run([binary, "manual"])
        check(r.returncode == 0, "manual prints the page")
        open(page, "w").write(r.stdout)
        g = run(["groff", "-man", "-Tascii", "-ww", page])
        check(g.returncode == 0 and not g.stderr, f"groff -ww renders it without a warning {g.stderr[:300]!r}")
        text = re.sub(r".\x08", "", g.stdout)
        missing = sorted(c for c in flags if not re.search(rf"^ {{3}}{c}$", text, re.M))
        check(not missing, f"the page has a section for every command {missing}")
        missing = sorted(f for f in every_flag | {"--help", "--version"} if f not in text)
        check(not missing, f"the page shows every flag {missing}")
        if shutil.which("man"):
            m = run(["man", "--warnings=w", "-l", page], env=dict(os.environ, MANWIDTH="100", MANPAGER="cat", PAGER="cat"))
            check(m.returncode == 0 and not m.stderr.strip() and "hetlaunch" in m.stdout,
                  f"man -l renders it without a warning {m.stderr[:300]!r}")
        else:
            skipped.append("man")

        script = os.path.join(d, "hetlaunch.bash")
        open(script, "w").write(run([binary, "completion", "bash"]).stdout)
        for c, want in flags.items():
            got = complete(script, ["hetlaunch", c, "-"], d)
            check(got == want | {"--help"}, f"completion: {c}'s options" +
                  ("" if got == want | {"--help"} else f": extra {sorted(got - want - {'--help'})}, "
                                                        f"missing {sorted(want - got)}"))
        check(complete(script, ["hetlaunch", ""], d) == set(flags) | {"--help", "--version"}, "completion: the commands")
        check(complete(script, ["hetlaunch", "ru"], d) == {"run"}, "completion: a command from its start")
        check(complete(script, ["hetlaunch", "plan", "--js"], d) == {"--json"}, "completion: a flag from its start")
        open(os.path.join(d, "hosts.txt"), "w").write("a slots=1\n")
        open(os.path.join(d, "hosts.old"), "w").write("a slots=1\n")
        os.mkdir(os.path.join(d, "work"))
        check(complete(script, ["hetlaunch", "plan", "--hostfile", "hosts.t"], d) == {"hosts.txt"},
              "completion: files after --hostfile")
        check(complete(script, ["hetlaunch", "run", "--chdir", "w"], d) == {"work"}, "completion: directories after --chdir")
        check(complete(script, ["hetlaunch", "plan", "--rdzv", ""], d) == {"static", "c10d"}, "completion: --rdzv's words")
        check(complete(script, ["hetlaunch", "plan", "--global-batch", ""], d) == set(),
              "completion: nothing for a number")
        if shutil.which("zsh"):
            z = run(["zsh", "-f", "-c", f"autoload -U compinit && compinit -u; source <({binary} completion zsh); "
                                         "print ${_comps[hetlaunch]}"])
            check(z.returncode == 0 and "_hetlaunch" in z.stdout, f"zsh loads the completion {z.stderr[:200]!r}")
        else:
            skipped.append("zsh")
    bad = run([binary, "completion", "fish"])
    check(bad.returncode == 2 and "bash or zsh" in bad.stderr, "completion refuses a shell it has no script for")


if __name__ == "__main__":
    sys.exit(main())
