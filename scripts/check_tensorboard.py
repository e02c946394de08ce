#!/usr/bin/env python3
"""Checks that TensorBoard itself reads what samples/write_events wrote.

usage: scripts/check_tensorboard.py [LOG_DIR]      (default ./log_dir)

LOG_DIR is the directory write_events writes into (it holds the run "demo"
and its hparams sub-run "demo/hp").  Needs python3 with tensorboard (2.21)
and its Rust data server; builds nothing and needs no network.

1. EventAccumulator(size_guidance all 0).Reload() on each run: every tag,
   step and value that write_events wrote (text and PR curve under tensors).
2. `tensorboard --logdir LOG_DIR --load_fast=true --port 0` (the Rust data
   server), polled over HTTP: /data/runs, scalars, histograms, text, images
   + individualImage (PNG size decoded), hparams experiment.

Prints one PASS/FAIL line per check and exits 1 if any failed.
"""
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

T0 = 1700000000.0
NSTEPS = 50
RESULTS = []


def report(name, ok, detail=""):
    RESULTS.append(ok)
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""), flush=True)


def check(name, fn):
    try:
        detail = fn()
        report(name, True, detail or "")
    except AssertionError as e:
        report(name, False, str(e) or "assertion failed")
    except Exception as e:  # a crash in one check must not hide the others
        report(name, False, "%s: %s" % (type(e).__name__, e))


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(1.0, abs(b))


# ---- what write_events wrote (it is deterministic) ----

def expected_loss(s):
    return f32(1.0 / (s + 1))


def expected_lr():
    out, lr = [], 0.1
    for _ in range(NSTEPS):
        out.append(f32(lr))
        lr *= 0.95
    return out


class Rng:
    """xorshift64*, as in samples/write_events.c."""

    def __init__(self):
        self.s = 0x9E3779B97F4A7C15

    def uniform(self):
        m = (1 << 64) - 1
        s = self.s
        s ^= s >> 12
        s ^= (s << 25) & m
        s ^= s >> 27
        self.s = s
        return (((s * 2685821657736338717) & m) >> 11) / 9007199254740992.0


def expected_weights():
    rng = Rng()
    out = {}
    for s in range(0, NSTEPS, 10):
        out[s] = [(rng.uniform() - 0.5) * 2.0 + s / 10.0 for _ in range(1000)]
    return out


def expected_pr():
    """TP, FP, TN, FN, precision, recall over 127 thresholds."""
    k = 127
    labels = [1 if i % 3 != 0 else 0 for i in range(100)]
    preds = [f32(f32(float(i)) / f32(99.0)) for i in range(100)]
    tpb, fpb = [0.0] * k, [0.0] * k
    for lab, p in zip(labels, preds):
        b = min(int(math.floor(f32(p * f32(k - 1)))), k - 1)
        if lab:
            tpb[b] += 1
        else:
            fpb[b] += 1
    tp, fp = [0.0] * k, [0.0] * k
    acc_t = acc_f = 0.0
    for j in range(k - 1, -1, -1):
        acc_t += tpb[j]
        acc_f += fpb[j]
        tp[j], fp[j] = acc_t, acc_f
    tn = [fp[0] - x for x in fp]
    fn = [tp[0] - x for x in tp]
    prec = [t / max(1e-7, t + f) for t, f in zip(tp, fp)]
    rec = [t / max(1e-7, t + n) for t, n in zip(tp, fn)]
    return [tp, fp, tn, fn, prec, rec]


IMAGES = {"images/gradient": (32, 16), "images/checker": (8, 8), "images/rgba": (16, 16)}
HPARAMS = {"lr": 0.1, "batch_size": 32.0, "optimizer": "sgd", "amp": True}
METRICS = {"hparam/accuracy": 0.9, "hparam/loss": 0.25}


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR", "no IHDR"
    w, h = struct.unpack(">II", data[16:24])
    return w, h


# ---- 1. EventAccumulator ----

def accumulator_checks(logdir):
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.util import tensor_util

    guidance = {ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0, ea.TENSORS: 0,
                ea.COMPRESSED_HISTOGRAMS: 0, ea.AUDIO: 0}
    acc = ea.EventAccumulator(os.path.join(logdir, "demo"), size_guidance=guidance).Reload()
    hp = ea.EventAccumulator(os.path.join(logdir, "demo", "hp"), size_guidance=guidance).Reload()
    tags = acc.Tags()

    def t_tags():
        want = {
            "scalars": {"loss/train", "lr"},
            "histograms": {"weights", "raw_hist"},
            "images": set(IMAGES),
            "tensors": {"notes/text_summary", "pr", "custom_scalars__config__"},
        }
        for kind, names in want.items():
            got = set(tags.get(kind, []))
            assert got == names, "%s: got %s, want %s" % (kind, sorted(got), sorted(names))
        return "; ".join("%s %s" % (k, sorted(v)) for k, v in want.items())

    def t_source():
        if hasattr(acc, "GetSourceWriter"):
            w = acc.GetSourceWriter()
            assert w and "tbexport" in w, "source writer %r" % (w,)
            return w
        return "GetSourceWriter not available"

    def t_scalars():
        ev = acc.Scalars("loss/train")
        assert [e.step for e in ev] == list(range(NSTEPS)), "loss/train steps"
        for e in ev:
            assert e.wall_time == T0 + e.step, "wall_time %r at step %d" % (e.wall_time, e.step)
            assert close(e.value, expected_loss(e.step)), "loss/train %r at %d" % (e.value, e.step)
        lr = acc.Scalars("lr")
        exp = expected_lr()
        assert [e.step for e in lr] == list(range(NSTEPS)), "lr steps"
        for e in lr:
            assert close(e.value, exp[e.step]), "lr %r at %d, want %r" % (e.value, e.step, exp[e.step])
        return "loss/train and lr: %d steps each, values and wall times match" % NSTEPS

    def t_histograms():
        exp = expected_weights()
        ev = acc.Histograms("weights")
        assert [e.step for e in ev] == sorted(exp), "steps %s" % [e.step for e in ev]
        for e in ev:
            h = e.histogram_value
            v = exp[e.step]
            assert h.num == 1000 and sum(h.bucket) == 1000, "counts at step %d" % e.step
            assert close(h.min, min(v), 1e-12) and close(h.max, max(v), 1e-12), "min/max at %d" % e.step
            assert close(h.sum, sum(v), 1e-9), "sum at %d" % e.step
        raw = acc.Histograms("raw_hist")
        assert len(raw) == 1, "raw_hist count"
        h = raw[0].histogram_value
        assert list(h.bucket_limit) == [0, 1, 2, 3] and list(h.bucket) == [0, 1, 2, 3], "raw_hist buckets"
        assert (h.min, h.max, h.num, h.sum, h.sum_squares) == (0.5, 2.5, 6, 10, 20), "raw_hist stats"
        return "weights: 5 steps x 1000 values; raw_hist exact"

    def t_images():
        out = []
        for tag, (w, h) in IMAGES.items():
            ev = acc.Images(tag)
            assert len(ev) == 1 and ev[0].step == 0, "%s: %d events" % (tag, len(ev))
            e = ev[0]
            assert (e.width, e.height) == (w, h), "%s: %dx%d" % (tag, e.width, e.height)
            assert png_size(e.encoded_image_string) == (w, h), "%s: PNG header size" % tag
            out.append("%s %dx%d" % (tag, w, h))
        return ", ".join(out)

    def t_text():
        ev = acc.Tensors("notes/text_summary")
        assert [e.step for e in ev] == [0, 1], "steps"
        texts = [tensor_util.make_ndarray(e.tensor_proto).reshape(-1)[0] for e in ev]
        texts = [t.decode() if isinstance(t, bytes) else str(t) for t in texts]
        assert texts == ["hello **tbexport**", "second *note*"], "text %r" % texts
        md = acc.SummaryMetadata("notes/text_summary")
        assert md.plugin_data.plugin_name == "text", "plugin %r" % md.plugin_data.plugin_name
        return "2 markdown texts"

    def t_pr():
        ev = acc.Tensors("pr")
        assert len(ev) == 1, "count"
        arr = tensor_util.make_ndarray(ev[0].tensor_proto)
        assert arr.shape == (6, 127), "shape %s" % (arr.shape,)
        exp = expected_pr()
        for r in range(6):
            for j in range(127):
                assert close(float(arr[r][j]), exp[r][j], 1e-6), "row %d col %d: %r vs %r" % (
                    r, j, float(arr[r][j]), exp[r][j])
        md = acc.SummaryMetadata("pr")
        assert md.plugin_data.plugin_name == "pr_curves", "plugin"
        from tensorboard.plugins.pr_curve import plugin_data_pb2
        pd = plugin_data_pb2.PrCurvePluginData.FromString(md.plugin_data.content)
        assert pd.num_thresholds == 127, "num_thresholds %d" % pd.num_thresholds
        return "[6,127] TP/FP/TN/FN/precision/recall match"

    def t_layout():
        ev = acc.Tensors("custom_scalars__config__")
        assert len(ev) == 1, "count"
        from tensorboard.plugins.custom_scalar import layout_pb2
        raw = tensor_util.make_ndarray(ev[0].tensor_proto).reshape(-1)[0]
        lay = layout_pb2.Layout.FromString(raw)
        assert [c.title for c in lay.category] == ["Train"], "categories"
        ch = lay.category[0].chart
        assert [c.title for c in ch] == ["loss", "lr band"], "charts"
        assert list(ch[0].multiline.tag) == ["loss/train"], "multiline tags"
        s = ch[1].margin.series[0]
        assert (s.value, s.lower, s.upper) == ("lr", "lr", "lr"), "margin series"
        return "Train: loss (multiline), lr band (margin)"

    def t_hparams():
        from tensorboard.plugins.hparams import plugin_data_pb2
        content = hp.PluginTagToContent("hparams")
        assert set(content) == {"_hparams_/experiment", "_hparams_/session_start_info",
                                "_hparams_/session_end_info"}, "tags %s" % sorted(content)
        exp = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
        assert [h.name for h in exp.hparam_infos] == list(HPARAMS), "hparam infos"
        assert [m.name.tag for m in exp.metric_infos] == list(METRICS), "metric infos"
        ssi = plugin_data_pb2.HParamsPluginData.FromString(
            content["_hparams_/session_start_info"]).session_start_info
        got = {}
        for k, v in ssi.hparams.items():
            kind = v.WhichOneof("kind")
            got[k] = getattr(v, kind)
        assert got == HPARAMS, "session start %r" % got
        sei = plugin_data_pb2.HParamsPluginData.FromString(
            content["_hparams_/session_end_info"]).session_end_info
        assert sei.status == 1, "session end status %d" % sei.status
        for tag, val in METRICS.items():
            ev = hp.Scalars(tag)
            assert len(ev) == 1 and close(ev[0].value, f32(val)), "%s %r" % (tag, ev)
        return "experiment, session start/end, metrics %s" % sorted(METRICS)

    for name, fn in [("accumulator: tags", t_tags), ("accumulator: source writer", t_source),
                     ("accumulator: scalars", t_scalars), ("accumulator: histograms", t_histograms),
                     ("accumulator: images", t_images), ("accumulator: text (tensors)", t_text),
                     ("accumulator: pr curve (tensors)", t_pr),
                     ("accumulator: custom scalars layout (tensors)", t_layout),
                     ("accumulator: hparams sub-run", t_hparams)]:
        check(name, fn)


# ---- 2. the Rust data server over HTTP ----

class Server:
    def __init__(self, logdir):
        exe = shutil.which("tensorboard")
        cmd = [exe] if exe else [sys.executable, "-m", "tensorboard.main"]
        cmd += ["--logdir", logdir, "--load_fast=true",
               "--port", "0", "--host", "127.0.0.1", "--reload_interval", "1",
               # Explicit sample counts, never 0: the plugins pass this hint
               # to the data server as their downsample size, and the server
               # returns an empty series for 0 (data/server/downsample.rs:
               # "If k == 0, then xs is cleared").
               "--samples_per_plugin", "scalars=10000,images=100,histograms=100,tensors=100,text=100"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        self.port = None
        self.log = []
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.log.append(line.rstrip())
            m = re.search(r"TensorBoard .* at http://[^\s/]+:(\d+)/", line)
            if m and self.port is None:
                self.port = int(m.group(1))
                self.ready.set()
        self.ready.set()

    def url(self, path, **params):
        q = ("?" + urllib.parse.urlencode(params)) if params else ""
        return "http://127.0.0.1:%d%s%s" % (self.port, path, q)

    def get(self, path, raw=False, **params):
        with urllib.request.urlopen(self.url(path, **params), timeout=30) as r:
            data = r.read()
        return data if raw else json.loads(data)

    def post_json(self, path, body):
        req = urllib.request.Request(self.url(path), data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              "X-XSRF-Protected": "1"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def wait_for(fn, timeout=90, what="data"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            v = fn()
            if v:
                return v
        except (urllib.error.URLError, ConnectionError, ValueError) as e:
            last = e
        time.sleep(0.5)
    raise AssertionError("timed out waiting for %s%s" % (what, " (%s)" % last if last else ""))


def server_checks(logdir):
    srv = Server(logdir)
    try:
        srv.ready.wait(120)
        if srv.port is None:
            report("server: start", False, "no 'TensorBoard ... at http://...:PORT/' line; log:\n  "
                   + "\n  ".join(srv.log[-20:]))
            return
        report("server: start", True, "port %d (--load_fast=true)" % srv.port)

        def t_runs():
            runs = wait_for(lambda: (lambda r: r if {"demo", "demo/hp"} <= set(r) else None)(
                srv.get("/data/runs")), what="runs demo and demo/hp")
            return "runs %s" % runs

        def t_scalars():
            def full():
                d = srv.get("/data/plugin/scalars/scalars", run="demo", tag="loss/train")
                return d if len(d) == NSTEPS else None
            d = wait_for(full, what="50 loss/train points")
            for wall, step, value in d:
                assert wall == T0 + step and close(value, expected_loss(step)), (wall, step, value)
            lr = srv.get("/data/plugin/scalars/scalars", run="demo", tag="lr")
            exp = expected_lr()
            assert [p[1] for p in lr] == list(range(NSTEPS)), "lr steps"
            for wall, step, value in lr:
                assert close(value, exp[step]), ("lr", step, value)
            acc = srv.get("/data/plugin/scalars/scalars", run="demo/hp", tag="hparam/accuracy")
            assert len(acc) == 1 and close(acc[0][2], f32(0.9)), "hparam/accuracy %r" % acc
            return "loss/train, lr: 50 points each; demo/hp hparam/accuracy"

        def t_histograms():
            d = srv.get("/data/plugin/histograms/histograms", run="demo", tag="weights")
            exp = expected_weights()
            assert [e[1] for e in d] == sorted(exp), "steps %s" % [e[1] for e in d]
            for wall, step, buckets in d:
                total = sum(b[2] for b in buckets)
                assert abs(total - 1000) < 1e-6, "step %d: %r values" % (step, total)
                assert wall == T0 + step, "wall %r" % wall
                lo, hi = min(exp[step]), max(exp[step])
                assert buckets[0][0] <= lo + 1e-9 and buckets[-1][1] >= hi - 1e-9, "range at %d" % step
            return "weights: 5 steps, 1000 values each"

        def t_text():
            d = srv.get("/data/plugin/text/text", run="demo", tag="notes/text_summary")
            assert [e["step"] for e in d] == [0, 1], "steps"
            assert "<strong>tbexport</strong>" in d[0]["text"], "html %r" % d[0]["text"]
            assert "<em>note</em>" in d[1]["text"], "html %r" % d[1]["text"]
            return "2 entries rendered as markdown"

        def t_images():
            out = []
            for tag, (w, h) in IMAGES.items():
                d = srv.get("/data/plugin/images/images", run="demo", tag=tag, sample=0)
                assert len(d) == 1 and d[0]["step"] == 0, "%s: %r" % (tag, d)
                assert "query" in d[0], "%s: no 'query' in %r" % (tag, d[0])
                url = "http://127.0.0.1:%d/data/plugin/images/individualImage?%s" % (
                    srv.port, d[0]["query"])
                with urllib.request.urlopen(url, timeout=30) as r:
                    png = r.read()
                assert png_size(png) == (w, h), "%s: PNG %s" % (tag, png_size(png))
                out.append("%s %dx%d" % (tag, w, h))
            return ", ".join(out)

        def t_hparams():
            body = {"experimentName": ""}
            try:
                exp = srv.get("/data/plugin/hparams/experiment", request=json.dumps(body))
                how = "GET"
            except urllib.error.HTTPError:
                exp = srv.post_json("/data/plugin/hparams/experiment", body)
                how = "POST"
            infos = exp.get("hparamInfos", exp.get("hparam_infos", []))
            names = [h["name"] for h in infos]
            assert set(names) == set(HPARAMS), "hparams %s in %s" % (names, json.dumps(exp)[:300])
            minfos = exp.get("metricInfos", exp.get("metric_infos", []))
            metrics = [m["name"]["tag"] if isinstance(m.get("name"), dict) else m.get("name")
                       for m in minfos]
            assert set(METRICS) <= set(metrics), "metrics %s" % metrics
            return "%s experiment: hparams %s, metrics %s" % (how, sorted(names), sorted(metrics))

        for name, fn in [("server: /data/runs", t_runs), ("server: scalars", t_scalars),
                         ("server: histograms", t_histograms), ("server: text", t_text),
                         ("server: images + individualImage", t_images),
                         ("server: hparams experiment", t_hparams)]:
            check(name, fn)
    finally:
        srv.stop()


def main():
    logdir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "log_dir")
    if not os.path.isdir(os.path.join(logdir, "demo")):
        print("FAIL setup: %s/demo not found (run samples/write_events from the repository root)" % logdir)
        return 1
    try:
        import tensorboard
        print("tensorboard %s, log dir %s" % (tensorboard.__version__, logdir), flush=True)
    except ImportError:
        print("FAIL setup: python3 cannot import tensorboard")
        return 1
    accumulator_checks(logdir)
    server_checks(logdir)
    failed = RESULTS.count(False)
    print("%s: %d checks, %d failed" % ("PASS" if failed == 0 else "FAIL", len(RESULTS), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
