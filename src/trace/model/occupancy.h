/* occupancy.h: a kernel's launch configuration turned into the figures
 * Kineto writes on every kernel, from the limits of its GPU (tbe_device).
 *
 * Kineto's definitions (libkineto DeviceProperties.cpp), which
 * torch-tb-profiler averages into "Est. SM Efficiency" and "Est. Achieved
 * Occupancy" and shows in its kernel table, and HTA reads:
 *   blocks per SM = grid blocks / SMs;
 *   warps per SM  = blocks per SM x threads per block / 32;
 *   est. achieved occupancy % = round(100 x min(blocks per SM, the
 *       occupancy calculator's active blocks per SM) x threads per block
 *       / threads per SM).
 * All three in single precision as Kineto computes them, so that a figure
 * we compute is the one Kineto would have written.
 *
 * The active blocks per SM are the CUDA occupancy calculator's
 * (cuda_occupancy.h, cudaOccMaxActiveBlocksPerMultiprocessor with the
 * device's default cache and carveout state): the least of the limits by
 * warps, by registers (allocated per warp in units of 256, over the SM's
 * sub-partitions), by shared memory (allocated in the architecture's
 * granularity with the driver's per-block reserve of 1 KB from compute
 * capability 8.0, against the SM's shared memory rounded up to a carveout
 * the architecture offers) and by the architecture's blocks per SM.  A
 * block barrier count is not in a trace: Kineto passes none, and with the
 * one every kernel has it never binds (the barriers are at least the
 * blocks).  An architecture the calculator does not know (compute
 * capability below 3 or above 12, or a minor it refuses) has no figure.
 *
 * One choice differs from Kineto's call: Kineto checks the block's shared
 * memory against the default per-block limit (48 KB), so every kernel that
 * opted into more (most GEMMs on Hopper) gets 0 %.  A kernel in a trace
 * ran, so its shared memory fitted its limit; we leave that check out
 * (TBE__OCC_LAUNCHED).  TBE__OCC_KINETO keeps it, to check the calculator
 * against Kineto's own figures (test_occupancy: every kernel of the two
 * H200 traces in test/data/kineto). */
#ifndef TBE_TRACE_MODEL_OCCUPANCY_H
#define TBE_TRACE_MODEL_OCCUPANCY_H

#include <stdint.h>

#include "tbexport/trace.h"

typedef enum tbe__occ_mode {
  TBE__OCC_LAUNCHED = 0, /* the kernel ran: no per-block shared memory check */
  TBE__OCC_KINETO = 1    /* Kineto's call: the default per-block limit applies */
} tbe__occ_mode;

/* What the calculator found for one launch configuration. */
typedef struct tbe__occ {
  int active_blocks;                         /* blocks per SM: the least of the limits below */
  int by_warps, by_regs, by_smem, by_blocks; /* INT32_MAX where nothing limits */
  int64_t regs_per_block;                    /* registers allocated to a block */
  int64_t smem_per_block;                    /* shared memory allocated to a block, bytes */
} tbe__occ;

/* The active blocks per SM of kernel `k` on device `d`.  Returns 0 and
 * fills *out, or -1 when the device's limits are unknown or the calculator
 * does not know its architecture (*out untouched). */
int tbe__occ_active_blocks(const tbe_device *d, const tbe_kernel *k, tbe__occ_mode mode,
                           tbe__occ *out);

/* Fills the figures of `k` that are unknown (< 0) and that `d` allows:
 * blocks and warps per SM need the SM count, the occupancy the calculator.
 * A figure the source gave is kept.  `d` may be NULL (nothing known). */
void tbe__occ_fill(const tbe_device *d, tbe_kernel *k, tbe__occ_mode mode);

#endif
