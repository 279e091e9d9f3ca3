"""The lines of `hetlaunch run --events FILE`, read and checked the way a scheduler reads them:
every line must validate against docs/events.schema.json, the file must end with exactly one
job_exited, and the event sequence is compared as a shape: the job events (planned, restart,
job_exited) in their order, and between two of them the node events as a set, each node's start
before its end. How the nodes' starts and ends interleave is the network's and the machine's
load's, not the launcher's."""
import datetime
import json
import pathlib

import jsonschema

SCHEMA_PATH = pathlib.Path(__file__).resolve().parents[2] / "docs" / "events.schema.json"
_validator = None


def validator():
    global _validator
    if _validator is None:
        schema = json.loads(SCHEMA_PATH.read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        _validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    return _validator


def read(path):
    """(events, problems): the objects of the file, and what is wrong with it (a line that is not
    JSON or does not validate, no job_exited, or one that is not last)."""
    problems, events = [], []
    text = pathlib.Path(path).read_text() if pathlib.Path(path).exists() else None
    if text is None:
        return [], [f"no events file {path}"]
    if text and not text.endswith("\n"):
        problems.append("the events file does not end with a newline")
    for number, line in enumerate(text.splitlines(), 1):
        try:
            event = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(f"events line {number} is not JSON ({e}): {line!r}")
            continue
        for error in validator().iter_errors(event):
            problems.append(f"events line {number} does not validate: {error.message}: {line}")
        events.append(event)
    exits = [k for k, e in enumerate(events) if e.get("event") == "job_exited"]
    if exits != [len(events) - 1]:
        problems.append(f"job_exited must be the last event and only once, found at lines {[k + 1 for k in exits]}")
    return events, problems


def seconds(event):
    """The event's time as seconds since the epoch."""
    return datetime.datetime.strptime(event["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


# node_returned has no node index: its rows sort after the attempt's nodes.
NO_NODE = 1 << 30


def returned(attempt, host):
    """The row of a node_returned event: a host that left answered its probe during `attempt`."""
    return ("node_returned", attempt, NO_NODE, host, None)


def hung(attempt, node, host, rank, step):
    """The row of a rank_hung event: `rank` of `node` stopped in `step` during `attempt`."""
    return ("rank_hung", attempt, node, host, rank, step)


def slow(attempt, node, host, rank):
    """The row of a rank_slow event: `rank` of `node` slow against its own earlier windows."""
    return ("rank_slow", attempt, node, host, rank)


def shape(events):
    """The sequence as comparable rows: (event, attempt, node, host, reason) for node events and
    node_returned (whose time, like theirs, is the network's), (event, attempt, reason) for
    job_exited, hung() for rank_hung, (event, attempt) for the rest; see sorted_runs."""
    rows = []
    for e in events:
        kind = e["event"]
        if kind in ("node_started", "node_exited"):
            rows.append((kind, e["attempt"], e["node"], e["host"], e.get("reason")))
        elif kind == "node_returned":
            rows.append(returned(e["attempt"], e["host"]))
        elif kind == "job_exited":
            rows.append((kind, e["attempt"], e["reason"]))
        elif kind == "rank_hung":
            rows.append(hung(e["attempt"], e["node"], e["host"], e["rank"], e["step"]))
        elif kind == "rank_slow":
            rows.append(slow(e["attempt"], e["node"], e["host"], e["rank"]))
        else:
            rows.append((kind, e["attempt"]))
    return sorted_runs(rows)


def order_problems(events):
    """Within an attempt a node starts before it exits, and each does each at most once."""
    problems, seen = [], {}
    for e in events:
        if e["event"] not in ("node_started", "node_exited"):
            continue
        key = (e["attempt"], e["node"])
        done = seen.setdefault(key, [])
        if e["event"] in done or (e["event"] == "node_started" and "node_exited" in done):
            problems.append(f"node {e['node']} of attempt {e['attempt']}: {e['event']} after {done}")
        done.append(e["event"])
    return problems


def compare(events, expected):
    """Problems when `events` are not `expected` (tuples as shape() makes them): the same events
    with the same keys between the same job events (planned, restart, job_exited), in that order;
    between two of those, the node events of different nodes may come in any order (it is the
    network's), while each node's own start comes before its end."""
    got = shape(events)
    problems = order_problems(events)
    if got != sorted_runs(expected):
        problems.append("the events differ from the expected sequence:\n  got      "
                        + "\n           ".join(map(str, got)) + "\n  expected "
                        + "\n           ".join(map(str, sorted_runs(expected))))
    return problems


def sorted_runs(rows):
    """`rows` with each run of node events (between two job events) sorted: by node, a node's
    start before its end."""
    # node_returned, rank_slow and rank_hung come when a host's answer or a rank's line (or its
    # silence) does: the network's time, as other nodes' starts are. A rank's own node's start
    # comes before it, and its node's end after.
    rank = {"node_started": 0, "rank_hung": 0.5, "node_exited": 1, "node_returned": 2, "rank_slow": 3}
    out, k = [], 0
    while k < len(rows):
        j = k + 1
        if rows[k][0] in rank:
            while j < len(rows) and rows[j][0] in rank:
                j += 1
            out.extend(sorted(rows[k:j], key=lambda r: (r[1], r[2], rank[r[0]], r[3], str(r[4]))))
        else:
            out.append(rows[k])
        k = j
    return out
