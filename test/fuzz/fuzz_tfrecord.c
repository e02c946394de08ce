/* fuzz_tfrecord.c: libFuzzer target for the TensorBoard event-file reader.
 *
 * Writes the input as an event file and reads every event through the
 * public reader API (include/tbexport/reader.h), going on past recoverable
 * errors (truncation, CRC, parse) as a consumer would, with a bound on the
 * number of calls so a reader that never advances is caught as a hang. */
#include <stdint.h>
#include <stdio.h>

#include "fuzz_util.h"
#include "tbexport/error.h"
#include "tbexport/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[128];
  fz_write(path, "events.out.tfevents.1.fuzz", data, size);
  tbe_reader *r = NULL;
  if (tbe_reader_open(&r, path, 0, NULL) == 0) {
    const tbe_tb_event *ev;
    uint64_t sum = 0;
    for (size_t calls = 0; calls < size + 16; calls++) {
      int rc = tbe_reader_next(r, &ev);
      if (rc == 0) break;
      if (rc == 1) {
        /* touch the record so ASan sees its bytes */
        for (size_t i = 0; i < ev->record.size; i++) sum += ev->record.data[i];
        sum += ev->offset + ev->payload.size + (uint64_t)ev->step;
        if (ev->text) sum += strlen(ev->text);
        for (size_t v = 0; v < ev->nvalues; v++) {
          const tbe_summary_value *sv = &ev->values[v];
          sum += strlen(sv->tag) + (sv->plugin_name ? strlen(sv->plugin_name) : 0);
          for (size_t i = 0; i < sv->plugin_content.size; i++) sum += sv->plugin_content.data[i];
        }
        continue;
      }
      tbe_reader_error_info info;
      tbe_reader_error(r, &info);
      if (info.message) sum += strlen(info.message);
      if (rc != TBE_ETRUNCATED && rc != TBE_ECHECKSUM && rc != TBE_EPARSE) break;
    }
    tbe_reader_close(r);
    (void)sum;
  }
  unlink(path);
  return 0;
}
