/* steps_apply.c: --steps nvtx:NAME as the session and `tbexport import`
 * apply it (tbe_trace_steps_apply, tbexport/trace.h): the steps from the
 * named range, or, when nothing has that name, the steps left as they
 * were and one warning, in the trace and for the caller, naming the most
 * frequent top-level ranges the trace does offer.  Public calls only
 * (tbe_trace_steps_from_range, tbe_trace_top_ranges), so the rule is the
 * same whoever reads the trace. */
#include <stdio.h>
#include <string.h>

#include "tbexport/trace.h"

/* Appends 'NAME' (COUNT) for the hint, control characters as '?', a long
 * name cut. */
static size_t put_name(char *p, size_t size, const char *name, uint64_t count) {
  char nm[52];
  size_t i = 0;
  for (; name[i] && i < sizeof nm - 4; i++)
    nm[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
  if (name[i]) memcpy(nm + i, "...", 3), i += 3;
  nm[i] = '\0';
  int n = snprintf(p, size, "'%s' (%llu)", nm, (unsigned long long)count);
  return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

int tbe_trace_steps_apply(tbe_trace *t, const char *name, const char *domain, char *line,
                          size_t size) {
  if (line && size) line[0] = '\0';
  int n = tbe_trace_steps_from_range(t, name, domain);
  if (n != 0) return n;
  tbe_name_count top[3];
  int k = tbe_trace_top_ranges(t, top, 3);
  if (k < 0) return k;
  char hint[300];
  size_t used = 0;
  if (k == 0)
    used = (size_t)snprintf(hint, sizeof hint, "the trace has no NVTX ranges or user annotations");
  else
    used = (size_t)snprintf(hint, sizeof hint, "the most frequent top-level ranges are ");
  for (int i = 0; i < k && used < sizeof hint - 1; i++) {
    if (i) used += (size_t)snprintf(hint + used, sizeof hint - used, ", ");
    if (used < sizeof hint - 1)
      used += put_name(hint + used, sizeof hint - used, tbe_trace_str(t, top[i].name), top[i].count);
  }
  char kept[96];
  if (t->nsteps)
    snprintf(kept, sizeof kept, "the %zu steps found otherwise are kept", t->nsteps);
  else
    snprintf(kept, sizeof kept, "the run has no steps");
  char buf[640];
  snprintf(buf, sizeof buf,
           "--steps nvtx:%.100s%s%.60s: no NVTX range or user annotation has that name%s; %s; %s",
           name, domain ? "@" : "", domain ? domain : "", domain ? " in that domain" : "", hint,
           kept);
  int rc = tbe_trace_warn(t, "%s", buf);
  if (line && size) snprintf(line, size, "%s", buf);
  return rc;
}

