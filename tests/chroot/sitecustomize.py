# SPDX-License-Identifier: MIT
# Debian's torch 2.x is built without libuv, but TCPStore defaults to use_libuv=True and two call
# sites do not pass it (the agent's static rendezvous, static_tcp_rendezvous.py, and the worker's
# store, rendezvous.py's _create_c10d_store): every static-rendezvous torchrun then dies with
# "use_libuv was requested but PyTorch was build without libuv support" (pytorch/pytorch#178600).
# On PYTHONPATH, and only when USE_LIBUV=0, this makes use_libuv default to False there.
import os

if os.environ.get("USE_LIBUV") == "0":
    try:
        import torch.distributed as _dist
    except ImportError:
        _dist = None
    if _dist is not None and hasattr(_dist, "TCPStore"):
        class TCPStore(_dist.TCPStore):
            def __init__(self, *args, **kwargs):
                kwargs.setdefault("use_libuv", False)
                super().__init__(*args, **kwargs)

        _dist.TCPStore = TCPStore
        import importlib
        for _name in ("torch.distributed.elastic.rendezvous.static_tcp_rendezvous", "torch.distributed.rendezvous"):
            try:
                _module = importlib.import_module(_name)
            except ImportError:
                continue
            if hasattr(_module, "TCPStore"):
                _module.TCPStore = TCPStore
