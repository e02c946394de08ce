/* fuzz_util.h: helpers shared by the libFuzzer targets in test/fuzz/.
 *
 * Each target that needs a file writes its input under one per-process
 * temporary directory (mkdtemp, created on first use, removed at exit) and
 * removes the file after each input, so targets stay deterministic and
 * leave nothing behind.  Header-only (static functions) so each target is a
 * single translation unit plus regress.c or libFuzzer's main. */
#ifndef TBE_FUZZ_UTIL_H
#define TBE_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
static void fz_write(char path[128], const char *name, const uint8_t *data, size_t size) {
  snprintf(path, 128, "%s/%s", fz_tmpdir(), name);
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

#endif
