/* xspace_meta.c: what the XSpace importer's events look up.
 *
 * Per plane, the stat and event metadata are indexed by id (load_metadata,
 * freed with the plane); stats are read as integers, doubles, strings
 * (ref values resolved) or model args (a later stat of the same key, the
 * event's own, replaces the metadata's).  Across planes: the device
 * properties of a GPU plane, our exporter's tbexport_track_pids (sorted
 * once, searched), step candidates by step_num and by group_id, and the
 * line an NVTX line of another producer belongs to (lines sorted by name
 * once per plane). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "import/xspace_int.h"

/* Inserts unless present (the first entry for a key wins).  0 or the
 * map's sticky error. */
static int idmap_put(tbe__map *m, int64_t k, uint32_t v) {
  int added;
  uint32_t *slot = tbe__map_put(m, (uint64_t)k, &added);
  if (!slot) return tbe__map_error(m);
  if (added) *slot = v;
  return 0;
}

static void *pb_alloc(void *ctx, size_t n) {
  xs_state *s = ctx;
  void *p = tbe__alloc(s->a, n);
  if (!p) s->pb_nomem = 1;
  return p;
}

static void pb_free(void *ctx, void *p) { tbe__free(((xs_state *)ctx)->a, p); }

void tbe__xs_state_init(xs_state *s, const tbe_allocator *a) {
  s->a = a;
  s->pa.alloc = pb_alloc;
  s->pa.free = pb_free;
  s->pa.allocator_data = s;
  tbe__map_init(&s->smap, a, TBE__SEED_PROCESS);
  tbe__map_init(&s->emap, a, TBE__SEED_PROCESS);
  tbe__map_init(&s->gmap, a, TBE__SEED_PROCESS);
}

/* ---- stat names we act on ---- */

static int classify_stat(const char *s) {
  static const struct {
    const char *name;
    int kind;
  } tab[] = {{"correlation_id", S_CORRELATION},
             {"kernel_details", S_KERNEL_DETAILS},
             {"memcpy_details", S_MEMCPY_DETAILS},
             {"Memset_details", S_MEMSET_DETAILS},
             {"memalloc_details", S_MEMALLOC_DETAILS},
             {"MemFree_details", S_MEMFREE_DETAILS},
             {"context_id", S_CONTEXT},
             {"theoretical_occupancy_pct", S_OCCUPANCY},
             {"step_num", S_STEP_NUM},
             {"group_id", S_GROUP_ID},
             {"step_name", S_STEP_NAME},
             {"_r", S_ROOT},
             {"device_id", S_DEVICE_ID},
             /* Written by our exporter for model fields XLA has no stat for. */
             {"external_id", S_EXTERNAL_ID},
             {"sync_kind", S_SYNC_KIND},
             {"sync_stream", S_SYNC_STREAM},
             {"cuda_event", S_CUDA_EVENT},
             {"nvtx_domain", S_NVTX_DOMAIN},
             {"nvtx_color", S_NVTX_COLOR},
             {"nvtx_category", S_NVTX_CATEGORY},
             {"nvtx_payload", S_NVTX_PAYLOAD},
             {"value", S_VALUE},
             {"addr", S_ADDR},
             {"num_bytes", S_NUM_BYTES},
             {"total_allocated", S_TOTAL_ALLOC},
             {"total_reserved", S_TOTAL_RES},
             {"device_ordinal", S_DEV_ORD},
             {"tbexport_kind", S_TBE_KIND},
             {"tbexport_cat", S_TBE_CAT},
             {"tf_op", S_TF_OP},
             {"tbexport_src_tf_op", S_SRC_TF_OP},
             {"tbexport_mem_source", S_MEM_SOURCE},
             {"tbexport_mem_kind", S_MEM_KIND},
             {"tbexport_device_type", S_MEM_DEVTYPE},
             {"_a", S_ASYNC}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strcmp(s, tab[i].name) == 0) return tab[i].kind;
  return S_OTHER;
}

/* ---- the importer's state ---- */

tbe_str tbe__xs_intern(xs_state *s, const char *str) {
  tbe_str id = 0;
  if (str && *str) tbe_trace_intern(s->t, str, strlen(str), &id);
  return id;
}

/* `n` bytes of `str` (may contain no NUL); 0 for none. */
static tbe_str xs_intern_n(xs_state *s, const char *str, size_t n) {
  tbe_str id = 0;
  if (n) tbe_trace_intern(s->t, str, n, &id);
  return id;
}

static tbe_str smd_key(xs_state *s, smd_cache *c) {
  if (c->key == TBE_NONE) c->key = tbe__xs_intern(s, c->md->name);
  return c->key;
}

/* Appends a ready arg (kind S_OTHER); returns 0 or TBE_ENOMEM. */
int tbe__xs_push_raw_arg(xs_state *s, const tbe_arg *a) {
  if (s->nargs >= UINT16_MAX) return 0;
  if (tbe__grow(s->a, (void **)&s->args, &s->cap_args, s->nargs + 1, sizeof *s->args) ||
      tbe__grow(s->a, (void **)&s->akind, &s->cap_akind, s->nargs + 1, 1))
    return TBE_ENOMEM;
  s->akind[s->nargs] = S_OTHER;
  s->args[s->nargs++] = *a;
  return 0;
}

int tbe__xs_push_str_arg(xs_state *s, const char *key, const char *val) {
  tbe_arg a = {.key = tbe__xs_intern(s, key), .type = TBE_ARG_STR, .v.s = tbe__xs_intern(s, val)};
  return tbe__xs_push_raw_arg(s, &a);
}

/* Appends `st` (a stat of kind S_*) as an arg; returns 0 or TBE_ENOMEM. */
int tbe__xs_push_arg(xs_state *s, smd_cache *c, const XStat *st, int kind) {
  tbe_arg a;
  memset(&a, 0, sizeof a);
  switch (st->value_case) {
    case TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE:
      a.type = TBE_ARG_DOUBLE;
      a.v.d = st->double_value;
      break;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE:
      a.type = TBE_ARG_UINT;
      a.v.u = st->uint64_value;
      break;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE:
      a.type = TBE_ARG_INT;
      a.v.i = st->int64_value;
      break;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE:
      a.type = TBE_ARG_STR;
      a.v.s = tbe__xs_intern(s, st->str_value);
      break;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE: {
      /* The referenced name, interned once per plane. */
      uint32_t ri = tbe__xs_idmap_get(&s->smap, (int64_t)st->ref_value);
      if (ri == TBE_NONE) return 0;
      a.type = TBE_ARG_STR;
      a.v.s = smd_key(s, &s->smd[ri]);
      break;
    }
    default: return 0; /* bytes (serialized protos) and unset values are not kept */
  }
  if (s->nargs >= UINT16_MAX) return 0;
  a.key = c ? smd_key(s, c) : tbe__xs_intern(s, "stat");
  /* A later stat with the same key (the event's own) replaces the
   * metadata's. */
  for (size_t i = 0; i < s->nargs; i++)
    if (s->args[i].key == a.key) {
      s->args[i] = a;
      s->akind[i] = (uint8_t)kind;
      return 0;
    }
  int rc = tbe__xs_push_raw_arg(s, &a);
  if (!rc && s->nargs) s->akind[s->nargs - 1] = (uint8_t)kind;
  return rc;
}

/* ---- planes ---- */

plane_class tbe__xs_classify_plane(const char *name, int32_t *gpu) {
  if (strcmp(name, "/host:CPU") == 0 || strcmp(name, "/host:CUPTI") == 0) return P_HOST;
  if (strcmp(name, "/host:NVTX-CUPTI") == 0) return P_HOST_NVTX;
  if (strcmp(name, "/host:python-tracer") == 0) return P_HOST_PYTHON;
  if (strcmp(name, "Task Environment") == 0) return P_TASKENV;
  static const char gp[] = "/device:GPU:";
  if (strncmp(name, gp, sizeof gp - 1) == 0) {
    /* An optional '-' and digits to the end, nothing else (strtol would
     * take spaces and '+'); any such n that is no ordinal is refused. */
    const char *d = name + sizeof gp - 1, *q = d + (*d == '-');
    uint64_t v = 0;
    int over = 0;
    for (; *q >= '0' && *q <= '9'; q++) {
      over |= v > (UINT64_MAX - 9) / 10;
      v = v * 10 + (uint64_t)(*q - '0');
    }
    if (*q || q == d + (*d == '-')) return P_OTHER;
    if (*d == '-' || over || v > TBE__DEVICE_MAX) return P_GPU_BAD;
    *gpu = (int32_t)v;
    return P_GPU;
  }
  return P_OTHER;
}

int tbe__xs_load_metadata(xs_state *s, const XPlane *p) {
  s->nsmd = p->n_stat_metadata;
  s->nemd = p->n_event_metadata;
  s->smd = tbe__calloc(s->a, s->nsmd ? s->nsmd : 1, sizeof *s->smd);
  s->emd = tbe__calloc(s->a, s->nemd ? s->nemd : 1, sizeof *s->emd);
  if (!s->smd || !s->emd) return TBE_ENOMEM;
  int rc = tbe__map_reserve(&s->smap, s->nsmd);
  if (!rc) rc = tbe__map_reserve(&s->emap, s->nemd);
  if (rc) return rc;
  static const XStatMetadata empty_smd = TENSORFLOW__PROFILER__XSTAT_METADATA__INIT;
  static const XEventMetadata empty_emd = TENSORFLOW__PROFILER__XEVENT_METADATA__INIT;
  for (size_t i = 0; i < s->nsmd; i++) {
    const Tensorflow__Profiler__XPlane__StatMetadataEntry *e = p->stat_metadata[i];
    const XStatMetadata *md = e->value ? e->value : &empty_smd;
    s->smd[i].md = md;
    s->smd[i].kind = classify_stat(md->name);
    s->smd[i].key = TBE_NONE;
    if ((rc = idmap_put(&s->smap, e->key, (uint32_t)i))) return rc;
  }
  for (size_t i = 0; i < s->nemd; i++) {
    const Tensorflow__Profiler__XPlane__EventMetadataEntry *e = p->event_metadata[i];
    s->emd[i].md = e->value ? e->value : &empty_emd;
    s->emd[i].name = TBE_NONE;
    if ((rc = idmap_put(&s->emap, e->key, (uint32_t)i))) return rc;
  }
  return 0;
}

void tbe__xs_free_metadata(xs_state *s) {
  tbe__free(s->a, s->smd);
  tbe__free(s->a, s->emd);
  s->smd = NULL;
  s->emd = NULL;
  tbe__map_clear(&s->smap);
  tbe__map_clear(&s->emap);
}

/* Our exporter's "tbexport_kernel_metrics" (export_xplane.c): per line
 * "<launches> <n> <metric>=<value> ... <name>"; a line of another shape
 * ends the reading (the stat is ours: nobody else writes it). */
static void kernel_metrics(xs_state *s, const char *p, int32_t dev) {
  tbe_metric_value v[64];
  while (*p) {
    char *end;
    errno = 0;
    unsigned long long launches = strtoull(p, &end, 10);
    if (end == p || *end != ' ' || errno) return;
    unsigned long n = strtoul(end + 1, &end, 10);
    if (*end != ' ' || n > 64) return;
    p = end + 1;
    for (unsigned long i = 0; i < n; i++) {
      const char *eq = strchr(p, '=');
      if (!eq || eq == p || memchr(p, ' ', (size_t)(eq - p))) return;
      v[i].reserved = 0;
      v[i].metric = xs_intern_n(s, p, (size_t)(eq - p));
      v[i].value = strtod(eq + 1, &end);
      if (end == eq + 1 || *end != ' ' || !isfinite(v[i].value)) return;
      p = end + 1;
    }
    const char *nl = strchr(p, '\n');
    if (!nl) return;
    tbe_str name = xs_intern_n(s, p, (size_t)(nl - p));
    if (n && name && tbe_trace_add_kernel_metrics(s->t, name, dev, launches, v, n)) return;
    p = nl + 1;
  }
}

void tbe__xs_plane_device_info(xs_state *s, const XPlane *p, int32_t dev) {
  uint32_t di;
  if (tbe_trace_device(s->t, dev, &di)) return;
  tbe_device *d = &s->t->devices[di];
  for (size_t i = 0; i < p->n_stats; i++) {
    const XStat *st = p->stats[i];
    const smd_cache *c = tbe__xs_stat_md(s, st->metadata_id);
    if (!c) continue;
    const char *n = c->md->name;
    int64_t v = 0;
    int have = tbe__xs_stat_int(st, &v);
    if (strcmp(n, "gpu_device_name") == 0) {
      const char *str = tbe__xs_stat_str(s, st);
      if (str) d->name = tbe__xs_intern(s, str);
    } else if (strcmp(n, "tbexport_kernel_metrics") == 0) {
      const char *str = tbe__xs_stat_str(s, st);
      if (str) kernel_metrics(s, str, dev);
    } else if (!have) {
      continue;
    } else if (strcmp(n, "clock_rate") == 0) {
      d->clock_khz = (int32_t)v;
    } else if (strcmp(n, "core_count") == 0) {
      d->sm_count = (int32_t)v;
    } else if (strcmp(n, "memory_bandwidth") == 0) {
      d->memory_bandwidth = v;
    } else if (strcmp(n, "memory_size") == 0) {
      d->memory_bytes = v;
    } else if (strcmp(n, "compute_cap_major") == 0) {
      d->cc_major = (int32_t)v;
    } else if (strcmp(n, "compute_cap_minor") == 0) {
      d->cc_minor = (int32_t)v;
    }
  }
}

/* Our exporter's "tbexport_track_pids": the tracks whose process is not
 * their plane's process_id (an nsys export of several processes), as
 * space-separated "TID:PID" (host threads) and "DEV/STREAM:PID" (GPU
 * streams). */
int tbe__xs_parse_track_pids(xs_state *s, const char *p) {
  while (*p) {
    char *end;
    errno = 0;
    long long a = strtoll(p, &end, 10), dev = -1;
    if (end == p || errno) return 0; /* not ours after all: ignore the rest */
    if (*end == '/') {
      dev = a;
      p = end + 1;
      a = strtoll(p, &end, 10);
      if (end == p || errno || dev < 0 || dev > INT32_MAX) return 0;
    }
    if (*end != ':') return 0;
    p = end + 1;
    long long pid = strtoll(p, &end, 10);
    if (end == p || (*end && *end != ' ') || errno || pid < 0) return 0;
    p = *end ? end + 1 : end;
    if (s->ntrack_pids == s->cap_track_pids) {
      size_t nc = s->cap_track_pids ? 2 * s->cap_track_pids : 16;
      int64_t(*x)[3] = tbe__realloc(s->a, s->track_pids, s->cap_track_pids * sizeof *x, nc * sizeof *x);
      if (!x) return TBE_ENOMEM;
      s->track_pids = x;
      s->cap_track_pids = nc;
    }
    s->track_pids_sorted = 0;
    s->track_pids[s->ntrack_pids][0] = dev;
    s->track_pids[s->ntrack_pids][1] = a;
    s->track_pids[s->ntrack_pids++][2] = pid;
  }
  return 0;
}

static int cmp_track_pid(const void *x, const void *y) {
  const int64_t *a = x, *b = y;
  for (int k = 0; k < 2; k++)
    if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
  return 0;
}

/* The process of host thread `id` (dev -1) or GPU stream `id` of `dev`:
 * from tbexport_track_pids, else `pid`.  The table is sorted once
 * (stably: the first entry of a key wins, as it did in file order) and
 * searched, so lines times entries is never walked. */
int64_t tbe__xs_track_pid(xs_state *s, int64_t dev, int64_t id, int64_t pid) {
  if (!s->ntrack_pids) return pid;
  if (!s->track_pids_sorted) {
    /* Stable (a bottom-up merge sort): of entries with one key, the first
     * in file order still wins. */
    size_t n = s->ntrack_pids;
    int64_t(*tmp)[3] = tbe__alloc(s->a, n * sizeof *tmp);
    if (tmp) {
      for (size_t w = 1; w < n; w *= 2) { /* bottom-up merge sort: stable */
        for (size_t lo = 0; lo < n; lo += 2 * w) {
          size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
          size_t i = lo, j = mid, k = lo;
          while (i < mid && j < hi)
            memcpy(tmp[k++], cmp_track_pid(s->track_pids[j], s->track_pids[i]) < 0 ? s->track_pids[j++]
                                                                                  : s->track_pids[i++],
                   sizeof *tmp);
          while (i < mid) memcpy(tmp[k++], s->track_pids[i++], sizeof *tmp);
          while (j < hi) memcpy(tmp[k++], s->track_pids[j++], sizeof *tmp);
        }
        memcpy(s->track_pids, tmp, n * sizeof *tmp);
      }
      tbe__free(s->a, tmp);
      s->track_pids_sorted = 1;
    } else {
      for (size_t i = 0; i < s->ntrack_pids; i++) /* no memory: the slow way */
        if (s->track_pids[i][0] == dev && s->track_pids[i][1] == id) return s->track_pids[i][2];
      return pid;
    }
  }
  int64_t key[3] = {dev, id, 0};
  size_t lo = 0, hi = s->ntrack_pids;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_track_pid(s->track_pids[mid], key) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo < s->ntrack_pids && cmp_track_pid(s->track_pids[lo], key) == 0) return s->track_pids[lo][2];
  return pid;
}

/* The plane's process_id stat, or `fallback`. */
int64_t tbe__xs_plane_pid(xs_state *s, const XPlane *p, int64_t fallback) {
  for (size_t i = 0; i < p->n_stats; i++) {
    const smd_cache *c = tbe__xs_stat_md(s, p->stats[i]->metadata_id);
    int64_t v;
    if (c && strcmp(c->md->name, "process_id") == 0 && tbe__xs_stat_int(p->stats[i], &v)) return v;
  }
  return fallback;
}

int tbe__xs_add_step_cand(xs_state *s, step_cand **arr, size_t *n, size_t *cap, int64_t num, int64_t start,
                         int64_t end, tbe_str name, uint32_t track) {
  if (tbe__grow(s->a, (void **)arr, cap, *n + 1, sizeof **arr)) return TBE_ENOMEM;
  (*arr)[(*n)++] = (step_cand){num, start, end, name, track};
  return 0;
}

/* Widens the span of step candidate `group` (by group_id) to [start, end). */
int tbe__xs_add_group(xs_state *s, int64_t group, int64_t start, int64_t end) {
  uint32_t gi = tbe__xs_idmap_get(&s->gmap, group);
  if (gi != TBE_NONE) {
    step_cand *g = &s->groups[gi];
    if (start < g->start) g->start = start;
    if (end > g->end) g->end = end;
    return 0;
  }
  int rc = tbe__xs_add_step_cand(s, &s->groups, &s->ngroups, &s->cap_groups, group, start, end, 0, TBE_NONE);
  if (!rc) rc = idmap_put(&s->gmap, group, (uint32_t)(s->ngroups - 1));
  return rc;
}

static const char *line_name(const XLine *o) {
  return o->display_name && *o->display_name ? o->display_name : o->name;
}

static const XPlane *sort_plane; /* qsort has no context argument here */

static int cmp_line(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  int c = strcmp(line_name(sort_plane->lines[a]), line_name(sort_plane->lines[b]));
  return c ? c : (a > b) - (a < b);
}

/* The id of the first line (in file order) named exactly name[0..n), or
 * `dflt`: for "<thread>/NVTX" lines of other producers.  The plane's
 * lines are sorted by name once, so every NVTX line costs a binary search,
 * not a walk over all lines. */
int64_t tbe__xs_line_named(xs_state *s, const XPlane *p, const char *name, size_t n, int64_t dflt) {
  if (!s->lorder) {
    s->lorder = tbe__alloc(s->a, (p->n_lines ? p->n_lines : 1) * sizeof *s->lorder);
    if (!s->lorder) return dflt; /* without memory: the thread stays the line's own */
    s->nlorder = 0;
    for (size_t k = 0; k < p->n_lines; k++)
      if (line_name(p->lines[k])) s->lorder[s->nlorder++] = (uint32_t)k;
    sort_plane = p;
    qsort(s->lorder, s->nlorder, sizeof *s->lorder, cmp_line);
  }
  size_t lo = 0, hi = s->nlorder;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const char *on = line_name(p->lines[s->lorder[mid]]);
    int c = strncmp(on, name, n);
    if (c == 0 && on[n]) c = 1; /* longer than name */
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo < s->nlorder) {
    const char *on = line_name(p->lines[s->lorder[lo]]);
    if (strncmp(on, name, n) == 0 && !on[n]) return p->lines[s->lorder[lo]]->id;
  }
  return dflt;
}
