#!/usr/bin/env python3
"""`hetlaunch run --metrics FILE` read by the real monitoring stack, each part started and stopped
here: Debian's prometheus-node-exporter reads FILE through its textfile collector with no scrape
error, `promtool check metrics` accepts FILE, and Debian's prometheus, scraping that node_exporter
on loopback every second, returns the job's series through its HTTP API and evaluates the alert
rules of docs/prometheus/hetlaunch.rules.yml on them. The rules' own behaviour (which series fire
which alert, and when) is pinned by `promtool test rules` on tests/metrics/hetlaunch.rules.test.yml.

The job is `run --local` with a stand-in program per node: rank 0 reports 300 samples/s a window,
rank 1 100 and then 28 (slow against its own 100, never against rank 0's 300); then both keep
reporting while the monitors are asked.

usage: metrics_test.py HETLAUNCH
"""
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))
from harness import Suite  # noqa: E402
import processes  # noqa: E402

STEM = "hetlaunch-metrics-test."  # a run's directory: /tmp/STEM<pid>, its daemons' arguments name it
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or "/usr/bin/prometheus-node-exporter"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
RULES = HERE.parents[1] / "docs" / "prometheus" / "hetlaunch.rules.yml"


def remove_stale():
    """A killed earlier run's daemons and directory: its pid is gone, its directory is left."""
    for path in processes.left_by_killed_runs(STEM):
        processes.kill_until_gone(lambda p=path: ours(p))
        shutil.rmtree(path, ignore_errors=True)


def ours(directory):
    """The pids of processes whose command line names `directory`."""
    needle = str(directory).encode()
    return processes.matching(lambda proc: needle in (proc / "cmdline").read_bytes())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def window_lines(rank, rates, start=1):
    return "; ".join(f"echo 'HETLAUNCH_PROGRESS {{\"rank\": {rank}, \"step\": {10 * k}, \"phase\": \"computing\", "
                     f"\"phase_seconds\": 0, \"window\": {k}, \"samples_per_second\": {r}}}'"
                     for k, r in enumerate(rates, start))


def reporting(rank, rate, first_window, seconds):
    """A rank that keeps reporting a window a second at `rate` for `seconds`."""
    return (f"k={first_window}; end=$(($(date +%s) + {seconds})); while [ $(date +%s) -lt $end ]; do "
            f"echo \"HETLAUNCH_PROGRESS {{\\\"rank\\\": {rank}, \\\"step\\\": $((k * 10)), \\\"phase\\\": "
            f"\\\"computing\\\", \\\"phase_seconds\\\": 0, \\\"window\\\": $k, \\\"samples_per_second\\\": {rate}}}\"; "
            "k=$((k + 1)); sleep 1; done")


class Stack:
    """The job and the monitors of one run, in /tmp/STEM<pid>."""

    def __init__(self, binary):
        self.binary = binary
        self.dir = pathlib.Path(tempfile.gettempdir()) / f"{STEM}{os.getpid()}"
        self.textfiles = self.dir / "textfile"
        self.metrics = self.textfiles / "hetlaunch-job.prom"
        self.started = []  # (name, Popen)
        self.exporter_port = self.prometheus_port = 0

    def start(self, name, argv, **kwargs):
        log = open(self.dir / f"{name}.log", "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, **kwargs)
        log.close()
        self.started.append((name, p))
        return p

    def log(self, name):
        path = self.dir / f"{name}.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def set_up(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        self.textfiles.mkdir(parents=True)
        # The job: reports for 15 s more, long enough for every monitor to come up and scrape it.
        # --local runs each node's command here: the node is told by torchrun's --node_rank.
        program = (f'case " $* " in *" --node_rank=0 "*) {window_lines(0, [300] * 8)}; {reporting(0, 300, 9, 15)};; '
                   f'*) {window_lines(1, [100, 104, 98, 101, 99, 102, 30, 28])}; {reporting(1, 28, 9, 15)};; esac')
        self.job = self.start("job", [self.binary, "run", "--local", "--hosts", "a:1,b:1", "--metrics",
                                      str(self.metrics), "--events", str(self.dir / "events.jsonl"),
                                      "--program", "sh", "--program", "-c", "--program", program, "--", "t.py"])
        self.exporter_port = free_port()
        self.start("node_exporter", [NODE_EXPORTER, "--collector.disable-defaults", "--collector.textfile",
                                     f"--collector.textfile.directory={self.textfiles}",
                                     f"--web.listen-address=127.0.0.1:{self.exporter_port}"])
        self.prometheus_port = free_port()
        config = self.dir / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files:\n  - {RULES}\n"
            "scrape_configs:\n  - job_name: node\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{self.exporter_port}']\n")
        self.start("prometheus", [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={self.dir / 'data'}",
                                  f"--web.listen-address=127.0.0.1:{self.prometheus_port}"])

    def tear_down(self):
        for _, p in self.started:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for _, p in self.started:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        processes.kill_until_gone(lambda: ours(self.dir))
        shutil.rmtree(self.dir, ignore_errors=True)

    def leftovers(self):
        problems = []
        left = ours(self.dir)
        if left:
            problems.append(f"processes left: {left}")
        if self.dir.exists():
            problems.append(f"{self.dir} is left")
        return problems

    def query(self, expr):
        url = f"http://127.0.0.1:{self.prometheus_port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        answer = json.loads(get(url))
        return answer["data"]["result"] if answer.get("status") == "success" else None


def until(ready, seconds):
    """The first true value of ready() within `seconds` (errors count as not yet), else None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = ready()
            if value:
                return value
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.25)
    return None


def file_written(stack):
    """run writes FILE while the job runs, every second: its time changes, and no half file is
    ever seen (every read ends with a whole line and holds every family)."""
    if not until(lambda: stack.metrics.exists() and "hetlaunch_rank_expected_samples_per_second{rank=\"1\""
                 in stack.metrics.read_text(), 30):
        return [f"no rank 1 expected rate in {stack.metrics}: {stack.log('job')}"]
    problems = []
    times = set()
    for _ in range(30):
        text = stack.metrics.read_text()
        if not text.endswith("\n") or text.count("# TYPE ") != 8:
            problems.append(f"a partial file: {text[-300:]!r}")
            break
        times.add(stack.metrics.stat().st_mtime_ns)
        time.sleep(0.1)
    if len(times) < 2:
        problems.append("the file was not rewritten within 3 s")
    return problems


def promtool_accepts(stack):
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=stack.metrics.read_bytes(), capture_output=True,
                       timeout=30)
    return [] if r.returncode == 0 else [f"promtool check metrics: {r.returncode} {r.stdout!r} {r.stderr!r}"]


def node_exporter_reads(stack):
    """node_exporter serves the file's series and says it read the file without an error."""
    url = f"http://127.0.0.1:{stack.exporter_port}/metrics"
    text = until(lambda: (lambda t: t if "hetlaunch_rank_step" in t else None)(get(url)), 20)
    if text is None:
        return [f"node_exporter never served hetlaunch_rank_step: {stack.log('node_exporter')}"]
    problems = []
    if "node_textfile_scrape_error 0" not in text:
        problems.append("node_textfile_scrape_error is not 0: " + "\n".join(
            line for line in text.splitlines() if "textfile" in line))
    for series in ['hetlaunch_node_up{host="a",node="0"} 1', 'hetlaunch_node_up{host="b",node="1"} 1',
                   'hetlaunch_rank_expected_samples_per_second{host="b",node="1",rank="1"} 100.5',
                   'hetlaunch_job_world_size 2', 'hetlaunch_restarts_total 0']:
        if series not in text:
            problems.append(f"node_exporter does not serve {series!r}")
    if f'node_textfile_mtime_seconds{{file="{stack.metrics}"}}' not in text:
        problems.append("no node_textfile_mtime_seconds for the file")
    return problems


def prometheus_returns(stack):
    """Prometheus scraped node_exporter: the query API returns each rank's series with its labels,
    and the rank slowed against its own rate is the one the slow expression selects."""
    steps = until(lambda: (lambda r: r if r and len(r) == 2 else None)(stack.query("hetlaunch_rank_step")), 60)
    if steps is None:
        return [f"Prometheus returned no hetlaunch_rank_step: {stack.log('prometheus')}"]
    problems = []
    labels = sorted((s["metric"]["rank"], s["metric"]["node"], s["metric"]["host"]) for s in steps)
    if labels != [("0", "0", "a"), ("1", "1", "b")]:
        problems.append(f"rank labels {labels}")
    slow = stack.query("hetlaunch_rank_samples_per_second < on(instance, rank, node, host) "
                       "hetlaunch_rank_expected_samples_per_second / 2")
    if [s["metric"]["rank"] for s in slow or []] != ["1"]:
        problems.append(f"the slow expression selects {slow}, expected rank 1 alone")
    up = stack.query("sum(hetlaunch_node_up)")
    if not up or up[0]["value"][1] != "2":
        problems.append(f"sum(hetlaunch_node_up): {up}")
    return problems


def rules_evaluate(stack):
    """The documented rules load into Prometheus and evaluate on the job's series without an
    error; HetlaunchRankSlow is pending for rank 1 alone (it fires after 5 minutes)."""
    url = f"http://127.0.0.1:{stack.prometheus_port}/api/v1/rules"

    def pending():
        groups = json.loads(get(url))["data"]["groups"]
        rules = [r for g in groups for r in g["rules"]]
        slow = [r for r in rules if r["name"] == "HetlaunchRankSlow"]
        return rules if slow and slow[0].get("alerts") else None
    rules = until(pending, 30)
    if rules is None:
        return [f"HetlaunchRankSlow never pending: {get(url)[:2000]}"]
    problems = [f"rule {r['name']}: {r['health']} {r.get('lastError')}" for r in rules if r["health"] != "ok"]
    names = sorted(r["name"] for r in rules)
    if names != ["HetlaunchMetricsStale", "HetlaunchRankSilent", "HetlaunchRankSlow"]:
        problems.append(f"rules {names}")
    alerts = [(a["labels"]["rank"], a["state"]) for r in rules if r["name"] == "HetlaunchRankSlow"
              for a in r["alerts"]]
    if alerts != [("1", "pending")]:
        problems.append(f"HetlaunchRankSlow alerts {alerts}")
    for r in rules:
        if r["name"] != "HetlaunchRankSlow" and r.get("alerts"):
            problems.append(f"{r['name']} alerts {r['alerts']}")
    return problems


def rules_unit_tests():
    r = subprocess.run([PROMTOOL, "test", "rules", "hetlaunch.rules.test.yml"], cwd=HERE, capture_output=True,
                       text=True, timeout=60)
    checked = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    problems = [] if r.returncode == 0 else [f"promtool test rules: {r.stdout[-2000:]} {r.stderr[-1000:]}"]
    if checked.returncode != 0:
        problems.append(f"promtool check rules: {checked.stdout[-1000:]} {checked.stderr[-1000:]}")
    return problems


def job_ends(stack):
    """Once the job has ended, the file stays, each node shown down, and nothing is left beside
    it (the file is written under another name first, then renamed)."""
    try:
        status = stack.job.wait(timeout=90)
    except subprocess.TimeoutExpired:
        return ["the job did not end within 90 s"]
    problems = [] if status == 0 else [f"the job exited {status}: {stack.log('job')}"]
    text = stack.metrics.read_text()
    for series in ['hetlaunch_node_up{node="0",host="a"} 0', 'hetlaunch_node_up{node="1",host="b"} 0']:
        if series not in text:
            problems.append(f"after the job, no {series!r} in {text[:1500]}")
    others = sorted(p.name for p in stack.textfiles.iterdir() if p != stack.metrics)
    if others:
        problems.append(f"files beside the metrics: {others}")
    return problems


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = str(pathlib.Path(sys.argv[1]).resolve())
    remove_stale()
    stack = Stack(binary)
    with Suite("metrics", teardown=stack.tear_down, leftovers=stack.leftovers) as run:
        run.case("promtool test rules: the documented alerts fire when they should, and only then",
                 rules_unit_tests)
        stack.set_up()
        run.case("run --metrics: FILE rewritten whole while the job runs", file_written, stack)
        run.case("promtool check metrics accepts FILE", promtool_accepts, stack)
        run.case("node_exporter's textfile collector serves FILE, no scrape error", node_exporter_reads, stack)
        run.case("Prometheus scrapes node_exporter: the job's series through the HTTP API", prometheus_returns,
                 stack)
        run.case("the documented rules evaluate on the job: only the slowed rank is pending", rules_evaluate, stack)
        run.case("after the job: every node down in FILE, nothing beside it", job_ends, stack)
    return run.status


if __name__ == "__main__":
    sys.exit(main())
