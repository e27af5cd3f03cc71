/*
 * test_imageio.c - buffers, PNG and .npy input/output.
 *
 * Files go to a fresh directory under /tmp (mkdtemp), removed at the end.
 * Odd PNG layouts (palette, 2-bit gray) are made with libpng directly, odd
 * .npy files byte by byte, so the readers are tested against inputs they
 * did not write themselves.
 */
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "imageio.h"
#include "stagecraft.h"

static char tmpdir[64];
static char *made[128];
static int nmade;

/* A path in the temporary directory (remembered for cleanup). */
static const char *tpath(const char *name)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
    for (int i = 0; i < nmade; i++)
        if (strcmp(made[i], buf) == 0)
            return made[i];
    if (nmade == (int)(sizeof made / sizeof made[0]))
        abort();
    made[nmade] = malloc(strlen(buf) + 1);
    strcpy(made[nmade], buf);
    return made[nmade++];
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    fwrite(data, 1, n, f);
    fclose(f);
}

/* Whole file into a malloc'ed block; *n receives its size. */
static uint8_t *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)len + 1);
    *n = fread(p, 1, (size_t)len, f);
    fclose(f);
    return p;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Same type, shape and element values (buffers from sc_buffer_new). */
static int same_buffer(const sc_buffer *a, const sc_buffer *b)
{
    if (!a || !b || a->type != b->type || a->ndims != b->ndims)
        return 0;
    for (int d = 0; d < a->ndims; d++)
        if (a->extent[d] != b->extent[d])
            return 0;
    return memcmp(a->data, b->data,
                  (size_t)sc_buffer_count(a) * sc_type_size(a->type)) == 0;
}

/* Loading path must fail with a message naming the file and containing
 * want (if not NULL). */
static int load_fails(const char *path, const char *want)
{
    char err[512] = "";
    sc_buffer *b = io_load(path, err, sizeof err);
    if (b) {
        sc_buffer_free(b);
        fprintf(stderr, "  %s: loaded, expected an error\n", path);
        return 0;
    }
    if (!starts_with(err, path) || (want && !strstr(err, want))) {
        fprintf(stderr, "  %s: message '%s' (wanted '%s')\n", path, err,
                want ? want : "");
        return 0;
    }
    return 1;
}

/* ---- buffers ---------------------------------------------------------------- */

static void test_types(void)
{
    static const char *names[] = {"bool", "u8", "u16", "u32", "i8", "i16",
                                  "i32", "f32"};
    static const int bits[] = {1, 8, 16, 32, 8, 16, 32, 32};
    static const size_t size[] = {1, 1, 2, 4, 1, 2, 4, 4};
    for (int t = 0; t < SC_TYPE_COUNT; t++) {
        CHECK(strcmp(sc_type_name((sc_type)t), names[t]) == 0);
        CHECK(sc_type_bits((sc_type)t) == bits[t]);
        CHECK(sc_type_size((sc_type)t) == size[t]);
        CHECK(sc_type_is_float((sc_type)t) == (t == SC_F32));
        CHECK(sc_type_is_signed((sc_type)t) ==
              (t == SC_I8 || t == SC_I16 || t == SC_I32 || t == SC_F32));
    }
}

static void test_buffer_new(void)
{
    int mn[3] = {-2, 5, 0}, ext[3] = {4, 3, 2};
    sc_buffer *b = sc_buffer_new(SC_I16, 3, mn, ext);
    CHECK(b && b->ndims == 3 && b->type == SC_I16);
    CHECK(b->stride[0] == 1 && b->stride[1] == 4 && b->stride[2] == 12);
    CHECK(b->min[0] == -2 && b->min[1] == 5 && b->extent[2] == 2);
    CHECK(sc_buffer_count(b) == 24);
    int zero = 1;
    for (int i = 0; i < 24; i++)
        zero &= ((int16_t *)b->data)[i] == 0;
    CHECK(zero);
    sc_buffer_free(b);
    sc_buffer_free(NULL);

    b = sc_buffer_new(SC_U8, 2, NULL, ext);
    CHECK(b && b->min[0] == 0 && b->min[1] == 0);
    sc_buffer_free(b);

    int big[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, bad0[2] = {3, 0},
        neg[2] = {3, -1}, edge[1] = {INT32_MAX}, two[1] = {2};
    CHECK(sc_buffer_new(SC_U8, 0, NULL, ext) == NULL);
    CHECK(sc_buffer_new(SC_U8, SC_MAX_DIMS + 1, NULL, big) == NULL);
    CHECK(sc_buffer_new(SC_U8, 2, NULL, bad0) == NULL);
    CHECK(sc_buffer_new(SC_U8, 2, NULL, neg) == NULL);
    CHECK(sc_buffer_new(SC_F32, 3, NULL, big) == NULL);
    CHECK(sc_buffer_new(SC_U8, 1, edge, two) == NULL);   /* max coord overflows */
    CHECK(sc_buffer_new(SC_TYPE_COUNT, 1, NULL, two) == NULL);
    CHECK(sc_buffer_new(SC_U8, 1, NULL, NULL) == NULL);
}

static void test_buffer_get_set(void)
{
    int mn[2] = {10, -3}, ext[2] = {3, 2};
    sc_buffer *b = sc_buffer_new(SC_F32, 2, mn, ext);
    int c[2] = {12, -2};
    sc_buffer_set(b, c, 0.25);
    CHECK(sc_buffer_get(b, c) == 0.25);
    CHECK(((float *)b->data)[2 + 1 * 3] == 0.25f);
    sc_buffer_set(b, c, 1e300);
    CHECK(isinf(sc_buffer_get(b, c)) && sc_buffer_get(b, c) > 0);
    sc_buffer_free(b);

    /* Integer stores truncate toward zero and wrap; NaN stores 0. */
    static const struct { sc_type t; double in, out; } cases[] = {
        {SC_U8, 256, 0}, {SC_U8, -1, 255}, {SC_U8, 3.9, 3}, {SC_U8, NAN, 0},
        {SC_I8, 200, -56}, {SC_I8, -128, -128}, {SC_I8, -3.7, -3},
        {SC_U16, 65537, 1}, {SC_I16, 32768, -32768}, {SC_U32, -1, 4294967295.0},
        {SC_I32, 2147483648.0, -2147483648.0}, {SC_I32, -7, -7},
        {SC_BOOL, 5, 1}, {SC_BOOL, 0, 0}, {SC_BOOL, -0.5, 1},
        {SC_F32, 1e40, INFINITY}, {SC_F32, -1.5, -1.5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int one = 1, at = 0;
        sc_buffer *s = sc_buffer_new(cases[i].t, 1, NULL, &one);
        sc_buffer_set(s, &at, cases[i].in);
        double got = sc_buffer_get(s, &at);
        if (got != cases[i].out)
            fprintf(stderr, "  %s set %g got %g\n", sc_type_name(cases[i].t),
                    cases[i].in, got);
        CHECK(got == cases[i].out);
        sc_buffer_free(s);
    }
}

static void test_fill_random(void)
{
    int ext[2] = {64, 64};
    for (int t = 0; t < SC_TYPE_COUNT; t++) {
        sc_buffer *a = sc_buffer_new((sc_type)t, 2, NULL, ext);
        sc_buffer *b = sc_buffer_new((sc_type)t, 2, NULL, ext);
        sc_buffer *c = sc_buffer_new((sc_type)t, 2, NULL, ext);
        sc_buffer_fill_random(a, 42);
        sc_buffer_fill_random(b, 42);
        sc_buffer_fill_random(c, 43);
        CHECK(same_buffer(a, b));
        CHECK(!same_buffer(a, c));
        double lo = INFINITY, hi = -INFINITY;
        int nonint = 0;
        for (int i = 0; i < 64 * 64; i++) {
            int xy[2] = {i % 64, i / 64};
            double v = sc_buffer_get(a, xy);
            lo = fmin(lo, v);
            hi = fmax(hi, v);
            nonint |= v != floor(v);
        }
        /* Whole range (nearly reached by 4096 draws) or the fixed one. */
        double want_lo = 0, want_hi = 1;
        switch ((sc_type)t) {
        case SC_U8:  want_hi = 255; break;
        case SC_U16: want_hi = 65535; break;
        case SC_I8:  want_lo = -128; want_hi = 127; break;
        case SC_I16: want_lo = -32768; want_hi = 32767; break;
        case SC_U32: case SC_I32: want_hi = 1023; break;
        default: break;
        }
        double slack = (want_hi - want_lo) * 0.02;
        if (t == SC_F32) {
            CHECK(lo >= 0 && hi < 1 && lo < 0.01 && hi > 0.99 && nonint);
        } else {
            CHECK(lo >= want_lo && hi <= want_hi);
            CHECK(lo <= want_lo + slack && hi >= want_hi - slack);
        }
        sc_buffer_free(a);
        sc_buffer_free(b);
        sc_buffer_free(c);
    }
    /* The pattern is fixed: a changed generator changes every test input. */
    int n = 1000;
    sc_buffer *u = sc_buffer_new(SC_U32, 1, NULL, &n);
    sc_buffer_fill_random(u, 7);
    uint64_t sum = 0;
    for (int i = 0; i < n; i++)
        sum = sum * 31 + ((uint32_t *)u->data)[i];
    sc_buffer_free(u);
    /* Recompute the same pattern for a 3-D buffer with a nonzero min: the
     * value depends only on the element's position in storage order. */
    int mn[3] = {-5, 7, 1}, ext3[3] = {10, 25, 4};
    sc_buffer *v = sc_buffer_new(SC_U32, 3, mn, ext3);
    sc_buffer_fill_random(v, 7);
    uint64_t sum3 = 0;
    for (int i = 0; i < n; i++)
        sum3 = sum3 * 31 + ((uint32_t *)v->data)[i];
    sc_buffer_free(v);
    CHECK(sum == sum3);
    CHECK(sum == 0xe0ec4459349e5f7aull);    /* first values 222 763 435 533 */
}

/* ---- PNG ---------------------------------------------------------------------- */

/* Saves b, loads it back and checks it equals want (b itself if NULL). */
static void png_roundtrip(const char *name, const sc_buffer *b,
                          const sc_buffer *want)
{
    char err[512] = "";
    const char *path = tpath(name);
    CHECK(io_save(path, b, err, sizeof err) == 0);
    sc_buffer *r = io_load(path, err, sizeof err);
    if (!r)
        fprintf(stderr, "  %s\n", err);
    CHECK(same_buffer(r, want ? want : b));
    sc_buffer_free(r);
}

static void test_png_roundtrip(void)
{
    int g[2] = {37, 23}, rgb[3] = {17, 9, 3}, rgba[3] = {8, 5, 4}, ga[3] = {6, 7, 2};
    sc_buffer *b = sc_buffer_new(SC_U8, 2, NULL, g);
    sc_buffer_fill_random(b, 1);
    png_roundtrip("gray8.png", b, NULL);
    sc_buffer_free(b);

    b = sc_buffer_new(SC_U16, 3, NULL, rgb);
    sc_buffer_fill_random(b, 2);
    png_roundtrip("rgb16.png", b, NULL);
    sc_buffer_free(b);

    b = sc_buffer_new(SC_U8, 3, NULL, rgba);
    sc_buffer_fill_random(b, 3);
    png_roundtrip("rgba8.png", b, NULL);
    sc_buffer_free(b);

    b = sc_buffer_new(SC_U16, 3, NULL, ga);
    sc_buffer_fill_random(b, 4);
    png_roundtrip("ga16.png", b, NULL);
    sc_buffer_free(b);

    /* A nonzero min does not matter; 3-D with one channel reads as gray. */
    int mn[3] = {-4, 9, 0}, one[3] = {5, 4, 1};
    b = sc_buffer_new(SC_U8, 3, mn, one);
    sc_buffer_fill_random(b, 5);
    sc_buffer *want = sc_buffer_new(SC_U8, 2, NULL, one);
    memcpy(want->data, b->data, 20);
    png_roundtrip("one.png", b, want);
    sc_buffer_free(b);
    sc_buffer_free(want);
}

static void test_png_convert(void)
{
    int ext[2] = {6, 1}, xy[2] = {0, 0};
    static const double fin[6] = {-1, 0, 0.5, 1, 2, NAN};
    static const double fout[6] = {0, 0, 32768, 65535, 65535, 0};
    static const double iin[6] = {-5, 0, 7, 65535, 65536, 1e6};
    static const double iout[6] = {0, 0, 7, 65535, 65535, 65535};
    sc_buffer *f = sc_buffer_new(SC_F32, 2, NULL, ext);
    sc_buffer *i = sc_buffer_new(SC_I32, 2, NULL, ext);
    sc_buffer *wf = sc_buffer_new(SC_U16, 2, NULL, ext);
    sc_buffer *wi = sc_buffer_new(SC_U16, 2, NULL, ext);
    for (xy[0] = 0; xy[0] < 6; xy[0]++) {
        sc_buffer_set(f, xy, fin[xy[0]]);
        sc_buffer_set(i, xy, iin[xy[0]]);
        sc_buffer_set(wf, xy, fout[xy[0]]);
        sc_buffer_set(wi, xy, iout[xy[0]]);
    }
    png_roundtrip("f32.png", f, wf);
    png_roundtrip("i32.png", i, wi);

    char err[512];
    int e1[1] = {5}, e4[4] = {2, 2, 2, 2}, e5[3] = {2, 2, 5};
    sc_buffer *b1 = sc_buffer_new(SC_U8, 1, NULL, e1);
    sc_buffer *b4 = sc_buffer_new(SC_U8, 4, NULL, e4);
    sc_buffer *b5 = sc_buffer_new(SC_U8, 3, NULL, e5);
    const char *p = tpath("bad.png");
    CHECK(io_save(p, b1, err, sizeof err) == -1 && starts_with(err, p) &&
          strstr(err, "1-D"));
    CHECK(io_save(p, b4, err, sizeof err) == -1 && strstr(err, "4-D"));
    CHECK(io_save(p, b5, err, sizeof err) == -1 && strstr(err, "channels"));
    CHECK(access(p, F_OK) != 0);
    CHECK(io_save(tpath("x.tiff"), b5, err, sizeof err) == -1 &&
          strstr(err, "x.tiff: unknown file type"));
    CHECK(io_save("/nonexistent-dir/x.png", f, err, sizeof err) == -1 &&
          strstr(err, "/nonexistent-dir/x.png: cannot create"));
    sc_buffer_free(b1);
    sc_buffer_free(b4);
    sc_buffer_free(b5);
    sc_buffer_free(f);
    sc_buffer_free(i);
    sc_buffer_free(wf);
    sc_buffer_free(wi);
}

/* Writes a PNG with libpng: w x h, given color type and depth, rows of
 * packed samples; a palette of np entries with ntrns alpha values. */
static void write_raw_png(const char *path, int w, int h, int color, int depth,
                          int interlace, const uint8_t *rows, size_t rowbytes,
                          const png_color *pal, int np, const uint8_t *trns,
                          int ntrns)
{
    FILE *f = fopen(path, "wb");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
                                              NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (!f || !png || !info || setjmp(png_jmpbuf(png)))
        abort();
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, color,
                 interlace, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (np)
        png_set_PLTE(png, info, pal, np);
    if (ntrns)
        png_set_tRNS(png, info, trns, ntrns, NULL);
    png_write_info(png, info);
    int passes = png_set_interlace_handling(png);
    for (int p = 0; p < passes; p++)
        for (int y = 0; y < h; y++)
            png_write_row(png, rows + (size_t)y * rowbytes);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

/* Reads a PNG with libpng, no transforms: interleaved file samples (16-bit
 * ones big-endian) in a malloc'ed block, and the header fields. */
static uint8_t *read_raw_png(const char *path, int *w, int *h, int *channels,
                             int *depth)
{
    FILE *f = fopen(path, "rb");
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL,
                                             NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (!f || !png || !info || setjmp(png_jmpbuf(png)))
        abort();
    png_init_io(png, f);
    png_read_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
    *w = (int)png_get_image_width(png, info);
    *h = (int)png_get_image_height(png, info);
    *channels = png_get_channels(png, info);
    *depth = png_get_bit_depth(png, info);
    size_t rb = png_get_rowbytes(png, info);
    png_bytepp rows = png_get_rows(png, info);
    uint8_t *out = malloc(rb * (size_t)*h);
    for (int y = 0; y < *h; y++)
        memcpy(out + rb * (size_t)y, rows[y], rb);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
    return out;
}

static void test_png_layouts(void)
{
    /* Our files as libpng sees them: channels interleaved in the file,
     * the slowest dimension in the buffer; 16-bit samples big-endian. */
    int e[3] = {2, 1, 3}, w, h, ch, depth;
    sc_buffer *rgb = sc_buffer_new(SC_U16, 3, NULL, e);
    for (int i = 0; i < 6; i++)                  /* planes R R, G G, B B */
        ((uint16_t *)rgb->data)[i] = (uint16_t)(0x0100 * (i + 1) + i);
    CHECK(io_save(tpath("raw16.png"), rgb, NULL, 0) == 0);
    sc_buffer_free(rgb);
    uint8_t *raw = read_raw_png(tpath("raw16.png"), &w, &h, &ch, &depth);
    CHECK(w == 2 && h == 1 && ch == 3 && depth == 16);
    static const uint8_t rawwant[12] = {1, 0, 3, 2, 5, 4, 2, 1, 4, 3, 6, 5};
    CHECK(memcmp(raw, rawwant, 12) == 0);
    free(raw);

    /* And the other way: big-endian 16-bit gray from libpng. */
    const uint8_t g16[2] = {0x01, 0x02};
    write_raw_png(tpath("g16.png"), 1, 1, PNG_COLOR_TYPE_GRAY, 16, 0, g16, 2,
                  NULL, 0, NULL, 0);
    sc_buffer *k = io_load(tpath("g16.png"), NULL, 0);
    CHECK(k && k->type == SC_U16 && ((uint16_t *)k->data)[0] == 0x0102);
    sc_buffer_free(k);

    char err[512] = "";
    /* 2-bit gray, 5 x 2: samples 0..3 scale to 0, 85, 170, 255. */
    const uint8_t g2[4] = {0x1B, 0xC0, 0xE4, 0x40};  /* 0 1 2 3 | 3 ; 3 2 1 0 | 1 */
    write_raw_png(tpath("g2.png"), 5, 2, PNG_COLOR_TYPE_GRAY, 2, 0, g2, 2,
                  NULL, 0, NULL, 0);
    sc_buffer *b = io_load(tpath("g2.png"), err, sizeof err);
    CHECK(b && b->type == SC_U8 && b->ndims == 2 && b->extent[0] == 5 &&
          b->extent[1] == 2);
    static const uint8_t g2want[10] = {0, 85, 170, 255, 255, 255, 170, 85, 0, 85};
    CHECK(b && memcmp(b->data, g2want, 10) == 0);
    sc_buffer_free(b);

    /* 4-bit palette, 3 x 1, without and with transparency. */
    const png_color pal[3] = {{10, 20, 30}, {40, 50, 60}, {70, 80, 90}};
    const uint8_t p4[2] = {0x21, 0x00};               /* indices 2 1 0 */
    write_raw_png(tpath("pal.png"), 3, 1, PNG_COLOR_TYPE_PALETTE, 4, 0, p4, 2,
                  pal, 3, NULL, 0);
    b = io_load(tpath("pal.png"), err, sizeof err);
    CHECK(b && b->type == SC_U8 && b->ndims == 3 && b->extent[2] == 3);
    static const uint8_t pwant[9] = {70, 80, 90, 40, 50, 60, 10, 20, 30};
    /* dims (W, H, C): channel is the slowest dimension. */
    if (b) {
        for (int x = 0; x < 3; x++)
            for (int ch = 0; ch < 3; ch++) {
                int c3[3] = {x, 0, ch};
                CHECK(sc_buffer_get(b, c3) == pwant[3 * x + ch]);
            }
    }
    sc_buffer_free(b);

    /* Adam7-interlaced RGB, 9 x 7: channel c of pixel (x, y) = x + 9y + 64c. */
    uint8_t il[7 * 27];
    for (int i = 0; i < 7 * 27; i++)
        il[i] = (uint8_t)(i / 3 + 64 * (i % 3));
    write_raw_png(tpath("adam7.png"), 9, 7, PNG_COLOR_TYPE_RGB, 8, 1, il, 27,
                  NULL, 0, NULL, 0);
    b = io_load(tpath("adam7.png"), err, sizeof err);
    CHECK(b && b->ndims == 3 && b->extent[0] == 9 && b->extent[2] == 3);
    for (int i = 0; b && i < 9 * 7 * 3; i++)
        CHECK(((uint8_t *)b->data)[i] == i % 63 + 64 * (i / 63));
    sc_buffer_free(b);

    const uint8_t trns[2] = {0, 128};
    write_raw_png(tpath("palt.png"), 3, 1, PNG_COLOR_TYPE_PALETTE, 4, 0, p4, 2,
                  pal, 3, trns, 2);
    b = io_load(tpath("palt.png"), err, sizeof err);
    CHECK(b && b->ndims == 3 && b->extent[2] == 4);
    if (b) {
        int a0[3] = {0, 0, 3}, a1[3] = {1, 0, 3}, a2[3] = {2, 0, 3};
        CHECK(sc_buffer_get(b, a0) == 255 && sc_buffer_get(b, a1) == 128 &&
              sc_buffer_get(b, a2) == 0);
    }
    sc_buffer_free(b);
}

static void test_png_corrupt(void)
{
    char err[512];
    int ext[3] = {9, 7, 3};
    sc_buffer *b = sc_buffer_new(SC_U8, 3, NULL, ext);
    sc_buffer_fill_random(b, 9);
    const char *good = tpath("good.png"), *bad = tpath("corrupt.png");
    CHECK(io_save(good, b, err, sizeof err) == 0);
    sc_buffer_free(b);
    size_t n;
    uint8_t *bytes = read_bytes(good, &n);
    CHECK(bytes && n > 60);
    if (!bytes)
        return;

    /* Every truncation fails cleanly. */
    int all = 1;
    for (size_t len = 0; len < n; len++) {
        write_bytes(bad, bytes, len);
        all &= load_fails(bad, len < 8 ? "not a PNG" : NULL);
    }
    CHECK(all);

    /* Every single flipped byte: never a crash; where the load fails, the
     * message names the file.  Signature, header and data flips must fail
     * (their CRCs no longer match). */
    for (size_t i = 0; i < n; i++) {
        bytes[i] ^= 0x41;
        write_bytes(bad, bytes, n);
        sc_buffer *r = io_load(bad, err, sizeof err);
        if (r)
            sc_buffer_free(r);
        else
            CHECK(starts_with(err, bad));
        if (i < 40)
            CHECK(!r);
        bytes[i] ^= 0x41;
    }
    bytes[12] = 'X';                                   /* IHDR -> XHDR */
    write_bytes(bad, bytes, n);
    CHECK(load_fails(bad, "corrupt or truncated PNG"));
    free(bytes);

    write_bytes(bad, "\x89PNG\r\n\x1a\n", 8);
    CHECK(load_fails(bad, "corrupt or truncated PNG"));
    write_bytes(bad, "GIF89a..........", 16);
    CHECK(load_fails(bad, "not a PNG"));
    CHECK(load_fails(tpath("missing.png"), "cannot open"));
    CHECK(load_fails(tpath("file.bmp"), "unknown file type"));
}

/* ---- .npy ----------------------------------------------------------------------- */

static void test_npy_roundtrip(void)
{
    char err[512] = "";
    int e3[3] = {5, 4, 3}, e1[1] = {7}, e6[6] = {2, 1, 3, 1, 2, 2};
    for (int t = 0; t < SC_TYPE_COUNT; t++) {
        const int *exts[3] = {e3, e1, e6};
        const int nd[3] = {3, 1, 6};
        for (int k = 0; k < 3; k++) {
            char name[32];
            snprintf(name, sizeof name, "%s_%d.npy", sc_type_name((sc_type)t), k);
            sc_buffer *b = sc_buffer_new((sc_type)t, nd[k], NULL, exts[k]);
            sc_buffer_fill_random(b, (uint64_t)(t * 10 + k));
            CHECK(io_save(tpath(name), b, err, sizeof err) == 0);
            sc_buffer *r = io_load(tpath(name), err, sizeof err);
            if (!r)
                fprintf(stderr, "  %s\n", err);
            if (t == SC_BOOL)               /* '|b1' loads as u8 (0 or 1) */
                b->type = SC_U8;
            CHECK(same_buffer(b, r));
            sc_buffer_free(b);
            sc_buffer_free(r);
        }
    }
    /* The header numpy expects: v1.0, 64-byte aligned, shape reversed. */
    size_t n;
    uint8_t *p = read_bytes(tpath("i16_0.npy"), &n);
    CHECK(p && memcmp(p, "\x93NUMPY\x01\x00", 8) == 0);
    if (p) {
        size_t hlen = (size_t)p[8] | (size_t)p[9] << 8;
        CHECK((10 + hlen) % 64 == 0 && p[10 + hlen - 1] == '\n');
        p[10 + hlen - 1] = 0;
        CHECK(strstr((char *)p + 10, "{'descr': '<i2', 'fortran_order': False, "
                     "'shape': (3, 4, 5), }") != NULL);
        CHECK(n == 10 + hlen + 60 * 2);
    }
    free(p);
    p = read_bytes(tpath("f32_1.npy"), &n);
    CHECK(p && strstr((char *)p + 10, "'shape': (7,)"));
    free(p);
}

/* Writes a .npy of the given version with dict text, padded, then data. */
static void make_npy(const char *path, int major, const char *dict,
                     const void *data, size_t n)
{
    uint8_t buf[1024];
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = (pre + dl + 1 + 63) / 64 * 64, hlen = total - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)major;
    buf[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        buf[8 + i] = (uint8_t)(hlen >> (8 * i));
    memcpy(buf + pre, dict, dl);
    memset(buf + pre + dl, ' ', hlen - dl - 1);
    buf[total - 1] = '\n';
    memcpy(buf + total, data, n);
    write_bytes(path, buf, total + n);
}

static void test_npy_foreign(void)
{
    char err[512] = "";
    /* v2.0, double quotes, keys reordered, no trailing comma: a (2, 3) <i2
     * array 0..5 little-endian. */
    const uint8_t i2[12] = {0, 0, 1, 0, 2, 0, 3, 0, 0xff, 0xff, 0, 0x80};
    make_npy(tpath("v2.npy"), 2,
             "{\"shape\": (2, 3), \"fortran_order\": False, \"descr\": \"<i2\"}",
             i2, sizeof i2);
    sc_buffer *b = io_load(tpath("v2.npy"), err, sizeof err);
    CHECK(b && b->type == SC_I16 && b->ndims == 2 && b->extent[0] == 3 &&
          b->extent[1] == 2);
    if (b) {
        int c[2] = {1, 1}, c2[2] = {2, 1};
        CHECK(sc_buffer_get(b, c) == -1 && sc_buffer_get(b, c2) == -32768);
    }
    sc_buffer_free(b);

    /* Bool arrays load as u8, bytes other than 0/1 becoming 1; a 0-D array
     * is one element;
     * Python 2 long suffixes are accepted. */
    const uint8_t b1[3] = {0, 7, 1};
    make_npy(tpath("bool.npy"), 1,
             "{'descr': '|b1', 'fortran_order': False, 'shape': (3L,), }", b1, 3);
    b = io_load(tpath("bool.npy"), err, sizeof err);
    CHECK(b && b->type == SC_U8 && b->extent[0] == 3);
    CHECK(b && memcmp(b->data, "\0\1\1", 3) == 0);
    sc_buffer_free(b);

    const uint8_t f1[4] = {0, 0, 0xc0, 0x3f};              /* 1.5f */
    make_npy(tpath("scalar.npy"), 1,
             "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", f1, 4);
    b = io_load(tpath("scalar.npy"), err, sizeof err);
    CHECK(b && b->ndims == 1 && b->extent[0] == 1 &&
          ((float *)b->data)[0] == 1.5f);
    sc_buffer_free(b);
}

static void test_npy_errors(void)
{
    static const uint8_t zeros[64];
    static const struct { const char *dict; const char *want; size_t n; } cases[] = {
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
         "unsupported dtype '<f8' (expected one of", 16},
        {"{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }",
         "unsupported dtype '>i4'", 8},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
         "'descr'", 8},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
         "fortran_order True", 16},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
         "truncated data (expected 4 elements of f32, got 3)", 12},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
         "longer than", 12},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1), }",
         "more than 6 dimensions", 1},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (100000, 100000, "
         "100000, 100000), }", "more than 2147483648 elements", 0},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (65536, 32769), }",
         "more than 2147483648 elements", 0},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999,), }",
         "shape dimension too large", 0},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (3, 0), }",
         "empty arrays", 0},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (-3,), }",
         "malformed 'shape'", 0},
        {"{'descr': '|u1', 'fortran_order': False}", "lacks 'shape'", 0},
        {"{'descr': '|u1', 'fortran_order': 0, 'shape': (1,)}",
         "malformed header dict", 1},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (1,), 'x': 1}",
         "unknown header key 'x'", 1},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (1,) junk",
         "malformed header dict", 1},
        {"", "malformed header dict", 0},
    };
    char name[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(name, sizeof name, "err%zu.npy", i);
        make_npy(tpath(name), 1, cases[i].dict, zeros, cases[i].n);
        CHECK(load_fails(tpath(name), cases[i].want));
    }

    const char *p = tpath("raw.npy");
    write_bytes(p, "\x93NUMPX\x01\x00\x10\x00", 10);
    CHECK(load_fails(p, "not a .npy file"));
    write_bytes(p, "\x93NUMPY\x04\x00\x10\x00", 10);
    CHECK(load_fails(p, "unsupported .npy version 4.0"));
    write_bytes(p, "\x93NUMPY\x02\x00\xff\xff\xff\xff", 12);
    CHECK(load_fails(p, "header length 4294967295 is absurd"));
    write_bytes(p, "\x93NUMPY\x01\x00\x40\x00{'descr'", 17);
    CHECK(load_fails(p, "truncated header"));

    /* Every truncation of a good file fails cleanly. */
    int ext[2] = {3, 5};
    sc_buffer *b = sc_buffer_new(SC_I32, 2, NULL, ext);
    char err[512];
    CHECK(io_save(tpath("good.npy"), b, err, sizeof err) == 0);
    sc_buffer_free(b);
    size_t n;
    uint8_t *bytes = read_bytes(tpath("good.npy"), &n);
    int all = 1;
    for (size_t len = 0; bytes && len < n; len++) {
        write_bytes(p, bytes, len);
        all &= load_fails(p, NULL);
    }
    CHECK(all);
    free(bytes);
    CHECK(load_fails(tpath("missing.npy"), "cannot open"));
}

int main(void)
{
    strcpy(tmpdir, "/tmp/sc_test_imageio.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_types);
    RUN(test_buffer_new);
    RUN(test_buffer_get_set);
    RUN(test_fill_random);
    RUN(test_png_roundtrip);
    RUN(test_png_convert);
    RUN(test_png_layouts);
    RUN(test_png_corrupt);
    RUN(test_npy_roundtrip);
    RUN(test_npy_foreign);
    RUN(test_npy_errors);
    for (int i = 0; i < nmade; i++) {
        remove(made[i]);
        free(made[i]);
    }
    rmdir(tmpdir);
    CHECK_EXIT();
}
