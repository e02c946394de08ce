/* report.h: rendering helpers shared by the summary and diff reports
 * (report.c) and the run-summary events exporter (export_events.c). */
#ifndef TBE_TRACE_REPORT_H
#define TBE_TRACE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "tbexport/analysis.h"

/* Formats a duration with a unit chosen by size: "850ns", "12.345us",
 * "1.234ms", "2.500s" (3 decimals, integer arithmetic only, so the output
 * is the same on every machine).  Returns the length. */
size_t tbe__fmt_dur(char *buf, size_t size, int64_t ns);

/* Appends `s` escaped for a Markdown table cell. */
void tbe__md_escape(tbe__buf *b, const char *s);
/* Appends `s` as a JSON string literal (quotes included; control
 * characters escaped, invalid UTF-8 replaced by U+FFFD). */
void tbe__json_str(tbe__buf *b, const char *s);

/* Appends the Markdown table of the top `top` kernels (0 = all) of `an`
 * as currently sorted. */
void tbe__md_kernels(tbe__buf *b, const tbe_analysis *an, size_t top, int wide);

/* Makes a TensorBoard tag component from a kernel name: shortened to
 * `width`, characters other than [A-Za-z0-9_.:-] replaced by '_', runs of
 * '_' collapsed, never empty.  Returns the length. */
size_t tbe__tag_component(const char *name, size_t width, char *buf, size_t size);

#endif
