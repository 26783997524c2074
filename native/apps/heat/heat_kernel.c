/*
 * heat_kernel.c -- the stencil sweep of colltune-heat.
 *
 * Per cell, in exactly this order (8 FLOPs: 7 for the update, 1 for the
 * change; fabs and the max are not counted):
 *     s     = ((T[i-1][j] + T[i+1][j]) + T[i][j-1]) + T[i][j+1]
 *     T'    = T[i][j] + k[i][j] * (s - 4.0 * T[i][j])
 *     delta = |T' - T[i][j]|
 *
 * Compiled apart from heat.c with -ffp-contract=off (no fused multiply-add,
 * so the result is the same on every machine and equals the documented
 * reference) and -ffinite-math-only -fno-signed-zeros: the last two only let
 * the compiler turn `delta > m ? delta : m` into a vector maximum (all values
 * are finite and non-negative here); they allow no reassociation, so every
 * cell's arithmetic stays the IEEE sequence above. Nothing else lives in this
 * file, so no NaN test anywhere in the program is affected.
 */
#include "heat_kernel.h"

#include <math.h>

double ct_heat_sweep(const double *restrict cur, double *restrict nxt,
                     const double *restrict k, size_t ld, int i0, int i1, int j0, int j1) {
    double m = 0.0;
    for (int i = i0; i <= i1; i++) {
        const double *restrict up = cur + (size_t)(i - 1) * ld;
        const double *restrict mid = cur + (size_t)i * ld;
        const double *restrict dn = cur + (size_t)(i + 1) * ld;
        const double *restrict kk = k + (size_t)i * ld;
        double *restrict out = nxt + (size_t)i * ld;
        for (int j = j0; j <= j1; j++) {
            double s = ((up[j] + dn[j]) + mid[j - 1]) + mid[j + 1];
            double v = mid[j] + kk[j] * (s - 4.0 * mid[j]);
            out[j] = v;
            double delta = fabs(v - mid[j]);
            m = delta > m ? delta : m;
        }
    }
    return m;
}
