"""torch.cuda, as far as tbexport's hook goes, with a simulated device.

synchronize raises: the hook must never initialize CUDA at import.  CUDA
initializes lazily, as PyTorch's does: the first allocation (or init())
runs the callables queued by _lazy_call, in order, after calling
InitializeInjection of $CUDA_INJECTION64_PATH as the CUDA driver does at
cuInit; is_initialized() says whether it happened.  The device's memory is torch.cuda.memory's
simulated caching allocator; `tensor(nbytes)` is a tensor of that many
bytes on GPU 0, freed when the last reference to it goes (as a torch
tensor is).  FAKETORCH_DEVICES sets device_count() (default 1).
"""
import os

from . import memory
from .memory import (  # noqa: F401  (torch.cuda re-exports its memory functions)
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    reset_peak_memory_stats,
)

_initialized = [False]
_queued_calls = []


class DeferredCudaCallError(Exception):
    pass


def synchronize(*a, **k):
    raise RuntimeError("torch.cuda.synchronize() was called while importing torch")


def is_initialized():
    return _initialized[0]


def device_count():
    return int(os.environ.get("FAKETORCH_DEVICES", "1"))


def _lazy_call(callable, **kwargs):
    if is_initialized():
        callable()
    else:
        _queued_calls.append((callable, None))


def _lazy_init():
    if _initialized[0]:
        return
    _initialized[0] = True
    lib = os.environ.get("CUDA_INJECTION64_PATH")
    if lib:  # as the CUDA driver does at cuInit
        import ctypes

        ctypes.CDLL(lib).InitializeInjection()
    for fn, _ in _queued_calls:
        try:
            fn()
        except Exception as e:
            raise DeferredCudaCallError("CUDA call failed lazily at initialization: %s" % e) from e
    del _queued_calls[:]


init = _lazy_init


class tensor:
    """`nbytes` bytes on `device`, allocated by the caching allocator."""

    def __init__(self, nbytes, device=0):
        _lazy_init()
        self.nbytes = nbytes
        self.device = device
        self.addr = memory._alloc(device, nbytes)

    def __del__(self):
        memory._free(self.device, self.addr)
