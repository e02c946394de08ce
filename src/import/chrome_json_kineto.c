/* chrome_json_kineto.c: Kineto's (and XLA's) events mapped onto the model.
 *
 * The model side, on the calling thread: one applied record (`c->e`, a
 * view into the batch) becomes model events by finish_event, with the
 * mapping the essay of chrome_json.c lists: kind from cat (or from a GPU
 * pid and XLA's stats), typed details from the args it consumes, the rest
 * kept as generic args; tracks (host threads, GPU streams) through a small
 * cache; B events wait on a per-track stack for their E; flows are paired
 * by (id, cat); M metadata and C counters.  Nothing here reads the input
 * or yajl's state. */
#include <math.h>

#include "import/chrome_json_text.h"

/* ---- ids, tracks, GPU pids ---- */

static int id_value(cj *c, const xid *x, int64_t *out) {
  if (!x->is_str) {
    *out = x->num;
    return 0;
  }
  const char *s = sp(&c->e, x->str);
  int64_t v;
  if (tbe__cj_parse_int(s, x->str.len, &v, NULL, NULL) == 0) {
    *out = v;
    return 0;
  }
  /* A string pid/tid gets a small negative id of its own (-2, -3, ...)
   * and keeps the string as the process or track name. */
  tbe_str id;
  int rc = tbe__cj_intern_text(c, s, x->str.len, &id);
  if (rc) return rc;
  const uint32_t *k = tbe__map_get(&c->smap, id);
  if (k) {
    *out = c->strpids[*k].id;
    return 0;
  }
  void *p = c->strpids;
  if (tbe__grow(c->a, &p, &c->cap_strpids, c->nstrpids + 1, sizeof *c->strpids)) return TBE_ENOMEM;
  c->strpids = p;
  c->strpids[c->nstrpids].s = id;
  c->strpids[c->nstrpids].id = -2 - (int64_t)c->nstrpids;
  *out = c->strpids[c->nstrpids].id;
  return tbe__map_set(&c->smap, id, (uint32_t)c->nstrpids++);
}

/* A string pid's name: ids are -2 - index (id_value). */
static tbe_str strpid_name(const cj *c, int64_t id) {
  if (id > -2 || (uint64_t)(-2 - id) >= c->nstrpids) return TBE_NONE;
  return c->strpids[-2 - id].s;
}

int tbe__cj_gpu_of_pid(const cj *c, int64_t pid, int32_t *dev) {
  const uint32_t *k = tbe__map_get(&c->gmap, (uint64_t)pid);
  if (!k) return 0;
  *dev = c->gpus[*k].device;
  return 1;
}

static int add_gpu_pid(cj *c, int64_t pid, int32_t device) {
  int32_t d;
  if (tbe__cj_gpu_of_pid(c, pid, &d)) return 0;
  void *p = c->gpus;
  if (tbe__grow(c->a, &p, &c->cap_gpus, c->ngpus + 1, sizeof *c->gpus)) return TBE_ENOMEM;
  c->gpus = p;
  c->gpus[c->ngpus].pid = pid;
  c->gpus[c->ngpus].device = device;
  return tbe__map_set(&c->gmap, (uint64_t)pid, (uint32_t)c->ngpus++);
}

int tbe__cj_get_track(cj *c, uint32_t type, int64_t pid, int64_t tid, int32_t device,
                     uint32_t *out) {
  uint64_t hsh = (uint64_t)pid * 0x9E3779B97F4A7C15ull ^ (uint64_t)tid * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)(uint32_t)device * 31 ^ type;
  size_t slot = (size_t)(hsh >> 58);
  if (c->tc[slot].valid && c->tc[slot].pid == pid && c->tc[slot].tid == tid &&
      c->tc[slot].device == device && c->tc[slot].type == type) {
    *out = c->tc[slot].track;
    return 0;
  }
  int rc = tbe_trace_track(c->t, (tbe_track_type)type, pid, tid, device, out);
  if (rc) return rc;
  c->tc[slot].pid = pid;
  c->tc[slot].tid = tid;
  c->tc[slot].device = device;
  c->tc[slot].type = type;
  c->tc[slot].track = *out;
  c->tc[slot].valid = 1;
  return 0;
}

/* The host track of the scratch event. */
static int host_track(cj *c, uint32_t *out) {
  int64_t pid = 0, tid = 0;
  int rc = id_value(c, &c->e.pid, &pid);
  if (!rc) rc = id_value(c, &c->e.tid, &tid);
  if (rc) return rc;
  uint32_t type = (c->e.pid.is_str || c->e.tid.is_str || pid < 0 || tid < 0) ? TBE_TRACK_OTHER
                                                                            : TBE_TRACK_THREAD;
  rc = tbe__cj_get_track(c, type, pid, tid, -1, out);
  if (rc) return rc;
  if (c->e.tid.is_str && tid < 0 && c->t->tracks[*out].name == 0) {
    tbe_str nm = strpid_name(c, tid);
    if (nm != TBE_NONE) c->t->tracks[*out].name = nm;
  }
  return 0;
}

static int ensure_device(cj *c, int32_t device) {
  if (c->have_last_dev && c->last_dev_track_dev == (uint32_t)device) return 0;
  uint32_t idx;
  int rc = tbe_trace_device(c->t, device, &idx);
  if (rc) return rc;
  c->have_last_dev = 1;
  c->last_dev_track_dev = (uint32_t)device;
  return 0;
}

/* ---- device ordinals ----
 *
 * Every GPU ordinal read from the input is checked before it is narrowed
 * to the model's int32_t (importer.h): args.device, a GPU event's pid
 * standing for its GPU, the "GPU <n>" and "/device:GPU:<n>" names of GPU
 * pids, deviceProperties ids (chrome_json_parse.c), a copy's ends and an
 * allocation's device.  Out of 0..TBE__DEVICE_MAX the import is refused
 * naming the field and the event's byte.  Where Kineto writes -1 for
 * "none" it maps to none: a copy's unknown end and a host allocation's
 * Device Id stay -1, and args.device -1 means the event names no GPU of
 * its own, so the pid's GPU is used as when the arg is absent. */

/* Refuses the ordinal `value` of `field`: the consumer's error at the
 * event's byte.  Returns TBE_EPARSE. */
static int device_fail(cj *c, const char *field, int none_ok, const char *value, size_t n) {
  char msg[192];
  tbe__import_device_msg(msg, sizeof msg, field, none_ok, value, n);
  tbe__cj_cfail_msg(c, c->e.start_off, TBE_EPARSE, "event field %s", msg);
  return TBE_EPARSE;
}

/* Arg `a` as a GPU ordinal: 1 with *dev (-1 only when `none_ok` and the
 * value is -1), 0 when it is no number, or TBE_EPARSE (refused). */
static int arg_device(cj *c, const sarg *a, const char *field, int none_ok, int32_t *dev) {
  int64_t v;
  int r = tbe__cj_arg_whole(&c->e, a, &v);
  if (r == 0) return 0;
  if (r > 0 && (tbe__device_ok(v) || (none_ok && v == -1))) {
    *dev = (int32_t)v;
    return 1;
  }
  return device_fail(c, field, none_ok, sp(&c->e, a->val), a->val.len);
}

/* Older Kineto wrote GPU rows as "tid": "stream 7" (and names them so). */
static int stream_num(const scratch *e, const xid *x, int64_t *v) {
  if (!x->is_str || x->str.len < 8) return 0;
  const char *s = sp(e, x->str);
  if (memcmp(s, "stream ", 7) != 0) return 0;
  size_t n = 7;
  while (n < x->str.len && s[n] >= '0' && s[n] <= '9') n++;
  return n > 7 && tbe__cj_parse_int(s + 7, n - 7, v, NULL, NULL) == 0;
}

/* The stream track of a GPU event: device from args.device (given by the
 * caller as `dev`, < 0 if absent) or the pid, stream from args.stream or
 * the tid. */
static int stream_track(cj *c, int64_t dev, int have_dev, int64_t stream, int have_stream,
                        uint32_t *out) {
  int64_t pid = 0, tid = 0;
  int rc = id_value(c, &c->e.pid, &pid);
  if (!rc && !have_stream && stream_num(&c->e, &c->e.tid, &stream)) have_stream = 1;
  if (!rc && !have_stream) rc = id_value(c, &c->e.tid, &tid);
  if (rc) return rc;
  int32_t device;
  if (have_dev) {
    device = (int32_t)dev; /* checked by arg_device */
    if (!c->e.pid.is_str && pid >= 0 && (rc = add_gpu_pid(c, pid, device))) return rc;
  } else if (!tbe__cj_gpu_of_pid(c, pid, &device)) {
    /* The pid stands for the GPU (Kineto's GPU rows): a number must be an
     * ordinal; a pid named by text (no number) is GPU 0. */
    int64_t v;
    int named = c->e.pid.is_str &&
                tbe__cj_parse_int(sp(&c->e, c->e.pid.str), c->e.pid.str.len, &v, NULL, NULL) != 0;
    if (!named && !tbe__device_ok(pid)) {
      char txt[24];
      int n = snprintf(txt, sizeof txt, "%lld", (long long)pid);
      return device_fail(c, "pid (the GPU of an event without args.device)", 0, txt, (size_t)n);
    }
    device = named ? 0 : (int32_t)pid;
    if (!c->e.pid.is_str && (rc = add_gpu_pid(c, pid, device))) return rc;
  }
  if ((rc = ensure_device(c, device))) return rc;
  return tbe__cj_get_track(c, TBE_TRACK_STREAM, -1, have_stream ? stream : tid, device, out);
}

/* ---- building events ---- */

typedef struct build {
  tbe_event ev;
  union {
    tbe_kernel k;
    tbe_memcpy mc;
    tbe_memset ms;
    tbe_sync sy;
    tbe_memory mem;
    tbe_nvtx nv;
  } d;
  int has_detail;
  size_t ntargs;
} build;

static int push_targ(cj *c, build *b, const tbe_arg *a) {
  if (b->ntargs >= UINT16_MAX) {
    c->n_args_cut++;
    return 0;
  }
  void *p = c->targs;
  if (tbe__grow(c->a, &p, &c->cap_targs, b->ntargs + 1, sizeof *c->targs)) return TBE_ENOMEM;
  c->targs = p;
  c->targs[b->ntargs++] = *a;
  return 0;
}

/* Adds scratch arg `a` as a generic model arg. */
static int generic_arg(cj *c, build *b, const sarg *a) {
  const scratch *e = &c->e;
  tbe_arg ta;
  memset(&ta, 0, sizeof ta);
  int rc = intern_pre(c, sp(e, a->key), a->key.len, a->kh, a->kplain, &ta.key);
  if (rc) return rc;
  const char *v = sp(e, a->val);
  if (a->type == V_NUM && a->num != NUM_NONE) { /* parsed by prepass */
    if (a->num == NUM_INT) {
      ta.type = a->is_u ? TBE_ARG_UINT : TBE_ARG_INT;
      if (a->is_u) ta.v.u = a->nv.u;
      else ta.v.i = a->nv.i;
    } else if (a->num == NUM_DBL) {
      ta.type = TBE_ARG_DOUBLE;
      ta.v.d = a->nv.d;
    } else {
      ta.type = TBE_ARG_JSON;
      if ((rc = intern_pre(c, v, a->val.len, a->nv.vh, a->vplain, &ta.v.s))) return rc;
    }
  } else if (a->type == V_NUM) {
    int64_t i;
    uint64_t u;
    int is_u;
    if (tbe__cj_parse_int(v, a->val.len, &i, &u, &is_u) == 0) {
      if (is_u) {
        ta.type = TBE_ARG_UINT;
        ta.v.u = u;
      } else {
        ta.type = TBE_ARG_INT;
        ta.v.i = i;
      }
    } else {
      double d;
      if (tbe__cj_parse_double(v, a->val.len, &d) == 0) {
        ta.type = TBE_ARG_DOUBLE;
        ta.v.d = d;
      } else {
        /* Too long for a double's text or beyond integer ranges: keep the
         * number verbatim. */
        ta.type = TBE_ARG_JSON;
        if ((rc = tbe__cj_intern_text(c, v, a->val.len, &ta.v.s))) return rc;
      }
    }
  } else {
    ta.type = a->type == V_STR ? TBE_ARG_STR : TBE_ARG_JSON;
    if ((rc = intern_pre(c, v, a->val.len, a->nv.vh, a->vplain, &ta.v.s))) return rc;
  }
  return push_targ(c, b, &ta);
}

#define KEY_IS(a, lit) span_is(&c->e, (a)->key, lit, sizeof(lit) - 1)

/* Memory kind words as Kineto and XLA write them. */
static uint8_t mem_kind_word(const char *s, size_t n) {
  static const struct {
    const char *w;
    uint8_t k;
  } words[] = {{"Pageable", TBE_MEM_PAGEABLE}, {"pageable", TBE_MEM_PAGEABLE},
               {"Pinned", TBE_MEM_PINNED},     {"pinned", TBE_MEM_PINNED},
               {"Device", TBE_MEM_DEVICE},     {"device", TBE_MEM_DEVICE},
               {"Array", TBE_MEM_ARRAY},       {"array", TBE_MEM_ARRAY},
               {"Managed", TBE_MEM_MANAGED},   {"managed", TBE_MEM_MANAGED},
               {"Device Static", TBE_MEM_DEVICE_STATIC},
               {"Managed Static", TBE_MEM_MANAGED_STATIC}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strlen(words[i].w) == n && memcmp(words[i].w, s, n) == 0) return words[i].k;
  return TBE_MEM_UNKNOWN;
}

static uint8_t copy_kind_word(const char *s, size_t n) {
  static const struct {
    const char *w;
    uint8_t k;
  } words[] = {{"HtoD", TBE_COPY_HTOD}, {"DtoH", TBE_COPY_DTOH}, {"HtoA", TBE_COPY_HTOA},
               {"AtoH", TBE_COPY_ATOH}, {"AtoA", TBE_COPY_ATOA}, {"AtoD", TBE_COPY_ATOD},
               {"DtoA", TBE_COPY_DTOA}, {"DtoD", TBE_COPY_DTOD}, {"HtoH", TBE_COPY_HTOH},
               {"PtoP", TBE_COPY_PTOP}, {"H2D", TBE_COPY_HTOD},  {"D2H", TBE_COPY_DTOH},
               {"D2D", TBE_COPY_DTOD},  {"H2H", TBE_COPY_HTOH},  {"P2P", TBE_COPY_PTOP}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strlen(words[i].w) == n && memcmp(words[i].w, s, n) == 0) return words[i].k;
  return TBE_COPY_UNKNOWN;
}

/* "Memcpy HtoD (Pageable -> Device)", "MemcpyH2D", "Memset (Device)". */
static void parse_copy_name(const char *s, size_t n, uint8_t *copy, uint8_t *src, uint8_t *dst) {
  size_t i = 0;
  if (n >= 6 && (memcmp(s, "Memcpy", 6) == 0 || memcmp(s, "Memset", 6) == 0)) i = 6;
  while (i < n && s[i] == ' ') i++;
  size_t w = i;
  while (w < n && s[w] != ' ' && s[w] != '(') w++;
  if (copy && w > i) *copy = copy_kind_word(s + i, w - i);
  const char *lp = memchr(s, '(', n);
  if (!lp) return;
  const char *end = s + n;
  const char *rp = memchr(lp, ')', (size_t)(end - lp));
  if (!rp) return;
  const char *a0 = lp + 1;
  const char *arrow = NULL;
  for (const char *q = a0; q + 1 < rp; q++)
    if (q[0] == '-' && q[1] == '>') {
      arrow = q;
      break;
    }
  if (arrow) {
    const char *a1 = arrow;
    while (a1 > a0 && a1[-1] == ' ') a1--;
    const char *b0 = arrow + 2;
    while (b0 < rp && *b0 == ' ') b0++;
    if (src) *src = mem_kind_word(a0, (size_t)(a1 - a0));
    if (dst) *dst = mem_kind_word(b0, (size_t)(rp - b0));
  } else if (src) {
    *src = mem_kind_word(a0, (size_t)(rp - a0));
  }
}

/* XLA's "key:value key:value" detail strings. */
static int detail_field(const char *s, size_t n, const char *key, const char **v, size_t *vn) {
  size_t kl = strlen(key);
  size_t i = 0;
  while (i < n) {
    while (i < n && s[i] == ' ') i++;
    size_t j = i;
    while (j < n && s[j] != ' ') j++;
    if (j - i > kl && memcmp(s + i, key, kl) == 0 && s[i + kl] == ':') {
      *v = s + i + kl + 1;
      *vn = j - i - kl - 1;
      return 1;
    }
    i = j;
  }
  return 0;
}

static int64_t detail_int(const char *s, size_t n, const char *key, int64_t dflt) {
  const char *v;
  size_t vn;
  int64_t x;
  if (detail_field(s, n, key, &v, &vn) && tbe__cj_parse_int(v, vn, &x, NULL, NULL) == 0) return x;
  return dflt;
}

enum { CK_NONE, CK_KERNEL, CK_MEMCPY, CK_MEMSET, CK_ANNOT, CK_SYNC, CK_RUNTIME, CK_DRIVER,
       CK_CPU_OP, CK_USER, CK_PYTHON, CK_OVERHEAD, CK_NVTX };

static int cat_class(const scratch *e) {
  if (!(e->have & F_CAT)) return CK_NONE;
  span s = e->cat;
  switch (s.len) {
    case 4:
      if (SPAN_IS(e, s, "nvtx")) return CK_NVTX; /* our exporter's NVTX ranges and marks */
      break;
    case 6:
      if (SPAN_IS(e, s, "kernel")) return CK_KERNEL;
      if (SPAN_IS(e, s, "cpu_op")) return CK_CPU_OP;
      break;
    case 8:
      if (SPAN_IS(e, s, "overhead")) return CK_OVERHEAD;
      break;
    case 9:
      if (SPAN_IS(e, s, "cuda_sync")) return CK_SYNC;
      break;
    case 10:
      if (SPAN_IS(e, s, "gpu_memcpy")) return CK_MEMCPY;
      if (SPAN_IS(e, s, "gpu_memset")) return CK_MEMSET;
      break;
    case 11:
      if (SPAN_IS(e, s, "cuda_driver")) return CK_DRIVER;
      break;
    case 12:
      if (SPAN_IS(e, s, "cuda_runtime")) return CK_RUNTIME;
      break;
    case 15:
      if (SPAN_IS(e, s, "user_annotation")) return CK_USER;
      if (SPAN_IS(e, s, "python_function")) return CK_PYTHON;
      break;
    case 19:
      if (SPAN_IS(e, s, "gpu_user_annotation")) return CK_ANNOT;
      break;
  }
  return CK_NONE;
}

static const sarg *find_arg(const cj *c, const char *key) {
  size_t kl = strlen(key);
  for (size_t i = 0; i < c->e.nargs; i++)
    if (span_is(&c->e, c->e.args[i].key, key, kl)) return &c->e.args[i];
  return NULL;
}

/* What build_event learns of an event before and while reading its args. */
typedef struct evclass {
  int kind;
  int ck;      /* cat_class, CK_NONE when the kind is not Kineto's cat's */
  int gpu;     /* a GPU kind, on a stream track */
  int xla;     /* classified from XLA-style stats */
  int mapped;  /* a kind whose args "External id" and "correlation" are typed */
  int64_t dev, stream;
  int have_dev, have_stream;
} evclass;

/* The kind of a duration (X/B) or instant event: from Kineto's cat, else
 * from the pid (a GPU's: XLA's *_details stats make kernels, copies,
 * memsets) or XLA's correlation_id (a driver call). */
static int classify(cj *c, int instant, evclass *k) {
  const scratch *e = &c->e;
  if (instant) {
    /* "[cuda memory]": ours, the events of a process's other memory
     * source (model/memory.c), which Kineto's clients leave alone */
    int mem = (e->have & F_NAME) &&
              (SPAN_IS(e, e->name, "[memory]") || SPAN_IS(e, e->name, "[cuda memory]"));
    k->kind = mem ? TBE_EV_MEMORY : k->ck == CK_NVTX ? TBE_EV_NVTX_MARK : TBE_EV_INSTANT;
    if (k->ck != CK_NVTX) k->ck = CK_NONE;
    return 0;
  }
  switch (k->ck) {
    case CK_KERNEL: k->kind = TBE_EV_KERNEL, k->gpu = 1; return 0;
    case CK_MEMCPY: k->kind = TBE_EV_MEMCPY, k->gpu = 1; return 0;
    case CK_MEMSET: k->kind = TBE_EV_MEMSET, k->gpu = 1; return 0;
    case CK_ANNOT: k->kind = TBE_EV_GPU_ANNOTATION, k->gpu = 1; return 0;
    case CK_SYNC: k->kind = TBE_EV_SYNC, k->gpu = 1; return 0;
    case CK_RUNTIME: k->kind = TBE_EV_RUNTIME; return 0;
    case CK_DRIVER: k->kind = TBE_EV_DRIVER; return 0;
    case CK_CPU_OP: k->kind = TBE_EV_CPU_OP; return 0;
    case CK_USER: k->kind = TBE_EV_USER_ANNOTATION; return 0;
    case CK_PYTHON: k->kind = TBE_EV_PYTHON; return 0;
    case CK_OVERHEAD: k->kind = TBE_EV_OVERHEAD; return 0;
    case CK_NVTX: k->kind = TBE_EV_NVTX_RANGE; return 0;
  }
  k->kind = TBE_EV_GENERIC;
  int64_t pid = 0;
  int32_t dev;
  int rc = id_value(c, &e->pid, &pid);
  if (rc) return rc;
  if (!e->pid.is_str && tbe__cj_gpu_of_pid(c, pid, &dev)) {
    k->gpu = 1;
    if (find_arg(c, "kernel_details")) k->kind = TBE_EV_KERNEL, k->xla = 1;
    else if (find_arg(c, "memcpy_details")) k->kind = TBE_EV_MEMCPY, k->xla = 1;
    else if (find_arg(c, "Memset_details")) k->kind = TBE_EV_MEMSET, k->xla = 1;
  } else if (find_arg(c, "correlation_id") && find_arg(c, "device_id")) {
    k->kind = TBE_EV_DRIVER, k->xla = 1;
  }
  return 0;
}

/* The details' defaults (-1 for "not known"), and what the name of a copy
 * or memset says. */
static void detail_defaults(const scratch *e, build *b, int kind) {
  switch (kind) {
    case TBE_EV_KERNEL:
      b->d.k.queued_ns = -1;
      b->d.k.occupancy_pct = -1;
      b->d.k.blocks_per_sm = -1;
      b->d.k.warps_per_sm = -1;
      b->has_detail = 1;
      break;
    case TBE_EV_MEMCPY:
      b->d.mc.src_device = b->d.mc.dst_device = -1;
      if (e->have & F_NAME)
        parse_copy_name(sp(e, e->name), e->name.len, &b->d.mc.copy_kind, &b->d.mc.src_kind,
                        &b->d.mc.dst_kind);
      b->has_detail = 1;
      break;
    case TBE_EV_MEMSET:
      if (e->have & F_NAME) parse_copy_name(sp(e, e->name), e->name.len, NULL, &b->d.ms.mem_kind, NULL);
      b->has_detail = 1;
      break;
    case TBE_EV_SYNC:
      b->d.sy.stream = -1;
      b->has_detail = 1;
      break;
    case TBE_EV_MEMORY:
      b->d.mem.total_allocated = -1;
      b->d.mem.total_reserved = -1;
      b->d.mem.device = -1;
      b->d.mem.source = TBE_MEMSRC_ALLOCATOR; /* Kineto's [memory]: the framework's allocator */
      b->has_detail = 1;
      break;
    case TBE_EV_NVTX_RANGE:
    case TBE_EV_NVTX_MARK: b->has_detail = 1; break;
  }
}

/* The args of a kernel that its details hold; returns 1 when `a` is used. */
static int kernel_arg(cj *c, build *b, const sarg *a, int xla) {
  const scratch *e = &c->e;
  int64_t v;
  double d;
  if (xla) {
    if (!KEY_IS(a, "kernel_details") || a->type != V_STR) return 0;
    const char *s = sp(e, a->val), *f;
    size_t n = a->val.len, fn;
    b->d.k.registers = (uint16_t)detail_int(s, n, "regs", 0);
    b->d.k.static_shared = (uint32_t)detail_int(s, n, "static_shared", 0);
    b->d.k.dynamic_shared = (uint32_t)detail_int(s, n, "dynamic_shared", 0);
    if (detail_field(s, n, "grid", &f, &fn)) tbe__cj_parse_dim3(f, fn, b->d.k.grid);
    if (detail_field(s, n, "block", &f, &fn)) tbe__cj_parse_dim3(f, fn, b->d.k.block);
    int64_t occ = detail_int(s, n, "occ_pct", -1);
    if (occ >= 0) b->d.k.occupancy_pct = (float)occ;
    return 1;
  }
  if (KEY_IS(a, "queued") && tbe__cj_arg_int(e, a, &v) && v == 0) return 1;
  if (KEY_IS(a, "context") && tbe__cj_arg_int(e, a, &v)) return b->d.k.context = (uint16_t)v, 1;
  if (KEY_IS(a, "registers per thread") && tbe__cj_arg_int(e, a, &v))
    return b->d.k.registers = (uint16_t)v, 1;
  if (KEY_IS(a, "shared memory") && tbe__cj_arg_int(e, a, &v))
    return b->d.k.static_shared = (uint32_t)v, 1; /* static + dynamic: see build_event */
  if (KEY_IS(a, "dynamic shared memory") && tbe__cj_arg_int(e, a, &v))
    return b->d.k.dynamic_shared = (uint32_t)v, 1;
  if (KEY_IS(a, "blocks per SM") && tbe__cj_arg_double(e, a, &d))
    return b->d.k.blocks_per_sm = (float)d, 1;
  if (KEY_IS(a, "warps per SM") && tbe__cj_arg_double(e, a, &d))
    return b->d.k.warps_per_sm = (float)d, 1;
  if (KEY_IS(a, "est. achieved occupancy %") && tbe__cj_arg_double(e, a, &d))
    return b->d.k.occupancy_pct = (float)d, 1;
  if (KEY_IS(a, "grid") && a->type == V_JSON)
    return tbe__cj_parse_dim3(sp(e, a->val), a->val.len, b->d.k.grid), 1;
  if (KEY_IS(a, "block") && a->type == V_JSON)
    return tbe__cj_parse_dim3(sp(e, a->val), a->val.len, b->d.k.block), 1;
  if (KEY_IS(a, "graph id") || KEY_IS(a, "graph node id")) b->ev.flags |= TBE_EVF_GRAPH; /* kept */
  /* Our outputs' view of the range profiler's figures of the kernel's name
   * (export_json_event.c), made again from tbexportKernelMetrics. */
  if (KEY_IS(a, "range profiler") && a->type == V_JSON) return 1;
  return 0;
}

/* A copy's args: 1 when `a` is used, 0, or TBE_EPARSE (a device refused). */
static int memcpy_arg(cj *c, build *b, const sarg *a, int xla) {
  const scratch *e = &c->e;
  int64_t v;
  if (xla) {
    if (!KEY_IS(a, "memcpy_details") || a->type != V_STR) return 0;
    const char *s = sp(e, a->val), *f;
    size_t n = a->val.len, fn;
    b->d.mc.bytes = (uint64_t)detail_int(s, n, "size", 0);
    if (detail_field(s, n, "kind_src", &f, &fn)) b->d.mc.src_kind = mem_kind_word(f, fn);
    if (detail_field(s, n, "kind_dst", &f, &fn)) b->d.mc.dst_kind = mem_kind_word(f, fn);
    if (detail_field(s, n, "dest", &f, &fn)) {
      if (tbe__cj_parse_int(f, fn, &v, NULL, NULL) != 0 || !(tbe__device_ok(v) || v == -1))
        return device_fail(c, "args.memcpy_details dest", 1, f, fn);
      b->d.mc.dst_device = (int32_t)v;
    }
    b->d.mc.async = (uint8_t)(detail_int(s, n, "async", 0) != 0);
    return 1;
  }
  if (KEY_IS(a, "bytes") && tbe__cj_arg_int(e, a, &v)) return b->d.mc.bytes = (uint64_t)v, 1;
  if (KEY_IS(a, "context") && tbe__cj_arg_int(e, a, &v)) return b->d.mc.context = (uint16_t)v, 1;
  if (KEY_IS(a, "fromDevice")) return arg_device(c, a, "args.fromDevice", 1, &b->d.mc.src_device);
  if (KEY_IS(a, "toDevice")) return arg_device(c, a, "args.toDevice", 1, &b->d.mc.dst_device);
  return KEY_IS(a, "memory bandwidth (GB/s)"); /* derived from bytes and duration */
}

static int memset_arg(cj *c, build *b, const sarg *a, int xla) {
  const scratch *e = &c->e;
  int64_t v;
  if (xla) {
    if (!KEY_IS(a, "Memset_details") || a->type != V_STR) return 0;
    const char *s = sp(e, a->val), *f;
    size_t n = a->val.len, fn;
    b->d.ms.bytes = (uint64_t)detail_int(s, n, "num_bytes", 0);
    if (detail_field(s, n, "kind", &f, &fn)) b->d.ms.mem_kind = mem_kind_word(f, fn);
    b->d.ms.async = (uint8_t)(detail_int(s, n, "async", 0) != 0);
    return 1;
  }
  if (KEY_IS(a, "bytes") && tbe__cj_arg_int(e, a, &v)) return b->d.ms.bytes = (uint64_t)v, 1;
  if (KEY_IS(a, "context") && tbe__cj_arg_int(e, a, &v)) return b->d.ms.context = (uint16_t)v, 1;
  return KEY_IS(a, "memory bandwidth (GB/s)");
}

/* An allocation's args: 1 when `a` is used, 0, or TBE_EPARSE (refused). */
static int memory_arg(cj *c, build *b, const sarg *a) {
  const scratch *e = &c->e;
  int64_t v;
  if (KEY_IS(a, "Addr") && tbe__cj_arg_int(e, a, &v)) return b->d.mem.addr = (uint64_t)v, 1;
  if (KEY_IS(a, "Bytes") && tbe__cj_arg_int(e, a, &v)) return b->d.mem.bytes = v, 1;
  if (KEY_IS(a, "Total Allocated") && tbe__cj_arg_int(e, a, &v))
    return b->d.mem.total_allocated = v, 1;
  if (KEY_IS(a, "Total Reserved") && tbe__cj_arg_int(e, a, &v))
    return b->d.mem.total_reserved = v, 1;
  if (KEY_IS(a, "Device Id")) return arg_device(c, a, "args.Device Id", 1, &b->d.mem.device);
  /* Ours (export_json_event.c): who reported it, and the memory's kind. */
  if (KEY_IS(a, "Source") && a->type == V_STR) {
    const char *w = sp(e, a->val);
    size_t n = a->val.len;
    if (n == 4 && memcmp(w, "CUDA", 4) == 0) return b->d.mem.source = TBE_MEMSRC_CUDA, 1;
    if (n == 9 && memcmp(w, "allocator", 9) == 0) return b->d.mem.source = TBE_MEMSRC_ALLOCATOR, 1;
    if (n == 7 && memcmp(w, "unknown", 7) == 0) return b->d.mem.source = TBE_MEMSRC_UNKNOWN, 1;
    return 0;
  }
  if (KEY_IS(a, "Memory Kind") && a->type == V_STR) {
    uint8_t k = mem_kind_word(sp(e, a->val), a->val.len);
    return k ? (b->d.mem.mem_kind = k, 1) : 0;
  }
  if (KEY_IS(a, "Device Type") && tbe__cj_arg_int(e, a, &v)) {
    if (v < INT32_MIN || v > INT32_MAX) { /* the source's enum, narrowed: no such kind */
      tbe__cj_cfail_msg(c, e->start_off, TBE_EPARSE, "event field args.Device Type is out of "
                        "range (a 32-bit kind): %.*s", (int)(a->val.len > 40 ? 40 : a->val.len),
                        sp(e, a->val));
      return TBE_EPARSE;
    }
    return b->d.mem.device_type = (int32_t)v, 1;
  }
  return 0;
}

/* Returns 1 when used, 0, or a negative error (interning the domain). */
static int nvtx_arg(cj *c, build *b, const sarg *a) {
  const scratch *e = &c->e;
  int64_t v;
  if (KEY_IS(a, "domain") && a->type == V_STR) {
    int rc = tbe__cj_intern_text(c, sp(e, a->val), a->val.len, &b->d.nv.domain);
    return rc ? rc : 1;
  }
  if (KEY_IS(a, "color") && tbe__cj_arg_int(e, a, &v)) return b->d.nv.color = (uint32_t)v, 1;
  if (KEY_IS(a, "category") && tbe__cj_arg_int(e, a, &v)) return b->d.nv.category = (uint32_t)v, 1;
  if (KEY_IS(a, "payload") && a->type == V_NUM && a->num == NUM_INT) {
    b->d.nv.payload_type = a->is_u ? TBE_PAYLOAD_UINT64 : TBE_PAYLOAD_INT64;
    if (a->is_u) b->d.nv.payload.u = a->nv.u;
    else b->d.nv.payload.i = a->nv.i;
    return 1;
  }
  if (KEY_IS(a, "payload") && a->type == V_NUM && a->num == NUM_DBL) {
    b->d.nv.payload_type = TBE_PAYLOAD_DOUBLE, b->d.nv.payload.d = a->nv.d;
    return 1;
  }
  return 0;
}

/* One arg: into a typed field of the event, its details or its track
 * (device, stream), else kept as a generic arg. */
static int take_arg(cj *c, build *b, const sarg *a, evclass *k) {
  const scratch *e = &c->e;
  int64_t v;
  int used = 0;
  if (k->mapped && !k->xla) {
    if (KEY_IS(a, "External id") && tbe__cj_arg_int(e, a, &v)) b->ev.external_id = (uint64_t)v, used = 1;
    else if (KEY_IS(a, "correlation") && tbe__cj_arg_int(e, a, &v)) b->ev.correlation = (uint64_t)v, used = 1;
  }
  if (k->xla && KEY_IS(a, "correlation_id") && tbe__cj_arg_int(e, a, &v)) b->ev.correlation = (uint64_t)v, used = 1;
  if (!used && k->gpu && !k->xla) {
    int32_t d;
    int r = KEY_IS(a, "device") ? arg_device(c, a, "args.device", 1, &d) : 0;
    if (r < 0) return r;
    if (r > 0) {
      used = 1;
      if (d >= 0) k->dev = d, k->have_dev = 1; /* -1: none, the pid's GPU */
    } else if (KEY_IS(a, "stream") && tbe__cj_arg_int(e, a, &v)) k->stream = v, k->have_stream = 1, used = 1;
  }
  if (!used) {
    switch (k->kind) {
      case TBE_EV_KERNEL: used = kernel_arg(c, b, a, k->xla); break;
      case TBE_EV_MEMCPY:
        if ((used = memcpy_arg(c, b, a, k->xla)) < 0) return used;
        break;
      case TBE_EV_MEMSET: used = memset_arg(c, b, a, k->xla); break;
      case TBE_EV_SYNC:
        if (KEY_IS(a, "cuda_sync_kind")) used = 1;
        else if (KEY_IS(a, "wait_on_cuda_event_id") && tbe__cj_arg_int(e, a, &v))
          b->d.sy.cuda_event = (uint64_t)v, used = 1;
        break;
      case TBE_EV_MEMORY:
        if ((used = memory_arg(c, b, a)) < 0) return used;
        break;
      case TBE_EV_NVTX_RANGE:
      case TBE_EV_NVTX_MARK:
        if ((used = nvtx_arg(c, b, a)) < 0) return used;
        break;
      case TBE_EV_DRIVER:
        /* The launching host call's device: implied by the link. */
        if (k->xla && KEY_IS(a, "device_id") && tbe__cj_arg_int(e, a, &v)) used = 1;
        break;
    }
  }
  if (k->xla && !used && KEY_IS(a, "context_id")) used = 1; /* XSpace-internal reference */
  return used ? 0 : generic_arg(c, b, a);
}

/* What the args leave to settle: a kernel's static shared memory, a sync's
 * stream and kind. */
static void settle_details(const scratch *e, build *b, const evclass *k) {
  if (k->kind == TBE_EV_KERNEL && b->d.k.dynamic_shared <= b->d.k.static_shared)
    b->d.k.static_shared -= b->d.k.dynamic_shared; /* "shared memory" holds both */
  if (k->kind != TBE_EV_SYNC) return;
  if (k->have_stream) b->d.sy.stream = k->stream;
  else if (!e->tid.is_str) b->d.sy.stream = e->tid.num;
  if (!(e->have & F_NAME)) return;
  const char *s = sp(e, e->name);
  size_t n = e->name.len;
  if (n == 10 && !memcmp(s, "Event Sync", 10)) b->d.sy.sync_kind = TBE_SYNC_EVENT;
  else if (n == 17 && !memcmp(s, "Stream Wait Event", 17)) b->d.sy.sync_kind = TBE_SYNC_STREAM_WAIT;
  else if (n == 11 && !memcmp(s, "Stream Sync", 11)) b->d.sy.sync_kind = TBE_SYNC_STREAM;
  else if (n == 12 && !memcmp(s, "Context Sync", 12)) b->d.sy.sync_kind = TBE_SYNC_CONTEXT;
}

/* Builds the model event of a duration (X/B) or instant scratch event:
 * kind, track, details, args.  `instant` selects the instant mapping. */
static int build_event(cj *c, build *b, int instant) {
  scratch *e = &c->e;
  memset(b, 0, sizeof *b);
  b->ev.detail = TBE_NONE;
  b->ev.link = TBE_NONE;
  b->ev.start_ns = e->ts;
  b->ev.dur_ns = instant ? 0 : e->dur;
  evclass k;
  memset(&k, 0, sizeof k);
  k.ck = cat_class(e);
  if (k.ck != CK_NONE) c->kineto = 1;
  int rc = classify(c, instant, &k);
  if (rc) return rc;
  b->ev.kind = (uint8_t)k.kind;
  /* cat: 0 when it is the kind's own Kineto category, else as given. */
  if ((e->have & F_CAT) && k.ck == CK_NONE && e->cat.len) {
    if ((rc = intern_pre(c, sp(e, e->cat), e->cat.len, e->hcat, e->pcat, &b->ev.cat))) return rc;
  }
  if (e->have & F_NAME) {
    if ((rc = intern_pre(c, sp(e, e->name), e->name.len, e->hname, e->pname, &b->ev.name))) return rc;
  }
  detail_defaults(e, b, k.kind);
  k.mapped = k.kind != TBE_EV_GENERIC && k.kind != TBE_EV_INSTANT;
  for (size_t i = 0; i < e->nargs; i++)
    if ((rc = take_arg(c, b, &e->args[i], &k))) return rc;
  settle_details(e, b, &k);
  if (!k.gpu && k.kind == TBE_EV_MEMORY && !e->pid.is_str) {
    /* Our exporter writes the allocator events the collector saw on a
     * stream on that stream's row. */
    int64_t pid = 0;
    int32_t gd;
    if ((rc = id_value(c, &e->pid, &pid))) return rc;
    k.gpu = tbe__cj_gpu_of_pid(c, pid, &gd);
  }
  if (k.gpu) return stream_track(c, k.dev, k.have_dev, k.stream, k.have_stream, &b->ev.track);
  return host_track(c, &b->ev.track);
}

static int emit(cj *c, build *b, size_t ntargs) {
  b->ev.start_ns += c->base;
  int rc = tbe_trace_add_event(c->t, &b->ev, b->has_detail ? &b->d : NULL, c->targs, ntargs, NULL);
  return rc;
}

static void note_end(cj *c, int64_t end) {
  if (end > c->max_end) c->max_end = end;
}

/* ---- B/E ---- */

static bstack *stack_of(cj *c, uint32_t track) {
  if (track >= c->nstacks) {
    size_t n = c->nstacks;
    void *p = c->stacks;
    if (tbe__grow(c->a, &p, &n, (size_t)track + 1, sizeof *c->stacks)) return NULL;
    c->stacks = p;
    memset(c->stacks + c->nstacks, 0, (n - c->nstacks) * sizeof *c->stacks);
    c->nstacks = n;
  }
  return &c->stacks[track];
}

static int push_b(cj *c, build *b) {
  bstack *st = stack_of(c, b->ev.track);
  if (!st) return TBE_ENOMEM;
  if (st->n == st->cap) {
    size_t old = st->cap;
    void *p = st->v;
    if (tbe__grow(c->a, &p, &st->cap, st->n + 1, sizeof *st->v)) return TBE_ENOMEM;
    st->v = p;
    memset(st->v + old, 0, (st->cap - old) * sizeof *st->v);
  }
  pending_b *pb = &st->v[st->n];
  pb->ev = b->ev;
  memcpy(&pb->d, &b->d, sizeof pb->d);
  pb->has_detail = b->has_detail;
  if (b->ntargs > pb->cap) {
    void *p = pb->args;
    if (tbe__grow(c->a, &p, &pb->cap, b->ntargs, sizeof *pb->args)) return TBE_ENOMEM;
    pb->args = p;
  }
  if (b->ntargs) memcpy(pb->args, c->targs, b->ntargs * sizeof *pb->args);
  pb->nargs = b->ntargs;
  st->n++;
  return 0;
}

int tbe__cj_emit_pending(cj *c, pending_b *pb, int64_t end, const tbe_arg *extra, size_t nextra) {
  tbe_event ev = pb->ev;
  ev.dur_ns = end - ev.start_ns;
  ev.start_ns += c->base;
  int rc;
  if (nextra) {
    if (pb->nargs + nextra > pb->cap) {
      void *p = pb->args;
      if (tbe__grow(c->a, &p, &pb->cap, pb->nargs + nextra, sizeof *pb->args)) return TBE_ENOMEM;
      pb->args = p;
    }
    size_t room = UINT16_MAX - pb->nargs;
    if (nextra > room) nextra = room;
    memcpy(pb->args + pb->nargs, extra, nextra * sizeof *extra);
  }
  rc = tbe_trace_add_event(c->t, &ev, pb->has_detail ? &pb->d : NULL, pb->args, pb->nargs + nextra, NULL);
  return rc;
}

static int on_end_event(cj *c) {
  uint32_t track;
  int rc = host_track(c, &track);
  if (rc) return rc;
  /* B events of GPU kinds were put on stream tracks: look there too. */
  bstack *st = track < c->nstacks ? &c->stacks[track] : NULL;
  if (!st || st->n == 0) {
    build b;
    int gpu_found = 0;
    if (cat_class(&c->e) != CK_NONE || c->ngpus) {
      if ((rc = build_event(c, &b, 0))) return rc;
      if (b.ev.track < c->nstacks && c->stacks[b.ev.track].n) {
        st = &c->stacks[b.ev.track];
        gpu_found = 1;
      }
    }
    if (!gpu_found) {
      c->n_unmatched_e++;
      return 0;
    }
  }
  pending_b *pb = &st->v[--st->n];
  /* Args on the E event are merged into the B's. */
  build eb;
  memset(&eb, 0, sizeof eb);
  for (size_t i = 0; i < c->e.nargs; i++)
    if ((rc = generic_arg(c, &eb, &c->e.args[i]))) return rc;
  note_end(c, c->e.ts);
  return tbe__cj_emit_pending(c, pb, c->e.ts, c->targs, eb.ntargs);
}

/* ---- flows ----
 *
 * Paired by (id, cat) through the queues of chrome_json_flows.c; ac2g ends
 * are only collected (checked at the end by chrome_json_finish.c). */

static int on_flow(cj *c, char ph) {
  scratch *e = &c->e;
  if (ph == 't') {
    c->n_flow_steps++;
    return 0;
  }
  /* The flow id: a number, or a string ("0x1f", or any text). */
  uint64_t id = 0;
  int rc;
  if (e->have & F_ID) {
    if (!e->id.is_str) {
      id = (uint64_t)e->id.num;
    } else {
      const char *s = sp(e, e->id.str);
      size_t n = e->id.str.len;
      int64_t v;
      if (tbe__cj_parse_int(s, n, &v, &id, NULL) == 0) {
        id = (uint64_t)v;
      } else if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        char tmp[32];
        if (n < sizeof tmp) {
          memcpy(tmp, s, n);
          tmp[n] = 0;
          id = strtoull(tmp, NULL, 16);
        }
      } else {
        tbe_str sid;
        if ((rc = tbe__cj_intern_text(c, s, n, &sid))) return rc;
        id = (1ull << 63) | sid;
      }
    }
  }
  if ((e->have & F_CAT) && SPAN_IS(e, e->cat, "ac2g")) {
    uint64_t *x = TBE__VEC_PUSH(ph == 's' ? &c->ac2g_s : &c->ac2g_f, uint64_t);
    if (!x) return TBE_ENOMEM;
    *x = id;
    return 0;
  }
  tbe_str cat = 0, name = 0;
  if ((e->have & F_CAT) && (rc = intern_pre(c, sp(e, e->cat), e->cat.len, e->hcat, e->pcat, &cat))) return rc;
  if ((e->have & F_NAME) && (rc = intern_pre(c, sp(e, e->name), e->name.len, e->hname, e->pname, &name))) return rc;
  uint32_t track;
  int64_t pid = 0;
  int32_t dev;
  if ((rc = id_value(c, &e->pid, &pid))) return rc;
  if (!e->pid.is_str && tbe__cj_gpu_of_pid(c, pid, &dev)) rc = stream_track(c, 0, 0, 0, 0, &track);
  else rc = host_track(c, &track);
  if (rc) return rc;
  int is_start = ph == 's';
  flow_queue *other = tbe__cj_flow_queue_of(c, id, cat, !is_start);
  if (!other) return TBE_ENOMEM;
  if (other->head) {
    flow_end f;
    tbe__cj_flow_take(c, other, &f);
    tbe_flow fl;
    memset(&fl, 0, sizeof fl);
    fl.id = id;
    fl.cat = cat;
    fl.name = f.is_start ? f.name : name;
    if (!fl.name) fl.name = f.is_start ? name : f.name;
    fl.src_track = is_start ? track : f.track;
    fl.src_ns = (is_start ? e->ts : f.ts) + c->base;
    fl.dst_track = is_start ? f.track : track;
    fl.dst_ns = (is_start ? f.ts : e->ts) + c->base;
    fl.dst_enclosing = is_start ? f.bp_e : (e->have & F_BP) && SPAN_IS(e, e->bp, "e");
    return tbe_trace_add_flow(c->t, &fl);
  }
  flow_end f;
  memset(&f, 0, sizeof f);
  f.id = id;
  f.cat = cat;
  f.is_start = (uint8_t)is_start;
  f.bp_e = !is_start && (e->have & F_BP) && SPAN_IS(e, e->bp, "e");
  f.track = track;
  f.ts = e->ts;
  f.name = name;
  flow_queue *mine = tbe__cj_flow_queue_of(c, id, cat, is_start);
  return mine ? tbe__cj_flow_wait(c, mine, &f) : TBE_ENOMEM;
}

/* ---- M metadata ---- */

/* The ordinal <n> ending a GPU's name ("GPU <n>", "/device:GPU:<n>"): 1
 * with *dev, 0 when the text is no integer (not a GPU's name), or
 * TBE_EPARSE when it is an integer out of range (refused, naming `field`). */
static int name_ordinal(cj *c, const char *s, size_t n, const char *field, int32_t *dev) {
  int64_t v;
  if (tbe__cj_parse_int(s, n, &v, NULL, NULL) == 0 && tbe__device_ok(v)) {
    *dev = (int32_t)v;
    return 1;
  }
  size_t i = n && s[0] == '-';
  if (i == n) return 0;
  for (; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return device_fail(c, field, 0, s, n);
}

static int on_meta(cj *c) {
  scratch *e = &c->e;
  if (!(e->have & F_NAME)) return 0;
  const sarg *a = NULL;
  int kind = -1;
  if (SPAN_IS(e, e->name, "process_name")) kind = 0, a = find_arg(c, "name");
  else if (SPAN_IS(e, e->name, "thread_name")) kind = 1, a = find_arg(c, "name");
  else if (SPAN_IS(e, e->name, "process_labels")) kind = 2, a = find_arg(c, "labels");
  if (kind < 0 || !a || a->type != V_STR) return 0;
  int64_t pid = 0, tid = 0;
  int rc = id_value(c, &e->pid, &pid);
  int32_t gdev;
  if (!rc && (e->have & F_TID) && !(tbe__cj_gpu_of_pid(c, pid, &gdev) && stream_num(e, &e->tid, &tid)))
    rc = id_value(c, &e->tid, &tid);
  if (rc) return rc;
  const char *s = sp(e, a->val);
  size_t n = a->val.len;
  /* GPU pids: Kineto labels them "GPU <n>", XLA names them "/device:GPU:<n>". */
  int32_t gnum;
  if (kind == 2 && n > 4 && !memcmp(s, "GPU ", 4)) {
    int r = name_ordinal(c, s + 4, n - 4, "args.labels of process_labels", &gnum);
    return r <= 0 ? r : add_gpu_pid(c, pid, gnum);
  }
  if (kind == 0 && n > 12 && !memcmp(s, "/device:GPU:", 12)) {
    int r = name_ordinal(c, s + 12, n - 12, "args.name of process_name", &gnum);
    if (r < 0) return r;
    if (r > 0 && (rc = add_gpu_pid(c, pid, gnum))) return rc;
  }
  /* A pid labelled "CPU" is a host process (Kineto labels its own so; ours
   * labels every process of the trace, named or not). */
  if (kind == 2 && !(n == 3 && !memcmp(s, "CPU", 3))) return 0;
  if (kind == 2) kind = 3;
  void *p = c->metas;
  if (tbe__grow(c->a, &p, &c->cap_metas, c->nmetas + 1, sizeof *c->metas)) return TBE_ENOMEM;
  c->metas = p;
  meta *m = &c->metas[c->nmetas];
  m->pid = pid;
  m->tid = tid;
  m->kind = (uint8_t)kind;
  if ((rc = tbe__cj_intern_text(c, s, n, &m->value))) return rc;
  c->nmetas++;
  return 0;
}

/* ---- C counters ---- */

/* The numeric series of a "C" event on GPU `dev`'s pid (on_counter). */
static int gpu_counter(cj *c, tbe_str cname, int32_t dev) {
  scratch *e = &c->e;
  int rc = 0;
  for (size_t i = 0; i < e->nargs && !rc; i++) {
    const sarg *a = &e->args[i];
    double v;
    if (a->type != V_NUM || tbe__cj_parse_double(sp(e, a->val), a->val.len, &v)) {
      int64_t iv;
      if (a->type == V_NUM && tbe__cj_parse_int(sp(e, a->val), a->val.len, &iv, NULL, NULL) == 0) v = (double)iv;
      else continue;
    }
    if (!isfinite(v)) continue;
    tbe_str metric = cname;
    if (!(a->key.len == 5 && !memcmp(sp(e, a->key), "value", 5)) &&
        (rc = tbe__cj_intern_text(c, sp(e, a->key), a->key.len, &metric)))
      break;
    if (!metric) continue;
    uint32_t track;
    if ((rc = tbe_trace_metric_track(c->t, -1, dev, metric, &track))) break;
    tbe_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = TBE_EV_COUNTER;
    ev.start_ns = e->ts + c->base;
    ev.track = track;
    ev.name = metric;
    ev.detail = ev.link = TBE_NONE;
    tbe_counter cv = {v};
    rc = tbe_trace_add_event(c->t, &ev, &cv, NULL, 0, NULL);
  }
  return rc;
}

static int on_counter(cj *c) {
  scratch *e = &c->e;
  int64_t pid = 0;
  int rc = id_value(c, &e->pid, &pid);
  if (rc) return rc;
  /* The counter's name, plus its id when it has one (the spec keys counter
   * series by name and id). */
  tbe__buf *nb = &c->tmp;
  tbe__buf_clear(nb);
  if (e->have & F_NAME) tbe__buf_append(nb, sp(e, e->name), e->name.len);
  if (e->have & F_ID) {
    tbe__buf_putc(nb, '[');
    if (e->id.is_str) tbe__buf_append(nb, sp(e, e->id.str), e->id.str.len);
    else tbe__buf_put_i64(nb, e->id.num);
    tbe__buf_putc(nb, ']');
  }
  if (tbe__buf_error(nb)) return TBE_ENOMEM;
  tbe_str cname;
  if ((rc = tbe__cj_intern_text(c, (const char *)nb->data, nb->len, &cname))) return rc;
  /* On a GPU's pid: the GPU's hardware metrics, one metric track per
   * series (tbe_trace_metric_track), named by the counter for its "value"
   * series, by the series' key otherwise. */
  int32_t gdev;
  if (!e->pid.is_str && tbe__cj_gpu_of_pid(c, pid, &gdev) && gdev >= 0)
    return gpu_counter(c, cname, gdev);
  /* One track per pid and counter name; its tid is the name's string id
   * made negative so it never meets a real thread id. */
  uint32_t track;
  if ((rc = tbe__cj_get_track(c, TBE_TRACK_OTHER, pid, -(int64_t)cname - ((int64_t)1 << 32), -1, &track)))
    return rc;
  if (c->t->tracks[track].name == 0) c->t->tracks[track].name = cname;
  tbe_str cat = 0;
  if ((e->have & F_CAT) && e->cat.len && (rc = tbe__cj_intern_text(c, sp(e, e->cat), e->cat.len, &cat)))
    return rc;
  for (size_t i = 0; i < e->nargs; i++) {
    const sarg *a = &e->args[i];
    double v;
    if (a->type != V_NUM || tbe__cj_parse_double(sp(e, a->val), a->val.len, &v)) {
      int64_t iv;
      if (a->type == V_NUM && tbe__cj_parse_int(sp(e, a->val), a->val.len, &iv, NULL, NULL) == 0) v = (double)iv;
      else continue;
    }
    tbe_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = TBE_EV_COUNTER;
    ev.start_ns = e->ts + c->base;
    ev.track = track;
    ev.cat = cat;
    ev.detail = ev.link = TBE_NONE;
    if ((rc = tbe__cj_intern_text(c, sp(e, a->key), a->key.len, &ev.name))) return rc;
    tbe_counter cv = {v};
    if ((rc = tbe_trace_add_event(c->t, &ev, &cv, NULL, 0, NULL))) return rc;
  }
  return 0;
}

/* Checks that the event's times, with the base known so far, lie in the
 * model's range (common/checked.h: importers refuse): ts and, for a
 * complete event, its end.  ts and dur are each in range (the parser
 * checked), so the sums below cannot overflow.  Returns 1 or 0 (failed). */
static int times_ok(cj *c, char ph) {
  const scratch *e = &c->e;
  if (!(e->have & F_TS)) return 1;
  int64_t start = e->ts + c->base;
  if (!tbe__time_ok(start))
    return tbe__cj_cfail_msg(c, e->start_off, TBE_EPARSE,
                     "event field ts%s is out of range (more than 146 years from 1970)",
                     c->base ? " + baseTimeNanoseconds" : "");
  if (ph == 'X' && e->dur > 0 && !tbe__span_ok(start, e->dur))
    return tbe__cj_cfail_msg(c, e->start_off, TBE_EPARSE,
                     "event field dur ends the event out of range (more than 146 years from 1970)");
  return 1;
}

/* The scratch event is complete: turn it into model data. */
int tbe__cj_finish_event(cj *c) {
  scratch *e = &c->e;
  if (++c->nevents_read > c->o->max_events) {
    char msg[256];
    tbe__import_limit_msg(msg, sizeof msg, TBE__LIM_EVENTS, c->o, "more trace events than the limit");
    return tbe__cj_cfail_msg(c, e->start_off, TBE_ETOOBIG, "%s", msg);
  }
  if (!(e->have & F_PH) || e->ph.len == 0) {
    c->n_noph++;
    return 1;
  }
  char ph = sp(e, e->ph)[0];
  if (ph != 'M' && !times_ok(c, ph)) return 1;
  int rc = 0;
  build b;
  switch (ph) {
    case 'X':
      if ((rc = build_event(c, &b, 0))) break;
      note_end(c, e->ts + (e->dur > 0 ? e->dur : 0));
      rc = emit(c, &b, b.ntargs);
      break;
    case 'B':
      if ((rc = build_event(c, &b, 0))) break;
      note_end(c, e->ts);
      rc = push_b(c, &b);
      break;
    case 'E':
      rc = on_end_event(c);
      break;
    case 'i':
    case 'I':
    case 'R':
      if ((rc = build_event(c, &b, 1))) break;
      note_end(c, e->ts);
      rc = emit(c, &b, b.ntargs);
      break;
    case 'n':
      if ((rc = build_event(c, &b, 1))) break;
      b.ev.flags |= TBE_EVF_ASYNC;
      note_end(c, e->ts);
      rc = emit(c, &b, b.ntargs);
      break;
    case 'C':
      note_end(c, e->ts);
      rc = on_counter(c);
      break;
    case 's':
    case 't':
    case 'f':
      rc = on_flow(c, ph);
      break;
    case 'M':
      rc = on_meta(c);
      break;
    default:
      c->n_unsupported++;
      if (!strchr(c->unsupported_ph, ph) && strlen(c->unsupported_ph) < sizeof c->unsupported_ph - 1) {
        size_t l = strlen(c->unsupported_ph);
        c->unsupported_ph[l] = (ph >= 0x20 && ph < 0x7f) ? ph : '?';
        c->unsupported_ph[l + 1] = 0;
      }
      break;
  }
  if (rc) return tbe__cj_cfail(c, e->start_off, rc);
  return 1;
}

