/* tbexport/text.h: text from inputs, made safe to show.
 *
 * Names of kernels, operators and ranges, host and file names, tags and
 * warnings come from files anyone can write.  The library keeps them as
 * read and makes them safe where they are shown; these are the forms it
 * uses, for programs that show such text themselves (the tbexport program
 * prints every message through the line form).
 *
 *   TBE_TEXT_TERMINAL  printable ASCII and valid UTF-8 of visible
 *                      characters as they are; controls, DEL and invalid
 *                      bytes as \n \r \t \xHH, C1 controls and invisible or
 *                      reordering characters (bidi, zero-width, ...) as
 *                      \uXXXX, a backslash as \\ (reversible: two strings
 *                      never show the same)
 *   TBE_TEXT_LINE      the same with backslashes kept: idempotent, the form
 *                      of one-line messages (a message may pass through it
 *                      twice and read the same)
 *   TBE_TEXT_MARKDOWN  the terminal form with Markdown's syntax escaped and
 *                      < > & as entities: renders as the terminal form, on
 *                      one line, in one table cell
 *   TBE_TEXT_JSON      a JSON string literal, quotes included (controls and
 *                      invisible characters as \u escapes, invalid UTF-8 as
 *                      U+FFFD)
 *   TBE_TEXT_CSV       a CSV field holding the terminal form, quoted when
 *                      it holds a comma or a quote
 *
 * No form holds a byte below 0x20, DEL, a C1 control or invalid UTF-8.
 *
 * Experimental tier (see tbexport.h): define TBE_EXPERIMENTAL before
 * including it. */
#ifndef TBEXPORT_TEXT_H
#define TBEXPORT_TEXT_H

#ifndef TBE_EXPERIMENTAL
#error "tbexport/text.h is the experimental tier: define TBE_EXPERIMENTAL before including tbexport headers (see tbexport.h)"
#endif

#include <stddef.h>

#include "tbexport/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The experimental tier: hidden in the shared library (common.h). */
#undef TBE_API
#define TBE_API TBE__API_EXPERIMENTAL

typedef enum tbe_text_form {
  TBE_TEXT_TERMINAL = 0,
  TBE_TEXT_LINE = 1,
  TBE_TEXT_MARKDOWN = 2,
  TBE_TEXT_JSON = 3,
  TBE_TEXT_CSV = 4
} tbe_text_form;

/* Writes s[0..n) in `form` into buf[0..size), NUL-terminated (size 0:
 * writes nothing), and returns the length of the whole form, as snprintf
 * does: a result >= size means it was cut (never inside a UTF-8
 * character; the end of an escape may be cut off).  Without memory to
 * build the form: the result is 0 and buf holds "". */
TBE_API size_t tbe_text_escape(tbe_text_form form, const char *s, size_t n, char *buf,
                               size_t size);

/* Terminal columns taken by s[0..n), text in terminal or line form (a
 * character of an East Asian wide or emoji block takes 2, a combining mark
 * 0, any other 1; the same on every machine, whatever the locale). */
TBE_API size_t tbe_text_width(const char *s, size_t n);

#undef TBE_API
#define TBE_API TBE__API_STABLE

#ifdef __cplusplus
}
#endif

#endif
