"""tbexport's start-up hook for Python programs profiled by `tbexport -- CMD`.

`tbexport -- CMD` puts this folder first on PYTHONPATH, so every Python
process of the program imports this module at start (the `site` module
does, unless Python runs with -S or -I).  It changes nothing in the
program.  What it does:

1. Runs the program's own sitecustomize, if one is on the path after this
   folder, as Python would have without us.
2. Waits for `import torch` (an import hook that looks at that one name).
   Once torch is imported, it turns on PyTorch's NVTX operator ranges, as
   `torch.autograd.profiler.emit_nvtx(record_shapes=...)` does (what Nsight
   Systems' --pytorch=autograd-nvtx does), without the device
   synchronization emit_nvtx starts with (that would initialize CUDA at
   import, before the program chose its device or forked its workers).
   The collector's own NVTX handlers read those ranges into operators.
   Ranges are on for the thread that imported torch and the autograd
   threads it starts backward passes on.
3. Keeps the program's own profilers working: PyTorch allows one profiler
   per thread, so while the program runs torch.profiler (or its own
   emit_nvtx) on that thread ours is paused, and resumed when it stops.
4. Says what became of it in one line per process, in
   $TBEXPORT_SPOOL_DIR/<pid>.ops, which `tbexport` reads: operators on
   (with or without shapes), not recorded and why, or torch never imported.

5. Memory (TBEXPORT_MEM=1): once torch is imported, queues on torch.cuda's
   lazy initialization (torch.cuda._lazy_call: at CUDA's first use, or at
   once if it happened) the caching allocator's history without stacks
   (torch.cuda.memory._record_memory_history(enabled="all", context=None,
   stacks="python", max_entries=N), N = TBEXPORT_MEM_ENTRIES or 200,000: a
   ring that keeps the last N allocator events, roughly 150 bytes each in
   torch and, at exit, a Python dict each while the snapshot is read).  At
   exit (atexit) of a process whose CUDA was initialized it takes
   torch.cuda.memory._snapshot() and leaves $TBEXPORT_SPOOL_DIR/<pid>.pymem
   (format: src/import/spool_pymem.h; written to a temporary name, then
   renamed): per device the history, the state at exit from the segments,
   torch's max_memory_allocated/reserved, and a clock pair (time.time_ns()
   beside the collector's clock, tbexport_now_ns of the injection library)
   with which tbexport maps torch's times onto the trace.  Once jax is
   imported, a daemon thread waits for JAX's backends to exist (it never
   creates them) and samples each local device's memory_stats() ten times
   a second, and once at exit, into the same file.
   The program's own calls win: its _record_memory_history replaces our
   settings (turning it off ends our curve, and its history no longer adds
   up to the state at exit: tbexport says so and keeps the running sums);
   its _snapshot sees the history on (as with any recording), nothing
   else; its reset_peak_memory_stats runs as before, and is noted so that
   tbexport does not compare torch's reset peak with the whole curve.
   SIGTERM ends the process without atexit: no .pymem then (the CUDA
   driver's memory records remain).

TBEXPORT_OPS selects: "1" operators, "shapes" operators with input shapes;
anything else (or unset) does nothing but steps 1 and 5.  Nothing here
raises into the program: every failure is one line.
"""

import os
import sys
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_MODE = os.environ.get("TBEXPORT_OPS", "")
_MEM = os.environ.get("TBEXPORT_MEM", "") == "1"
_state = {"torch": False, "said": False, "cm": None, "thread": None, "paused": 0, "busy": False}


def _note(line):
    """The process's one line for tbexport (the first one counts)."""
    if _state["said"]:
        return
    _state["said"] = True
    d = os.environ.get("TBEXPORT_SPOOL_DIR")
    if not d:
        return
    try:
        path = os.path.join(d, "%d.ops" % os.getpid())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, (line.replace("\n", " ")[:300] + "\n").encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass


def _say(line):
    _note(line)
    try:
        sys.stderr.write("tbexport: %s\n" % line)
    except Exception:
        pass


def _chain():
    """The program's own sitecustomize, found on the path after this folder."""
    try:
        import importlib.machinery
        import importlib.util

        rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
        if spec is None or spec.loader is None or not spec.origin:
            return
        if os.path.dirname(os.path.abspath(spec.origin)) == _HERE:
            return
        mod = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = mod
        spec.loader.exec_module(mod)
    except Exception as e:  # as site.py reports a failing sitecustomize
        sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n" % (type(e).__name__, e))


# ---- turning PyTorch's operator ranges on ----


def _enter(torch, prof):
    """emit_nvtx's enter without its torch.cuda.synchronize()."""
    cm = prof.emit_nvtx(record_shapes=_MODE == "shapes")
    cuda = torch.cuda
    real = cuda.synchronize
    cuda.synchronize = lambda *a, **k: None
    try:
        cm.__enter__()
    finally:
        cuda.synchronize = real
    return cm


def _guard(torch, prof):
    """Pause ours around the program's own profilers on our thread."""
    real_prepare = getattr(prof, "_prepare_profiler", None)
    real_enable = prof._enable_profiler
    real_disable = prof._disable_profiler

    def ours_here():
        return _state["cm"] is not None and _state["thread"] == threading.get_ident() and not _state["busy"]

    def pause():
        if ours_here() and not _state["paused"]:
            _state["busy"] = True
            try:
                real_disable()
            finally:
                _state["busy"] = False
            _state["paused"] = 1

    def resume():
        if _state["paused"] and _state["thread"] == threading.get_ident() and not _state["busy"]:
            _state["paused"] = 0
            _state["busy"] = True
            try:
                _state["cm"] = _enter(torch, prof)
            except Exception as e:
                _state["cm"] = None
                _say("operators are no longer recorded after the program's own profiler: %s: %s" % (type(e).__name__, e))
            finally:
                _state["busy"] = False

    def enable(*a, **k):
        if not _state["busy"]:
            pause()
        return real_enable(*a, **k)

    def prepare(*a, **k):
        if not _state["busy"]:
            pause()
        return real_prepare(*a, **k)

    def disable(*a, **k):
        r = real_disable(*a, **k)
        if not _state["busy"]:
            resume()
        return r

    prof._enable_profiler = enable
    prof._disable_profiler = disable
    if real_prepare is not None:
        prof._prepare_profiler = prepare


def _torch_imported(torch):
    _state["torch"] = True
    if _MEM:
        _mem_torch(torch)
    if _MODE not in ("1", "shapes"):
        return
    try:
        import torch.autograd.profiler as prof

        _state["busy"] = True
        try:
            _state["cm"] = _enter(torch, prof)
        finally:
            _state["busy"] = False
        _state["thread"] = threading.get_ident()
        _guard(torch, prof)
        _note("ok%s torch %s" % (" shapes" if _MODE == "shapes" else "", getattr(torch, "__version__", "?")))
    except Exception as e:
        _state["cm"] = None
        _say("PyTorch's operators are not recorded: %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))


# ---- memory: PyTorch's caching allocator, JAX's devices ----

_mem = {"on": False, "said": False, "peak_reset": False, "torch": None, "jax": [], "jax_devs": None,
        "lock": threading.Lock(), "written": False, "jlock": threading.Lock(), "jax_stop": False}


def _mem_say(line):
    """One line on stderr for memory (the .ops note is the operators')."""
    if _mem["said"]:
        return
    _mem["said"] = True
    try:
        sys.stderr.write("tbexport: %s\n" % line)
    except Exception:
        pass


def _why(e):
    return "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")


def _entries():
    try:
        n = int(os.environ.get("TBEXPORT_MEM_ENTRIES", "200000"))
        return n if n > 0 else 200000
    except ValueError:
        return 200000


def _mem_start():
    """At CUDA's initialization (torch.cuda._lazy_call): the history on.
    Never raises: torch would fail the program's CUDA initialization."""
    try:
        rec = _mem["torch"].cuda.memory._record_memory_history
        n = _entries()
        try:
            rec(enabled="all", context=None, stacks="python", max_entries=n)
        except TypeError:  # a torch before stacks= (2.0: the legacy form only)
            try:
                rec(enabled="all", context=None, max_entries=n)
            except TypeError:
                rec(True, record_context=False, trace_alloc_max_entries=n, trace_alloc_record_context=False)
        _mem["on"] = True
    except Exception as e:
        _mem_say("PyTorch's allocator memory is not recorded: %s" % _why(e))


def _mem_torch(torch):
    """Once torch is imported: the history at CUDA's initialization, the
    file at exit, the program's peak resets noted."""
    try:
        cuda = torch.cuda
        mem = cuda.memory
        for need in ("_record_memory_history", "_snapshot", "max_memory_allocated", "max_memory_reserved"):
            if not hasattr(mem, need):
                raise AttributeError("torch.cuda.memory has no %s" % need)
        if not hasattr(cuda, "_lazy_call"):
            raise AttributeError("torch.cuda has no _lazy_call")
        _mem["torch"] = torch
        real = getattr(mem, "reset_peak_memory_stats", None)
        if real is not None:
            def reset_peak_memory_stats(*a, **k):
                _mem["peak_reset"] = True
                return real(*a, **k)

            reset_peak_memory_stats.__wrapped__ = real
            reset_peak_memory_stats.__doc__ = real.__doc__
            for m in (mem, cuda):
                if getattr(m, "reset_peak_memory_stats", None) is real:
                    m.reset_peak_memory_stats = reset_peak_memory_stats
        cuda._lazy_call(_mem_start)
        import atexit

        atexit.register(_mem_exit)
    except Exception as e:
        _mem_say("PyTorch's allocator memory is not recorded: %s" % _why(e))


def _collector_now():
    """The collector's clock (ns), from the injection library the CUDA
    driver loaded; None without one."""
    lib = os.environ.get("CUDA_INJECTION64_PATH")
    if not lib:
        return None
    try:
        import ctypes

        f = ctypes.CDLL(lib, mode=getattr(os, "RTLD_NOLOAD", 0) | getattr(ctypes, "RTLD_GLOBAL", 0)).tbexport_now_ns
        f.restype = ctypes.c_uint64
        f.argtypes = []
        return f
    except (OSError, AttributeError):
        return None


def _torch_lines(torch, out):
    """The allocator's history and state, per device, into out (lines)."""
    cuda = torch.cuda
    mem = cuda.memory
    snap = mem._snapshot()
    out.append("torch %s" % str(getattr(torch, "__version__", "?")).replace(" ", "_"))
    out.append("peak-reset %d" % int(_mem["peak_reset"]))
    traces = snap.get("device_traces") or []
    segs = {}
    for seg in snap.get("segments") or []:
        segs.setdefault(int(seg.get("device", 0)), []).append(seg)
    n = _entries()
    for dev in sorted(set(range(len(traces))) | set(segs)):
        blocks = []
        reserved = 0
        entries = traces[dev] if dev < len(traces) else ()
        if not entries and not segs.get(dev):
            continue  # a GPU this process never allocated on
        for seg in segs.get(dev, ()):
            reserved += int(seg["total_size"])
            blocks += [b for b in seg.get("blocks", ()) if b.get("state") == "active_allocated"]
        out.append("device %d %d %d %d %d %d" % (dev, sum(int(b["size"]) for b in blocks), reserved,
                                                 mem.max_memory_allocated(dev), mem.max_memory_reserved(dev), n))
        out.extend("b %d %d" % (int(b["address"]), int(b["size"])) for b in blocks)
        for e in entries:
            a = e.get("action", "")
            if not isinstance(a, str) or " " in a or not a:
                a = "unknown"
            out.append("e %s %d %d %d %d" % (a, int(e.get("time_us", 0)), int(e.get("addr", 0)),
                                             int(e.get("size", 0)), int(e.get("stream", 0))))


def _mem_exit():
    """At exit: <pid>.pymem (temporary name, then renamed), once."""
    d = os.environ.get("TBEXPORT_SPOOL_DIR")
    with _mem["lock"]:
        if _mem["written"] or not d:
            return
        _mem["written"] = True
        samples = list(_mem["jax"])
    torch = _mem["torch"]
    out = ["tbexport-pymem 1", "pid %d" % os.getpid()]
    try:
        now = _collector_now()
        if now is not None:  # the tightest of 5 brackets wall, collector, wall
            best = None
            for _ in range(5):
                w0 = time.time_ns()
                c = now()
                w1 = time.time_ns()
                if best is None or w1 - w0 < best[0]:
                    best = (w1 - w0, (w0 + w1) // 2, c)
            out.append("clock %d %d" % (best[1], best[2]))
        has_torch = torch is not None and _mem["on"] and torch.cuda.is_initialized()
        if has_torch:
            _torch_lines(torch, out)
        out.extend(samples)
        if not has_torch and not samples:
            return
        out.append("end")
        path = os.path.join(d, "%d.pymem" % os.getpid())
        tmp = os.path.join(d, ".%d.pymem.tmp" % os.getpid())
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, "\n".join(out).encode("ascii", "replace") + b"\n")
        finally:
            os.close(fd)
        os.rename(tmp, path)
    except Exception as e:
        _mem_say("PyTorch's allocator memory is not recorded: %s" % _why(e))


def _jax_sample(devs):
    t = time.time_ns()
    for dv in devs:
        try:
            st = dv.memory_stats() or {}
        except Exception:
            continue
        vals = [st.get(k, -1) for k in ("bytes_in_use", "peak_bytes_in_use", "bytes_reserved", "bytes_limit")]
        line = "jax %d %d %s" % (int(dv.id), t, " ".join(str(int(v)) for v in vals))
        with _mem["lock"]:
            if len(_mem["jax"]) < 2000000:
                _mem["jax"].append(line)


def _jax_devices(jax):
    """JAX's local devices once its backends exist, else None (never
    creates them: that would pick the platform and take the GPU's memory
    before the program did)."""
    try:
        xb = sys.modules.get("jax._src.xla_bridge")
        if xb is None or not getattr(xb, "_backends", None):
            return None
        return [dv for dv in jax.local_devices() if getattr(dv, "platform", "") == "gpu"]
    except Exception:
        return None


def _jax_final():
    """The last sample, then no more: before JAX's own exit handlers tear
    its backends down (this runs before any registered earlier)."""
    with _mem["jlock"]:
        if _mem["jax_stop"]:
            return
        _mem["jax_stop"] = True
        if _mem["jax_devs"]:
            _jax_sample(_mem["jax_devs"])


def _jax_loop(jax):
    import atexit

    while True:
        with _mem["jlock"]:
            if _mem["jax_stop"]:
                return
            devs = _mem["jax_devs"] or _jax_devices(jax)
            if devs:
                if not _mem["jax_devs"]:
                    _mem["jax_devs"] = devs
                    atexit.register(_jax_final)  # after the backends' own handlers: runs first
                _jax_sample(devs)
        time.sleep(0.1)


def _jax_imported(jax):
    try:
        import atexit

        def at_exit():
            _jax_final()
            _mem_exit()

        th = threading.Thread(target=_jax_loop, args=(jax,), name="tbexport-jax-memory", daemon=True)
        th.start()
        atexit.register(at_exit)
    except Exception as e:
        _mem_say("JAX's device memory is not recorded: %s" % _why(e))


class _TorchFinder:
    """Finds nothing itself: when `torch` (or, with memory on, `jax`) is
    imported, it lets the other finders find it and hooks the loader's
    exec_module of that one spec."""

    def __init__(self, names):
        self.names = names  # name -> the function to call with the module

    def find_spec(self, name, path=None, target=None):
        if name not in self.names:
            return None
        then = self.names.pop(name)
        if not self.names:
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass
        import importlib.util

        spec = importlib.util.find_spec(name)  # (name is no longer ours: no recursion)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real = spec.loader.exec_module

        def exec_module(module):
            real(module)
            then(module)

        try:
            spec.loader.exec_module = exec_module
        except Exception:
            return spec
        return spec


def _at_exit():
    if not _state["torch"] and _MODE in ("1", "shapes"):
        _note("no-torch")


def _install():
    ops = _MODE in ("1", "shapes")
    if not ops and not _MEM:
        return
    names = {}
    if "torch" in sys.modules:
        _torch_imported(sys.modules["torch"])
    else:
        names["torch"] = _torch_imported
    if _MEM:
        if "jax" in sys.modules:
            _jax_imported(sys.modules["jax"])
        else:
            names["jax"] = _jax_imported
    if names:
        sys.meta_path.insert(0, _TorchFinder(names))
    import atexit

    atexit.register(_at_exit)


_chain()
try:
    _install()
except Exception as _e:  # never into the program
    _say("PyTorch's operators are not recorded: %s: %s" % (type(_e).__name__, _e))
