"""The lines of `hetlaunch run --events FILE`, read and checked the way a scheduler reads them:
every line must validate against docs/events.schema.json, the file must end with exactly one
job_exited, and the event sequence is compared as a shape, in which the events that happen at
once on several nodes (a run of node_started or node_exited lines of one attempt) are sorted by
node, since their order among themselves is the network's, not the launcher's."""
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


def shape(events):
    """The sequence as tuples: (event, attempt, node, host, reason) for node events, (event,
    attempt, reason) for job_exited, (event, attempt) for the rest; runs of node events of one
    kind and attempt sorted by node."""
    rows = []
    for e in events:
        kind = e["event"]
        if kind in ("node_started", "node_exited"):
            rows.append((kind, e["attempt"], e["node"], e["host"], e.get("reason")))
        elif kind == "job_exited":
            rows.append((kind, e["attempt"], e["reason"]))
        else:
            rows.append((kind, e["attempt"]))
    return sorted_runs(rows)


def compare(events, expected):
    """Problems when the shape of `events` is not `expected` (a list of tuples as shape() makes
    them, in order; runs of node events sorted by node)."""
    got = shape(events)
    if got == sorted_runs(expected):
        return []
    return ["the events differ from the expected sequence:\n  got      " + "\n           ".join(map(str, got))
            + "\n  expected " + "\n           ".join(map(str, sorted_runs(expected)))]


def sorted_runs(rows):
    """`rows` (tuples as shape() makes them) with each run of node events of one kind and
    attempt sorted by node."""
    out, k = [], 0
    while k < len(rows):
        j = k + 1
        if rows[k][0].startswith("node_"):
            while j < len(rows) and rows[j][:2] == rows[k][:2]:
                j += 1
        out.extend(sorted(rows[k:j]))
        k = j
    return out
