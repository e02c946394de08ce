/* export_events_tags.h: the names and descriptions of the summary's
 * TensorBoard tags (export_events_tags.c), for the event writers of
 * export_events.c and the HParams session (export_hparams.c). */
#ifndef TBE_TRACE_EXPORT_EVENTS_TAGS_H
#define TBE_TRACE_EXPORT_EVENTS_TAGS_H

#include <stddef.h>

#include "common/buf.h"

/* snprintf that truncates silently (tags are bounded by construction). */
void tbe__ev_fmt(char *buf, size_t size, const char *f, ...) __attribute__((format(printf, 3, 4)));

/* The tag leaf of figure row f as the writers spell it: its key, a
 * duration's "_ns" as "_ms" (the value then in ms).  Returns 1 for such a
 * duration, else 0. */
struct tbe__figure;
int tbe__ev_row_tag(const struct tbe__figure *f, char *out, size_t size);

/* The longest tag component of a kernel or operator (bytes). */
#define TBE__EV_TAG_WIDTH 100

/* The tag component of kernel `name` (export_events_tags.c gives the
 * scheme): a function of the name alone. */
void tbe__ev_kernel_tag(const char *name, char *out, size_t size);
/* Stores the tag of kernel `name` in used[n], distinct from used[0..n)
 * ("_2", "_3", ... on a clash). */
void tbe__ev_unique_kernel_tag(const char *name, char (*used)[TBE__EV_TAG_WIDTH + 8], size_t n);
/* What scalar tag `tag` is and its unit (Markdown, appended to b; `name`:
 * what a kernel's or operator's tag stands for, or NULL), and the
 * description of a text tag (NULL: none). */
void tbe__ev_describe(tbe__buf *b, const char *tag, const char *name);
const char *tbe__ev_text_description(const char *tag);

#endif
