/*
 * test_measure.c - the in-turn rule of measure.h: the median ratio and
 * its agreeing pairs worked out by hand, and a schedule measured with its
 * reference on the C device (3 to MEASURE_MAX_SAMPLES pairs, the summary
 * the least sample, a positive ratio; no timed thresholds), and on PoCL
 * a reference whose first run compiles its kernels; a schedule that runs
 * past its limit with a reference is stored as a time-out, with the
 * time-out's message.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base.h"
#include "check.h"
#include "fixtures.h"
#include "measure.h"
#include "space.h"

static void test_median_agreeing(void) {
    int k;
    /* odd: the middle value; all three within 10% of 2.0 */
    CHECK(measure_median_agreeing((const double[]){ 2.1, 1.95, 2.0 }, 3, &k) == 2.0 && k == 3);
    /* one pair hit by a burst: median 2.05, 4.0 is not within 10% */
    CHECK(measure_median_agreeing((const double[]){ 2.0, 4.0, 2.05 }, 3, &k) == 2.05 && k == 2);
    /* even: the mean of the two middle values; 1.0 and 1.1 are 51% and
     * 46% below 2.05, 3.0 and 3.2 above it: none agrees */
    CHECK(fabs(measure_median_agreeing((const double[]){ 3.2, 1.0, 3.0, 1.1 }, 4, &k) - 2.05) < 1e-12 && k == 0);
    /* 9% off agrees, 11% off does not */
    CHECK(measure_median_agreeing((const double[]){ 1.0, 1.09, 0.91, 1.0, 3.0 }, 5, &k) == 1.0 && k == 4);
    CHECK(measure_median_agreeing((const double[]){ 1.0, 1.11, 0.89 }, 3, &k) == 1.0 && k == 1);
    /* the input is not reordered */
    double r[3] = { 3.0, 1.0, 2.0 };
    measure_median_agreeing(r, 3, &k);
    CHECK(r[0] == 3.0 && r[1] == 1.0 && r[2] == 2.0);
}

static const char *BLUR =
    "input f32 in(96, 64);\n"
    "blur_x(x, y) = in(x, y) + in(x + 1, y) + in(x + 2, y);\n"
    "out(x, y) = blur_x(x, y) + blur_x(x, y + 1) + blur_x(x, y + 2);\n"
    "output out(94, 62);\n";

/* A pipeline on the C device with its inputs and reference outputs, its
 * root schedule and its reference schedule: the set-up of the cases that
 * measure on the C device.  false when something is missing (reported). */
typedef struct {
    fixture fx;
    measure_device d;
    sc_buffer **in, **ref;
    sched_state *s, *rs;
} c_case;

static bool c_case_load(const char *text, c_case *c) {
    memset(c, 0, sizeof *c);
    c->fx = fixture_load(text);
    if (!c->fx.b) return false;
    target t = fixture_target("a100");
    char err[1024];
    CHECK(measure_device_by_name("c", CG_MATH_EXACT, &c->d));
    CHECK(measure_buffers_new(c->fx.p, 1, &c->in, &c->ref, err, sizeof err) == 0);
    c->s = space_root(c->fx.a, c->fx.p, c->fx.b, &t);
    c->rs = space_reference(c->fx.a, c->fx.p, c->fx.b, &t, false, NULL);
    CHECK(c->s && c->rs);
    return c->in && c->s && c->rs;
}

static void c_case_free(c_case *c) {
    if (c->in) measure_buffers_free(c->fx.p, c->in, c->ref);
    fixture_unload(&c->fx);
}

/* A root schedule timed in turn with the baseline on the C device. */
static void test_measured_in_turn(void) {
    c_case c;
    if (!c_case_load(BLUR, &c)) { c_case_free(&c); return; }
    measure_outcome o;
    measure_schedule(&c.d, c.fx.p, c.fx.b, c.s, c.rs, c.in, c.ref, measure_limits_for(10000), &o);
    if (o.kind != MEASURE_OK) fprintf(stderr, "  %s\n", o.msg);
    CHECK(o.kind == MEASURE_OK);
    CHECK(o.nsamples >= 3 && o.nsamples <= MEASURE_MAX_SAMPLES);
    CHECK(o.ms > 0 && o.ref_ms > 0 && isfinite(o.ms / o.ref_ms));
    for (int i = 0; i < o.nsamples; i++) CHECK(o.ms <= o.samples_ms[i]);
    /* without a reference: 3 samples, no reference time */
    measure_schedule(&c.d, c.fx.p, c.fx.b, c.s, NULL, c.in, c.ref, measure_limits_for(10000), &o);
    CHECK(o.kind == MEASURE_OK && o.nsamples == 3 && o.ref_ms == 0);
    c_case_free(&c);
}

/* The reference's first run is not its time: on PoCL it includes
 * compiling every kernel at the first launch.  A chain of NCOLD stages
 * whose constants are new to PoCL's kernel cache (seeded by the clock),
 * each stage root (its own kernel) in both schedules, tiled [x=64 y=1]
 * in the one measured and [x=32 y=2] in its reference, so the
 * reference's kernels are other kernels, all built at its first launch.
 * Both do the same work, so their ratio is near 1; taking the cold first
 * run (over a second here) as the reference's time made it 1/50 and
 * less. */
enum { NCOLD = 120 };

static sched_state *chain_schedule(fixture *fx, const char *tile) {
    char *text = base_calloc(NCOLD * 48 + 64, 1);
    size_t n = (size_t)sprintf(text, "schedule t;\n");
    for (int i = NCOLD - 1; i >= 0; i--) n += (size_t)sprintf(text + n, "g%d: root [%s];\n", i, tile);
    char err[512];
    sched_state *s = sched_parse(fx->a, fx->p, "chain", text, err, sizeof err);
    if (!s) fprintf(stderr, "  %s\n", err);
    free(text);
    return s;
}

/* 1024 x 1024 points of a few hundred operations each: far over a
 * millisecond on the C device. */
static const char *SLOW =
    "input f32 in(1024, 1024);\n"
    "a(x, y) = sqrt(in(x, y) * in(x, y) + 1) * exp(in(x, y) * 0.001) + sin(in(x, y)) * cos(in(x, y));\n"
    "b(x, y) = sqrt(a(x, y) * a(x, y) + 1) * exp(a(x, y) * 0.001) + sin(a(x, y)) * cos(a(x, y));\n"
    "out(x, y) = sqrt(b(x, y) * b(x, y) + 1) * exp(b(x, y) * 0.001) + sin(b(x, y)) * cos(b(x, y));\n"
    "output out(1024, 1024);\n";

/* The checked first run passes its generous limit, the first timed run
 * does not (1 ms): a time-out, whose message names the limit.  The
 * reference is not run after it: on the device the time-out left
 * unusable it could only fail, and its message ("cannot start the
 * timer") made the outcome a failure instead. */
static void test_timeout_with_reference(void) {
    c_case c;
    if (!c_case_load(SLOW, &c)) { c_case_free(&c); return; }
    measure_outcome o;
    measure_schedule(&c.d, c.fx.p, c.fx.b, c.s, c.rs, c.in, c.ref, (measure_limits){ 120000, 1 }, &o);
    check_report(o.kind == MEASURE_TIMEOUT && !strncmp(o.msg, "kernel ", 7) && strstr(o.msg, "time limit of 1 ms"),
                 "timeout_with_reference: a time-out (kind %d: %s)", (int)o.kind, o.msg);
    c_case_free(&c);
}

static void test_cold_reference(void) {
    char *text = base_calloc(NCOLD * 160 + 128, 1);
    size_t n = 0;
    unsigned seed = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
    n += (size_t)sprintf(text + n, "input f32 in(256, 64);\ng0(x, y) = in(x, y) * 0.5;\n");
    for (int i = 1; i < NCOLD; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned c = seed % 1000000u;
        n += (size_t)sprintf(text + n, "g%d(x, y) = sqrt(g%d(x, y) * 0.%06u + 0.25) * 0.9 + min(g%d(x, y), 0.%06u);\n",
                             i, i - 1, c, i - 1, c / 2);
    }
    sprintf(text + n, "output g%d(256, 64);\n", NCOLD - 1);
    fixture fx = fixture_load(text);
    free(text);
    if (!fx.b) return;
    measure_device d;
    CHECK(measure_device_by_name("opencl", CG_MATH_EXACT, &d));
    sc_buffer **in = NULL, **ref = NULL;
    char err[1024];
    CHECK(measure_buffers_new(fx.p, 1, &in, &ref, err, sizeof err) == 0);
    sched_state *s = chain_schedule(&fx, "x=64x1 y=1x1"), *rs = chain_schedule(&fx, "x=32x1 y=2x1");
    CHECK(s && rs);
    measure_outcome o = { 0 };
    if (s && rs) measure_schedule(&d, fx.p, fx.b, s, rs, in, ref, measure_limits_for(10000), &o);
    if (o.kind != MEASURE_OK) fprintf(stderr, "  %s\n", o.msg);
    CHECK(o.kind == MEASURE_OK && o.ref_ms > 0);
    printf("# %d kernels: %.3f ms, the reference in turn %.3f ms, %d samples\n", NCOLD, o.ms, o.ref_ms, o.nsamples);
    CHECK(o.ms / o.ref_ms > 1.0 / 3 && o.ms / o.ref_ms < 3);
    measure_buffers_free(fx.p, in, ref);
    fixture_unload(&fx);
}

/* The first run's limit grows with the kernels the driver compiles at
 * their first launch, and never wraps. */
static void test_first_limit(void) {
    measure_limits lim = measure_limits_for(10000);
    CHECK(lim.first_ms == 30000 && lim.run_ms == 10000);
    CHECK(measure_first_ms(lim, 0) == 30000);
    CHECK(measure_first_ms(lim, 108) == 30000 + 108 * MEASURE_FIRST_LAUNCH_MS);
    CHECK(measure_first_ms(lim, -1) == 30000);
    CHECK(measure_first_ms((measure_limits){ INT_MAX - 10, 1 }, 1000) == INT_MAX);
}

int main(void) {
    RUN(test_median_agreeing);
    RUN(test_first_limit);
    RUN(test_measured_in_turn);
    RUN(test_cold_reference);
    RUN(test_timeout_with_reference);
    CHECK_EXIT();
}
