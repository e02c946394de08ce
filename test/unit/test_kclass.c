/* test_kclass.c: kernel classes (kclass.c) on real names.
 *
 *   - every line of test/data/names/classes.tsv (class, real demangled
 *     name, reviewed by hand) gets its class;
 *   - families over the whole name corpus (test/data/names/, the *.txt files, 10,000+
 *     real mangled names): every NCCL kernel is communication, every
 *     cuDNN fprop/dgrad/wgrad kernel a convolution, every cuBLASLt name
 *     that says "gemm" a GEMM, no cuRAND generator a GEMM, convolution or
 *     attention; a mangled name has the class of its demangled text;
 *   - edge cases: NULL, "", names cut inside template arguments, names
 *     longer than the classifier reads, every class has a distinct name.
 *
 * What must never happen: a GEMM counted as elementwise because its
 * epilogue is named in a template argument, a dtype-conversion name
 * ("convert") taken for a convolution, a crash on a cut name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#include "tbexport.h"

/* Calls fn(line, ctx) for each line of a data file (without '\n'). */
static void each_line(const char *rel, void (*fn)(char *line, void *ctx), void *ctx) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", TBE_TEST_DATA, rel);
  size_t n = 0;
  uint8_t *data = tu_read_file(path, &n);
  assert_non_null(data);
  char *text = realloc(data, n + 1);
  assert_non_null(text);
  text[n] = '\0';
  for (char *p = text, *e; *p; p = e + (*e != '\0')) {
    e = strchr(p, '\n');
    if (!e) e = p + strlen(p);
    char keep = *e;
    *e = '\0';
    if (*p) fn(p, ctx);
    *e = keep;
  }
  free(text);
}

static tbe_kernel_class class_named(const char *name) {
  for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++)
    if (strcmp(tbe_kernel_class_name(k), name) == 0) return (tbe_kernel_class)k;
  fail_msg("unknown class name \"%s\" in classes.tsv", name);
  return TBE_KCLASS_OTHER;
}

/* ---- the reviewed table ---- */

typedef struct table_ctx {
  size_t lines, wrong;
  size_t per_class[TBE_KCLASS__COUNT];
} table_ctx;

static void table_line(char *line, void *vctx) {
  table_ctx *c = vctx;
  if (line[0] == '#') return;
  char *tab = strchr(line, '\t');
  assert_non_null(tab);
  *tab = '\0';
  tbe_kernel_class want = class_named(line);
  tbe_kernel_class got = tbe_kernel_class_of(tab + 1);
  c->lines++;
  c->per_class[want]++;
  if (got != want && c->wrong++ < 10)
    print_message("classes.tsv: %s expected, %s given: %.200s\n", line, tbe_kernel_class_name(got),
                  tab + 1);
  *tab = '\t';
}

static void test_reviewed_table(void **state) {
  (void)state;
  table_ctx c = {0};
  each_line("names/classes.tsv", table_line, &c);
  assert_true(c.lines >= 200);
  assert_int_equal(c.wrong, 0);
  /* The table covers every class but "other" with real names. */
  for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) assert_true(c.per_class[k] > 0);
}

/* ---- families over the corpus ---- */

typedef struct family_ctx {
  const char *must_contain; /* lower-case fragment of the demangled name, or NULL: every name */
  const char *unless;       /* NULL, or a fragment that leaves a name out */
  tbe_kernel_class want;     /* TBE_KCLASS__COUNT: only "not one of banned" */
  uint32_t banned;           /* bit mask of classes no name may get */
  size_t checked, wrong;
} family_ctx;

static void family_line(char *line, void *vctx) {
  family_ctx *c = vctx;
  char dem[4096], low[4096];
  if (tbe_demangle(line, dem, sizeof dem) < 0) snprintf(dem, sizeof dem, "%s", line);
  size_t i = 0;
  for (; dem[i] && i < sizeof low - 1; i++)
    low[i] = (char)(dem[i] >= 'A' && dem[i] <= 'Z' ? dem[i] - 'A' + 'a' : dem[i]);
  low[i] = '\0';
  tbe_kernel_class got = tbe_kernel_class_of(line);
  /* A mangled name has the class of its demangled text. */
  assert_int_equal(got, tbe_kernel_class_of(dem));
  if (c->must_contain && !strstr(low, c->must_contain)) return;
  if (c->unless && strstr(low, c->unless)) return;
  c->checked++;
  int bad = (c->want != TBE_KCLASS__COUNT && got != c->want) || (c->banned >> got & 1u);
  if (bad && c->wrong++ < 5)
    print_message("%s: %.200s\n", tbe_kernel_class_name(got), dem);
}

static size_t family(const char *file, const char *must_contain, tbe_kernel_class want,
                     uint32_t banned) {
  /* Batch-norm statistics kernels name the convolution they feed
   * ("bn_stats_kernel<32, …fprop…>"): they are normalization. */
  family_ctx c = {must_contain, "bn_stats", want, banned, 0, 0};
  each_line(file, family_line, &c);
  assert_int_equal(c.wrong, 0);
  return c.checked;
}

static void test_corpus_families(void **state) {
  (void)state;
  const uint32_t heavy = 1u << TBE_KCLASS_GEMM | 1u << TBE_KCLASS_CONV | 1u << TBE_KCLASS_ATTENTION;
  assert_true(family("names/cuda13-libnccl.txt", NULL, TBE_KCLASS_COMM, 0) >= 70);
  assert_true(family("names/cuda13-libcublasLt.txt", "gemm", TBE_KCLASS_GEMM, 0) >= 500);
  assert_true(family("names/cuda13-libcublas.txt", "gemm", TBE_KCLASS_GEMM, 0) >= 100);
  assert_true(family("names/cuda13-libcudnn_engines_precompiled.txt", "fprop", TBE_KCLASS_CONV, 0) >=
              50);
  assert_true(family("names/cuda13-libcudnn_engines_precompiled.txt", "dgrad", TBE_KCLASS_CONV, 0) >=
              20);
  assert_true(family("names/cuda13-libcudnn_engines_precompiled.txt", "wgrad", TBE_KCLASS_CONV, 0) >=
              20);
  assert_true(family("names/torch-libtorch_cuda.txt", "flash_fwd", TBE_KCLASS_ATTENTION, 0) >= 10);
  assert_true(family("names/cuda13-libcudnn_ops.txt", "softmax", TBE_KCLASS_SOFTMAX, 0) >= 100);
  assert_true(family("names/cuda13-libcurand.txt", NULL, TBE_KCLASS__COUNT, heavy) >= 200);
  assert_true(family("names/cuda13-libcufft.txt", NULL, TBE_KCLASS__COUNT, heavy) >= 30);
  /* Inductor's Triton kernels: a reduction kernel is a reduction (or the
   * normalization it computes), never a copy for the cat it fuses. */
  const uint32_t not_red = ~(1u << TBE_KCLASS_REDUCTION | 1u << TBE_KCLASS_NORM |
                             1u << TBE_KCLASS_SOFTMAX) & ((1u << TBE_KCLASS__COUNT) - 1);
  assert_true(family("names/runtime-h200-compiled.names", "triton_red_", TBE_KCLASS__COUNT, not_red) >= 4);
  assert_true(family("names/runtime-h200-compiled.names", "triton_per_", TBE_KCLASS__COUNT, not_red) >= 8);
  assert_true(family("names/runtime-h200-compiled.names", "nvjet", TBE_KCLASS_GEMM, 0) >= 8);
  assert_true(family("names/runtime-h200-compiled.names", "sdpa", TBE_KCLASS_ATTENTION, 0) >= 2);
  /* PyTorch's elementwise loop is elementwise unless it runs a copy or a fill. */
  assert_true(family("names/torch-libtorch_cuda.txt", "vectorized_elementwise_kernel<4, at::native::cudafunctor",
                     TBE_KCLASS_ELEMENTWISE, 0) >= 1);
}

/* ---- edge cases ---- */

static void test_edges(void **state) {
  (void)state;
  assert_int_equal(tbe_kernel_class_of(NULL), TBE_KCLASS_OTHER);
  assert_int_equal(tbe_kernel_class_of(""), TBE_KCLASS_OTHER);
  assert_string_equal(tbe_kernel_class_name(TBE_KCLASS__COUNT), "?");
  assert_string_equal(tbe_kernel_class_name(UINT32_MAX), "?");
  /* Distinct, tag-safe names. */
  for (uint32_t a = 0; a < TBE_KCLASS__COUNT; a++) {
    const char *n = tbe_kernel_class_name(a);
    assert_true(strlen(n) > 0 && strspn(n, "abcdefghijklmnopqrstuvwxyz") == strlen(n));
    for (uint32_t b = a + 1; b < TBE_KCLASS__COUNT; b++)
      assert_string_not_equal(n, tbe_kernel_class_name(b));
  }
  /* A name cut inside its template arguments or parameters. */
  assert_int_equal(tbe_kernel_class_of("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64"),
                   TBE_KCLASS_GEMM);
  assert_int_equal(tbe_kernel_class_of("void at::native::reduce_kernel<512, 1, at::native::Red"),
                   TBE_KCLASS_REDUCTION);
  assert_int_equal(tbe_kernel_class_of("softmax_warp_forward(float*, "), TBE_KCLASS_SOFTMAX);
  assert_int_equal(tbe_kernel_class_of(">>>(((<<<"), TBE_KCLASS_OTHER);
  /* "convert" is not a convolution; an epilogue in a GEMM's arguments
   * does not make it elementwise. */
  assert_int_equal(tbe_kernel_class_of("void mt19937_scratch_convert<float>(unsigned int*, float*, int)"),
                   TBE_KCLASS_OTHER);
  /* Longer than the classifier reads: classified on its start. */
  size_t big = 100000;
  char *s = malloc(big + 1);
  assert_non_null(s);
  memcpy(s, "ncclDevKernel_AllReduce<", 24);
  memset(s + 24, 'x', big - 24);
  s[big] = '\0';
  assert_int_equal(tbe_kernel_class_of(s), TBE_KCLASS_COMM);
  memset(s, '<', big);
  assert_int_equal(tbe_kernel_class_of(s), TBE_KCLASS_OTHER);
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reviewed_table),
      cmocka_unit_test(test_corpus_families),
      cmocka_unit_test(test_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
