"""torch.autograd.profiler, as far as the hook goes: one profiler per thread."""
import os
import threading

state = {"enabled": [], "log": []}
_owner = {}


def _enable_profiler(config, activities):
    me = threading.get_ident()
    if _owner.get(me):
        raise RuntimeError("Profiler is already enabled on this thread")
    _owner[me] = True
    state["enabled"].append(config)
    state["log"].append(["enable"] + list(config))


def _prepare_profiler(config, activities):
    state["log"].append(["prepare"] + list(config))


def _disable_profiler():
    me = threading.get_ident()
    if not _owner.get(me):
        raise RuntimeError("Can't disable the profiler when it's not running")
    _owner[me] = False
    cfg = state["enabled"].pop()
    state["log"].append(["disable"] + list(cfg))
    return "result"


class emit_nvtx:
    def __init__(self, enabled=True, record_shapes=False):
        self.record_shapes = record_shapes

    def __enter__(self):
        import torch

        torch.cuda.synchronize()
        if os.environ.get("FAKETORCH_BROKEN"):
            raise RuntimeError("Can't use NVTX profiler - PyTorch was compiled without CUDA")
        _enable_profiler(("NVTX", self.record_shapes), set())
        return self

    def __exit__(self, *a):
        _disable_profiler()


class profile:
    """The program's own profiler (torch.profiler.profile's core)."""

    def __enter__(self):
        _prepare_profiler(("KINETO", False), set())
        _enable_profiler(("KINETO", False), set())
        return self

    def __exit__(self, *a):
        _disable_profiler()
