/* fuzz_chrome_json.c: libFuzzer target for the Chrome/Kineto JSON importer.
 *
 * Writes the input to a temporary .json file and imports it with
 * tbe_import_file.  When the first byte is odd the input is gzip-compressed
 * with zlib first (written as .json.gz), so the same corpus also drives the
 * importer's gzip path.  When its bit 2 is set the import runs under tiny
 * limits (fz_limits), so the refusals are fuzzed as well.  Inputs of odd
 * length are read as standard input ("-", fz_import).  A trace that
 * imports goes through the analysis and the summaries (fz_analyse). */
#include <stdint.h>
#include <stdio.h>
#include <zlib.h>

#include "fuzz_util.h"
#include "tbexport/import.h"
#include "tbexport/trace.h"

/* gzip-compresses data into a malloc'ed buffer; NULL on failure. */
static uint8_t *gzip_bytes(const uint8_t *data, size_t size, size_t *out_n) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return NULL;
  size_t cap = deflateBound(&z, (uLong)size) + 64;
  uint8_t *out = malloc(cap);
  if (!out) {
    deflateEnd(&z);
    return NULL;
  }
  z.next_in = (Bytef *)(uintptr_t)data;
  z.avail_in = (uInt)size;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  int rc = deflate(&z, Z_FINISH);
  *out_n = cap - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    free(out);
    return NULL;
  }
  return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[128];
  if (size > 0 && (data[0] & 1)) {
    size_t n = 0;
    uint8_t *gz = gzip_bytes(data, size, &n);
    if (!gz) abort();
    fz_write(path, "in.trace.json.gz", gz, n);
    free(gz);
  } else {
    fz_write(path, "in.trace.json", data, size);
  }
  tbe_trace *t = NULL;
  if (tbe_trace_create(&t, NULL) == 0) {
    tbe_import_error err;
    if (fz_import(t, path, fz_limits(size ? data[0] : 0), &err, size & 1) == 0) fz_analyse(t);
    tbe_trace_free(t);
  }
  unlink(path);
  return 0;
}
