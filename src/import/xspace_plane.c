/* xspace_plane.c: one decoded XSpace plane into the trace model.
 *
 * import_plane reads as its outline: the plane's process (plane_setup),
 * then per line its track and absolute start (line_setup), then per event
 * (import_event) its name and times, its stats (take_stat: the ones that
 * select the kind or fill details; the rest become args), its kind by the
 * plane's conventions (gpu_kind, host_kind, fallback_kind), our exporter's
 * word on it (our_kind) and its args (event_args).  XLA's detail strings
 * ("key:value ..." in kernel_details, memcpy_details, Memset_details) are
 * parsed here too.  Mapping: the essay of xspace.c. */
#include "import/xspace_int.h"

/* ---- detail strings ---- */

static tbe_mem_kind mem_kind_of(const char *s, size_t n) {
  static const char *const names[] = {"unknown", "pageable", "pinned", "device",
                                      "array", "managed", "device_static", "managed_static"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0) return (tbe_mem_kind)i;
  return TBE_MEM_UNKNOWN;
}

/* Calls fn(ctx, key, klen, val, vlen) for each "key:value" token separated
 * by spaces or newlines. */
typedef void (*kv_fn)(void *ctx, const char *k, size_t kl, const char *v, size_t vl);
static void each_kv(const char *s, kv_fn fn, void *ctx) {
  while (*s) {
    while (*s == ' ' || *s == '\n' || *s == '\t') s++;
    const char *tok = s;
    while (*s && *s != ' ' && *s != '\n' && *s != '\t') s++;
    const char *colon = memchr(tok, ':', (size_t)(s - tok));
    if (colon) fn(ctx, tok, (size_t)(colon - tok), colon + 1, (size_t)(s - colon - 1));
  }
}

static int key_is(const char *k, size_t kl, const char *want) {
  return strlen(want) == kl && memcmp(k, want, kl) == 0;
}

static uint64_t parse_u64(const char *v, size_t vl) {
  uint64_t r = 0;
  for (size_t i = 0; i < vl && v[i] >= '0' && v[i] <= '9'; i++) r = r * 10 + (uint64_t)(v[i] - '0');
  return r;
}

static void parse_dims(const char *v, size_t vl, uint32_t d[3]) {
  d[0] = d[1] = d[2] = 1;
  size_t i = 0;
  for (int k = 0; k < 3 && i < vl; k++) {
    size_t j = i;
    while (j < vl && v[j] != ',') j++;
    if (j > i) d[k] = (uint32_t)parse_u64(v + i, j - i);
    i = j + 1;
  }
}

static void kernel_kv(void *ctx, const char *k, size_t kl, const char *v, size_t vl) {
  tbe_kernel *kd = ctx;
  if (key_is(k, kl, "regs")) kd->registers = (uint16_t)parse_u64(v, vl);
  else if (key_is(k, kl, "static_shared")) kd->static_shared = (uint32_t)parse_u64(v, vl);
  else if (key_is(k, kl, "dynamic_shared")) kd->dynamic_shared = (uint32_t)parse_u64(v, vl);
  else if (key_is(k, kl, "grid")) parse_dims(v, vl, kd->grid);
  else if (key_is(k, kl, "block")) parse_dims(v, vl, kd->block);
  else if (key_is(k, kl, "occ_pct")) {
    char buf[32];
    size_t n = vl < sizeof buf - 1 ? vl : sizeof buf - 1;
    memcpy(buf, v, n);
    buf[n] = 0;
    kd->occupancy_pct = strtof(buf, NULL);
  }
}

typedef struct copy_parse {
  tbe_memcpy *m;
  int have_dest;
  const char *bad_dest; /* a dest that is no ordinal (refused), its length */
  size_t bad_len;
} copy_parse;

/* A device ordinal's text: 1 with *dev (-1 for "-1", none), 0 when it is
 * no ordinal (importer.h). */
static int parse_ordinal(const char *v, size_t vl, int32_t *dev) {
  if (vl == 2 && v[0] == '-' && v[1] == '1') return *dev = -1, 1;
  uint64_t r = 0;
  size_t i = 0;
  for (; i < vl && v[i] >= '0' && v[i] <= '9' && r <= TBE__DEVICE_MAX; i++)
    r = r * 10 + (uint64_t)(v[i] - '0');
  if (i == 0 || i < vl || r > TBE__DEVICE_MAX) return 0;
  *dev = (int32_t)r;
  return 1;
}

static void memcpy_kv(void *ctx, const char *k, size_t kl, const char *v, size_t vl) {
  copy_parse *cp = ctx;
  if (key_is(k, kl, "kind_src")) cp->m->src_kind = (uint8_t)mem_kind_of(v, vl);
  else if (key_is(k, kl, "kind_dst")) cp->m->dst_kind = (uint8_t)mem_kind_of(v, vl);
  else if (key_is(k, kl, "size") || key_is(k, kl, "num_bytes")) cp->m->bytes = parse_u64(v, vl);
  else if (key_is(k, kl, "dest") && vl) {
    if (parse_ordinal(v, vl, &cp->m->dst_device)) cp->have_dest = 1;
    else if (!cp->bad_dest) cp->bad_dest = v, cp->bad_len = vl;
  } else if (key_is(k, kl, "async")) cp->m->async = parse_u64(v, vl) != 0;
}

static void memset_kv(void *ctx, const char *k, size_t kl, const char *v, size_t vl) {
  tbe_memset *m = ctx;
  if (key_is(k, kl, "kind")) m->mem_kind = (uint8_t)mem_kind_of(v, vl);
  else if (key_is(k, kl, "num_bytes") || key_is(k, kl, "size")) m->bytes = parse_u64(v, vl);
  else if (key_is(k, kl, "async")) m->async = parse_u64(v, vl) != 0;
}

static int is_host_kind(uint8_t k) {
  return k == TBE_MEM_PAGEABLE || k == TBE_MEM_PINNED || k == TBE_MEM_MANAGED ||
         k == TBE_MEM_MANAGED_STATIC;
}

/* Copy direction from the XLA event name, else from the memory kinds. */
static uint8_t copy_kind_of(const char *name, const tbe_memcpy *m, int ours) {
  static const struct {
    const char *n;
    tbe_copy_kind k;
  } tab[] = {{"MemcpyH2D", TBE_COPY_HTOD}, {"MemcpyD2H", TBE_COPY_DTOH}, {"MemcpyD2D", TBE_COPY_DTOD},
             {"MemcpyP2P", TBE_COPY_PTOP}, {"MemcpyHToD", TBE_COPY_HTOD}, {"MemcpyDToH", TBE_COPY_DTOH},
             {"MemcpyDToD", TBE_COPY_DTOD}, {"MemcpyPToP", TBE_COPY_PTOP}, {"MemcpyH2H", TBE_COPY_HTOH},
             {"MemcpyHToH", TBE_COPY_HTOH}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strncmp(name, tab[i].n, strlen(tab[i].n)) == 0) return (uint8_t)tab[i].k;
  /* Ours for what "MemcpyOther" and the kinds would not say
   * (export_xplane.c memcpy_xla_name): "MemcpyUnknown", "MemcpyHtoA", ... */
  for (int k = TBE_COPY_UNKNOWN; k <= TBE_COPY_PTOP && ours; k++) {
    const char *kn = tbe_copy_kind_name((tbe_copy_kind)k);
    if (strncmp(name, "Memcpy", 6) == 0 && strcmp(name + 6, kn) == 0) return (uint8_t)k;
  }
  int sh = is_host_kind(m->src_kind), dh = is_host_kind(m->dst_kind);
  int sd = m->src_kind == TBE_MEM_DEVICE || m->src_kind == TBE_MEM_DEVICE_STATIC;
  int dd = m->dst_kind == TBE_MEM_DEVICE || m->dst_kind == TBE_MEM_DEVICE_STATIC;
  if (sh && dd) return TBE_COPY_HTOD;
  if (sd && dh) return TBE_COPY_DTOH;
  if (sd && dd) return TBE_COPY_DTOD;
  if (sh && dh) return TBE_COPY_HTOH;
  if (m->src_kind == TBE_MEM_ARRAY && dd) return TBE_COPY_ATOD;
  if (sd && m->dst_kind == TBE_MEM_ARRAY) return TBE_COPY_DTOA;
  return TBE_COPY_UNKNOWN;
}

/* "$$<n>" or "<n>" -> n. */
static uint16_t parse_context(const char *s) {
  while (*s == '$') s++;
  return (uint16_t)strtoul(s, NULL, 10);
}

/* A time out of the model's range: refused with the field named and the
 * plane's offset (the decoded message keeps no offsets of its own). */
static int time_fail(xs_state *s, size_t line, size_t event, const char *field) {
  char where[64] = "";
  if (event != SIZE_MAX) snprintf(where, sizeof where, " event %zu", event);
  return tbe__import_fail(s->err, TBE_ECORRUPT, s->path, s->plane_off, 0, 0,
                          "XSpace plane %zu line %zu%s: %s is out of range (more than 146 years "
                          "from 1970)",
                          s->plane_idx, line, where, field);
}

/* A device ordinal that is none (importer.h): refused like a time. */
static int device_fail(xs_state *s, size_t line, size_t event, const char *field, const char *v,
                       size_t n) {
  char msg[192];
  tbe__import_device_msg(msg, sizeof msg, field, 1, v, n);
  return tbe__import_fail(s->err, TBE_ECORRUPT, s->path, s->plane_off, 0, 0,
                          "XSpace plane %zu line %zu event %zu: %s", s->plane_idx, line, event, msg);
}

/* ---- one plane ---- */

/* The plane and line being imported, as import_event sees them. */
typedef struct xs_line {
  const XPlane *p;
  plane_class pc;
  int is_host;
  int32_t gpu;
  int64_t pid;
  tbe_str plane_cat;   /* the process name of an other plane: its events' cat */
  size_t li;
  uint32_t track;
  int64_t base;        /* the line's start, absolute */
  int step_line;       /* our exporter's line of step markers: steps only */
  int nvtx_line;       /* "<thread>/NVTX" */
  int is_counter_line; /* "_counters_" */
  int gpu_counters;    /* ... on a GPU plane: the GPU's metric tracks */
} xs_line;

/* What the stats of one event say: they select its kind and fill its
 * details; `consumed` (bits 1 << S_*) are the ones dropped from its args. */
typedef struct xs_stats {
  const char *kdet, *cdet, *mdet, *ctx, *step_name, *sync_kind, *nvtx_dom;
  const char *adet; /* memalloc_details or MemFree_details (adet_free) */
  int adet_free, have_devtype;
  int tbe_kind; /* our exporter's tbexport_kind, or -1 */
  tbe_str tbe_cat;
  int have_occ, have_step, have_group, have_corr, have_value;
  int have_nvtx, have_addr, have_nbytes, have_devord;
  int src_tf_op;    /* our file: the event's tf_op is its source's (tbexport_src_tf_op) */
  int64_t devord;   /* device_ordinal as read: checked when it makes an allocation */
  size_t ei;        /* the event's index in its line, for messages */
  double occ, value;
  int64_t step_num, group;
  tbe_nvtx nv;
  tbe_memory mem;
  tbe_sync sy;
  tbe_kernel kd;
  tbe_memcpy md;
  tbe_memset ms;
  tbe_counter cv;
  const void *detail;
  uint32_t consumed;
  const char *leftover[3]; /* details not made visible: kept as args */
} xs_stats;

/* The process of the plane's events; returns 1 when the plane has nothing
 * to import. */
static int plane_setup(xs_state *s, const XPlane *p, size_t pidx, xs_line *l) {
  tbe_trace *t = s->t;
  uint32_t pi;
  int rc;
  if (l->is_host) {
    l->pid = s->host_pid; /* all host planes are one process */
    if ((rc = tbe_trace_process(t, l->pid, &pi))) return rc;
    if (!t->processes[pi].name) t->processes[pi].name = tbe__xs_intern(s, "/host:CPU");
  } else if (l->pc == P_GPU) {
    l->pid = tbe__xs_plane_pid(s, p, s->have_host_pid ? s->host_pid : -1);
    tbe__xs_plane_device_info(s, p, l->gpu);
    if (l->pid >= 0 && p->n_lines) {
      if ((rc = tbe_trace_process(t, l->pid, &pi))) return rc;
    }
  } else {
    if (!p->n_lines) return 1; /* metadata-only planes carry no events */
    l->pid = XS_SYNTH_PID + 1 + (int64_t)pidx;
    if ((rc = tbe_trace_process(t, l->pid, &pi))) return rc;
    t->processes[pi].name = tbe__xs_intern(s, p->name);
    l->plane_cat = t->processes[pi].name;
  }
  return l->pc == P_TASKENV && !p->n_lines;
}

/* The line's track (and its name) and its absolute start. */
static int line_setup(xs_state *s, xs_line *l, const XLine *ln) {
  tbe_trace *t = s->t;
  const char *lname = ln->display_name && *ln->display_name ? ln->display_name : ln->name;
  if (!lname) lname = "";
  l->step_line = l->is_host && ln->id == XS_STEP_LINE && strcmp(lname, "Step markers") == 0;
  /* "<thread>/NVTX" lines (XLA, our exporter) hold NVTX of that thread. */
  l->nvtx_line = 0;
  int64_t tid = ln->id;
  size_t ll = strlen(lname);
  if (l->is_host && ll > 5 && strcmp(lname + ll - 5, "/NVTX") == 0) {
    l->nvtx_line = 1;
    /* Ours name the thread by the line id (export_xplane.c). */
    if (s->ours && ln->id >= (int64_t)1 << 32 && ln->id < (int64_t)2 << 32)
      tid = ln->id - ((int64_t)1 << 32);
    else if (s->ours && ln->id >= (int64_t)4 << 32 && ln->id < (int64_t)5 << 32)
      tid = ((int64_t)2 << 32) + (ln->id - ((int64_t)4 << 32));
    if (!s->ours) tid = tbe__xs_line_named(s, l->p, lname, ll - 5, tid);
  }
  int rc = 0;
  l->track = 0;
  l->gpu_counters = 0;
  if (l->step_line) {
    rc = 0;
  } else if (l->is_host) {
    int64_t tpid = tbe__xs_track_pid(s, -1, tid, l->pid);
    uint32_t tpi;
    if (tpid != l->pid && (rc = tbe_trace_process(t, tpid, &tpi))) return rc;
    rc = tbe_trace_track(t, TBE_TRACK_THREAD, tpid, tid, -1, &l->track);
  } else if (l->pc == P_GPU && strcmp(lname, "_counters_") == 0) {
    /* a GPU's hardware metrics: each event on its metric's track
     * (import_event), the line itself no track */
    l->is_counter_line = 1;
    l->gpu_counters = 1;
  } else if (l->pc == P_GPU) {
    int64_t spid = tbe__xs_track_pid(s, l->gpu, ln->id, l->pid);
    uint32_t spi;
    if (spid != l->pid && (rc = tbe_trace_process(t, spid, &spi))) return rc;
    rc = tbe_trace_track(t, TBE_TRACK_STREAM, spid, ln->id, l->gpu, &l->track);
  } else {
    rc = tbe_trace_track(t, TBE_TRACK_OTHER, l->pid, ln->id, -1, &l->track);
  }
  if (rc) return rc;
  if (!l->step_line && !l->gpu_counters && *lname && !l->nvtx_line && !t->tracks[l->track].name)
    t->tracks[l->track].name = tbe__xs_intern(s, lname);
  l->is_counter_line = strcmp(lname, "_counters_") == 0;

  /* Times outside the model's range are refused, naming the field
   * (common/checked.h); in range, every sum below fits int64. */
  l->base = ln->timestamp_ns;
  if (!tbe__time_ok(l->base)) return time_fail(s, l->li, SIZE_MAX, "line timestamp_ns");
  if (l->base < XS_EPOCH_MIN_NS) {
    if (s->start_ns) {
      l->base += s->start_ns;
      if (!tbe__time_ok(l->base))
        return time_fail(s, l->li, SIZE_MAX, "line timestamp_ns + profile_start_time");
    } else if (!s->warned_relative) {
      s->warned_relative = 1;
      tbe_trace_warn(t, "XSpace line times are relative to the session and the file has no "
                        "profile_start_time: times are not wall-clock");
    }
  }
  return 0;
}

/* One stat of kind `kind`: into the event or `x`.  Returns 1 when it is
 * consumed here (never an arg), 0 when it also becomes an arg. */
static int take_stat(xs_state *s, const xs_line *l, const XStat *st, int kind, tbe_event *ev,
                     xs_stats *x) {
  int64_t iv;
  switch (kind) {
    case S_CORRELATION:
      if (!tbe__xs_stat_int(st, &iv)) return 0;
      ev->correlation = (uint64_t)iv;
      x->have_corr = 1;
      return 1;
    case S_EXTERNAL_ID:
      if (!tbe__xs_stat_int(st, &iv)) return 0;
      ev->external_id = (uint64_t)iv;
      return 1;
    case S_KERNEL_DETAILS: return (x->kdet = tbe__xs_stat_str(s, st)) != NULL;
    case S_MEMCPY_DETAILS: return (x->cdet = tbe__xs_stat_str(s, st)) != NULL;
    case S_MEMSET_DETAILS: return (x->mdet = tbe__xs_stat_str(s, st)) != NULL;
    case S_CONTEXT: x->ctx = tbe__xs_stat_str(s, st); return 0;
    case S_OCCUPANCY: x->have_occ = tbe__xs_stat_double(st, &x->occ); return 0;
    case S_STEP_NUM: x->have_step = tbe__xs_stat_int(st, &x->step_num); return 0;
    case S_GROUP_ID: x->have_group = tbe__xs_stat_int(st, &x->group); return 0;
    case S_STEP_NAME: x->step_name = tbe__xs_stat_str(s, st); return 0;
    case S_SYNC_KIND: x->sync_kind = tbe__xs_stat_str(s, st); return 0;
    case S_SYNC_STREAM:
      if (tbe__xs_stat_int(st, &iv)) x->sy.stream = iv;
      return 0;
    case S_CUDA_EVENT:
      if (tbe__xs_stat_int(st, &iv)) x->sy.cuda_event = (uint64_t)iv;
      return 0;
    case S_NVTX_DOMAIN:
      x->nvtx_dom = tbe__xs_stat_str(s, st);
      x->have_nvtx = 1;
      return 0;
    case S_NVTX_COLOR:
      if (tbe__xs_stat_int(st, &iv)) x->nv.color = (uint32_t)iv;
      x->have_nvtx = 1;
      return 0;
    case S_NVTX_CATEGORY:
      if (tbe__xs_stat_int(st, &iv)) x->nv.category = (uint32_t)iv;
      x->have_nvtx = 1;
      return 0;
    case S_NVTX_PAYLOAD:
      x->have_nvtx = 1;
      if (st->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE) {
        x->nv.payload_type = TBE_PAYLOAD_INT64;
        x->nv.payload.i = st->int64_value;
      } else if (st->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE) {
        x->nv.payload_type = TBE_PAYLOAD_UINT64;
        x->nv.payload.u = st->uint64_value;
      } else if (st->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE) {
        x->nv.payload_type = TBE_PAYLOAD_DOUBLE;
        x->nv.payload.d = st->double_value;
      }
      return 0;
    case S_VALUE: x->have_value = tbe__xs_stat_double(st, &x->value); return 0;
    case S_TBE_KIND: {
      const char *kn = tbe__xs_stat_str(s, st);
      for (int q = 0; kn && q < TBE_EV__COUNT; q++)
        if (strcmp(kn, tbe_event_kind_name((tbe_event_kind)q)) == 0) x->tbe_kind = q;
      return 1;
    }
    case S_ASYNC:
      if (!tbe__xs_stat_int(st, &iv) || !iv) return 0;
      ev->flags |= TBE_EVF_ASYNC;
      return 1;
    case S_TBE_CAT: {
      const char *cn = tbe__xs_stat_str(s, st);
      if (cn) x->tbe_cat = tbe__xs_intern(s, cn);
      return 1;
    }
    /* Our exporter writes a tf_op of its own on operators and their GPU work
     * (export_xplane_event.c) and marks the events whose tf_op came from
     * their source: in our files only those are args. */
    case S_SRC_TF_OP:
      if (!s->ours) return 0;
      x->src_tf_op = 1;
      return 1;
    case S_TF_OP: return s->ours && !x->src_tf_op;
    case S_ADDR:
      if ((x->have_addr = tbe__xs_stat_int(st, &iv))) x->mem.addr = (uint64_t)iv;
      return 0;
    case S_NUM_BYTES:
      if ((x->have_nbytes = tbe__xs_stat_int(st, &iv))) x->mem.bytes = iv;
      return 0;
    case S_TOTAL_ALLOC:
      if (tbe__xs_stat_int(st, &iv)) x->mem.total_allocated = iv;
      return 0;
    case S_TOTAL_RES:
      if (tbe__xs_stat_int(st, &iv)) x->mem.total_reserved = iv;
      return 0;
    case S_DEV_ORD:
      x->have_devord = tbe__xs_stat_int(st, &x->devord);
      return 0;
    case S_MEMALLOC_DETAILS:
    case S_MEMFREE_DETAILS:
      x->adet = tbe__xs_stat_str(s, st);
      x->adet_free = kind == S_MEMFREE_DETAILS;
      return 1;
    case S_MEM_SOURCE: {
      const char *v = tbe__xs_stat_str(s, st);
      if (v && strcmp(v, "allocator") == 0) x->mem.source = TBE_MEMSRC_ALLOCATOR;
      else if (v && strcmp(v, "cuda") == 0) x->mem.source = TBE_MEMSRC_CUDA;
      return 1;
    }
    case S_MEM_DEVTYPE:
      if (tbe__xs_stat_int(st, &iv) && iv >= INT32_MIN && iv <= INT32_MAX) {
        x->mem.device_type = (int32_t)iv;
        x->have_devtype = 1;
      }
      return 1;
    case S_MEM_KIND: {
      const char *v = tbe__xs_stat_str(s, st);
      if (v) x->mem.mem_kind = (uint8_t)mem_kind_of(v, strlen(v));
      return 1;
    }
    default:
      if (l->is_counter_line && !x->have_value) x->have_value = tbe__xs_stat_double(st, &x->value);
      return 0;
  }
}

/* A sync kind's name (tbe_sync_kind_name) into `sy`. */
static void sync_kind_of(const char *name, tbe_sync *sy) {
  for (int k = 0; name && k <= TBE_SYNC_CONTEXT; k++)
    if (strcmp(name, tbe_sync_kind_name((tbe_sync_kind)k)) == 0) sy->sync_kind = (uint8_t)k;
}

#define XS_NVTX_STATS (1u << S_NVTX_DOMAIN | 1u << S_NVTX_COLOR | 1u << S_NVTX_CATEGORY | \
                       1u << S_NVTX_PAYLOAD)
#define XS_MEMORY_STATS (1u << S_ADDR | 1u << S_NUM_BYTES | 1u << S_TOTAL_ALLOC | \
                         1u << S_TOTAL_RES | 1u << S_DEV_ORD)
#define XS_SYNC_STATS (1u << S_SYNC_KIND | 1u << S_SYNC_STREAM | 1u << S_CUDA_EVENT)

typedef struct memdet_parse {
  tbe_memory *m;
  uint64_t bytes;
} memdet_parse;

static void memdet_kv(void *ctx, const char *k, size_t kl, const char *v, size_t vl) {
  memdet_parse *mp = ctx;
  if (key_is(k, kl, "kind")) mp->m->mem_kind = (uint8_t)mem_kind_of(v, vl);
  else if (key_is(k, kl, "num_bytes")) mp->bytes = parse_u64(v, vl);
}

/* An allocation or free: XLA's memalloc_details / MemFree_details (the
 * CUDA driver's, "kind:<k> num_bytes:<n>", on a GPU's line: the device is
 * the plane's unless a device_ordinal says), or an instant with our
 * stats (addr, num_bytes, device_ordinal; tbexport_mem_source, _mem_kind,
 * _device_type).
 * Returns 1 when it is one (ev and x set), 0, or an error (a device
 * ordinal that is none). */
static int memory_kind(xs_state *s, const xs_line *l, tbe_event *ev, xs_stats *x) {
  if (x->adet) {
    memdet_parse mp = {&x->mem, 0};
    each_kv(x->adet, memdet_kv, &mp);
    x->mem.source = TBE_MEMSRC_CUDA;
    if (!x->have_nbytes) {
      int64_t n = mp.bytes > INT64_MAX ? INT64_MAX : (int64_t)mp.bytes;
      x->mem.bytes = x->adet_free ? -n : n;
      x->have_nbytes = 1;
    }
    if (!x->have_devord) x->devord = l->pc == P_GPU ? l->gpu : -1, x->have_devord = 1;
  } else if (!(x->have_addr && x->have_nbytes && x->have_devord && ev->dur_ns == 0)) {
    return 0;
  }
  if (!tbe__device_ok(x->devord) && x->devord != -1) { /* -1: a host allocation */
    char v[24];
    int n = snprintf(v, sizeof v, "%lld", (long long)x->devord);
    return device_fail(s, l->li, x->ei, "stat device_ordinal", v, (size_t)n);
  }
  x->mem.device = (int32_t)x->devord;
  /* Kineto's Device Type: 1 (CUDA) for a GPU's, 0 (CPU) for the host's,
   * unless the file says (tbexport_device_type: where ours differs) */
  if (!x->have_devtype) x->mem.device_type = x->mem.device >= 0 ? 1 : 0;
  ev->kind = TBE_EV_MEMORY;
  x->detail = &x->mem;
  x->consumed = XS_MEMORY_STATS;
  return 1;
}

/* An event on a GPU's line: an allocation, a sync, kernel, copy or memset
 * by its stats and name (else left for the fallback). */
static int gpu_kind(xs_state *s, const xs_line *l, const char *name, tbe_event *ev, xs_stats *x) {
  uint16_t context = x->ctx ? parse_context(x->ctx) : 0;
  int memcpy_name = strncmp(name, "Memcpy", 6) == 0, memset_name = strncmp(name, "Memset", 6) == 0;
  int rc = memory_kind(s, l, ev, x);
  if (rc) return rc < 0 ? rc : 0;
  if (x->sync_kind) {
    sync_kind_of(x->sync_kind, &x->sy);
    ev->kind = TBE_EV_SYNC;
    x->detail = &x->sy;
    x->consumed = XS_SYNC_STATS;
  } else if (x->kdet || (x->have_corr && !x->cdet && !x->mdet && !memcpy_name && !memset_name)) {
    tbe_kernel *kd = &x->kd;
    memset(kd, 0, sizeof *kd);
    kd->grid[0] = kd->grid[1] = kd->grid[2] = 1;
    kd->block[0] = kd->block[1] = kd->block[2] = 1;
    kd->occupancy_pct = -1;
    kd->blocks_per_sm = -1;
    kd->warps_per_sm = -1;
    kd->queued_ns = -1;
    kd->context = context;
    if (x->kdet) each_kv(x->kdet, kernel_kv, kd);
    if (kd->occupancy_pct < 0 && x->have_occ) kd->occupancy_pct = (float)x->occ;
    ev->kind = TBE_EV_KERNEL;
    x->detail = kd;
    x->leftover[0] = NULL;
    x->consumed = 1u << S_OCCUPANCY | 1u << S_CONTEXT;
  } else if (x->cdet || memcpy_name) {
    tbe_memcpy *md = &x->md;
    memset(md, 0, sizeof *md);
    md->src_device = l->gpu;
    md->dst_device = l->gpu;
    md->context = context;
    copy_parse cp = {md, 0, NULL, 0};
    if (x->cdet) each_kv(x->cdet, memcpy_kv, &cp);
    if (cp.bad_dest) return device_fail(s, l->li, x->ei, "memcpy_details dest", cp.bad_dest, cp.bad_len);
    md->copy_kind = copy_kind_of(name, md, s->ours);
    ev->kind = TBE_EV_MEMCPY;
    x->detail = md;
    x->leftover[1] = NULL;
    x->consumed = 1u << S_CONTEXT;
  } else if (x->mdet || memset_name) {
    memset(&x->ms, 0, sizeof x->ms);
    x->ms.context = context;
    if (x->mdet) each_kv(x->mdet, memset_kv, &x->ms);
    ev->kind = TBE_EV_MEMSET;
    x->detail = &x->ms;
    x->leftover[2] = NULL;
    x->consumed = 1u << S_CONTEXT;
  }
  return 0;
}

/* An event on a host line: API call, NVTX, memory, Python or CPU op; and
 * the step it marks. */
static int host_kind(xs_state *s, const xs_line *l, const char *name, tbe_event *ev, xs_stats *x) {
  tbe_trace *t = s->t;
  int rc;
  if (x->have_corr) {
    ev->kind = strncmp(name, "cuda", 4) == 0 ? TBE_EV_RUNTIME : TBE_EV_DRIVER;
    x->consumed = 1u << S_DEVICE_ID;
  } else if (l->pc == P_HOST_NVTX || l->nvtx_line || x->have_nvtx) {
    ev->kind = ev->dur_ns ? TBE_EV_NVTX_RANGE : TBE_EV_NVTX_MARK;
    /* "NVTX:<domain>:<message>" (XLA, our exporter): name = message. */
    if (strncmp(name, "NVTX:", 5) == 0) {
      const char *dom = name + 5, *colon = strchr(dom, ':');
      if (colon) {
        if (colon > dom && (rc = tbe_trace_intern(t, dom, (size_t)(colon - dom), &x->nv.domain)))
          return rc;
        if ((rc = tbe_trace_intern(t, colon + 1, strlen(colon + 1), &ev->name))) return rc;
      }
    }
    if (x->nvtx_dom && *x->nvtx_dom) x->nv.domain = tbe__xs_intern(s, x->nvtx_dom);
    x->detail = &x->nv;
    x->consumed = XS_NVTX_STATS;
  } else if ((rc = memory_kind(s, l, ev, x))) {
    if (rc < 0) return rc;
  } else if (l->pc == P_HOST_PYTHON) {
    ev->kind = TBE_EV_PYTHON;
  } else {
    ev->kind = ev->dur_ns ? TBE_EV_CPU_OP : TBE_EV_INSTANT;
  }
  int64_t end = ev->start_ns + (ev->dur_ns > 0 ? ev->dur_ns : 0);
  if (x->have_step) {
    x->consumed |= 1u << S_STEP_NUM | 1u << S_ROOT;
    return tbe__xs_add_step_cand(s, &s->steps, &s->nsteps, &s->cap_steps, x->step_num, ev->start_ns, end,
                         x->step_name ? tbe__xs_intern(s, x->step_name) : ev->name, l->track);
  }
  if (x->have_group) return tbe__xs_add_group(s, x->group, ev->start_ns, end);
  return 0;
}

/* Not classified by its plane's conventions (kind 0 is KERNEL, set only
 * with a detail): a counter, a GPU annotation, a generic range or an
 * instant. */
static void fallback_kind(const xs_line *l, tbe_event *ev, xs_stats *x) {
  if ((l->is_counter_line || ev->dur_ns == 0) && x->have_value) {
    x->cv.value = x->value;
    ev->kind = TBE_EV_COUNTER;
    x->detail = &x->cv;
    x->consumed |= 1u << S_VALUE;
  } else if (l->pc == P_GPU && ev->dur_ns) {
    /* A range on a stream that is no GPU activity: an annotation
     * projected onto the stream (our exporter writes those). */
    ev->kind = TBE_EV_GPU_ANNOTATION;
  } else {
    ev->kind = ev->dur_ns ? TBE_EV_GENERIC : TBE_EV_INSTANT;
  }
}

/* Our exporter's word on a host event's kind wins over the conventions
 * (export_xplane.c writes it where they would be wrong). */
static void our_kind(tbe_event *ev, xs_stats *x) {
  ev->kind = (uint8_t)x->tbe_kind;
  switch (x->tbe_kind) {
    case TBE_EV_NVTX_RANGE:
    case TBE_EV_NVTX_MARK:
      if (!x->detail) x->detail = &x->nv;
      x->consumed |= XS_NVTX_STATS;
      break;
    case TBE_EV_MEMORY:
      x->detail = &x->mem;
      x->consumed |= XS_MEMORY_STATS;
      break;
    case TBE_EV_SYNC:
      sync_kind_of(x->sync_kind, &x->sy);
      x->detail = &x->sy;
      x->consumed |= XS_SYNC_STATS;
      break;
    case TBE_EV_COUNTER:
      x->cv.value = x->have_value ? x->value : 0;
      x->detail = &x->cv;
      x->consumed |= 1u << S_VALUE;
      break;
    default: x->detail = NULL; break;
  }
}

/* The event's args: the stats not consumed, details of a kind not made
 * visible, the metadata's long name, num_occurrences. */
static int event_args(xs_state *s, const emd_cache *em, int64_t num_occ, const xs_stats *x) {
  size_t w = 0;
  int rc;
  for (size_t k = 0; k < s->nargs; k++)
    if (!(x->consumed & (1u << s->akind[k]))) {
      s->args[w] = s->args[k];
      s->akind[w++] = s->akind[k];
    }
  s->nargs = w;
  static const char *const det_keys[3] = {"kernel_details", "memcpy_details", "Memset_details"};
  for (int k = 0; k < 3; k++)
    if (x->leftover[k] && (rc = tbe__xs_push_str_arg(s, det_keys[k], x->leftover[k]))) return rc;
  if (em && em->long_name) {
    tbe_arg a = {.key = tbe__xs_intern(s, "long_name"), .type = TBE_ARG_STR, .v.s = em->long_name};
    if ((rc = tbe__xs_push_raw_arg(s, &a))) return rc;
  }
  if (num_occ >= 0) {
    tbe_arg a = {.key = tbe__xs_intern(s, "num_occurrences"), .type = TBE_ARG_INT, .v.i = num_occ};
    if ((rc = tbe__xs_push_raw_arg(s, &a))) return rc;
  }
  return 0;
}

/* The event's name from its metadata (display_name first; the full name
 * kept as long_name when it differs). */
static emd_cache *event_name(xs_state *s, const XEvent *xe, tbe_event *ev) {
  uint32_t mi = tbe__xs_idmap_get(&s->emap, xe->metadata_id);
  emd_cache *em = mi == TBE_NONE ? NULL : &s->emd[mi];
  if (!em) {
    s->unknown_md++;
    return NULL;
  }
  if (em->name == TBE_NONE) {
    const XEventMetadata *md = em->md;
    int has_disp = md->display_name && *md->display_name;
    em->name = tbe__xs_intern(s, has_disp ? md->display_name : md->name);
    em->long_name = has_disp && strcmp(md->display_name, md->name) != 0 ? tbe__xs_intern(s, md->name) : 0;
  }
  ev->name = em->name;
  return em;
}

/* One event of line `l`: name, times, stats (metadata's first, then the
 * event's), kind and details, args. */
static int import_event(xs_state *s, const xs_line *l, const XEvent *xe, size_t ei) {
  tbe_trace *t = s->t;
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  ev.track = l->track;
  emd_cache *em = event_name(s, xe, &ev);
  int rc;
  if (l->gpu_counters) {
    if (!ev.name) return 0; /* a counter needs its metric's name */
    if ((rc = tbe_trace_metric_track(t, l->pid, l->gpu, ev.name, &ev.track))) return rc;
  }
  const char *name = tbe_trace_str(t, ev.name);
  int64_t num_occ = -1;
  if (xe->data_case == TENSORFLOW__PROFILER__XEVENT__DATA_NUM_OCCURRENCES) {
    ev.start_ns = l->base;
    num_occ = xe->num_occurrences;
  } else {
    ev.start_ns = l->base + tbe__ps_floor_ns(xe->offset_ps);
    if (!tbe__time_ok(ev.start_ns)) return time_fail(s, l->li, ei, "offset_ps");
  }
  ev.dur_ns = xe->duration_ps >= 0 ? tbe__ps_to_ns(xe->duration_ps) : -1;
  if (ev.dur_ns > 0 && !tbe__span_ok(ev.start_ns, ev.dur_ns))
    return time_fail(s, l->li, ei, "duration_ps");
  if (t->nevents - s->ev_first >= s->o->max_events) {
    char what[96];
    snprintf(what, sizeof what, "more events than the limit (XSpace plane %zu, line %zu)",
             s->plane_idx, l->li);
    return tbe__import_limit(s->err, s->path, s->plane_off, TBE__LIM_EVENTS, s->o, what);
  }

  xs_stats x;
  memset(&x, 0, sizeof x);
  x.tbe_kind = -1;
  x.occ = -1;
  x.mem.total_allocated = x.mem.total_reserved = -1;
  x.mem.device = -1;
  x.sy.stream = -1;
  x.ei = ei;
  s->nargs = 0;
  size_t nmd = em ? em->md->n_stats : 0;
  for (size_t k = 0; k < nmd + xe->n_stats; k++) {
    const XStat *st = k < nmd ? em->md->stats[k] : xe->stats[k - nmd];
    uint32_t ci = tbe__xs_idmap_get(&s->smap, st->metadata_id);
    smd_cache *c = ci == TBE_NONE ? NULL : &s->smd[ci];
    int kind = c ? c->kind : S_OTHER;
    if (!take_stat(s, l, st, kind, &ev, &x) && (rc = tbe__xs_push_arg(s, c, st, kind))) return rc;
  }
  if (l->step_line) {
    if (!x.have_step) return 0;
    return tbe__xs_add_step_cand(s, &s->steps, &s->nsteps, &s->cap_steps, x.step_num, ev.start_ns,
                         ev.start_ns + (ev.dur_ns > 0 ? ev.dur_ns : 0),
                         x.step_name ? tbe__xs_intern(s, x.step_name) : ev.name, TBE_NONE);
  }

  /* What the event is, and which stats that consumes. */
  x.leftover[0] = x.kdet, x.leftover[1] = x.cdet, x.leftover[2] = x.mdet;
  rc = 0;
  if (l->pc == P_GPU) rc = gpu_kind(s, l, name, &ev, &x);
  else if (l->is_host) rc = host_kind(s, l, name, &ev, &x);
  else ev.cat = l->plane_cat;
  if (rc) return rc;
  if (!ev.kind && !x.detail) fallback_kind(l, &ev, &x);
  if (l->is_host && x.tbe_kind >= 0 && x.tbe_kind != ev.kind &&
      !tbe_event_kind_is_gpu(x.tbe_kind))
    our_kind(&ev, &x);
  if (l->is_host && x.tbe_cat) ev.cat = x.tbe_cat;
  if ((rc = event_args(s, em, num_occ, &x))) return rc;
  if (ev.kind == TBE_EV_COUNTER || ev.kind == TBE_EV_INSTANT || ev.kind == TBE_EV_NVTX_MARK ||
      ev.kind == TBE_EV_MEMORY)
    ev.dur_ns = ev.dur_ns < 0 ? 0 : ev.dur_ns;
  return tbe_trace_add_event(t, &ev, x.detail, s->args, s->nargs, NULL);
}

int tbe__xs_import_plane(xs_state *s, const XPlane *p, size_t pidx) {
  xs_line l;
  memset(&l, 0, sizeof l);
  l.p = p;
  l.gpu = -1;
  tbe__free(s->a, s->lorder);
  s->lorder = NULL;
  l.pc = tbe__xs_classify_plane(p->name, &l.gpu);
  if (l.pc == P_GPU_BAD) {
    const char *num = p->name + strlen("/device:GPU:");
    char msg[192];
    tbe__import_device_msg(msg, sizeof msg, "name /device:GPU:<n>", 0, num, strlen(num));
    return tbe__import_fail(s->err, TBE_ECORRUPT, s->path, s->plane_off, 0, 0, "XSpace plane %zu: %s",
                            s->plane_idx, msg);
  }
  int rc = tbe__xs_load_metadata(s, p);
  if (rc) return rc;
  l.is_host = l.pc == P_HOST || l.pc == P_HOST_NVTX || l.pc == P_HOST_PYTHON;
  if ((rc = plane_setup(s, p, pidx, &l))) return rc < 0 ? rc : 0;
  for (size_t li = 0; li < p->n_lines; li++) {
    const XLine *ln = p->lines[li];
    l.li = li;
    if ((rc = line_setup(s, &l, ln))) return rc;
    for (size_t ei = 0; ei < ln->n_events; ei++)
      if ((rc = import_event(s, &l, ln->events[ei], ei))) return rc;
  }
  return tbe_trace_error(s->t);
}