/* kclass.c: the class of a kernel (GEMM, convolution, attention, ...)
 * from its name.
 *
 * A name is cut into two parts, lower-cased:
 *   base  the qualified function name outside template arguments, without
 *         return type or parameters: "at::native::vectorized_elementwise_
 *         kernel", "cutlass::kernel2", "sm90_xmma_gemm_f32f32_...";
 *   args  the template arguments: "<8, at::native::bfloat16_copy_kernel_
 *         cuda(...)::{lambda(float)#1}, ...>", "<cutlass_80_tensorop_
 *         s1688gemm_64x64_32x6_nn_align4>".
 * The rows of `rules` are tried in order and the first whose fragment
 * occurs in its part wins.  Order is the whole design: a kernel usually
 * names several things ("implicit_convolve_sgemm" is a convolution done
 * as a GEMM; "triton_per_fused_native_layer_norm_0" is a normalization
 * done as a persistent reduction; "vectorized_elementwise_kernel<8,
 * bfloat16_copy_kernel_cuda>" is a dtype copy run by the elementwise
 * loop), so the specific families come first: communication, attention,
 * softmax, normalization, convolution, GEMM, copy, then the broad
 * reduction and elementwise families.  Template arguments are looked at
 * only for rows that say so: generic launchers (cutlass::Kernel2<…>,
 * cutlass::device_kernel<GemmUniversal<…>>, the elementwise loop running a
 * copy functor) carry the real name there, while other kernels' arguments
 * name unrelated types (epilogue functors, "Copy" atoms inside a GEMM).
 *
 * To extend: add a row above the first broader row it must win against,
 * and a line to test/data/names/classes.tsv (test_kclass checks every
 * line there and the families of the whole name corpus).
 *
 * Nothing is allocated; names longer than NAME_MAX_BYTES are classified
 * on their first NAME_MAX_BYTES bytes. */
#include <stddef.h>
#include <string.h>

#include "tbexport/analysis.h"

#define NAME_MAX_BYTES 2048

enum { IN_BASE = 1, IN_ARGS = 2, IN_BOTH = 3 };

typedef struct rule {
  tbe_kernel_class cls;
  int where;
  const char *frag;
  const char *unless; /* NULL, or a fragment that vetoes this row ("convert") */
} rule;

#define ROW(cls, where, frag) {cls, where, frag, NULL}

static const rule rules[] = {
    /* communication */
    ROW(TBE_KCLASS_COMM, IN_BOTH, "nccl"),
    ROW(TBE_KCLASS_COMM, IN_BASE, "nvshmem"),
    ROW(TBE_KCLASS_COMM, IN_BASE, "allreduce"),
    ROW(TBE_KCLASS_COMM, IN_BASE, "all_reduce"),
    ROW(TBE_KCLASS_COMM, IN_BASE, "allgather"),
    ROW(TBE_KCLASS_COMM, IN_BASE, "all_gather"),
    ROW(TBE_KCLASS_COMM, IN_BASE, "reducescatter"),
    ROW(TBE_KCLASS_COMM, IN_BASE, "reduce_scatter"),
    ROW(TBE_KCLASS_COMM, IN_BASE, "alltoall"),
    ROW(TBE_KCLASS_COMM, IN_BASE, "multigpubarrier"),
    /* fused attention */
    ROW(TBE_KCLASS_ATTENTION, IN_BOTH, "flash"),
    ROW(TBE_KCLASS_ATTENTION, IN_BOTH, "fmha"),
    ROW(TBE_KCLASS_ATTENTION, IN_BOTH, "attention"),
    ROW(TBE_KCLASS_ATTENTION, IN_BASE, "attn"),
    ROW(TBE_KCLASS_ATTENTION, IN_BASE, "sdpa"),
    ROW(TBE_KCLASS_ATTENTION, IN_BASE, "mha_"),
    /* cuDNN's SDPA backward: dO.O row sums and the dQ conversion */
    ROW(TBE_KCLASS_ATTENTION, IN_BASE, "compute_dot_do_o"),
    ROW(TBE_KCLASS_ATTENTION, IN_BASE, "convert_dq"),
    /* softmax (before reduction: a softmax is one) */
    ROW(TBE_KCLASS_SOFTMAX, IN_BASE, "softmax"),
    /* normalization (before reduction: statistics are one); cuDNN's
     * convolutions with a batch norm fused in are convolutions */
    ROW(TBE_KCLASS_CONV, IN_BASE, "batchnorm::kernel_matmul"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "layer_norm"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "layernorm"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "batch_norm"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "batchnorm"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "group_norm"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "groupnorm"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "rms_norm"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "rmsnorm"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "instance_norm"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "instancenorm"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "weight_norm"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "gammabeta"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "bn_fw"),
    ROW(TBE_KCLASS_NORM, IN_BASE, "bn_bw"),
    ROW(TBE_KCLASS_NORM, IN_ARGS, "layernorm"),
    ROW(TBE_KCLASS_NORM, IN_ARGS, "layer_norm"),
    /* convolution (before GEMM: implicit GEMM convolutions name both) */
    ROW(TBE_KCLASS_CONV, IN_BOTH, "convolv"),
    ROW(TBE_KCLASS_CONV, IN_BOTH, "fprop"),
    ROW(TBE_KCLASS_CONV, IN_BOTH, "dgrad"),
    ROW(TBE_KCLASS_CONV, IN_BOTH, "wgrad"),
    ROW(TBE_KCLASS_CONV, IN_BASE, "winograd"),
    {TBE_KCLASS_CONV, IN_BASE, "conv", "conver"},
    ROW(TBE_KCLASS_CONV, IN_BASE, "im2col"),
    ROW(TBE_KCLASS_CONV, IN_BASE, "col2im"),
    ROW(TBE_KCLASS_CONV, IN_BASE, "depthwise"),
    /* GEMM */
    ROW(TBE_KCLASS_GEMM, IN_BOTH, "gemm"),
    ROW(TBE_KCLASS_GEMM, IN_BOTH, "gemv"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "matmul"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "nvjet"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "cublas"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "triton_tem_fused_mm"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "triton_tem_fused_addmm"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "triton_tem_fused_bmm"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "triton_mm"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "_bmm"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "cutlass"),
    /* the rest of dense BLAS: triangular solves and products, symmetric
     * and Hermitian products, rank-k updates, level-2 matrix-vector */
    ROW(TBE_KCLASS_GEMM, IN_BASE, "trsm"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "trmm"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "syrk"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "herk"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "syr2k"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "her2k"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "symm"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "hemm"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "symv"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "hemv"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "trmv"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "tbmv"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "tpmv"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "trsv"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "tbsv"),
    ROW(TBE_KCLASS_GEMM, IN_BASE, "tpsv"),
    /* Triton's reductions (Inductor names them triton_red_ / triton_per_
     * and lists the fused ops after "fused_": a cat or transpose among
     * them does not make the kernel a copy) */
    ROW(TBE_KCLASS_REDUCTION, IN_BASE, "triton_red_"),
    ROW(TBE_KCLASS_REDUCTION, IN_BASE, "triton_per_"),
    /* copy and fill */
    ROW(TBE_KCLASS_COPY, IN_BASE, "copy"),
    ROW(TBE_KCLASS_COPY, IN_ARGS, "copy_kernel"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "memcpy"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "memset"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "fill"),
    ROW(TBE_KCLASS_COPY, IN_ARGS, "fillfunctor"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "tonhwc"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "tonchw"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "tofoldednhwc"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "tofoldednchw"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "addpadding"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "tensortransform"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "converttensor"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "transpose"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "gather"),
    ROW(TBE_KCLASS_COPY, IN_BASE, "scatter"),
    {TBE_KCLASS_COPY, IN_BASE, "index", "with_index"},
    ROW(TBE_KCLASS_COPY, IN_BASE, "catarray"),
    /* reduction */
    ROW(TBE_KCLASS_REDUCTION, IN_BASE, "reduc"),
    ROW(TBE_KCLASS_REDUCTION, IN_BASE, "triton_red"),
    ROW(TBE_KCLASS_REDUCTION, IN_BASE, "triton_per"),
    ROW(TBE_KCLASS_REDUCTION, IN_BASE, "argmax"),
    ROW(TBE_KCLASS_REDUCTION, IN_BASE, "argmin"),
    ROW(TBE_KCLASS_REDUCTION, IN_BASE, "welford"),
    ROW(TBE_KCLASS_REDUCTION, IN_BASE, "norm_kernel"),
    ROW(TBE_KCLASS_REDUCTION, IN_BASE, "dot_kernel"),
    ROW(TBE_KCLASS_REDUCTION, IN_BASE, "asum"),
    ROW(TBE_KCLASS_REDUCTION, IN_BASE, "nrm2"),
    /* elementwise */
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "elementwise"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "triton_poi"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "pointwise"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "multi_tensor_apply"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "op_tensor"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "op_generic_tensor"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "dropout"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "relu"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "gelu"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "silu"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "sigmoid"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "tanh"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "unary"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "binary"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "loop_"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "wrapped_"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "_fusion"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "fusion_"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "scal_kernel"),
    ROW(TBE_KCLASS_ELEMENTWISE, IN_BASE, "axpy"),
};

static const char *const class_names[TBE_KCLASS__COUNT] = {
    "gemm", "conv", "attention", "elementwise", "reduction",
    "norm", "softmax", "copy", "comm", "other",
};

const char *tbe_kernel_class_name(uint32_t k) {
  return k < TBE_KCLASS__COUNT ? class_names[k] : "?";
}

/* ---- cutting a name ---- */

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* Splits the lower-cased `name` into base and args (both NUL-terminated,
 * each at most NAME_MAX_BYTES).  The parameter list starts at the first
 * '(' outside template arguments that does not open "(anonymous
 * namespace)"; a return type is the text before the last space outside
 * template arguments that comes before the function name. */
static void cut(const char *name, char *base, char *args) {
  size_t nb = 0, na = 0;
  int depth = 0;
  for (const char *p = name; *p && nb < NAME_MAX_BYTES - 1 && na < NAME_MAX_BYTES - 1; p++) {
    char c = lower(*p);
    if (depth == 0 && c == '(') {
      if (strncmp(p, "(anonymous namespace)", 21) == 0) {
        p += 20;
        continue;
      }
      break;
    }
    if (c == '<') depth++;
    if (depth > 0) {
      args[na++] = c;
      if (c == '>') depth--;
      continue;
    }
    if (c == '>') continue; /* stray '>' (operator>>, a cut name) */
    if (c == ' ') {
      /* "void at::f": drop what came before (return type); keep the
       * spaces of "operator new" and of "unsigned int" by keeping the
       * rest: only a space at depth 0 ends the return type. */
      nb = 0;
      continue;
    }
    base[nb++] = c;
  }
  base[nb] = '\0';
  args[na] = '\0';
}

tbe_kernel_class tbe_kernel_class_of(const char *name) {
  if (!name || !*name) return TBE_KCLASS_OTHER;
  char demangled[NAME_MAX_BYTES];
  if (name[0] == '_' && name[1] == 'Z' && tbe_demangle(name, demangled, sizeof demangled) >= 0)
    name = demangled;
  char base[NAME_MAX_BYTES], args[NAME_MAX_BYTES];
  cut(name, base, args);
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
    const rule *r = &rules[i];
    if (((r->where & IN_BASE) && strstr(base, r->frag) && !(r->unless && strstr(base, r->unless))) ||
        ((r->where & IN_ARGS) && strstr(args, r->frag) && !(r->unless && strstr(args, r->unless))))
      return r->cls;
  }
  return TBE_KCLASS_OTHER;
}
