"""A stand-in for PyTorch, for test/cli/test_ops.sh (no GPU, no torch here).

It has what tbexport's Python hook touches (torch.cuda.synchronize,
torch.autograd.profiler: emit_nvtx, _enable_profiler, _prepare_profiler,
_disable_profiler, profile) with PyTorch's rule of one profiler per
thread, and `op`: an operator that, while an NVTX profiler is on, pushes
the NVTX range PyTorch 2.11 pushes for it (through FAKE_NVTX: the fake
libcupti's NVTX copy, see collect_fake_libcupti.c) around a body.
FAKETORCH_BROKEN=1 makes emit_nvtx fail as a build without CUDA does.
"""
import os

from . import autograd, cuda  # noqa: F401

__version__ = "0.0+fake"

_op_id = [0]
_seq = [0]


def op(name, sizes=None, seq=False, body=None):
    """Runs `body` inside operator `name` (its input shapes `sizes`, a
    list of lists; seq=True: a forward op that takes a sequence number,
    or an int: that number, as a backward node carries its forward's)."""
    state = autograd.profiler.state
    nvtx = state["enabled"] and state["enabled"][-1][0] == "NVTX"
    if nvtx:
        _op_id[0] += 1
        text = name
        if seq is True:
            text += ", seq = %d" % _seq[0]
            _seq[0] += 1
        elif seq is not False:
            text += ", seq = %d" % seq
        text += ", op_id = %d" % _op_id[0]
        if sizes is not None and state["enabled"][-1][1]:
            text += ", sizes = [%s]" % ", ".join("[%s]" % ", ".join(str(d) for d in s) for s in sizes)
            text += ", input_op_ids = [%s]" % ", ".join("(0,-1)" for _ in sizes)
        _push(text.encode())
    try:
        if body:
            body()
    finally:
        if nvtx:
            _pop()


def _lib():
    import ctypes

    return ctypes.CDLL(os.environ["FAKE_NVTX"])


def _push(msg):
    _lib().fake_nvtx_push(msg)


def _pop():
    _lib().fake_nvtx_pop()
