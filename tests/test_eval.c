/*
 * test_eval.c - the reference evaluator against plain C loops.
 *
 * Each case builds a pipeline with the C API, evaluates it on seeded
 * random inputs, and recomputes every output with ordinary C written
 * independently here (its own clamps, division, saturation).  Integers
 * must match exactly; f32 results are computed in the same order in float
 * precision and must match exactly too.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "scmath.h"
#include "stagecraft.h"

/* ---- building helpers (one pipeline at a time) ---------------------------- */

static sc_pipeline *P;

static sc_expr *V(const char *n) { return sc_var(P, n); }
static sc_expr *I(int64_t v) { return sc_int(P, v); }
static sc_expr *F(double v) { return sc_float(P, v); }
static sc_expr *C(sc_type t, double v) { return sc_const(P, t, v); }
static sc_expr *Bin(sc_binop op, sc_expr *a, sc_expr *b) { return sc_binary(P, op, a, b); }
static sc_expr *Add(sc_expr *a, sc_expr *b) { return Bin(SC_ADD, a, b); }
static sc_expr *Sub(sc_expr *a, sc_expr *b) { return Bin(SC_SUB, a, b); }
static sc_expr *Mul(sc_expr *a, sc_expr *b) { return Bin(SC_MUL, a, b); }
static sc_expr *Div(sc_expr *a, sc_expr *b) { return Bin(SC_DIV, a, b); }
static sc_expr *Cast(sc_type t, sc_expr *a) { return sc_cast(P, t, a); }
static sc_expr *Clamp(sc_expr *x, int lo, int hi) { return sc_clamp(P, x, I(lo), I(hi)); }
static sc_expr *Math1(sc_mathfn fn, sc_expr *a) { return sc_math(P, fn, 1, &a); }
static sc_expr *Call1(sc_func *f, sc_expr *a) { return sc_call(P, f, 1, &a); }
static sc_expr *Call2(sc_func *f, sc_expr *a, sc_expr *b)
{
    sc_expr *args[2] = {a, b};
    return sc_call(P, f, 2, args);
}
static sc_expr *Call3(sc_func *f, sc_expr *a, sc_expr *b, sc_expr *c)
{
    sc_expr *args[3] = {a, b, c};
    return sc_call(P, f, 3, args);
}

static const char *XY[] = {"x", "y", "z"};

/* f(x) = value, or f(x, y) = value ... */
static sc_func *def(const char *name, int ndims, sc_expr *value)
{
    sc_func *f = sc_func_new(P, name);
    CHECK(sc_define(P, f, ndims, XY, value) == 0);
    return f;
}

static sc_func *out1(sc_func *f, int w)
{
    CHECK(sc_output(P, f, 1, &w) == 0);
    return f;
}

static sc_func *out2(sc_func *f, int w, int h)
{
    int e[2] = {w, h};
    CHECK(sc_output(P, f, 2, e) == 0);
    return f;
}

static sc_buffer *input_buf(sc_type t, int ndims, const int *ext, uint64_t seed)
{
    sc_buffer *b = sc_buffer_new(t, ndims, NULL, ext);
    sc_buffer_fill_random(b, seed);
    return b;
}

static void print_errors(void)
{
    for (int i = 0; i < sc_error_count(P); i++)
        fprintf(stderr, "  %s\n", sc_error_message(P, i));
}

/* Finalizes and evaluates P; 0 on success. */
static int run(sc_buffer **in, sc_buffer **out)
{
    if (sc_pipeline_finalize(P) != 0) {
        print_errors();
        return -1;
    }
    int rc = sc_evaluate(P, in, 1, out);
    if (rc != 0)
        print_errors();
    return rc;
}

static double at1(const sc_buffer *b, int x) { return sc_buffer_get(b, &x); }
static double at2(const sc_buffer *b, int x, int y)
{
    int c[2] = {x, y};
    return sc_buffer_get(b, c);
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static void free_bufs(sc_buffer **b, int n)
{
    for (int i = 0; i < n; i++)
        sc_buffer_free(b[i]);
}

/* ---- cases ------------------------------------------------------------------- */

/* 3x3 box blur of a u8 image with repeat_edge, summed in u16. */
static void blur3x3_u8(void)
{
    enum { W = 67, H = 45 };
    P = sc_pipeline_new("blur");
    int ext[2] = {W, H};
    sc_func *in = sc_input(P, "in", SC_U8, 2, ext);
    sc_func *c = sc_repeat_edge(P, "clamped", in, NULL);
    sc_expr *x = V("x"), *y = V("y");
    sc_func *bx = def("bx", 2, Add(Add(Cast(SC_U16, Call2(c, Sub(x, I(1)), y)),
                                       Cast(SC_U16, Call2(c, x, y))),
                                   Cast(SC_U16, Call2(c, Add(x, I(1)), y))));
    sc_func *by = def("by", 2, Cast(SC_U8, Div(Add(Add(Call2(bx, x, Sub(y, I(1))),
                                                       Call2(bx, x, y)),
                                                   Call2(bx, x, Add(y, I(1)))), I(9))));
    out2(by, W, H);
    sc_buffer *ib = input_buf(SC_U8, 2, ext, 7), *o = NULL;
    CHECK(run(&ib, &o) == 0);
    const uint8_t *d = ib->data;
    for (int yy = 0; o && yy < H; yy++)
        for (int xx = 0; xx < W; xx++) {
            int s = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++)
                    s += d[clampi(yy + dy, 0, H - 1) * W + clampi(xx + dx, 0, W - 1)];
            CHECK(at2(o, xx, yy) == s / 9);
        }
    CHECK(o && o->extent[0] == W && o->extent[1] == H && o->min[0] == 0);
    sc_buffer_free(ib);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* u8, i8, u16, u32 arithmetic wraps to the type. */
static void wraparound(void)
{
    enum { W = 256 };
    P = sc_pipeline_new("wrap");
    int ext[1] = {W};
    sc_func *in = sc_input(P, "in", SC_U8, 1, ext);
    sc_expr *x = V("x"), *v = Call1(in, x);
    out1(def("a", 1, Add(Mul(v, I(3)), I(200))), W);
    out1(def("b", 1, Sub(v, I(250))), W);
    out1(def("c", 1, sc_unary(P, SC_NEG, Cast(SC_I8, v))), W);
    sc_expr *w = Cast(SC_U16, v);
    out1(def("d", 1, Mul(Mul(w, w), w)), W);
    sc_expr *k = C(SC_U32, 2654435761.0);
    out1(def("e", 1, Mul(Mul(Cast(SC_U32, v), k), k)), W);
    out1(def("f", 1, Add(Cast(SC_I8, v), C(SC_I8, 100))), W);
    sc_buffer *ib = input_buf(SC_U8, 1, ext, 3), *o[6] = {0};
    CHECK(run(&ib, o) == 0);
    const uint8_t *d = ib->data;
    for (int i = 0; o[5] && i < W; i++) {
        uint32_t u = d[i];
        CHECK(at1(o[0], i) == (uint8_t)(u * 3 + 200));
        CHECK(at1(o[1], i) == (uint8_t)(u - 250));
        CHECK(at1(o[2], i) == (int8_t)(uint8_t)(-(int)(int8_t)u));
        CHECK(at1(o[3], i) == (uint16_t)(u * u * u));
        CHECK(at1(o[4], i) == (uint32_t)(u * 2654435761u * 2654435761u));
        CHECK(at1(o[5], i) == (int8_t)(uint8_t)((int8_t)u + 100));
    }
    free_bufs(o, 6);
    sc_buffer_free(ib);
    sc_pipeline_free(P);
}

static int64_t ref_div(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    double q = (double)a / (double)b;
    return (int64_t)(b > 0 ? floor(q) : ceil(q));
}

static int64_t ref_mod(int64_t a, int64_t b) { return b ? a - b * ref_div(a, b) : 0; }

/* Euclidean / and % of negatives, by negative divisors and by zero. */
static void euclid_div_mod(void)
{
    enum { W = 300, H = 9 };
    P = sc_pipeline_new("divmod");
    int ext[1] = {W};
    sc_func *in = sc_input(P, "in", SC_I32, 1, ext);
    sc_expr *x = V("x"), *y = V("y");
    sc_expr *a = Sub(Call1(in, x), I(512)), *b = Sub(y, I(4));
    out2(def("q", 2, Div(a, b)), W, H);
    out2(def("r", 2, Bin(SC_MOD, a, b)), W, H);
    /* i8: the range, divided by -1 (-128 / -1 wraps), 3, -3, 0 ... */
    sc_expr *a8 = Cast(SC_I8, Sub(x, I(128))), *b8 = Cast(SC_I8, b);
    out2(def("q8", 2, Div(a8, b8)), 256, H);
    out2(def("r8", 2, Bin(SC_MOD, a8, b8)), 256, H);
    out2(def("qu", 2, Div(Cast(SC_U8, x), Cast(SC_U8, y))), 256, H);
    sc_buffer *ib = input_buf(SC_I32, 1, ext, 11), *o[5] = {0};
    CHECK(run(&ib, o) == 0);
    const int32_t *d = ib->data;
    for (int j = 0; o[4] && j < H; j++) {
        for (int i = 0; i < W; i++) {
            CHECK(at2(o[0], i, j) == ref_div(d[i] - 512, j - 4));
            CHECK(at2(o[1], i, j) == ref_mod(d[i] - 512, j - 4));
        }
        for (int i = 0; i < 256; i++) {
            int64_t q = ref_div(i - 128, j - 4);
            CHECK(at2(o[2], i, j) == (q == 128 ? -128 : q));
            CHECK(at2(o[3], i, j) == ref_mod(i - 128, j - 4));
            CHECK(at2(o[4], i, j) == (j ? i / j : 0));
        }
    }
    CHECK(o[1] && at2(o[1], 0, 0) >= 0);
    free_bufs(o, 5);
    sc_buffer_free(ib);
    sc_pipeline_free(P);
}

static double ref_sat(float v, double lo, double hi)
{
    if (v != v)
        return 0;
    double t = trunc((double)v);
    return t < lo ? lo : t > hi ? hi : t;
}

/* f32 -> integer casts truncate, saturate, and send NaN to 0. */
static void float_to_int_saturates(void)
{
    enum { W = 500 };
    P = sc_pipeline_new("sat");
    int ext[1] = {W};
    sc_func *in = sc_input(P, "in", SC_F32, 1, ext);
    sc_func *v = def("v", 1, Mul(Sub(Call1(in, V("x")), F(0.5)), F(1000.0)));
    sc_expr *vx = Call1(v, V("x"));
    out1(def("a", 1, Cast(SC_U8, vx)), W);
    out1(def("b", 1, Cast(SC_I8, vx)), W);
    out1(def("c", 1, Cast(SC_I16, Mul(vx, F(100.0)))), W);
    out1(def("d", 1, Cast(SC_U32, Mul(vx, F(1e7)))), W);
    out1(def("e", 1, Cast(SC_I32, Mul(vx, F(1e7)))), W);
    out1(def("f", 1, Cast(SC_I32, Math1(SC_SQRT, vx))), W);   /* NaN below 0 */
    out1(def("g", 1, Cast(SC_U16, Math1(SC_LOG, vx))), W);    /* -inf, NaN */
    sc_buffer *ib = input_buf(SC_F32, 1, ext, 5), *o[7] = {0};
    CHECK(run(&ib, o) == 0);
    const float *d = ib->data;
    int saw_nan = 0, saw_sat = 0;
    for (int i = 0; o[6] && i < W; i++) {
        float t = (d[i] - 0.5f) * 1000.0f;
        CHECK(at1(o[0], i) == ref_sat(t, 0, 255));
        CHECK(at1(o[1], i) == ref_sat(t, -128, 127));
        CHECK(at1(o[2], i) == ref_sat(t * 100.0f, -32768, 32767));
        CHECK(at1(o[3], i) == ref_sat(t * 1e7f, 0, 4294967295.0));
        CHECK(at1(o[4], i) == ref_sat(t * 1e7f, -2147483648.0, 2147483647.0));
        CHECK(at1(o[5], i) == ref_sat(sqrtf(t), -2147483648.0, 2147483647.0));
        CHECK(at1(o[6], i) == ref_sat(sc_logf(t), 0, 65535));
        saw_nan |= t < 0;
        saw_sat |= fabs(t * 1e7f) > 2147483647.0;
    }
    CHECK(saw_nan && saw_sat);
    free_bufs(o, 7);
    sc_buffer_free(ib);
    sc_pipeline_free(P);
}

/* hist(clamp(i32(in(r.x, r.y)), 0, 255)) += 1: a scatter over a 2-D domain. */
static void histogram(void)
{
    enum { W = 123, H = 77 };
    P = sc_pipeline_new("hist");
    int ext[2] = {W, H}, zero[2] = {0, 0};
    sc_func *in = sc_input(P, "in", SC_U8, 2, ext);
    sc_rdom *r = sc_rdom_new(P, "r", 2, zero, ext);
    sc_func *h = def("hist", 1, I(0));
    sc_expr *bin = Clamp(Cast(SC_I32, Call2(in, sc_rvar(P, r, 0), sc_rvar(P, r, 1))), 0, 255);
    CHECK(sc_update(P, h, 1, &bin, Add(Call1(h, bin), I(1))) == 0);
    out1(h, 256);
    sc_buffer *ib = input_buf(SC_U8, 2, ext, 9), *o = NULL;
    CHECK(run(&ib, &o) == 0);
    int ref[256] = {0};
    for (int i = 0; i < W * H; i++)
        ref[((uint8_t *)ib->data)[i]]++;
    for (int i = 0; o && i < 256; i++)
        CHECK(at1(o, i) == ref[i]);
    sc_buffer_free(ib);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* First-order IIR filters: down y (pure loop x) and along x (pure loop y). */
static void recurrence(void)
{
    enum { W = 1500, H = 40 };
    P = sc_pipeline_new("iir");
    int ext[2] = {W, H};
    sc_func *in = sc_input(P, "in", SC_F32, 2, ext);
    sc_expr *x = V("x"), *y = V("y");
    int one = 1, hm1 = H - 1, wm1 = W - 1;
    sc_rdom *ry = sc_rdom_new(P, "ry", 1, &one, &hm1);
    sc_rdom *rx = sc_rdom_new(P, "rx", 1, &one, &wm1);
    sc_func *down = def("down", 2, Call2(in, x, y));
    sc_expr *r = sc_rvar(P, ry, 0);
    sc_expr *lhs[2] = {x, r};
    CHECK(sc_update(P, down, 2, lhs, Add(Mul(Call2(down, x, Sub(r, I(1))), F(0.75)),
                                         Mul(Call2(in, x, r), F(0.25)))) == 0);
    sc_func *along = def("along", 2, Call2(down, x, y));
    r = sc_rvar(P, rx, 0);
    sc_expr *lhs2[2] = {r, y};
    CHECK(sc_update(P, along, 2, lhs2, Add(Mul(Call2(along, Sub(r, I(1)), y), F(0.5)),
                                           Mul(Call2(down, r, y), F(0.5)))) == 0);
    out2(down, W, H);
    out2(along, W, H);
    sc_buffer *ib = input_buf(SC_F32, 2, ext, 13), *o[2] = {0};
    CHECK(run(&ib, o) == 0);
    float *ref = malloc(sizeof(float) * W * H), *ref2 = malloc(sizeof(float) * W * H);
    memcpy(ref, ib->data, sizeof(float) * W * H);
    for (int j = 1; j < H; j++)
        for (int i = 0; i < W; i++)
            ref[j * W + i] = ref[(j - 1) * W + i] * 0.75f + ((float *)ib->data)[j * W + i] * 0.25f;
    memcpy(ref2, ref, sizeof(float) * W * H);
    for (int j = 0; j < H; j++)
        for (int i = 1; i < W; i++)
            ref2[j * W + i] = ref2[j * W + i - 1] * 0.5f + ref[j * W + i] * 0.5f;
    for (int j = 0; o[1] && j < H; j++)
        for (int i = 0; i < W; i++) {
            CHECK(at2(o[0], i, j) == ref[j * W + i]);
            CHECK(at2(o[1], i, j) == ref2[j * W + i]);
        }
    free(ref);
    free(ref2);
    free_bufs(o, 2);
    sc_buffer_free(ib);
    sc_pipeline_free(P);
}

/* C(x, y) = sum over k of A(k, y) * B(x, k), as an update over an rdom. */
static void sgemm(void)
{
    enum { N = 37, M = 29, K = 53 };
    P = sc_pipeline_new("sgemm");
    int ea[2] = {K, M}, eb[2] = {N, K}, zero = 0, k = K;
    sc_func *a = sc_input(P, "A", SC_F32, 2, ea);
    sc_func *b = sc_input(P, "B", SC_F32, 2, eb);
    sc_rdom *r = sc_rdom_new(P, "r", 1, &zero, &k);
    sc_func *c = def("C", 2, F(0.0));
    sc_expr *x = V("x"), *y = V("y"), *rk = sc_rvar(P, r, 0);
    sc_expr *lhs[2] = {x, y};
    CHECK(sc_update(P, c, 2, lhs, Add(Call2(c, x, y), Mul(Call2(a, rk, y), Call2(b, x, rk)))) == 0);
    out2(c, N, M);
    sc_buffer *in[2] = {input_buf(SC_F32, 2, ea, 1), input_buf(SC_F32, 2, eb, 2)}, *o = NULL;
    CHECK(run(in, &o) == 0);
    const float *da = in[0]->data, *db = in[1]->data;
    for (int j = 0; o && j < M; j++)
        for (int i = 0; i < N; i++) {
            float s = 0.0f;
            for (int kk = 0; kk < K; kk++)
                s = s + da[j * K + kk] * db[kk * N + i];
            CHECK(at2(o, i, j) == s);
        }
    free_bufs(in, 2);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* Inline reductions: a windowed sum and maximum through sc_reduce. */
static void inline_reductions(void)
{
    enum { W = 2000 };
    P = sc_pipeline_new("reduce");
    int ext[1] = {W}, lo = -2, n = 5;
    sc_func *in = sc_input(P, "in", SC_I32, 1, ext);
    sc_rdom *r = sc_rdom_new(P, "r", 1, &lo, &n);
    sc_expr *tap = Call1(in, Clamp(Add(V("x"), sc_rvar(P, r, 0)), 0, W - 1));
    out1(def("s", 1, sc_reduce(P, SC_SUM, "s", tap)), W);
    out1(def("m", 1, sc_reduce(P, SC_MAXIMUM, "m", Sub(I(0), tap))), W);
    sc_buffer *ib = input_buf(SC_I32, 1, ext, 4), *o[2] = {0};
    CHECK(run(&ib, o) == 0);
    const int32_t *d = ib->data;
    for (int i = 0; o[1] && i < W; i++) {
        int s = 0, m = INT32_MIN;
        for (int t = -2; t <= 2; t++) {
            int v = d[clampi(i + t, 0, W - 1)];
            s += v;
            m = -v > m ? -v : m;
        }
        CHECK(at1(o[0], i) == s);
        CHECK(at1(o[1], i) == m);
    }
    free_bufs(o, 2);
    sc_buffer_free(ib);
    sc_pipeline_free(P);
}

/* A 3-D Func over a 3-D input, read back at reflected coordinates. */
static void three_d(void)
{
    enum { X = 9, Y = 7, Z = 5 };
    P = sc_pipeline_new("3d");
    int ext[3] = {X, Y, Z};
    sc_func *in = sc_input(P, "in", SC_U16, 3, ext);
    sc_expr *x = V("x"), *y = V("y"), *z = V("z");
    sc_func *f = def("f", 3, Add(Call3(in, x, y, z),
                                 Cast(SC_U16, Add(Add(x, Mul(I(10), y)), Mul(I(100), z)))));
    sc_func *g = def("g", 3, Add(Mul(Call3(f, x, y, z), I(2)),
                                 Call3(f, Bin(SC_MIN, Add(x, I(1)), I(X - 1)), y,
                                       Sub(I(Z - 1), z))));
    CHECK(sc_output(P, g, 3, ext) == 0);
    sc_buffer *ib = input_buf(SC_U16, 3, ext, 8), *o = NULL;
    CHECK(run(&ib, &o) == 0);
    const uint16_t *d = ib->data;
#define REF_F(i, j, k) ((uint16_t)(d[((k) * Y + (j)) * X + (i)] + (i) + 10 * (j) + 100 * (k)))
    for (int k = 0; o && k < Z; k++)
        for (int j = 0; j < Y; j++)
            for (int i = 0; i < X; i++) {
                int c[3] = {i, j, k};
                uint16_t ref = (uint16_t)(REF_F(i, j, k) * 2 + REF_F(clampi(i + 1, 0, X - 1), j, Z - 1 - k));
                CHECK(sc_buffer_get(o, c) == ref);
            }
#undef REF_F
    sc_buffer_free(ib);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* Pure updates: f(x) = in(x); f(x) = f(x) * 2; f(x) = f(x) + x. */
static void pure_update(void)
{
    enum { W = 3000 };
    P = sc_pipeline_new("pure_update");
    int ext[1] = {W};
    sc_func *in = sc_input(P, "in", SC_I32, 1, ext);
    sc_expr *x = V("x");
    sc_func *f = def("f", 1, Call1(in, x));
    CHECK(sc_update(P, f, 1, &x, Mul(Call1(f, x), I(2))) == 0);
    CHECK(sc_update(P, f, 1, &x, Add(Call1(f, x), x)) == 0);
    out1(f, W);
    sc_buffer *ib = input_buf(SC_I32, 1, ext, 6), *o = NULL;
    CHECK(run(&ib, &o) == 0);
    for (int i = 0; o && i < W; i++)
        CHECK(at1(o, i) == ((int32_t *)ib->data)[i] * 2 + i);
    sc_buffer_free(ib);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* An output read by another output beyond its own size: its region is
 * larger than its output buffer, which must hold exactly [0, size). */
static void output_region_larger(void)
{
    enum { W = 20 };
    P = sc_pipeline_new("outs");
    int ext[1] = {W};
    sc_func *in = sc_input(P, "in", SC_I32, 1, ext);
    sc_expr *x = V("x");
    sc_func *a = out1(def("a", 1, Add(Call1(in, x), I(1))), 10);
    out1(def("b", 1, Mul(Call1(a, Add(x, I(5))), I(2))), 10);
    sc_buffer *ib = input_buf(SC_I32, 1, ext, 2), *o[2] = {0};
    CHECK(run(&ib, o) == 0);
    const int32_t *d = ib->data;
    CHECK(o[0] && o[0]->extent[0] == 10 && o[0]->min[0] == 0);
    for (int i = 0; o[1] && i < 10; i++) {
        CHECK(at1(o[0], i) == d[i] + 1);
        CHECK(at1(o[1], i) == (d[i + 5] + 1) * 2);
    }
    free_bufs(o, 2);
    sc_buffer_free(ib);
    sc_pipeline_free(P);
}

static int32_t ref_shr(int32_t a, int64_t s);
static int32_t ref_shl(int32_t a, int64_t s)
{
    if (s < 0)
        return ref_shr(a, -s);
    return s >= 32 ? 0 : (int32_t)((uint32_t)a << s);
}
static int32_t ref_shr(int32_t a, int64_t s)
{
    if (s < 0)
        return ref_shl(a, -s);
    if (s >= 32)
        return a < 0 ? -1 : 0;
    return a < 0 ? (int32_t)~(~(uint32_t)a >> s) : a >> s;
}

/* Bit operations, shifts of every range, select, min/max, abs, NOT/AND/OR. */
static void int_ops(void)
{
    enum { W = 1024 };
    P = sc_pipeline_new("ops");
    int ext[1] = {W};
    sc_func *in = sc_input(P, "in", SC_I32, 1, ext);
    sc_expr *x = V("x");
    sc_expr *a = Mul(Sub(Call1(in, x), I(512)), I(4099));
    sc_expr *s = Sub(Bin(SC_MOD, x, I(90)), I(45));
    out1(def("shl", 1, Bin(SC_SHL, a, s)), W);
    out1(def("shr", 1, Bin(SC_SHR, a, s)), W);
    out1(def("bits", 1, Bin(SC_BITXOR, Bin(SC_BITAND, a, I(0x0ff0)),
                            Bin(SC_BITOR, sc_unary(P, SC_BITNOT, a), I(5)))), W);
    sc_expr *inside = Bin(SC_AND, Bin(SC_GE, a, I(-1000)),
                          sc_unary(P, SC_NOT, Bin(SC_GT, a, I(1000))));
    out1(def("sel", 1, sc_select(P, Bin(SC_OR, inside, Bin(SC_EQ, x, I(3))),
                                 Bin(SC_MIN, a, I(7)), Bin(SC_MAX, a, I(-7)))), W);
    out1(def("abs8", 1, Math1(SC_ABS, Cast(SC_I8, x))), 256);
    out1(def("shr8", 1, Bin(SC_SHR, Cast(SC_U8, x), Cast(SC_U8, Bin(SC_MOD, x, I(11))))), W);
    sc_buffer *ib = input_buf(SC_I32, 1, ext, 12), *o[6] = {0};
    CHECK(run(&ib, o) == 0);
    const int32_t *d = ib->data;
    for (int i = 0; o[5] && i < W; i++) {
        int32_t av = (d[i] - 512) * 4099, sv = i % 90 - 45;
        CHECK(at1(o[0], i) == ref_shl(av, sv));
        CHECK(at1(o[1], i) == ref_shr(av, sv));
        CHECK(at1(o[2], i) == ((av & 0x0ff0) ^ (~av | 5)));
        int c = (av >= -1000 && !(av > 1000)) || i == 3;
        CHECK(at1(o[3], i) == (c ? (av < 7 ? av : 7) : (av > -7 ? av : -7)));
        if (i < 256) {
            int8_t v = (int8_t)(uint8_t)i;
            CHECK(at1(o[4], i) == (int8_t)(uint8_t)(v < 0 ? -v : v));
        }
        int sh = i % 11;
        CHECK(at1(o[5], i) == (sh >= 8 ? 0 : (uint8_t)i >> sh));
    }
    free_bufs(o, 6);
    sc_buffer_free(ib);
    sc_pipeline_free(P);
}

/* f32 math in float precision: libm's float functions, rint for round,
 * floor-based modulo, fmin/fmax, comparisons; and parameters. */
static void float_ops(void)
{
    enum { W = 777 };
    P = sc_pipeline_new("fops");
    int ext[1] = {W};
    sc_func *in = sc_input(P, "in", SC_F32, 1, ext);
    sc_param *gain = sc_param_new(P, "gain", SC_F32, 3.5);
    sc_param *off = sc_param_new(P, "off", SC_I32, -7);
    sc_expr *x = V("x");
    sc_expr *v = Mul(Sub(Call1(in, x), F(0.25)), sc_param_ref(P, gain));
    sc_expr *pw[2] = {Math1(SC_ABS, v), F(1.7)}, *at[2] = {v, Sub(F(0.5), v)};
    sc_expr *all = Add(Add(Add(Math1(SC_EXP, v), Math1(SC_COS, v)), Math1(SC_TANH, v)),
                       Add(sc_math(P, SC_POW, 2, pw), sc_math(P, SC_ATAN2, 2, at)));
    out1(def("m", 1, all), W);
    out1(def("rnd", 1, Math1(SC_ROUND, Div(Cast(SC_F32, Sub(x, I(400))), F(2.0)))), W);
    out1(def("fm", 1, Bin(SC_MOD, v, F(-0.75))), W);
    out1(def("mm", 1, Add(Bin(SC_MIN, v, F(0.5)), Bin(SC_MAX, Math1(SC_FLOOR, v),
                                                      Math1(SC_CEIL, Math1(SC_SIN, v))))), W);
    out1(def("cmp", 1, sc_select(P, Bin(SC_LE, v, F(0.0)), Add(x, sc_param_ref(P, off)), I(1))), W);
    sc_buffer *ib = input_buf(SC_F32, 1, ext, 21), *o[5] = {0};
    CHECK(run(&ib, o) == 0);
    const float *d = ib->data;
    for (int i = 0; o[4] && i < W; i++) {
        float t = (d[i] - 0.25f) * 3.5f;
        float ref = ((sc_expf(t) + sc_cosf(t)) + sc_tanhf(t)) + (sc_powf(fabsf(t), 1.7f) + sc_atan2f(t, 0.5f - t));
        CHECK(at1(o[0], i) == ref);
        CHECK(at1(o[1], i) == rintf((float)(i - 400) / 2.0f));
        CHECK(at1(o[2], i) == t - -0.75f * floorf(t / -0.75f));
        CHECK(at1(o[3], i) == fminf(t, 0.5f) + fmaxf(floorf(t), ceilf(sc_sinf(t))));
        CHECK(at1(o[4], i) == (t <= 0.0f ? i - 7 : 1));
    }
    CHECK(o[1] && at1(o[1], 401) == 0 && at1(o[1], 403) == 2 && at1(o[1], 397) == -2);
    free_bufs(o, 5);
    sc_buffer_free(ib);
    sc_pipeline_free(P);
}

/* A DAG whose tree form has 2^16 leaves: e = e + e sixteen times.  Shared
 * nodes are evaluated once, and a slot read twice is released once. */
static void shared_subexpressions(void)
{
    enum { W = 100 };
    P = sc_pipeline_new("dag");
    int ext[1] = {W};
    sc_func *in = sc_input(P, "in", SC_I32, 1, ext);
    sc_expr *e = Call1(in, V("x"));
    for (int i = 0; i < 16; i++)
        e = i % 2 ? Add(e, e) : Add(Mul(e, I(1)), e);
    out1(def("f", 1, Sub(e, Call1(in, V("x")))), W);
    sc_buffer *ib = input_buf(SC_I32, 1, ext, 1), *o = NULL;
    CHECK(run(&ib, &o) == 0);
    for (int i = 0; o && i < W; i++)
        CHECK(at1(o, i) == ((int32_t *)ib->data)[i] * 65535);
    sc_buffer_free(ib);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* A 0-dimensional Func (a scalar reduction) read by every point. */
static void scalar_func(void)
{
    enum { W = 50 };
    P = sc_pipeline_new("scalar");
    int ext[1] = {W}, zero = 0;
    sc_func *in = sc_input(P, "in", SC_I32, 1, ext);
    sc_rdom *r = sc_rdom_new(P, "r", 1, &zero, ext);
    sc_func *t = sc_func_new(P, "total");
    CHECK(sc_define(P, t, 0, NULL, I(0)) == 0);
    sc_expr *rv = sc_rvar(P, r, 0), *x = V("x");
    CHECK(sc_update(P, t, 0, NULL, Add(sc_call(P, t, 0, NULL), Call1(in, rv))) == 0);
    out1(def("o", 1, Sub(Call1(in, x), sc_call(P, t, 0, NULL))), W);
    sc_buffer *ib = input_buf(SC_I32, 1, ext, 3), *o = NULL;
    CHECK(run(&ib, &o) == 0);
    const int32_t *d = ib->data;
    int total = 0;
    for (int i = 0; i < W; i++)
        total += d[i];
    for (int i = 0; o && i < W; i++)
        CHECK(at1(o, i) == d[i] - total);
    sc_buffer_free(ib);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* 0-D outputs (sc_output with no sizes): a maximum over a 2-D domain and a
 * 0-D Func computed from it; each comes back as a buffer of one element. */
static void scalar_output(void)
{
    enum { W = 13, H = 7 };
    P = sc_pipeline_new("scalar_out");
    int ext[2] = {W, H}, zero[2] = {0, 0};
    sc_func *in = sc_input(P, "in", SC_I16, 2, ext);
    sc_rdom *r = sc_rdom_new(P, "r", 2, zero, ext);
    sc_func *m = sc_func_new(P, "m");
    CHECK(sc_define(P, m, 0, NULL, C(SC_I16, -32768)) == 0);
    sc_expr *self = sc_call(P, m, 0, NULL);
    CHECK(sc_update(P, m, 0, NULL, Bin(SC_MAX, self, Call2(in, sc_rvar(P, r, 0), sc_rvar(P, r, 1)))) == 0);
    sc_func *h = sc_func_new(P, "half");
    CHECK(sc_define(P, h, 0, NULL, Div(Cast(SC_F32, sc_call(P, m, 0, NULL)), F(2.0))) == 0);
    CHECK(sc_output(P, m, 0, NULL) == 0);
    CHECK(sc_output(P, h, 0, NULL) == 0);
    sc_buffer *ib = input_buf(SC_I16, 2, ext, 5), *o[2] = {NULL, NULL};
    CHECK(run(&ib, o) == 0);
    const int16_t *d = ib->data;
    int mx = -32768;
    for (int i = 0; i < W * H; i++)
        mx = d[i] > mx ? d[i] : mx;
    CHECK(o[0] && o[0]->ndims == 1 && o[0]->extent[0] == 1 && at1(o[0], 0) == mx);
    CHECK(o[1] && o[1]->ndims == 1 && o[1]->extent[0] == 1 && at1(o[1], 0) == (float)mx / 2.0f);
    sc_buffer_free(ib);
    free_bufs(o, 2);
    sc_pipeline_free(P);
}

/* A 2-D reduction domain runs dimension 0 innermost: an order-sensitive
 * hash acc(x) = acc(x) * 31 + in(r.x, r.y) over two pure points. */
static void rdom_order(void)
{
    enum { W = 13, H = 11 };
    P = sc_pipeline_new("order");
    int ext[2] = {W, H}, zero[2] = {0, 0};
    sc_func *in = sc_input(P, "in", SC_I32, 2, ext);
    sc_rdom *r = sc_rdom_new(P, "r", 2, zero, ext);
    sc_expr *x = V("x");
    sc_func *acc = def("acc", 1, x);
    CHECK(sc_update(P, acc, 1, &x, Add(Mul(Call1(acc, x), I(31)),
                                       Add(Call2(in, sc_rvar(P, r, 0), sc_rvar(P, r, 1)), x))) == 0);
    out1(acc, 2);
    sc_buffer *ib = input_buf(SC_I32, 2, ext, 17), *o = NULL;
    CHECK(run(&ib, &o) == 0);
    for (int i = 0; o && i < 2; i++) {
        uint32_t a = (uint32_t)i;
        for (int j = 0; j < W * H; j++)
            a = a * 31u + (uint32_t)(((int32_t *)ib->data)[j] + i);
        CHECK(at1(o, i) == (int32_t)a);
    }
    sc_buffer_free(ib);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* Coordinates through casts that wrap over part of the loop (u8(x), and
 * i8(x) + 128, for x up to 299) and a reversed one, x * -1 + 299. */
static void coordinate_casts(void)
{
    enum { W = 300 };
    P = sc_pipeline_new("casts");
    int ext[1] = {W};
    sc_func *in = sc_input(P, "in", SC_I32, 1, ext);
    sc_expr *x = V("x");
    sc_expr *a = Call1(in, Cast(SC_I32, Cast(SC_U8, x)));
    sc_expr *b = Call1(in, Add(Cast(SC_I32, Cast(SC_I8, x)), I(128)));
    sc_expr *c = Call1(in, Add(Mul(x, I(-1)), I(W - 1)));
    out1(def("f", 1, Add(Mul(a, I(3)), Sub(b, c))), W);
    sc_buffer *ib = input_buf(SC_I32, 1, ext, 21), *o = NULL;
    CHECK(run(&ib, &o) == 0);
    const int32_t *d = ib->data;
    for (int i = 0; o && i < W; i++)
        CHECK(at1(o, i) == d[i & 255] * 3 + (d[(i & 255) ^ 128] - d[W - 1 - i]));
    sc_buffer_free(ib);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* Loads whose offsets, over rows that chunks of points cut anywhere, are
 * contiguous, reversed, halved, one per row, constant and transposed; and
 * a term that depends on the row only. */
static void access_patterns(void)
{
    enum { W = 1500, H = 3 };
    P = sc_pipeline_new("patterns");
    int ext[2] = {W, H}, text[2] = {H, W}, rext[1] = {H};
    sc_func *in = sc_input(P, "in", SC_F32, 2, ext);
    sc_func *tr = sc_input(P, "tr", SC_F32, 2, text);
    sc_func *row = sc_input(P, "row", SC_F32, 1, rext);
    sc_expr *x = V("x"), *y = V("y");
    sc_expr *e = Mul(Call2(in, x, y), F(3.0));
    e = Add(e, Call2(in, Sub(I(W - 1), x), y));
    e = Add(e, Call2(in, Div(x, I(2)), y));
    e = Add(e, Call1(row, y));
    e = Add(e, Call2(in, I(5), I(1)));
    e = Add(e, Call2(tr, y, x));
    e = Add(e, Cast(SC_F32, Bin(SC_MOD, Mul(y, I(7)), I(3))));
    out2(def("f", 2, e), W, H);
    sc_buffer *ib[3] = {input_buf(SC_F32, 2, ext, 22), input_buf(SC_F32, 2, text, 23),
                        input_buf(SC_F32, 1, rext, 24)}, *o = NULL;
    CHECK(run(ib, &o) == 0);
    const float *d = ib[0]->data, *t = ib[1]->data, *r = ib[2]->data;
    for (int j = 0; o && j < H; j++)
        for (int i = 0; i < W; i++) {
            float v = d[j * W + i] * 3.0f;
            v = v + d[j * W + W - 1 - i];
            v = v + d[j * W + i / 2];
            v = v + r[j];
            v = v + d[W + 5];
            v = v + t[i * H + j];
            v = v + (float)(j * 7 % 3);
            CHECK(at2(o, i, j) == v);
        }
    free_bufs(ib, 3);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* Coordinates that depend on no pure variable (the same in every lane):
 * a data-dependent row per reduction point, also used in arithmetic, and
 * a data-dependent row in a pure stage. */
static void uniform_coordinates(void)
{
    enum { W = 1100, H = 7, R = 9 };
    P = sc_pipeline_new("uniform");
    int ext[2] = {W, H}, lext[1] = {R}, zero = 0;
    sc_func *img = sc_input(P, "img", SC_F32, 2, ext);
    sc_func *lut = sc_input(P, "lut", SC_I32, 1, lext);
    sc_rdom *r = sc_rdom_new(P, "r", 1, &zero, lext);
    sc_expr *x = V("x"), *y = V("y"), *lhs[2] = {x, y};
    sc_expr *rrow = Bin(SC_MOD, Call1(lut, sc_rvar(P, r, 0)), I(H));
    sc_func *f = def("f", 2, F(0.0));
    CHECK(sc_update(P, f, 2, lhs, Add(Call2(f, x, y), Mul(Call2(img, x, rrow),
                                                         Cast(SC_F32, Add(rrow, y))))) == 0);
    sc_expr *row2 = Bin(SC_MOD, Call1(lut, I(2)), I(H));
    out2(def("g", 2, Add(Call2(img, Sub(I(W - 1), x), row2), Call2(f, x, y))), W, H);
    sc_buffer *ib[2] = {input_buf(SC_F32, 2, ext, 25), input_buf(SC_I32, 1, lext, 26)}, *o = NULL;
    CHECK(run(ib, &o) == 0);
    const float *d = ib[0]->data;
    const int32_t *l = ib[1]->data;
    for (int j = 0; o && j < H; j++)
        for (int i = 0; i < W; i++) {
            float s = 0.0f;
            for (int k = 0; k < R; k++)
                s = s + d[l[k] % H * W + i] * (float)(l[k] % H + j);
            CHECK(at2(o, i, j) == d[l[2] % H * W + W - 1 - i] + s);
        }
    free_bufs(ib, 2);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* An update whose value mixes terms that depend on the reduction with
 * terms that do not (computed once per chunk), in the expression's order. */
static void update_invariants(void)
{
    enum { W = 1030, H = 5, K = 6 };
    P = sc_pipeline_new("invariants");
    int ea[2] = {K, H}, eb[2] = {W, K}, eh[2] = {W, H}, zero = 0, k = K;
    sc_func *a = sc_input(P, "a", SC_F32, 2, ea);
    sc_func *b = sc_input(P, "b", SC_F32, 2, eb);
    sc_func *h = sc_input(P, "h", SC_F32, 2, eh);
    sc_rdom *r = sc_rdom_new(P, "r", 1, &zero, &k);
    sc_expr *x = V("x"), *y = V("y"), *rk = sc_rvar(P, r, 0), *lhs[2] = {x, y};
    sc_func *f = def("f", 2, F(1.0));
    sc_expr *inv = Mul(Math1(SC_SQRT, Call2(h, x, y)), F(2.0));
    CHECK(sc_update(P, f, 2, lhs, Add(Mul(Call2(f, x, y), F(0.5)),
                                      Add(inv, Mul(Call2(a, rk, y), Call2(b, x, rk))))) == 0);
    out2(f, W, H);
    sc_buffer *in[3] = {input_buf(SC_F32, 2, ea, 27), input_buf(SC_F32, 2, eb, 28),
                        input_buf(SC_F32, 2, eh, 29)}, *o = NULL;
    CHECK(run(in, &o) == 0);
    const float *da = in[0]->data, *db = in[1]->data, *dh = in[2]->data;
    for (int j = 0; o && j < H; j++)
        for (int i = 0; i < W; i++) {
            float s = 1.0f;
            for (int kk = 0; kk < K; kk++)
                s = s * 0.5f + (sqrtf(dh[j * W + i]) * 2.0f + da[j * K + kk] * db[kk * W + i]);
            CHECK(at2(o, i, j) == s);
        }
    free_bufs(in, 3);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* Input buffers of the wrong type, size or placement are user errors. */
static void bad_inputs(void)
{
    int ext[2] = {10, 8}, wrong[2] = {10, 9}, shifted[2] = {1, 0};
    for (int k = 0; k < 4; k++) {
        P = sc_pipeline_new("bad");
        sc_func *in = sc_input(P, "in", SC_U8, 2, ext);
        out2(def("f", 2, Call2(in, V("x"), V("y"))), 10, 8);
        CHECK(sc_pipeline_finalize(P) == 0);
        sc_buffer *ib = k == 0 ? sc_buffer_new(SC_U16, 2, NULL, ext)
                      : k == 1 ? sc_buffer_new(SC_U8, 2, NULL, wrong)
                      : k == 2 ? sc_buffer_new(SC_U8, 1, NULL, ext)
                               : sc_buffer_new(SC_U8, 2, shifted, ext);
        sc_buffer *o = (sc_buffer *)&o;
        CHECK(sc_evaluate(P, &ib, 1, &o) == -1);
        CHECK(o == NULL);
        CHECK(sc_error_count(P) == 1);
        CHECK(sc_error_count(P) < 1 || strstr(sc_error_message(P, 0), "input in") != NULL);
        sc_buffer_free(ib);
        sc_pipeline_free(P);
    }
}

int main(void)
{
    RUN(blur3x3_u8);
    RUN(wraparound);
    RUN(euclid_div_mod);
    RUN(float_to_int_saturates);
    RUN(histogram);
    RUN(recurrence);
    RUN(sgemm);
    RUN(inline_reductions);
    RUN(three_d);
    RUN(pure_update);
    RUN(output_region_larger);
    RUN(int_ops);
    RUN(float_ops);
    RUN(shared_subexpressions);
    RUN(scalar_func);
    RUN(scalar_output);
    RUN(rdom_order);
    RUN(coordinate_casts);
    RUN(access_patterns);
    RUN(uniform_coordinates);
    RUN(update_invariants);
    RUN(bad_inputs);
    CHECK_EXIT();
}
