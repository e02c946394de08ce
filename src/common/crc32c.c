/* crc32c.c: CRC32C, portable and SSE4.2 paths (see crc32c.h).
 *
 * Portable path: slicing by 8 over eight 256-entry tables built once.
 * Hardware path: the SSE4.2 `crc32` instruction has a latency of three
 * cycles but a throughput of one per cycle, so one dependent chain runs at a
 * third of the possible speed.  We run three chains over three adjacent
 * blocks of the input and join them: the CRC register is linear, so the
 * state after A||B equals shift(state after A, |B| zero bytes) XOR the state
 * of B started from zero.  "shift by |B| zero bytes" is a fixed 32x32 GF(2)
 * matrix, applied with four 256-entry tables built once per block size.
 * Tables are built on first use under pthread_once; everything after that is
 * read-only, so all functions are thread-safe. */
#include "common/crc32c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t slice[8][256];
static pthread_once_t slice_once = PTHREAD_ONCE_INIT;

static void slice_init(void) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
    slice[0][n] = c;
  }
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = slice[0][n];
    for (int k = 1; k < 8; k++) {
      c = slice[0][c & 0xff] ^ (c >> 8);
      slice[k][n] = c;
    }
  }
}

static inline uint64_t load64le(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

uint32_t tbe__crc32c_portable(uint32_t crc, const void *p, size_t n) {
  pthread_once(&slice_once, slice_init);
  const unsigned char *b = p;
  uint32_t c = ~crc;
  while (n && ((uintptr_t)b & 7)) {
    c = slice[0][(c ^ *b++) & 0xff] ^ (c >> 8);
    n--;
  }
  while (n >= 8) {
    uint64_t w = load64le(b) ^ c;
    c = slice[7][w & 0xff] ^ slice[6][(w >> 8) & 0xff] ^ slice[5][(w >> 16) & 0xff] ^
        slice[4][(w >> 24) & 0xff] ^ slice[3][(w >> 32) & 0xff] ^ slice[2][(w >> 40) & 0xff] ^
        slice[1][(w >> 48) & 0xff] ^ slice[0][w >> 56];
    b += 8;
    n -= 8;
  }
  while (n--) c = slice[0][(c ^ *b++) & 0xff] ^ (c >> 8);
  return ~c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>

#define LONG_BLK 8192
#define SHORT_BLK 256

/* GF(2) 32x32 matrices as 32 column vectors: mat[i] is the image of bit i. */
static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
  uint32_t sum = 0;
  for (int i = 0; vec; i++, vec >>= 1)
    if (vec & 1) sum ^= mat[i];
  return sum;
}

/* out = a o b (apply b, then a). */
static void gf2_mul(uint32_t *out, const uint32_t *a, const uint32_t *b) {
  uint32_t t[32];
  for (int i = 0; i < 32; i++) t[i] = gf2_times(a, b[i]);
  memcpy(out, t, sizeof t);
}

/* The operator that feeds `nbytes` zero bytes through the CRC register. */
static void zeros_op(uint32_t *op, size_t nbytes) {
  uint32_t base[32], res[32];
  /* one zero bit: shift right, xor POLY when the low bit falls out */
  base[0] = POLY;
  for (int i = 1; i < 32; i++) base[i] = 1u << (i - 1);
  gf2_mul(base, base, base); /* 2 bits */
  gf2_mul(base, base, base); /* 4 bits */
  gf2_mul(base, base, base); /* 8 bits = one byte */
  for (int i = 0; i < 32; i++) res[i] = 1u << i;
  while (nbytes) {
    if (nbytes & 1) gf2_mul(res, base, res);
    nbytes >>= 1;
    if (nbytes) gf2_mul(base, base, base);
  }
  memcpy(op, res, sizeof res);
}

static uint32_t long_zeros[4][256], short_zeros[4][256];
static pthread_once_t hw_once = PTHREAD_ONCE_INIT;
static int hw_ok;
/* -1 until hw_init ran, then hw_ok; read with acquire on every call so the
 * hot path costs one load instead of pthread_once. */
static _Atomic int hw_state = -1;

static void zeros_tables(uint32_t t[4][256], size_t nbytes) {
  uint32_t op[32];
  zeros_op(op, nbytes);
  for (uint32_t n = 0; n < 256; n++)
    for (int k = 0; k < 4; k++) t[k][n] = gf2_times(op, n << (8 * k));
}

static void hw_init(void) {
  __builtin_cpu_init();
  hw_ok = __builtin_cpu_supports("sse4.2") ? 1 : 0;
  if (hw_ok) {
    zeros_tables(long_zeros, LONG_BLK);
    zeros_tables(short_zeros, SHORT_BLK);
  }
  atomic_store_explicit(&hw_state, hw_ok, memory_order_release);
}

static inline int hw_ready(void) {
  int s = atomic_load_explicit(&hw_state, memory_order_acquire);
  if (s < 0) {
    pthread_once(&hw_once, hw_init);
    s = hw_ok;
  }
  return s;
}

static inline uint32_t shift(uint32_t t[4][256], uint32_t c) {
  return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

int tbe__crc32c_hw_available(void) { return hw_ready(); }

__attribute__((target("sse4.2"))) static uint32_t hw_crc(uint32_t crc, const unsigned char *b,
                                                          size_t n) {
  uint64_t c0 = ~crc;
  /* x86 loads need no alignment; align only long inputs, where it pays */
  if (n >= 3 * SHORT_BLK)
    while ((uintptr_t)b & 7) {
      c0 = _mm_crc32_u8((uint32_t)c0, *b++);
      n--;
    }
  while (n >= 3 * LONG_BLK) {
    uint64_t c1 = 0, c2 = 0;
    const unsigned char *end = b + LONG_BLK;
    do {
      c0 = _mm_crc32_u64(c0, load64le(b));
      c1 = _mm_crc32_u64(c1, load64le(b + LONG_BLK));
      c2 = _mm_crc32_u64(c2, load64le(b + 2 * LONG_BLK));
      b += 8;
    } while (b < end);
    c0 = shift(long_zeros, (uint32_t)c0) ^ (uint32_t)c1;
    c0 = shift(long_zeros, (uint32_t)c0) ^ (uint32_t)c2;
    b += 2 * LONG_BLK;
    n -= 3 * LONG_BLK;
  }
  while (n >= 3 * SHORT_BLK) {
    uint64_t c1 = 0, c2 = 0;
    const unsigned char *end = b + SHORT_BLK;
    do {
      c0 = _mm_crc32_u64(c0, load64le(b));
      c1 = _mm_crc32_u64(c1, load64le(b + SHORT_BLK));
      c2 = _mm_crc32_u64(c2, load64le(b + 2 * SHORT_BLK));
      b += 8;
    } while (b < end);
    c0 = shift(short_zeros, (uint32_t)c0) ^ (uint32_t)c1;
    c0 = shift(short_zeros, (uint32_t)c0) ^ (uint32_t)c2;
    b += 2 * SHORT_BLK;
    n -= 3 * SHORT_BLK;
  }
  while (n >= 8) {
    c0 = _mm_crc32_u64(c0, load64le(b));
    b += 8;
    n -= 8;
  }
  if (n >= 4) {
    uint32_t w;
    memcpy(&w, b, 4);
    c0 = _mm_crc32_u32((uint32_t)c0, w);
    b += 4;
    n -= 4;
  }
  while (n--) c0 = _mm_crc32_u8((uint32_t)c0, *b++);
  return ~(uint32_t)c0;
}

uint32_t tbe__crc32c_hw(uint32_t crc, const void *p, size_t n) {
  if (!hw_ready()) return tbe__crc32c_portable(crc, p, n);
  return hw_crc(crc, p, n);
}

uint32_t tbe__crc32c_extend(uint32_t crc, const void *p, size_t n) {
  if (hw_ready()) return hw_crc(crc, p, n);
  return tbe__crc32c_portable(crc, p, n);
}

#else /* not x86-64: portable only */

int tbe__crc32c_hw_available(void) { return 0; }
uint32_t tbe__crc32c_hw(uint32_t crc, const void *p, size_t n) {
  return tbe__crc32c_portable(crc, p, n);
}
uint32_t tbe__crc32c_extend(uint32_t crc, const void *p, size_t n) {
  return tbe__crc32c_portable(crc, p, n);
}

#endif
