/* test_import_xspace.c: the XSpace (.xplane.pb) importer.
 *
 * The JAX golden file is decoded here, independently of the importer, with
 * our generated messages; counts per kind, kernel time per name, copy bytes,
 * device properties and times must match the model.  Synthetic XSpaces,
 * written with a small wire encoder, cover capture planes merged into the
 * host, NVTX, TPU/unknown planes, ref_value stats, steps (step_num and
 * group_id), relative and epoch line times, warnings, XLA's CUDA
 * allocations (memalloc_details / MemFree_details).  Truncated, bit-flipped
 * and structurally broken files give one-line TBE_ECORRUPT errors with a
 * byte offset and never crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profiler/xplane.pb-c.h"
#include "tbexport.h"
#include "testutil.h"

typedef Tensorflow__Profiler__XSpace XSpace;
typedef Tensorflow__Profiler__XPlane XPlane;

/* ---- independent decoding ---- */

static const char *stat_name(const XPlane *p, int64_t id) {
  for (size_t i = 0; i < p->n_stat_metadata; i++)
    if (p->stat_metadata[i]->key == id) return p->stat_metadata[i]->value->name;
  return "";
}

static const char *event_name(const XPlane *p, int64_t id) {
  for (size_t i = 0; i < p->n_event_metadata; i++)
    if (p->event_metadata[i]->key == id) return p->event_metadata[i]->value->name;
  return "";
}

/* The string of a str/ref stat. */
static const char *stat_text(const XPlane *p, const Tensorflow__Profiler__XStat *s) {
  if (s->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE) return s->str_value;
  if (s->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE) return stat_name(p, (int64_t)s->ref_value);
  return NULL;
}

static const Tensorflow__Profiler__XStat *find_stat(const XPlane *p, const Tensorflow__Profiler__XEvent *e,
                                                    const char *name) {
  for (size_t k = 0; k < e->n_stats; k++)
    if (strcmp(stat_name(p, e->stats[k]->metadata_id), name) == 0) return e->stats[k];
  return NULL;
}

static tbe_trace *import_file(const char *path, int *rc, tbe_import_error *err) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  *rc = tbe_import_file(t, path, NULL, err);
  return t;
}

static size_t count_kind(const tbe_trace *t, tbe_event_kind k) {
  size_t n = 0;
  for (size_t i = 0; i < t->nevents; i++) n += t->events[i].kind == k;
  return n;
}

static void test_golden(void **state) {
  (void)state;
  const char *path = tu_data("jax/h200_matmul.xplane.pb");
  size_t n;
  uint8_t *data = tu_read_file(path, &n);
  assert_non_null(data);
  XSpace *xs = tensorflow__profiler__xspace__unpack(NULL, n, data);
  assert_non_null(xs);

  tbe_import_error err;
  int rc;
  tbe_trace *t = import_file(path, &rc, &err);
  if (rc) fprintf(stderr, "%s\n", err.message);
  assert_int_equal(rc, 0);
  assert_int_equal(t->source, TBE_SRC_XSPACE);

  /* Session start from the Task Environment plane. */
  int64_t start = 0, stop = 0;
  for (size_t i = 0; i < xs->n_planes; i++) {
    const XPlane *p = xs->planes[i];
    if (strcmp(p->name, "Task Environment") != 0) continue;
    for (size_t k = 0; k < p->n_stats; k++) {
      const char *sn = stat_name(p, p->stats[k]->metadata_id);
      if (strcmp(sn, "profile_start_time") == 0) start = (int64_t)p->stats[k]->uint64_value;
      if (strcmp(sn, "profile_stop_time") == 0) stop = (int64_t)p->stats[k]->uint64_value;
    }
  }
  assert_true(start > 0);
  assert_int_equal(t->start_ns, start);
  assert_int_equal(t->stop_ns, stop);

  size_t total = 0, kernels = 0, copies = 0, memsets = 0, api = 0, host = 0;
  uint64_t copy_bytes = 0, htod = 0;
  for (size_t i = 0; i < xs->n_planes; i++) {
    const XPlane *p = xs->planes[i];
    int gpu = strncmp(p->name, "/device:GPU:", 12) == 0;
    int is_host = strcmp(p->name, "/host:CPU") == 0;
    for (size_t l = 0; l < p->n_lines; l++) {
      const Tensorflow__Profiler__XLine *ln = p->lines[l];
      for (size_t e = 0; e < ln->n_events; e++) {
        const Tensorflow__Profiler__XEvent *ev = ln->events[e];
        total++;
        assert_int_equal(ev->duration_ps % 1000, 0); /* whole ns in this file */
        if (gpu) {
          if (find_stat(p, ev, "kernel_details")) kernels++;
          const Tensorflow__Profiler__XStat *c = find_stat(p, ev, "memcpy_details");
          if (c) {
            copies++;
            const char *sz = strstr(stat_text(p, c), "size:");
            assert_non_null(sz);
            copy_bytes += strtoull(sz + 5, NULL, 10);
            htod += strcmp(event_name(p, ev->metadata_id), "MemcpyH2D") == 0;
          }
          if (find_stat(p, ev, "Memset_details")) memsets++;
        }
        if (is_host) {
          host++;
          if (find_stat(p, ev, "correlation_id")) api++;
        }
      }
    }
  }
  assert_int_equal(t->nevents, total);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), kernels);
  assert_int_equal(count_kind(t, TBE_EV_MEMCPY), copies);
  assert_int_equal(count_kind(t, TBE_EV_MEMSET), memsets);
  assert_int_equal(count_kind(t, TBE_EV_RUNTIME) + count_kind(t, TBE_EV_DRIVER), api);
  assert_int_equal(count_kind(t, TBE_EV_CPU_OP) + count_kind(t, TBE_EV_INSTANT) + api, host);
  assert_true(kernels > 0 && copies > 0 && memsets > 0 && api > 0);
  uint64_t mbytes = 0, mhtod = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_memcpy *m = tbe_trace_memcpy(t, &t->events[i]);
    if (!m) continue;
    mbytes += m->bytes;
    mhtod += m->copy_kind == TBE_COPY_HTOD;
  }
  assert_int_equal(mbytes, copy_bytes);
  assert_int_equal(mhtod, htod);

  /* Kernel time per name, and the launch parameters of one kernel. */
  for (size_t i = 0; i < xs->n_planes; i++) {
    const XPlane *p = xs->planes[i];
    if (strncmp(p->name, "/device:GPU:", 12) != 0) continue;
    for (size_t m = 0; m < p->n_event_metadata; m++) {
      const char *name = p->event_metadata[m]->value->name;
      int64_t sum_ps = 0, calls = 0;
      for (size_t l = 0; l < p->n_lines; l++)
        for (size_t e = 0; e < p->lines[l]->n_events; e++) {
          const Tensorflow__Profiler__XEvent *ev = p->lines[l]->events[e];
          if (ev->metadata_id == p->event_metadata[m]->key && find_stat(p, ev, "kernel_details")) {
            sum_ps += ev->duration_ps;
            calls++;
          }
        }
      if (!calls) continue;
      tbe_str id = tbe_trace_find_str(t, name, strlen(name));
      int64_t msum = 0, mcalls = 0;
      for (size_t k = 0; k < t->nevents; k++)
        if (t->events[k].kind == TBE_EV_KERNEL && t->events[k].name == id) {
          msum += t->events[k].dur_ns;
          mcalls++;
        }
      assert_int_equal(mcalls, calls);
      assert_int_equal(msum, sum_ps / 1000);
    }
  }
  size_t regs168 = 0, mregs168 = 0;
  for (size_t i = 0; i < xs->n_planes; i++) {
    const XPlane *p = xs->planes[i];
    if (strncmp(p->name, "/device:GPU:", 12) != 0) continue;
    for (size_t l = 0; l < p->n_lines; l++)
      for (size_t e = 0; e < p->lines[l]->n_events; e++) {
        const Tensorflow__Profiler__XStat *k = find_stat(p, p->lines[l]->events[e], "kernel_details");
        if (k && strncmp(stat_text(p, k), "regs:168 ", 9) == 0) regs168++;
      }
  }
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_kernel *k = tbe_trace_kernel(t, &t->events[i]);
    if (k && k->registers == 168) {
      mregs168++;
      assert_int_equal(k->block[0], 384);
      assert_int_equal(k->dynamic_shared, 231424);
      assert_true(k->occupancy_pct > 18.7f && k->occupancy_pct < 18.8f);
    }
  }
  assert_true(regs168 > 0);
  assert_int_equal(mregs168, regs168);

  /* Every GPU activity links to its host launch (correlation ids). */
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind == TBE_EV_KERNEL) assert_int_not_equal(e->link, TBE_NONE);
  }

  /* Device properties from the plane stats. */
  assert_int_equal(t->ndevices, 1);
  assert_string_equal(tbe_trace_str(t, t->devices[0].name), "NVIDIA H200");
  assert_int_equal(t->devices[0].sm_count, 132);
  assert_int_equal(t->devices[0].clock_khz, 1980000);
  assert_int_equal(t->devices[0].cc_major, 9);
  assert_int_equal(t->devices[0].memory_bandwidth, 4814304000000LL);
  assert_int_equal(t->devices[0].memory_bytes, 150109880320LL);
  assert_string_equal(tbe_trace_str(t, t->host), xs->hostnames[0]);

  /* Host threads: pid = process_id (649), tid = line id; times epoch. */
  for (size_t i = 0; i < xs->n_planes; i++) {
    const XPlane *p = xs->planes[i];
    if (strcmp(p->name, "/host:CPU") != 0) continue;
    const Tensorflow__Profiler__XLine *ln = p->lines[0];
    int64_t first = INT64_MAX;
    for (size_t e = 0; e < ln->n_events; e++) {
      int64_t s = start + ln->timestamp_ns + ln->events[e]->offset_ps / 1000;
      if (s < first) first = s;
    }
    int found = 0;
    for (size_t k = 0; k < t->ntracks; k++) {
      const tbe_track *tr = &t->tracks[k];
      if (tr->type != TBE_TRACK_THREAD || tr->tid != ln->id) continue;
      found = 1;
      assert_int_equal(tr->pid, 649);
      assert_string_equal(tbe_trace_str(t, tr->name), ln->name);
      assert_int_equal(tr->count, ln->n_events);
      assert_int_equal(t->events[tr->first].start_ns, first);
    }
    assert_true(found);
  }
  assert_int_equal(t->nwarnings, 0);
  tbe_trace_free(t);
  tensorflow__profiler__xspace__free_unpacked(xs, NULL);
  free(data);
}

/* ---- a tiny protobuf encoder for synthetic files ---- */

typedef struct wb {
  uint8_t *b;
  size_t n, cap;
} wb;

static void wb_put(wb *w, const void *p, size_t n) {
  if (w->n + n > w->cap) {
    w->cap = (w->n + n) * 2 + 64;
    w->b = realloc(w->b, w->cap);
    assert_non_null(w->b);
  }
  memcpy(w->b + w->n, p, n);
  w->n += n;
}

static void put_varint(wb *w, uint64_t v) {
  uint8_t tmp[10];
  size_t k = 0;
  do {
    tmp[k] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) tmp[k] |= 0x80;
    k++;
  } while (v);
  wb_put(w, tmp, k);
}

static void put_int(wb *w, unsigned f, int64_t v) {
  put_varint(w, (uint64_t)f << 3);
  put_varint(w, (uint64_t)v);
}

static void put_bytes(wb *w, unsigned f, const void *p, size_t n) {
  put_varint(w, (uint64_t)f << 3 | 2);
  put_varint(w, n);
  wb_put(w, p, n);
}

static void put_str(wb *w, unsigned f, const char *s) { put_bytes(w, f, s, strlen(s)); }

/* Appends `sub` as field f and frees it. */
static void put_msg(wb *w, unsigned f, wb *sub) {
  put_bytes(w, f, sub->b, sub->n);
  free(sub->b);
  memset(sub, 0, sizeof *sub);
}

static void put_double(wb *w, unsigned f, double d) {
  put_varint(w, (uint64_t)f << 3 | 1);
  wb_put(w, &d, 8);
}

/* XStat with one value: kind 'i' int64, 'u' uint64, 's' string, 'r' ref, 'd' double. */
static void stat(wb *ev, unsigned field, int64_t md, char kind, int64_t iv, const char *sv) {
  wb s = {0};
  put_int(&s, 1, md);
  switch (kind) {
    case 'i': put_int(&s, 4, iv); break;
    case 'u': put_int(&s, 3, iv); break;
    case 'r': put_int(&s, 7, iv); break;
    case 's': put_str(&s, 5, sv); break;
    case 'd': put_double(&s, 2, (double)iv / 10.0); break;
    default: break;
  }
  put_msg(ev, field, &s);
}

static void event_md(wb *plane, int64_t id, const char *name, const char *display) {
  wb v = {0}, e = {0};
  put_int(&v, 1, id);
  put_str(&v, 2, name);
  if (display) put_str(&v, 4, display);
  put_int(&e, 1, id);
  put_msg(&e, 2, &v);
  put_msg(plane, 4, &e);
}

static void stat_md(wb *plane, int64_t id, const char *name) {
  wb v = {0}, e = {0};
  put_int(&v, 1, id);
  put_str(&v, 2, name);
  put_int(&e, 1, id);
  put_msg(&e, 2, &v);
  put_msg(plane, 5, &e);
}

/* Starts an XEvent: metadata id, offset_ps, duration_ps. */
static void event_begin(wb *ev, int64_t md, int64_t off_ps, int64_t dur_ps) {
  memset(ev, 0, sizeof *ev);
  put_int(ev, 1, md);
  put_int(ev, 2, off_ps);
  if (dur_ps) put_int(ev, 3, dur_ps);
}

static void line_begin(wb *ln, int64_t id, const char *name, int64_t ts) {
  memset(ln, 0, sizeof *ln);
  put_int(ln, 1, id);
  put_str(ln, 2, name);
  put_int(ln, 3, ts);
}

static char *write_tmp(const char *dir, const char *name, const wb *w) {
  char *p = tu_join(dir, name);
  assert_int_equal(tu_write_file(p, w->b, w->n), 0);
  return p;
}

/* A space with host, CUPTI, NVTX, GPU, TPU and empty custom planes. */
static void build_space(wb *space, int64_t line_ts, int with_steps_by_group) {
  memset(space, 0, sizeof *space);
  wb p = {0}, ln, ev;
  /* /host:CUPTI first: its lines merge into /host:CPU's process. */
  put_str(&p, 2, "/host:CUPTI");
  event_md(&p, 1, "cuLaunchKernel", NULL);
  stat_md(&p, 1, "correlation_id");
  line_begin(&ln, 10, "Host Threads/10", line_ts);
  event_begin(&ev, 1, 5000000, 1000000);
  stat(&ev, 4, 1, 'u', 100, NULL);
  put_msg(&ln, 4, &ev);
  put_msg(&p, 3, &ln);
  put_msg(space, 1, &p);

  put_str(&p, 2, "/host:CPU");
  event_md(&p, 1, "cudaLaunchKernel", NULL);
  event_md(&p, 2, "train", NULL);
  event_md(&p, 3, "jit_step(123)", "jit_step");
  event_md(&p, 4, "marker", NULL);
  stat_md(&p, 1, "correlation_id");
  stat_md(&p, 2, "step_num");
  stat_md(&p, 3, "_r");
  stat_md(&p, 4, "tf_op");
  stat_md(&p, 5, "an interned value");
  stat_md(&p, 6, "process_id");
  stat_md(&p, 7, "group_id");
  stat_md(&p, 8, "flops");
  stat(&p, 6, 6, 'i', 4242, NULL);
  line_begin(&ln, 10, "main", line_ts);
  for (int step = 0; step < 2; step++) {
    int64_t base = step * 20000000;
    event_begin(&ev, 2, base, 10000000);
    if (with_steps_by_group) {
      stat(&ev, 4, 7, 'i', step, NULL);
    } else {
      stat(&ev, 4, 2, 'i', 7 + step, NULL);
      stat(&ev, 4, 3, 'i', 1, NULL);
    }
    put_msg(&ln, 4, &ev);
    event_begin(&ev, 1, base + 1000000, 2000000);
    stat(&ev, 4, 1, 'u', 99 + 10 * step, NULL);
    if (with_steps_by_group) stat(&ev, 4, 7, 'i', step, NULL);
    put_msg(&ln, 4, &ev);
  }
  event_begin(&ev, 3, 3500000, 1234567);
  stat(&ev, 4, 4, 'r', 5, NULL);
  stat(&ev, 4, 8, 'd', 15, NULL); /* 1.5 */
  put_msg(&ln, 4, &ev);
  event_begin(&ev, 4, 4000000, 0);
  put_msg(&ln, 4, &ev);
  put_msg(&p, 3, &ln);
  put_msg(space, 1, &p);

  put_str(&p, 2, "/host:NVTX-CUPTI");
  event_md(&p, 1, "NVTX:dom:my range", NULL);
  line_begin(&ln, 10, "Host Threads/10/NVTX", line_ts);
  event_begin(&ev, 1, 0, 9000000);
  put_msg(&ln, 4, &ev);
  put_msg(&p, 3, &ln);
  put_msg(space, 1, &p);

  put_int(&p, 1, 2);
  put_str(&p, 2, "/device:GPU:2");
  event_md(&p, 1, "my_kernel", NULL);
  event_md(&p, 2, "MemcpyP2P", NULL);
  event_md(&p, 3, "Memset", NULL);
  event_md(&p, 4, "MemcpyOther", NULL);
  stat_md(&p, 1, "correlation_id");
  stat_md(&p, 2, "kernel_details");
  stat_md(&p, 3, "regs:32 static_shared:16 dynamic_shared:1024 grid:8,4,1 block:256,1,1 occ_pct:50");
  stat_md(&p, 4, "memcpy_details");
  stat_md(&p, 5, "Memset_details");
  stat_md(&p, 6, "context_id");
  stat_md(&p, 7, "clock_rate");
  stat_md(&p, 8, "core_count");
  stat_md(&p, 9, "gpu_device_name");
  stat_md(&p, 10, "compute_cap_major");
  stat(&p, 6, 7, 'i', 1500000, NULL);
  stat(&p, 6, 8, 'i', 80, NULL);
  stat(&p, 6, 9, 's', 0, "Test GPU");
  stat(&p, 6, 10, 'i', 8, NULL);
  line_begin(&ln, 7, "Stream #7(Compute)", line_ts);
  event_begin(&ev, 1, 6000000, 3000000);
  stat(&ev, 4, 1, 'u', 99, NULL);
  stat(&ev, 4, 2, 'r', 3, NULL);
  stat(&ev, 4, 6, 's', 0, "$$5");
  put_msg(&ln, 4, &ev);
  event_begin(&ev, 2, 9000000, 1000000);
  stat(&ev, 4, 4, 's', 0, "kind_src:device kind_dst:device size:4096 dest:3 async:1");
  put_msg(&ln, 4, &ev);
  event_begin(&ev, 3, 10000000, 500000);
  stat(&ev, 4, 5, 's', 0, "kind:device num_bytes:64 async:0");
  put_msg(&ln, 4, &ev);
  event_begin(&ev, 4, 11000000, 500000);
  stat(&ev, 4, 4, 's', 0, "kind_src:pinned kind_dst:device size:8 dest:2 async:1");
  put_msg(&ln, 4, &ev);
  put_msg(&p, 3, &ln);
  put_msg(space, 1, &p);

  put_str(&p, 2, "/device:TPU:0");
  event_md(&p, 1, "fusion.1", NULL);
  line_begin(&ln, 1, "XLA Ops", line_ts);
  event_begin(&ev, 1, 0, 7000000);
  put_msg(&ln, 4, &ev);
  put_msg(&p, 3, &ln);
  put_msg(space, 1, &p);

  put_str(&p, 2, "/custom:nothing to see");
  put_msg(space, 1, &p);

  put_str(space, 3, "dropped 5 events");
  put_str(space, 2, "an error");
  put_str(space, 4, "hostA");
}

static const tbe_event *find_event(const tbe_trace *t, const char *name) {
  tbe_str id = tbe_trace_find_str(t, name, strlen(name));
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].name == id) return &t->events[i];
  return NULL;
}

static const tbe_arg *find_arg(const tbe_trace *t, const tbe_event *e, const char *key) {
  for (size_t i = 0; i < e->nargs; i++)
    if (strcmp(tbe_trace_str(t, t->args[e->args + i].key), key) == 0) return &t->args[e->args + i];
  return NULL;
}

static void test_synthetic(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  wb space;
  build_space(&space, 1000, 0);
  char *path = write_tmp(dir, "s.xplane.pb", &space);
  tbe_import_error err;
  int rc;
  tbe_trace *t = import_file(path, &rc, &err);
  if (rc) fprintf(stderr, "%s\n", err.message);
  assert_int_equal(rc, 0);
  assert_string_equal(tbe_trace_str(t, t->host), "hostA");
  /* Relative times, no Task Environment: kept, with a warning; plus the
   * space's warning and error. */
  assert_int_equal(t->nwarnings, 3);
  int rel = 0, dropped = 0, error = 0;
  for (size_t i = 0; i < t->nwarnings; i++) {
    const char *w = tbe_trace_str(t, t->warnings[i]);
    rel += strstr(w, "relative") != NULL;
    dropped += strstr(w, "dropped 5 events") != NULL;
    error += strstr(w, "an error") != NULL;
  }
  assert_true(rel && dropped && error);

  /* One host process (4242, from /host:CPU's process_id) holding the CUPTI
   * and NVTX lines on the same thread track as /host:CPU's line 10. */
  const tbe_event *rt = find_event(t, "cudaLaunchKernel");
  const tbe_event *drv = find_event(t, "cuLaunchKernel");
  /* "NVTX:<domain>:<message>": the message is the name. */
  const tbe_event *nv = find_event(t, "my range");
  assert_non_null(rt);
  assert_non_null(drv);
  assert_non_null(nv);
  assert_int_equal(rt->kind, TBE_EV_RUNTIME);
  assert_int_equal(drv->kind, TBE_EV_DRIVER);
  assert_int_equal(drv->correlation, 100);
  assert_int_equal(rt->track, drv->track);
  assert_int_equal(nv->track, rt->track);
  assert_int_equal(t->tracks[rt->track].pid, 4242);
  assert_int_equal(t->tracks[rt->track].tid, 10);
  assert_int_equal(t->tracks[rt->track].type, TBE_TRACK_THREAD);
  assert_int_equal(nv->kind, TBE_EV_NVTX_RANGE);
  assert_string_equal(tbe_trace_str(t, tbe_trace_nvtx(t, nv)->domain), "dom");
  /* Times: line ts + offset_ps / 1000, duration rounded to ns. */
  assert_int_equal(rt->start_ns, 1000 + 1000);
  assert_int_equal(rt->dur_ns, 2000);
  const tbe_event *op = find_event(t, "jit_step");
  assert_non_null(op);
  assert_int_equal(op->kind, TBE_EV_CPU_OP);
  assert_int_equal(op->start_ns, 1000 + 3500);
  assert_int_equal(op->dur_ns, 1235);
  const tbe_arg *a = find_arg(t, op, "tf_op");
  assert_non_null(a);
  assert_int_equal(a->type, TBE_ARG_STR);
  assert_string_equal(tbe_trace_str(t, a->v.s), "an interned value");
  a = find_arg(t, op, "long_name");
  assert_non_null(a);
  assert_string_equal(tbe_trace_str(t, a->v.s), "jit_step(123)");
  a = find_arg(t, op, "flops");
  assert_non_null(a);
  assert_int_equal(a->type, TBE_ARG_DOUBLE);
  assert_true(a->v.d == 1.5);
  const tbe_event *mk = find_event(t, "marker");
  assert_int_equal(mk->kind, TBE_EV_INSTANT);

  /* Steps from step_num. */
  assert_int_equal(t->nsteps, 2);
  assert_int_equal(t->steps[0].num, 7);
  assert_int_equal(t->steps[0].start_ns, 1000);
  assert_int_equal(t->steps[0].end_ns, 1000 + 10000);
  assert_int_equal(t->steps[1].num, 8);

  /* GPU plane: device 2 from the name, properties, one stream track. */
  const tbe_event *k = find_event(t, "my_kernel");
  assert_non_null(k);
  assert_int_equal(k->kind, TBE_EV_KERNEL);
  const tbe_track *st = &t->tracks[k->track];
  assert_int_equal(st->type, TBE_TRACK_STREAM);
  assert_int_equal(st->device, 2);
  assert_int_equal(st->tid, 7);
  assert_int_equal(st->pid, 4242);
  assert_string_equal(tbe_trace_str(t, st->name), "Stream #7(Compute)");
  const tbe_kernel *kd = tbe_trace_kernel(t, k);
  assert_int_equal(kd->registers, 32);
  assert_int_equal(kd->static_shared, 16);
  assert_int_equal(kd->dynamic_shared, 1024);
  assert_int_equal(kd->grid[0], 8);
  assert_int_equal(kd->grid[1], 4);
  assert_int_equal(kd->grid[2], 1);
  assert_int_equal(kd->block[0], 256);
  assert_true(kd->occupancy_pct == 50.0f);
  assert_int_equal(kd->context, 5);
  assert_int_not_equal(k->link, TBE_NONE);
  assert_ptr_equal(&t->events[k->link], find_event(t, "cudaLaunchKernel"));
  const tbe_event *cp = find_event(t, "MemcpyP2P");
  const tbe_memcpy *m = tbe_trace_memcpy(t, cp);
  assert_non_null(m);
  assert_int_equal(m->copy_kind, TBE_COPY_PTOP);
  assert_int_equal(m->src_kind, TBE_MEM_DEVICE);
  assert_int_equal(m->dst_kind, TBE_MEM_DEVICE);
  assert_int_equal(m->bytes, 4096);
  assert_int_equal(m->src_device, 2);
  assert_int_equal(m->dst_device, 3);
  assert_int_equal(m->async, 1);
  m = tbe_trace_memcpy(t, find_event(t, "MemcpyOther"));
  assert_int_equal(m->copy_kind, TBE_COPY_HTOD); /* from the memory kinds */
  assert_int_equal(m->src_kind, TBE_MEM_PINNED);
  const tbe_memset *ms = tbe_trace_memset(t, find_event(t, "Memset"));
  assert_non_null(ms);
  assert_int_equal(ms->bytes, 64);
  assert_int_equal(ms->mem_kind, TBE_MEM_DEVICE);
  assert_int_equal(ms->async, 0);
  uint32_t di;
  assert_int_equal(tbe_trace_device(t, 2, &di), 0);
  assert_int_equal(t->devices[di].clock_khz, 1500000);
  assert_int_equal(t->devices[di].sm_count, 80);
  assert_int_equal(t->devices[di].cc_major, 8);
  assert_string_equal(tbe_trace_str(t, t->devices[di].name), "Test GPU");

  /* TPU plane: a generic track of its own process; the custom plane without
   * lines adds nothing. */
  const tbe_event *f = find_event(t, "fusion.1");
  assert_non_null(f);
  assert_int_equal(f->kind, TBE_EV_GENERIC);
  assert_int_equal(t->tracks[f->track].type, TBE_TRACK_OTHER);
  assert_string_equal(tbe_trace_str(t, f->cat), "/device:TPU:0");
  int tpu_proc = 0;
  for (size_t i = 0; i < t->nprocesses; i++)
    if (t->processes[i].pid == t->tracks[f->track].pid)
      tpu_proc = strcmp(tbe_trace_str(t, t->processes[i].name), "/device:TPU:0") == 0;
  assert_true(tpu_proc);
  assert_int_equal(t->nevents, 1 + 6 + 1 + 4 + 1); /* CUPTI, CPU, NVTX, GPU, TPU */
  tbe_trace_free(t);
  free(path);

  /* Epoch line times: used as they are, no warning; steps from group_id. */
  const int64_t epoch = 1700000000000000000LL;
  free(space.b);
  build_space(&space, epoch, 1);
  path = write_tmp(dir, "e.xplane.pb", &space);
  t = import_file(path, &rc, &err);
  assert_int_equal(rc, 0);
  assert_int_equal(find_event(t, "cudaLaunchKernel")->start_ns, epoch + 1000);
  assert_int_equal(t->nwarnings, 2);
  assert_int_equal(t->nsteps, 2);
  assert_int_equal(t->steps[0].num, 0);
  assert_int_equal(t->steps[0].start_ns, epoch);
  assert_int_equal(t->steps[0].end_ns, epoch + 10000);
  assert_int_equal(t->steps[1].start_ns, epoch + 20000);
  tbe_trace_free(t);
  free(path);
  free(space.b);
  tu_rmrf(dir);
  free(dir);
}

/* ---- damaged files ---- */

/* XLA's CUDA allocations (cupti_collector: a GPU plane's stream line,
 * memalloc_details / MemFree_details "kind:<k> num_bytes:<n>" by ref, a
 * correlation_id, no device_ordinal): the CUDA driver's memory events of
 * the plane's GPU, not kernels; a bad device_ordinal is refused. */
static void test_xla_memory(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  wb space = {0}, p = {0}, ln, ev;
  put_str(&p, 2, "/device:GPU:1");
  event_md(&p, 1, "MemoryAlloc", NULL);
  event_md(&p, 2, "MemoryFree", NULL);
  stat_md(&p, 1, "correlation_id");
  stat_md(&p, 2, "memalloc_details");
  stat_md(&p, 3, "MemFree_details");
  stat_md(&p, 4, "kind:device num_bytes:1048576");
  stat_md(&p, 5, "kind:pinned num_bytes:4096");
  line_begin(&ln, 7, "Stream #7(MemoryAlloc)", 1700000000000000000LL);
  static const struct {
    int64_t md, stat, ref, corr;
  } evs[3] = {{1, 2, 4, 11}, {1, 2, 5, 12}, {2, 3, 4, 13}};
  for (int i = 0; i < 3; i++) {
    event_begin(&ev, evs[i].md, 1000000 * (i + 1), 0);
    stat(&ev, 4, 1, 'u', evs[i].corr, NULL);
    stat(&ev, 4, evs[i].stat, 'r', evs[i].ref, NULL);
    put_msg(&ln, 4, &ev);
  }
  put_msg(&p, 3, &ln);
  put_msg(&space, 1, &p);
  char *path = write_tmp(dir, "m.xplane.pb", &space);
  free(space.b);
  memset(&space, 0, sizeof space);
  tbe_import_error err;
  int rc;
  tbe_trace *t = import_file(path, &rc, &err);
  if (rc) fprintf(stderr, "%s\n", err.message);
  assert_int_equal(rc, 0);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 0);
  assert_int_equal(count_kind(t, TBE_EV_MEMORY), 3);
  static const struct {
    int64_t bytes;
    uint8_t kind;
  } want[3] = {{1048576, TBE_MEM_DEVICE}, {4096, TBE_MEM_PINNED}, {-1048576, TBE_MEM_DEVICE}};
  size_t k = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_memory *m = tbe_trace_memory(t, &t->events[i]);
    if (!m) continue;
    assert_true(k < 3);
    assert_int_equal(t->events[i].correlation, 11 + k);
    assert_int_equal(m->bytes, want[k].bytes);
    assert_int_equal(m->mem_kind, want[k].kind);
    assert_int_equal(m->source, TBE_MEMSRC_CUDA);
    /* GPU 1's, the pinned block the host's once the curve is made
     * (model/memory.c) */
    if (want[k].kind == TBE_MEM_DEVICE) {
      assert_int_equal(m->device, 1);
      assert_int_equal(m->device_type, 1);
    }
    k++;
  }
  assert_int_equal(k, 3);
  tbe_trace_free(t);
  free(path);

  /* our stats with a device_ordinal that is no ordinal: refused */
  memset(&p, 0, sizeof p);
  put_str(&p, 2, "/host:CPU");
  event_md(&p, 1, "[memory]", NULL);
  stat_md(&p, 1, "addr");
  stat_md(&p, 2, "num_bytes");
  stat_md(&p, 3, "device_ordinal");
  line_begin(&ln, 10, "main", 1700000000000000000LL);
  event_begin(&ev, 1, 1000000, 0);
  stat(&ev, 4, 1, 'u', 4096, NULL);
  stat(&ev, 4, 2, 'i', 64, NULL);
  stat(&ev, 4, 3, 'i', -7, NULL);
  put_msg(&ln, 4, &ev);
  put_msg(&p, 3, &ln);
  put_msg(&space, 1, &p);
  path = write_tmp(dir, "bad.xplane.pb", &space);
  free(space.b);
  t = import_file(path, &rc, &err);
  assert_int_equal(rc, TBE_ECORRUPT);
  assert_non_null(strstr(err.message, "device_ordinal"));
  tbe_trace_free(t);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

static void expect_corrupt(const char *path, const char *want) {
  tbe_import_error err;
  int rc;
  tbe_trace *t = import_file(path, &rc, &err);
  if (rc != TBE_ECORRUPT || (want && !strstr(err.message, want)))
    fprintf(stderr, "rc %d: %s\n", rc, err.message);
  assert_int_equal(rc, TBE_ECORRUPT);
  assert_non_null(strstr(err.message, ": byte "));
  assert_null(strchr(err.message, '\n'));
  if (want) assert_non_null(strstr(err.message, want));
  tbe_trace_free(t);
}

static void test_truncated(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  size_t n;
  uint8_t *data = tu_read_file(tu_data("jax/h200_matmul.xplane.pb"), &n);
  assert_non_null(data);
  char *path = tu_join(dir, "cut.xplane.pb");
  /* Cuts inside the first plane's header, inside big planes and inside
   * the last field (hostnames). */
  /* (A 1-byte file is refused by format detection before the importer.) */
  const size_t cuts[] = {2, 3, 100, n / 3, n / 2, (2 * n) / 3, n - 1};
  for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
    assert_int_equal(tu_write_file(path, data, cuts[c]), 0);
    expect_corrupt(path, "malformed XSpace field");
  }
  /* The first plane claims more bytes than the file has: reported at its
   * field header, byte 0, without allocating the claimed length. */
  wb w = {0};
  put_varint(&w, 1 << 3 | 2);
  put_varint(&w, (uint64_t)1 << 40);
  wb_put(&w, data + 10, 100);
  assert_int_equal(tu_write_file(path, w.b, w.n), 0);
  expect_corrupt(path, "byte 0:");
  free(w.b);
  free(path);
  free(data);
  tu_rmrf(dir);
  free(dir);
}

static void test_bad_inner_field(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  /* plane { name, lines { id, events { metadata_id, stats: len 50 but 2
   * bytes } } } with consistent outer lengths. */
  wb ev = {0}, ln = {0}, p = {0}, space = {0};
  put_int(&ev, 1, 1);
  size_t stat_at_in_event = ev.n;
  put_varint(&ev, 4 << 3 | 2);
  put_varint(&ev, 50);
  put_varint(&ev, 8);
  put_varint(&ev, 1);
  put_int(&ln, 1, 3);
  size_t ev_hdr = ln.n;
  put_varint(&ln, 4 << 3 | 2);
  put_varint(&ln, ev.n);
  size_t ev_data_in_line = ln.n;
  (void)ev_hdr;
  wb_put(&ln, ev.b, ev.n);
  put_str(&p, 2, "/host:CPU");
  put_varint(&p, 3 << 3 | 2);
  put_varint(&p, ln.n);
  size_t line_data_in_plane = p.n;
  wb_put(&p, ln.b, ln.n);
  put_str(&space, 4, "h");
  size_t plane_at = space.n;
  put_varint(&space, 1 << 3 | 2);
  put_varint(&space, p.n);
  size_t plane_data = space.n;
  wb_put(&space, p.b, p.n);
  uint64_t want = plane_data + line_data_in_plane + ev_data_in_line + stat_at_in_event;
  char *path = write_tmp(dir, "inner.xplane.pb", &space);
  char msg[64];
  snprintf(msg, sizeof msg, "byte %llu:", (unsigned long long)want);
  expect_corrupt(path, msg);
  snprintf(msg, sizeof msg, "starting at byte %zu", plane_at);
  expect_corrupt(path, msg);
  expect_corrupt(path, "\"/host:CPU\"");
  free(ev.b);
  free(ln.b);
  free(p.b);
  free(space.b);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

/* Flipped bytes all over the file: 0 or a one-line TBE_ECORRUPT, never a
 * crash (run under the sanitizer build to catch memory errors). */
static void test_flipped(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  size_t n;
  uint8_t *data = tu_read_file(tu_data("jax/h200_matmul.xplane.pb"), &n);
  assert_non_null(data);
  char *path = tu_join(dir, "flip.xplane.pb");
  size_t corrupt = 0, ok = 0;
  uint32_t seed = 12345;
  for (int i = 0; i < 48; i++) {
    seed = seed * 1103515245u + 12345u;
    /* Byte 0 is left alone: changing it changes the detected format. */
    size_t at = i < 8 ? (size_t)i + 1 : 1 + (size_t)(seed % (n - 1));
    uint8_t keep = data[at];
    data[at] ^= (uint8_t)(1u << (seed >> 29));
    if (data[at] == keep) data[at] ^= 0x80;
    assert_int_equal(tu_write_file(path, data, n), 0);
    data[at] = keep;
    tbe_import_error err;
    int rc;
    tbe_trace *t = import_file(path, &rc, &err);
    if (rc) {
      assert_int_equal(rc, TBE_ECORRUPT);
      assert_null(strchr(err.message, '\n'));
      assert_non_null(strstr(err.message, "flip.xplane.pb: byte "));
      corrupt++;
    } else {
      ok++;
    }
    tbe_trace_free(t);
  }
  assert_true(corrupt > 0);
  assert_int_equal(corrupt + ok, 48);
  free(path);
  free(data);
  tu_rmrf(dir);
  free(dir);
}


/* ---- round trip through our own exporter ---- */

typedef struct ev_key {
  int64_t start, dur;
  int kind;
  const char *name;
  unsigned nargs;
} ev_key;

static int cmp_key(const void *a, const void *b) {
  const ev_key *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->kind != y->kind) return x->kind - y->kind;
  if (x->dur != y->dur) return x->dur < y->dur ? -1 : 1;
  int c = strcmp(x->name, y->name);
  return c ? c : (int)x->nargs - (int)y->nargs;
}

static ev_key *keys_of(const tbe_trace *t) {
  ev_key *k = malloc(t->nevents * sizeof *k);
  assert_non_null(k);
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    k[i] = (ev_key){e->start_ns, e->dur_ns, e->kind, tbe_trace_str(t, e->name), e->nargs};
  }
  qsort(k, t->nevents, sizeof *k, cmp_key);
  return k;
}

/* The JAX file, exported by src/trace/export/export_xplane.c and imported again,
 * gives the same events (time, kind, duration, name, number of args), the
 * same kernel details, devices and session. */
static void test_round_trip(void **state) {
  (void)state;
  int rc;
  tbe_import_error err;
  tbe_trace *a = import_file(tu_data("jax/h200_matmul.xplane.pb"), &rc, &err);
  assert_int_equal(rc, 0);
  char *dir = tu_mkdtemp();
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = dir;
  o.run = "rt";
  o.host = "h";
  o.outputs = TBE_OUT_XPLANE;
  assert_int_equal(tbe_export_run(a, &o), 0);
  char *sub = tu_join(dir, "plugins/profile/rt/h.xplane.pb");
  tbe_trace *b = import_file(sub, &rc, &err);
  if (rc) fprintf(stderr, "%s\n", err.message);
  assert_int_equal(rc, 0);
  assert_int_equal(b->nevents, a->nevents);
  assert_int_equal(b->nargs, a->nargs);
  assert_int_equal(b->nkernels, a->nkernels);
  assert_int_equal(b->nmemcpys, a->nmemcpys);
  assert_int_equal(b->nmemsets, a->nmemsets);
  assert_int_equal(b->ndevices, a->ndevices);
  assert_int_equal(b->start_ns, a->start_ns);
  assert_int_equal(b->stop_ns, a->stop_ns);
  assert_string_equal(tbe_trace_str(b, b->devices[0].name), tbe_trace_str(a, a->devices[0].name));
  assert_int_equal(b->devices[0].sm_count, a->devices[0].sm_count);
  ev_key *ka = keys_of(a), *kb = keys_of(b);
  for (size_t i = 0; i < a->nevents; i++) assert_int_equal(cmp_key(&ka[i], &kb[i]), 0);
  free(ka);
  free(kb);
  /* Kernel launch parameters survive the kernel_details string. */
  uint64_t ha = 0, hb = 0;
  for (size_t i = 0; i < a->nkernels; i++) {
    const tbe_kernel *x = &a->kernels[i], *y = &b->kernels[i];
    ha += (uint64_t)x->registers * 7 + x->grid[0] * 13 + x->block[0] * 17 + x->dynamic_shared;
    hb += (uint64_t)y->registers * 7 + y->grid[0] * 13 + y->block[0] * 17 + y->dynamic_shared;
  }
  assert_int_equal(ha, hb);
  tbe_trace_free(a);
  tbe_trace_free(b);
  free(sub);
  tu_rmrf(dir);
  free(dir);
}

/* ---- allocation failures ---- */


static void test_alloc_failures(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  wb space;
  build_space(&space, 1000, 0);
  char *path = write_tmp(dir, "a.xplane.pb", &space);
  tu_import_alloc_sweep(path, 5000);
  free(space.b);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

/* ---- format detection and times at the edges ---- */

/* A valid XSpace whose first plane is 91 or 123 bytes long starts with
 * 0x0a '[' or 0x0a '{' (0x0a is also '\n'): it was refused as malformed
 * JSON.  Detection now walks the protobuf framing first.  The real file
 * behind the extra plane imports exactly as it does alone. */
static void test_detect_json_lookalike(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  size_t n;
  uint8_t *data = tu_read_file(tu_data("jax/h200_matmul.xplane.pb"), &n);
  assert_non_null(data);
  int rc;
  tbe_import_error err;
  tbe_trace *ref = import_file(tu_data("jax/h200_matmul.xplane.pb"), &rc, &err);
  assert_int_equal(rc, 0);
  const size_t sizes[] = {91, 123};
  for (size_t k = 0; k < 2; k++) {
    wb plane = {0}, w = {0};
    put_int(&plane, 1, 77);
    char name[160];
    size_t nl = sizes[k] - 2 - 2; /* id field 2 bytes, name tag and length 2 */
    memset(name, 'x', nl);
    memcpy(name, "/custom:", 8);
    name[nl] = 0;
    put_str(&plane, 2, name);
    assert_int_equal(plane.n, sizes[k]);
    put_msg(&w, 1, &plane);
    wb_put(&w, data, n);
    assert_int_equal(w.b[1], k ? '{' : '[');
    char *path = write_tmp(dir, "lookalike.xplane.pb", &w);
    tbe_import_format fmt;
    assert_int_equal(tbe_import_detect(path, &fmt), 0);
    assert_int_equal(fmt, TBE_FORMAT_XSPACE);
    tbe_trace *t = import_file(path, &rc, &err);
    if (rc) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, 0);
    assert_int_equal(t->nevents, ref->nevents);
    tbe_trace_free(t);
    free(path);
    free(w.b);
  }
  tbe_trace_free(ref);
  free(data);
  tu_rmrf(dir);
  free(dir);
}

/* Times outside the model's range (+-146 years of 1970) are refused with
 * the field named and the plane's byte: a line timestamp, an offset and a
 * duration that carry an event past the range, and a session start. */
static void test_time_range(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  const int64_t max = ((int64_t)1 << 62) - 1;
  struct {
    int64_t line_ts, off_ps, dur_ps, start;
    const char *want;
  } c[] = {
      {INT64_MAX, 0, 0, 0, "line timestamp_ns is out of range"},
      {INT64_MIN, 0, 0, 0, "line timestamp_ns is out of range"},
      {max - 1000, INT64_MAX, 0, 0, "event 0: offset_ps is out of range"},
      {max - 5000000, 0, INT64_MAX, 0, "event 0: duration_ps is out of range"},
      {5, 0, 0, max, "line timestamp_ns + profile_start_time is out of range"},
      {5, 0, 0, INT64_MAX, "profile_start_time is out of range"},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    wb space = {0}, p = {0}, ln, ev;
    if (c[i].start) {
      wb env = {0};
      put_str(&env, 2, "Task Environment");
      stat_md(&env, 1, "profile_start_time");
      stat(&env, 6, 1, 'i', c[i].start, NULL);
      put_msg(&space, 1, &env);
    }
    size_t plane_off = space.n;
    put_str(&p, 2, "/host:CPU");
    event_md(&p, 1, "op", NULL);
    line_begin(&ln, 1, "thread", c[i].line_ts);
    event_begin(&ev, 1, c[i].off_ps, c[i].dur_ps);
    put_msg(&ln, 4, &ev);
    put_msg(&p, 3, &ln);
    put_msg(&space, 1, &p);
    char *path = write_tmp(dir, "times.xplane.pb", &space);
    tbe_import_error err;
    int rc;
    tbe_trace *t = import_file(path, &rc, &err);
    if (rc != TBE_ECORRUPT || !strstr(err.message, c[i].want))
      fprintf(stderr, "case %zu: rc %d: %s\n", i, rc, err.message);
    assert_int_equal(rc, TBE_ECORRUPT);
    assert_non_null(strstr(err.message, c[i].want));
    if (c[i].start != INT64_MAX) assert_int_equal(err.offset, plane_off);
    tbe_trace_free(t);
    free(path);
    free(space.b);
  }
  tu_rmrf(dir);
  free(dir);
}

/* Device ordinals (importer.h): a plane "/device:GPU:<n>" whose n is an
 * integer but no ordinal, a copy's memcpy_details dest and an allocation's
 * device_ordinal out of 0..2^31-1 are refused naming the field and the
 * plane's byte; -1 is none where it means so (dest, device_ordinal).  The
 * name used to be read with strtol (spaces, '+') and 2^31-1 excluded. */
typedef struct dev_case {
  const char *plane, *detail; /* plane name; GPU planes: the copy's memcpy_details */
  int64_t devord;             /* host planes: the allocation's device_ordinal */
  const char *want;           /* the error, or NULL */
} dev_case;

static tbe_trace *import_dev_case(const char *dir, const dev_case *c, size_t *plane_off, int *rc,
                                  tbe_import_error *err) {
  wb space = {0}, p = {0}, ln, ev;
  put_str(&p, 2, c->plane);
  event_md(&p, 1, c->detail ? "MemcpyD2D" : "alloc", NULL);
  stat_md(&p, 2, "memcpy_details");
  stat_md(&p, 3, "addr");
  stat_md(&p, 4, "num_bytes");
  stat_md(&p, 5, "device_ordinal");
  line_begin(&ln, 7, "line", 5);
  event_begin(&ev, 1, 0, c->detail ? 1000 : 0);
  if (c->detail) {
    stat(&ev, 4, 2, 's', 0, c->detail);
  } else {
    stat(&ev, 4, 3, 'u', 4096, NULL);
    stat(&ev, 4, 4, 'i', 64, NULL);
    stat(&ev, 4, 5, 'i', c->devord, NULL);
  }
  put_msg(&ln, 4, &ev);
  put_msg(&p, 3, &ln);
  *plane_off = space.n;
  put_msg(&space, 1, &p);
  char *path = write_tmp(dir, "dev.xplane.pb", &space);
  tbe_trace *t = import_file(path, rc, err);
  free(path);
  free(space.b);
  return t;
}

static void test_device_ordinals(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  static const dev_case c[] = {
      {"/device:GPU:2147483647", "size:8 dest:3", 0, NULL},
      {"/device:GPU:0", "size:8 dest:-1", 0, NULL},
      {"/device:GPU:2147483648", "size:8", 0,
       "XSpace plane 0: name /device:GPU:<n> is not a GPU ordinal (0 to 2147483647): 2147483648"},
      {"/device:GPU:4294967296", "size:8", 0, "name /device:GPU:<n> is not a GPU ordinal"},
      {"/device:GPU:-1", "size:8", 0, "name /device:GPU:<n> is not a GPU ordinal (0 to 2147483647): -1"},
      {"/device:GPU:99999999999999999999999", "size:8", 0, "is not a GPU ordinal"},
      {"/device:GPU:1", "size:8 dest:4294967296", 0,
       "XSpace plane 0 line 0 event 0: memcpy_details dest is not a GPU ordinal (0 to 2147483647, or "
       "-1 for none): 4294967296"},
      {"/device:GPU:1", "size:8 dest:-2", 0, "memcpy_details dest is not a GPU ordinal"},
      {"/host:CPU", NULL, -1, NULL},
      {"/host:CPU", NULL, 2147483647, NULL},
      {"/host:CPU", NULL, 2147483648, "XSpace plane 0 line 0 event 0: stat device_ordinal is not a GPU "
                                      "ordinal (0 to 2147483647, or -1 for none): 2147483648"},
      {"/host:CPU", NULL, -2, "stat device_ordinal is not a GPU ordinal"},
      {"/host:CPU", NULL, INT64_MIN, "stat device_ordinal is not a GPU ordinal"},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    size_t off;
    int rc;
    tbe_import_error err;
    tbe_trace *t = import_dev_case(dir, &c[i], &off, &rc, &err);
    if (c[i].want) {
      if (rc != TBE_ECORRUPT || !strstr(err.message, c[i].want))
        fprintf(stderr, "case %zu: rc %d: %s\n", i, rc, err.message);
      assert_int_equal(rc, TBE_ECORRUPT);
      assert_non_null(strstr(err.message, c[i].want));
      assert_int_equal(err.offset, off);
      assert_null(strchr(err.message, '\n'));
    } else {
      if (rc) fprintf(stderr, "case %zu: rc %d: %s\n", i, rc, err.message);
      assert_int_equal(rc, 0);
      assert_int_equal(t->nevents, 1);
      if (c[i].detail) {
        const tbe_memcpy *m = tbe_trace_memcpy(t, &t->events[0]);
        assert_non_null(m);
        assert_int_equal(m->dst_device, strstr(c[i].detail, "dest:3") ? 3 : -1);
        int32_t want = i == 0 ? INT32_MAX : 0;
        assert_int_equal(t->tracks[t->events[0].track].device, want);
        assert_int_equal(t->ndevices, 1);
        assert_int_equal(t->devices[0].id, want);
      } else {
        const tbe_memory *m = tbe_trace_memory(t, &t->events[0]);
        assert_non_null(m);
        assert_int_equal(m->device, c[i].devord);
      }
    }
    tbe_trace_free(t);
  }
  /* Names that are not "/device:GPU:" and an integer are other planes, as
   * before: no GPU. */
  static const char *const other[] = {"/device:GPU:+3", "/device:GPU: 3", "/device:GPU:3x", "/device:GPU:"};
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    dev_case oc = {other[i], "size:8", 0, NULL};
    size_t off;
    int rc;
    tbe_import_error err;
    tbe_trace *t = import_dev_case(dir, &oc, &off, &rc, &err);
    assert_int_equal(rc, 0);
    assert_int_equal(t->ndevices, 0);
    assert_int_equal(t->nevents, 1);
    assert_int_equal(t->tracks[t->events[0].track].type, TBE_TRACK_OTHER);
    tbe_trace_free(t);
  }
  tu_rmrf(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden),          cmocka_unit_test(test_synthetic),
      cmocka_unit_test(test_truncated),       cmocka_unit_test(test_bad_inner_field),
      cmocka_unit_test(test_flipped),         cmocka_unit_test(test_alloc_failures),
      cmocka_unit_test(test_round_trip),      cmocka_unit_test(test_detect_json_lookalike),
      cmocka_unit_test(test_time_range),      cmocka_unit_test(test_device_ordinals),
      cmocka_unit_test(test_xla_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
