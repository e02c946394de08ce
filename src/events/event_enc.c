/* event_enc.c: hand encoder of the scalar Event (see event_enc.h). */
#include "events/event_enc.h"

#include <string.h>

#include "common/pbwire.h"

size_t tbe__encode_scalar_event(uint8_t *out, double wall_time, int64_t step, const char *tag,
                                size_t taglen, float value) {
  uint8_t *p = out;
  if (wall_time != 0.0) {
    *p++ = 0x09;
    uint64_t bits;
    memcpy(&bits, &wall_time, 8);
    for (int i = 0; i < 8; i++) *p++ = (uint8_t)(bits >> (8 * i));
  }
  if (step != 0) {
    *p++ = 0x10;
    p += tbe__pb_put_varint(p, (uint64_t)step);
  }
  size_t vlen = 1 + tbe__pb_varint_len(taglen) + taglen + 5;   /* Value */
  size_t slen = 1 + tbe__pb_varint_len(vlen) + vlen;           /* Summary */
  *p++ = 0x2a;
  p += tbe__pb_put_varint(p, slen);
  *p++ = 0x0a;
  p += tbe__pb_put_varint(p, vlen);
  *p++ = 0x0a;
  p += tbe__pb_put_varint(p, taglen);
  memcpy(p, tag, taglen);
  p += taglen;
  *p++ = 0x15;
  uint32_t fb;
  memcpy(&fb, &value, 4);
  for (int i = 0; i < 4; i++) *p++ = (uint8_t)(fb >> (8 * i));
  return (size_t)(p - out);
}
