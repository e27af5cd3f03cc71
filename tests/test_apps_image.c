/*
 * test_apps_image.c - the image apps in apps/ against plain C.
 *
 * Each case parses apps/NAME.pipe at its --small sizes, evaluates it with
 * the reference evaluator on seeded random inputs it makes itself, and
 * recomputes every output element with a loop nest written here from the
 * algorithm the app's header describes (not from its IR): direct sums and
 * brute-force windows where the app is clever (max_filter's log-time
 * slices, hist's per-row histograms, iir_blur's transposes).
 *
 * Integer outputs must match exactly.  f32 outputs must match within
 * |got - want| <= ATOL + RTOL * |want| with the tolerances stated per case;
 * the C follows the same formulas in float, so the differences left are
 * those of evaluation order.
 *
 * Run from the repository root: the apps are found at apps/NAME.pipe.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "stagecraft.h"

#define SEED 20210817u

/* ---- helpers ------------------------------------------------------------- */

/* Parses apps/NAME.pipe with --small; NULL (after printing the errors) if
 * it does not parse and finalize cleanly. */
static sc_pipeline *load_app(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "apps/%s.pipe", name);
    sc_parse_options opts = {0};
    opts.small = 1;
    sc_pipeline *p = sc_parse_file(path, &opts);
    if (sc_error_count(p) != 0) {
        for (int i = 0; i < sc_error_count(p); i++)
            fprintf(stderr, "  %s\n", sc_error_message(p, i));
        sc_pipeline_free(p);
        return NULL;
    }
    return p;
}

/* Evaluates p on the one input `in`; returns its one output or NULL. */
static sc_buffer *run_app(sc_pipeline *p, sc_buffer *in)
{
    if (sc_input_count(p) != 1 || sc_output_count(p) != 1) {
        fprintf(stderr, "  expected 1 input and 1 output, got %d and %d\n",
                sc_input_count(p), sc_output_count(p));
        return NULL;
    }
    sc_buffer *inputs[1] = {in}, *outputs[1] = {NULL};
    if (sc_evaluate(p, inputs, SEED, outputs) != 0) {
        for (int i = 0; i < sc_error_count(p); i++)
            fprintf(stderr, "  %s\n", sc_error_message(p, i));
        return NULL;
    }
    return outputs[0];
}

static sc_buffer *random_input(sc_type t, int ndims, const int *ext, uint64_t seed)
{
    sc_buffer *b = sc_buffer_new(t, ndims, NULL, ext);
    sc_buffer_fill_random(b, seed);
    return b;
}

/* Whether buffer b has the extents given, starting at 0. */
static int has_shape(const sc_buffer *b, int ndims, const int *ext)
{
    if (!b || b->ndims != ndims) return 0;
    for (int d = 0; d < ndims; d++)
        if (b->min[d] != 0 || b->extent[d] != ext[d]) return 0;
    return 1;
}

static double get2(const sc_buffer *b, int x, int y)
{
    int c[2] = {x, y};
    return sc_buffer_get(b, c);
}

static double get3(const sc_buffer *b, int x, int y, int z)
{
    int c[3] = {x, y, z};
    return sc_buffer_get(b, c);
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Counts mismatches instead of failing once per element, and reports the
 * first few. */
typedef struct { const char *what; long bad, n; double worst; } cmp_state;

static void cmp_exact(cmp_state *s, double got, double want, int x, int y, int c)
{
    s->n++;
    if (got == want) return;
    if (s->bad++ < 5)
        fprintf(stderr, "  %s(%d, %d, %d): got %.9g, want %.9g\n", s->what, x, y, c, got, want);
}

static void cmp_close(cmp_state *s, double got, double want, double atol, double rtol,
                      int x, int y, int c)
{
    s->n++;
    double err = fabs(got - want);
    if (err > s->worst) s->worst = err;
    if (err <= atol + rtol * fabs(want)) return;
    if (s->bad++ < 5)
        fprintf(stderr, "  %s(%d, %d, %d): got %.9g, want %.9g\n", s->what, x, y, c, got, want);
}

static void cmp_done(cmp_state *s, long expect_n)
{
    CHECK(s->n == expect_n);
    CHECK(s->bad == 0);
    if (s->bad)
        fprintf(stderr, "  %s: %ld of %ld elements differ\n", s->what, s->bad, s->n);
}

/* Copies an f32 buffer of extents (w, h, c) into a plain array. */
static float *to_floats3(const sc_buffer *b, int w, int h, int nc)
{
    float *a = malloc(sizeof(float) * (size_t)w * h * nc);
    for (int c = 0; c < nc; c++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                a[((size_t)c * h + y) * w + x] = (float)get3(b, x, y, c);
    return a;
}

/* ---- box_blur: 3x3 mean of a u16 image, sums in u32, edges repeated ------- */

static void box_blur(void)
{
    enum { W = 64, H = 48 };
    sc_pipeline *p = load_app("box_blur");
    CHECK(p != NULL);
    if (!p) return;
    int ext[2] = {W, H};
    sc_buffer *in = random_input(SC_U16, 2, ext, 11);
    sc_buffer *out = run_app(p, in);
    CHECK(has_shape(out, 2, ext) && out->type == SC_U16);
    if (has_shape(out, 2, ext)) {
        static uint16_t v[H][W], bx[H][W];
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                v[y][x] = (uint16_t)get2(in, x, y);
        /* Separable, rounding down after each pass as the app does. */
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                uint32_t s = 0;
                for (int dx = -1; dx <= 1; dx++) s += v[y][clampi(x + dx, 0, W - 1)];
                bx[y][x] = (uint16_t)(s / 3);
            }
        cmp_state st = {"box_blur", 0, 0, 0};
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                uint32_t s = 0;
                for (int dy = -1; dy <= 1; dy++) s += bx[clampi(y + dy, 0, H - 1)][x];
                cmp_exact(&st, get2(out, x, y), (double)(s / 3), x, y, 0);
            }
        cmp_done(&st, (long)W * H);
    }
    sc_buffer_free(in);
    sc_buffer_free(out);
    sc_pipeline_free(p);
}

/* ---- harris: Harris corner response ---------------------------------------- */

static void harris(void)
{
    enum { W = 64, H = 48 };
    const double ATOL = 1e-6, RTOL = 1e-4;   /* responses are ~1e-3 .. 1e-2 */
    sc_pipeline *p = load_app("harris");
    CHECK(p != NULL);
    if (!p) return;
    int ext[3] = {W, H, 4};
    sc_buffer *in = random_input(SC_F32, 3, ext, 12);
    sc_buffer *out = run_app(p, in);
    int oext[2] = {W, H};
    CHECK(has_shape(out, 2, oext) && out->type == SC_F32);
    if (has_shape(out, 2, oext)) {
        float *img = to_floats3(in, W, H, 4);
        /* Luma over a frame of 2 pixels with the edges repeated, then the
         * Sobel gradients (weights / 12) and their products over a frame of
         * 1, then the 3x3 sums. */
        enum { F = 2, GW = W + 2 * F, GH = H + 2 * F };
        static float gray[GH][GW], ixx[GH][GW], iyy[GH][GW], ixy[GH][GW];
        for (int y = -F; y < H + F; y++)
            for (int x = -F; x < W + F; x++) {
                int cx = clampi(x, 0, W - 1), cy = clampi(y, 0, H - 1);
                const float *px = img + (size_t)cy * W + cx;
                gray[y + F][x + F] = 0.299f * px[0] + 0.587f * px[(size_t)W * H] +
                                     0.114f * px[(size_t)2 * W * H];
            }
        for (int y = -1; y < H + 1; y++)
            for (int x = -1; x < W + 1; x++) {
                float gx = 0, gy = 0;
                for (int d = -1; d <= 1; d++) {
                    float w = d == 0 ? 2.0f : 1.0f;
                    gx += w * (gray[y + d + F][x + 1 + F] - gray[y + d + F][x - 1 + F]);
                    gy += w * (gray[y + 1 + F][x + d + F] - gray[y - 1 + F][x + d + F]);
                }
                gx /= 12.0f;
                gy /= 12.0f;
                ixx[y + F][x + F] = gx * gx;
                iyy[y + F][x + F] = gy * gy;
                ixy[y + F][x + F] = gx * gy;
            }
        cmp_state st = {"harris", 0, 0, 0};
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                float sxx = 0, syy = 0, sxy = 0;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        sxx += ixx[y + dy + F][x + dx + F];
                        syy += iyy[y + dy + F][x + dx + F];
                        sxy += ixy[y + dy + F][x + dx + F];
                    }
                float det = sxx * syy - sxy * sxy, trace = sxx + syy;
                float want = det - 0.04f * trace * trace;
                cmp_close(&st, get2(out, x, y), want, ATOL, RTOL, x, y, 0);
            }
        cmp_done(&st, (long)W * H);
        free(img);
    }
    sc_buffer_free(in);
    sc_buffer_free(out);
    sc_pipeline_free(p);
}

/* ---- unsharp: unsharp mask with a 7-tap Gaussian (sigma 1.5) --------------- */

static void unsharp(void)
{
    enum { W = 64, H = 48 };
    /* Outputs are O(1); ratio divides by the luma, which amplifies the
     * rounding of the blur where the luma is small. */
    const double ATOL = 1e-4, RTOL = 1e-4;
    sc_pipeline *p = load_app("unsharp");
    CHECK(p != NULL);
    if (!p) return;
    int ext[3] = {W, H, 3};
    sc_buffer *in = random_input(SC_F32, 3, ext, 13);
    sc_buffer *out = run_app(p, in);
    CHECK(has_shape(out, 3, ext) && out->type == SC_F32);
    if (has_shape(out, 3, ext)) {
        float *img = to_floats3(in, W, H, 3);
        double k[4];
        for (int i = 0; i < 4; i++)
            k[i] = exp(-(double)(i * i) / (2 * 1.5 * 1.5)) / (sqrt(2 * M_PI) * 1.5);
        enum { F = 3, GW = W + 2 * F, GH = H + 2 * F };
        static double gray[GH][GW], blur_y[GH][GW];
        for (int y = -F; y < H + F; y++)
            for (int x = -F; x < W + F; x++) {
                int cx = clampi(x, 0, W - 1), cy = clampi(y, 0, H - 1);
                const float *px = img + (size_t)cy * W + cx;
                gray[y + F][x + F] = 0.299 * px[0] + 0.587 * px[(size_t)W * H] +
                                     0.114 * px[(size_t)2 * W * H];
            }
        for (int y = 0; y < H; y++)
            for (int x = -F; x < W + F; x++) {
                double s = 0;
                for (int d = -3; d <= 3; d++) s += k[abs(d)] * gray[y + d + F][x + F];
                blur_y[y + F][x + F] = s;
            }
        cmp_state st = {"unsharp", 0, 0, 0};
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                double blur = 0;
                for (int d = -3; d <= 3; d++) blur += k[abs(d)] * blur_y[y + F][x + d + F];
                double g = gray[y + F][x + F];
                double ratio = (2 * g - blur) / g;
                for (int c = 0; c < 3; c++) {
                    double want = ratio * img[((size_t)c * H + y) * W + x];
                    cmp_close(&st, get3(out, x, y, c), want, ATOL, RTOL, x, y, c);
                }
            }
        cmp_done(&st, (long)W * H * 3);
        free(img);
    }
    sc_buffer_free(in);
    sc_buffer_free(out);
    sc_pipeline_free(p);
}

/* ---- iir_blur: first-order IIR down+up the columns, then the rows ---------- */

/* Filters n values a[0], a[s], a[2s] ... in place: a causal pass from the
 * first, then an anticausal pass from the last. */
static void iir_line(float *a, int n, int s, float alpha)
{
    for (int i = 1; i < n; i++)
        a[i * s] = (1 - alpha) * a[(i - 1) * s] + alpha * a[i * s];
    for (int i = n - 2; i >= 0; i--)
        a[i * s] = (1 - alpha) * a[(i + 1) * s] + alpha * a[i * s];
}

static void iir_blur(void)
{
    enum { W = 64, H = 48 };
    const double ATOL = 1e-5, RTOL = 1e-4;   /* values in [0, 1) */
    const float alpha = 0.1f;                /* the app's default */
    sc_pipeline *p = load_app("iir_blur");
    CHECK(p != NULL);
    if (!p) return;
    int ext[3] = {W, H, 3};
    sc_buffer *in = random_input(SC_F32, 3, ext, 14);
    sc_buffer *out = run_app(p, in);
    CHECK(has_shape(out, 3, ext) && out->type == SC_F32);
    if (has_shape(out, 3, ext)) {
        float *img = to_floats3(in, W, H, 3);
        for (int c = 0; c < 3; c++) {
            float *plane = img + (size_t)c * W * H;
            for (int x = 0; x < W; x++) iir_line(plane + x, H, W, alpha);   /* columns */
            for (int y = 0; y < H; y++) iir_line(plane + (size_t)y * W, W, 1, alpha); /* rows */
        }
        cmp_state st = {"iir_blur", 0, 0, 0};
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    cmp_close(&st, get3(out, x, y, c), img[((size_t)c * H + y) * W + x],
                              ATOL, RTOL, x, y, c);
        cmp_done(&st, (long)W * H * 3);
        free(img);
    }
    sc_buffer_free(in);
    sc_buffer_free(out);
    sc_pipeline_free(p);
}

/* ---- hist: histogram equalization of the luma, colour rebuilt as u8 ------- */

static void hist(void)
{
    enum { W = 64, H = 48 };
    sc_pipeline *p = load_app("hist");
    CHECK(p != NULL);
    if (!p) return;
    int ext[3] = {W, H, 3};
    sc_buffer *in = random_input(SC_U8, 3, ext, 15);
    sc_buffer *out = run_app(p, in);
    CHECK(has_shape(out, 3, ext) && out->type == SC_U8);
    if (has_shape(out, 3, ext)) {
        static uint8_t rgb[3][H][W];
        static float Y[H][W];
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    rgb[c][y][x] = (uint8_t)get3(in, x, y, c);
        /* One histogram of the whole image (the app sums per-row ones). */
        int count[256] = {0};
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                Y[y][x] = 0.299f * rgb[0][y][x] + 0.587f * rgb[1][y][x] + 0.114f * rgb[2][y][x];
                count[(int)clampf(Y[y][x], 0, 255)]++;
            }
        int cdf[256];
        for (int b = 0, run = 0; b < 256; b++) cdf[b] = run += count[b];
        CHECK(cdf[255] == W * H);
        const float scale = 255.0f / (float)(W * H);
        cmp_state st = {"hist", 0, 0, 0};
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                float eq = clampf((float)cdf[(uint8_t)clampf(Y[y][x], 0, 255)] * scale, 0, 255);
                float cr = (rgb[0][y][x] - Y[y][x]) * 0.713f + 128;
                float cb = (rgb[2][y][x] - Y[y][x]) * 0.564f + 128;
                uint8_t want[3] = {
                    (uint8_t)clampf(eq + (cr - 128) * 1.4f, 0, 255),
                    (uint8_t)clampf(eq - 0.343f * (cb - 128) - 0.711f * (cr - 128), 0, 255),
                    (uint8_t)clampf(eq + 1.765f * (cb - 128), 0, 255),
                };
                for (int c = 0; c < 3; c++)
                    cmp_exact(&st, get3(out, x, y, c), want[c], x, y, c);
            }
        cmp_done(&st, (long)W * H * 3);
    }
    sc_buffer_free(in);
    sc_buffer_free(out);
    sc_pipeline_free(p);
}

/* ---- max_filter: max over a disk of radius 26, by brute force ------------- */

static void max_filter(void)
{
    enum { W = 64, H = 48, R = 26 };
    sc_pipeline *p = load_app("max_filter");
    CHECK(p != NULL);
    if (!p) return;
    int ext[3] = {W, H, 3};
    sc_buffer *in = random_input(SC_F32, 3, ext, 16);
    sc_buffer *out = run_app(p, in);
    CHECK(has_shape(out, 3, ext) && out->type == SC_F32);
    if (has_shape(out, 3, ext)) {
        float *img = to_floats3(in, W, H, 3);
        /* The window at column offset dx reaches t rows up and down, where
         * t counts the dy in [0, R] with dx^2 + dy^2 < (R + 1/4)^2 (so the
         * window is one row taller than the disk, as in the source). */
        int reach[2 * R + 1];
        for (int dx = -R; dx <= R; dx++) {
            int n = 0;
            for (int dy = 0; dy <= R; dy++)
                n += (double)(dx * dx + dy * dy) < (R + 0.25) * (R + 0.25);
            reach[dx + R] = n;
        }
        cmp_state st = {"max_filter", 0, 0, 0};
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    float m = -INFINITY;
                    for (int dx = -R; dx <= R; dx++) {
                        int t = reach[dx + R], cx = clampi(x + dx, 0, W - 1);
                        for (int dy = -t; dy <= t; dy++) {
                            float v = img[((size_t)c * H + clampi(y + dy, 0, H - 1)) * W + cx];
                            if (v > m) m = v;
                        }
                    }
                    cmp_exact(&st, get3(out, x, y, c), m, x, y, c);
                }
        cmp_done(&st, (long)W * H * 3);
        free(img);
    }
    sc_buffer_free(in);
    sc_buffer_free(out);
    sc_pipeline_free(p);
}

int main(void)
{
    RUN(box_blur);
    RUN(harris);
    RUN(unsharp);
    RUN(iir_blur);
    RUN(hist);
    RUN(max_filter);
    CHECK_EXIT();
}
