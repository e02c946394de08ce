/* fuzz_xspace.c: libFuzzer target for the XSpace (.xplane.pb) importer.
 *
 * Writes the input to a temporary .xplane.pb file and imports it with
 * tbe_import_file (inputs of odd length as standard input, fz_import); a
 * trace that imports goes through the analysis and the summaries
 * (fz_analyse). */
#include <stdint.h>
#include <stdio.h>

#include "fuzz_util.h"
#include "tbexport/import.h"
#include "tbexport/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[128];
  fz_write(path, "host.xplane.pb", data, size);
  tbe_trace *t = NULL;
  if (tbe_trace_create(&t, NULL) == 0) {
    tbe_import_error err;
    if (fz_import(t, path, NULL, &err, size & 1) == 0) fz_analyse(t);
    tbe_trace_free(t);
  }
  unlink(path);
  return 0;
}
