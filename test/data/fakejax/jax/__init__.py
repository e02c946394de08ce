"""A stand-in for JAX, for test/cli/test_memory_python.sh (no GPU, no jax).

What tbexport's hook touches: jax._src.xla_bridge._backends (empty until
the program's first use of a device creates the backends, as JAX's is),
jax.local_devices() (creates them, calling InitializeInjection of
$CUDA_INJECTION64_PATH as the CUDA driver does at cuInit) and Device.memory_stats() with XLA's
GPU allocator keys.  `use(device, nbytes)` changes a device's bytes in use
(negative: frees).  FAKEJAX_DEVICES sets the number of GPUs (default 1).
"""
import os

from ._src import xla_bridge

__version__ = "0.0+fake"


class Device:
    platform = "gpu"

    def __init__(self, i):
        self.id = i
        self.in_use = self.peak = 0

    def memory_stats(self):
        return {"bytes_in_use": self.in_use, "peak_bytes_in_use": self.peak, "bytes_limit": 80 << 30,
                "num_allocs": 0}


def local_devices():
    if not xla_bridge._backends:
        lib = os.environ.get("CUDA_INJECTION64_PATH")
        if lib:  # as the CUDA driver does at cuInit
            import ctypes

            ctypes.CDLL(lib).InitializeInjection()
        n = int(os.environ.get("FAKEJAX_DEVICES", "1"))
        xla_bridge._backends["cuda"] = [Device(i) for i in range(n)]
    return list(xla_bridge._backends["cuda"])


def use(device, nbytes):
    d = local_devices()[device]
    d.in_use += nbytes
    d.peak = max(d.peak, d.in_use)
