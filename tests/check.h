/*
 * check.h - the tiny test harness every tests/test_*.c uses.
 *
 * A test program runs cases with RUN(fn); each prints "PASS name" or
 * "FAIL name" on stdout, and tests/run.sh counts them into the closing
 * "N passed, N failed" line.
 */
#ifndef SC_CHECK_H
#define SC_CHECK_H
#include <stdio.h>
#include <stdlib.h>

static int check_fail_ = 0;
static int check_total_fail_ = 0;

#define CHECK(cond) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    check_fail_ = 1; } } while (0)

#define RUN(fn) do { check_fail_ = 0; fn(); \
    printf("%s %s\n", check_fail_ ? "FAIL" : "PASS", #fn); fflush(stdout); \
    check_total_fail_ += check_fail_; } while (0)

#define CHECK_EXIT() return check_total_fail_ ? 1 : 0
#endif
