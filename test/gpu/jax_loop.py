#!/usr/bin/env python3
"""jax_loop.py: an ordinary JAX jit training loop, for the GPU checks of
collected runs (scripts/check_collected.sh).  Nothing in it knows about
tbexport.

A two-layer MLP trained with plain SGD under jax.jit, --iters iterations,
each dispatched asynchronously (as JAX programs do), blocked on at the end.
Prints one JSON line {"loop_s": ..., "iters": N}.  With --jax-profiler OUT
the loop runs under jax.profiler.trace(OUT) instead, and the line adds
"gpu_kernels": the number of kernel events on the /device:GPU planes of the
XSpace JAX wrote (read back with jax.profiler.ProfileData), the reference
the collected run's kernel count is checked against.
"""
import argparse
import glob
import json
import os
import time

import jax
import jax.numpy as jnp


def init(key, d_in, d_h, d_out):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (d_in, d_h)) * 0.02, "b1": jnp.zeros(d_h),
            "w2": jax.random.normal(k2, (d_h, d_out)) * 0.02, "b2": jnp.zeros(d_out)}


def loss_fn(p, x, y):
    h = jax.nn.relu(x @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))


@jax.jit
def train_step(p, x, y):
    loss, g = jax.value_and_grad(loss_fn)(p, x, y)
    return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g), loss


def count_kernels(d):
    from jax.profiler import ProfileData
    n = 0
    for path in glob.glob(os.path.join(d, "**", "*.xplane.pb"), recursive=True):
        pd = ProfileData.from_file(path)
        for plane in pd.planes:
            if not plane.name.startswith("/device:GPU"):
                continue
            for line in plane.lines:
                for ev in line.events:
                    if any(name == "kernel_details" for name, _ in ev.stats):
                        n += 1
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=3000)
    ap.add_argument("--jax-profiler", metavar="OUT")
    a = ap.parse_args()
    key = jax.random.PRNGKey(0)
    p = init(key, 512, 1024, 64)
    x = jax.random.normal(key, (256, 512))
    y = jax.nn.one_hot(jax.random.randint(key, (256,), 0, 64), 64)
    p, loss = train_step(p, x, y)  # compile
    loss.block_until_ready()
    if a.jax_profiler:
        jax.profiler.start_trace(a.jax_profiler)
    t0 = time.perf_counter()
    for _ in range(a.iters):
        p, loss = train_step(p, x, y)
    loss.block_until_ready()
    t1 = time.perf_counter()
    out = {"loop_s": t1 - t0, "iters": a.iters, "loss": float(loss)}
    if a.jax_profiler:
        jax.profiler.stop_trace()
        out["gpu_kernels"] = count_kernels(a.jax_profiler)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
