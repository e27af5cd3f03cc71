/*
 * test_measure.c - the in-turn rule of measure.h: the median ratio and
 * its agreeing pairs worked out by hand, and a schedule measured with its
 * reference on the C device (3 to MEASURE_MAX_SAMPLES pairs, the summary
 * the least sample, a positive ratio; no timed thresholds).
 */
#include <math.h>
#include <string.h>
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

/* A root schedule timed in turn with the baseline on the C device. */
static void test_measured_in_turn(void) {
    fixture fx = fixture_load(BLUR);
    if (!fx.b) return;
    target t = fixture_target("a100");
    measure_device d;
    CHECK(measure_device_by_name("c", CG_MATH_EXACT, &d));
    sc_buffer **in = NULL, **ref = NULL;
    char err[1024];
    CHECK(measure_buffers_new(fx.p, 1, &in, &ref, err, sizeof err) == 0);
    sched_state *s = space_root(fx.a, fx.p, fx.b, &t), *rs = space_reference(fx.a, fx.p, fx.b, &t, false, NULL);
    CHECK(s && rs);
    measure_outcome o;
    measure_schedule(&d, fx.p, fx.b, s, rs, in, ref, measure_limits_for(10000), &o);
    if (o.kind != MEASURE_OK) fprintf(stderr, "  %s\n", o.msg);
    CHECK(o.kind == MEASURE_OK);
    CHECK(o.nsamples >= 3 && o.nsamples <= MEASURE_MAX_SAMPLES);
    CHECK(o.ms > 0 && o.ref_ms > 0 && isfinite(o.ms / o.ref_ms));
    for (int i = 0; i < o.nsamples; i++) CHECK(o.ms <= o.samples_ms[i]);
    /* without a reference: 3 samples, no reference time */
    measure_schedule(&d, fx.p, fx.b, s, NULL, in, ref, measure_limits_for(10000), &o);
    CHECK(o.kind == MEASURE_OK && o.nsamples == 3 && o.ref_ms == 0);
    measure_buffers_free(fx.p, in, ref);
    fixture_unload(&fx);
}

int main(void) {
    RUN(test_median_agreeing);
    RUN(test_measured_in_turn);
    CHECK_EXIT();
}
