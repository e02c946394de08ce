#!/usr/bin/env python3
"""tb_demo_traces.py OUTDIR DATA_DIR: traces for TensorBoard's views that
test/data has no real file of, made from what it has or from scratch (the
test and the screenshots import them; runs collected on a GPU replace them
when given, test/cli/test_tensorboard.sh):

  OUTDIR/pm_nosteps.json   a GPU's PM counters (SM active, tensor pipes
                           active) every ms for 2 s while a kernel runs
                           every 5 ms, no steps (Chrome JSON: counter
                           events in the GPU's process, as our exporter
                           writes them);
  OUTDIR/rank0.json, rank1.json  the H200 CNN traces of DATA_DIR/kineto
                           (fp32, bf16) as ranks 0 and 1 of a job of two:
                           distributedInfo added, as Kineto writes it for
                           a distributed run.
"""
import json
import math
import os
import sys


def pm_nosteps(path):
    ev = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
          {"name": "process_name", "ph": "M", "pid": 100, "tid": 0, "args": {"name": "python"}}]
    t0 = 1000000.0  # us
    for i in range(400):
        ts = t0 + i * 5000.0
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100,
                   "tid": 100, "ts": ts - 10, "dur": 5, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": ts,
                   "dur": 3000.0, "args": {"device": 0, "stream": 7, "correlation": i + 1}})
    for j in range(2000):
        busy = 80.0 + 15.0 * math.sin(j / 200.0)
        for name, v in (("sm_active_pct", busy), ("tensor_active_pct", busy / 2)):
            ev.append({"ph": "C", "cat": "counter", "name": name, "pid": 0, "tid": 0,
                       "ts": t0 + j * 1000.0, "args": {"value": v}})
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "traceEvents": ev}, f)


def ranks(out, data):
    for r, src in enumerate(("h200_cnn_fp32.pt.trace.json", "h200_cnn_bf16.pt.trace.json")):
        with open(os.path.join(data, "kineto", src)) as f:
            d = json.load(f)
        d["distributedInfo"] = {"backend": "nccl", "rank": r, "world_size": 2}
        with open(os.path.join(out, "rank%d.json" % r), "w") as f:
            json.dump(d, f)


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    out, data = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    pm_nosteps(os.path.join(out, "pm_nosteps.json"))
    ranks(out, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
