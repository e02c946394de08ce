/* fuzz_nsys.c: libFuzzer target for the Nsight Systems SQLite importer.
 *
 * Writes the input as a temporary .sqlite database file and imports it with
 * tbe_import_file (SQLite itself parses the file; the target checks that
 * our importer copes with whatever schema and rows it finds).  Any journal
 * files SQLite may leave next to it are removed too.  A trace that imports
 * goes through the analysis and the summaries (fz_analyse). */
#include <stdint.h>
#include <stdio.h>

#include "fuzz_util.h"
#include "tbexport/import.h"
#include "tbexport/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[128], side[160];
  fz_write(path, "report.sqlite", data, size);
  tbe_trace *t = NULL;
  if (tbe_trace_create(&t, NULL) == 0) {
    tbe_import_error err;
    if (tbe_import_file(t, path, NULL, &err) == 0) fz_analyse(t);
    tbe_trace_free(t);
  }
  unlink(path);
  static const char *const sfx[] = {"-journal", "-wal", "-shm"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(side, sizeof side, "%s%s", path, sfx[i]);
    unlink(side);
  }
  return 0;
}
