/* tfrecord.c: TFRecord framing, shared by the event writer and reader.
 *
 * A record is [u64 len][masked crc32c(len bytes)][data][masked crc32c(data)].
 * The checker never reads past `avail` and validates the length CRC before
 * trusting the length, so a flipped length byte is reported as corruption,
 * not as a huge truncated record. */
#include "events/tfrecord.h"

#include <string.h>

#include "common/crc32c.h"

void tbe__tfr_header(uint8_t hdr[TBE__TFR_HEADER], uint64_t n) {
  tbe__put_le64(hdr, n);
  tbe__put_le32(hdr + 8, tbe__crc32c_mask(tbe__crc32c(hdr, 8)));
}

void tbe__tfr_footer(uint8_t ftr[TBE__TFR_FOOTER], const void *data, size_t n) {
  tbe__put_le32(ftr, tbe__crc32c_mask(tbe__crc32c(data, n)));
}

void tbe__tfr_append(tbe__buf *b, const void *data, size_t n) {
  uint8_t *d = tbe__buf_reserve(b, n + TBE__TFR_OVERHEAD);
  if (!d) return;
  tbe__tfr_header(d, n);
  if (n) memcpy(d + TBE__TFR_HEADER, data, n);
  tbe__tfr_footer(d + TBE__TFR_HEADER + n, data, n);
  b->len += n + TBE__TFR_OVERHEAD;
}

tbe__tfr_status tbe__tfr_check(const uint8_t *p, size_t avail, uint64_t *len, uint32_t *got,
                               uint32_t *want) {
  *len = 0;
  if (avail == 0) return TBE__TFR_END;
  if (avail < TBE__TFR_HEADER) return TBE__TFR_TRUNCATED;
  uint32_t lc = tbe__crc32c_mask(tbe__crc32c(p, 8));
  uint32_t stored = tbe__get_le32(p + 8);
  if (lc != stored) {
    *got = stored;
    *want = lc;
    return TBE__TFR_BAD_LENGTH_CRC;
  }
  uint64_t n = tbe__get_le64(p);
  *len = n;
  if (n > avail - TBE__TFR_HEADER || avail - TBE__TFR_HEADER - n < TBE__TFR_FOOTER)
    return TBE__TFR_TRUNCATED;
  uint32_t dc = tbe__crc32c_mask(tbe__crc32c(p + TBE__TFR_HEADER, (size_t)n));
  stored = tbe__get_le32(p + TBE__TFR_HEADER + n);
  if (dc != stored) {
    *got = stored;
    *want = dc;
    return TBE__TFR_BAD_DATA_CRC;
  }
  return TBE__TFR_OK;
}
