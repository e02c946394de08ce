/* chrome_json_finish.c: the end of a Chrome JSON import.
 *
 * The model side, once the whole input is applied: events read before
 * baseTimeNanoseconds get the base, B events never closed end where the
 * trace ends, our exporter's top-level keys are read back, M metadata
 * names processes and tracks, string pids name their processes, ac2g flow
 * ends are checked against the correlation ids, and the warnings of what
 * was dropped are added. */
#include <errno.h>
#include <math.h>

#include "import/chrome_json_int.h"

/* ---- end of input ---- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v[0..n) unless it is in order already (correlation ids mostly
 * are); returns 1 when it was. */
static int sort_u64(uint64_t *v, size_t n) {
  size_t i = 1;
  while (i < n && v[i - 1] <= v[i]) i++;
  if (i >= n) return 1;
  qsort(v, n, sizeof *v, cmp_u64);
  return 0;
}

/* How many of q[0..nq) are in none of the sorted sets a, b (b may be
 * NULL): a merge walk when q is in order, else binary searches. */
static uint64_t count_missing(const uint64_t *q, size_t nq, int q_sorted, const uint64_t *a,
                              size_t na, const uint64_t *b, size_t nb);

static int in_sorted(const uint64_t *v, size_t n, uint64_t x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && v[lo] == x;
}

/* Checks that every ac2g flow end names a correlation id of the right side:
 * starts an API call's, ends a GPU activity's. */
static int check_ac2g(cj *c) {
  const uint64_t *ac2g_s = c->ac2g_s.data, *ac2g_f = c->ac2g_f.data;
  size_t n_ac2g_s = c->ac2g_s.n, n_ac2g_f = c->ac2g_f.n;
  if (!n_ac2g_s && !n_ac2g_f) return 0;
  tbe_trace *t = c->t;
  size_t napi = 0, ngpu = 0;
  for (size_t i = c->ev_first; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (!e->correlation) continue;
    if (e->kind == TBE_EV_RUNTIME || e->kind == TBE_EV_DRIVER) napi++;
    else if (tbe_event_kind_is_gpu((tbe_event_kind)e->kind)) ngpu++;
  }
  uint64_t *api = tbe__alloc(c->a, (napi + 1) * sizeof *api);
  uint64_t *gpu = tbe__alloc(c->a, (ngpu + 1) * sizeof *gpu);
  if (!api || !gpu) {
    tbe__free(c->a, api);
    tbe__free(c->a, gpu);
    return TBE_ENOMEM;
  }
  napi = ngpu = 0;
  for (size_t i = c->ev_first; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (!e->correlation) continue;
    if (e->kind == TBE_EV_RUNTIME || e->kind == TBE_EV_DRIVER) api[napi++] = e->correlation;
    else if (tbe_event_kind_is_gpu((tbe_event_kind)e->kind)) gpu[ngpu++] = e->correlation;
  }
  sort_u64(api, napi);
  sort_u64(gpu, ngpu);
  /* The flow ends' ids come in file order: usually increasing. */
  int s_sorted = 1, f_sorted = 1;
  for (size_t i = 1; i < n_ac2g_s && s_sorted; i++) s_sorted = ac2g_s[i - 1] <= ac2g_s[i];
  for (size_t i = 1; i < n_ac2g_f && f_sorted; i++) f_sorted = ac2g_f[i - 1] <= ac2g_f[i];
  uint64_t bad_s = count_missing(ac2g_s, n_ac2g_s, s_sorted, api, napi, NULL, 0);
  /* Kineto also writes lone 'f' ends on API calls that launched nothing
   * (cudaGetErrorString, ...): those name an API call's id. */
  uint64_t bad_f = count_missing(ac2g_f, n_ac2g_f, f_sorted, gpu, ngpu, api, napi);
  tbe__free(c->a, api);
  tbe__free(c->a, gpu);
  c->n_ac2g_bad = bad_s + bad_f;
  if (bad_s)
    tbe_trace_warn(t, "%s: %llu of %zu ac2g flow starts name no CUDA API call's correlation id",
                   c->path, (unsigned long long)bad_s, n_ac2g_s);
  if (bad_f)
    tbe_trace_warn(t, "%s: %llu of %zu ac2g flow ends name no correlation id of the trace",
                   c->path, (unsigned long long)bad_f, n_ac2g_f);
  return 0;
}

static uint64_t count_missing(const uint64_t *q, size_t nq, int q_sorted, const uint64_t *a,
                              size_t na, const uint64_t *b, size_t nb) {
  uint64_t bad = 0;
  if (!q_sorted) {
    for (size_t i = 0; i < nq; i++) bad += !in_sorted(a, na, q[i]) && !(b && in_sorted(b, nb, q[i]));
    return bad;
  }
  size_t ia = 0, ib = 0;
  for (size_t i = 0; i < nq; i++) {
    uint64_t x = q[i];
    while (ia < na && a[ia] < x) ia++;
    while (b && ib < nb && b[ib] < x) ib++;
    int found = (ia < na && a[ia] == x) || (b && ib < nb && b[ib] == x);
    bad += !found;
  }
  return bad;
}

/* ---- our exporter's top-level keys ----
 *
 * What a Kineto document has no place for, export_json.c writes under
 * tbexportTrace (source, host, profiled window), tbexportCollection (what
 * the collection lost and cost), tbexportWarnings (the generic status
 * lines of tbe__status_lines, then the trace's own warnings) and
 * tbexportSteps (the steps, when the ProfilerStep#N events do not give
 * them back) and tbexportKernelMetrics (the range profiler's per-kernel
 * figures).  They are read back into the same fields, so that a trace
 * written and read again is the trace that was written.  A value of
 * another shape is ignored (the keys are ours; nobody else writes them). */

/* Their values are small JSON documents, read into yajl_val trees (the
 * public layout of yajl_tree.h, so yajl_tree_get finds paths in them)
 * built here from a yajl handle on the import's allocator: yajl_tree_parse
 * would take its memory from malloc. */

typedef struct mtree {
  cj *c;
  yajl_val root;
  yajl_val stack[16];   /* open containers; deeper values are dropped */
  int depth, skip;
  char *key;            /* the pending key of the innermost object */
  int nomem;
} mtree;

static void mt_free(const tbe_allocator *a, yajl_val v) {
  if (!v) return;
  if (YAJL_IS_STRING(v)) {
    tbe__free(a, v->u.string);
  } else if (YAJL_IS_NUMBER(v)) {
    tbe__free(a, v->u.number.r);
  } else if (YAJL_IS_OBJECT(v)) {
    for (size_t i = 0; i < v->u.object.len; i++) {
      tbe__free(a, (void *)(uintptr_t)v->u.object.keys[i]);
      mt_free(a, v->u.object.values[i]);
    }
    tbe__free(a, v->u.object.keys);
    tbe__free(a, v->u.object.values);
  } else if (YAJL_IS_ARRAY(v)) {
    for (size_t i = 0; i < v->u.array.len; i++) mt_free(a, v->u.array.values[i]);
    tbe__free(a, v->u.array.values);
  }
  tbe__free(a, v);
}

static char *mt_dup(const tbe_allocator *a, const void *s, size_t n) {
  char *d = tbe__alloc(a, n + 1);
  if (d) memcpy(d, s, n), d[n] = 0;
  return d;
}

/* Room for one more element in an array of `len` (capacity 4, then the
 * next power of two). */
static int mt_room(const tbe_allocator *a, void **p, size_t len, size_t elem) {
  if (len && (len < 4 || (len & (len - 1)))) return 0;
  size_t ncap = len ? len * 2 : 4;
  void *q = tbe__realloc(a, *p, len * elem, ncap * elem);
  if (!q) return -1;
  *p = q;
  return 0;
}

/* Adds `v` to the innermost container (or makes it the root); 1 or 0. */
static int mt_add(mtree *m, yajl_val v) {
  const tbe_allocator *a = m->c->a;
  if (!v) return m->nomem = 1, 0;
  if (!m->depth) {
    if (!m->root) m->root = v;
    else mt_free(a, v);
    return 1;
  }
  yajl_val p = m->stack[m->depth - 1];
  if (YAJL_IS_ARRAY(p)) {
    if (mt_room(a, (void **)&p->u.array.values, p->u.array.len, sizeof(yajl_val)))
      return mt_free(a, v), m->nomem = 1, 0;
    p->u.array.values[p->u.array.len++] = v;
    return 1;
  }
  size_t n = p->u.object.len;
  if (!m->key || mt_room(a, (void **)&p->u.object.keys, n, sizeof(char *)) ||
      mt_room(a, (void **)&p->u.object.values, n, sizeof(yajl_val))) {
    mt_free(a, v);
    return m->nomem = 1, 0;
  }
  p->u.object.keys[n] = m->key;
  p->u.object.values[n] = v;
  p->u.object.len++;
  m->key = NULL;
  return 1;
}

static yajl_val mt_node(mtree *m, yajl_type type) {
  yajl_val v = tbe__calloc(m->c->a, 1, sizeof *v);
  if (v) v->type = type;
  return v;
}

static int mt_null(void *ctx) {
  mtree *m = ctx;
  return m->skip ? 1 : mt_add(m, mt_node(m, yajl_t_null));
}

static int mt_bool(void *ctx, int b) {
  mtree *m = ctx;
  return m->skip ? 1 : mt_add(m, mt_node(m, b ? yajl_t_true : yajl_t_false));
}

static int mt_number(void *ctx, const char *s, size_t n) {
  mtree *m = ctx;
  if (m->skip) return 1;
  yajl_val v = mt_node(m, yajl_t_number);
  if (v && !(v->u.number.r = mt_dup(m->c->a, s, n))) tbe__free(m->c->a, v), v = NULL;
  if (v) {
    int64_t i;
    char *end;
    /* As yajl_tree: an integer when the text is one in range, a double
     * when strtod takes all of it. */
    if (tbe__cj_parse_int(s, n, &i, NULL, NULL) == 0 && i != INT64_MIN) {
      v->u.number.i = i;
      v->u.number.flags |= YAJL_NUMBER_INT_VALID;
    }
    errno = 0;
    v->u.number.d = strtod(v->u.number.r, &end);
    if (!errno && !*end) v->u.number.flags |= YAJL_NUMBER_DOUBLE_VALID;
  }
  return mt_add(m, v);
}

static int mt_string(void *ctx, const unsigned char *s, size_t n) {
  mtree *m = ctx;
  if (m->skip) return 1;
  yajl_val v = mt_node(m, yajl_t_string);
  if (v && !(v->u.string = mt_dup(m->c->a, s, n))) tbe__free(m->c->a, v), v = NULL;
  return mt_add(m, v);
}

static int mt_key(void *ctx, const unsigned char *s, size_t n) {
  mtree *m = ctx;
  if (m->skip) return 1;
  tbe__free(m->c->a, m->key);
  if (!(m->key = mt_dup(m->c->a, s, n))) return m->nomem = 1, 0;
  return 1;
}

static int mt_open(mtree *m, yajl_type type) {
  if (m->skip || m->depth == (int)(sizeof m->stack / sizeof m->stack[0])) return m->skip++, 1;
  yajl_val v = mt_node(m, type);
  if (!mt_add(m, v)) return 0;
  m->stack[m->depth++] = v;
  return 1;
}

static int mt_close(void *ctx) {
  mtree *m = ctx;
  if (m->skip) m->skip--;
  else m->depth--;
  return 1;
}

static int mt_start_map(void *ctx) { return mt_open(ctx, yajl_t_object); }
static int mt_start_array(void *ctx) { return mt_open(ctx, yajl_t_array); }

static const yajl_callbacks mt_callbacks = {mt_null,      mt_bool,    NULL,         NULL,
                                            mt_number,    mt_string,  mt_start_map, mt_key,
                                            mt_close,     mt_start_array, mt_close};

/* The tree of top-level key `key`, or NULL (absent or not valid JSON: the
 * key is ours, so that is nobody's); *rc gets TBE_ENOMEM without memory. */
static yajl_val meta_tree(cj *c, int key, int *rc) {
  tbe__buf *m = &c->tbe_meta[key - K_TBE_FIRST];
  if (!m->len || *rc) return NULL;
  mtree t;
  memset(&t, 0, sizeof t);
  t.c = c;
  c->ynomem = 0; /* the main parse is over */
  tbe__cj_yajl_funcs(c);
  yajl_handle h = yajl_alloc(&mt_callbacks, &c->yfuncs, &t);
  int ok = h && !c->ynomem;
  if (ok) {
    yajl_status st = yajl_parse(h, m->data, m->len - 1); /* the buffer ends in a NUL */
    if (st == yajl_status_ok) st = yajl_complete_parse(h);
    ok = st == yajl_status_ok;
  }
  if (h) yajl_free(h);
  tbe__free(c->a, t.key);
  if (t.nomem || c->ynomem || !h) *rc = TBE_ENOMEM;
  if (!ok || *rc) {
    mt_free(c->a, t.root);
    return NULL;
  }
  return t.root;
}

static int meta_int(yajl_val obj, const char *key, int64_t *out) {
  const char *path[] = {key, NULL};
  yajl_val v = yajl_tree_get(obj, path, yajl_t_number);
  if (!v || !YAJL_IS_INTEGER(v)) return 0;
  *out = YAJL_GET_INTEGER(v);
  return 1;
}

static const char *meta_str(yajl_val obj, const char *key) {
  const char *path[] = {key, NULL};
  yajl_val v = yajl_tree_get(obj, path, yajl_t_string);
  return v ? YAJL_GET_STRING(v) : NULL;
}

/* A number of the tree (its text: integers and reals alike), finite. */
static int meta_double(yajl_val v, double *out) {
  if (!YAJL_IS_NUMBER(v) || !v->u.number.r) return 0;
  char *end;
  double d = strtod(v->u.number.r, &end);
  if (*end || !isfinite(d)) return 0;
  *out = d;
  return 1;
}

/* tbexportKernelMetrics: [{"name", "device", "launches", "metrics": {name:
 * value}}], as export_json.c writes it; an entry of another shape, or a
 * value that is no finite number, is skipped. */
static int kernel_metrics_meta(cj *c, yajl_val o) {
  int rc = 0;
  tbe_metric_value buf[64];
  for (size_t i = 0; i < o->u.array.len && !rc; i++) {
    yajl_val e = o->u.array.values[i];
    int64_t dev, launches;
    const char *name = meta_str(e, "name");
    const char *path[] = {"metrics", NULL};
    yajl_val m = yajl_tree_get(e, path, yajl_t_object);
    if (!name || !m || !meta_int(e, "device", &dev) || dev < 0 || dev > INT32_MAX ||
        !meta_int(e, "launches", &launches) || launches < 0)
      continue;
    size_t n = 0;
    for (size_t k = 0; k < m->u.object.len && n < sizeof buf / sizeof *buf && !rc; k++) {
      double v;
      if (!meta_double(m->u.object.values[k], &v)) continue;
      const char *key = m->u.object.keys[k];
      if (!*key) continue;
      rc = tbe__cj_intern_text(c, key, strlen(key), &buf[n].metric);
      buf[n].reserved = 0;
      buf[n++].value = v;
    }
    tbe_str nm;
    if (!rc && n && !(rc = tbe__cj_intern_text(c, name, strlen(name), &nm)))
      rc = tbe_trace_add_kernel_metrics(c->t, nm, (int32_t)dev, (uint64_t)launches, buf, n);
  }
  return rc;
}

static int apply_tbe_meta(cj *c) {
  tbe_trace *t = c->t;
  int rc = 0;
  int64_t v, v2;
  yajl_val o = meta_tree(c, K_TBE_TRACE, &rc);
  if (YAJL_IS_OBJECT(o)) {
    const char *src = meta_str(o, "source"), *host = meta_str(o, "host");
    if (src) t->source = tbe__source_of(src, strlen(src));
    if (host && *host) rc = tbe__cj_intern_text(c, host, strlen(host), &t->host);
    if (meta_int(o, "startNs", &v) && meta_int(o, "stopNs", &v2)) {
      t->start_ns = v;
      t->stop_ns = v2;
    }
  }
  mt_free(c->a, o);
  o = meta_tree(c, K_TBE_COLLECTION, &rc);
  if (!rc && YAJL_IS_OBJECT(o)) {
    if (meta_int(o, "droppedRecords", &v)) t->dropped_records = (uint64_t)v;
    if (meta_int(o, "outOfRangeRecords", &v)) t->dropped_out_of_range = (uint64_t)v;
    if (meta_int(o, "cuptiOverheadNs", &v)) t->overhead_ns = (uint64_t)v;
    const char *path[] = {"endedEarly", NULL};
    if (YAJL_IS_TRUE(yajl_tree_get(o, path, yajl_t_true))) t->ended_early = 1;
  }
  mt_free(c->a, o);
  o = meta_tree(c, K_TBE_WARNINGS, &rc);
  if (!rc && YAJL_IS_ARRAY(o) && o->u.array.len) {
    size_t n = 0, len = o->u.array.len;
    tbe_str *lines = tbe__calloc(c->a, len, sizeof *lines);
    if (!lines) rc = TBE_ENOMEM;
    for (size_t i = 0; i < len && !rc; i++) {
      const char *w = YAJL_GET_STRING(o->u.array.values[i]);
      if (w) rc = tbe__cj_intern_text(c, w, strlen(w), &lines[n++]);
    }
    size_t k = rc ? n : tbe__status_prefix(t, 0, lines, n);
    for (; k < n && !rc; k++) rc = tbe_trace_warn(t, "%s", tbe_trace_str(t, lines[k]));
    tbe__free(c->a, lines);
  }
  mt_free(c->a, o);
  o = meta_tree(c, K_TBE_STEPS, &rc);
  if (!rc && YAJL_IS_ARRAY(o)) {
    for (size_t i = 0; i < o->u.array.len && !rc; i++) {
      yajl_val st = o->u.array.values[i];
      int64_t num, start, end, pid, tid;
      if (!meta_int(st, "num", &num) || !meta_int(st, "startNs", &start) ||
          !meta_int(st, "endNs", &end))
        continue;
      const char *name = meta_str(st, "name");
      tbe_str nm = 0;
      if (name && (rc = tbe__cj_intern_text(c, name, strlen(name), &nm))) break;
      uint32_t track = TBE_NONE;
      if (meta_int(st, "pid", &pid) && meta_int(st, "tid", &tid) &&
          (rc = tbe__cj_get_track(c, pid < 0 || tid < 0 ? TBE_TRACK_OTHER : TBE_TRACK_THREAD, pid, tid,
                          -1, &track)))
        break;
      if (!(rc = tbe_trace_add_step(t, num, start, end, nm))) t->steps[t->nsteps - 1].track = track;
    }
  }
  mt_free(c->a, o);
  o = meta_tree(c, K_TBE_KMETRICS, &rc);
  if (!rc && YAJL_IS_ARRAY(o)) rc = kernel_metrics_meta(c, o);
  mt_free(c->a, o);
  return rc;
}

/* Track keys for thread_name metadata: GPU rows by (device, stream), host
 * rows by (pid, tid); tracks sorted by key, found by binary search, so
 * N names over M tracks cost (N + M) log M, not N * M. */
typedef struct tkey {
  int64_t a, b;
  uint32_t gpu, track;
} tkey;

static int cmp_tkey(const void *x, const void *y) {
  const tkey *p = x, *q = y;
  if (p->gpu != q->gpu) return p->gpu < q->gpu ? -1 : 1;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return p->track < q->track ? -1 : p->track > q->track;
}

static int apply_meta_names(cj *c) {
  tbe_trace *t = c->t;
  tkey *keys = NULL;
  int rc = 0;
  for (size_t i = 0; i < c->nmetas && !rc; i++) {
    const meta *m = &c->metas[i];
    int32_t dev;
    int is_gpu = tbe__cj_gpu_of_pid(c, m->pid, &dev);
    if (m->kind == 0 || m->kind == 3) {
      if (is_gpu) continue;
      uint32_t p;
      if ((rc = tbe_trace_process(t, m->pid, &p))) break;
      if (m->kind == 0) t->processes[p].name = m->value;
      continue;
    }
    if (!keys) {
      keys = tbe__alloc(c->a, (t->ntracks ? t->ntracks : 1) * sizeof *keys);
      if (!keys) return TBE_ENOMEM;
      for (size_t k = 0; k < t->ntracks; k++) {
        const tbe_track *tr = &t->tracks[k];
        int g = tr->type == TBE_TRACK_STREAM;
        keys[k] = (tkey){g ? tr->device : tr->pid, tr->tid, (uint32_t)g, (uint32_t)k};
      }
      qsort(keys, t->ntracks, sizeof *keys, cmp_tkey);
    }
    tkey want = {is_gpu ? dev : m->pid, m->tid, (uint32_t)is_gpu, 0};
    size_t lo = 0, hi = t->ntracks;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (cmp_tkey(&keys[mid], &want) < 0) lo = mid + 1;
      else hi = mid;
    }
    for (; lo < t->ntracks && keys[lo].gpu == want.gpu && keys[lo].a == want.a && keys[lo].b == want.b;
         lo++)
      t->tracks[keys[lo].track].name = m->value;
  }
  tbe__free(c->a, keys);
  return rc;
}

int tbe__cj_finish_import(cj *c) {
  tbe_trace *t = c->t;
  int rc;
  /* Events read before baseTimeNanoseconds appeared get the base now.
   * Both are in the time range, so the sums fit; the results must be in it
   * too (refused otherwise, as times_ok does for the events after it). */
  if (c->base) {
    int bad = 0;
    for (size_t i = c->ev_first; i < c->ev_mark && i < t->nevents && !bad; i++) {
      tbe_event *ev = &t->events[i];
      ev->start_ns += c->base;
      bad = !tbe__span_ok(ev->start_ns, ev->dur_ns);
    }
    for (size_t i = c->flow_first; i < c->flow_mark && i < t->nflows && !bad; i++) {
      t->flows[i].src_ns += c->base;
      t->flows[i].dst_ns += c->base;
      bad = !tbe__time_ok(t->flows[i].src_ns) || !tbe__time_ok(t->flows[i].dst_ns);
    }
    if (bad) {
      tbe__cj_fail_at(c, c->base_off, TBE_EPARSE,
                 "baseTimeNanoseconds puts events out of range (more than 146 years from 1970)");
      return TBE_EPARSE;
    }
  }
  /* B events never closed end where the trace ends. */
  for (size_t s = 0; s < c->nstacks; s++) {
    bstack *st = &c->stacks[s];
    while (st->n) {
      pending_b *pb = &st->v[--st->n];
      int64_t end = c->max_end > pb->ev.start_ns ? c->max_end : pb->ev.start_ns;
      if ((rc = tbe__cj_emit_pending(c, pb, end, NULL, 0))) return rc;
      c->n_open_b++;
    }
  }
  if (!c->source0) t->source = c->kineto ? TBE_SRC_KINETO : TBE_SRC_CHROME;
  if ((rc = apply_tbe_meta(c))) return rc;
  if (c->dist_have_rank) t->rank = (int32_t)c->dist_rank;
  if (c->dist_have_world) t->world_size = (int32_t)c->dist_world;
  /* Names from M metadata. */
  if ((rc = apply_meta_names(c))) return rc;
  /* String pids are their own process names unless metadata named them
   * (ids are -2 - index: one pass marks the ones tracks use). */
  if (c->nstrpids) {
    uint8_t *used = tbe__calloc(c->a, c->nstrpids, 1);
    if (!used) return TBE_ENOMEM;
    for (size_t k = 0; k < t->ntracks; k++) {
      int64_t pid = t->tracks[k].pid;
      if (pid <= -2 && (uint64_t)(-2 - pid) < c->nstrpids) used[-2 - pid] = 1;
    }
    for (size_t i = 0; i < c->nstrpids && !rc; i++) {
      uint32_t p;
      if (!used[i] || (rc = tbe_trace_process(t, c->strpids[i].id, &p))) continue;
      if (!t->processes[p].name) t->processes[p].name = c->strpids[i].s;
    }
    tbe__free(c->a, used);
    if (rc) return rc;
  }
  if ((rc = check_ac2g(c))) return rc;
  /* Unpaired flow ends. */
  c->n_unpaired_flows = c->nflows_live;
  if (c->n_unpaired_flows)
    tbe_trace_warn(t, "%s: %llu flow ends (s/f) without their other end were dropped", c->path,
                   (unsigned long long)c->n_unpaired_flows);
  if (c->n_unmatched_e)
    tbe_trace_warn(t, "%s: %llu E events without a matching B were dropped", c->path,
                   (unsigned long long)c->n_unmatched_e);
  if (c->n_open_b)
    tbe_trace_warn(t, "%s: %llu B events without an E were closed at the end of the trace", c->path,
                   (unsigned long long)c->n_open_b);
  if (c->n_unsupported)
    tbe_trace_warn(t, "%s: %llu events of unsupported phases (%s) were skipped", c->path,
                   (unsigned long long)c->n_unsupported, c->unsupported_ph);
  if (c->n_args_cut)
    tbe_trace_warn(t, "%s: %llu args beyond 65535 on one event were dropped", c->path,
                   (unsigned long long)c->n_args_cut);
  /* Repeated keys (chrome_json_parse.c): once per file, the first. */
  if (c->pdup_n) tbe__cj_note_dup(c, c->pdup_n, c->pdup_off, "", c->pdup_name, strlen(c->pdup_name));
  if (c->dup_n) {
    char more[48] = "";
    if (c->dup_n > 1) snprintf(more, sizeof more, " (%llu repeated keys in all)", (unsigned long long)c->dup_n);
    tbe_trace_warn(t, "%s: byte %llu: the key \"%s\" is repeated in an object%s; the last value is "
                   "kept, as JSON.parse and Python's json keep it", c->path,
                   (unsigned long long)c->dup_off, c->dup_name, more);
  }
  return tbe_trace_error(t);
}

