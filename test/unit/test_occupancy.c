/* test_occupancy.c: Kineto's kernel figures from a launch configuration
 * (src/trace/model/occupancy.h).
 *
 * The reference is Kineto itself: every kernel of the two real
 * torch.profiler traces of test/data/kineto (an H200, 276 kernels of 64
 * launch configurations: 1 to 28,800 blocks, 16 to 242 registers, no
 * shared memory to 231,424 bytes) carries the blocks per SM, warps per SM
 * and est. achieved occupancy % that Kineto computed with the CUDA
 * occupancy calculator; ours, in Kineto's mode, must be the same for
 * every one.  In our mode (the kernel ran, so no per-block shared memory
 * check) the kernels above the default 48 KB per block, which Kineto
 * gives 0 %, get the calculator's figure, worked out by hand below.  Then
 * the limits one at a time on other architectures (Volta, Turing, A100,
 * Pascal's GP100), worked out by hand from the calculator's rules; what
 * has no figure (an architecture the calculator does not know, unknown
 * device limits, an empty block); hostile values (no overflow: this runs
 * under UBSan in CI); and the model: tbe_trace_finish fills what a source
 * did not give and keeps what it gave. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tbexport.h"
#include "tbexport/import.h"
#include "testutil.h"
#include "trace/model/occupancy.h"

static tbe_trace *import(const char *rel) {
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe_import_error err;
  memset(&err, 0, sizeof err);
  int rc = tbe_import_file(t, tu_data(rel), NULL, &err);
  if (rc) print_message("import of %s failed: %s\n", rel, err.message);
  assert_int_equal(rc, 0);
  return t;
}

/* An H200 as its deviceProperties say (test/data/kineto). */
static tbe_device h200(void) {
  tbe_device d;
  memset(&d, 0, sizeof d);
  d.sm_count = 132;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.regs_per_block = 65536;
  d.regs_per_sm = 65536;
  d.warp_size = 32;
  d.shared_per_block = 49152;
  d.shared_per_sm = 233472;
  d.shared_per_block_optin = 232448;
  return d;
}

static tbe_kernel launch(uint32_t grid, uint32_t threads, uint16_t regs, uint32_t smem) {
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  k.grid[0] = grid;
  k.grid[1] = k.grid[2] = 1;
  k.block[0] = threads;
  k.block[1] = k.block[2] = 1;
  k.registers = regs;
  k.static_shared = smem;
  k.occupancy_pct = k.blocks_per_sm = k.warps_per_sm = -1;
  return k;
}

/* Kineto prints its floats with "%f" (std::to_string); so do we here. */
static int same_printed(float kineto, float ours) {
  char a[64], b[64];
  snprintf(a, sizeof a, "%f", (double)kineto);
  snprintf(b, sizeof b, "%f", (double)ours);
  return strcmp(a, b) == 0;
}

/* Every kernel of `rel` against Kineto's own figures; returns how many
 * kernels had more shared memory than the default per-block limit. */
static int check_kineto_file(const char *rel) {
  tbe_trace *t = import(rel);
  assert_int_equal(t->ndevices, 1);
  const tbe_device *d = &t->devices[0];
  size_t n = 0;
  int big = 0, bad = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    const tbe_kernel *src = tbe_trace_kernel(t, e);
    if (!src) continue;
    n++;
    assert_true(src->occupancy_pct >= 0 && src->blocks_per_sm >= 0 && src->warps_per_sm >= 0);
    tbe_kernel k = *src;
    k.occupancy_pct = k.blocks_per_sm = k.warps_per_sm = -1;
    tbe__occ_fill(d, &k, TBE__OCC_KINETO);
    int ok = same_printed(src->blocks_per_sm, k.blocks_per_sm) &&
             same_printed(src->warps_per_sm, k.warps_per_sm) &&
             src->occupancy_pct == k.occupancy_pct;
    if (!ok && bad++ < 5)
      print_message(
          "%s: %s grid %u,%u,%u block %u,%u,%u regs %u smem %u+%u: Kineto %f %f %g, "
          "ours %f %f %g\n",
          rel, tbe_trace_str(t, e->name), src->grid[0], src->grid[1], src->grid[2], src->block[0],
          src->block[1], src->block[2], src->registers, src->static_shared, src->dynamic_shared,
          (double)src->blocks_per_sm, (double)src->warps_per_sm, (double)src->occupancy_pct,
          (double)k.blocks_per_sm, (double)k.warps_per_sm, (double)k.occupancy_pct);
    /* Ours differs only where Kineto's per-block check gave 0. */
    tbe_kernel l = *src;
    l.occupancy_pct = -1;
    tbe__occ_fill(d, &l, TBE__OCC_LAUNCHED);
    if ((uint64_t)src->static_shared + src->dynamic_shared + 1024 >
        (uint64_t)d->shared_per_block + 1024) {
      big++;
      assert_true(src->occupancy_pct == 0);
    } else if (l.occupancy_pct != src->occupancy_pct) {
      fail_msg("%s: %s: our mode %g, Kineto %g with shared memory under the default limit", rel,
               tbe_trace_str(t, e->name), (double)l.occupancy_pct, (double)src->occupancy_pct);
    }
  }
  assert_int_equal(bad, 0);
  assert_true(n > 100);
  tbe_trace_free(t);
  return big;
}

static void test_kineto_h200(void **state) {
  (void)state;
  int big = check_kineto_file("kineto/h200_cnn_fp32.pt.trace.json");
  big += check_kineto_file("kineto/h200_cnn_bf16.pt.trace.json");
  assert_true(big > 0); /* the traces have kernels past 48 KB: the difference is exercised */
}

/* Kernels past the default per-block shared memory, in our mode. */
static void test_optin_shared(void **state) {
  (void)state;
  tbe_device d = h200();
  tbe__occ o;
  /* cutlass, fp32 trace: 242 registers -> 7,744 per warp, 7,936 allocated;
   * 16,384 per sub-partition hold 2 warps, 8 an SM, 2 blocks of 4 warps.
   * Shared: 81,920 + 1,024 = 82,944 (a multiple of 128); 228 KB hold 2. */
  tbe_kernel k = launch(481, 128, 242, 81920);
  assert_int_equal(tbe__occ_active_blocks(&d, &k, TBE__OCC_LAUNCHED, &o), 0);
  assert_int_equal(o.by_regs, 2);
  assert_int_equal(o.by_smem, 2);
  assert_int_equal(o.by_warps, 16);
  assert_int_equal(o.by_blocks, 32);
  assert_int_equal(o.active_blocks, 2);
  assert_int_equal(o.smem_per_block, 82944);
  assert_int_equal(o.regs_per_block, 4 * 7936);
  tbe__occ_fill(&d, &k, TBE__OCC_LAUNCHED);
  assert_true(k.occupancy_pct == 13.0f); /* 2 x 128 / 2048 = 12.5 %, rounded half up */
  /* Kineto's mode: past 48 KB + the reserve, no block fits */
  assert_int_equal(tbe__occ_active_blocks(&d, &k, TBE__OCC_KINETO, &o), 0);
  assert_int_equal(o.by_smem, 0);
  /* sm90 fprop, bf16 trace: 231,424 + 1,024 = 232,448 > 228 KB by
   * default... which is the largest carveout (233,472): 1 block of 384. */
  k = launch(120, 384, 168, 231424);
  tbe__occ_fill(&d, &k, TBE__OCC_LAUNCHED);
  assert_true(k.occupancy_pct == 17.0f); /* min(0.909, 1) x 384 / 2048 = 17.05 % */
}

static void test_architectures(void **state) {
  (void)state;
  tbe__occ o;
  /* V100 (7.0): 96 KB shared, 64 warps, 32 blocks, no reserve, 256-byte
   * granules.  256 threads, 64 registers: 2,048 a warp, 16,384 a
   * sub-partition -> 8 warps, 32 an SM, 4 blocks.  Shared 10,000 -> 10,240;
   * 96 KB / 10,240 = 9. */
  tbe_device v = h200();
  v.cc_major = 7;
  v.cc_minor = 0;
  v.sm_count = 80;
  v.shared_per_sm = 98304;
  v.shared_per_block_optin = 98304;
  tbe_kernel k = launch(1000, 256, 64, 10000);
  assert_int_equal(tbe__occ_active_blocks(&v, &k, TBE__OCC_LAUNCHED, &o), 0);
  assert_int_equal(o.by_regs, 4);
  assert_int_equal(o.by_smem, 9);
  assert_int_equal(o.smem_per_block, 10240);
  assert_int_equal(o.active_blocks, 4);
  /* T4 (7.5): 16 blocks an SM, 1,024 threads, 64 KB shared.  64 threads,
   * 16 registers: 2 warps a block; warps allow 16, registers (512 a
   * warp, 16,384 a sub-partition -> 32 warps, 128 an SM) 64, blocks 16. */
  tbe_device t4 = v;
  t4.cc_minor = 5;
  t4.max_threads_per_sm = 1024;
  t4.shared_per_sm = 65536;
  k = launch(40, 64, 16, 0);
  assert_int_equal(tbe__occ_active_blocks(&t4, &k, TBE__OCC_LAUNCHED, &o), 0);
  assert_int_equal(o.by_warps, 16);
  assert_int_equal(o.by_regs, 64);
  assert_int_equal(o.by_blocks, 16);
  assert_int_equal(o.active_blocks, 16);
  /* A100 (8.0): 164 KB carveouts; a block needing 100 KB + 1 KB reserve
   * rounds up within 164 KB: 1 block.  A 2-byte block of shared memory
   * takes a 128-byte granule plus the reserve: 1,152. */
  tbe_device a = h200();
  a.cc_major = 8;
  a.cc_minor = 0;
  a.shared_per_sm = 167936;
  k = launch(108, 128, 32, 102400);
  assert_int_equal(tbe__occ_active_blocks(&a, &k, TBE__OCC_LAUNCHED, &o), 0);
  assert_int_equal(o.smem_per_block, 103424);
  assert_int_equal(o.by_smem, 1);
  k = launch(108, 128, 32, 2);
  assert_int_equal(tbe__occ_active_blocks(&a, &k, TBE__OCC_LAUNCHED, &o), 0);
  assert_int_equal(o.smem_per_block, 1152);
  assert_int_equal(o.by_smem, 145); /* 167,936 / 1,152 */
  /* GP100 (6.0): two sub-partitions, but a block must also fit four: 1,024
   * threads of 64 registers need 32 warps x 2,048 = 65,536, which fits the
   * block limit with either rounding (32 is a multiple of 2 and 4). */
  tbe_device p = h200();
  p.cc_major = 6;
  p.cc_minor = 0;
  p.shared_per_sm = 65536;
  k = launch(56, 1024, 64, 0);
  assert_int_equal(tbe__occ_active_blocks(&p, &k, TBE__OCC_LAUNCHED, &o), 0);
  assert_int_equal(o.by_regs, 1);
  /* 992 threads (31 warps) of 64 registers: GP100's 2 sub-partitions round
   * to 32 warps (65,536: fits), GP10x's 4 to 32 as well; 1,056 threads is
   * beyond the block's 1,024 (no room). */
  k = launch(56, 1056, 32, 0);
  assert_int_equal(tbe__occ_active_blocks(&p, &k, TBE__OCC_LAUNCHED, &o), 0);
  assert_int_equal(o.by_warps, 0);
  assert_int_equal(o.active_blocks, 0);
  /* Registers beyond the architecture's per-thread limit (255 on Pascal). */
  k = launch(56, 32, 256, 0);
  assert_int_equal(tbe__occ_active_blocks(&p, &k, TBE__OCC_LAUNCHED, &o), 0);
  assert_int_equal(o.by_regs, 0);
}

static void test_no_figure(void **state) {
  (void)state;
  tbe__occ o;
  tbe_device d = h200();
  tbe_kernel k = launch(264, 256, 32, 0);
  /* an architecture the calculator does not know */
  d.cc_major = 13;
  assert_int_equal(tbe__occ_active_blocks(&d, &k, TBE__OCC_LAUNCHED, &o), -1);
  tbe__occ_fill(&d, &k, TBE__OCC_LAUNCHED);
  assert_true(k.occupancy_pct < 0);
  assert_true(k.blocks_per_sm == 2.0f && k.warps_per_sm == 16.0f); /* these need only the SMs */
  d = h200();
  d.cc_major = 12;
  d.cc_minor = 7; /* a minor the calculator refuses */
  assert_int_equal(tbe__occ_active_blocks(&d, &k, TBE__OCC_LAUNCHED, &o), -1);
  /* a device limit unknown */
  d = h200();
  d.regs_per_sm = 0;
  assert_int_equal(tbe__occ_active_blocks(&d, &k, TBE__OCC_LAUNCHED, &o), -1);
  /* shared memory per SM no carveout gives */
  d = h200();
  d.shared_per_sm = 300 * 1024;
  assert_int_equal(tbe__occ_active_blocks(&d, &k, TBE__OCC_LAUNCHED, &o), -1);
  /* an empty block */
  d = h200();
  k = launch(1, 0, 32, 0);
  assert_int_equal(tbe__occ_active_blocks(&d, &k, TBE__OCC_LAUNCHED, &o), -1);
  /* no SM count: nothing at all */
  d.sm_count = 0;
  k = launch(1, 32, 32, 0);
  tbe__occ_fill(&d, &k, TBE__OCC_LAUNCHED);
  assert_true(k.blocks_per_sm < 0 && k.warps_per_sm < 0 && k.occupancy_pct < 0);
  tbe__occ_fill(NULL, &k, TBE__OCC_LAUNCHED);
  assert_true(k.blocks_per_sm < 0);
}

static void test_hostile(void **state) {
  (void)state;
  tbe__occ o;
  tbe_device d = h200();
  /* blocks and grids whose products overflow 64 bits */
  tbe_kernel k = launch(UINT32_MAX, UINT32_MAX, UINT16_MAX, 0);
  k.grid[1] = k.grid[2] = k.block[1] = k.block[2] = UINT32_MAX;
  assert_int_equal(tbe__occ_active_blocks(&d, &k, TBE__OCC_LAUNCHED, &o), 0);
  assert_int_equal(o.active_blocks, 0);
  assert_int_equal(o.by_warps, 0);
  tbe__occ_fill(&d, &k, TBE__OCC_LAUNCHED);
  assert_true(k.occupancy_pct == 0.0f);
  assert_true(k.blocks_per_sm > 1e15f);
  /* shared memory beyond any carveout: no figure (Kineto's per-block
   * check comes first, as in the calculator: no room) */
  k = launch(1, 32, 32, UINT32_MAX);
  k.dynamic_shared = UINT32_MAX;
  assert_int_equal(tbe__occ_active_blocks(&d, &k, TBE__OCC_LAUNCHED, &o), -1);
  assert_int_equal(tbe__occ_active_blocks(&d, &k, TBE__OCC_KINETO, &o), 0);
  assert_int_equal(o.by_smem, 0);
  d.shared_per_block = INT64_MAX;
  d.regs_per_sm = INT32_MAX;
  d.regs_per_block = INT32_MAX;
  k = launch(1, 1024, UINT16_MAX, 0);
  assert_int_equal(tbe__occ_active_blocks(&d, &k, TBE__OCC_KINETO, &o), 0);
  assert_int_equal(o.by_regs, 0); /* past 256 a thread */
  d.warp_size = 1;
  d.max_threads_per_sm = INT32_MAX;
  k = launch(1, 1, 0, 0);
  assert_int_equal(tbe__occ_active_blocks(&d, &k, TBE__OCC_LAUNCHED, &o), 0);
  assert_int_equal(o.by_regs, INT32_MAX);
  assert_int_equal(o.active_blocks, 32);
  /* a source's figure that is not a number is left alone */
  k = launch(1, 32, 32, 0);
  k.blocks_per_sm = __builtin_nanf("");
  tbe__occ_fill(&d, &k, TBE__OCC_LAUNCHED);
  assert_true(k.occupancy_pct < 0 && k.warps_per_sm < 0);
}

/* tbe_trace_finish fills the kernels of a GPU whose limits are known and
 * keeps a source's own figures. */
static void test_model_fills(void **state) {
  (void)state;
  tbe_trace *t = NULL;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t di, tr, tr2;
  assert_int_equal(tbe_trace_device(t, 0, &di), 0);
  t->devices[di] = h200();
  t->devices[di].id = 0;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 0, 7, 0, &tr), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 1, &tr2), 0); /* device 1: unknown */
  tbe_kernel k1 = launch(264, 256, 32, 0), k2 = launch(264, 256, 32, 0),
             k3 = launch(264, 256, 32, 0);
  k2.blocks_per_sm = 5.5f;
  k2.warps_per_sm = 44.0f;
  k2.occupancy_pct = 42.0f; /* the source's: kept */
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_KERNEL;
  e.start_ns = 1000;
  e.dur_ns = 10;
  e.track = tr;
  assert_int_equal(tbe_trace_add_event(t, &e, &k1, NULL, 0, NULL), 0);
  e.start_ns = 2000;
  assert_int_equal(tbe_trace_add_event(t, &e, &k2, NULL, 0, NULL), 0);
  e.track = tr2;
  assert_int_equal(tbe_trace_add_event(t, &e, &k3, NULL, 0, NULL), 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  int seen = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_kernel *k = tbe_trace_kernel(t, &t->events[i]);
    if (t->events[i].track == tr2) {
      assert_true(k->blocks_per_sm < 0 && k->occupancy_pct < 0); /* no limits known */
      seen |= 4;
    } else if (t->events[i].start_ns == 1000) {
      /* 264 / 132 = 2 blocks an SM of 8 warps; 8 fit by everything: 25 % */
      assert_true(k->blocks_per_sm == 2.0f && k->warps_per_sm == 16.0f &&
                  k->occupancy_pct == 25.0f);
      seen |= 1;
    } else {
      assert_true(k->blocks_per_sm == 5.5f && k->warps_per_sm == 44.0f &&
                  k->occupancy_pct == 42.0f);
      seen |= 2;
    }
  }
  assert_int_equal(seen, 7);
  tbe_trace_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kineto_h200),   cmocka_unit_test(test_optin_shared),
      cmocka_unit_test(test_architectures), cmocka_unit_test(test_no_figure),
      cmocka_unit_test(test_hostile),       cmocka_unit_test(test_model_fills),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
