/* tbexport.h: the umbrella header.  Include this, link libtbexport.
 *
 * Two tiers, as zstd draws the line with ZSTD_STATIC_LINKING_ONLY:
 *
 * The stable tier, always declared: what a program needs to write and read
 * TensorBoard event files and to turn traces into runs, through handles
 * and option structs that only grow at their end.
 *   tbexport/common.h   the export macro, allocators, messages, the version
 *   tbexport/error.h    error codes, tbe_strerror
 *   tbexport/version.h  the version numbers (and the 0.x rule)
 *   tbexport/writer.h   TensorBoard event writer
 *   tbexport/reader.h   TensorBoard event reader
 *   tbexport/trace.h    a trace as a handle: create, finish, steps, free
 *   tbexport/import.h   reading existing traces (Chrome JSON, XSpace, nsys)
 *   tbexport/export.h   writing a trace as a TensorBoard run
 *   tbexport/profiler.h in-process CUPTI collection (tbe_profiler_start/stop)
 *
 * The experimental tier, declared only when TBE_EXPERIMENTAL is defined
 * before the first tbexport header: layouts that will still change (any
 * minor version may change them, also after 1.0).
 *   tbexport/trace.h    the model's layout: events, details, tracks, strings,
 *                       and building a trace event by event
 *   tbexport/analysis.h statistics, summary and diff reports over a trace
 *   tbexport/session.h  a profiled session: `tbexport -- CMD` as a library
 *   tbexport/text.h     text from inputs made safe to show
 * Including one of the last three without it is an error; the tbexport
 * program, the tests and the library itself define it.
 */
#ifndef TBEXPORT_H
#define TBEXPORT_H

#include "tbexport/common.h"
#include "tbexport/error.h"
#include "tbexport/version.h"
#include "tbexport/writer.h"
#include "tbexport/reader.h"
#include "tbexport/trace.h"
#include "tbexport/import.h"
#include "tbexport/export.h"
#include "tbexport/profiler.h"

#endif

#if defined(TBE_EXPERIMENTAL) && !defined(TBEXPORT_H_EXPERIMENTAL)
#define TBEXPORT_H_EXPERIMENTAL
#include "tbexport/trace.h"
#include "tbexport/analysis.h"
#include "tbexport/session.h"
#include "tbexport/text.h"
#endif
