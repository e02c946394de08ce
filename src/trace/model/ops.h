/* ops.h: framework operators in the model, and which operator launched
 * each piece of GPU work.
 *
 * An operator is a TBE_EV_CPU_OP event on its host thread (a record_function
 * label, TBE_EV_USER_ANNOTATION), as Kineto writes them: the name, args
 * "Input Dims" (TBE_ARG_JSON, the shapes' text in one spelling,
 * common/torchnvtx.h) and "Sequence number" (TBE_ARG_INT, PyTorch's; a
 * backward node carries the number of the forward operator that made it),
 * and an external id.  Kineto's traces carry all of it; the collector's
 * spools (PyTorch's NVTX operator ranges) and Nsight Systems' exports (the
 * same ranges as NVTX text) are turned into it by tbe__trace_add_torch_op.
 *
 * tbe_trace_finish then links what no source linked (tbe__trace_link_ops),
 * so that every trace reads the same way whatever it came from:
 *   - every operator and annotation without an external id gets one;
 *   - every runtime or driver call without one takes the id of the
 *     innermost operator or annotation open on its thread when it began,
 *     and the GPU work it launched (by correlation) takes the call's, as
 *     Kineto attributes a kernel to the innermost op on the correlation
 *     stack at its launch;
 *   - without any "fwdbwd" flow in the trace, each backward operator is
 *     linked to the forward operator of its sequence number (Kineto's rule:
 *     operators in order of their end; of the forward operators of one
 *     process sharing a number, the one that began last; each forward
 *     operator gives one link).
 * Whatever a source linked itself is left as it is, so a trace read back
 * from our own outputs is linked exactly as before. */
#ifndef TBE_TRACE_MODEL_OPS_H
#define TBE_TRACE_MODEL_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/trace.h"

/* Adds the operator `name` (nlen bytes) on host track `track`: a CPU_OP
 * when PyTorch runs it as an operator (a namespaced name, "aten::mm",
 * "torch::autograd::AccumulateGrad", "autograd::engine::...", an autograd
 * node, "MmBackward0", or autograd's "detach"/"detach_"), else a
 * USER_ANNOTATION (record_function labels: "Optimizer.step#AdamW.step",
 * "forward"): the NVTX text does not say which, Kineto's category does.  `shapes` (slen bytes,
 * may be NULL) becomes "Input Dims", `seq` (>= 0) "Sequence number".
 * `flags` are the event's (TBE_EVF_CLAMPED for one cut by the end of the
 * capture).  Stores the index in *index when not NULL.  Returns 0 or an
 * error. */
int tbe__trace_add_torch_op(tbe_trace *t, uint32_t track, int64_t start, int64_t dur,
                            const char *name, size_t nlen, const char *shapes, size_t slen,
                            int64_t seq, uint8_t flags, uint32_t *index);

/* 1 when `name` is an autograd backward node or its engine wrapper
 * ("MmBackward0", "autograd::engine::evaluate_function: MmBackward0"). */
int tbe__op_is_backward(const char *name);

/* The links above, on a trace sorted and linked by tbe_trace_finish.
 * Returns 0 or TBE_ENOMEM. */
int tbe__trace_link_ops(tbe_trace *t);

#endif
