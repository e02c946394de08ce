/* pbwire.h: the protobuf wire format's varints and field headers, once.
 *
 * Every hand-rolled protobuf path of the library (the event encoder, the
 * XSpace writer and reader, the analysis file) uses these instead of a
 * copy of its own.  protobuf-c does the message work where a whole message
 * is built or parsed; these are for the streaming paths that write or walk
 * the wire without materializing messages.
 *
 * Writing: tbe__pb_put_varint writes v at p (room for TBE__PB_VARINT_MAX
 * bytes) and returns the bytes written; tbe__pb_varint_len says how many
 * that will be.  Reading: tbe__pb_get_varint reads at b[*pos] within n
 * bytes, advances *pos and returns 0, or returns -1 (with *pos somewhere
 * inside the bad varint) when the bytes run out or a varint runs past 10
 * bytes.  tbe__pb_next_field reads one field header and locates its
 * payload. */
#ifndef TBE_COMMON_PBWIRE_H
#define TBE_COMMON_PBWIRE_H

#include <stddef.h>
#include <stdint.h>

#define TBE__PB_VARINT_MAX 10

/* Wire types. */
#define TBE__PB_VARINT 0
#define TBE__PB_I64 1
#define TBE__PB_LEN 2
#define TBE__PB_I32 5

/* A field's tag as one varint's value. */
#define TBE__PB_TAG(field, wt) (((uint64_t)(field) << 3) | (wt))

static inline size_t tbe__pb_put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

static inline size_t tbe__pb_varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static inline int tbe__pb_get_varint(const uint8_t *b, size_t n, size_t *pos, uint64_t *v) {
  uint64_t r = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (*pos >= n) return -1;
    uint8_t c = b[(*pos)++];
    r |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      *v = r;
      return 0;
    }
  }
  return -1;
}

/* One field at b[*pos]: its number (1 to 2^29 - 1) and wire type, and its
 * payload as offsets into b, [*data, *data + *len): for TBE__PB_LEN the
 * bytes, for the fixed types their 8 or 4 bytes, for TBE__PB_VARINT the
 * varint's own bytes (read it with tbe__pb_get_varint from *data).
 * Advances *pos past the field and returns 0, or returns -1 when the
 * header or the payload runs past n or the wire type is not one of the
 * four (*pos is then somewhere inside the field: keep the start to name
 * the offending byte). */
static inline int tbe__pb_next_field(const uint8_t *b, size_t n, size_t *pos, uint32_t *field,
                                     uint32_t *wt, size_t *data, size_t *len) {
  uint64_t tag, v;
  if (tbe__pb_get_varint(b, n, pos, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
    return -1;
  *field = (uint32_t)(tag >> 3);
  *wt = (uint32_t)(tag & 7);
  *data = *pos;
  switch (*wt) {
    case TBE__PB_VARINT:
      if (tbe__pb_get_varint(b, n, pos, &v)) return -1;
      break;
    case TBE__PB_I64:
      if (n - *pos < 8) return -1;
      *pos += 8;
      break;
    case TBE__PB_LEN:
      if (tbe__pb_get_varint(b, n, pos, &v) || v > n - *pos) return -1;
      *data = *pos;
      *pos += (size_t)v;
      break;
    case TBE__PB_I32:
      if (n - *pos < 4) return -1;
      *pos += 4;
      break;
    default: return -1;
  }
  *len = *pos - *data;
  return 0;
}

#endif
