/* fuzz_json_escape.c: libFuzzer target for the JSON-escaping round trip.
 *
 * The input bytes become the name of the one CPU-op event of a tiny trace,
 * which tbe_export_chrome_json writes to a temporary file; our own importer
 * (tbe_import_file, which uses a strict JSON parser) must read it back, and
 * the event must carry the same name with every invalid UTF-8 sequence
 * replaced by U+FFFD, one per maximal subpart (Unicode's recommended
 * practice), and NUL replaced by U+FFFD (the importer's rule for text it
 * hands out as C strings).  The expected text is computed here,
 * independently of the library; any difference aborts. */
#include <stdint.h>
#include <stdio.h>

#include "fuzz_util.h"
#include "tbexport/export.h"
#include "tbexport/import.h"
#include "tbexport/trace.h"

/* Appends to `out` the text the round trip must give for [s, s+n); returns
 * the output length (out has room for 3*n bytes). */
static size_t expected_text(const uint8_t *s, size_t n, uint8_t *out) {
  static const uint8_t fffd[3] = {0xEF, 0xBF, 0xBD};
  size_t o = 0, i = 0;
  while (i < n) {
    uint8_t c = s[i];
    if (c == 0) {
      memcpy(out + o, fffd, 3), o += 3, i++;
      continue;
    }
    if (c < 0x80) {
      out[o++] = c, i++;
      continue;
    }
    /* Well-formed sequences per Unicode table 3-7. */
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c >= 0xE0 && c <= 0xEF) need = 3;
    else if (c >= 0xF0 && c <= 0xF4) need = 4;
    else {
      memcpy(out + o, fffd, 3), o += 3, i++;
      continue;
    }
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    size_t k = 1; /* bytes of a valid prefix so far */
    if (i + 1 < n && s[i + 1] >= lo && s[i + 1] <= hi) {
      k = 2;
      while (k < need && i + k < n && s[i + k] >= 0x80 && s[i + k] <= 0xBF) k++;
    }
    if (k == need) {
      memcpy(out + o, s + i, need), o += need;
    } else {
      memcpy(out + o, fffd, 3), o += 3;
    }
    i += k;
  }
  return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0; /* names are short; keep runs fast */
  tbe_trace *t = NULL;
  if (tbe_trace_create(&t, NULL) != 0) return 0;
  uint32_t track;
  tbe_str name;
  if (tbe_trace_track(t, TBE_TRACK_THREAD, 100, 101, -1, &track) != 0 ||
      tbe_trace_intern(t, (const char *)data, size, &name) != 0) {
    tbe_trace_free(t);
    return 0;
  }
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_CPU_OP;
  e.track = track;
  e.name = name;
  e.start_ns = 1700000000000000000LL;
  e.dur_ns = 5000;
  if (tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL) != 0 || tbe_trace_finish(t) != 0) {
    tbe_trace_free(t);
    return 0;
  }
  char path[128];
  fz_write(path, "rt.trace.json", (const uint8_t *)"", 0);
  int rc = tbe_export_chrome_json(t, path, 0, 1);
  tbe_trace_free(t);
  if (rc != 0) {
    fprintf(stderr, "export failed: %d\n", rc);
    abort();
  }

  tbe_trace *back = NULL;
  if (tbe_trace_create(&back, NULL) != 0) abort();
  tbe_import_error err;
  rc = tbe_import_file(back, path, NULL, &err);
  unlink(path);
  if (rc != 0) {
    fprintf(stderr, "re-import failed: %s\n", err.message);
    abort();
  }
  uint8_t *want = malloc(3 * size + 1);
  if (!want) abort();
  size_t wn = expected_text(data, size, want);
  int found = 0;
  for (size_t i = 0; i < back->nevents; i++) {
    const tbe_event *be = &back->events[i];
    if (be->kind != TBE_EV_CPU_OP) continue;
    found++;
    const char *got = tbe_trace_str(back, be->name);
    size_t gn = tbe_trace_strlen(back, be->name);
    if (gn != wn || memcmp(got, want, wn) != 0) {
      fprintf(stderr, "name mismatch: got %zu bytes, want %zu\n", gn, wn);
      abort();
    }
  }
  free(want);
  tbe_trace_free(back);
  if (found != 1) {
    fprintf(stderr, "expected one cpu_op event, found %d\n", found);
    abort();
  }
  return 0;
}
