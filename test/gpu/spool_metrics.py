"""Reads the hardware-metric items of collector spools (src/events/spool.h).

Prints the metric definitions, the statuses and notes, per device and metric
the PM samples (count, time span, mean), the mean of each sampled metric over
every NVTX range (the marked loops of metrics_loops.py), and the range
profiler's per-kernel figures.  With --json FILE, writes the same as JSON for
a comparing script (check_metrics.py).  Exits 1 when a spool cannot be read.

usage: python3 spool_metrics.py SPOOL... [--json FILE]
"""
import json
import struct
import sys

SP_STR, SP_NOTE, SP_MARKER = 4, 5, 15
SP_METRIC_DEF, SP_METRIC_SAMPLES, SP_KERNEL_METRICS, SP_METRIC_STATUS = 25, 26, 27, 28
MK_INSTANT, MK_START, MK_END = 1, 2, 4
KIND = {1: "pm_sampling", 2: "range_profiler"}
STATUS = {0: "ok", 1: "no_permission", 2: "busy", 3: "unsupported", 4: "failed"}


def items(data):
    if data[:8] != b"TBESPL01":
        raise ValueError("not a spool")
    pos = 32
    while pos + 8 <= len(data):
        n, _crc = struct.unpack_from("<II", data, pos)
        if pos + 8 + n > len(data):
            break  # the torn frame a crash leaves
        payload = data[pos + 8:pos + 8 + n]
        pos += 8 + n
        q = 0
        while q + 4 <= len(payload):
            t, ln = struct.unpack_from("<HH", payload, q)
            yield t, payload[q + 4:q + 4 + ln]
            q += 4 + ln


def read(path):
    strs, defs, samples, kernels, statuses, notes = {}, {}, {}, [], [], []
    opened, ranges = {}, []
    with open(path, "rb") as f:
        data = f.read()
    for t, b in items(data):
        if t == SP_STR:
            strs[struct.unpack_from("<I", b)[0]] = b[4:].decode("utf-8", "replace")
        elif t == SP_NOTE:
            notes.append(b.decode("utf-8", "replace"))
        elif t == SP_MARKER:
            ts, mid, flags = struct.unpack_from("<qII", b)
            name = struct.unpack_from("<I", b, 32)[0]
            if flags & MK_START:
                opened[mid] = (ts, strs.get(name, ""))
            elif flags & MK_END and mid in opened:
                s, nm = opened.pop(mid)
                ranges.append({"name": nm, "start": s, "end": ts})
        elif t == SP_METRIC_DEF:
            i, name, src, unit = struct.unpack_from("<IIII", b)
            defs[i] = {"name": strs.get(name, "?"), "source": strs.get(src, ""), "unit": unit}
        elif t == SP_METRIC_SAMPLES:
            dev, nm, ns, _ = struct.unpack_from("<IIII", b)
            ids = struct.unpack_from("<%dI" % nm, b, 16)
            q = 16 + 4 * nm
            for _ in range(ns):
                ts = struct.unpack_from("<q", b, q)[0]
                vals = struct.unpack_from("<%dd" % nm, b, q + 8)
                q += 8 + 8 * nm
                for i, v in zip(ids, vals):
                    samples.setdefault((dev, defs[i]["name"]), []).append((ts, v))
        elif t == SP_KERNEL_METRICS:
            name, dev, launches, nv = struct.unpack_from("<IIII", b)
            vals = {}
            for k in range(nv):
                i, _z, v = struct.unpack_from("<IId", b, 16 + 16 * k)
                vals[defs[i]["name"]] = v
            kernels.append({"name": strs.get(name, "?"), "device": dev, "launches": launches,
                            "values": vals})
        elif t == SP_METRIC_STATUS:
            kind, dev, st, stale, smp, ovf = struct.unpack_from("<IIIIQQ", b)
            statuses.append({"kind": KIND.get(kind, kind), "device": dev,
                             "status": STATUS.get(st, st), "samples": smp, "overflow": ovf,
                             "stale": stale,
                             "reason": b[32:].decode("utf-8", "replace")})
    return {"defs": defs, "samples": samples, "kernels": kernels, "statuses": statuses,
            "notes": notes, "ranges": ranges}


def main():
    args = sys.argv[1:]
    out = None
    if "--json" in args:
        k = args.index("--json")
        out = args[k + 1]
        del args[k:k + 2]
    result = {"pm": {}, "loops": {}, "kernels": [], "statuses": [], "notes": [], "defs": []}
    for path in args:
        try:
            r = read(path)
        except (OSError, ValueError, struct.error, KeyError) as e:
            print(f"{path}: cannot read: {e}")
            return 1
        print(f"== {path}")
        for i, d in sorted(r["defs"].items()):
            print(f"  metric {i}: {d['name']} <- {d['source']} (unit {d['unit']})")
            result["defs"].append(d)
        for s in r["statuses"]:
            print(f"  status {s['kind']} device {s['device']}: {s['status']} samples {s['samples']}"
                  f" overflow {s['overflow']} stale {s['stale']} {s['reason']}")
        result["statuses"] += r["statuses"]
        for n in r["notes"]:
            print(f"  note: {n}")
        result["notes"] += r["notes"]
        for (dev, name), xs in sorted(r["samples"].items()):
            ts = [t for t, _ in xs]
            vals = [v for _, v in xs if v == v]  # NaN: no value in that interval
            mean = sum(vals) / len(vals) if vals else float("nan")
            span = (max(ts) - min(ts)) / 1e9
            rate = (len(xs) - 1) / span if span > 0 else 0
            # the cadence: the median step between consecutive samples (the
            # span also holds the gaps of overflows and idle time)
            steps = sorted(b - a for a, b in zip(ts, ts[1:]))
            med = steps[len(steps) // 2] if steps else 0
            back = sum(1 for x in steps if x <= 0)
            print(f"  pm device {dev} {name}: {len(xs)} samples over {span:.2f} s ({rate:.0f}/s),"
                  f" median step {med / 1e3:.1f} us ({1e9 / med if med > 0 else 0:.0f}/s),"
                  f" steps not forward {back}, mean {mean:.4g}")
            # where samples are missing: steps over 1.5x the median, their
            # total, the largest, and the median time between them (a gap
            # per drain of the hardware buffer would repeat every tick)
            if name == "sm_active_pct" and med > 0:
                gaps = [(a, b - a) for a, b in zip(ts, ts[1:]) if b - a > 1.5 * med]
                every = sorted(y[0] - x[0] for x, y in zip(gaps, gaps[1:]))
                big = sorted((g for _, g in gaps), reverse=True)[:5]
                print(f"  pm device {dev} gaps: {len(gaps)} steps over 1.5x the median,"
                      f" {sum(g for _, g in gaps) / 1e9:.3f} s in all, largest"
                      f" {', '.join(f'{g / 1e6:.2f}' for g in big)} ms, median spacing"
                      f" {every[len(every) // 2] / 1e6 if every else 0:.1f} ms")
                # where the longest lie: from the first sample, and the
                # NVTX range (a loop of metrics_loops.py) each falls in
                for g0, g in sorted(gaps, key=lambda x: -x[1])[:4]:
                    inr = [rg["name"] for rg in r["ranges"] if rg["start"] <= g0 + g // 2 <= rg["end"]]
                    print(f"    gap of {g / 1e6:.1f} ms at {(g0 - ts[0]) / 1e9:.3f} s, in range"
                          f" {inr[0] if inr else '(none)'}")
                if gaps:
                    print("    ranges: " + ", ".join(
                        f"{rg['name']} {(rg['start'] - ts[0]) / 1e9:.3f}-{(rg['end'] - ts[0]) / 1e9:.3f} s"
                        for rg in r["ranges"]))
            result["pm"][f"{dev}/{name}"] = {"n": len(xs), "mean": mean, "rate": rate,
                                             "median_step_ns": med, "not_forward": back}
        for rg in r["ranges"]:
            line = []
            for (dev, name), xs in sorted(r["samples"].items()):
                inside = [v for t, v in xs if rg["start"] <= t <= rg["end"] and v == v]
                if inside:
                    m = sum(inside) / len(inside)
                    result["loops"].setdefault(rg["name"], {})[name] = m
                    line.append(f"{name}={m:.4g}")
            print(f"  loop {rg['name']} ({(rg['end'] - rg['start']) / 1e9:.2f} s): " + " ".join(line))
        for k in r["kernels"]:
            vals = " ".join(f"{n}={v:.4g}" for n, v in k["values"].items())
            print(f"  kernel [{k['device']}] x{k['launches']} {k['name'][:90]}: {vals}")
        result["kernels"] += r["kernels"]
    if out:
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
