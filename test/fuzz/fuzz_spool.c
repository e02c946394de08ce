/* fuzz_spool.c: libFuzzer target for the collector's spool reader.
 *
 * Converts the input as a spool image with tbe__spool_to_trace (the
 * in-memory entry point behind tbe__spool_file_to_trace), with default
 * options, and, when the first byte is odd, again with a capture range
 * (NVTX range "step", any domain) to cover the capture filter and with
 * --steps nvtx:step to cover the steps. */
#include <stdint.h>
#include <string.h>

#include "import/spool.h"
#include "tbexport/trace.h"

static void convert(const uint8_t *data, size_t size, const tbe__convert_opts *o) {
  tbe_trace *t = NULL;
  if (tbe_trace_create(&t, NULL) != 0) return;
  tbe__convert_info info;
  (void)tbe__spool_to_trace(data, size, "fuzz.spool", o, t, &info);
  tbe_trace_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tbe__convert_opts o;
  memset(&o, 0, sizeof o);
  o.host = "fuzzhost";
  convert(data, size, &o);
  if (size > 0 && (data[0] & 1)) {
    o.capture = TBE_CAPTURE_NVTX;
    o.capture_name = "step";
    o.steps_name = "step";
    convert(data, size, &o);
  }
  return 0;
}
