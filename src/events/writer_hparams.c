/* writer_hparams.c: the HParams plugin's records in the event writer
 * (tbe_writer_add_hparams, tbe__writer_hparams_session).
 *
 * TensorBoard's HParams dashboard reads three records, each an
 * HParamsPluginData in the metadata of an empty Summary.Value: the
 * experiment (the columns: hparam infos with their types, metric infos),
 * a session's start (its hyper-parameters) and its end (SUCCESS); the
 * metrics are plain scalars of the session's run.  torch's add_hparams
 * writes all of them into a sub-run of the run, which tbe_writer_add_hparams
 * does too (the core opens it: tbe__writer_open_subrun); the exporter
 * writes a session into the run's own file instead, with an experiment
 * that carries display names and descriptions.
 *
 * Invariant: every name is checked before anything is written, and a
 * name twice (an hparam, a metric tag, or a column of one kind) writes
 * nothing, since TensorBoard keys a session's values and the experiment's
 * columns by name.  Scratch memory comes from the writer's allocator and
 * is freed before each call returns. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/fsutil.h"
#include "common/intern.h"
#include "events/writer_core.h"
#include "events/writer_internal.h"
#include "tbexport/error.h"
#include "tbexport/writer.h"
#include "tensorboard/hparams.pb-c.h"
#include "tensorboard/summary.pb-c.h"

/* ---- records ---- */

/* Serializes an HParamsPluginData into a new buffer (caller frees). */
static int pack_hp(const tbe_allocator *a, const Tensorboard__Hparams__HParamsPluginData *hp,
                   ProtobufCBinaryData *out) {
  size_t n = tensorboard__hparams__hparams_plugin_data__get_packed_size(hp);
  out->data = tbe__alloc(a, n ? n : 1);
  if (!out->data) return TBE_ENOMEM;
  out->len = tensorboard__hparams__hparams_plugin_data__pack(hp, out->data);
  return 0;
}

static int write_hp_value(tbe_writer *w, const char *tag, ProtobufCBinaryData content, int64_t step,
                          double wall_time) {
  Tensorboard__SummaryMetadata__PluginData pd = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
  pd.plugin_name = (char *)"hparams";
  pd.content = content;
  Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
  md.plugin_data = &pd;
  Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
  v.tag = (char *)tag;
  v.metadata = &md;
  return tbe__writer_write_value(w, &v, step, wall_time);
}

/* The hparams records: the experiment (when `experiment`), the session
 * start (its hyper-parameters, start time `start` when > 0) and end
 * (SUCCESS), then each metric as a scalar. */
static int hp_write_all(tbe_writer *sub, const tbe_allocator *a, const tbe_hparam *hp, size_t nh,
                        const tbe_metric *m, size_t nm, int64_t step, double wall, int experiment,
                        double start) {
  int rc = 0;
  Tensorboard__Hparams__HParamInfo *infos = tbe__calloc(a, nh ? nh : 1, sizeof *infos);
  Tensorboard__Hparams__HParamInfo **pinfos = tbe__calloc(a, nh ? nh : 1, sizeof *pinfos);
  Tensorboard__Hparams__MetricName *mnames = tbe__calloc(a, nm ? nm : 1, sizeof *mnames);
  Tensorboard__Hparams__MetricInfo *minfos = tbe__calloc(a, nm ? nm : 1, sizeof *minfos);
  Tensorboard__Hparams__MetricInfo **pminfos = tbe__calloc(a, nm ? nm : 1, sizeof *pminfos);
  Tensorboard__Hparams__Value *vals = tbe__calloc(a, nh ? nh : 1, sizeof *vals);
  Tensorboard__Hparams__SessionStartInfo__HparamsEntry *ents =
      tbe__calloc(a, nh ? nh : 1, sizeof *ents);
  Tensorboard__Hparams__SessionStartInfo__HparamsEntry **pents =
      tbe__calloc(a, nh ? nh : 1, sizeof *pents);
  ProtobufCBinaryData c = {0, NULL};
  if (!infos || !pinfos || !mnames || !minfos || !pminfos || !vals || !ents || !pents) {
    rc = TBE_ENOMEM;
    goto done;
  }
  for (size_t i = 0; i < nh; i++) {
    Tensorboard__Hparams__HParamInfo init = TENSORBOARD__HPARAMS__HPARAM_INFO__INIT;
    Tensorboard__Hparams__Value vinit = TENSORBOARD__HPARAMS__VALUE__INIT;
    Tensorboard__Hparams__SessionStartInfo__HparamsEntry einit =
        TENSORBOARD__HPARAMS__SESSION_START_INFO__HPARAMS_ENTRY__INIT;
    infos[i] = init;
    vals[i] = vinit;
    ents[i] = einit;
    infos[i].name = (char *)hp[i].name;
    switch (hp[i].type) {
      case TBE_HPARAM_NUMBER:
        infos[i].type = TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_FLOAT64;
        vals[i].kind_case = TENSORBOARD__HPARAMS__VALUE__KIND_NUMBER_VALUE;
        vals[i].number_value = hp[i].number;
        break;
      case TBE_HPARAM_STRING:
        infos[i].type = TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_STRING;
        vals[i].kind_case = TENSORBOARD__HPARAMS__VALUE__KIND_STRING_VALUE;
        vals[i].string_value = (char *)hp[i].string;
        break;
      default:
        infos[i].type = TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_BOOL;
        vals[i].kind_case = TENSORBOARD__HPARAMS__VALUE__KIND_BOOL_VALUE;
        vals[i].bool_value = hp[i].boolean ? 1 : 0;
        break;
    }
    pinfos[i] = &infos[i];
    ents[i].key = (char *)hp[i].name;
    ents[i].value = &vals[i];
    pents[i] = &ents[i];
  }
  for (size_t i = 0; i < nm; i++) {
    Tensorboard__Hparams__MetricName ninit = TENSORBOARD__HPARAMS__METRIC_NAME__INIT;
    Tensorboard__Hparams__MetricInfo minit = TENSORBOARD__HPARAMS__METRIC_INFO__INIT;
    mnames[i] = ninit;
    minfos[i] = minit;
    mnames[i].tag = (char *)m[i].tag;
    minfos[i].name = &mnames[i];
    pminfos[i] = &minfos[i];
  }
  /* experiment */
  Tensorboard__Hparams__Experiment exp = TENSORBOARD__HPARAMS__EXPERIMENT__INIT;
  exp.n_hparam_infos = nh;
  exp.hparam_infos = pinfos;
  exp.n_metric_infos = nm;
  exp.metric_infos = pminfos;
  Tensorboard__Hparams__HParamsPluginData pd = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__INIT;
  pd.data_case = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__DATA_EXPERIMENT;
  pd.experiment = &exp;
  if (experiment) {
    if ((rc = pack_hp(a, &pd, &c)) < 0) goto done;
    if ((rc = write_hp_value(sub, "_hparams_/experiment", c, step, wall)) < 0) goto done;
    tbe__free(a, c.data);
    c.data = NULL;
  }
  /* session start */
  Tensorboard__Hparams__SessionStartInfo ssi = TENSORBOARD__HPARAMS__SESSION_START_INFO__INIT;
  ssi.n_hparams = nh;
  ssi.hparams = pents;
  if (start > 0) ssi.start_time_secs = start;
  pd.data_case = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__DATA_SESSION_START_INFO;
  pd.session_start_info = &ssi;
  if ((rc = pack_hp(a, &pd, &c)) < 0) goto done;
  if ((rc = write_hp_value(sub, "_hparams_/session_start_info", c, step, wall)) < 0) goto done;
  tbe__free(a, c.data);
  c.data = NULL;
  /* session end */
  Tensorboard__Hparams__SessionEndInfo sei = TENSORBOARD__HPARAMS__SESSION_END_INFO__INIT;
  sei.status = TENSORBOARD__HPARAMS__STATUS__STATUS_SUCCESS;
  pd.data_case = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__DATA_SESSION_END_INFO;
  pd.session_end_info = &sei;
  if ((rc = pack_hp(a, &pd, &c)) < 0) goto done;
  if ((rc = write_hp_value(sub, "_hparams_/session_end_info", c, step, wall)) < 0) goto done;
  for (size_t i = 0; i < nm && rc == 0; i++)
    rc = tbe_writer_add_scalar(sub, m[i].tag, m[i].value, step, wall);
done:
  tbe__free(a, c.data);
  tbe__free(a, infos);
  tbe__free(a, pinfos);
  tbe__free(a, mnames);
  tbe__free(a, minfos);
  tbe__free(a, pminfos);
  tbe__free(a, vals);
  tbe__free(a, ents);
  tbe__free(a, pents);
  return rc;
}

/* ---- checks ---- */

/* Whether name s[0..n) was seen before in `seen` (added now if not):
 * 1, 0, or a negative code (out of memory). */
static int seen_before(tbe__intern *seen, const char *s, size_t n) {
  int added = 0;
  uint32_t id;
  int rc = tbe__intern_add(seen, s, n, &id, &added);
  return rc < 0 ? rc : !added;
}

/* The hyper-parameters and metrics of one session: names and tags by the
 * tag rules, each name once and each tag once (TensorBoard keys a
 * session's values and the experiment's columns by them: a second value of
 * one name would be a column with two values), string values valid UTF-8,
 * known types.  Returns 0 or TBE_EINVAL / TBE_EUTF8 / TBE_ENOMEM. */
static int check_hparams(const tbe_allocator *a, const tbe_hparam *hp, size_t nh,
                         const tbe_metric *m, size_t nm) {
  if ((nh && !hp) || (nm && !m)) return TBE_EINVAL;
  size_t tl;
  int rc = 0;
  for (size_t i = 0; i < nh && !rc; i++) {
    if ((rc = tbe__writer_check_tag(hp[i].name, &tl)) < 0) break;
    if (hp[i].type == TBE_HPARAM_STRING)
      rc = tbe__writer_check_text(hp[i].string);
    else if (hp[i].type != TBE_HPARAM_NUMBER && hp[i].type != TBE_HPARAM_BOOL)
      rc = TBE_EINVAL;
  }
  for (size_t i = 0; i < nm && !rc; i++) rc = tbe__writer_check_tag(m[i].tag, &tl);
  tbe__intern names, tags;
  tbe__intern_init(&names, a, TBE__SEED_PROCESS);
  tbe__intern_init(&tags, a, TBE__SEED_PROCESS);
  for (size_t i = 0; i < nh && !rc; i++)
    if ((rc = seen_before(&names, hp[i].name, strlen(hp[i].name))) == 1) rc = TBE_EINVAL;
  for (size_t i = 0; i < nm && !rc; i++)
    if ((rc = seen_before(&tags, m[i].tag, strlen(m[i].tag))) == 1) rc = TBE_EINVAL;
  tbe__intern_deinit(&names);
  tbe__intern_deinit(&tags);
  return rc;
}

/* ---- experiments and sessions ---- */

/* The experiment record of `x`: every text valid UTF-8, names by the tag
 * rules, each hparam name and each metric tag once. */
static int write_experiment(tbe_writer *w, const tbe__hp_experiment *x, int64_t step, double wall) {
  const tbe_allocator *a = tbe__writer_allocator(w);
  size_t nh = x->nhparams, nm = x->nmetrics, tl;
  int rc = 0;
  if ((nh && !x->hparams) || (nm && !x->metrics)) return TBE_EINVAL;
  tbe__intern seen;
  tbe__intern_init(&seen, a, TBE__SEED_PROCESS);
  for (size_t i = 0; i < nh + nm && !rc; i++) {
    const tbe__hp_column *c = i < nh ? &x->hparams[i] : &x->metrics[i - nh];
    if ((rc = tbe__writer_check_tag(c->name, &tl)) < 0) break;
    if (c->display_name && (rc = tbe__writer_check_text(c->display_name)) < 0) break;
    if (c->description && (rc = tbe__writer_check_text(c->description)) < 0) break;
    if (i < nh && c->type != TBE_HPARAM_NUMBER && c->type != TBE_HPARAM_STRING &&
        c->type != TBE_HPARAM_BOOL)
      rc = TBE_EINVAL;
    /* one namespace per kind: a hparam and a metric may share a name */
    if (!rc) {
      tbe__buf k;
      tbe__buf_init(&k, a);
      tbe__buf_putc(&k, i < nh ? 'h' : 'm');
      tbe__buf_puts(&k, c->name);
      rc = tbe__buf_error(&k) ? TBE_ENOMEM : seen_before(&seen, (const char *)k.data, k.len);
      if (rc == 1) rc = TBE_EINVAL;
      tbe__buf_deinit(&k);
    }
  }
  tbe__intern_deinit(&seen);
  if (rc < 0) return rc;
  Tensorboard__Hparams__HParamInfo *hi = tbe__calloc(a, nh ? nh : 1, sizeof *hi);
  Tensorboard__Hparams__HParamInfo **phi = tbe__calloc(a, nh ? nh : 1, sizeof *phi);
  Tensorboard__Hparams__MetricName *mn = tbe__calloc(a, nm ? nm : 1, sizeof *mn);
  Tensorboard__Hparams__MetricInfo *mi = tbe__calloc(a, nm ? nm : 1, sizeof *mi);
  Tensorboard__Hparams__MetricInfo **pmi = tbe__calloc(a, nm ? nm : 1, sizeof *pmi);
  ProtobufCBinaryData c = {0, NULL};
  if (!hi || !phi || !mn || !mi || !pmi) {
    rc = TBE_ENOMEM;
    goto done;
  }
  static const Tensorboard__Hparams__DataType types[] = {
      TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_FLOAT64,
      TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_STRING,
      TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_BOOL};
  for (size_t i = 0; i < nh; i++) {
    Tensorboard__Hparams__HParamInfo init = TENSORBOARD__HPARAMS__HPARAM_INFO__INIT;
    hi[i] = init;
    hi[i].name = (char *)x->hparams[i].name;
    if (x->hparams[i].display_name) hi[i].display_name = (char *)x->hparams[i].display_name;
    if (x->hparams[i].description) hi[i].description = (char *)x->hparams[i].description;
    hi[i].type = types[x->hparams[i].type];
    hi[i].differs = x->hparams[i].differs ? 1 : 0;
    phi[i] = &hi[i];
  }
  for (size_t i = 0; i < nm; i++) {
    Tensorboard__Hparams__MetricName ninit = TENSORBOARD__HPARAMS__METRIC_NAME__INIT;
    Tensorboard__Hparams__MetricInfo minit = TENSORBOARD__HPARAMS__METRIC_INFO__INIT;
    mn[i] = ninit;
    mi[i] = minit;
    mn[i].tag = (char *)x->metrics[i].name;
    mi[i].name = &mn[i];
    if (x->metrics[i].display_name) mi[i].display_name = (char *)x->metrics[i].display_name;
    if (x->metrics[i].description) mi[i].description = (char *)x->metrics[i].description;
    pmi[i] = &mi[i];
  }
  Tensorboard__Hparams__Experiment exp = TENSORBOARD__HPARAMS__EXPERIMENT__INIT;
  exp.n_hparam_infos = nh;
  exp.hparam_infos = phi;
  exp.n_metric_infos = nm;
  exp.metric_infos = pmi;
  Tensorboard__Hparams__HParamsPluginData pd = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__INIT;
  pd.data_case = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__DATA_EXPERIMENT;
  pd.experiment = &exp;
  if (!(rc = pack_hp(a, &pd, &c))) rc = write_hp_value(w, "_hparams_/experiment", c, step, wall);
done:
  tbe__free(a, c.data);
  tbe__free(a, hi);
  tbe__free(a, phi);
  tbe__free(a, mn);
  tbe__free(a, mi);
  tbe__free(a, pmi);
  return rc;
}

int tbe__writer_hparams_session(tbe_writer *w, const tbe_hparam *hparams, size_t nhparams,
                                const tbe_metric *metrics, size_t nmetrics,
                                const tbe__hp_experiment *exp, double start, int64_t step,
                                double wall_time) {
  if (!w) return TBE_EINVAL;
  const tbe_allocator *a = tbe__writer_allocator(w);
  int rc = check_hparams(a, hparams, nhparams, metrics, nmetrics);
  if (rc < 0) return rc;
  if ((rc = tbe__writer_resolve_wall(&wall_time)) < 0) return rc;
  if (exp && (rc = write_experiment(w, exp, step, wall_time)) < 0) return rc;
  return hp_write_all(w, a, hparams, nhparams, metrics, nmetrics, step, wall_time, 0, start);
}

int tbe_writer_add_hparams(tbe_writer *w, const tbe_hparam *hparams, size_t nhparams,
                           const tbe_metric *metrics, size_t nmetrics, const char *subrun,
                           int64_t step, double wall_time) {
  if (!w) return TBE_EINVAL;
  if (nhparams + nmetrics == 0) return TBE_EINVAL;
  const tbe_allocator *a = tbe__writer_allocator(w);
  int rc = check_hparams(a, hparams, nhparams, metrics, nmetrics);
  if (rc < 0) return rc;
  if ((rc = tbe__writer_resolve_wall(&wall_time)) < 0) return rc;
  char name[64];
  if (!subrun) {
    snprintf(name, sizeof name, "%.6f", tbe__writer_wall_now());
    subrun = name;
  }
  if (tbe__name_check(subrun, NULL) < 0) return TBE_ENAME;
  tbe_writer *sub;
  if ((rc = tbe__writer_open_subrun(w, subrun, &sub)) < 0) return rc;
  rc = hp_write_all(sub, a, hparams, nhparams, metrics, nmetrics, step, wall_time, 1, 0);
  int rc2 = tbe_writer_close(sub);
  return rc < 0 ? rc : rc2;
}
