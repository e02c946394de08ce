/* torchnvtx.h: the text PyTorch gives an operator's NVTX range, read back.
 *
 * Under torch.autograd.profiler.emit_nvtx (what `tbexport -- python ...`
 * turns on, and Nsight Systems' --pytorch=autograd-nvtx), every operator
 * PyTorch runs pushes one NVTX range whose message is
 *
 *   NAME[, seq = N][, op_id = N][, sizes = SHAPES][, input_op_ids = [(N,N), ...]]
 *
 * in that order: the sequence number only for operators that record one
 * (forward operators run with autograd on, and the backward nodes made from
 * them, which carry the same number); op_id for every operator (a counter,
 * so every message is a new string); the input shapes only with
 * record_shapes, one list per input ("[]" for a non-tensor), a tensor list
 * flattened into its tensors; the producers of the inputs likewise.  For
 * example
 *
 *   aten::mm, seq = 12, op_id = 430, sizes = [[4096, 8192], [8192, 512]],
 *     input_op_ids = [(416,0), (427,0)]
 *
 * tbe__torch_nvtx_parse tells such a message from any other NVTX text and
 * splits it: the name, the numbers, the shapes' text.  It accepts only the
 * whole grammar above (a name, then at least one of seq and op_id, each
 * field at most once and in order, shapes a list of lists of integers,
 * nothing after the last field), so a user's range that merely contains a
 * comma is never taken for an operator.  Pure: no allocation, no state;
 * linear in the text. */
#ifndef TBE_COMMON_TORCHNVTX_H
#define TBE_COMMON_TORCHNVTX_H

#include <stddef.h>
#include <stdint.h>

typedef struct tbe__torch_op_text {
  size_t name_len;     /* bytes of the name at the text's start */
  int64_t seq;         /* the sequence number, -1 when absent */
  uint64_t op_id;      /* 0 when absent */
  const char *sizes;   /* the shapes' text ("[[4096, 8192], []]"), NULL when absent */
  size_t sizes_len;
  uint32_t ninputs;    /* inputs listed in the shapes (0 without them) */
} tbe__torch_op_text;

/* 1 when text[0..len) is an operator's message (filling *out), else 0
 * (*out untouched). */
int tbe__torch_nvtx_parse(const char *text, size_t len, tbe__torch_op_text *out);

/* The shapes' text in one spelling whatever the source's spacing: no
 * whitespace but one space after each comma ("[[32, 10], []]", as PyTorch
 * and Kineto write it).  Writes at most `size` bytes (no NUL) into `out` and
 * returns the length of the whole result, which may exceed `size`: then the
 * output is cut there.  Bytes other than digits, '-', brackets, commas and
 * whitespace are kept as they are. */
size_t tbe__shapes_canon(const char *in, size_t len, char *out, size_t size);

#endif
