/*
 * base.h - what every layer shares: allocation that cannot fail quietly,
 * the one error convention of the library, a clock, a median, and integer
 * floor division and exact log2.
 *
 * Errors: a function that can meet a user error takes (char *err, size_t
 * errlen), returns -1 (or NULL) and writes one line into err that names the
 * place and what was expected; it never exits.  base_fail is that step.
 * Running out of memory is not a user error: the allocators abort.
 */
#ifndef SC_BASE_H
#define SC_BASE_H
#include <stddef.h>
#include <stdint.h>

/* calloc / realloc that abort when memory runs out; a zero size is 1. */
void *base_calloc(size_t n, size_t size);
void *base_realloc(void *p, size_t size);

/* Formats the message into err (when err and errlen are set); returns -1. */
int base_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* qsort's comparison of doubles, ascending. */
int base_cmp_double(const void *a, const void *b);
/* The median of v[0..n) (n >= 1; the mean of the two middle values when n
 * is even); sorts v in place. */
double base_median(double *v, int n);

/* a / b rounded toward minus infinity (b != 0), as the pipeline language
 * divides integers. */
static inline int64_t base_floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}
/* k when c is 2^k (k >= 0), else -1. */
static inline int base_log2_exact(int64_t c) {
    return c > 0 && (c & (c - 1)) == 0 ? __builtin_ctzll((unsigned long long)c) : -1;
}

/* Seconds of the monotonic clock (for intervals: its origin is arbitrary). */
double base_now_s(void);
#endif
