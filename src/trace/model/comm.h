/* comm.h: the collectives of a distributed run as PyTorch's clients read
 * them.
 *
 * The PyTorch Profiler TensorBoard plugin counts communication from the
 * kernels whose external id names an operator called nccl:<op> (or
 * gloo:<op>): PyTorch's own traces carry such operators (ProcessGroupNCCL
 * records "nccl:all_reduce" around the collective it enqueues); a trace
 * collected by tbexport, or one whose operators are c10d's alone
 * (c10d::allreduce_ under emit_nvtx), has none, and its Distributed view
 * is missing.  tbe_trace_finish therefore gives every NCCL kernel
 * (tbe__nccl_kernel_op) whose launching call is not inside an nccl:*
 * operator one: "nccl:<op>" with exactly the call's span on the call's
 * thread, a user annotation as PyTorch's (ProcessGroup's work records it
 * as a user-scope record_function: Kineto's "user_annotation"; the model's
 * order puts it before a call of the same span, which it encloses), with a
 * new external id, which the call and every kernel it launched take.  A call that also launched other GPU work (a
 * graph launch) is left alone: its other work would name an operator that
 * did not launch it.  A call inside an nccl:* operator, or whose NCCL
 * kernel already names one by its external id, is left alone, so a trace
 * read back from our outputs gets nothing twice.
 *
 * The same pass settles what the run says of its distribution:
 *   - the backend (tbe_trace.dist_backend, Kineto's distributedInfo
 *     "backend") when the source gave none and the trace has a rank:
 *     "nccl" when it has NCCL kernels, "gloo" when it has gloo:* operators
 *     (PyTorch's record of a gloo collective), else unknown (left out);
 *   - a distributed trace (a world size above 1, or a rank above 0 of an
 *     unknown world) with no NCCL kernel gets one warning line: its
 *     communication is on the CPU (gloo) or absent, so there is nothing on
 *     the GPU to analyse. */
#ifndef TBE_TRACE_MODEL_COMM_H
#define TBE_TRACE_MODEL_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/trace.h"

/* The collective an NCCL kernel runs, from its (demangled) name, as the
 * snake-case word PyTorch puts after "nccl:" ("all_reduce" for
 * ncclDevKernel_AllReduce_Sum_f32_RING_LL, ncclKernel_AllReduce_RING_LL_
 * Sum_float and ncclAllReduceRingLLKernel_sum_f32; "send_recv",
 * "generic" for kernels of no one collective), written into out[0..size)
 * NUL-terminated.  Returns its length, or 0 when `name` is no NCCL kernel
 * (it does not begin with "nccl", after an optional "void "). */
size_t tbe__nccl_kernel_op(const char *name, char *out, size_t size);

/* The wrappers, the backend and the note above, on a trace sorted and
 * linked by tbe_trace_finish (after the operator links, ops.h, and the
 * kernel names' demangling).  Stores in *added the number of operators
 * added: the caller sorts and links the trace again when it is not 0.
 * Returns 0 or an error. */
int tbe__trace_comm(tbe_trace *t, size_t *added);

#endif
