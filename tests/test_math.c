/*
 * test_math.c - what the check of a back end means, in both math modes.
 *
 * Exact: exec_compare reports a 1-ulp difference, +0 against -0 and an
 * integer off by one as mismatches, and a NaN against any NaN as equal; a
 * pipeline whose f32 constants need all 9 significant digits runs
 * bit-identical to the reference evaluator on C and OpenCL (a constant
 * printed with 6 digits, as %g would, changes the result: the check sees
 * that, the old 1e-4 tolerance did not).
 *
 * Fast: the generated code uses the device's functions (expf, native_exp,
 * __expf) and the contraction options (the CUDA compiles with NVRTC where
 * it is installed); a few apps with transcendentals,
 * FMA-prone stencils and integer outputs run on C and OpenCL and pass the
 * fast tolerance, their results really differing from the exact ones
 * somewhere; the tolerance accepts what it states and no more.
 *
 * OpenCL cases print "PASS name (skipped: why)" where there is no driver.
 */
#include <float.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps.h"
#include "check.h"
#include "exec.h"
#include "scmath.h"
#include "space.h"

/* Leaks inside the OpenCL driver are not ours (see test_rt.c). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libpocl\nleak:libOpenCL\nleak:libLLVM\nleak:libclang\n";
}

static sc_buffer *f32_buffer(int n, const float *v)
{
    sc_buffer *b = sc_buffer_new(SC_F32, 1, NULL, &n);
    memcpy(b->data, v, sizeof(float) * (size_t)n);
    return b;
}

/* ---- the ulp distance and exec_compare ------------------------------------ */

static void test_ulp_distance(void)
{
    float one_up = nextafterf(1.0f, 2.0f), tiny = nextafterf(0.0f, 1.0f);
    CHECK(exec_ulp_distance(1.0f, 1.0f) == 0);
    CHECK(exec_ulp_distance(1.0f, one_up) == 1 && exec_ulp_distance(one_up, 1.0f) == 1);
    CHECK(exec_ulp_distance(0.0f, -0.0f) == 0);
    CHECK(exec_ulp_distance(tiny, -tiny) == 2);
    CHECK(exec_ulp_distance(FLT_MAX, INFINITY) == 1);
    CHECK(exec_ulp_distance(1.0f, 2.0f) == 1 << 23);
    CHECK(exec_ulp_distance(-1.0f, -2.0f) == 1 << 23);
    CHECK(exec_ulp_distance(NAN, 1.0f) == INT64_MAX && exec_ulp_distance(NAN, NAN) == INT64_MAX);
}

static void test_compare_exact(void)
{
    exec_tol exact = exec_tolerance(CG_MATH_EXACT), fast = exec_tolerance(CG_MATH_FAST);
    CHECK(exact.exact && !fast.exact && fast.max_ulp > 0);
    float nan2;
    uint32_t bits = 0xffc00001u;                 /* a negative NaN with a payload */
    memcpy(&nan2, &bits, sizeof nan2);
    const float ref_v[6] = { 1.0f, 0.1f, 0.0f, NAN, -3.5f, INFINITY };
    sc_buffer *ref = f32_buffer(6, ref_v), *got = f32_buffer(6, ref_v);
    exec_diff d;
    CHECK(exec_compare(got, ref, &exact, &d) == 0 && d.mismatches == 0 && d.differ == 0 && d.points == 6);

    ((float *)got->data)[1] = nextafterf(0.1f, 1.0f);    /* one ulp */
    CHECK(exec_compare(got, ref, &exact, &d) == 0 && d.mismatches == 1 && d.max_ulp == 1);
    CHECK(d.max_abs > 0 && d.max_abs < 1e-8);
    CHECK(exec_compare(got, ref, &fast, &d) == 0 && d.mismatches == 0 && d.differ == 1);

    memcpy(got->data, ref_v, sizeof ref_v);
    ((float *)got->data)[2] = -0.0f;                     /* the sign of zero */
    CHECK(exec_compare(got, ref, &exact, &d) == 0 && d.mismatches == 1 && d.max_ulp == 0);
    CHECK(exec_compare(got, ref, &fast, &d) == 0 && d.mismatches == 0);

    memcpy(got->data, ref_v, sizeof ref_v);
    ((float *)got->data)[3] = nan2;                      /* any NaN is NaN */
    CHECK(exec_compare(got, ref, &exact, &d) == 0 && d.mismatches == 0 && d.differ == 0);
    ((float *)got->data)[3] = 0.0f;                      /* a number is not */
    CHECK(exec_compare(got, ref, &exact, &d) == 0 && d.mismatches == 1 && isinf(d.max_abs));
    CHECK(exec_compare(got, ref, &fast, &d) == 0 && d.mismatches == 1);

    memcpy(got->data, ref_v, sizeof ref_v);
    ((float *)got->data)[5] = FLT_MAX;                   /* 1 ulp, but not infinite */
    CHECK(exec_compare(got, ref, &fast, &d) == 0 && d.mismatches == 1);

    /* fast: beyond max_ulp fails unless under the floor of the largest |ref| */
    memcpy(got->data, ref_v, sizeof ref_v);
    ((float *)got->data)[4] = -3.5f * (1 + 1e-4f);
    CHECK(exec_compare(got, ref, &fast, &d) == 0 && d.mismatches == 1 && d.max_ulp > fast.max_ulp);
    CHECK(d.scale == 3.5);
    memcpy(got->data, ref_v, sizeof ref_v);
    ((float *)got->data)[1] = 0.1f + (float)(fast.abs_floor * 3.5 * 0.5);   /* far in ulps of 0.1 */
    CHECK(exec_compare(got, ref, &fast, &d) == 0 && d.mismatches == 0 && d.max_ulp > fast.max_ulp);
    sc_buffer_free(ref);
    sc_buffer_free(got);

    /* shapes must agree */
    int n3 = 3;
    sc_buffer *short_b = sc_buffer_new(SC_F32, 1, NULL, &n3);
    ref = f32_buffer(6, ref_v);
    CHECK(exec_compare(short_b, ref, &exact, &d) == -1);
    sc_buffer_free(short_b);
    sc_buffer_free(ref);
}

static void test_compare_integers(void)
{
    exec_tol exact = exec_tolerance(CG_MATH_EXACT), fast = exec_tolerance(CG_MATH_FAST);
    int n = 1000;
    sc_buffer *ref = sc_buffer_new(SC_U16, 1, NULL, &n), *got = sc_buffer_new(SC_U16, 1, NULL, &n);
    uint16_t *r = ref->data, *g = got->data;
    int top = 0;
    for (int i = 0; i < n; i++) {
        r[i] = (uint16_t)(1000 + (i * 37) % 60000);
        if (r[i] > top) top = r[i];
    }
    memcpy(g, r, sizeof(uint16_t) * (size_t)n);
    exec_diff d;
    CHECK(exec_compare(got, ref, &exact, &d) == 0 && d.mismatches == 0 && d.scale == top);
    for (int i = 0; i < n; i += 3) g[i] = (uint16_t)(r[i] - 1);       /* a third off by one */
    CHECK(exec_compare(got, ref, &exact, &d) == 0 && d.mismatches == d.differ && d.differ == 334);
    CHECK(exec_compare(got, ref, &fast, &d) == 0 && d.mismatches == 0 && d.outliers == 0);
    /* outliers: up to outlier_frac of the points, within outlier_floor * scale */
    int allowed = (int)(fast.outlier_frac * n), step = (int)(fast.outlier_floor * d.scale);
    CHECK(allowed >= 2 && step >= 2);
    for (int i = 0; i < allowed; i++) g[1 + 3 * i] = (uint16_t)(r[1 + 3 * i] + step);
    CHECK(exec_compare(got, ref, &fast, &d) == 0 && d.mismatches == 0 && d.outliers == allowed);
    CHECK(fabs(d.max_far * d.scale - step) < 1e-6);
    g[2] = (uint16_t)(r[2] + step);                                    /* one too many */
    CHECK(exec_compare(got, ref, &fast, &d) == 0 && d.mismatches == allowed + 1);
    g[2] = r[2];
    g[1] = (uint16_t)(r[1] + 2 * step + 1);                            /* too far */
    CHECK(exec_compare(got, ref, &fast, &d) == 0 && d.mismatches == 1 && d.outliers == allowed - 1);
    CHECK(exec_compare(got, ref, &exact, &d) == 0 && d.outliers == 0 && d.mismatches == d.differ);
    sc_buffer_free(ref);
    sc_buffer_free(got);
}

/* ---- constants that need 9 significant digits ------------------------------ */

/* Every constant differs from its 6-digit %g form as an f32. */
static const char consts_fmt[] =
    "pipeline consts;\n"
    "input f32 in(67, 19);\n"
    "a(x, y) = in(x, y) * %s + %s;\n"
    "out(x, y) = a(x, y) * a(x, y) * %s - a(x, y) / %s;\n"
    "output out(67, 19);\n";
static const char *const consts9[4] = { "0.123456791", "0.707106769", "0.333333343", "2.71828175" };
static const char *const consts6[4] = { "0.123457", "0.707107", "0.333333", "2.71828" };

static sc_pipeline *consts_pipeline(const char *const *k)
{
    char text[512];
    snprintf(text, sizeof text, consts_fmt, k[0], k[1], k[2], k[3]);
    sc_parse_options po = { 0, 0, NULL, NULL };
    sc_pipeline *p = sc_parse_string("consts.pipe", text, strlen(text), &po);
    CHECK(sc_error_count(p) == 0);
    return p;
}

/* Runs p with the root schedule on the named device; *diff against ref. */
static bool run_checked(const char *device, sc_pipeline *p, cg_math math, sc_buffer **in, sc_buffer **ref,
                        exec_diff *diff, char **source, char *err, size_t errlen)
{
    const rt_ops *ops = rt_ops_by_name(device);
    rt_device *dev = ops ? ops->open(err, errlen) : NULL;
    if (!dev) return false;
    bounds_result *b = bounds_infer(p);
    ir_arena *a = ir_arena_new();
    target t;
    bool ok = b && target_by_name("a100", NULL, &t, err, errlen) == 0;
    lower_program *prog = NULL;
    if (ok) {
        sched_state *s = space_root(a, p, b, &t);
        prog = s ? lower_schedule(a, p, b, s, err, errlen) : NULL;
    }
    exec_session *x = prog ? exec_open_checked(ops, dev, prog, math, NULL, in, ref, 60000, diff, err, errlen) : NULL;
    if (x && source) *source = strdup(exec_source(x));
    ok = x != NULL;
    exec_close(x);
    ir_arena_free(a);
    if (b) bounds_free(b);
    ops->close(dev);
    return ok;
}

static bool have_opencl(char *why, size_t len)
{
    rt_device *d = rt_opencl_ops.open(why, len);
    if (!d) return false;
    bool run = rt_opencl_ops.can_run(d);
    if (!run) snprintf(why, len, "the OpenCL device cannot run kernels");
    rt_opencl_ops.close(d);
    return run;
}

static void constants_on(const char *device)
{
    char err[8192];
    sc_pipeline *p9 = consts_pipeline(consts9), *p6 = consts_pipeline(consts6);
    sc_buffer *in[1] = { sc_input_random(p9, 0, 5) }, *ref9[1] = { NULL }, *ref6[1] = { NULL };
    CHECK(sc_evaluate(p9, in, 5, ref9) == 0 && sc_evaluate(p6, in, 5, ref6) == 0);
    /* the 6-digit constants change the result: exact sees it, 1e-4 relative did not */
    exec_tol exact = exec_tolerance(CG_MATH_EXACT);
    exec_diff d;
    CHECK(exec_compare(ref6[0], ref9[0], &exact, &d) == 0 && d.mismatches > 0);
    CHECK(d.max_abs < 1e-4 * d.scale);
    char *src = NULL;
    bool ran = run_checked(device, p9, CG_MATH_EXACT, in, ref9, &d, &src, err, sizeof err);
    if (!ran) fprintf(stderr, "  %s: %s\n", device, err);
    CHECK(ran && d.differ == 0 && d.mismatches == 0 && d.points == 67 * 19);
    for (int i = 0; ran && src && i < 4; i++) {
        char want[32];
        snprintf(want, sizeof want, "%sf", consts9[i]);
        if (!strstr(src, want)) fprintf(stderr, "  %s: no %s in the generated code\n", device, want);
        CHECK(strstr(src, want) != NULL);
    }
    free(src);
    sc_buffer_free(in[0]);
    sc_buffer_free(ref9[0]);
    sc_buffer_free(ref6[0]);
    sc_pipeline_free(p9);
    sc_pipeline_free(p6);
}

static void test_constants_c(void) { constants_on("c"); }
static void test_constants_opencl(void) { constants_on("opencl"); }

/* ---- squares ------------------------------------------------------------------- */

/* pow(a, 2.0) is printed as a * a (ir_expr_is_square): the product must be
 * the reference's sc_powf(a, 2) bit for bit.  Every bit pattern whose
 * square is exact or lies on a rounding midpoint (a mantissa of few bits:
 * 1 + 2^-12 squares to a midpoint) and 4 million random ones, besides
 * zeros, infinities, NaNs, subnormals and the largest finite floats. */
static bool same_bits(float a, float b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y;
}

static void test_square_is_pow(void)
{
    int64_t checked = 0, wrong = 0;
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < (int64_t)4 << 20; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t bits = (uint32_t)(r >> 32);
        if (i < 1 << 16) bits = (uint32_t)(i & 0xff) << 23 | (uint32_t)(i >> 8) << 15;  /* short mantissas */
        float x;
        memcpy(&x, &bits, 4);
        volatile float v = x;
        float sq = v * v;
        checked++;
        if (!same_bits(sq, sc_powf(x, 2.0f))) {
            if (wrong++ < 5) fprintf(stderr, "  %a: %a * itself, %a by pow\n", x, sq, sc_powf(x, 2.0f));
        }
    }
    static const float edge[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX,
                                  1e-45f, 1.0f + 0x1p-12f, 1.0f + 0x1p-23f, 0x1.fffffep63f, 0x1p-75f, 0x1p-76f };
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        volatile float v = edge[i];
        checked++;
        if (!same_bits(v * v, sc_powf(edge[i], 2.0f))) wrong++;
    }
    CHECK(checked > 4000000 && wrong == 0);
}

/* On a device: the square runs bit-identical to the reference, with no
 * call of pow left (a cube keeps its call). */
static void squares_on(const char *device)
{
    char err[8192];
    static const char *const text[2] = {
        "pipeline squares;\ninput f32 in(67, 19);\n"
        "d(x, y) = in(x, y) * 40.0 - in(x + 1, y) * 3.0;\n"
        "out(x, y) = pow(d(x, y), 2.0) + pow(in(x, y) * 1e19 + 1e-30, 2.0);\n"
        "output out(66, 19);\n",
        "pipeline cubes;\ninput f32 in(67, 19);\n"
        "out(x, y) = pow(in(x, y) - in(x + 1, y), 3.0);\n"
        "output out(66, 19);\n",
    };
    for (int k = 0; k < 2; k++) {
        sc_parse_options po = { 0, 0, NULL, NULL };
        sc_pipeline *p = sc_parse_string("squares.pipe", text[k], strlen(text[k]), &po);
        CHECK(sc_error_count(p) == 0);
        sc_buffer *in[1] = { sc_input_random(p, 0, 7) }, *ref[1] = { NULL };
        CHECK(sc_evaluate(p, in, 7, ref) == 0);
        exec_diff d;
        char *src = NULL;
        bool ran = run_checked(device, p, CG_MATH_EXACT, in, ref, &d, &src, err, sizeof err);
        if (!ran) fprintf(stderr, "  %s: %s\n", device, err);
        CHECK(ran && d.differ == 0 && d.mismatches == 0 && d.points == 66 * 19);
        /* sc_powf's definition is printed either way; a call is a second mention */
        int mentions = 0;
        for (const char *q = src; q && (q = strstr(q, "sc_powf(")); q++) mentions++;
        if (k == 0) CHECK(mentions <= 1 && strstr(src, " * ") != NULL);
        else CHECK(mentions >= 2);
        free(src);
        sc_buffer_free(in[0]);
        sc_buffer_free(ref[0]);
        sc_pipeline_free(p);
    }
}

static void test_squares_c(void) { squares_on("c"); }
static void test_squares_opencl(void) { squares_on("opencl"); }

/* ---- fast math ------------------------------------------------------------------ */

/* The generated text of an app's root schedule in both modes. */
static void test_fast_code(void)
{
    char err[4096];
    app_case ac;
    CHECK(app_load("apps", "unsharp", true, 1, &ac, err, sizeof err) == 0);
    if (!ac.p) return;
    target t;
    CHECK(target_by_name("a100", NULL, &t, err, sizeof err) == 0);
    ir_arena *a = ir_arena_new();
    lower_program *prog = lower_schedule(a, ac.p, ac.b, space_root(a, ac.p, ac.b, &t), err, sizeof err);
    CHECK(prog != NULL);
    /* fast: the function and the options; exact: the sc_ function, the
     * pragma or option that keeps it exact, and none of the fast text */
    static const struct { cg_backend be; const char *fast, *exact, *exact_not; } want[] = {
        { CG_C, "expf(", "#pragma STDC FP_CONTRACT OFF", "-ffp-contract=fast" },
        { CG_OPENCL, "native_exp(", "#pragma OPENCL FP_CONTRACT OFF", "native_" },
        { CG_CUDA, "__expf(", "--fmad=false", "__expf(" },
    };
    for (size_t i = 0; prog && i < sizeof want / sizeof want[0]; i++) {
        char *fast = cg_generate_math(prog, want[i].be, CG_MATH_FAST), *exact = cg_generate(prog, want[i].be);
        CHECK(strstr(fast, want[i].fast) && !strstr(fast, "sc_expf") && !strstr(fast, want[i].exact));
        CHECK(strstr(exact, "sc_expf(") && strstr(exact, want[i].exact) && !strstr(exact, want[i].exact_not));
        CHECK(strstr(fast, cg_math_options(want[i].be, CG_MATH_FAST)) != NULL);
        free(fast);
        free(exact);
    }
    /* fast CUDA compiles with its options, where NVRTC is installed */
    rt_device *cu = prog ? rt_cuda_ops.open(err, sizeof err) : NULL;
    if (cu) {
        char *src = cg_generate_math(prog, CG_CUDA, CG_MATH_FAST), opts[256], log[16384];
        snprintf(opts, sizeof opts, "%s -arch=sm_80", cg_math_options(CG_CUDA, CG_MATH_FAST));
        rt_module *m = rt_cuda_ops.compile(cu, src, opts, log, sizeof log);
        if (!m) fprintf(stderr, "  NVRTC: %s\n", log);
        CHECK(m != NULL);
        if (m) rt_cuda_ops.module_free(m);
        free(src);
        rt_cuda_ops.close(cu);
    } else {
        printf("  (fast CUDA not compiled: %s)\n", err);
    }
    CHECK(!strcmp(cg_math_options(CG_C, CG_MATH_FAST), "-ffp-contract=fast"));
    CHECK(!strcmp(cg_math_options(CG_C, CG_MATH_EXACT), cg_required_options(CG_C)));
    CHECK(strstr(cg_math_options(CG_OPENCL, CG_MATH_FAST), "correctly-rounded") == NULL);
    cg_math m;
    CHECK(cg_math_parse("fast", &m) == 0 && m == CG_MATH_FAST);
    CHECK(cg_math_parse("exact", &m) == 0 && m == CG_MATH_EXACT);
    CHECK(cg_math_parse("relaxed", &m) == -1 && cg_math_parse(NULL, &m) == -1);
    ir_arena_free(a);
    app_free(&ac);
}

/* Apps with exp (unsharp, local_laplacian: u16 output), pow (camera_pipe:
 * u8 output), tanh (learned_demosaic), log (max_filter), and stencils
 * whose sums contract into FMAs (harris). */
static const char *const fast_apps[] = { "unsharp", "harris", "camera_pipe", "local_laplacian",
                                         "learned_demosaic", "max_filter" };

static void fast_on(const char *device)
{
    char err[8192];
    int64_t differ = 0;
    for (size_t i = 0; i < sizeof fast_apps / sizeof fast_apps[0]; i++) {
        app_case ac;
        if (app_load("apps", fast_apps[i], true, 1, &ac, err, sizeof err) != 0) {
            fprintf(stderr, "  %s: %s\n", fast_apps[i], err);
            CHECK(!"the app loads");
            continue;
        }
        exec_diff d;
        bool ran = run_checked(device, ac.p, CG_MATH_FAST, ac.in, ac.ref, &d, NULL, err, sizeof err);
        if (!ran) fprintf(stderr, "  %s: %s\n", fast_apps[i], err);
        if (ran && d.mismatches)
            fprintf(stderr, "  %s on %s: %lld points beyond the fast tolerance (max %lld ulp, %g)\n",
                    fast_apps[i], device, (long long)d.mismatches, (long long)d.max_ulp, d.max_abs);
        CHECK(ran && d.mismatches == 0);
        printf("  %s/%s fast: %lld of %lld points differ from exact, max %lld ulp\n", fast_apps[i], device,
               (long long)d.differ, (long long)d.points, (long long)d.max_ulp);
        differ += d.differ;
        app_free(&ac);
    }
    CHECK(differ > 0);               /* fast math is not the exact code */
}

static void test_fast_c(void) { fast_on("c"); }
static void test_fast_opencl(void) { fast_on("opencl"); }

int main(void)
{
    char why[4096];
    bool cl = have_opencl(why, sizeof why);
    RUN(test_ulp_distance);
    RUN(test_compare_exact);
    RUN(test_compare_integers);
    RUN(test_constants_c);
    if (cl) RUN(test_constants_opencl);
    else printf("PASS test_constants_opencl (skipped: %s)\n", why);
    RUN(test_square_is_pow);
    RUN(test_squares_c);
    if (cl) RUN(test_squares_opencl);
    RUN(test_fast_code);
    RUN(test_fast_c);
    if (cl) RUN(test_fast_opencl);
    else printf("PASS test_fast_opencl (skipped: %s)\n", why);
    CHECK_EXIT();
}
