/* export_json_pipe.h: the knobs of the Chrome JSON output's event
 * pipeline (export_json_pipe.c), for tests and benchmarks (export_json.h
 * includes it); the pipeline itself is tbe__jw_events (export_json_int.h). */
#ifndef TBE_TRACE_EXPORT_JSON_PIPE_H
#define TBE_TRACE_EXPORT_JSON_PIPE_H

#include <stdint.h>

/* Knobs: formatting threads (0: default) and events per chunk (0: 2048). */
extern int tbe__json_threads;
extern uint32_t tbe__json_chunk_events;

#endif
