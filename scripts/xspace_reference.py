#!/usr/bin/env python3
"""xspace_reference.py: reference figures for the XSpace importer, from JAX's
own XSpace reader (jax.profiler.ProfileData), to compare with what
`tbexport` imports from the same file.

Run on the GPU machine (needs jax with CUDA):

    python3 scripts/xspace_reference.py OUT_DIR [EXISTING.xplane.pb ...]

It captures a fresh profile of a small jitted model (5 steps, each inside
jax.profiler.StepTraceAnnotation("train", step_num=i)), copies the
resulting <host>.xplane.pb to OUT_DIR/capture.xplane.pb, and for that file
and every EXISTING file writes OUT_DIR/<name>.ref.json with, computed only
through ProfileData:
  planes:        per plane: name, lines, events
  kernels, memcpys, memsets:  GPU-plane events carrying kernel_details /
                 memcpy_details / Memset_details
  api:           /host:CPU events carrying correlation_id
  steps:         /host:CPU events carrying step_num
  kernel_ns:     total duration (ns) per kernel name
  total_events:  events on all planes
The importer's tests compare the same figures, so a mismatch between this
JSON and `tbexport` points at the schema or the importer, not the test.
"""
import glob
import json
import os
import shutil
import sys
import tempfile


def summarize(path):
    from jax.profiler import ProfileData

    pd = ProfileData.from_file(path)
    out = {"file": os.path.basename(path), "planes": [], "kernels": 0, "memcpys": 0,
           "memsets": 0, "api": 0, "steps": 0, "kernel_ns": {}, "total_events": 0}
    for plane in pd.planes:
        nlines = nevents = 0
        gpu = plane.name.startswith("/device:GPU:")
        host = plane.name == "/host:CPU"
        for line in plane.lines:
            nlines += 1
            for ev in line.events:
                nevents += 1
                stats = {name: value for name, value in ev.stats}
                if gpu:
                    if "kernel_details" in stats:
                        out["kernels"] += 1
                        k = out["kernel_ns"]
                        k[ev.name] = k.get(ev.name, 0) + round(ev.duration_ns)
                    if "memcpy_details" in stats:
                        out["memcpys"] += 1
                    if "Memset_details" in stats:
                        out["memsets"] += 1
                if host:
                    if "correlation_id" in stats:
                        out["api"] += 1
                    if "step_num" in stats:
                        out["steps"] += 1
        out["planes"].append({"name": plane.name, "lines": nlines, "events": nevents})
        out["total_events"] += nevents
    return out


def capture(out_dir):
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(w, x):
        y = jnp.tanh(x @ w)
        return w - 0.01 * (x.T @ y), y.sum()

    key = jax.random.PRNGKey(0)
    w = jax.random.normal(key, (1024, 1024))
    x = jax.random.normal(key, (512, 1024))
    w, s = step(w, x)
    s.block_until_ready()
    logdir = tempfile.mkdtemp()
    jax.profiler.start_trace(logdir)
    for i in range(5):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            w, s = step(w, x)
            s.block_until_ready()
    jax.profiler.stop_trace()
    files = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    if len(files) != 1:
        sys.exit(f"expected one .xplane.pb under {logdir}, found {files}")
    dst = os.path.join(out_dir, "capture.xplane.pb")
    shutil.copyfile(files[0], dst)
    return dst


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    paths = [capture(out_dir)] + sys.argv[2:]
    for p in paths:
        ref = summarize(p)
        name = os.path.basename(p).replace(".xplane.pb", "")
        with open(os.path.join(out_dir, name + ".ref.json"), "w") as f:
            json.dump(ref, f, indent=1, sort_keys=True)
        print(name, {k: ref[k] for k in ("total_events", "kernels", "memcpys", "memsets", "api", "steps")})


if __name__ == "__main__":
    main()
