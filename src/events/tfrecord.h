/* tfrecord.h: TFRecord framing (u64 length, masked CRC32C of the length,
 * data, masked CRC32C of the data; all little-endian). */
#ifndef TBE_EVENTS_TFRECORD_H
#define TBE_EVENTS_TFRECORD_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define TBE__TFR_HEADER 12
#define TBE__TFR_FOOTER 4
#define TBE__TFR_OVERHEAD 16

static inline void tbe__put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}
static inline void tbe__put_le64(uint8_t *p, uint64_t v) {
  tbe__put_le32(p, (uint32_t)v);
  tbe__put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint32_t tbe__get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t tbe__get_le64(const uint8_t *p) {
  return (uint64_t)tbe__get_le32(p) | (uint64_t)tbe__get_le32(p + 4) << 32;
}

/* Writes the 12-byte header for `n` data bytes. */
void tbe__tfr_header(uint8_t hdr[TBE__TFR_HEADER], uint64_t n);
/* Writes the 4-byte footer (masked CRC of the data). */
void tbe__tfr_footer(uint8_t ftr[TBE__TFR_FOOTER], const void *data, size_t n);
/* Appends one whole record holding `n` bytes of `data` to `b`. */
void tbe__tfr_append(tbe__buf *b, const void *data, size_t n);

/* Result of looking at the bytes at a record boundary. */
typedef enum tbe__tfr_status {
  TBE__TFR_OK = 0,        /* a whole record; *len is its data length */
  TBE__TFR_END,           /* no bytes at all: clean end */
  TBE__TFR_TRUNCATED,     /* a partial record: more bytes may come */
  TBE__TFR_BAD_LENGTH_CRC,
  TBE__TFR_BAD_DATA_CRC
} tbe__tfr_status;

/* Checks the record starting at `p` with `avail` bytes available.  On
 * TBE__TFR_OK stores the data length in *len (data at p + 12).  Also sets
 * *len on TRUNCATED when the header was complete (else 0), so a caller can
 * tell how many bytes it needs.  got/want receive the CRCs on a mismatch. */
tbe__tfr_status tbe__tfr_check(const uint8_t *p, size_t avail, uint64_t *len, uint32_t *got,
                               uint32_t *want);

#endif
