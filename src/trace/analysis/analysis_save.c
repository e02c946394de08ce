/* analysis_save.c: one host's analysis as the bytes of an analysis file
 * (tbe_analysis_save; schema proto/tbexport/analysis.proto, reader in
 * analysis_store.c).
 *
 * Saving maps the analysis onto the generated protobuf-c messages without
 * copying its arrays (the messages point into the analysis; one scratch
 * block, sized up front, holds the message structs and pointer arrays)
 * and packs them, stamped with the format version, the analysis version of
 * this code (analysis_version.h) and the sources' keys the caller gives.
 * The figures go by their rows (figures.h) into their fields, or, for a
 * row without one, into the message's `figures` list under its key.  A
 * file over TBE_ANALYSIS_FILE_MAX is not made: no reader would take it.
 * The file ends with the CRC32C of all the bytes before it (field 5,
 * crc32c, written last by hand after the packed message).  Nothing here
 * aborts or prints. */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/crc32c.h"
#include "common/map.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "tbexport/trace.h"
#include "tbexport/version.h"
#include "trace/analysis/analysis_store_int.h"
#include "trace/analysis/analysis_version.h"

/* ---- saving ---- */

/* The scratch of one save: every message struct and pointer array, carved
 * from one block. */
typedef struct save_scratch {
  char *p, *end;
} save_scratch;

static void *carve(save_scratch *s, size_t n, size_t size) {
  size_t bytes = n * size;
  bytes = (bytes + 15) & ~(size_t)15;
  if ((size_t)(s->end - s->p) < bytes) return NULL; /* sized up front: cannot happen */
  void *r = s->p;
  s->p += bytes;
  return r;
}

/* The figures of `obj` (of `scope`) into its message m: a field holds its
 * value or, for an array, points at the member (nothing copied); a row
 * without a field is an entry of m's `figures` list, carved from `s`. */
static void save_figures(save_scratch *s, void *m, uint32_t scope, const void *obj) {
  size_t nk = keyed_rows(scope), k = 0;
  PFigure *kf = nk ? carve(s, nk, sizeof *kf) : NULL;
  PFigure **kp = nk ? carve(s, nk, sizeof *kp) : NULL;
  if (nk && (!kf || !kp)) return;
  for (size_t i = 0; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (f->scope != scope) continue;
    const ProtobufCFieldDescriptor *fd = fig_field(f);
    void *v = tbe__fig_at(f, obj, 0);
    if (f->calc) { /* computed: saved for other readers, computed again on load */
      double *r = carve(s, 1, sizeof *r);
      if (!r) return;
      *r = f->calc(obj);
      tbexport__figure__init(&kf[k]);
      kf[k].key = text_of(f->key);
      kf[k].n_real = 1;
      kf[k].real = r;
      kp[k] = &kf[k];
      k++;
    } else if (fd && fd->label == PROTOBUF_C_LABEL_REPEATED) {
      *(size_t *)msg_at(m, fd->quantifier_offset) = f->n;
      *(void **)msg_at(m, fd->offset) = v;
    } else if (fd) {
      memcpy(msg_at(m, fd->offset), v, sizeof(int64_t));
    } else {
      tbexport__figure__init(&kf[k]);
      kf[k].key = text_of(f->key);
      kf[k].n_value = f->n;
      kf[k].value = v;
      kp[k] = &kf[k];
      k++;
    }
  }
  *keyed_n(m, scope) = k;
  *keyed_v(m, scope) = kp;
}

static void save_device(save_scratch *s, PDevice *m, const tbe_device_stats *d,
                        const tbe_analysis *an) {
  tbexport__device__init(m);
  m->device = d->device;
  m->has_name = d->name != 0 && an->trace != NULL;
  m->name = text_of(m->has_name ? tbe_trace_str(an->trace, d->name) : "");
  save_figures(s, m, TBE__FS_DEVICE, d);
}

static void save_name(PName *m, const tbe_name_stats *e, const tbe_analysis *an) {
  tbexport__name_stats__init(m);
  m->label = text_of(e->label);
  const char *full = an->trace ? tbe_trace_str(an->trace, e->name) : "";
  m->name = text_of(e->label && strcmp(full, e->label) == 0 ? "" : full);
  m->calls = e->calls;
  m->total_ns = e->total_ns;
  m->self_ns = e->self_ns;
  m->min_ns = e->min_ns;
  m->max_ns = e->max_ns;
  m->has_step_ns = e->step_ns != NULL;
  m->n_step_ns = e->step_ns ? an->nsteps : 0;
  m->step_ns = e->step_ns;
  m->kclass = e->kclass;
  m->self_cuda_ns = e->self_cuda_ns;
  m->cuda_total_ns = e->cuda_total_ns;
  m->kernels = e->kernels;
  m->launched_other_calls = e->launched_other_calls;
  m->launched_other_ns = e->launched_other_ns;
  m->has_cuda_step_ns = e->cuda_step_ns != NULL;
  m->n_cuda_step_ns = e->cuda_step_ns ? an->nsteps : 0;
  m->cuda_step_ns = e->cuda_step_ns;
  m->shapes = text_of(e->shapes);
  m->has_launch_op = e->launch_op != NULL;
  m->launch_op = text_of(e->launch_op);
}

/* tbe_analysis.launch_seq as indexes into the kernel table in its current
 * order (the labels looked up by content through a tbe__index), carved
 * from `s`.  An entry the table lacks (cannot happen: the sequence is of
 * its labels) ends the sequence there. */
static int save_launch_seq(save_scratch *s, PAnalysis *m, const tbe_analysis *an,
                           const tbe_allocator *a) {
  size_t nk = an->ngroups[TBE_GROUP_KERNEL];
  if (!an->nlaunch_seq || !nk) return 0;
  uint32_t *out = carve(s, an->nlaunch_seq, sizeof *out);
  if (!out) return TBE_ENOMEM;
  tbe__index ix;
  tbe__index_init(&ix, a, TBE__SEED_PROCESS);
  int rc = tbe__index_reserve(&ix, nk);
  const tbe_name_stats *k = an->groups[TBE_GROUP_KERNEL];
  for (size_t i = 0; i < nk && !rc; i++)
    rc = tbe__index_add(&ix, tbe__hash_bytes(k[i].label, strlen(k[i].label), ix.seed), (uint32_t)i);
  size_t n = 0;
  for (; n < an->nlaunch_seq && !rc; n++) {
    const char *l = an->launch_seq[n];
    tbe__iprobe pr;
    uint32_t hit = tbe__index_first(&ix, tbe__hash_bytes(l, strlen(l), ix.seed), &pr);
    while (hit != TBE__NOIDX && strcmp(k[hit].label, l) != 0) hit = tbe__index_next(&ix, &pr);
    if (hit == TBE__NOIDX) break;
    out[n] = hit;
  }
  tbe__index_deinit(&ix);
  if (rc) return rc;
  m->launch_seq = out;
  m->n_launch_seq = n;
  return 0;
}

/* An entry's launched list as OpKernel messages carved from `s`: `ops`
 * advances past the structs used. */
static void save_launched(save_scratch *s, PName *m, const tbe_name_stats *e, POpKernel **ops) {
  if (!e->nlaunched) return;
  m->launched = carve(s, e->nlaunched, sizeof *m->launched);
  if (!m->launched) return;
  m->n_launched = e->nlaunched;
  for (size_t k = 0; k < e->nlaunched; k++) {
    POpKernel *o = (*ops)++;
    tbexport__op_kernel__init(o);
    o->name = text_of(e->launched[k].name);
    o->calls = e->launched[k].calls;
    o->total_ns = e->launched[k].total_ns;
    m->launched[k] = o;
  }
}

/* Metric means `m` (n of them, or none when m is NULL) as the two
 * parallel arrays of the messages, carved from `s`. */
static void save_means(save_scratch *s, const tbe_metric_mean *m, size_t n, size_t *nmean,
                       double **mean, size_t *nsamp, uint64_t **samp) {
  if (!m || !n) return;
  *mean = carve(s, n, sizeof **mean);
  *samp = carve(s, n, sizeof **samp);
  if (!*mean || !*samp) return;
  for (size_t i = 0; i < n; i++) (*mean)[i] = m[i].mean, (*samp)[i] = m[i].samples;
  *nmean = *nsamp = n;
}

int tbe_analysis_save(const tbe_analysis *an, const tbe_analysis_source *sources, size_t nsources,
                      void **out, size_t *len, const tbe_allocator *a) {
  if (!out || !len) return TBE_EINVAL;
  *out = NULL;
  *len = 0;
  if (!an || (nsources && !sources)) return TBE_EINVAL;
  for (size_t i = 0; i < nsources; i++)
    if (!sources[i].name || !*sources[i].name || strchr(sources[i].name, '/')) return TBE_EINVAL;
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  const tbe_trace *t = an->trace;
  size_t nnames = 0, nlaunched = 0;
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    nnames += an->ngroups[g];
    for (size_t i = 0; i < an->ngroups[g]; i++) nlaunched += an->groups[g][i].nlaunched;
  }
  size_t nwarn = t ? t->nwarnings : 0;
  /* Sizes of everything carved, each rounded up to 16 bytes (carve). */
#define SZ(n, T) ((((n) * sizeof(T)) + 15) & ~(size_t)15)
  size_t need = SZ(1, PFile) + SZ(1, PAnalysis) + SZ(nsources, PSource) + SZ(nsources, PSource *) +
                SZ(an->ndevices + 1, PDevice) + SZ(an->ndevices, PDevice *) + SZ(nnames, PName) +
                SZ(nnames, PName *) + SZ(TBE_GROUP__COUNT, PTable) + SZ(an->nsteps, PStep) +
                SZ(an->nsteps, PStep *) + SZ(1, PDist) + SZ(an->nadvice, PAdvice) +
                SZ(an->nadvice, PAdvice *) + SZ(nwarn, ProtobufCBinaryData) + 16 * 16 +
                SZ(nlaunched, POpKernel) + nlaunched * sizeof(POpKernel *) + 16 * nnames +
                SZ(an->nlaunch_seq, uint32_t);
  /* the figures without a field of their own: a list per message */
  for (uint32_t sc = 0; sc < TBE__FS__COUNT; sc++) {
    size_t nk = keyed_rows(sc), nm = sc == TBE__FS_DEVICE ? an->ndevices + 1
                                     : sc == TBE__FS_STEP ? an->nsteps
                                                          : 1;
    if (nk) need += nm * (SZ(nk, PFigure) + SZ(nk, PFigure *) + nk * SZ(1, double));
  }
  /* the metric means: two arrays per message that has them */
  size_t nmsg = an->ndevices + 1 + an->nsteps, nker = an->ngroups[TBE_GROUP_KERNEL];
  need += 2 * nmsg * (SZ(an->ngpu_metrics, double) + 16) + 2 * nker * (SZ(an->nkernel_metrics, double) + 16) +
          2 * nker * (SZ(an->ngpu_metrics, double) + 16) +
          SZ(an->ngpu_metrics + an->nkernel_metrics, ProtobufCBinaryData) + 32;
#undef SZ
  char *block = tbe__alloc(&al, need);
  if (!block) return TBE_ENOMEM;
  save_scratch s = {block, block + need};

  char producer[64];
  snprintf(producer, sizeof producer, "tbexport %s", tbe_version_string());
  PFile *f = carve(&s, 1, sizeof *f);
  tbexport__analysis_file__init(f);
  f->format_version = TBE_ANALYSIS_FORMAT_VERSION;
  f->analysis_version = TBE__ANALYSIS_VERSION;
  f->producer = text_of(producer);
  f->n_sources = nsources;
  f->sources = carve(&s, nsources, sizeof *f->sources);
  PSource *src = carve(&s, nsources, sizeof *src);
  for (size_t i = 0; i < nsources; i++) {
    tbexport__source_file__init(&src[i]);
    src[i].name = text_of(sources[i].name);
    src[i].size = sources[i].size;
    src[i].mtime_ns = sources[i].mtime_ns;
    src[i].head_crc32c = sources[i].head_crc32c;
    src[i].tail_crc32c = sources[i].tail_crc32c;
    f->sources[i] = &src[i];
  }

  PAnalysis *m = carve(&s, 1, sizeof *m);
  tbexport__analysis__init(m);
  f->analysis = m;
  PDevice *dev = carve(&s, an->ndevices + 1, sizeof *dev);
  m->n_devices = an->ndevices;
  m->devices = carve(&s, an->ndevices, sizeof *m->devices);
  for (size_t i = 0; i <= an->ndevices; i++) {
    const tbe_device_stats *d = i < an->ndevices ? &an->devices[i] : &an->all;
    save_device(&s, &dev[i], d, an);
    save_means(&s, d->metrics, an->ngpu_metrics, &dev[i].n_metric_mean, &dev[i].metric_mean,
               &dev[i].n_metric_samples, &dev[i].metric_samples);
    if (i < an->ndevices) m->devices[i] = &dev[i];
  }
  m->all = &dev[an->ndevices];

  PName *nm = carve(&s, nnames, sizeof *nm);
  PName **np = carve(&s, nnames, sizeof *np);
  POpKernel *ops = carve(&s, nlaunched, sizeof *ops);
  PTable *tab = carve(&s, TBE_GROUP__COUNT, sizeof *tab);
  PTable **slots[TBE_GROUP__COUNT] = {&m->kernels, &m->cpu_ops, &m->ranges,
                                      &m->cpu_ops_by_shape};
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    tbexport__name_table__init(&tab[g]);
    tab[g].n_names = an->ngroups[g];
    tab[g].names = np;
    tab[g].total_ns = an->group_total_ns[g];
    for (size_t i = 0; i < an->ngroups[g]; i++) {
      const tbe_name_stats *e = &an->groups[g][i];
      save_name(nm, e, an);
      save_means(&s, e->metrics, an->nkernel_metrics, &nm->n_metric_mean, &nm->metric_mean,
                 &nm->n_metric_samples, &nm->metric_samples);
      nm->bound_by = e->bound_by;
      save_means(&s, e->pm_metrics, an->ngpu_metrics, &nm->n_pm_mean, &nm->pm_mean,
                 &nm->n_pm_samples, &nm->pm_samples);
      save_launched(&s, nm, e, &ops);
      *np++ = nm++;
    }
    *slots[g] = &tab[g];
  }

  PStep *st = carve(&s, an->nsteps, sizeof *st);
  m->n_steps = an->nsteps;
  m->steps = carve(&s, an->nsteps, sizeof *m->steps);
  for (size_t i = 0; i < an->nsteps; i++) {
    tbexport__step__init(&st[i]);
    save_figures(&s, &st[i], TBE__FS_STEP, &an->steps[i]);
    save_means(&s, an->steps[i].metrics, an->ngpu_metrics, &st[i].n_metric_mean,
               &st[i].metric_mean, &st[i].n_metric_samples, &st[i].metric_samples);
    m->steps[i] = &st[i];
  }
  save_figures(&s, m, TBE__FS_ANALYSIS, an);
  m->ended_early = an->ended_early != 0;
  int seq_rc = save_launch_seq(&s, m, an, &al);
  if (seq_rc) {
    tbe__free(&al, block);
    return seq_rc;
  }

  PAdvice *ad = carve(&s, an->nadvice, sizeof *ad);
  m->n_advice = an->nadvice;
  m->advice = carve(&s, an->nadvice, sizeof *m->advice);
  for (size_t i = 0; i < an->nadvice; i++) {
    tbexport__advice__init(&ad[i]);
    ad[i].kind = an->advice[i].kind;
    ad[i].figure = an->advice[i].figure;
    ad[i].text.data = (uint8_t *)(uintptr_t)an->advice[i].text;
    ad[i].text.len = strnlen(an->advice[i].text, sizeof an->advice[i].text);
    m->advice[i] = &ad[i];
  }
  m->has_host = (t && t->host != 0) || (an->host && *an->host);
  m->host = text_of(an->host);
  m->pid = an->pid;
  m->rank = an->rank;
  m->world_size = an->world_size;
  PDist *dist = carve(&s, 1, sizeof *dist);
  tbexport__step_dist__init(dist);
  dist->n = an->step_dist.n;
  dist->median_ns = an->step_dist.median_ns;
  dist->q1_ns = an->step_dist.q1_ns;
  dist->q3_ns = an->step_dist.q3_ns;
  dist->min_ns = an->step_dist.min_ns;
  dist->max_ns = an->step_dist.max_ns;
  m->step_dist = dist;
  m->has_step_hint = an->step_hint != NULL;
  m->step_hint = text_of(an->step_hint);
  m->step_hint_kind = an->step_hint_kind;
  m->n_warnings = nwarn;
  m->warnings = carve(&s, nwarn, sizeof *m->warnings);
  for (size_t i = 0; i < nwarn; i++) m->warnings[i] = text_of(tbe_trace_str(t, t->warnings[i]));
  ProtobufCBinaryData *mn = carve(&s, an->ngpu_metrics + an->nkernel_metrics, sizeof *mn);
  m->n_gpu_metrics = an->ngpu_metrics;
  m->gpu_metrics = mn;
  for (size_t i = 0; i < an->ngpu_metrics; i++) mn[i] = text_of(an->gpu_metrics[i]);
  m->n_kernel_metrics = an->nkernel_metrics;
  m->kernel_metrics = mn + an->ngpu_metrics;
  for (size_t i = 0; i < an->nkernel_metrics; i++)
    mn[an->ngpu_metrics + i] = text_of(an->kernel_metrics[i]);

  size_t n = tbexport__analysis_file__get_packed_size(f);
  uint8_t *buf = NULL;
  int rc = 0;
  if ((uint64_t)n + CRC_FIELD > TBE_ANALYSIS_FILE_MAX) rc = TBE_ETOOBIG; /* no reader takes it */
  else if (!(buf = tbe__alloc(&al, n + CRC_FIELD))) rc = TBE_ENOMEM;
  if (!rc && tbexport__analysis_file__pack(f, buf) != n) rc = TBE_EINVAL;
  if (!rc) {
    uint32_t c = tbe__crc32c(buf, n);
    buf[n] = CRC_TAG;
    for (int i = 0; i < 4; i++) buf[n + 1 + i] = (uint8_t)(c >> (8 * i));
    n += CRC_FIELD;
  }
  tbe__free(&al, block);
  if (rc) {
    tbe__free(&al, buf);
    return rc;
  }
  *out = buf;
  *len = n;
  return 0;
}

void tbe_analysis_save_free(void *buf, size_t len, const tbe_allocator *a) {
  (void)len;
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  tbe__free(&al, buf);
}
