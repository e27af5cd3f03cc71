/* base.c - see base.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "base.h"

void *base_calloc(size_t n, size_t size) {
    void *r = calloc(n ? n : 1, size ? size : 1);
    if (!r) abort();
    return r;
}

void *base_realloc(void *p, size_t size) {
    p = realloc(p, size ? size : 1);
    if (!p) abort();
    return p;
}

int base_fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

double base_now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int base_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double base_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), base_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
