/*
 * test_apps_pyramid.c - the pyramid and camera apps in apps/: local_laplacian,
 * interpolate, camera_pipe, lens_blur and nl_means.
 *
 * These apps are too large to recompute element by element here, so each
 * case checks what must hold of any correct implementation:
 *  - apps/NAME.pipe parses and finalizes at its --small sizes;
 *  - two evaluations with the same seed give identical outputs;
 *  - the outputs have the extents the file declares, and f32 outputs are
 *    finite;
 *  - one property of the algorithm that a wrong implementation would break:
 *    an identity setting that must reproduce the input, a constant input
 *    that must come back unchanged, or a gray input that must stay gray.
 *
 * Run from the repository root: the apps are found at apps/NAME.pipe.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "stagecraft.h"

#define SEED 4242u
#define MAX_IO 4

/* ---- helpers ------------------------------------------------------------- */

/* Parses apps/NAME.pipe with --small and the given NAME=VALUE settings;
 * NULL (after printing the errors) if it does not finalize cleanly. */
static sc_pipeline *load(const char *name, int nsets, const char **names,
                         const double *values)
{
    char path[256];
    snprintf(path, sizeof path, "apps/%s.pipe", name);
    sc_parse_options opts = {0};
    opts.small = 1;
    opts.nsets = nsets;
    opts.set_names = names;
    opts.set_values = values;
    sc_pipeline *p = sc_parse_file(path, &opts);
    if (sc_error_count(p) != 0) {
        for (int i = 0; i < sc_error_count(p); i++)
            fprintf(stderr, "  %s\n", sc_error_message(p, i));
        sc_pipeline_free(p);
        return NULL;
    }
    return p;
}

/* Evaluates p (inputs may hold NULLs: seeded random data); fills outs[]
 * and returns 0, or -1 after printing the errors. */
static int eval(sc_pipeline *p, sc_buffer **inputs, sc_buffer **outs)
{
    sc_buffer *none[MAX_IO] = {NULL};
    for (int i = 0; i < MAX_IO; i++) outs[i] = NULL;
    if (sc_evaluate(p, inputs ? inputs : none, SEED, outs) != 0) {
        for (int i = 0; i < sc_error_count(p); i++)
            fprintf(stderr, "  %s\n", sc_error_message(p, i));
        return -1;
    }
    return 0;
}

static void free_all(sc_buffer **b, int n)
{
    for (int i = 0; i < n; i++)
        if (b[i]) sc_buffer_free(b[i]);
}

static int has_shape(const sc_buffer *b, int ndims, const int *ext)
{
    if (!b || b->ndims != ndims) return 0;
    for (int d = 0; d < ndims; d++)
        if (b->min[d] != 0 || b->extent[d] != ext[d]) return 0;
    return 1;
}

static int same_contents(const sc_buffer *a, const sc_buffer *b)
{
    if (!a || !b || a->type != b->type || a->ndims != b->ndims) return 0;
    for (int d = 0; d < a->ndims; d++)
        if (a->min[d] != b->min[d] || a->extent[d] != b->extent[d]) return 0;
    size_t n = (size_t)sc_buffer_count(a) * sc_type_size(a->type);
    return memcmp(a->data, b->data, n) == 0;
}

static int all_finite(const sc_buffer *b)
{
    if (b->type != SC_F32) return 1;
    const float *f = b->data;
    for (int64_t i = 0; i < sc_buffer_count(b); i++)
        if (!isfinite(f[i])) return 0;
    return 1;
}

/* Element (x, y, c) of a 3-D buffer whose mins are 0. */
static double at3(const sc_buffer *b, int x, int y, int c)
{
    int co[3] = {x, y, c};
    return sc_buffer_get(b, co);
}

/* The checks every app gets: it loads, evaluates twice to the same bits
 * (random inputs from the seed), and its one output has the extents
 * `ext` and finite values.  Returns the pipeline for more checks, or NULL. */
static sc_pipeline *common_checks(const char *name, int ndims, const int *ext)
{
    sc_pipeline *p = load(name, 0, NULL, NULL);
    CHECK(p != NULL);
    if (!p) return NULL;
    CHECK(sc_output_count(p) == 1);
    CHECK(sc_input_count(p) <= MAX_IO);
    sc_buffer *a[MAX_IO], *b[MAX_IO];
    int ra = eval(p, NULL, a), rb = eval(p, NULL, b);
    CHECK(ra == 0 && rb == 0);
    if (ra == 0 && rb == 0) {
        CHECK(has_shape(a[0], ndims, ext));
        CHECK(same_contents(a[0], b[0]));
        CHECK(all_finite(a[0]));
    }
    free_all(a, MAX_IO);
    free_all(b, MAX_IO);
    return p;
}

/* ---- local_laplacian ----------------------------------------------------- */

/* What local_laplacian gives when its gray image comes back unchanged:
 * the color put back as gray * (channel + eps) / (gray + eps), eps = 0.01,
 * which is the input itself where the pixel is gray. */
static double identity_color(const sc_buffer *in, int x, int y, int c)
{
    double f[3];
    for (int k = 0; k < 3; k++) f[k] = at3(in, x, y, k) / 65535.0;
    double gray = 0.299 * f[0] + 0.587 * f[1] + 0.114 * f[2];
    double v = gray * (f[c] + 0.01) / (gray + 0.01);
    return floor(fmin(fmax(v, 0.0), 1.0) * 65535.0);
}

/* With alpha = 0 (no detail remapping) and beta = 1 (contrast kept) every
 * intensity level's pyramid is the gray image's and the Laplacian pyramid
 * collapses back to it exactly, so the output is the input's gray image
 * with its color put back (see identity_color), within float rounding. */
static void local_laplacian(void)
{
    int ext[3] = {64, 48, 3};
    sc_pipeline *p = common_checks("local_laplacian", 3, ext);
    if (p) sc_pipeline_free(p);

    const char *names[2] = {"alpha", "beta"};
    double values[2] = {0.0, 1.0};
    p = load("local_laplacian", 2, names, values);
    CHECK(p != NULL);
    if (!p) return;
    sc_buffer *in = sc_buffer_new(SC_U16, 3, NULL, ext);
    sc_buffer_fill_random(in, 99);
    sc_buffer *ins[1] = {in}, *outs[MAX_IO];
    if (eval(p, ins, outs) == 0) {
        CHECK(has_shape(outs[0], 3, ext));
        double worst = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < ext[1]; y++)
                for (int x = 0; x < ext[0]; x++)
                    worst = fmax(worst, fabs(at3(outs[0], x, y, c) - identity_color(in, x, y, c)));
        if (worst > 2) fprintf(stderr, "  local_laplacian identity: off by %g\n", worst);
        CHECK(worst <= 2);      /* of 65535: float rounding only */
    } else {
        CHECK(0);
    }
    free_all(outs, MAX_IO);
    sc_buffer_free(in);
    sc_pipeline_free(p);

    /* A flat gray image with beta = 1/2: every level of every pyramid is
     * flat, so the Laplacian levels vanish if (and only if) the
     * resampling filters keep flat images flat, and the coarsest level
     * interpolated at the image's own intensity gives the image back. */
    values[1] = 0.5;
    p = load("local_laplacian", 2, names, values);
    CHECK(p != NULL);
    if (!p) return;
    in = sc_buffer_new(SC_U16, 3, NULL, ext);
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < ext[1]; y++)
            for (int x = 0; x < ext[0]; x++) {
                int co[3] = {x, y, c};
                sc_buffer_set(in, co, 30000);
            }
    ins[0] = in;
    if (eval(p, ins, outs) == 0) {
        double worst = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < ext[1]; y++)
                for (int x = 0; x < ext[0]; x++)
                    worst = fmax(worst, fabs(at3(outs[0], x, y, c) - 30000));
        if (worst > 2) fprintf(stderr, "  local_laplacian flat: off by %g\n", worst);
        CHECK(worst <= 2);
    } else {
        CHECK(0);
    }
    free_all(outs, MAX_IO);
    sc_buffer_free(in);
    sc_pipeline_free(p);

    /* And with the default settings it must change the image. */
    p = load("local_laplacian", 0, NULL, NULL);
    if (!p) return;
    in = sc_buffer_new(SC_U16, 3, NULL, ext);
    sc_buffer_fill_random(in, 99);
    ins[0] = in;
    if (eval(p, ins, outs) == 0) {
        double total = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < ext[1]; y++)
                for (int x = 0; x < ext[0]; x++)
                    total += fabs(at3(outs[0], x, y, c) - at3(in, x, y, c));
        CHECK(total / (ext[0] * ext[1] * 3) > 100);
    }
    free_all(outs, MAX_IO);
    sc_buffer_free(in);
    sc_pipeline_free(p);
}

/* ---- interpolate --------------------------------------------------------- */

/* A fully opaque pixel keeps its own color: with alpha = 1 everywhere the
 * output is the input's RGB.  With random alpha every output is a
 * weighted mean of input colors, so it stays within [0, 1]. */
static void interpolate(void)
{
    int ext[3] = {64, 48, 3}, iext[3] = {64, 48, 4};
    sc_pipeline *p = common_checks("interpolate", 3, ext);
    if (!p) return;

    sc_buffer *in = sc_buffer_new(SC_F32, 3, NULL, iext);
    sc_buffer_fill_random(in, 5);
    for (int y = 0; y < iext[1]; y++)
        for (int x = 0; x < iext[0]; x++) {
            int co[3] = {x, y, 3};
            sc_buffer_set(in, co, 1.0);
        }
    sc_buffer *ins[1] = {in}, *outs[MAX_IO];
    if (eval(p, ins, outs) == 0) {
        double worst = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < ext[1]; y++)
                for (int x = 0; x < ext[0]; x++)
                    worst = fmax(worst, fabs(at3(outs[0], x, y, c) - at3(in, x, y, c)));
        CHECK(worst <= 1e-6);
    } else {
        CHECK(0);
    }
    free_all(outs, MAX_IO);

    /* Random alpha (mostly translucent): a convex combination. */
    sc_buffer_fill_random(in, 6);
    if (eval(p, ins, outs) == 0) {
        const float *f = outs[0]->data;
        int ok = 1;
        for (int64_t i = 0; i < sc_buffer_count(outs[0]); i++)
            if (!(f[i] >= -1e-6f && f[i] <= 1 + 1e-6f)) ok = 0;
        CHECK(ok);
    }
    free_all(outs, MAX_IO);
    sc_buffer_free(in);
    sc_pipeline_free(p);
}

/* ---- camera_pipe --------------------------------------------------------- */

/* Runs camera_pipe on a uniform raw image of 10-bit level v (stored
 * left-justified, as the app reads it) with identity color matrices;
 * returns the output (caller frees) or NULL. */
static sc_buffer *camera_gray(sc_pipeline *p, int v)
{
    int rext[2] = {64 + 32, 48 + 24}, mext[2] = {4, 3};
    sc_buffer *raw = sc_buffer_new(SC_U16, 2, NULL, rext);
    sc_buffer *m0 = sc_buffer_new(SC_F32, 2, NULL, mext);
    sc_buffer *m1 = sc_buffer_new(SC_F32, 2, NULL, mext);
    for (int y = 0; y < rext[1]; y++)
        for (int x = 0; x < rext[0]; x++) {
            int co[2] = {x, y};
            sc_buffer_set(raw, co, (double)(v << 6));
        }
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++) {
            int co[2] = {x, y};
            sc_buffer_set(m0, co, x == y ? 1.0 : 0.0);
            sc_buffer_set(m1, co, x == y ? 1.0 : 0.0);
        }
    sc_buffer *ins[3] = {raw, m0, m1}, *outs[MAX_IO];
    int r = eval(p, ins, outs);
    sc_buffer_free(raw);
    sc_buffer_free(m0);
    sc_buffer_free(m1);
    if (r != 0) return NULL;
    for (int i = 1; i < MAX_IO; i++)
        if (outs[i]) sc_buffer_free(outs[i]);
    return outs[0];
}

/* A uniform gray raw image demosaics to equal R, G and B everywhere; the
 * identity color matrix keeps them equal; the tone curve and sharpening
 * keep a flat image flat.  The gray level must rise with the raw level,
 * black at or below the black level and white above the white level. */
static void camera_pipe(void)
{
    int ext[3] = {64, 48, 3};
    sc_pipeline *p = common_checks("camera_pipe", 3, ext);
    if (!p) return;
    CHECK(sc_input_count(p) == 3);
    int levels[5] = {10, 200, 500, 800, 1023};
    double prev = -1;
    for (int k = 0; k < 5; k++) {
        sc_buffer *out = camera_gray(p, levels[k]);
        CHECK(out != NULL);
        if (!out) continue;
        CHECK(has_shape(out, 3, ext));
        CHECK(out->type == SC_U8);
        double v0 = at3(out, 0, 0, 0);
        int flat = 1;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < ext[1]; y++)
                for (int x = 0; x < ext[0]; x++)
                    if (at3(out, x, y, c) != v0) flat = 0;
        CHECK(flat);
        CHECK(v0 >= prev);
        if (levels[k] == 10) CHECK(v0 == 0);          /* below black level 25 */
        if (levels[k] == 500) CHECK(v0 > 0 && v0 < 255);
        prev = v0;
        sc_buffer_free(out);
    }
    sc_pipeline_free(p);
}

/* ---- lens_blur ------------------------------------------------------------ */

/* Identical left and right images match at disparity 0, so the depth is
 * 0 everywhere.  With focus_depth = 0 every pixel is in focus: nothing is
 * blurred and the output is the left image / 255.  With the default focus
 * (13) everything is out of focus: the output is a mean of nearby pixels,
 * in [0, 1] and smoother than the input.  A constant image stays
 * constant whatever the depth. */
static void lens_blur(void)
{
    int ext[3] = {64, 48, 3};
    sc_pipeline *p = common_checks("lens_blur", 3, ext);
    if (p) sc_pipeline_free(p);

    sc_buffer *img = sc_buffer_new(SC_U8, 3, NULL, ext);
    sc_buffer_fill_random(img, 17);
    sc_buffer *ins[2] = {img, img}, *outs[MAX_IO];

    const char *names[1] = {"focus_depth"};
    double values[1] = {0};
    p = load("lens_blur", 1, names, values);
    CHECK(p != NULL);
    if (p && eval(p, ins, outs) == 0) {
        double worst = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < ext[1]; y++)
                for (int x = 0; x < ext[0]; x++)
                    worst = fmax(worst, fabs(at3(outs[0], x, y, c) - at3(img, x, y, c) / 255.0));
        CHECK(worst <= 1e-6);
        free_all(outs, MAX_IO);
    } else {
        CHECK(0);
    }
    if (p) sc_pipeline_free(p);

    p = load("lens_blur", 0, NULL, NULL);
    if (!p) return;
    if (eval(p, ins, outs) == 0) {
        double s_in = 0, s2_in = 0, s_out = 0, s2_out = 0;
        int in_range = 1, n = ext[0] * ext[1] * 3;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < ext[1]; y++)
                for (int x = 0; x < ext[0]; x++) {
                    double o = at3(outs[0], x, y, c), i = at3(img, x, y, c) / 255.0;
                    if (!(o >= 0 && o <= 1)) in_range = 0;
                    s_out += o; s2_out += o * o;
                    s_in += i; s2_in += i * i;
                }
        double var_in = s2_in / n - (s_in / n) * (s_in / n);
        double var_out = s2_out / n - (s_out / n) * (s_out / n);
        CHECK(in_range);
        CHECK(var_out < 0.5 * var_in);
        free_all(outs, MAX_IO);
    } else {
        CHECK(0);
    }

    /* A constant image (a different value per channel). */
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < ext[1]; y++)
            for (int x = 0; x < ext[0]; x++) {
                int co[3] = {x, y, c};
                sc_buffer_set(img, co, 40.0 + 70.0 * c);
            }
    if (eval(p, ins, outs) == 0) {
        double worst = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < ext[1]; y++)
                for (int x = 0; x < ext[0]; x++)
                    worst = fmax(worst, fabs(at3(outs[0], x, y, c) - (40.0 + 70.0 * c) / 255.0));
        CHECK(worst <= 1e-6);
        free_all(outs, MAX_IO);
    } else {
        CHECK(0);
    }
    sc_buffer_free(img);
    sc_pipeline_free(p);
}

/* ---- nl_means -------------------------------------------------------------- */

/* Every patch of a constant image is the same, every weight is 1, and the
 * weighted mean is the constant.  On faint noise the output is a mean of
 * input values, in [0, 1], and smoother than the input. */
static void nl_means(void)
{
    int ext[3] = {64, 48, 3};
    sc_pipeline *p = common_checks("nl_means", 3, ext);
    if (!p) return;

    sc_buffer *in = sc_buffer_new(SC_F32, 3, NULL, ext);
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < ext[1]; y++)
            for (int x = 0; x < ext[0]; x++) {
                int co[3] = {x, y, c};
                sc_buffer_set(in, co, 0.2 + 0.3 * c);
            }
    sc_buffer *ins[1] = {in}, *outs[MAX_IO];
    if (eval(p, ins, outs) == 0) {
        double worst = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < ext[1]; y++)
                for (int x = 0; x < ext[0]; x++)
                    worst = fmax(worst, fabs(at3(outs[0], x, y, c) - (float)(0.2 + 0.3 * c)));
        CHECK(worst <= 1e-6);
    } else {
        CHECK(0);
    }
    free_all(outs, MAX_IO);

    /* Faint noise (amplitude 0.05 around 0.5): the patches look alike,
     * the weights are large, and the noise is averaged away. */
    sc_buffer_fill_random(in, 8);
    float *fin = in->data;
    for (int64_t i = 0; i < sc_buffer_count(in); i++) fin[i] = 0.5f + 0.05f * (fin[i] - 0.5f);
    if (eval(p, ins, outs) == 0) {
        double s_in = 0, s2_in = 0, s_out = 0, s2_out = 0;
        int in_range = 1, n = ext[0] * ext[1] * 3;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < ext[1]; y++)
                for (int x = 0; x < ext[0]; x++) {
                    double o = at3(outs[0], x, y, c), i = at3(in, x, y, c);
                    if (!(o >= 0 && o <= 1)) in_range = 0;
                    s_out += o; s2_out += o * o;
                    s_in += i; s2_in += i * i;
                }
        CHECK(in_range);
        CHECK(s2_out / n - (s_out / n) * (s_out / n) < 0.5 * (s2_in / n - (s_in / n) * (s_in / n)));
    } else {
        CHECK(0);
    }
    free_all(outs, MAX_IO);
    sc_buffer_free(in);
    sc_pipeline_free(p);
}

int main(void)
{
    RUN(local_laplacian);
    RUN(interpolate);
    RUN(camera_pipe);
    RUN(lens_blur);
    RUN(nl_means);
    CHECK_EXIT();
}
