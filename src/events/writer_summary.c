/* writer_summary.c: the Summary values of the event writer
 * (include/tbexport/writer.h): described scalars, histograms (raw and
 * with TensorBoard's default buckets, histo.c), text, images (PNG,
 * png.c), PR curves and the custom-scalars layout.
 *
 * Each encoder checks its arguments (writer_core.h's rules; bad arguments
 * write nothing), builds the Summary.Value on its stack, with scratch
 * memory from the writer's allocator, freed before it returns, and hands
 * it to the core (tbe__writer_write_value), which packs the Event into the
 * writer's buffer as one record.  The values are laid out as TensorBoard's
 * own writers lay them out (plugin names, tensor shapes, data classes), so
 * both of TensorBoard's loaders read them as they read torch's; the
 * golden comparisons of test_writer hold them to it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "events/histo.h"
#include "events/png.h"
#include "events/writer_core.h"
#include "tbexport/error.h"
#include "tbexport/writer.h"
#include "tensorboard/custom_scalar.pb-c.h"
#include "tensorboard/plugins.pb-c.h"
#include "tensorboard/summary.pb-c.h"

/* ---- scalars with metadata ---- */

/* The metadata TensorBoard keeps a scalar's description with: its fast
 * loader drops the description of a plain simple_value and keeps it when
 * the metadata names the scalars plugin with DATA_CLASS_SCALAR. */
int tbe_writer_add_scalar_described(tbe_writer *w, const char *tag, double value, int64_t step,
                                    double wall_time, const char *display_name,
                                    const char *description) {
  if (!w) return TBE_EINVAL;
  if ((!display_name || !*display_name) && (!description || !*description))
    return tbe_writer_add_scalar(w, tag, value, step, wall_time);
  size_t tl;
  int rc = tbe__writer_check_tag(tag, &tl);
  if (rc < 0) return rc;
  if (display_name && (rc = tbe__writer_check_text(display_name)) < 0) return rc;
  if (description && (rc = tbe__writer_check_text(description)) < 0) return rc;
  if ((rc = tbe__writer_resolve_wall(&wall_time)) < 0) return rc;
  Tensorboard__SummaryMetadata__PluginData pd = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
  pd.plugin_name = (char *)"scalars";
  Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
  md.plugin_data = &pd;
  md.display_name = (char *)(display_name ? display_name : "");
  md.summary_description = (char *)(description ? description : "");
  md.data_class = TENSORBOARD__DATA_CLASS__DATA_CLASS_SCALAR;
  Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
  v.tag = (char *)tag;
  v.metadata = &md;
  v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
  v.simple_value = (float)value;
  return tbe__writer_write_value(w, &v, step, wall_time);
}

/* ---- histograms ---- */

static int write_histo(tbe_writer *w, const char *tag, Tensorboard__HistogramProto *h, int64_t step,
                       double wall_time) {
  Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
  v.tag = (char *)tag;
  v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_HISTO;
  v.histo = h;
  return tbe__writer_write_value(w, &v, step, wall_time);
}

int tbe_writer_add_histogram(tbe_writer *w, const char *tag, const double *values, size_t n,
                             int64_t step, double wall_time) {
  if (!w) return TBE_EINVAL;
  size_t tl;
  int rc = tbe__writer_check_tag(tag, &tl);
  if (rc < 0) return rc;
  if (!values || n == 0) return TBE_EINVAL;
  if ((rc = tbe__writer_resolve_wall(&wall_time)) < 0) return rc;
  const tbe_allocator *a = tbe__writer_allocator(w);
  tbe__histo hh;
  if ((rc = tbe__histo_default(a, values, n, &hh)) < 0) return rc;
  Tensorboard__HistogramProto h = TENSORBOARD__HISTOGRAM_PROTO__INIT;
  h.min = hh.min;
  h.max = hh.max;
  h.num = hh.num;
  h.sum = hh.sum;
  h.sum_squares = hh.sum_squares;
  h.n_bucket_limit = h.n_bucket = hh.n;
  h.bucket_limit = hh.limits;
  h.bucket = hh.counts;
  rc = write_histo(w, tag, &h, step, wall_time);
  tbe__histo_free(a, &hh);
  return rc;
}

int tbe_writer_add_histogram_raw(tbe_writer *w, const char *tag, double min, double max, double num,
                                 double sum, double sum_squares, const double *bucket_limits,
                                 const double *bucket_counts, size_t nbuckets, int64_t step,
                                 double wall_time) {
  if (!w) return TBE_EINVAL;
  size_t tl;
  int rc = tbe__writer_check_tag(tag, &tl);
  if (rc < 0) return rc;
  if (!bucket_limits || !bucket_counts || nbuckets == 0) return TBE_EINVAL;
  if (isnan(min) || isnan(max) || isnan(num) || isnan(sum) || isnan(sum_squares) || num < 0)
    return TBE_EINVAL;
  for (size_t i = 0; i < nbuckets; i++) {
    if (isnan(bucket_limits[i]) || isnan(bucket_counts[i]) || bucket_counts[i] < 0)
      return TBE_EINVAL;
    if (i && !(bucket_limits[i] > bucket_limits[i - 1])) return TBE_EINVAL;
  }
  if ((rc = tbe__writer_resolve_wall(&wall_time)) < 0) return rc;
  Tensorboard__HistogramProto h = TENSORBOARD__HISTOGRAM_PROTO__INIT;
  h.min = min;
  h.max = max;
  h.num = num;
  h.sum = sum;
  h.sum_squares = sum_squares;
  h.n_bucket_limit = h.n_bucket = nbuckets;
  h.bucket_limit = (double *)bucket_limits;
  h.bucket = (double *)bucket_counts;
  return write_histo(w, tag, &h, step, wall_time);
}

/* ---- text ---- */

int tbe_writer_add_text(tbe_writer *w, const char *tag, const char *markdown, int64_t step,
                        double wall_time) {
  return tbe_writer_add_text_described(w, tag, markdown, step, wall_time, NULL);
}

int tbe_writer_add_text_described(tbe_writer *w, const char *tag, const char *markdown,
                                  int64_t step, double wall_time, const char *description) {
  if (!w) return TBE_EINVAL;
  size_t tl;
  int rc = tbe__writer_check_tag(tag, &tl);
  if (rc < 0) return rc;
  if ((rc = tbe__writer_check_text(markdown)) < 0) return rc;
  if (description && (rc = tbe__writer_check_text(description)) < 0) return rc;
  if ((rc = tbe__writer_resolve_wall(&wall_time)) < 0) return rc;
  static const char sfx[] = "/text_summary";
  const tbe_allocator *a = tbe__writer_allocator(w);
  char *full = tbe__alloc(a, tl + sizeof sfx);
  if (!full) return TBE_ENOMEM;
  memcpy(full, tag, tl);
  memcpy(full + tl, sfx, sizeof sfx);

  Tensorboard__TensorShapeProto__Dim dim = TENSORBOARD__TENSOR_SHAPE_PROTO__DIM__INIT;
  dim.size = 1;
  Tensorboard__TensorShapeProto__Dim *dims[1] = {&dim};
  Tensorboard__TensorShapeProto shape = TENSORBOARD__TENSOR_SHAPE_PROTO__INIT;
  shape.n_dim = 1;
  shape.dim = dims;
  ProtobufCBinaryData str = {strlen(markdown), (uint8_t *)markdown};
  Tensorboard__TensorProto t = TENSORBOARD__TENSOR_PROTO__INIT;
  t.dtype = TENSORBOARD__DATA_TYPE__DT_STRING;
  t.tensor_shape = &shape;
  t.n_string_val = 1;
  t.string_val = &str;
  Tensorboard__SummaryMetadata__PluginData pd = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
  pd.plugin_name = (char *)"text";
  Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
  md.plugin_data = &pd;
  if (description) md.summary_description = (char *)description;
  Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
  v.tag = full;
  v.metadata = &md;
  v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
  v.tensor = &t;
  rc = tbe__writer_write_value(w, &v, step, wall_time);
  tbe__free(a, full);
  return rc;
}

/* ---- images ---- */

int tbe_writer_add_image(tbe_writer *w, const char *tag, const uint8_t *pixels, size_t size,
                         int width, int height, int channels, int64_t step, double wall_time) {
  if (!w) return TBE_EINVAL;
  size_t tl;
  int rc = tbe__writer_check_tag(tag, &tl);
  if (rc < 0) return rc;
  if (!pixels || width <= 0 || height <= 0 || channels < 1 || channels > 4) return TBE_EINVAL;
  size_t need = (size_t)width * (size_t)height;
  if (need / (size_t)width != (size_t)height || need > SIZE_MAX / (size_t)channels)
    return TBE_EINVAL;
  if (need * (size_t)channels != size) return TBE_EINVAL;
  if ((rc = tbe__writer_resolve_wall(&wall_time)) < 0) return rc;
  tbe__buf png;
  const tbe_allocator *a = tbe__writer_allocator(w);
  tbe__buf_init(&png, a);
  rc = tbe__png_encode(&png, a, pixels, (uint32_t)width, (uint32_t)height, channels);
  if (rc < 0) {
    tbe__buf_deinit(&png);
    return rc;
  }
  Tensorboard__Summary__Image im = TENSORBOARD__SUMMARY__IMAGE__INIT;
  im.height = height;
  im.width = width;
  im.colorspace = channels;
  im.encoded_image_string.data = png.data;
  im.encoded_image_string.len = png.len;
  Tensorboard__SummaryMetadata__PluginData pd = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
  pd.plugin_name = (char *)"images";
  Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
  md.plugin_data = &pd;
  Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
  v.tag = (char *)tag;
  v.metadata = &md;
  v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_IMAGE;
  v.image = &im;
  rc = tbe__writer_write_value(w, &v, step, wall_time);
  tbe__buf_deinit(&png);
  return rc;
}

/* ---- PR curves ---- */

int tbe_writer_add_pr_curve(tbe_writer *w, const char *tag, const uint8_t *labels,
                            const float *predictions, size_t n, unsigned num_thresholds,
                            int64_t step, double wall_time) {
  if (!w) return TBE_EINVAL;
  size_t tl;
  int rc = tbe__writer_check_tag(tag, &tl);
  if (rc < 0) return rc;
  if (!labels || !predictions || n == 0) return TBE_EINVAL;
  if (num_thresholds == 0) num_thresholds = 127;
  if (num_thresholds < 2 || num_thresholds > (1u << 20)) return TBE_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!(predictions[i] >= 0.0f && predictions[i] <= 1.0f)) return TBE_EINVAL;
  if ((rc = tbe__writer_resolve_wall(&wall_time)) < 0) return rc;
  size_t k = num_thresholds;
  const tbe_allocator *a = tbe__writer_allocator(w);
  double *tpb = tbe__calloc(a, 2 * k, sizeof(double));
  float *data = tbe__alloc(a, 6 * k * sizeof(float));
  if (!tpb || !data) {
    tbe__free(a, tpb);
    tbe__free(a, data);
    return TBE_ENOMEM;
  }
  double *fpb = tpb + k;
  /* Like TensorBoard's pr_curve summary: bucket floor(p * (k-1)) in float
   * arithmetic; then reverse cumulative sums give TP/FP at each threshold
   * i/(k-1). */
  float scale = (float)(k - 1);
  for (size_t i = 0; i < n; i++) {
    float f = floorf(predictions[i] * scale);
    size_t b = (size_t)f;
    if (b > k - 1) b = k - 1;
    if (labels[i])
      tpb[b] += 1.0;
    else
      fpb[b] += 1.0;
  }
  double tp = 0, fp = 0;
  for (size_t j = k; j-- > 0;) {
    tp += tpb[j];
    fp += fpb[j];
    tpb[j] = tp;
    fpb[j] = fp;
  }
  for (size_t j = 0; j < k; j++) {
    double TP = tpb[j], FP = fpb[j], TN = fpb[0] - FP, FN = tpb[0] - TP;
    double pd = TP + FP > 1e-7 ? TP + FP : 1e-7;
    double rd = TP + FN > 1e-7 ? TP + FN : 1e-7;
    data[0 * k + j] = (float)TP;
    data[1 * k + j] = (float)FP;
    data[2 * k + j] = (float)TN;
    data[3 * k + j] = (float)FN;
    data[4 * k + j] = (float)(TP / pd);
    data[5 * k + j] = (float)(TP / rd);
  }
  Tensorboard__TensorShapeProto__Dim d0 = TENSORBOARD__TENSOR_SHAPE_PROTO__DIM__INIT;
  Tensorboard__TensorShapeProto__Dim d1 = TENSORBOARD__TENSOR_SHAPE_PROTO__DIM__INIT;
  d0.size = 6;
  d1.size = (int64_t)k;
  Tensorboard__TensorShapeProto__Dim *dims[2] = {&d0, &d1};
  Tensorboard__TensorShapeProto shape = TENSORBOARD__TENSOR_SHAPE_PROTO__INIT;
  shape.n_dim = 2;
  shape.dim = dims;
  Tensorboard__TensorProto t = TENSORBOARD__TENSOR_PROTO__INIT;
  t.dtype = TENSORBOARD__DATA_TYPE__DT_FLOAT;
  t.tensor_shape = &shape;
  t.n_float_val = 6 * k;
  t.float_val = data;
  Tensorboard__PrCurvePluginData prd = TENSORBOARD__PR_CURVE_PLUGIN_DATA__INIT;
  prd.num_thresholds = num_thresholds;
  uint8_t content[16];
  Tensorboard__SummaryMetadata__PluginData pd = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
  pd.plugin_name = (char *)"pr_curves";
  pd.content.data = content;
  pd.content.len = tensorboard__pr_curve_plugin_data__pack(&prd, content);
  Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
  md.plugin_data = &pd;
  Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
  v.tag = (char *)tag;
  v.metadata = &md;
  v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
  v.tensor = &t;
  rc = tbe__writer_write_value(w, &v, step, wall_time);
  tbe__free(a, tpb);
  tbe__free(a, data);
  return rc;
}

/* ---- custom scalars ---- */

int tbe_writer_set_custom_scalars_layout(tbe_writer *w, const tbe_category *cats, size_t ncats) {
  return tbe__writer_layout_at(w, cats, ncats, tbe__writer_wall_now());
}

/* The layout by writer.h's rules; its charts in *nch, the series of its
 * margin charts in *nser. */
static int layout_check(const tbe_category *cats, size_t ncats, size_t *nch, size_t *nser) {
  int rc;
  size_t tl;
  *nch = *nser = 0;
  for (size_t i = 0; i < ncats; i++) {
    if ((rc = tbe__writer_check_text(cats[i].title)) < 0) return rc;
    if (cats[i].ncharts && !cats[i].charts) return TBE_EINVAL;
    for (size_t j = 0; j < cats[i].ncharts; j++) {
      const tbe_chart *c = &cats[i].charts[j];
      if ((rc = tbe__writer_check_text(c->title)) < 0) return rc;
      if (c->ntags == 0 || !c->tags) return TBE_EINVAL;
      if (c->margin && c->ntags % 3 != 0) return TBE_EINVAL;
      for (size_t k = 0; k < c->ntags; k++)
        if ((rc = tbe__writer_check_tag(c->tags[k], &tl)) < 0) return rc;
      (*nch)++;
      if (c->margin) *nser += c->ntags / 3;
    }
  }
  return 0;
}

int tbe__writer_layout_at(tbe_writer *w, const tbe_category *cats, size_t ncats, double wall) {
  if (!w || !cats || ncats == 0) return TBE_EINVAL;
  size_t nch, nser;
  int rc = layout_check(cats, ncats, &nch, &nser);
  if (rc < 0) return rc;
  const tbe_allocator *a = tbe__writer_allocator(w);
  Tensorboard__Category *tc = tbe__calloc(a, ncats, sizeof *tc);
  Tensorboard__Category **ptc = tbe__calloc(a, ncats, sizeof *ptc);
  Tensorboard__Chart *ch = tbe__calloc(a, nch + 1, sizeof *ch);
  Tensorboard__Chart **pch = tbe__calloc(a, nch + 1, sizeof *pch);
  Tensorboard__MultilineChartContent *ml = tbe__calloc(a, nch + 1, sizeof *ml);
  Tensorboard__MarginChartContent *mg = tbe__calloc(a, nch + 1, sizeof *mg);
  Tensorboard__MarginChartContent__Series *se = tbe__calloc(a, nser + 1, sizeof *se);
  Tensorboard__MarginChartContent__Series **pse = tbe__calloc(a, nser + 1, sizeof *pse);
  uint8_t *packed = NULL;
  if (!tc || !ptc || !ch || !pch || !ml || !mg || !se || !pse) {
    rc = TBE_ENOMEM;
    goto done;
  }
  size_t ci = 0, si = 0;
  for (size_t i = 0; i < ncats; i++) {
    Tensorboard__Category cinit = TENSORBOARD__CATEGORY__INIT;
    tc[i] = cinit;
    tc[i].title = (char *)cats[i].title;
    tc[i].closed = cats[i].closed ? 1 : 0;
    tc[i].chart = pch + ci;
    tc[i].n_chart = cats[i].ncharts;
    ptc[i] = &tc[i];
    for (size_t j = 0; j < cats[i].ncharts; j++, ci++) {
      const tbe_chart *c = &cats[i].charts[j];
      Tensorboard__Chart chinit = TENSORBOARD__CHART__INIT;
      ch[ci] = chinit;
      ch[ci].title = (char *)c->title;
      if (!c->margin) {
        Tensorboard__MultilineChartContent minit = TENSORBOARD__MULTILINE_CHART_CONTENT__INIT;
        ml[ci] = minit;
        ml[ci].n_tag = c->ntags;
        ml[ci].tag = (char **)c->tags;
        ch[ci].content_case = TENSORBOARD__CHART__CONTENT_MULTILINE;
        ch[ci].multiline = &ml[ci];
      } else {
        Tensorboard__MarginChartContent ginit = TENSORBOARD__MARGIN_CHART_CONTENT__INIT;
        mg[ci] = ginit;
        mg[ci].series = pse + si;
        mg[ci].n_series = c->ntags / 3;
        for (size_t k = 0; k + 2 < c->ntags; k += 3, si++) {
          Tensorboard__MarginChartContent__Series sinit =
              TENSORBOARD__MARGIN_CHART_CONTENT__SERIES__INIT;
          se[si] = sinit;
          se[si].value = (char *)c->tags[k];
          se[si].lower = (char *)c->tags[k + 1];
          se[si].upper = (char *)c->tags[k + 2];
          pse[si] = &se[si];
        }
        ch[ci].content_case = TENSORBOARD__CHART__CONTENT_MARGIN;
        ch[ci].margin = &mg[ci];
      }
      pch[ci] = &ch[ci];
    }
  }
  Tensorboard__Layout lay = TENSORBOARD__LAYOUT__INIT;
  lay.n_category = ncats;
  lay.category = ptc;
  size_t n = tensorboard__layout__get_packed_size(&lay);
  packed = tbe__alloc(a, n ? n : 1);
  if (!packed) {
    rc = TBE_ENOMEM;
    goto done;
  }
  tensorboard__layout__pack(&lay, packed);
  {
    ProtobufCBinaryData str = {n, packed};
    Tensorboard__TensorShapeProto shape = TENSORBOARD__TENSOR_SHAPE_PROTO__INIT;
    Tensorboard__TensorProto t = TENSORBOARD__TENSOR_PROTO__INIT;
    t.dtype = TENSORBOARD__DATA_TYPE__DT_STRING;
    t.tensor_shape = &shape;
    t.n_string_val = 1;
    t.string_val = &str;
    Tensorboard__SummaryMetadata__PluginData pd = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
    pd.plugin_name = (char *)"custom_scalars";
    Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
    md.plugin_data = &pd;
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.tag = (char *)"custom_scalars__config__";
    v.metadata = &md;
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
    v.tensor = &t;
    rc = tbe__writer_write_value(w, &v, 0, wall);
  }
done:
  tbe__free(a, packed);
  tbe__free(a, tc);
  tbe__free(a, ptc);
  tbe__free(a, ch);
  tbe__free(a, pch);
  tbe__free(a, ml);
  tbe__free(a, mg);
  tbe__free(a, se);
  tbe__free(a, pse);
  return rc;
}
