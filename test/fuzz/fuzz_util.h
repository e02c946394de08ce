/* fuzz_util.h: helpers shared by the libFuzzer targets in test/fuzz/.
 *
 * Each target that needs a file writes its input under one per-process
 * temporary directory (mkdtemp, created on first use, removed at exit) and
 * removes the file after each input, so targets stay deterministic and
 * leave nothing behind.  Header-only (static functions) so each target is a
 * single translation unit plus regress.c or libFuzzer's main. */
#ifndef TBE_FUZZ_UTIL_H
#define TBE_FUZZ_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tbexport/analysis.h"
#include "tbexport/import.h"
#include "tbexport/trace.h"

static char fz_dir[64];

static void fz_cleanup(void) {
  if (fz_dir[0]) rmdir(fz_dir);
}

/* The per-process temporary directory; aborts if it cannot be made (an
 * environment problem, not a finding). */
static const char *fz_tmpdir(void) {
  if (!fz_dir[0]) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    snprintf(fz_dir, sizeof fz_dir, "%.40s/tbefuzzXXXXXX", base);
    if (!mkdtemp(fz_dir)) {
      perror("mkdtemp");
      abort();
    }
    atexit(fz_cleanup);
  }
  return fz_dir;
}

/* Writes `data` to <tmpdir>/<name>; the path goes to `path` (room for 128
 * bytes).  Aborts on I/O failure. */
__attribute__((unused)) static void fz_write(char path[128], const char *name, const uint8_t *data, size_t size) {
  snprintf(path, 128, "%s/%s", fz_tmpdir(), name);
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

/* Imports `path` into `t`: as the file, or (via_stdin) as "-" with
 * standard input opened on it, so the stream paths (detection from peeked
 * bytes, no re-reading for line numbers, the XSpace framing walk) are
 * fuzzed by the same corpus. */
__attribute__((unused)) static int fz_import(tbe_trace *t, const char *path,
                                             const tbe_import_options *o, tbe_import_error *err,
                                             int via_stdin) {
  if (!via_stdin) return tbe_import_file(t, path, o, err);
  int fd = open(path, O_RDONLY);
  int saved = dup(0);
  if (fd < 0 || saved < 0 || dup2(fd, 0) < 0) abort(); /* the environment, not a finding */
  close(fd);
  int rc = tbe_import_file(t, "-", o, err);
  dup2(saved, 0);
  close(saved);
  return rc;
}

/* After an import that succeeded: the analysis and the summary in every
 * format, so times an importer let through meet the arithmetic that uses
 * them (under UBSan every signed overflow is a finding). */
__attribute__((unused)) static void fz_analyse(tbe_trace *t) {
  tbe_analysis *an = NULL;
  if (tbe_analysis_create(&an, t, NULL) != 0) return;
  tbe_report_options o;
  tbe_report_options_init(&o);
  for (int f = 0; f < 4; f++) {
    char *s = NULL;
    size_t n = 0;
    o.format = f;
    if (tbe_report_summary(an, &o, &s, &n) == 0) tbe_report_free(s, n, NULL);
  }
  tbe_analysis_free(an);
}

/* Small input limits for some inputs (those whose `key` byte has bit 2
 * set: not '{', '[', ' ' or '\n', so most JSON keeps the defaults; "\r["
 * takes the small ones), so the refusals are fuzzed too: a token of 64
 * bytes, an event of 512, nesting of 8, 50 events, 16 KiB of input. */
__attribute__((unused)) static const tbe_import_options *fz_limits(uint8_t key) {
  static const tbe_import_options small = {.max_token_bytes = 64,
                                           .max_event_bytes = 512,
                                           .max_depth = 8,
                                           .max_events = 50,
                                           .max_input_bytes = 16384};
  return (key & 4) ? &small : NULL;
}

#endif
