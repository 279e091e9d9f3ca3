"""What tests/e2e/worker.py (and the workers like it) leave behind, and what a plan says it should
be: every reader of worker records goes through here.

A record is OUT_DIR/worker-RANK.env, one NAME=VALUE line a variable (the ranks torchrun sets,
CUDA_VISIBLE_DEVICES, HOST, and SUM, the all_reduce of RANK + 1); a worker's whole environment is
OUT_DIR/worker-RANK.environ, NUL-separated.
"""
import pathlib


def read_record(path):
    """{name: value} of one record file."""
    return dict(line.split("=", 1) for line in pathlib.Path(path).read_text().splitlines() if "=" in line)


def read_records(directory, pattern="worker-*.env"):
    """{rank: {name: value}} of every record in `directory` whose name matches `pattern`."""
    records = {}
    for path in pathlib.Path(directory).glob(pattern):
        values = read_record(path)
        records[int(values["RANK"])] = values
    return records


def read_environ(path):
    """{name: value} (bytes) of a NUL-separated environment file; {} when there is none."""
    path = pathlib.Path(path)
    if not path.exists():
        return {}
    return dict(item.split(b"=", 1) for item in path.read_bytes().split(b"\0") if b"=" in item)


def expected_ranks(nproc):
    """Every rank's variables as torchrun sets them for nodes of `nproc` workers, in node order,
    and the SUM its all_reduce of RANK + 1 gives: a list indexed by global rank."""
    world = sum(nproc)
    out = []
    for node, count in enumerate(nproc):
        for local in range(count):
            out.append({"RANK": str(len(out)), "LOCAL_RANK": str(local), "GROUP_RANK": str(node),
                        "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(count),
                        "GROUP_WORLD_SIZE": str(len(nproc)), "SUM": str(world * (world + 1) // 2)})
    return out


def rank_problems(records, nproc, extra=None):
    """What differs between `records` and the ranks of `nproc` (plus `extra(rank, node)`'s
    variables, when given): one line a missing rank or a differing variable."""
    problems = []
    if sorted(records) != list(range(sum(nproc))):
        problems.append(f"workers recorded ranks {sorted(records)}, expected 0..{sum(nproc) - 1}")
    for rank, want in enumerate(expected_ranks(nproc)):
        if extra is not None:
            want = {**want, **extra(rank, int(want["GROUP_RANK"]))}
        got = records.get(rank)
        if got is None:
            continue
        problems += [f"rank {rank}: {k}={got.get(k)!r}, expected {v!r}" for k, v in want.items() if got.get(k) != v]
    return problems
