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

TBEXPORT_OPS selects: "1" operators, "shapes" operators with input shapes;
anything else (or unset) does nothing but step 1.  Nothing here raises into
the program: every failure is one line.
"""

import os
import sys
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
_MODE = os.environ.get("TBEXPORT_OPS", "")
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


class _TorchFinder:
    """Finds nothing itself: when `torch` is imported, it lets the other
    finders find it and hooks the loader's exec_module of that one spec."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or _state["torch"]:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real = spec.loader.exec_module

        def exec_module(module):
            real(module)
            _torch_imported(module)

        try:
            spec.loader.exec_module = exec_module
        except Exception:
            return spec
        return spec


def _at_exit():
    if not _state["torch"]:
        _note("no-torch")


def _install():
    if _MODE not in ("1", "shapes"):
        return
    if "torch" in sys.modules:
        _torch_imported(sys.modules["torch"])
        return
    sys.meta_path.insert(0, _TorchFinder())
    import atexit

    atexit.register(_at_exit)


_chain()
try:
    _install()
except Exception as _e:  # never into the program
    _say("PyTorch's operators are not recorded: %s: %s" % (type(_e).__name__, _e))
