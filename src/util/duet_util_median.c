/*
 * The median of repeated measurements and their spread (calibration, duet-perf --validate).
 */
#include <stdlib.h>
#include "util/duet_util.h"

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

double duet_median(double *v, int n, double *spread)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    if (spread) *spread = med > 0 ? (v[n - 1] - v[0]) / med : 0;
    return med;
}
