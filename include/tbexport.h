/* tbexport.h: the umbrella header.  Include this, link libtbexport.
 *
 *   tbexport/error.h    error codes, tbe_strerror
 *   tbexport/writer.h   TensorBoard event writer
 *   tbexport/reader.h   TensorBoard event reader
 *   tbexport/trace.h    the trace model
 *   tbexport/import.h   reading existing traces (Chrome JSON, XSpace, nsys)
 *   tbexport/export.h   writing a trace as a TensorBoard run
 *   tbexport/analysis.h statistics, summary and diff reports over a trace
 *   tbexport/profiler.h in-process CUPTI collection (tbe_profiler_start/stop)
 *   tbexport/session.h  a profiled session: `tbexport -- CMD` as a library
 *   tbexport/text.h     text from inputs made safe to show
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
#include "tbexport/analysis.h"
#include "tbexport/profiler.h"
#include "tbexport/session.h"
#include "tbexport/text.h"

#endif
