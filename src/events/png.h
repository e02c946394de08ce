/* png.h: a small PNG encoder (8-bit gray, gray+alpha, RGB, RGBA) on zlib. */
#ifndef TBE_EVENTS_PNG_H
#define TBE_EVENTS_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* Appends the PNG encoding of `pixels` (row-major, `channels` 1..4 bytes per
 * pixel, width*height*channels bytes) to `out`.  Returns 0, TBE_EINVAL for
 * bad dimensions, or TBE_ENOMEM. */
int tbe__png_encode(tbe__buf *out, const tbe_allocator *a, const uint8_t *pixels, uint32_t width,
                    uint32_t height, int channels);

#endif
