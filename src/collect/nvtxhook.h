/* nvtxhook.h: the collector's own NVTX handlers.
 *
 * Under `tbexport -- CMD` the injection library is the program's NVTX tool
 * (NVTX_INJECTION64_PATH).  It used to hand NVTX to libcupti, whose marker
 * records cost 1-2 us a range on the H200 when every message is new, as
 * PyTorch's operator ranges are (emit_nvtx: "aten::mm, seq = 12, op_id =
 * 430, ..."): a GPT loop of 5 ms steps ran 1.15-1.2x slower with operator
 * ranges alone, 1.6-1.9x with their shapes.  These handlers record a call
 * in tens of ns instead: a timestamp and the message's bytes appended to a
 * block of the calling thread; the collector's background thread reads the
 * blocks, tells operators from other ranges (common/torchnvtx.h) and writes
 * spool items: TBE__SP_OP for an operator (its name and shapes interned
 * once per distinct text), TBE__SP_MARKER / TBE__SP_MARKER_DATA for any
 * other range or mark, as libcupti's records gave them, TBE__SP_THREAD_NAME
 * for nvtxNameOsThread.  The file's essay says how blocks pass between the
 * threads.
 *
 * Chaining: when the collector also needs libcupti to see NVTX (the range
 * profiler's capture range reads NVTX through CUPTI's callbacks), libcupti
 * initializes the same NVTX copy first and our handlers call its handlers
 * after recording (with libcupti's own domain and string handles).
 *
 * Not signal-safe: NVTX from a signal handler may lose that call. */
#ifndef TBE_COLLECT_NVTXHOOK_H
#define TBE_COLLECT_NVTXHOOK_H

#include <stddef.h>
#include <stdint.h>

#include "collect/collector_decode.h"
#include "collect/nvtx_abi.h"
#include "common/buf.h"

/* Installs the handlers into the slots of one NVTX copy (a program's or a
 * library's: each calls InitializeInjectionNvtx2 for itself).  With
 * `first` (libcupti's InitializeInjectionNvtx2), that runs on the same
 * export table first, and the handlers it put in the slots are called by
 * ours after recording (chaining); NULL: ours alone.  Returns 1 (what
 * InitializeInjectionNvtx2 returns on success) or 0 when the table is
 * unusable (nothing installed). */
int tbe__nvtx_attach(tbe__nvtx_get_export_table get, int (*first)(tbe__nvtx_get_export_table));

/* Starts recording: `now` gives CUPTI's clock (the other records' clock);
 * `wake` (may be NULL) is called, async-signal-safe, when half the blocks
 * wait to be read.  Maps the blocks (address space only; pages become
 * resident as written).  Returns 0 or TBE_ENOMEM. */
int tbe__nvtx_start(CUptiResult (*now)(uint64_t *ts), void (*wake)(void));

/* Stops recording (later calls are not recorded).  The blocks stay mapped:
 * a thread may still be inside a handler. */
void tbe__nvtx_stop(void);

/* 1 while recording. */
int tbe__nvtx_recording(void);

/* The decoding thread: turns every record completed so far into spool
 * items in dc->batch and recycles the blocks read to their end.  `pid` is
 * this process's.  Returns the number of records read. */
size_t tbe__nvtx_drain(tbe__decoder *dc, uint32_t pid);

/* 1 when half the blocks are waiting to be read: the background thread
 * should drain now rather than at its next timer. */
int tbe__nvtx_pressure(void);

/* The counts so far (records, drops, cut messages, unmatched pops). */
void tbe__nvtx_stats(tbe__sp_nvtx_stats *out);

/* In a forked child (the collector's atfork handler): not recording, and
 * nothing of the parent's blocks or threads is used again. */
void tbe__nvtx_atfork_child(void);

#endif
