/* summarize.c: imports a trace (Chrome JSON, XSpace, nsys export, or a
 * collector's spool) and prints its summary report, as `tbexport summary
 * FILE` does, with tbexport's experimental tier (tbexport.h): the model's
 * layout and the analysis.
 *
 * The experimental tier is for static linking only: the shared library
 * does not export it (include/tbexport/common.h).  Build against the
 * installed package:
 *   cc -DTBE_EXPERIMENTAL summarize.c $(pkg-config --cflags --libs tbexport-static)
 * or in CMake: find_package(tbexport) + target_link_libraries(...
 * tbexport::tbexport_static).  Then: ./summarize trace.json [markdown]
 *
 * Its layout may change at any minor version, also after 1.0: rebuild
 * against each new version. */
#define TBE_EXPERIMENTAL
#include <stdio.h>
#include <string.h>

#include <tbexport.h>

static int fail(const char *what, int rc) {
  fprintf(stderr, "summarize: %s: %s\n", what, tbe_strerror(rc));
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: summarize TRACE [table|markdown]\n");
    return 2;
  }
  tbe_trace *t = NULL;
  int rc = tbe_trace_create(&t, NULL);
  if (rc) return fail("tbe_trace_create", rc);
  tbe_import_error err;
  rc = tbe_import_file(t, argv[1], NULL, &err);
  if (rc) {
    fprintf(stderr, "summarize: %s\n", err.message[0] ? err.message : tbe_strerror(rc));
    tbe_trace_free(t);
    return 1;
  }
  /* The layout: plain arrays a program reads directly. */
  printf("%zu events on %zu tracks\n\n", t->nevents, t->ntracks);

  tbe_analysis *an = NULL;
  rc = tbe_analysis_create(&an, t, NULL);
  if (rc) {
    tbe_trace_free(t);
    return fail("tbe_analysis_create", rc);
  }
  tbe_report_options o;
  tbe_report_options_init(&o);
  if (argc == 3 && strcmp(argv[2], "markdown") == 0) o.format = TBE_REPORT_MARKDOWN;
  o.label[0] = argv[1];
  char *out = NULL;
  size_t len = 0;
  rc = tbe_report_summary(an, &o, &out, &len);
  if (!rc) {
    fwrite(out, 1, len, stdout);
    tbe_report_free(out, len, NULL);
  }
  tbe_analysis_free(an);
  tbe_trace_free(t);
  return rc ? fail("tbe_report_summary", rc) : 0;
}
