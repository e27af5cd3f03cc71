/*
 * check.h - the tiny test harness every tests/test_*.c uses.
 *
 * A test program runs cases with RUN(fn); each prints "PASS name" or
 * "FAIL name" on stdout, and tests/run.sh counts them into the closing
 * "N passed, N failed" line.
 */
#ifndef SC_CHECK_H
#define SC_CHECK_H
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static int check_fail_ __attribute__((unused)) = 0;
static int check_total_fail_ = 0;

#define CHECK(cond) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    check_fail_ = 1; } } while (0)

#define RUN(fn) do { check_fail_ = 0; fn(); \
    printf("%s %s\n", check_fail_ ? "FAIL" : "PASS", #fn); fflush(stdout); \
    check_total_fail_ += check_fail_; } while (0)

#define CHECK_EXIT() return check_total_fail_ ? 1 : 0

/* One case whose name is formatted at run time (a case per app and seed):
 * prints "PASS name" or "FAIL name" and counts a failure for CHECK_EXIT. */
static inline void check_report(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void check_report(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
    check_total_fail_ += !ok;
}
#endif
