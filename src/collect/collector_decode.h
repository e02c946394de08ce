/* collector_decode.h: CUPTI activity records -> spool items, the
 * collector's per-record work (collector_decode.c), and the spool's string
 * ids.  Private to src/collect; knows CUPTI's record structs and the spool
 * format, not the collector (collector.c owns the buffers, the thread and
 * the state, and hands each completed buffer to tbe__decoder_buffer).
 *
 * One decoder per collector, used by one thread at a time (the decoding
 * thread: collector.c's essay), so it takes no lock.  Names are copied out
 * of CUPTI's records before the buffer is recycled: each distinct string
 * gets a spool id once, defined in the batch before the first item that
 * uses it. */
#ifndef TBE_COLLECT_COLLECTOR_DECODE_H
#define TBE_COLLECT_COLLECTOR_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "collect/cupti_abi.h" /* <cupti.h>, or our declarations of it */

#include "events/spool.h"
#include "common/buf.h"
#include "common/intern.h"

/* The spool's string table: C string -> spool id, from 1. */
/* The spool's string ids: the toolbox's interner (dense ids from 0; the
 * spool's are id + 1, 0 meaning none), made on first use. */
typedef struct strtab {
  tbe__intern in;
  tbe_allocator a;
  int ready;
} strtab;

typedef struct tbe__decoder {
  tbe__buf *batch;        /* items are appended here (the collector's batch) */
  tbe__sp_stats *stats;   /* records, unknown_records, buffers are counted here */
  int keep_noisy;         /* keep the calls tbe__api_is_noisy names */
  CUptiResult (*get_next_record)(uint8_t *buf, size_t valid, CUpti_Activity **rec);
  CUptiResult (*get_callback_name)(CUpti_CallbackDomain dom, uint32_t cbid, const char **name);
  strtab strs;
  uint32_t api_names[2][1024]; /* spool string id per cbid; UINT32_MAX = noisy */
} tbe__decoder;

/* Decodes the records of one completed buffer into dc->batch and adds the
 * number decoded to *records (may be NULL).  Returns 0, or CUPTI's result
 * when it could not walk the buffer to its end (what follows that record
 * is lost; the caller says so). */
int tbe__decoder_buffer(tbe__decoder *dc, uint8_t *buf, size_t valid, uint64_t *records);

/* Defines every string again in dc->batch (after a lost frame: later
 * records may use strings it defined). */
void tbe__decoder_redefine(tbe__decoder *dc);

/* The spool id of string `s`, defined in dc->batch on first use (0 for
 * NULL or without memory): for items the collector writes itself. */
uint32_t tbe__decoder_str(tbe__decoder *dc, const char *s);
/* The same for len bytes at s (need not end in NUL, may not hold one). */
uint32_t tbe__decoder_str_n(tbe__decoder *dc, const char *s, size_t len);

/* Forgets every string and API name (frees the table); the pointers and
 * functions stay. */
void tbe__decoder_reset(tbe__decoder *dc);

/* The runtime and driver calls left out unless keep_noisy (by name without
 * the _vNNNN suffix). */
int tbe__api_is_noisy(int driver, const char *name, size_t len);

#endif
