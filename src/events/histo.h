/* histo.h: TensorBoard's default histogram bucketing for raw values. */
#ifndef TBE_EVENTS_HISTO_H
#define TBE_EVENTS_HISTO_H

#include <stddef.h>

#include "tbexport/common.h"

typedef struct tbe__histo {
  double min, max, num, sum, sum_squares;
  double *limits; /* right edges; bucket i covers (limits[i-1], limits[i]] */
  double *counts;
  size_t n;
} tbe__histo;

/* Buckets `n` (> 0) finite values.  Returns 0, TBE_EINVAL (no values, or a
 * NaN or infinite value) or TBE_ENOMEM.  Free with tbe__histo_free. */
int tbe__histo_default(const tbe_allocator *a, const double *v, size_t n, tbe__histo *out);
void tbe__histo_free(const tbe_allocator *a, tbe__histo *h);

/* The default edges (-1e20..-1e-12, 0, 1e-12..1e20, factor 1.1), as
 * torch's and tensorboardX's writers compute them; *n gets the count. */
const double *tbe__histo_default_edges(size_t *n);

#endif
