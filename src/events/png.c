/* png.c: PNG encoder for add_image.
 *
 * Writes signature, IHDR (8-bit; color type from the channel count), one
 * IDAT with the zlib stream of the filtered rows, IEND.  Each row gets the
 * filter (None, Sub, Up, Average, Paeth) with the smallest sum of absolute
 * filtered bytes, the heuristic libpng uses.  zlib allocates through the
 * caller's allocator.  Nothing is appended to `out` unless all succeeds. */
#include "events/png.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/alloc.h"
#include "tbexport/error.h"

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static void chunk(tbe__buf *b, const char type[4], const uint8_t *data, size_t n) {
  uint8_t *d = tbe__buf_reserve(b, n + 12);
  if (!d) return;
  put_be32(d, (uint32_t)n);
  memcpy(d + 4, type, 4);
  if (n) memcpy(d + 8, data, n);
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, d + 4, (uInt)(n + 4));
  put_be32(d + 8 + n, (uint32_t)crc);
  b->len += n + 12;
}

static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  return tbe__calloc(opaque, items, size);
}
static void z_free(voidpf opaque, voidpf p) { tbe__free(opaque, p); }

static int paeth(int a, int b, int c) {
  int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

/* Filters one row `cur` (with `prev` the row above, or zeros) into `out`
 * (1 + stride bytes) using filter type `f`; returns the heuristic cost. */
static unsigned long filter_row(uint8_t *out, int f, const uint8_t *cur, const uint8_t *prev,
                                size_t stride, int bpp) {
  unsigned long cost = 0;
  out[0] = (uint8_t)f;
  for (size_t i = 0; i < stride; i++) {
    int a = i >= (size_t)bpp ? cur[i - bpp] : 0;
    int b = prev[i];
    int c = i >= (size_t)bpp ? prev[i - bpp] : 0;
    int x = cur[i], v;
    switch (f) {
      case 0: v = x; break;
      case 1: v = x - a; break;
      case 2: v = x - b; break;
      case 3: v = x - ((a + b) >> 1); break;
      default: v = x - paeth(a, b, c); break;
    }
    out[i + 1] = (uint8_t)v;
    int s = (int8_t)(uint8_t)v;
    cost += (unsigned long)(s < 0 ? -s : s);
  }
  return cost;
}

int tbe__png_encode(tbe__buf *out, const tbe_allocator *a, const uint8_t *pixels, uint32_t width,
                    uint32_t height, int channels) {
  static const uint8_t color_type[5] = {0, 0, 4, 2, 6};
  if (!pixels || width == 0 || height == 0 || channels < 1 || channels > 4) return TBE_EINVAL;
  if (width > INT32_MAX || height > INT32_MAX) return TBE_EINVAL;
  size_t stride = (size_t)width * (size_t)channels;
  if (stride / (size_t)channels != width || (stride + 1) > SIZE_MAX / height) return TBE_ETOOBIG;
  size_t raw_len = (stride + 1) * height;
  if (raw_len > UINT32_MAX) return TBE_ETOOBIG;

  int rc = 0;
  uint8_t *zeros = tbe__calloc(a, 1, stride);
  uint8_t *row = tbe__alloc(a, 6 * (stride + 1)); /* 5 candidates + output */
  uint8_t *raw = tbe__alloc(a, raw_len);
  uLong bound = compressBound((uLong)raw_len);
  uint8_t *z = tbe__alloc(a, bound);
  if (!zeros || !row || !raw || !z) {
    rc = TBE_ENOMEM;
    goto done;
  }
  for (uint32_t y = 0; y < height; y++) {
    const uint8_t *cur = pixels + (size_t)y * stride;
    const uint8_t *prev = y ? cur - stride : zeros;
    unsigned long best = ~0ul;
    int bf = 0;
    for (int f = 0; f < 5; f++) {
      unsigned long c = filter_row(row + (size_t)f * (stride + 1), f, cur, prev, stride, channels);
      if (c < best) {
        best = c;
        bf = f;
      }
    }
    memcpy(raw + (size_t)y * (stride + 1), row + (size_t)bf * (stride + 1), stride + 1);
  }

  z_stream zs;
  memset(&zs, 0, sizeof zs);
  zs.zalloc = z_alloc;
  zs.zfree = z_free;
  zs.opaque = (voidpf)a;
  if (deflateInit(&zs, 6) != Z_OK) {
    rc = TBE_ENOMEM;
    goto done;
  }
  zs.next_in = raw;
  zs.avail_in = (uInt)raw_len;
  zs.next_out = z;
  zs.avail_out = (uInt)bound;
  int zr = deflate(&zs, Z_FINISH);
  size_t zlen = zs.total_out;
  deflateEnd(&zs);
  if (zr != Z_STREAM_END) {
    rc = TBE_ENOMEM;
    goto done;
  }

  size_t start = out->len;
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  tbe__buf_append(out, sig, 8);
  uint8_t ihdr[13];
  put_be32(ihdr, width);
  put_be32(ihdr + 4, height);
  ihdr[8] = 8;
  ihdr[9] = color_type[channels];
  ihdr[10] = ihdr[11] = ihdr[12] = 0;
  chunk(out, "IHDR", ihdr, sizeof ihdr);
  chunk(out, "IDAT", z, zlen);
  chunk(out, "IEND", NULL, 0);
  if (tbe__buf_error(out)) {
    rc = tbe__buf_error(out);
    out->len = start;
  }
done:
  tbe__free(a, zeros);
  tbe__free(a, row);
  tbe__free(a, raw);
  tbe__free(a, z);
  return rc;
}
