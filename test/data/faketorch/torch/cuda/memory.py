"""torch.cuda.memory: PyTorch's caching allocator, simulated, with its
history and snapshot in torch 2.x's shapes.

The allocator follows CUDACachingAllocator's rules: a request is rounded
up to 512 bytes; up to 1 MiB it is served from the small pool's 2 MiB
segments, above from the large pool (a 20 MiB segment under 10 MiB, else
the request rounded up to 2 MiB); the best-fitting free block of the pool
is split when what remains is at least 512 bytes (small) or more than
1 MiB (large), else handed out whole; a freed block merges with its free
neighbours; segments are never released (empty_cache() does).  Its
figures are torch's: allocated counts blocks (memory_allocated), reserved
segments (memory_reserved), with their peaks.  The history
(_record_memory_history, a ring of max_entries) records alloc,
free_requested, free_completed, segment_alloc and segment_free entries
with the requested size, as torch's does (`truth` lists what it did, for
tests), and _snapshot gives
`segments` (blocks with their states) and `device_traces`.
FAKETORCH_NO_HISTORY=1: a torch without _record_memory_history.
"""
import collections
import os
import sys
import time

_SMALL, _LARGE = 1 << 20, 10 << 20


class _Dev:
    def __init__(self):
        self.segments = []  # [address, total_size, pool, blocks]; block: [address, size, requested, allocated]
        self.next_addr = 0x7F0000000000
        self.allocated = self.reserved = 0
        self.peak_allocated = self.peak_reserved = 0
        self.live = {}  # address -> block


_devs = collections.defaultdict(_Dev)
# What the allocator did, whether or not the history is on, for tests:
# (device, bytes of the block: + allocated, - freed, allocated after, reserved after).
truth = []
_history = {"on": False, "max": sys.maxsize, "traces": collections.defaultdict(collections.deque)}


def _record(device, action, addr, size):
    if not _history["on"]:
        return
    q = _history["traces"][device]
    q.append({"action": action, "addr": addr, "size": size, "stream": 0, "time_us": time.time_ns() // 1000,
              "frames": [], "compile_context": "N/A", "user_metadata": ""})
    while len(q) > _history["max"]:
        q.popleft()


def _round(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


def _alloc(device, nbytes):
    d = _devs[device]
    size = _round(nbytes)
    pool = "small" if size <= _SMALL else "large"
    best = None
    for seg in d.segments:
        if seg[2] != pool:
            continue
        for b in seg[3]:
            if not b[3] and b[1] >= size and (best is None or b[1] < best[1][1]):
                best = (seg, b)
    if best is None:
        total = 2 << 20 if pool == "small" else (20 << 20 if size < _LARGE else (size + (2 << 20) - 1) // (2 << 20) * (2 << 20))
        seg = [d.next_addr, total, pool, [[d.next_addr, total, 0, False]]]
        d.next_addr += total + (2 << 20)
        d.segments.append(seg)
        d.reserved += total
        d.peak_reserved = max(d.peak_reserved, d.reserved)
        _record(device, "segment_alloc", seg[0], total)
        best = (seg, seg[3][0])
    seg, b = best
    rest = b[1] - size
    if (pool == "small" and rest >= 512) or (pool == "large" and rest > _SMALL):
        i = seg[3].index(b)
        seg[3].insert(i + 1, [b[0] + size, rest, 0, False])
        b[1] = size
    b[2], b[3] = nbytes, True
    d.live[b[0]] = b
    d.allocated += b[1]
    d.peak_allocated = max(d.peak_allocated, d.allocated)
    _record(device, "alloc", b[0], nbytes)
    truth.append((device, b[1], d.allocated, d.reserved))
    return b[0]


def _free(device, addr):
    d = _devs[device]
    b = d.live.pop(addr)
    b[3] = False
    _record(device, "free_requested", addr, b[2])
    d.allocated -= b[1]
    truth.append((device, -b[1], d.allocated, d.reserved))
    _record(device, "free_completed", addr, b[2])
    for seg in d.segments:
        blocks = seg[3]
        for i in range(len(blocks) - 1, 0, -1):
            if not blocks[i][3] and not blocks[i - 1][3]:
                blocks[i - 1][1] += blocks[i][1]
                del blocks[i]


def empty_cache():
    for device, d in _devs.items():
        keep = []
        for seg in d.segments:
            if len(seg[3]) == 1 and not seg[3][0][3]:
                d.reserved -= seg[1]
                _record(device, "segment_free", seg[0], seg[1])
            else:
                keep.append(seg)
        d.segments = keep


def _index(device):
    return 0 if device is None else int(device)


def memory_allocated(device=None):
    return _devs[_index(device)].allocated


def memory_reserved(device=None):
    return _devs[_index(device)].reserved


def max_memory_allocated(device=None):
    return _devs[_index(device)].peak_allocated


def max_memory_reserved(device=None):
    return _devs[_index(device)].peak_reserved


def reset_peak_memory_stats(device=None):
    d = _devs[_index(device)]
    d.peak_allocated, d.peak_reserved = d.allocated, d.reserved


def _record_memory_history_impl(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None,
                                clear_history=False, compile_context=False, global_record_annotations=False,
                                skip_actions=None):
    if enabled not in (None, "state", "all") or context not in (None, "state", "alloc", "all") or \
            stacks not in ("python", "all"):
        raise ValueError("bad argument")
    from . import _lazy_init

    _lazy_init()  # as torch's: the allocator must exist
    _history["on"] = enabled == "all"
    _history["max"] = max_entries
    if clear_history:
        _history["traces"].clear()
    for q in _history["traces"].values():
        while len(q) > max_entries:
            q.popleft()


def _record_memory_history(enabled="all", *args, **kwargs):
    if isinstance(enabled, bool):
        raise NotImplementedError("the legacy form is not simulated")
    return _record_memory_history_impl(enabled, *args, **kwargs)


def _snapshot(device=None):
    segments = []
    for dev in sorted(_devs):
        d = _devs[dev]
        _record(dev, "snapshot", 0, d.allocated)
        for seg in d.segments:
            blocks = [{"address": b[0], "size": b[1], "requested_size": b[2],
                       "state": "active_allocated" if b[3] else "inactive", "frames": []} for b in seg[3]]
            segments.append({"device": dev, "address": seg[0], "total_size": seg[1], "stream": 0,
                             "segment_type": seg[2], "segment_pool_id": (0, 0), "is_expandable": False,
                             "frames": [], "allocated_size": sum(b["size"] for b in blocks if b["state"] != "inactive"),
                             "active_size": sum(b["size"] for b in blocks if b["state"] != "inactive"),
                             "requested_size": sum(b["requested_size"] for b in blocks if b["state"] != "inactive"),
                             "blocks": blocks})
    n = max(list(_history["traces"]) + list(_devs) + [-1]) + 1
    traces = [[dict(e) for e in _history["traces"].get(i, ())] for i in range(n)]
    return {"segments": segments, "device_traces": traces, "allocator_settings": {}, "external_annotations": []}


if os.environ.get("FAKETORCH_NO_HISTORY") == "1":
    del _record_memory_history
