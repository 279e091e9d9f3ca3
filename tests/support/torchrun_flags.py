"""The hetlaunch flags every test job passes to run Debian's torchrun: its torch 1.13 on Python
3.11 crashes on torchrun's default --redirects and --tee values, so they are given explicitly
(harmless on torch 2.x)."""

STREAMS = ["--torchrun-arg", "--redirects", "--torchrun-arg", "2", "--torchrun-arg", "--tee", "--torchrun-arg", "2"]


def torchrun(program="/usr/bin/torchrun"):
    """--program and the stream flags, for `hetlaunch exec`, `run` and `jobset`."""
    return ["--program", str(program), *STREAMS]
