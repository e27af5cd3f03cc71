/*
 * test_apps_ml.c - the learning and linear-algebra apps (apps/sgemm,
 * conv_layer, depthwise_separable_conv, learned_demosaic, bgu) at their
 * small sizes, through the parser and the reference evaluator.
 *
 * sgemm, conv_layer and depthwise_separable_conv are compared element by
 * element with plain C loop nests written here from the algorithms'
 * definitions (accumulated in double).  f32 results must agree within
 * 1e-4 absolute plus 1e-4 relative.  bgu and learned_demosaic are checked
 * through properties that hold whatever the data: bgu reproduces its
 * high-res input when the low-res "operator" is the identity, and the
 * demosaic keeps every measured sample and is deterministic and finite.
 *
 * The small sizes below repeat the `small` values of the .pipe files; a
 * mismatch makes sc_evaluate reject the input buffers.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "stagecraft.h"

#define TOL 1e-4

/* ---- helpers ------------------------------------------------------------------ */

/* Parses apps/NAME.pipe at its small sizes (from the repository root, or
 * from tests/ or build/). */
static sc_pipeline *parse_app(const char *name)
{
    static const char *dirs[] = {"apps", "../apps", "../../apps"};
    sc_parse_options opt = {0};
    opt.small = 1;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s.pipe", dirs[i], name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        fclose(f);
        sc_pipeline *p = sc_parse_file(path, &opt);
        for (int e = 0; e < sc_error_count(p); e++)
            fprintf(stderr, "  %s\n", sc_error_message(p, e));
        return p;
    }
    fprintf(stderr, "cannot find apps/%s.pipe\n", name);
    return NULL;
}

static sc_buffer *random_buf(int ndims, const int *ext, uint64_t seed)
{
    sc_buffer *b = sc_buffer_new(SC_F32, ndims, NULL, ext);
    sc_buffer_fill_random(b, seed);
    return b;
}

/* Random values in [-0.5, 0.5), so that ReLUs see both signs. */
static sc_buffer *centered_buf(int ndims, const int *ext, uint64_t seed)
{
    sc_buffer *b = random_buf(ndims, ext, seed);
    float *d = b->data;
    for (int64_t i = 0; i < sc_buffer_count(b); i++) d[i] -= 0.5f;
    return b;
}

/* Element access for dense buffers with min 0, dimension 0 fastest. */
static float at(const sc_buffer *b, int i0, int i1, int i2, int i3)
{
    int c[4] = {i0, i1, i2, i3};
    int64_t off = 0;
    for (int d = 0; d < b->ndims; d++) off += (int64_t)(c[d] - b->min[d]) * b->stride[d];
    return ((const float *)b->data)[off];
}

static int close_enough(double got, double want)
{
    return fabs(got - want) <= TOL + TOL * fabs(want);
}

static int has_extents(const sc_buffer *b, int ndims, const int *ext)
{
    if (!b || b->ndims != ndims) return 0;
    for (int d = 0; d < ndims; d++)
        if (b->extent[d] != ext[d]) return 0;
    return 1;
}

static void free_all(sc_buffer **bufs, int n)
{
    for (int i = 0; i < n; i++) sc_buffer_free(bufs[i]);
}

/* ---- sgemm ---------------------------------------------------------------------- */

static void sgemm_matches_loops(void)
{
    const int N = 32;
    const double alpha = 0.75, beta = -1.25;
    sc_pipeline *p = parse_app("sgemm");
    CHECK(p && sc_error_count(p) == 0);
    if (!p || sc_error_count(p)) { sc_pipeline_free(p); return; }
    CHECK(sc_param_set(sc_param_lookup(p, "alpha"), alpha) == 0);
    CHECK(sc_param_set(sc_param_lookup(p, "beta"), beta) == 0);

    int e[2] = {N, N};
    sc_buffer *in[3] = {random_buf(2, e, 11), random_buf(2, e, 12), random_buf(2, e, 13)};
    sc_buffer *out[1] = {NULL};
    CHECK(sc_evaluate(p, in, 1, out) == 0);
    CHECK(has_extents(out[0], 2, e));
    if (has_extents(out[0], 2, e)) {
        int bad = 0;
        for (int j = 0; j < N; j++)
            for (int i = 0; i < N; i++) {
                double s = 0;
                for (int k = 0; k < N; k++) s += (double)at(in[0], i, k, 0, 0) * at(in[1], k, j, 0, 0);
                double want = alpha * s + beta * at(in[2], i, j, 0, 0);
                if (!close_enough(at(out[0], i, j, 0, 0), want) && bad++ < 5)
                    fprintf(stderr, "sgemm (%d, %d): %g, expected %g\n", i, j,
                            at(out[0], i, j, 0, 0), want);
            }
        CHECK(bad == 0);
    }
    free_all(in, 3);
    free_all(out, 1);
    sc_pipeline_free(p);
}

/* ---- conv_layer ------------------------------------------------------------------- */

static void conv_layer_matches_loops(void)
{
    const int N = 1, CI = 8, CO = 8, W = 12, H = 10;
    sc_pipeline *p = parse_app("conv_layer");
    CHECK(p && sc_error_count(p) == 0);
    if (!p || sc_error_count(p)) { sc_pipeline_free(p); return; }

    int e_in[4] = {CI, W + 2, H + 2, N}, e_f[4] = {CO, 3, 3, CI}, e_b[1] = {CO};
    int e_out[4] = {CO, W, H, N};
    sc_buffer *in[3] = {centered_buf(4, e_in, 21), centered_buf(4, e_f, 22), centered_buf(1, e_b, 23)};
    sc_buffer *out[1] = {NULL};
    CHECK(sc_evaluate(p, in, 1, out) == 0);
    CHECK(has_extents(out[0], 4, e_out));
    if (has_extents(out[0], 4, e_out)) {
        int bad = 0, zeros = 0;
        for (int n = 0; n < N; n++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    for (int c = 0; c < CO; c++) {
                        double s = at(in[2], c, 0, 0, 0);
                        for (int dy = 0; dy < 3; dy++)
                            for (int dx = 0; dx < 3; dx++)
                                for (int ci = 0; ci < CI; ci++)
                                    s += (double)at(in[1], c, dx, dy, ci) * at(in[0], ci, x + dx, y + dy, n);
                        double want = s > 0 ? s : 0;
                        zeros += want == 0;
                        double got = at(out[0], c, x, y, n);
                        if (!close_enough(got, want) && bad++ < 5)
                            fprintf(stderr, "conv_layer (%d, %d, %d, %d): %g, expected %g\n",
                                    c, x, y, n, got, want);
                    }
        CHECK(bad == 0);
        CHECK(zeros > 0 && zeros < CO * W * H * N);     /* the ReLU did cut */
    }
    free_all(in, 3);
    free_all(out, 1);
    sc_pipeline_free(p);
}

/* ---- depthwise_separable_conv --------------------------------------------------------- */

static void depthwise_separable_conv_matches_loops(void)
{
    const int N = 1, CI = 8, CM = 2, CO = 4, W = 12, H = 12;
    const int CD = CI * CM;
    const double eps = 0.001;
    sc_pipeline *p = parse_app("depthwise_separable_conv");
    CHECK(p && sc_error_count(p) == 0);
    if (!p || sc_error_count(p)) { sc_pipeline_free(p); return; }

    int e_in[4] = {CI, W, H, N}, e_dwf[4] = {CM, CI, 3, 3}, e_dwbn[2] = {CD, 4};
    int e_pwf[2] = {CO, CD}, e_pwbn[2] = {CO, 4}, e_out[4] = {CO, W, H, N};
    /* The batch-norm tables stay in [0, 1): their variances must be >= 0. */
    sc_buffer *in[5] = {centered_buf(4, e_in, 31), centered_buf(4, e_dwf, 32),
                        random_buf(2, e_dwbn, 33), centered_buf(2, e_pwf, 34),
                        random_buf(2, e_pwbn, 35)};
    sc_buffer *out[1] = {NULL};
    CHECK(sc_evaluate(p, in, 1, out) == 0);
    CHECK(has_extents(out[0], 4, e_out));
    if (has_extents(out[0], 4, e_out)) {
        /* the depthwise stage, batch norm and ReLU, for every channel */
        double *act = malloc(sizeof(double) * (size_t)(CD * W * H * N));
        for (int n = 0; n < N; n++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    for (int d = 0; d < CD; d++) {
                        double s = 0;
                        for (int ky = 0; ky < 3; ky++)
                            for (int kx = 0; kx < 3; kx++) {
                                int sx = x + kx - 1, sy = y + ky - 1;
                                if (sx < 0 || sx >= W || sy < 0 || sy >= H) continue;
                                s += (double)at(in[1], d % CM, d / CM, kx, ky) * at(in[0], d / CM, sx, sy, n);
                            }
                        double scale = at(in[2], d, 0, 0, 0) / sqrt(at(in[2], d, 3, 0, 0) + eps);
                        double v = (s - at(in[2], d, 2, 0, 0)) * scale + at(in[2], d, 1, 0, 0);
                        act[((n * H + y) * W + x) * CD + d] = v > 0 ? v : 0;
                    }
        int bad = 0, zeros = 0;
        for (int n = 0; n < N; n++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    for (int c = 0; c < CO; c++) {
                        double s = 0;
                        for (int d = 0; d < CD; d++)
                            s += at(in[3], c, d, 0, 0) * act[((n * H + y) * W + x) * CD + d];
                        double scale = at(in[4], c, 0, 0, 0) / sqrt(at(in[4], c, 3, 0, 0) + eps);
                        double v = (s - at(in[4], c, 2, 0, 0)) * scale + at(in[4], c, 1, 0, 0);
                        double want = v > 0 ? v : 0;
                        zeros += want == 0;
                        double got = at(out[0], c, x, y, n);
                        if (!close_enough(got, want) && bad++ < 5)
                            fprintf(stderr, "depthwise_separable_conv (%d, %d, %d, %d): %g, expected %g\n",
                                    c, x, y, n, got, want);
                    }
        CHECK(bad == 0);
        CHECK(zeros < CO * W * H * N);
        free(act);
    }
    free_all(in, 5);
    free_all(out, 1);
    sc_pipeline_free(p);
}

/* ---- learned_demosaic ---------------------------------------------------------------- */

/* The network's weights come from the evaluator's seeded fill (inputs 1
 * and up); the raw image is made here.  Properties: the output is W x H x 3
 * and finite, two runs agree bit for bit, every measured sample comes
 * back (green at G sites exactly; red at R and blue at B sites up to the
 * rounding of g + (r - g)), and every interpolated green, a convex
 * mixture of normalized positive filters, stays in [0, 1]. */
static void learned_demosaic_properties(void)
{
    const int W = 64, H = 48;
    sc_pipeline *p = parse_app("learned_demosaic");
    CHECK(p && sc_error_count(p) == 0);
    if (!p || sc_error_count(p)) { sc_pipeline_free(p); return; }
    CHECK(sc_input_count(p) == 10);

    int e_raw[2] = {W, H}, e_out[3] = {W, H, 3};
    sc_buffer *in[10] = {random_buf(2, e_raw, 41)};
    sc_buffer *out1[1] = {NULL}, *out2[1] = {NULL};
    CHECK(sc_evaluate(p, in, 7, out1) == 0);
    CHECK(sc_evaluate(p, in, 7, out2) == 0);
    CHECK(has_extents(out1[0], 3, e_out) && has_extents(out2[0], 3, e_out));
    if (has_extents(out1[0], 3, e_out) && has_extents(out2[0], 3, e_out)) {
        size_t bytes = sizeof(float) * (size_t)(W * H * 3);
        CHECK(memcmp(out1[0]->data, out2[0]->data, bytes) == 0);
        int nonfinite = 0, lost = 0, green_out = 0;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                for (int c = 0; c < 3; c++) nonfinite += !isfinite(at(out1[0], x, y, c, 0));
                float raw = at(in[0], x, y, 0, 0), g = at(out1[0], x, y, 1, 0);
                if (x % 2 == y % 2) lost += g != raw;
                else if (y % 2 == 0) lost += fabsf(at(out1[0], x, y, 0, 0) - raw) > 1e-6f;
                else lost += fabsf(at(out1[0], x, y, 2, 0) - raw) > 1e-6f;
                green_out += !(g >= 0.0f && g <= 1.0f);
            }
        CHECK(nonfinite == 0);
        CHECK(lost == 0);
        CHECK(green_out == 0);
    }
    free_all(in, 1);
    free_all(out1, 1);
    free_all(out2, 1);
    sc_pipeline_free(p);
}

/* ---- bgu ---------------------------------------------------------------------------------- */

/* When the low-res output equals the low-res input, every cell's
 * regularized fit (A + lambda I) X = A[:, 0..2] + lambda [I; 0] is solved
 * by the identity model exactly, whatever the data and the blur; so the
 * high-res output must reproduce the high-res input (which lies in [0, 1)
 * and so passes the final clamp).  The low-res image is a box-filtered
 * copy of the high-res one, as in Halide's bgu driver.  Float error in
 * the 4x4 solves sets the tolerance, 1e-3. */
static void bgu_identity_operator(void)
{
    const int W = 128, H = 96, F = 8, LW = W / F, LH = H / F;
    sc_pipeline *p = parse_app("bgu");
    CHECK(p && sc_error_count(p) == 0);
    if (!p || sc_error_count(p)) { sc_pipeline_free(p); return; }

    int e_hi[3] = {W, H, 3}, e_lo[3] = {LW, LH, 3};
    sc_buffer *hi = random_buf(3, e_hi, 51);
    sc_buffer *lo = sc_buffer_new(SC_F32, 3, NULL, e_lo);
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < LH; y++)
            for (int x = 0; x < LW; x++) {
                double s = 0;
                for (int sy = 0; sy < F; sy++)
                    for (int sx = 0; sx < F; sx++) s += at(hi, x * F + sx, y * F + sy, c, 0);
                int co[3] = {x, y, c};
                sc_buffer_set(lo, co, s / (F * F));
            }
    sc_buffer *in[3] = {lo, lo, hi};
    sc_buffer *out[1] = {NULL};
    CHECK(sc_evaluate(p, in, 1, out) == 0);
    CHECK(has_extents(out[0], 3, e_hi));
    if (has_extents(out[0], 3, e_hi)) {
        double worst = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    double d = fabs((double)at(out[0], x, y, c, 0) - at(hi, x, y, c, 0));
                    if (!(d <= worst)) worst = d;       /* NaN sticks */
                }
        if (!(worst <= 1e-3)) fprintf(stderr, "bgu: worst difference %g\n", worst);
        CHECK(worst <= 1e-3);
    }
    sc_buffer_free(hi);
    sc_buffer_free(lo);
    free_all(out, 1);
    sc_pipeline_free(p);
}

/* A low-res operator that is not the identity (a gain and an offset per
 * channel): the output is still clamped to [0, 1] and moves towards the
 * operator where the fit is well determined. */
static void bgu_affine_operator(void)
{
    const int W = 128, H = 96, F = 8, LW = W / F, LH = H / F;
    sc_pipeline *p = parse_app("bgu");
    CHECK(p && sc_error_count(p) == 0);
    if (!p || sc_error_count(p)) { sc_pipeline_free(p); return; }

    int e_hi[3] = {W, H, 3}, e_lo[3] = {LW, LH, 3};
    sc_buffer *hi = random_buf(3, e_hi, 61);
    sc_buffer *lo = random_buf(3, e_lo, 62);
    sc_buffer *lo_out = sc_buffer_new(SC_F32, 3, NULL, e_lo);
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < LH; y++)
            for (int x = 0; x < LW; x++) {
                int co[3] = {x, y, c};
                sc_buffer_set(lo_out, co, 0.5 * at(lo, x, y, c, 0) + 0.25);
            }
    sc_buffer *in[3] = {lo, lo_out, hi};
    sc_buffer *out[1] = {NULL};
    CHECK(sc_evaluate(p, in, 1, out) == 0);
    CHECK(has_extents(out[0], 3, e_hi));
    if (has_extents(out[0], 3, e_hi)) {
        int outside = 0;
        double err_model = 0, err_identity = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    double v = at(out[0], x, y, c, 0), h = at(hi, x, y, c, 0);
                    outside += !(v >= 0 && v <= 1);
                    err_model += fabs(v - (0.5 * h + 0.25));
                    err_identity += fabs(v - h);
                }
        CHECK(outside == 0);
        CHECK(err_model < 0.5 * err_identity);
    }
    sc_buffer_free(hi);
    sc_buffer_free(lo);
    sc_buffer_free(lo_out);
    free_all(out, 1);
    sc_pipeline_free(p);
}

int main(void)
{
    RUN(sgemm_matches_loops);
    RUN(conv_layer_matches_loops);
    RUN(depthwise_separable_conv_matches_loops);
    RUN(learned_demosaic_properties);
    RUN(bgu_identity_operator);
    RUN(bgu_affine_operator);
    CHECK_EXIT();
}
