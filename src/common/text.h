/* text.h: text that came from an input, made safe for where it is shown.
 *
 * Whatever tbexport prints from a file was written by someone else: kernel,
 * operator and range names, host and thread names, run names read from
 * disk, tags, warnings, file names.  Printed raw, such text acts on the
 * terminal that shows it (ESC [2J clears it, OSC 8 plants a hyperlink,
 * OSC 0 retitles the window, a C1 CSI does the same in one byte), fakes
 * lines (CR, LF), reverses what follows (U+202E) or hides (zero-width
 * characters); in Markdown it opens a link, an HTML tag or a new table
 * cell.  Every place that prints text from an input goes through one of
 * the forms below, where it prints it, and measures the result after
 * escaping.
 *
 * The terminal form (tbe__text_term) passes printable ASCII and valid
 * UTF-8 of characters that draw something, and shows everything else as
 * an escape made of printable ASCII:
 *   \\            a backslash
 *   \n \r \t      LF, CR, TAB
 *   \xHH          any other C0 control, DEL, and each byte that does not
 *                 start a valid UTF-8 sequence (so "\xHH" is always the
 *                 byte HH)
 *   \uXXXX        C1 controls (U+0080..U+009F) and the characters that are
 *   \UXXXXXXXX    invisible or reorder text: bidi embeddings, overrides,
 *                 isolates and marks (U+061C, U+200E/F, U+202A..E,
 *                 U+2066..9), zero-width spaces and joiners, the word
 *                 joiner and invisible operators, line and paragraph
 *                 separators, soft hyphen, BOM, interlinear annotation,
 *                 Hangul fillers and tag characters (tbe__text_invisible)
 * so the output holds no byte below 0x20, no DEL, no C1 control and no
 * invalid UTF-8, and the form is reversible: two different names never
 * print the same (test/fuzz/fuzz_text.c decodes it back).
 *
 * The line form (tbe__text_line) is the same without doubling
 * backslashes.  It is idempotent, so a message may pass through it twice
 * (a library message that names a file, then the CLI's error printer) and
 * still read the same; it is the form of one-line messages.
 *
 * The Markdown form (tbe__text_md), for TensorBoard's text plugin
 * (Python-Markdown with tables, then sanitized) and any CommonMark viewer,
 * is the terminal form with \ ` * _ [ ] | # backslash-escaped, < > and &
 * as entities (Python-Markdown does not unescape "\<"), and a leading
 * - or + and the '.' or ')' after leading digits escaped (list markers):
 * the text renders as exactly its terminal form, on one line, in one cell.
 *
 * JSON strings (tbe__text_json) escape controls, DEL, C1 and the invisible
 * characters as \u escapes (JSON readers get the same text back) and
 * replace invalid UTF-8 by U+FFFD.  CSV fields (tbe__text_csv) hold the
 * terminal form, quoted when it holds a comma or a quote: CSV has no
 * escapes of its own, and a field must never span lines.
 *
 * Widths: tbe__text_width counts the terminal columns of text in terminal
 * form (a character of an East Asian wide or emoji block takes 2, a
 * combining mark 0, every other character 1: an approximation of
 * wcwidth(3) that needs no locale and gives the same table on every
 * machine).  A character the approximation misjudges shifts its own row;
 * it never lets anything through.  tbe__text_fit makes a cell: the
 * terminal form cut to a number of columns. */
#ifndef TBE_COMMON_TEXT_H
#define TBE_COMMON_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/utf8.h" /* tbe__utf8_decode */

/* 1 for a code point shown as an escape although it is valid (C1 controls
 * and the invisible or reordering characters listed above). */
int tbe__text_invisible(uint32_t cp);

/* Appends s[0..n) in terminal form (backslashes doubled: reversible). */
void tbe__text_term(tbe__buf *b, const char *s, size_t n);
/* Appends s[0..n) in line form (backslashes kept: idempotent). */
void tbe__text_line(tbe__buf *b, const char *s, size_t n);
/* The terminal form (line form when `line`) of the C string s into
 * out[0..size), NUL-terminated, cut before the first escape or character
 * that does not fit.  Returns its length. */
size_t tbe__text_term_z(char *out, size_t size, const char *s, int line);

/* Terminal columns of s[0..n), text in terminal or line form. */
size_t tbe__text_width(const char *s, size_t n);
/* The terminal form of the C string s into out[0..size), cut to at most
 * `cols` columns: when it is wider, to cols - 3 columns and "..." (cols
 * <= 3: cut without dots).  Never splits an escape or a character.
 * cols 0: no limit.  Returns the width. */
size_t tbe__text_fit(char *out, size_t size, const char *s, size_t cols);
/* Appends the C string s, text already safe (in terminal form, or our own
 * words), and spaces up to `w` columns after it, or before it when
 * `right`. */
void tbe__text_cell(tbe__buf *b, const char *s, int w, int right);

/* Appends s[0..n) in Markdown form. */
void tbe__text_md(tbe__buf *b, const char *s, size_t n);
/* Appends s[0..n) as a JSON string literal, quotes included. */
void tbe__text_json(tbe__buf *b, const char *s, size_t n);
/* Appends s[0..n) as a CSV field. */
void tbe__text_csv(tbe__buf *b, const char *s, size_t n);

#endif
