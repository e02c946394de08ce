/* crc32c.h: CRC32C (Castagnoli), the checksum of TFRecord framing.
 *
 * Two implementations compute the same function: a portable table-driven
 * one (slicing by 8) and, on x86-64 CPUs with SSE4.2, one built on the
 * `crc32` instruction with three independent streams.  tbe__crc32c picks
 * the hardware path at run time when the CPU has it.  All are thread-safe.
 *
 * `crc` arguments are the finished CRC of the data before (0 to start), so
 * crc32c(a||b) == tbe__crc32c_extend(tbe__crc32c_extend(0, a), b). */
#ifndef TBE_COMMON_CRC32C_H
#define TBE_COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC32C of `n` bytes at `p`, continuing from `crc`; best available path. */
uint32_t tbe__crc32c_extend(uint32_t crc, const void *p, size_t n);
static inline uint32_t tbe__crc32c(const void *p, size_t n) { return tbe__crc32c_extend(0, p, n); }

/* The portable path, always available. */
uint32_t tbe__crc32c_portable(uint32_t crc, const void *p, size_t n);

/* 1 if the SSE4.2 path can run on this CPU. */
int tbe__crc32c_hw_available(void);

/* The SSE4.2 path; only call it when tbe__crc32c_hw_available() is 1
 * (otherwise it falls back to the portable path). */
uint32_t tbe__crc32c_hw(uint32_t crc, const void *p, size_t n);

/* TensorBoard's (LevelDB's) masked form: rotate right by 15, add a delta. */
#define TBE__CRC_MASK_DELTA 0xa282ead8u
static inline uint32_t tbe__crc32c_mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + TBE__CRC_MASK_DELTA;
}
static inline uint32_t tbe__crc32c_unmask(uint32_t masked) {
  uint32_t r = masked - TBE__CRC_MASK_DELTA;
  return (r >> 17) | (r << 15);
}

#endif
