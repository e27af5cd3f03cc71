/*
 * imageio.c - PNG through libpng, NumPy .npy by hand.
 *
 * Every error message starts with the file's path and says what was wrong
 * and, where it helps, what was expected.  Nothing here exits or prints;
 * malformed input of any kind is a clean error, never a crash.
 *
 * .npy format (numpy.lib.format): the magic "\x93NUMPY", a major and minor
 * version byte, the header length (2 bytes little-endian in v1.0, 4 in v2.0
 * and v3.0), then an ASCII Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (480, 640), }
 * padded with spaces and a newline, then the data in C order.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "imageio.h"

/* Larger arrays or images are refused (a guard against absurd headers). */
#define IO_MAX_ELEMS ((int64_t)1 << 31)
/* Longest .npy header accepted (numpy itself refuses more than 10000). */
#define NPY_MAX_HEADER (1 << 20)

/* The file being worked on and where its error message goes. */
typedef struct {
    const char *path;
    char *err;              /* may be NULL */
    size_t errlen;
} io_ctx;

/* "path: message" into io->err. */
static void __attribute__((format(printf, 2, 3)))
io_err(const io_ctx *io, const char *fmt, ...)
{
    if (!io->err || io->errlen == 0)
        return;
    int n = snprintf(io->err, io->errlen, "%s: ", io->path);
    if (n < 0 || (size_t)n >= io->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(io->err + n, io->errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

/* Nonzero when path ends with ext, ignoring case. */
static int has_ext(const char *path, const char *ext)
{
    size_t n = strlen(path), m = strlen(ext);
    return n >= m && strcasecmp(path + n - m, ext) == 0;
}

/* ---- PNG -------------------------------------------------------------------- */

/*
 * State shared between a PNG function and libpng's callbacks.  It lives in
 * the caller of the function that calls setjmp, so nothing the longjmp
 * path reads is an indeterminate local (C11 7.13.2.1).
 */
typedef struct {
    io_ctx io;
    FILE *f;
    png_structp png;
    png_infop info;
    sc_buffer *buf;         /* read: the result so far */
    uint8_t *pixels;        /* samples as the file has them, interleaved */
    char msg[256];          /* libpng's message */
} png_ctx;

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_ctx *c = png_get_error_ptr(png);
    snprintf(c->msg, sizeof c->msg, "%s", msg);
    png_longjmp(png, 1);
}

/* Warnings (e.g. odd iCCP profiles) are not errors: ignored. */
static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png, (void)msg;
}

/* libpng's read callback; says why a read came up short. */
static void png_on_read(png_structp png, png_bytep data, size_t n)
{
    png_ctx *c = png_get_io_ptr(png);
    if (fread(data, 1, n, c->f) != n)
        png_error(png, ferror(c->f) ? "read error" : "unexpected end of file");
}

/* Decodes an opened PNG into c->buf.  Returns 0, or -1 with the error set. */
static int png_read_body(png_ctx *c)
{
    if (setjmp(png_jmpbuf(c->png))) {
        io_err(&c->io, "corrupt or truncated PNG: %s", c->msg);
        return -1;
    }
    png_set_read_fn(c->png, c, png_on_read);
    png_set_sig_bytes(c->png, 8);
    png_read_info(c->png, c->info);

    int color = png_get_color_type(c->png, c->info);
    int depth = png_get_bit_depth(c->png, c->info);
    if (color == PNG_COLOR_TYPE_PALETTE) {
        png_set_palette_to_rgb(c->png);
        /* A palette with transparency becomes RGBA rather than losing it. */
        if (png_get_valid(c->png, c->info, PNG_INFO_tRNS))
            png_set_tRNS_to_alpha(c->png);
    } else if (color == PNG_COLOR_TYPE_GRAY && depth < 8) {
        png_set_expand_gray_1_2_4_to_8(c->png);
    }
    int passes = png_set_interlace_handling(c->png);
    png_read_update_info(c->png, c->info);

    png_uint_32 w = png_get_image_width(c->png, c->info);
    png_uint_32 h = png_get_image_height(c->png, c->info);
    int channels = png_get_channels(c->png, c->info);
    depth = png_get_bit_depth(c->png, c->info);
    size_t rowbytes = (size_t)w * (size_t)channels * (size_t)(depth / 8);
    if ((depth != 8 && depth != 16) || channels < 1 || channels > 4 ||
        png_get_rowbytes(c->png, c->info) != rowbytes) {
        io_err(&c->io, "unsupported PNG layout (%d-bit, %d channels after "
               "expansion)", depth, channels);
        return -1;
    }
    if (w > INT_MAX || h > INT_MAX || (int64_t)w * h * channels > IO_MAX_ELEMS) {
        io_err(&c->io, "image %lux%lu with %d channels is too large (limit "
               "%lld samples)", (unsigned long)w, (unsigned long)h, channels,
               (long long)IO_MAX_ELEMS);
        return -1;
    }
    int ext[3] = {(int)w, (int)h, channels};
    c->buf = sc_buffer_new(depth == 16 ? SC_U16 : SC_U8, channels == 1 ? 2 : 3,
                           NULL, ext);
    c->pixels = malloc((size_t)h * rowbytes);
    if (!c->buf || !c->pixels) {
        io_err(&c->io, "out of memory for a %lux%lu image", (unsigned long)w,
               (unsigned long)h);
        return -1;
    }
    for (int pass = 0; pass < passes; pass++)       /* Adam7: 7 passes */
        for (png_uint_32 y = 0; y < h; y++)
            png_read_row(c->png, c->pixels + (size_t)y * rowbytes, NULL);
    png_read_end(c->png, NULL);

    /* The file interleaves channels (and stores 16-bit samples
     * big-endian); the buffer has the channel as its slowest dimension. */
    size_t plane = (size_t)w * h;
    for (size_t i = 0; i < plane; i++)
        for (int ch = 0; ch < channels; ch++) {
            size_t src = i * (size_t)channels + (size_t)ch;
            size_t dst = (size_t)ch * plane + i;
            if (depth == 8)
                ((uint8_t *)c->buf->data)[dst] = c->pixels[src];
            else
                ((uint16_t *)c->buf->data)[dst] = (uint16_t)
                    (c->pixels[2 * src] << 8 | c->pixels[2 * src + 1]);
        }
    return 0;
}

static sc_buffer *png_load(const io_ctx *io)
{
    png_ctx c = {.io = *io};
    c.f = fopen(io->path, "rb");
    if (!c.f) {
        io_err(io, "cannot open: %s", strerror(errno));
        return NULL;
    }
    unsigned char sig[8];
    if (fread(sig, 1, sizeof sig, c.f) != sizeof sig ||
        png_sig_cmp(sig, 0, sizeof sig) != 0) {
        io_err(io, "not a PNG file (bad or missing signature)");
        fclose(c.f);
        return NULL;
    }
    int ok = -1;
    c.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &c, png_on_error,
                                   png_on_warning);
    if (c.png)
        c.info = png_create_info_struct(c.png);
    if (!c.png || !c.info)
        io_err(io, "out of memory (libpng)");
    else
        ok = png_read_body(&c);
    png_destroy_read_struct(c.png ? &c.png : NULL, c.info ? &c.info : NULL, NULL);
    free(c.pixels);
    fclose(c.f);
    if (ok != 0) {
        sc_buffer_free(c.buf);
        return NULL;
    }
    return c.buf;
}

/*
 * Converts b (W, H[, C]) into interleaved PNG samples in c->pixels: u8
 * stays 8-bit, u16 16-bit (big-endian, as the file wants), f32 maps [0, 1]
 * to [0, 65535] with clamping (NaN gives 0), every other type clamps to
 * [0, 65535].
 */
static int png_pack(png_ctx *c, const sc_buffer *b, int channels, int depth)
{
    int w = b->extent[0], h = b->extent[1];
    c->pixels = malloc((size_t)w * (size_t)h * (size_t)channels *
                       (size_t)(depth / 8));
    if (!c->pixels)
        return -1;
    size_t i = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int ch = 0; ch < channels; ch++, i++) {
                int at[3] = {b->min[0] + x, b->min[1] + y, b->min[2] + ch};
                double v = sc_buffer_get(b, at);
                if (depth == 8) {
                    c->pixels[i] = (uint8_t)v;          /* b is u8 */
                    continue;
                }
                if (b->type == SC_F32)
                    v = v * 65535.0 + 0.5;
                v = isnan(v) ? 0 : v < 0 ? 0 : v > 65535 ? 65535 : v;
                unsigned s = (unsigned)v;
                c->pixels[2 * i] = (uint8_t)(s >> 8);
                c->pixels[2 * i + 1] = (uint8_t)s;
            }
    return 0;
}

/* Encodes c->pixels (w x h, channels) to the opened c->f. */
static int png_write_body(png_ctx *c, int w, int h, int channels, int depth)
{
    static const int color_of[5] = {0, PNG_COLOR_TYPE_GRAY,
        PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGBA};
    if (setjmp(png_jmpbuf(c->png))) {
        io_err(&c->io, "cannot write PNG: %s", c->msg);
        return -1;
    }
    png_init_io(c->png, c->f);
    png_set_IHDR(c->png, c->info, (png_uint_32)w, (png_uint_32)h, depth,
                 color_of[channels], PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(c->png, c->info);
    size_t rowbytes = (size_t)w * (size_t)channels * (size_t)(depth / 8);
    for (int y = 0; y < h; y++)
        png_write_row(c->png, c->pixels + (size_t)y * rowbytes);
    png_write_end(c->png, NULL);
    return 0;
}

static int png_save(const io_ctx *io, const sc_buffer *b)
{
    int channels = b->ndims == 3 ? b->extent[2] : 1;
    if (b->ndims < 2 || b->ndims > 3 || channels > 4) {
        io_err(io, "cannot store a %d-D buffer%s as PNG (expected (W, H) or "
               "(W, H, C) with C in 1..4)", b->ndims,
               b->ndims == 3 ? " of more than 4 channels" : "");
        return -1;
    }
    if ((int64_t)b->extent[0] * channels > INT_MAX / 2) {
        io_err(io, "image width %d is too large for PNG", b->extent[0]);
        return -1;
    }
    int depth = b->type == SC_U8 ? 8 : 16;
    png_ctx c = {.io = *io};
    if (png_pack(&c, b, channels, depth) != 0) {
        io_err(io, "out of memory");
        return -1;
    }
    c.f = fopen(io->path, "wb");
    if (!c.f) {
        io_err(io, "cannot create: %s", strerror(errno));
        free(c.pixels);
        return -1;
    }
    int ok = -1;
    c.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &c, png_on_error,
                                    png_on_warning);
    if (c.png)
        c.info = png_create_info_struct(c.png);
    if (!c.png || !c.info)
        io_err(io, "out of memory (libpng)");
    else
        ok = png_write_body(&c, b->extent[0], b->extent[1], channels, depth);
    png_destroy_write_struct(c.png ? &c.png : NULL, c.info ? &c.info : NULL);
    free(c.pixels);
    if (fclose(c.f) != 0 && ok == 0) {
        io_err(io, "write failed: %s", strerror(errno));
        ok = -1;
    }
    if (ok != 0)
        remove(io->path);
    return ok;
}

/* ---- .npy ------------------------------------------------------------------- */

static const struct {
    const char *descr;
    sc_type type;
} npy_dtypes[] = {
    {"|u1", SC_U8}, {"<u2", SC_U16}, {"<u4", SC_U32}, {"|i1", SC_I8},
    {"<i2", SC_I16}, {"<i4", SC_I32}, {"<f4", SC_F32}, {"|b1", SC_BOOL},
};
#define NPY_NDTYPES (int)(sizeof npy_dtypes / sizeof npy_dtypes[0])
#define NPY_EXPECTED "'|u1', '<u2', '<u4', '|i1', '<i2', '<i4', '<f4', '|b1'"

/* The header, parsed. */
typedef struct {
    char descr[32];
    int fortran;            /* -1 until seen */
    int ndims;              /* -1 until seen */
    int shape[SC_MAX_DIMS];
} npy_header;

/* A cursor over the header's dict literal. */
typedef struct {
    const char *s, *end;
    const io_ctx *io;
} npy_scan;

static void npy_skip_space(npy_scan *sc)
{
    while (sc->s < sc->end && isspace((unsigned char)*sc->s))
        sc->s++;
}

/* Consumes ch (after white space) and returns 1, or returns 0. */
static int npy_accept(npy_scan *sc, char ch)
{
    npy_skip_space(sc);
    if (sc->s < sc->end && *sc->s == ch) {
        sc->s++;
        return 1;
    }
    return 0;
}

/* A quoted string ('...' or "...") into out; 0 or -1. */
static int npy_string(npy_scan *sc, char *out, size_t outlen)
{
    char q = npy_accept(sc, '\'') ? '\'' : npy_accept(sc, '"') ? '"' : 0;
    size_t n = 0;
    if (!q)
        return -1;
    while (sc->s < sc->end && *sc->s != q && n + 1 < outlen)
        out[n++] = *sc->s++;
    if (sc->s >= sc->end || *sc->s != q)
        return -1;
    sc->s++;
    out[n] = 0;
    return 0;
}

/* A literal word (True, False) at the cursor. */
static int npy_word(npy_scan *sc, const char *w)
{
    size_t n = strlen(w);
    npy_skip_space(sc);
    if ((size_t)(sc->end - sc->s) < n || memcmp(sc->s, w, n) != 0)
        return 0;
    sc->s += n;
    return 1;
}

/* The shape tuple: "()", "(5,)", "(2, 3)", trailing comma allowed. */
static int npy_shape(npy_scan *sc, npy_header *h)
{
    if (!npy_accept(sc, '('))
        goto bad;
    h->ndims = 0;
    while (!npy_accept(sc, ')')) {
        if (sc->s >= sc->end || !isdigit((unsigned char)*sc->s))
            goto bad;
        int v = 0;
        for (; sc->s < sc->end && isdigit((unsigned char)*sc->s); sc->s++) {
            if (v > (INT_MAX - (*sc->s - '0')) / 10) {
                io_err(sc->io, "shape dimension too large (limit %d)", INT_MAX);
                return -1;
            }
            v = v * 10 + (*sc->s - '0');
        }
        if (sc->s < sc->end && (*sc->s == 'L' || *sc->s == 'l'))
            sc->s++;                                /* Python 2 longs */
        if (h->ndims == SC_MAX_DIMS) {
            io_err(sc->io, "array has more than %d dimensions", SC_MAX_DIMS);
            return -1;
        }
        h->shape[h->ndims++] = v;
        if (!npy_accept(sc, ',')) {
            if (!npy_accept(sc, ')'))
                goto bad;
            break;
        }
    }
    return 0;
bad:
    io_err(sc->io, "malformed 'shape' in header (expected a tuple of "
           "integers)");
    return -1;
}

/* Parses the dict literal text[0..len).  0, or -1 with the error set. */
static int npy_parse_header(const io_ctx *io, const char *text, size_t len,
                            npy_header *h)
{
    npy_scan sc = {text, text + len, io};
    *h = (npy_header){.fortran = -1, .ndims = -1};
    if (!npy_accept(&sc, '{'))
        goto bad;
    while (!npy_accept(&sc, '}')) {
        char key[32];
        if (npy_string(&sc, key, sizeof key) != 0 || !npy_accept(&sc, ':'))
            goto bad;
        if (strcmp(key, "descr") == 0) {
            if (npy_string(&sc, h->descr, sizeof h->descr) != 0) {
                io_err(io, "unsupported or malformed 'descr' (expected one "
                       "of " NPY_EXPECTED ")");
                return -1;
            }
        } else if (strcmp(key, "fortran_order") == 0) {
            h->fortran = npy_word(&sc, "True") ? 1 : npy_word(&sc, "False")
                         ? 0 : -1;
            if (h->fortran < 0)
                goto bad;
        } else if (strcmp(key, "shape") == 0) {
            if (npy_shape(&sc, h) != 0)
                return -1;
        } else {
            io_err(io, "unknown header key '%s' (expected 'descr', "
                   "'fortran_order', 'shape')", key);
            return -1;
        }
        if (!npy_accept(&sc, ',')) {
            if (!npy_accept(&sc, '}'))
                goto bad;
            break;
        }
    }
    npy_skip_space(&sc);
    if (sc.s != sc.end)
        goto bad;
    if (!h->descr[0] || h->fortran < 0 || h->ndims < 0) {
        io_err(io, "header lacks '%s'", !h->descr[0] ? "descr" :
               h->fortran < 0 ? "fortran_order" : "shape");
        return -1;
    }
    return 0;
bad:
    io_err(io, "malformed header dict (expected e.g. {'descr': '<f4', "
           "'fortran_order': False, 'shape': (2, 3), })");
    return -1;
}

/* Reads the preamble and header of an open .npy file and allocates the
 * buffer it describes; *is_bool tells a '|b1' array (loaded as u8). */
static sc_buffer *npy_read_header(const io_ctx *io, FILE *f, int *is_bool)
{
    uint8_t pre[12];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        io_err(io, "not a .npy file (bad or missing magic \"\\x93NUMPY\")");
        return NULL;
    }
    int major = pre[6], minor = pre[7];
    uint32_t hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    if (major == 2 || major == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) {
            io_err(io, "truncated .npy preamble");
            return NULL;
        }
        hlen |= (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
    } else if (major != 1) {
        io_err(io, "unsupported .npy version %d.%d (expected 1.0, 2.0 or 3.0)",
               major, minor);
        return NULL;
    }
    if (hlen > NPY_MAX_HEADER) {
        io_err(io, "header length %lu is absurd (limit %d)",
               (unsigned long)hlen, NPY_MAX_HEADER);
        return NULL;
    }
    char *text = malloc(hlen + 1);
    if (!text) {
        io_err(io, "out of memory");
        return NULL;
    }
    npy_header h;
    int rc = -1;
    if (fread(text, 1, hlen, f) != hlen)
        io_err(io, "truncated header (expected %lu bytes)", (unsigned long)hlen);
    else
        rc = npy_parse_header(io, text, hlen, &h);
    free(text);
    if (rc != 0)
        return NULL;

    int k = 0;
    while (k < NPY_NDTYPES && strcmp(h.descr, npy_dtypes[k].descr) != 0)
        k++;
    if (k == NPY_NDTYPES) {
        io_err(io, "unsupported dtype '%s' (expected one of " NPY_EXPECTED ")",
               h.descr);
        return NULL;
    }
    if (h.fortran) {
        io_err(io, "fortran_order True is not supported (save the array in C "
               "order, e.g. via np.ascontiguousarray)");
        return NULL;
    }
    /* C order: the last shape entry varies fastest, so it is dimension 0.
     * A 0-D array (shape ()) becomes a 1-D buffer of one element. */
    int ext[SC_MAX_DIMS] = {1};
    int64_t count = 1;
    for (int d = 0; d < h.ndims; d++) {
        ext[d] = h.shape[h.ndims - 1 - d];
        if (ext[d] == 0) {
            io_err(io, "empty arrays are not supported (shape has a 0)");
            return NULL;
        }
        if (count > IO_MAX_ELEMS / ext[d]) {
            io_err(io, "shape has more than %lld elements",
                   (long long)IO_MAX_ELEMS);
            return NULL;
        }
        count *= ext[d];
    }
    *is_bool = npy_dtypes[k].type == SC_BOOL;
    sc_buffer *b = sc_buffer_new(*is_bool ? SC_U8 : npy_dtypes[k].type,
                                 h.ndims ? h.ndims : 1, NULL, ext);
    if (!b)
        io_err(io, "out of memory for %lld elements", (long long)count);
    return b;
}

static sc_buffer *npy_load(const io_ctx *io)
{
    FILE *f = fopen(io->path, "rb");
    if (!f) {
        io_err(io, "cannot open: %s", strerror(errno));
        return NULL;
    }
    int is_bool = 0;
    sc_buffer *b = npy_read_header(io, f, &is_bool);
    if (!b) {
        fclose(f);
        return NULL;
    }
    size_t esize = sc_type_size(b->type), n = (size_t)sc_buffer_count(b);
    size_t got = fread(b->data, esize, n, f);
    if (got != n) {
        io_err(io, "truncated data (expected %zu elements of %s, got %zu)",
               n, sc_type_name(b->type), got);
        goto fail;
    }
    /* In place, from little-endian file order to native values. */
    uint8_t *p = b->data;
    for (size_t i = 0; i < n; i++, p += esize) {
        if (esize == 2) {
            uint16_t v = (uint16_t)(p[0] | p[1] << 8);
            memcpy(p, &v, 2);
        } else if (esize == 4) {
            uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
                         (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            memcpy(p, &v, 4);
        } else if (is_bool) {
            p[0] = p[0] != 0;
        }
    }
    if (fgetc(f) != EOF) {
        io_err(io, "file is longer than its header's shape and dtype say");
        goto fail;
    }
    fclose(f);
    return b;
fail:
    sc_buffer_free(b);
    fclose(f);
    return NULL;
}

/* Writes a v1.0 .npy with the header padded to a multiple of 64 bytes. */
static int npy_save(const io_ctx *io, const sc_buffer *b)
{
    const char *descr = NULL;
    for (int k = 0; k < NPY_NDTYPES; k++)
        if (npy_dtypes[k].type == b->type)
            descr = npy_dtypes[k].descr;
    if (!descr) {
        io_err(io, "buffer type %s has no .npy dtype", sc_type_name(b->type));
        return -1;
    }
    char hdr[256];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, "
                     "'shape': (", descr);
    for (int d = b->ndims - 1; d >= 0; d--)
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%d%s", b->extent[d],
                      d > 0 ? ", " : b->ndims == 1 ? "," : "");
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "), }");
    int hlen = (10 + n + 1 + 63) / 64 * 64 - 10;  /* dict, spaces, '\n' */
    memset(hdr + n, ' ', (size_t)(hlen - 1 - n));
    hdr[hlen - 1] = '\n';

    /* The data: elements in dimension-0-fastest order (strides honoured),
     * each as the little-endian bytes of its bit pattern. */
    size_t esize = sc_type_size(b->type), count = (size_t)sc_buffer_count(b);
    uint8_t *out = malloc(count * esize), *q = out;
    if (!out) {
        io_err(io, "out of memory");
        return -1;
    }
    int coord[SC_MAX_DIMS] = {0};
    int64_t off = 0;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *src = (const uint8_t *)b->data + (size_t)off * esize;
        uint32_t u = src[0];
        if (esize == 2)
            u = *(const uint16_t *)(const void *)src;
        else if (esize == 4)
            memcpy(&u, src, 4);
        else if (b->type == SC_BOOL)
            u = u != 0;
        for (size_t j = 0; j < esize; j++)
            *q++ = (uint8_t)(u >> (8 * j));
        for (int d = 0; d < b->ndims; d++) {
            off += b->stride[d];
            if (++coord[d] < b->extent[d])
                break;
            off -= (int64_t)coord[d] * b->stride[d];
            coord[d] = 0;
        }
    }
    uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                       (uint8_t)(hlen & 0xff), (uint8_t)(hlen >> 8)};
    FILE *f = fopen(io->path, "wb");
    int ok = f && fwrite(pre, 1, 10, f) == 10 &&
             fwrite(hdr, 1, (size_t)hlen, f) == (size_t)hlen &&
             fwrite(out, esize, count, f) == count;
    int saved = errno;
    free(out);
    if (f && fclose(f) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        io_err(io, "cannot %s: %s", f ? "write" : "create", strerror(saved));
        if (f)
            remove(io->path);
        return -1;
    }
    return 0;
}

/* ---- entry points ------------------------------------------------------------- */

sc_buffer *io_load(const char *path, char *err, size_t errlen)
{
    io_ctx io = {path, err, errlen};
    if (has_ext(path, ".png"))
        return png_load(&io);
    if (has_ext(path, ".npy"))
        return npy_load(&io);
    io_err(&io, "unknown file type (expected a .png or .npy name)");
    return NULL;
}

int io_save(const char *path, const sc_buffer *b, char *err, size_t errlen)
{
    io_ctx io = {path, err, errlen};
    if (has_ext(path, ".png"))
        return png_save(&io, b);
    if (has_ext(path, ".npy"))
        return npy_save(&io, b);
    io_err(&io, "unknown file type (expected a .png or .npy name)");
    return -1;
}
