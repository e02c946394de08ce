/* occupancy.c: the occupancy calculator and Kineto's kernel figures
 * (occupancy.h).
 *
 * The architecture facts below are those of the CUDA toolkit's occupancy
 * calculator (cuda_occupancy.h, compute capability 3.0 to 12.x); the code
 * is ours.  Every quantity is an int64_t: the inputs come from files (a
 * register count of 65,535, a grid of 2^31 blocks, a device with a
 * negative limit) and nothing here may overflow or divide by zero.
 * Nothing allocates. */
#include "trace/model/occupancy.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* ---- architecture facts ---- */

/* Blocks an SM holds at most; 0 for an architecture not known. */
static int64_t arch_max_blocks(int major, int minor) {
  switch (major) {
    case 3: return 16;
    case 5:
    case 6: return 32;
    case 7: return minor == 5 ? 16 : 32; /* Turing 16, Volta 32 */
    case 8: return minor == 0 ? 32 : minor == 9 ? 24 : 16;
    case 9: return 32;
    case 10: return minor == 1 ? 24 : 32;
    case 11: return minor == 0 ? 24 : 32;
    case 12: return 24;
    default: return 0;
  }
}

/* Bytes in which shared memory is allocated to a block. */
static int64_t arch_smem_granule(int major) { return major >= 8 ? 128 : 256; }

/* Shared memory the driver reserves for each block (cudaDeviceProp's
 * reservedSharedMemPerBlock, which a trace does not carry): 1 KB from
 * Ampere on, none before. */
static int64_t arch_smem_reserved(int major) { return major >= 8 ? 1024 : 0; }

/* Registers a thread may use at most. */
static int64_t arch_max_regs(int major) { return major >= 7 ? 256 : 255; }

/* Registers are allocated to a warp in units of this many. */
#define REG_GRANULE 256

/* Register-file sub-partitions of an SM (GP100, 6.0, has two). */
static int64_t arch_subpartitions(int major, int minor) { return major == 6 && minor == 0 ? 2 : 4; }

/* The shared memory sizes (KB) an SM can be carved into, ascending; NULL
 * for an architecture not known. */
static const int16_t *arch_carveouts(int major, int minor, size_t *n) {
  static const int16_t turing[] = {32, 64};
  static const int16_t volta[] = {0, 8, 16, 32, 64, 96};
  static const int16_t a100[] = {0, 8, 16, 32, 64, 100, 132, 164};
  static const int16_t ga10x[] = {0, 8, 16, 32, 64, 100};
  static const int16_t hopper[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};
#define SET(a) (*n = sizeof(a) / sizeof(a)[0], (a))
  switch (major) {
    case 7: return minor == 5 ? SET(turing) : SET(volta);
    case 8: return minor == 0 || minor == 7 ? SET(a100) : SET(ga10x);
    case 9: return SET(hopper);
    case 10:
    case 11: return minor == 0 || minor == 1 || minor == 3 ? SET(hopper) : NULL;
    case 12: return minor == 0 || minor == 1 ? SET(ga10x) : NULL;
    default: return NULL;
  }
#undef SET
}

/* `bytes` rounded up to the next carveout (Volta on); -1 when it is beyond
 * the largest or the architecture has none. */
static int64_t carveout_up(int major, int minor, int64_t bytes) {
  size_t n = 0;
  const int16_t *c = arch_carveouts(major, minor, &n);
  for (size_t i = 0; c && i < n; i++)
    if (bytes <= (int64_t)c[i] * 1024) return (int64_t)c[i] * 1024;
  return -1;
}

static int64_t round_up(int64_t x, int64_t unit) { return (x + unit - 1) / unit * unit; }
static int64_t div_up(int64_t x, int64_t unit) { return (x + unit - 1) / unit; }

/* ---- the limits ---- */

/* By registers, with `subparts` sub-partitions; 0 when a block cannot
 * have its registers at all. */
static int64_t limit_regs(const tbe_device *d, int64_t regs, int64_t warps, int64_t subparts,
                          int64_t *per_block) {
  int64_t per_warp = round_up(regs * d->warp_size, REG_GRANULE);
  *per_block = per_warp * warps;
  /* the hardware checks a block as if its warps filled every sub-partition */
  int64_t assumed = per_warp * round_up(warps, subparts);
  if (d->regs_per_block < assumed || d->regs_per_block < *per_block ||
      regs > arch_max_regs(d->cc_major))
    return 0;
  if (per_warp == 0) return INT32_MAX;
  int64_t warps_per_sub = d->regs_per_sm / subparts / per_warp;
  return warps_per_sub * subparts / warps;
}

/* By shared memory; -1 when the SM's configuration is not one the
 * architecture offers. */
static int64_t limit_smem(const tbe_device *d, const tbe_kernel *k, tbe__occ_mode mode,
                          int64_t *per_block) {
  int major = d->cc_major, minor = d->cc_minor;
  int64_t reserved = arch_smem_reserved(major);
  int64_t used = (int64_t)k->static_shared + reserved + k->dynamic_shared;
  int64_t alloc = round_up(used, arch_smem_granule(major));
  *per_block = alloc;
  /* What the SM offers by default: all of it, as a carveout (Volta on). */
  int64_t sm = d->shared_per_sm;
  if (major >= 7 && (sm = carveout_up(major, minor, d->shared_per_sm)) < 0) return -1;
  if (mode == TBE__OCC_KINETO && alloc - reserved > d->shared_per_block) return 0;
  if (sm < alloc) {
    /* a block that needs more than the default takes a larger carveout */
    if (major >= 7) {
      if ((sm = carveout_up(major, minor, alloc)) < 0) return -1;
    } else {
      sm = d->shared_per_sm;
    }
  }
  return alloc > 0 ? sm / alloc : INT32_MAX;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* x * y * z, or UINT64_MAX when that does not fit. */
static uint64_t mul3_sat(uint32_t x, uint32_t y, uint32_t z) {
  uint64_t xy = (uint64_t)x * y;
  return z && xy > UINT64_MAX / z ? UINT64_MAX : xy * z;
}

int tbe__occ_active_blocks(const tbe_device *d, const tbe_kernel *k, tbe__occ_mode mode,
                           tbe__occ *out) {
  if (!d || !k) return -1;
  int major = d->cc_major, minor = d->cc_minor;
  int64_t by_blocks = arch_max_blocks(major, minor);
  uint64_t threads_u = mul3_sat(k->block[0], k->block[1], k->block[2]);
  if (by_blocks == 0 || major < 3 || d->max_threads_per_block <= 0 || d->max_threads_per_sm <= 0 ||
      d->regs_per_block <= 0 || d->regs_per_sm <= 0 || d->warp_size <= 0 ||
      d->shared_per_block <= 0 || d->shared_per_sm <= 0 || d->sm_count <= 0 || threads_u == 0)
    return -1;
  /* A block larger than the device allows has no room (a launch that
   * cannot have run); its other limits are those of the largest block. */
  int too_big = threads_u > (uint64_t)d->max_threads_per_block;
  int64_t threads = too_big ? d->max_threads_per_block : (int64_t)threads_u;
  int64_t warps = div_up(threads, d->warp_size);
  int64_t by_warps = too_big ? 0 : d->max_threads_per_sm / d->warp_size / warps;
  int64_t regs_block = 0, smem_block = 0;
  int64_t by_regs =
      limit_regs(d, k->registers, warps, arch_subpartitions(major, minor), &regs_block);
  /* GP100: a block must also fit GP10x's four sub-partitions */
  if (major == 6 && minor == 0 && by_regs) {
    int64_t unused;
    if (limit_regs(d, k->registers, warps, 4, &unused) == 0) by_regs = 0;
  }
  int64_t by_smem = limit_smem(d, k, mode, &smem_block);
  if (by_smem < 0) return -1;
  int64_t active = min64(min64(by_warps, by_regs), min64(by_smem, by_blocks));
  out->active_blocks = (int)active;
  out->by_warps = (int)min64(by_warps, INT32_MAX);
  out->by_regs = (int)min64(by_regs, INT32_MAX);
  out->by_smem = (int)min64(by_smem, INT32_MAX);
  out->by_blocks = (int)by_blocks;
  out->regs_per_block = regs_block;
  out->smem_per_block = smem_block;
  return 0;
}

/* ---- Kineto's figures ---- */

void tbe__occ_fill(const tbe_device *d, tbe_kernel *k, tbe__occ_mode mode) {
  if (!d || !k || d->sm_count <= 0) return;
  uint64_t blocks = mul3_sat(k->grid[0], k->grid[1], k->grid[2]);
  uint64_t threads = mul3_sat(k->block[0], k->block[1], k->block[2]);
  /* Single precision throughout, as Kineto computes them. */
  if (k->blocks_per_sm < 0) k->blocks_per_sm = (float)blocks / (float)d->sm_count;
  float bps = k->blocks_per_sm;
  if (k->warps_per_sm < 0 && isfinite(bps))
    k->warps_per_sm = bps * (float)threads / (float)(d->warp_size > 0 ? d->warp_size : 32);
  tbe__occ o;
  if (k->occupancy_pct < 0 && isfinite(bps) && tbe__occ_active_blocks(d, k, mode, &o) == 0) {
    if ((float)o.active_blocks < bps) bps = (float)o.active_blocks;
    float occ = bps * (float)threads / (float)d->max_threads_per_sm;
    k->occupancy_pct = (float)lround((double)occ * 100.0);
  }
}
