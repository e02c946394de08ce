/* fuzz_spool.c: libFuzzer target for the collector's spool reader.
 *
 * Converts the input as a spool image with tbe__spool_to_trace (the
 * in-memory entry point behind tbe__spool_file_to_trace), with default
 * options, then analyses the trace and renders its summary; when the
 * last byte is odd, again with a capture range (NVTX range "step", any
 * domain) to cover the capture filter and with --steps nvtx:step to cover
 * the steps; when its bit 1 is set, through tbe_import_file too (the
 * importer table's entry, the input read by input.c).  (The last byte: a
 * spool's first is always 'T'.)
 *
 * Memory is bounded by the input's size, not by the ids or counts in it
 * (src/import/spool_int.h, "Bounded by the input"): every conversion
 * allocates through a counting allocator (the trace's and the
 * conversion's scratch), and a peak above SPOOL_BASE + SPOOL_PER_BYTE
 * bytes per input byte aborts, a finding like a crash.  A string id of
 * 2^26 in a 97-byte spool took 256 MB before; the most an input byte
 * legitimately costs is a metric-status item's warning lines (about 36
 * bytes of text per byte, then the interner's doubling). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "import/spool.h"
#include "tbexport/trace.h"

#define SPOOL_BASE ((size_t)2 << 20)
#define SPOOL_PER_BYTE 128

/* The counting allocator: a 16-byte header holds the block's size (the
 * counts atomic: the analysis may run worker threads). */
typedef struct fz_count {
  size_t bytes, peak;
} fz_count;

static void *fc_alloc(void *o, size_t n) {
  fz_count *c = o;
  if (n > SIZE_MAX - 16) return NULL;
  unsigned char *p = malloc(16 + n);
  if (!p) return NULL;
  memcpy(p, &n, sizeof n);
  size_t now = __atomic_add_fetch(&c->bytes, n, __ATOMIC_RELAXED);
  size_t peak = __atomic_load_n(&c->peak, __ATOMIC_RELAXED);
  while (now > peak &&
         !__atomic_compare_exchange_n(&c->peak, &peak, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return p + 16;
}

static void fc_free(void *o, void *q) {
  fz_count *c = o;
  if (!q) return;
  size_t n;
  memcpy(&n, (unsigned char *)q - 16, sizeof n);
  __atomic_fetch_sub(&c->bytes, n, __ATOMIC_RELAXED);
  free((unsigned char *)q - 16);
}

static void *fc_realloc(void *o, void *q, size_t old, size_t n) {
  (void)old;
  if (!q) return fc_alloc(o, n);
  size_t was;
  memcpy(&was, (unsigned char *)q - 16, sizeof was);
  void *r = fc_alloc(o, n);
  if (!r) return NULL;
  memcpy(r, q, was < n ? was : n);
  fc_free(o, q);
  return r;
}

/* Aborts when a conversion's peak is beyond the bound for `size` bytes. */
static void check_peak(const fz_count *c, size_t size, const char *what) {
  if (c->peak <= SPOOL_BASE + SPOOL_PER_BYTE * size) return;
  fprintf(stderr, "fuzz_spool: %s of %zu bytes peaked at %zu bytes\n", what, size, c->peak);
  abort();
}

static void convert(const uint8_t *data, size_t size, tbe__convert_opts *o, int analyse) {
  fz_count c = {0, 0};
  tbe_allocator a = {fc_alloc, fc_realloc, fc_free, &c};
  tbe_trace *t = NULL;
  if (tbe_trace_create(&t, &a) != 0) return;
  o->allocator = &a;
  tbe__convert_info info;
  int rc = tbe__spool_to_trace(data, size, "fuzz.spool", o, t, &info);
  check_peak(&c, size, "a conversion");
  if (!rc && analyse) fz_analyse(t);
  tbe_trace_free(t);
}

/* The importer table's way in: tbe_import_file on the input as a file. */
static void import(const uint8_t *data, size_t size) {
  char path[128];
  fz_write(path, "in.spool", data, size);
  fz_count c = {0, 0};
  tbe_allocator a = {fc_alloc, fc_realloc, fc_free, &c};
  tbe_trace *t = NULL;
  if (tbe_trace_create(&t, &a) == 0) {
    tbe_import_options o;
    tbe_import_options_init(&o);
    tbe_import_error err;
    (void)tbe_import_file(t, path, &o, &err);
    check_peak(&c, size, "an import");
    tbe_trace_free(t);
  }
  unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tbe__convert_opts o;
  memset(&o, 0, sizeof o);
  o.host = "fuzzhost";
  convert(data, size, &o, 1);
  uint8_t key = size ? data[size - 1] : 0;
  if (key & 1) {
    o.capture = TBE_CAPTURE_NVTX;
    o.capture_name = "step";
    o.steps_name = "step";
    convert(data, size, &o, 0);
  }
  if (key & 2) import(data, size);
  return 0;
}
