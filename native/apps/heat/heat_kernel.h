/* heat_kernel.h -- the stencil sweep of colltune-heat (see heat_kernel.c). */
#ifndef CT_HEAT_KERNEL_H
#define CT_HEAT_KERNEL_H

#include <stddef.h>

/* New temperatures of rows i0..i1, columns j0..j1 (inclusive) of `cur` into
 * `nxt`; k is the conductivity weight. All three arrays share one layout with
 * row stride ld and a one-cell halo around the block. Returns the largest
 * |T' - T| of the swept cells (0 if none). */
double ct_heat_sweep(const double *cur, double *nxt, const double *k, size_t ld, int i0,
                     int i1, int j0, int j1);

#endif
