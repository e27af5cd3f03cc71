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
