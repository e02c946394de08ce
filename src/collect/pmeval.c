/* pmeval.c: the deferred PM evaluation (hwmetrics.h, tbe__pm_eval_spool):
 * the raw counter data images a spool holds (TBEXPORT_PM_EVAL=deferred,
 * spool.h's TBE__SP_PM_* items) turned into the TBE__SP_METRIC_SAMPLES
 * items live mode writes in the program, at conversion, in the converting
 * process (tbexport, or tbe_profiler_stop's conversion after the work).
 *
 * Per device: its TBE__SP_PM_CONFIG (chip, CUPTI metric names, counter
 * availability image) makes a profiler host object as the collector's
 * (cuptiProfilerHostInitialize for PM sampling, the metrics added, the
 * config image built: the host API alone, no GPU); each image is put
 * together from its TBE__SP_PM_IMAGE parts (zero-filled to its full
 * size), and each sample its TBE__SP_PM_TIMES names is evaluated
 * (cuptiProfilerHostEvaluateToGpuValues, the sample's index as the range)
 * into items of exactly live mode's layout: the same metric ids (the
 * collector defined them), the sample's end as its time, the values in
 * the ids' order.  The importer reads them as it reads live mode's, so
 * every output is the same (test_collect_hwmetrics runs both).
 *
 * The results go to the end of the spool, in frames of their own (a
 * spool cut short by a crash is first cut back to its last whole frame,
 * and a note says so), closed by one TBE__SP_PM_EVALUATED per device:
 * a spool holding one is not evaluated again.  Where a device's images
 * cannot be evaluated (no libcupti here, a configuration the host API
 * refuses, a bad image), a TBE__SP_METRIC_STATUS says why: the importer
 * turns it into the one line of a failed collection, and the rest of
 * the run is converted as usual.
 *
 * Memory: the spool mapped (as the importer maps it), one image per device
 * (at most TBE__SP_PM_IMAGE_MAX, made when its first part is read) and
 * the output buffer, written out every TBE__EV_FRAME
 * bytes.  Nothing from the spool is trusted: lengths are checked against
 * the items, parts must come in order, indexes past an image are
 * evaluated by CUPTI (which refuses them) and counted. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/collector.h"
#include "collect/hwmetrics.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/fsutil.h"
#include "tbexport/error.h"

#define TBE__EV_DEV 64                  /* devices a spool may name */
#define TBE__EV_MET 64                  /* metrics a configuration may name */
#define TBE__EV_ITEM 65535u             /* an item's body: u16 length */
#define TBE__EV_FRAME ((size_t)8 << 20) /* output written out at this size */

/* ---- state ---- */

typedef struct evdev {
  uint32_t device;
  int configured;  /* a TBE__SP_PM_CONFIG was read */
  unsigned status; /* TBE__MS_OK, or why nothing more is evaluated */
  char reason[200];
  tbe__sp_pm_config c;
  uint32_t ids[TBE__EV_MET];
  const char *names[TBE__EV_MET];
  char *namebuf, chip[72];
  uint8_t *avail, *config;
  tbe__ph_object *host;
  uint8_t *img;              /* c.full bytes */
  uint32_t seq, total, have; /* the image being put together */
  int img_ok;
  uint64_t samples, failed;
  uint8_t *item; /* the samples item being filled */
  size_t item_len;
  uint32_t item_n;
} evdev;

typedef struct evctx {
  const tbe__cupti_host_api *h;
  evdev *dev[TBE__EV_DEV];
  size_t ndev;
  int evaluated;     /* a TBE__SP_PM_EVALUATED was seen */
  int raw;           /* a TBE__SP_PM_CONFIG was seen */
  const char *nolib; /* why no host API could be loaded, or NULL */
  tbe__buf out;
  int fd, err;
} evctx;

static evdev *dev_of(evctx *x, uint32_t d, int make) {
  for (size_t i = 0; i < x->ndev; i++)
    if (x->dev[i]->device == d) return x->dev[i];
  if (!make || x->ndev == TBE__EV_DEV) return NULL;
  evdev *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->device = d;
  x->dev[x->ndev++] = v;
  return v;
}

static void dev_fail(evdev *v, unsigned status, const char *what, CUptiResult r) {
  if (v->status != TBE__MS_OK) return;
  v->status = status;
  if (r == CUPTI_SUCCESS)
    snprintf(v->reason, sizeof v->reason, "evaluating the samples at conversion: %s", what);
  else
    snprintf(v->reason, sizeof v->reason,
             "evaluating the samples at conversion: %s: CUPTI error %d", what, (int)r);
}

static void dev_free(const tbe__cupti_host_api *h, evdev *v) {
  if (v->host && h && h->deinitialize) {
    tbe__ph_deinit q = {TBE__PSIZE(tbe__ph_deinit, pHostObject), NULL, v->host};
    h->deinitialize(&q);
  }
  free(v->namebuf);
  free(v->avail);
  free(v->config);
  free(v->img);
  free(v->item);
  free(v);
}

/* Writes what the output holds as one frame (at TBE__EV_FRAME, and at the end). */
static void out_flush(evctx *x) {
  if (!x->out.len || x->err) return;
  int rc = tbe__buf_error(&x->out);
  if (!rc) rc = tbe__spool_write_frame(x->fd, x->out.data, x->out.len);
  if (rc) x->err = rc;
  tbe__buf_clear(&x->out);
}

/* ---- a device's configuration ---- */

/* The host object of the configuration, as the collector built it. */
static void dev_host(const evctx *x, evdev *v) {
  const tbe__cupti_host_api *h = x->h;
  if (x->nolib) {
    dev_fail(v, TBE__MS_FAILED, x->nolib, CUPTI_SUCCESS);
    return;
  }
  if (!h || !h->initialize || !h->add_metrics || !h->evaluate || !h->config_image_size ||
      !h->config_image || !h->deinitialize) {
    dev_fail(v, TBE__MS_UNSUPPORTED, "this CUPTI has no profiler host API", CUPTI_SUCCESS);
    return;
  }
  tbe__ph_init in = {
      TBE__PSIZE(tbe__ph_init, pHostObject), NULL, TBE__PH_PM_SAMPLING, v->chip, v->avail, NULL};
  CUptiResult r = h->initialize(&in);
  if (r != CUPTI_SUCCESS) {
    dev_fail(v, TBE__MS_FAILED, "cuptiProfilerHostInitialize", r);
    return;
  }
  v->host = in.pHostObject;
  tbe__ph_add add = {TBE__PSIZE(tbe__ph_add, numMetrics), NULL, v->host, v->names, v->c.nmetrics};
  if ((r = h->add_metrics(&add)) != CUPTI_SUCCESS) {
    dev_fail(v, TBE__MS_FAILED, "cuptiProfilerHostConfigAddMetrics", r);
    return;
  }
  tbe__ph_image_size sz = {TBE__PSIZE(tbe__ph_image_size, configImageSize), NULL, v->host, 0};
  if ((r = h->config_image_size(&sz)) != CUPTI_SUCCESS) {
    dev_fail(v, TBE__MS_FAILED, "cuptiProfilerHostGetConfigImageSize", r);
    return;
  }
  if (!(v->config = malloc(sz.configImageSize ? sz.configImageSize : 1))) {
    dev_fail(v, TBE__MS_FAILED, "out of memory", CUPTI_SUCCESS);
    return;
  }
  tbe__ph_image im = {TBE__PSIZE(tbe__ph_image, pConfigImage), NULL, v->host, sz.configImageSize,
                      v->config};
  if ((r = h->config_image(&im)) != CUPTI_SUCCESS) {
    dev_fail(v, TBE__MS_FAILED, "cuptiProfilerHostGetConfigImage", r);
    return;
  }
}

static void on_config(evctx *x, const uint8_t *b, size_t len) {
  tbe__sp_pm_config c;
  if (len < sizeof c) return;
  memcpy(&c, b, sizeof c);
  evdev *v = dev_of(x, c.device, 1);
  if (!v || v->configured) return; /* written again after a lost frame: the first holds */
  v->configured = 1;
  x->raw = 1;
  v->c = c;
  size_t need = sizeof c + 4 * (size_t)c.nmetrics + c.chip_len + (size_t)c.names_len + c.avail_len;
  if (c.nmetrics == 0 || c.nmetrics > TBE__EV_MET || c.chip_len >= sizeof v->chip || need != len ||
      c.head > c.full || c.full == 0 || c.full > TBE__SP_PM_IMAGE_MAX) {
    dev_fail(v, TBE__MS_FAILED, "a malformed PM configuration item", CUPTI_SUCCESS);
    return;
  }
  const uint8_t *p = b + sizeof c;
  memcpy(v->ids, p, 4 * (size_t)c.nmetrics);
  p += 4 * (size_t)c.nmetrics;
  memcpy(v->chip, p, c.chip_len);
  v->chip[c.chip_len] = '\0';
  p += c.chip_len;
  v->namebuf = malloc((size_t)c.names_len + 1);
  v->avail = c.avail_len ? malloc(c.avail_len) : NULL;
  v->item = malloc(TBE__EV_ITEM);
  if (!v->namebuf || (c.avail_len && !v->avail) || !v->item) {
    dev_fail(v, TBE__MS_FAILED, "out of memory", CUPTI_SUCCESS);
    return;
  }
  memcpy(v->namebuf, p, c.names_len);
  v->namebuf[c.names_len] = '\0';
  p += c.names_len;
  if (c.avail_len) memcpy(v->avail, p, c.avail_len);
  /* the names: nmetrics NUL-terminated strings, exactly */
  size_t at = 0, k = 0;
  while (at < c.names_len && k < c.nmetrics) {
    v->names[k++] = v->namebuf + at;
    at += strlen(v->namebuf + at) + 1;
  }
  if (k != c.nmetrics || at != c.names_len) {
    dev_fail(v, TBE__MS_FAILED, "a malformed PM configuration item", CUPTI_SUCCESS);
    return;
  }
  dev_host(x, v);
}

/* ---- images and samples ---- */

static void on_image(evctx *x, const uint8_t *b, size_t len) {
  tbe__sp_pm_image h;
  if (len < sizeof h) return;
  memcpy(&h, b, sizeof h);
  evdev *v = dev_of(x, h.device, 0);
  if (!v || !v->configured || v->status != TBE__MS_OK) return;
  size_t n = len - sizeof h;
  if (h.offset == 0) {
    v->seq = h.seq;
    v->total = h.total;
    v->have = 0;
    /* made with the first image: a configuration alone claims no memory */
    if (!v->img && h.total <= v->c.full) v->img = malloc(v->c.full);
    v->img_ok = v->img && h.total <= v->c.full;
    if (v->img_ok) memset(v->img + h.total, 0, v->c.full - h.total);
  }
  if (!v->img_ok || h.seq != v->seq || h.offset != v->have || n > (size_t)v->total - v->have) {
    v->img_ok = 0; /* a part out of order: the image's samples fail */
    return;
  }
  memcpy(v->img + v->have, b + sizeof h, n);
  v->have += (uint32_t)n;
}

static void item_flush(evctx *x, evdev *v) {
  if (!v->item_n) return;
  tbe__sp_metric_samples h = {v->device, v->c.nmetrics, v->item_n, 0};
  memcpy(v->item, &h, sizeof h);
  tbe__spool_item(&x->out, TBE__SP_METRIC_SAMPLES, v->item, v->item_len);
  v->item_n = 0;
  v->item_len = 0;
  if (x->out.len >= TBE__EV_FRAME) out_flush(x);
}

/* One sample into the device's item: live mode's layout (pmsampling.c). */
static void item_add(evctx *x, evdev *v, int64_t ts, const double *val) {
  size_t per = 8 + 8 * (size_t)v->c.nmetrics;
  if (v->item_n && v->item_len + per > TBE__EV_ITEM) item_flush(x, v);
  if (!v->item_n) {
    v->item_len = sizeof(tbe__sp_metric_samples);
    memcpy(v->item + v->item_len, v->ids, 4 * (size_t)v->c.nmetrics);
    v->item_len += 4 * (size_t)v->c.nmetrics;
  }
  memcpy(v->item + v->item_len, &ts, 8);
  memcpy(v->item + v->item_len + 8, val, 8 * (size_t)v->c.nmetrics);
  v->item_len += per;
  v->item_n++;
}

static void on_times(evctx *x, const uint8_t *b, size_t len) {
  tbe__sp_pm_times h;
  if (len < sizeof h) return;
  memcpy(&h, b, sizeof h);
  evdev *v = dev_of(x, h.device, 0);
  if (!v || !v->configured) return;
  if ((len - sizeof h) / sizeof(tbe__sp_pm_time) < h.n) {
    v->failed += (len - sizeof h) / sizeof(tbe__sp_pm_time);
    return;
  }
  int ok = v->status == TBE__MS_OK && v->img_ok && h.seq == v->seq && v->have == v->total;
  double val[TBE__EV_MET];
  for (uint32_t i = 0; i < h.n; i++) {
    tbe__sp_pm_time t;
    memcpy(&t, b + sizeof h + (size_t)i * sizeof t, sizeof t);
    tbe__ph_eval ev = {TBE__PSIZE(tbe__ph_eval, pMetricValues),
                       NULL,
                       v->host,
                       v->img,
                       v->c.full,
                       t.index,
                       v->names,
                       v->c.nmetrics,
                       val};
    if (!ok || x->h->evaluate(&ev) != CUPTI_SUCCESS) {
      v->failed++;
      continue;
    }
    item_add(x, v, t.end, val);
    v->samples++;
  }
}

static int on_item(void *ctx, unsigned type, const uint8_t *body, size_t len) {
  evctx *x = ctx;
  switch (type) {
    case TBE__SP_PM_EVALUATED: x->evaluated = 1; break;
    case TBE__SP_PM_CONFIG:
      if (x->h)
        on_config(x, body, len);
      else
        x->raw = 1;
      break;
    case TBE__SP_PM_IMAGE:
      if (x->h) on_image(x, body, len);
      break;
    case TBE__SP_PM_TIMES:
      if (x->h) on_times(x, body, len);
      break;
    default: break;
  }
  return 0;
}

/* ---- the spool ---- */

/* The spool mapped (read-only, private: what is appended later is not
 * in it).  An empty file maps nothing. */
static int map_spool(const char *path, uint8_t **data, size_t *n, char *why, size_t whylen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  int rc = fd < 0 || fstat(fd, &st) != 0 ? -errno : 0;
  *data = NULL;
  *n = 0;
  if (!rc && st.st_size > 0) {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
      rc = -errno;
    else
      *data = m, *n = (size_t)st.st_size;
  }
  if (fd >= 0) close(fd);
  if (rc) snprintf(why, whylen, "%s: cannot read: %s", path, tbe_strerror(rc));
  return rc;
}

/* The closing items: per device, its status where it failed, then
 * TBE__SP_PM_EVALUATED.  Returns the first device's failure line, if any. */
static void close_devices(evctx *x, char *why, size_t whylen) {
  tbe__hwm_out o = {&x->out, NULL, NULL, NULL, NULL};
  for (size_t i = 0; i < x->ndev; i++) {
    evdev *v = x->dev[i];
    item_flush(x, v);
    if (v->status == TBE__MS_OK && v->failed && !v->samples) {
      v->status = TBE__MS_FAILED;
      snprintf(v->reason, sizeof v->reason,
               "evaluating the samples at conversion: CUPTI evaluated none of the %llu samples "
               "(a damaged counter image?)",
               (unsigned long long)v->failed);
    } else if (v->status == TBE__MS_OK && v->failed) {
      char line[200];
      snprintf(line, sizeof line,
               "PM sampling on GPU %u: CUPTI could not evaluate %llu of the %llu samples at "
               "conversion; they are left out",
               v->device, (unsigned long long)v->failed,
               (unsigned long long)(v->failed + v->samples));
      tbe__spool_item(&x->out, TBE__SP_NOTE, line, strlen(line));
    }
    if (v->status != TBE__MS_OK) {
      tbe__hwm_put_status(&o, TBE__MKIND_PM_SAMPLING, v->device, v->status, 0, 0, 0, v->reason);
      if (why[0] == '\0')
        snprintf(why, whylen, "GPU metrics (PM sampling) on GPU %u: %s", v->device, v->reason);
    }
    tbe__sp_pm_evaluated e = {v->device, v->status, v->samples, v->failed};
    tbe__spool_item(&x->out, TBE__SP_PM_EVALUATED, &e, sizeof e);
  }
}

int tbe__pm_eval_spool(const char *path, const tbe__cupti_host_api *host, char *why,
                       size_t whylen) {
  if (whylen) why[0] = '\0';
  uint8_t *data;
  size_t n;
  int rc = map_spool(path, &data, &n, why, whylen);
  if (rc || !n) return rc;
  evctx x;
  memset(&x, 0, sizeof x);
  x.fd = -1;
  tbe__spool_tail tail;
  /* first: whether there is anything to do */
  rc = tbe__spool_scan(data, n, on_item, &x, &tail);
  if (rc || !x.raw || x.evaluated) {
    munmap(data, n);
    return 0; /* not a spool (the importer says so), nothing raw, or done before */
  }
  tbe__cupti_api api;
  char lwhy[200] = "";
  if (!host && tbe__cupti_load(&api, lwhy, sizeof lwhy) == 0) host = &api.m.host;
  x.h = host;
  static const tbe__cupti_host_api none;
  if (!x.h) { /* every device fails with the loader's reason */
    x.h = &none;
    x.nolib = lwhy[0] ? lwhy : "libcupti not found";
  }
  tbe_allocator ev_alloc;
  tbe__allocator_init(&ev_alloc, NULL);
  tbe__buf_init(&x.out, &ev_alloc);
  x.fd = open(path, O_WRONLY | O_CLOEXEC);
  if (x.fd < 0 || (tail.bytes && ftruncate(x.fd, (off_t)tail.good_bytes) != 0) ||
      lseek(x.fd, 0, SEEK_END) < 0) {
    rc = -errno;
    snprintf(why, whylen, "%s: cannot append the evaluated PM samples: %s", path, tbe_strerror(rc));
  }
  if (!rc && tail.bytes) {
    char line[200];
    snprintf(line, sizeof line,
             "the spool's last %zu bytes (%s at byte %zu) were cut off when the PM samples were "
             "evaluated at conversion",
             tail.bytes, tail.why ? tail.why : "a bad frame", tail.good_bytes);
    tbe__spool_item(&x.out, TBE__SP_NOTE, line, strlen(line));
  }
  if (!rc) {
    tbe__spool_scan(data, tail.good_bytes, on_item, &x, &tail);
    close_devices(&x, why, whylen);
    out_flush(&x);
    if (x.err) {
      rc = x.err;
      snprintf(why, whylen, "%s: cannot append the evaluated PM samples: %s", path,
               tbe_strerror(rc));
    }
  }
  if (x.fd >= 0) close(x.fd);
  for (size_t i = 0; i < x.ndev; i++) dev_free(x.h, x.dev[i]);
  tbe__buf_deinit(&x.out);
  munmap(data, n);
  return rc;
}
