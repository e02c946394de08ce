/* memory_counters.h: the memory curve as counter tracks per GPU
 * (memory_counters.c), a pass of tbe_trace_finish. */
#ifndef TBE_TRACE_MODEL_MEMORY_COUNTERS_H
#define TBE_TRACE_MODEL_MEMORY_COUNTERS_H

#include <stddef.h>

#include "tbexport/trace.h"
#include "trace/model/vocab.h"

/* The names of the two counter tracks of a GPU's memory curve (bytes). */
#define TBE__MEM_COUNTER_ALLOCATED TBE__CTR_MEM_ALLOCATED
#define TBE__MEM_COUNTER_RESERVED TBE__CTR_MEM_RESERVED

/* For each process and GPU whose "[memory]" events carry totals (>= 0):
 * the counter tracks TBE__MEM_COUNTER_ALLOCATED and _RESERVED
 * (tbe_trace_metric_track) with one TBE_EV_COUNTER per change of the
 * total, in time order; several events at one time count as their last.
 * A GPU that already has a counter track of that name (a trace read back
 * from our own outputs) gets nothing more of it.  The new events are
 * appended (the caller sorts); *added gets their number.  Returns 0 or an
 * error. */
int tbe__trace_memory_counters(tbe_trace *t, size_t *added);

/* 1 when `tr` is one of those tracks: a GPU's counter track named
 * TBE__MEM_COUNTER_ALLOCATED or _RESERVED.  The analysis reads the memory
 * from the events (analysis_memory.c), not as a hardware metric. */
int tbe__track_is_memory_counter(const tbe_trace *t, const tbe_track *tr);

#endif
