/*
 * test_bounds.c - bounds inference: regions of Funcs and stage loops for
 * stencils, resampling, gathers, scatters and recurrences; the errors for
 * unbounded and out-of-bounds accesses; the interval arithmetic itself.
 *
 * Pipelines are built with the C API; every expected region is worked out
 * by hand in the comment above its check.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* open_memstream */
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "check.h"
#include "stagecraft.h"

/* ---- shorthands ---- */
static sc_pipeline *P;
static sc_expr *V(const char *n) { return sc_var(P, n); }
static sc_expr *I(int64_t v) { return sc_int(P, v); }
static sc_expr *add(sc_expr *a, sc_expr *b) { return sc_binary(P, SC_ADD, a, b); }
static sc_expr *sub(sc_expr *a, sc_expr *b) { return sc_binary(P, SC_SUB, a, b); }
static sc_expr *mul(sc_expr *a, sc_expr *b) { return sc_binary(P, SC_MUL, a, b); }
static sc_expr *dv(sc_expr *a, sc_expr *b) { return sc_binary(P, SC_DIV, a, b); }
static sc_expr *call1(sc_func *f, sc_expr *a) { return sc_call(P, f, 1, &a); }
static sc_expr *call2(sc_func *f, sc_expr *a, sc_expr *b) {
    sc_expr *args[2] = { a, b };
    return sc_call(P, f, 2, args);
}
static const char *XY[2] = { "x", "y" };
static const char *X1[1] = { "x" };

static sc_func *def1(const char *name, sc_expr *value) {
    sc_func *f = sc_func_new(P, name);
    CHECK(sc_define(P, f, 1, X1, value) == 0);
    return f;
}
static sc_func *def2(const char *name, sc_expr *value) {
    sc_func *f = sc_func_new(P, name);
    CHECK(sc_define(P, f, 2, XY, value) == 0);
    return f;
}

/* Finalizes P and returns its bounds (NULL on error).  Errors are shown
 * when success was expected. */
static bounds_result *infer_(bool expect_ok) {
    int n = sc_pipeline_finalize(P);
    for (int i = 0; expect_ok && i < sc_error_count(P); i++)
        fprintf(stderr, "  unexpected: %s\n", sc_error_message(P, i));
    if (n) return NULL;
    return bounds_infer(P);
}
static bounds_result *infer(void) { return infer_(true); }
static bool infer_fails(void) {
    bounds_result *b = infer_(false);
    bool failed = b == NULL;
    bounds_free(b);
    return failed;
}

static bool region_is(const bounds_result *b, const sc_func *f, int d, int64_t lo, int64_t hi) {
    const bounds_func *bf = &b->funcs[f->id];
    bool ok = bf->min[d] == lo && bf->min[d] + bf->extent[d] - 1 == hi;
    if (!ok)
        fprintf(stderr, "  %s dim %d: got [%lld, %lld], want [%lld, %lld]\n", f->name, d,
                (long long)bf->min[d], (long long)(bf->min[d] + bf->extent[d] - 1),
                (long long)lo, (long long)hi);
    return ok;
}

static bool loop_is(const bounds_result *b, const sc_func *f, int s, int l, int64_t lo, int64_t hi) {
    const bounds_stage *bs = &b->funcs[f->id].stages[s];
    return l < bs->nloops && bs->min[l] == lo && bs->min[l] + bs->extent[l] - 1 == hi;
}

/* Whether some recorded error contains text. */
static bool has_error(const char *text) {
    for (int i = 0; i < sc_error_count(P); i++)
        if (strstr(sc_error_message(P, i), text)) return true;
    fprintf(stderr, "  no error containing: %s\n", text);
    return false;
}

/* ---- cases ---- */

/* A 3x3 box blur of a repeat_edge'd input: each separable pass widens its
 * producer by one on each side of the blurred dimension. */
static void blur_3x3(void) {
    P = sc_pipeline_new("blur");
    int ext[2] = { 100, 50 };
    sc_func *in = sc_input(P, "in", SC_U16, 2, ext);
    sc_func *f = sc_repeat_edge(P, "f", in, NULL);
    sc_func *bx = def2("bx", add(add(call2(f, sub(V("x"), I(1)), V("y")), call2(f, V("x"), V("y"))),
                                 call2(f, add(V("x"), I(1)), V("y"))));
    sc_func *by = def2("by", add(add(call2(bx, V("x"), sub(V("y"), I(1))), call2(bx, V("x"), V("y"))),
                                 call2(bx, V("x"), add(V("y"), I(1)))));
    CHECK(sc_output(P, by, 2, ext) == 0);
    bounds_result *b = infer();
    CHECK(b != NULL);
    if (b) {
        CHECK(region_is(b, by, 0, 0, 99) && region_is(b, by, 1, 0, 49));
        CHECK(region_is(b, bx, 0, 0, 99) && region_is(b, bx, 1, -1, 50));
        CHECK(region_is(b, f, 0, -1, 100) && region_is(b, f, 1, -1, 50));
        CHECK(region_is(b, in, 0, 0, 99) && region_is(b, in, 1, 0, 49));
        CHECK(b->funcs[bx->id].nstages == 1);
        CHECK(loop_is(b, bx, 0, 0, 0, 99) && loop_is(b, bx, 0, 1, -1, 50));
        CHECK(b->funcs[in->id].nstages == 0);
        bounds_free(b);
    }
    sc_pipeline_free(P);
}

/* out(x) = f(2x) over [0, N): f is needed at the even points 0..2N-2;
 * up(x) = f(x / 2) needs [0, (N-1)/2]; a negative offset floors. */
static void resampling(void) {
    P = sc_pipeline_new("resample");
    sc_func *f = def1("f", mul(V("x"), I(3)));
    sc_func *g = def1("g", add(V("x"), I(1)));
    sc_func *h = def1("h", V("x"));
    sc_func *down = def1("down", add(add(call1(f, mul(I(2), V("x"))),
                                         call1(g, dv(V("x"), I(2)))),
                                     call1(h, dv(sub(V("x"), I(3)), I(2)))));
    int n = 10;
    CHECK(sc_output(P, down, 1, &n) == 0);
    bounds_result *b = infer();
    CHECK(b != NULL);
    if (b) {
        CHECK(region_is(b, f, 0, 0, 18));
        CHECK(region_is(b, g, 0, 0, 4));
        /* (x - 3) / 2 for x in [0, 9]: floor(-3/2) = -2 .. 3 */
        CHECK(region_is(b, h, 0, -2, 3));
        bounds_free(b);
    }
    sc_pipeline_free(P);
}

/* A gather through a lookup table: a float index clamped to [0, 255], and
 * a u8 index bounded by its type. */
static void clamped_gather(void) {
    P = sc_pipeline_new("gather");
    int ext[2] = { 64, 32 };
    sc_func *img = sc_input(P, "img", SC_U8, 2, ext);
    sc_func *v = def2("v", sc_binary(P, SC_MUL, sc_cast(P, SC_F32, call2(img, V("x"), V("y"))),
                                     sc_float(P, 1.7)));
    sc_func *lut = def1("lut", mul(V("x"), V("x")));
    sc_func *lut2 = def1("lut2", sub(V("x"), I(7)));
    sc_expr *idx = sc_clamp(P, sc_cast(P, SC_I32, call2(v, V("x"), V("y"))), I(0), I(255));
    sc_func *g = def2("g", add(call1(lut, idx), call1(lut2, sc_cast(P, SC_I32, call2(img, V("x"), V("y"))))));
    CHECK(sc_output(P, g, 2, ext) == 0);
    bounds_result *b = infer();
    CHECK(b != NULL);
    if (b) {
        CHECK(region_is(b, lut, 0, 0, 255));
        CHECK(region_is(b, lut2, 0, 0, 255));
        CHECK(region_is(b, v, 0, 0, 63) && region_is(b, v, 1, 0, 31));
        /* value ranges: kept in the result, and used by bounds_of_expr_in */
        CHECK(b->values[v->id].lo == 0 && fabs(b->values[v->id].hi - 255 * (double)1.7f) < 1e-3);
        CHECK(b->values[lut2->id].lo == -INFINITY && b->values[lut2->id].hi == INFINITY);
        CHECK(b->values[img->id].lo == 0 && b->values[img->id].hi == 255);
        const char *vars[2] = { "x", "y" };
        bounds_interval env[2] = { { 0, 63 }, { 0, 31 } };
        bool ok1, ok2;
        bounds_interval r1 = bounds_of_expr_in(b, idx, 2, vars, env, &ok1);
        bounds_interval r2 = bounds_of_expr(sc_cast(P, SC_I32, call2(v, V("x"), V("y"))), 2, vars, env, &ok2);
        CHECK(ok1 && r1.lo == 0 && r1.hi == 255);
        CHECK(ok2 && r2.lo == 0 && r2.hi == 433);
        bounds_free(b);
    }
    sc_pipeline_free(P);
}

/* A float used as an index without a clamp cannot be bounded; every such
 * access is reported, not only the first. */
static void unbounded_gather(void) {
    P = sc_pipeline_new("unbounded");
    sc_func *f = def1("f", sc_binary(P, SC_MUL, sc_cast(P, SC_F32, V("x")), sc_float(P, 0.5)));
    sc_func *lut = def1("lut", V("x"));
    sc_func *g = def1("g", add(call1(lut, sc_cast(P, SC_I32, call1(f, V("x")))),
                               call1(lut, mul(V("x"), sc_cast(P, SC_I32, call1(f, V("x")))))));
    int n = 16;
    CHECK(sc_output(P, g, 1, &n) == 0);
    CHECK(infer_fails());
    CHECK(sc_error_count(P) == 2);
    CHECK(has_error("cannot bound coordinate 0 of lut(i32(f(x))) in g: the value of f(x) is unbounded (clamp it)"));
    CHECK(has_error("cannot bound coordinate 0 of lut(x * i32(f(x))) in g: the value of f(x) is unbounded"));
    sc_pipeline_free(P);
}

/* clamp (min and max) of a 32-bit value that cannot be bounded is still
 * within the clamp: min and max pick an operand, they never wrap.  Here the
 * value is a recurrence (unbounded f32) cast to i32, and an i32 input; a
 * min alone leaves an interval too wide to be a coordinate. */
static void clamped_unbounded_i32(void) {
    P = sc_pipeline_new("clamp32");
    int n = 64;
    sc_func *in = sc_input(P, "in", SC_I32, 1, &n);
    sc_func *f = def1("f", sc_cast(P, SC_F32, call1(in, sc_clamp(P, V("x"), I(0), I(63)))));
    int rmin = 1, rext = 63;
    sc_rdom *r = sc_rdom_new(P, "r", 1, &rmin, &rext);
    sc_expr *rx = sc_rvar(P, r, 0);
    sc_expr *lhs[1] = { rx };
    CHECK(sc_update(P, f, 1, lhs, add(mul(call1(f, sub(rx, I(1))), sc_float(P, 0.5)), call1(f, rx))) == 0);
    sc_func *lut = def1("lut", mul(V("x"), I(2)));
    sc_func *lut2 = def1("lut2", V("x"));
    sc_expr *i1 = sc_clamp(P, sc_cast(P, SC_I32, mul(call1(f, V("x")), sc_float(P, 16.0))), I(0), I(15));
    sc_expr *i2 = sc_clamp(P, call1(in, sc_clamp(P, V("x"), I(0), I(63))), I(-3), I(40));
    sc_func *g = def1("g", add(call1(lut, i1), call1(lut2, i2)));
    CHECK(sc_output(P, g, 1, &n) == 0);
    bounds_result *b = infer();
    CHECK(b != NULL);
    if (b) {
        CHECK(region_is(b, lut, 0, 0, 15));
        CHECK(region_is(b, lut2, 0, -3, 40));
        bounds_free(b);
    }
    sc_pipeline_free(P);

    P = sc_pipeline_new("min32");
    sc_func *in2 = sc_input(P, "in", SC_I32, 1, &n);
    sc_func *lut3 = def1("lut", V("x"));
    sc_func *h = def1("h", call1(lut3, sc_binary(P, SC_MIN, call1(in2, sc_clamp(P, V("x"), I(0), I(63))), I(15))));
    CHECK(sc_output(P, h, 1, &n) == 0);
    CHECK(infer_fails());
    CHECK(has_error("more than 2^28 points"));
    sc_pipeline_free(P);
}

/* Reading an input outside its declared size is an error at the access. */
static void input_out_of_bounds(void) {
    P = sc_pipeline_new("oob");
    int ext[2] = { 1536, 1024 };
    sc_func *in = sc_input(P, "in", SC_U16, 2, ext);
    sc_pipeline_set_loc(P, "blur.pipe", 3, 12);
    sc_func *bx = def2("blur_x", add(call2(in, sub(V("x"), I(1)), V("y")), call2(in, V("x"), V("y"))));
    sc_pipeline_set_loc(P, "<api>", 0, 0);
    CHECK(sc_output(P, bx, 2, ext) == 0);
    CHECK(infer_fails());
    CHECK(sc_error_count(P) == 1);
    CHECK(has_error("blur.pipe:3:12: error: access in(x - 1, y) in blur_x reads in over [-1, 1534] in dimension 0, but in is defined over [0, 1535]"));
    sc_pipeline_free(P);
}

/* hist(clamp(i32(in(r)), 0, 255)) += 1: the scatter makes the histogram's
 * region [0, 255] whatever its consumer reads; a u8 index needs no clamp. */
static void histogram(void) {
    P = sc_pipeline_new("hist");
    int ext[2] = { 40, 30 }, zero[2] = { 0, 0 };
    sc_func *in = sc_input(P, "in", SC_U8, 2, ext);
    sc_rdom *r = sc_rdom_new(P, "r", 2, zero, ext);
    sc_func *hist = def1("hist", I(0));
    sc_expr *px = call2(in, sc_rvar(P, r, 0), sc_rvar(P, r, 1));
    sc_expr *at = sc_clamp(P, sc_cast(P, SC_I32, px), I(0), I(255));
    CHECK(sc_update(P, hist, 1, &at, add(call1(hist, at), I(1))) == 0);
    sc_func *h2 = def1("h2", I(0));
    sc_expr *at2 = sc_cast(P, SC_I32, sc_binary(P, SC_DIV, px, I(4)));
    CHECK(sc_update(P, h2, 1, &at2, add(call1(h2, at2), I(1))) == 0);
    sc_func *out = def1("out", add(call1(hist, V("x")), call1(h2, V("x"))));
    int n = 10;
    CHECK(sc_output(P, out, 1, &n) == 0);
    bounds_result *b = infer();
    CHECK(b != NULL);
    if (b) {
        CHECK(region_is(b, hist, 0, 0, 255));
        CHECK(region_is(b, h2, 0, 0, 63));
        CHECK(loop_is(b, hist, 0, 0, 0, 255));
        /* the update's loops are the reduction domain only */
        CHECK(b->funcs[hist->id].stages[1].nloops == 2);
        CHECK(loop_is(b, hist, 1, 0, 0, 39) && loop_is(b, hist, 1, 1, 0, 29));
        CHECK(b->funcs[hist->id].stages[1].which[0] == -1);
        bounds_free(b);
    }
    /* the evaluator aborts on a store or load outside a region */
    sc_buffer *o = NULL;
    CHECK(sc_evaluate(P, NULL, 1, &o) == 0);
    sc_buffer_free(o);
    sc_pipeline_free(P);
}

/* A running sum s(r) = s(r - 1) + in(r) over r in [0, N) reads s(-1): the
 * fixpoint grows s's region by its own updates' reads.  An IIR blur down
 * the columns keeps x as a pure loop. */
static void recurrences(void) {
    P = sc_pipeline_new("scan");
    int n = 20, zero = 0, one = 1, ext[2] = { 8, 20 };
    sc_func *in = sc_input(P, "in", SC_I32, 1, &n);
    sc_func *img = sc_input(P, "img", SC_F32, 2, ext);
    sc_rdom *r = sc_rdom_new(P, "r", 1, &zero, &n);
    sc_func *s = def1("s", I(0));
    sc_expr *rx = sc_rvar(P, r, 0);
    CHECK(sc_update(P, s, 1, &rx, add(call1(s, sub(rx, I(1))), call1(in, rx))) == 0);
    int hm1 = ext[1] - 1;
    sc_rdom *ry = sc_rdom_new(P, "ry", 1, &one, &hm1);
    sc_func *iir = def2("iir", call2(img, V("x"), V("y")));
    sc_expr *y = sc_rvar(P, ry, 0);
    sc_expr *lhs[2] = { V("x"), y };
    CHECK(sc_update(P, iir, 2, lhs,
                    sc_binary(P, SC_ADD, sc_binary(P, SC_MUL, call2(iir, V("x"), sub(y, I(1))), sc_float(P, 0.5)),
                              call2(img, V("x"), y))) == 0);
    sc_func *o = def2("o", add(sc_cast(P, SC_F32, call1(s, V("y"))), call2(iir, V("x"), V("y"))));
    CHECK(sc_output(P, o, 2, ext) == 0);
    bounds_result *b = infer();
    CHECK(b != NULL);
    if (b) {
        CHECK(region_is(b, s, 0, -1, 19));
        CHECK(loop_is(b, s, 1, 0, 0, 19));
        CHECK(region_is(b, iir, 0, 0, 7) && region_is(b, iir, 1, 0, 19));
        CHECK(b->funcs[iir->id].stages[1].nloops == 2);
        CHECK(loop_is(b, iir, 1, 0, 0, 7) && loop_is(b, iir, 1, 1, 1, 19));
        bounds_free(b);
    }
    sc_buffer *out = NULL;
    CHECK(sc_evaluate(P, NULL, 1, &out) == 0);
    sc_buffer_free(out);
    sc_pipeline_free(P);
}

/* A Func nothing reads gets extent 0 and neither its reads nor its errors
 * count. */
static void unused_func(void) {
    P = sc_pipeline_new("unused");
    int n = 10;
    sc_func *in = sc_input(P, "in", SC_U8, 1, &n);
    sc_func *dead = def1("dead", call1(in, add(V("x"), I(100))));
    sc_func *live = def1("live", call1(in, V("x")));
    CHECK(sc_output(P, live, 1, &n) == 0);
    bounds_result *b = infer();
    CHECK(b != NULL);
    if (b) {
        CHECK(b->funcs[dead->id].extent[0] == 0);
        CHECK(b->funcs[dead->id].stages[0].extent[0] == 0);
        CHECK(region_is(b, live, 0, 0, 9));
        bounds_free(b);
    }
    sc_pipeline_free(P);
}

/* The text form, one line per Func in topological order. */
static void print_format(void) {
    P = sc_pipeline_new("print");
    int ext[2] = { 16, 8 }, zero = 0, four = 4;
    sc_func *in = sc_input(P, "in", SC_U8, 2, ext);
    sc_func *e = sc_repeat_edge(P, "edge", in, NULL);
    sc_rdom *r = sc_rdom_new(P, "r", 1, &zero, &four);
    sc_func *acc = def2("acc", I(0));
    sc_expr *lhs[2] = { V("x"), V("y") };
    CHECK(sc_update(P, acc, 2, lhs, add(call2(acc, V("x"), V("y")),
                    sc_cast(P, SC_I32, call2(e, add(V("x"), sc_rvar(P, r, 0)), V("y"))))) == 0);
    CHECK(sc_output(P, acc, 2, ext) == 0);
    bounds_result *b = infer();
    CHECK(b != NULL);
    if (b) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        bounds_print(m, P, b);
        fclose(m);
        const char *want =
            "in    u8    [0, 15] x [0, 7]  input\n"
            "edge  u8    [0, 18] x [0, 7]  stages: 0: x[0..18] y[0..7]\n"
            "acc   i32   [0, 15] x [0, 7]  stages: 0: x[0..15] y[0..7] 1: x[0..15] y[0..7] r.x[0..3]\n";
        CHECK(strcmp(buf, want) == 0);
        if (strcmp(buf, want)) fprintf(stderr, "got:\n%s", buf);
        free(buf);
        bounds_free(b);
    }
    sc_pipeline_free(P);
}

/* ---- interval arithmetic, through bounds_of_expr ---- */

static bounds_interval iv_of(sc_expr *e, double xlo, double xhi, bool *ok) {
    const char *vars[2] = { "x", "y" };
    bounds_interval ivs[2] = { { xlo, xhi }, { -5, 3 } };
    return bounds_of_expr(e, 2, vars, ivs, ok);
}

static bool iv_is(sc_expr *e, double xlo, double xhi, double lo, double hi) {
    bool ok;
    bounds_interval r = iv_of(e, xlo, xhi, &ok);
    if (r.lo == lo && r.hi == hi) return true;
    char *s = ir_expr_to_string(e);
    fprintf(stderr, "  %s for x in [%g, %g]: got [%g, %g], want [%g, %g]\n", s, xlo, xhi,
            r.lo, r.hi, lo, hi);
    free(s);
    return false;
}

static void intervals(void) {
    P = sc_pipeline_new("iv");
    sc_expr *x = V("x"), *y = V("y");
    bool ok;
    /* Euclidean division: down for a positive divisor, up for a negative */
    CHECK(iv_is(dv(x, I(4)), -5, 9, -2, 2));
    CHECK(iv_is(dv(x, I(-2)), -5, 9, -4, 3));
    CHECK(iv_is(dv(x, I(0)), -5, 9, 0, 0));
    CHECK(iv_is(dv(x, y), 0, 10, -10, 10));
    /* modulo: the full period unless the operand stays in one period */
    CHECK(iv_is(sc_binary(P, SC_MOD, x, I(8)), -5, 9, 0, 7));
    CHECK(iv_is(sc_binary(P, SC_MOD, x, I(8)), 9, 13, 1, 5));
    CHECK(iv_is(sc_binary(P, SC_MOD, x, I(8)), -7, -3, 1, 5));
    CHECK(iv_is(sc_binary(P, SC_MOD, x, I(-8)), -5, 9, 0, 7));
    CHECK(iv_is(sc_binary(P, SC_MOD, x, y), 0, 100, 0, 4));
    /* products: four corners */
    CHECK(iv_is(mul(x, y), -2, 4, -20, 12));
    CHECK(iv_is(mul(x, x), -3, 5, 0, 25));
    /* min / max / clamp */
    CHECK(iv_is(sc_clamp(P, x, I(0), I(99)), -1000, 1000, 0, 99));
    CHECK(iv_is(sc_clamp(P, x, I(0), I(99)), 3, 7, 3, 7));
    /* select: a union, unless the condition is known */
    CHECK(iv_is(sc_select(P, sc_binary(P, SC_LT, x, I(0)), I(-1), y), -3, 3, -5, 3));
    CHECK(iv_is(sc_select(P, sc_binary(P, SC_LT, x, I(100)), I(-1), y), -3, 3, -1, -1));
    /* narrow types wrap to their whole range; i32 wrapping is unbounded */
    sc_expr *u = sc_cast(P, SC_U8, x);
    CHECK(iv_is(u, 0, 200, 0, 200));
    CHECK(iv_is(u, 0, 300, 0, 255));
    CHECK(iv_is(sc_binary(P, SC_ADD, u, sc_const(P, SC_U8, 100)), 0, 100, 100, 200));
    CHECK(iv_is(sc_binary(P, SC_ADD, u, sc_const(P, SC_U8, 100)), 0, 200, 0, 255));
    CHECK(iv_is(sc_binary(P, SC_SUB, u, sc_const(P, SC_U8, 1)), 0, 10, 0, 255));
    iv_of(mul(x, I(1 << 20)), 0, 1 << 12, &ok);
    CHECK(!ok);
    /* float -> int truncates and saturates */
    sc_expr *fx = sc_binary(P, SC_MUL, sc_cast(P, SC_F32, x), sc_float(P, 0.5));
    CHECK(iv_is(sc_cast(P, SC_I32, fx), -5, 9, -2, 4));
    CHECK(iv_is(sc_cast(P, SC_U8, sc_binary(P, SC_MUL, fx, sc_float(P, 100))), -5, 9, 0, 255));
    /* math */
    sc_expr *sq = sc_math(P, SC_SQRT, 1, &fx);
    CHECK(iv_is(sq, 0, 8, 0, 2));
    iv_of(sq, -1, 8, &ok);          /* sqrt of a negative is NaN */
    CHECK(!ok);
    CHECK(iv_is(sc_math(P, SC_SIN, 1, &fx), -100, 100, -1, 1));
    /* an unbounded f32 (maybe NaN) stays unbounded, except through clamp */
    int ext4 = 4;
    sc_func *fin = sc_input(P, "fin", SC_F32, 1, &ext4);
    sc_expr *fv = sc_call(P, fin, 1, &x);
    iv_of(sc_math(P, SC_SIN, 1, &fv), 0, 1, &ok);
    CHECK(!ok);
    iv_of(sc_binary(P, SC_MUL, fv, sc_float(P, 0)), 0, 1, &ok);
    CHECK(!ok);
    CHECK(iv_is(sc_cast(P, SC_I32, sc_binary(P, SC_MUL, sc_clamp(P, fv, sc_float(P, 0), sc_float(P, 1)),
                                             sc_float(P, 10))), 0, 1, 0, 10));
    sc_expr *ax = x;
    CHECK(iv_is(sc_math(P, SC_ABS, 1, &ax), -7, 3, 0, 7));
    sc_expr *fl = sc_math(P, SC_FLOOR, 1, &fx);
    CHECK(iv_is(sc_cast(P, SC_I32, fl), -5, 9, -3, 4));
    /* bit operations: bounded for bounded non-negative operands */
    CHECK(iv_is(sc_binary(P, SC_BITAND, x, I(15)), -1000, 1000, 0, 15));
    CHECK(iv_is(sc_binary(P, SC_BITOR, x, I(3)), 0, 9, 3, 15));
    CHECK(iv_is(sc_binary(P, SC_SHR, x, I(2)), -9, 9, -3, 2));
    CHECK(iv_is(sc_binary(P, SC_SHL, x, I(2)), -1, 9, -4, 36));
    /* unknown variables and parameters are unbounded; rvars are bounded */
    iv_of(add(x, V("z")), 0, 1, &ok);
    CHECK(!ok);
    sc_param *k = sc_param_new(P, "k", SC_I32, 3);
    iv_of(add(x, sc_param_ref(P, k)), 0, 1, &ok);
    CHECK(!ok);
    sc_param *k8 = sc_param_new(P, "k8", SC_U8, 3);
    CHECK(iv_is(add(x, sc_cast(P, SC_I32, sc_param_ref(P, k8))), 0, 1, 0, 256));
    int mn = -2, ex = 5;
    sc_rdom *r = sc_rdom_new(P, "r", 1, &mn, &ex);
    CHECK(iv_is(add(x, sc_rvar(P, r, 0)), 0, 1, -2, 3));
    sc_pipeline_free(P);
}

/* A load takes the value range of the Func it reads, computed from its
 * definition with every variable unbounded. */
static void load_values(void) {
    P = sc_pipeline_new("loads");
    int n = 10;
    sc_func *in = sc_input(P, "in", SC_U16, 1, &n);
    sc_func *f = def1("f", sc_binary(P, SC_SHR, call1(in, V("x")), sc_const(P, SC_U16, 8)));
    sc_func *g = def1("g", sc_binary(P, SC_MIN, sc_cast(P, SC_I32, call1(f, V("x"))), I(100)));
    sc_func *h = def1("h", call1(in, V("x")));
    sc_expr *c = call1(g, V("x"));
    CHECK(iv_is(c, 0, 0, 0, 100));
    CHECK(iv_is(sc_cast(P, SC_I32, call1(h, V("x"))), 0, 0, 0, 65535));
    bool ok;
    iv_of(sc_cast(P, SC_I32, sc_binary(P, SC_ADD, call1(h, V("x")), call1(h, V("x")))), 0, 0, &ok);
    CHECK(ok);
    sc_pipeline_free(P);
}


/* ---- soundness against the evaluator ---- */

static uint64_t rng_state;
static unsigned rnd(unsigned n) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng_state >> 33) % n;
}

static sc_func *rin_u8, *rin_i16, *rin_f32;

/* A random expression over x in [0, 40), y in [0, 8) and three inputs. */
static sc_expr *rand_expr(int depth) {
    static const sc_type casts[] = { SC_U8, SC_I8, SC_U16, SC_I16, SC_I32, SC_U32, SC_F32 };
    if (depth == 0 || rnd(5) == 0) {
        switch (rnd(6)) {
        case 0: return sub(V("x"), I(20));
        case 1: return V("y");
        case 2: return I((int)rnd(40) - 20);
        case 3: return call2(rin_u8, V("x"), V("y"));
        case 4: return call2(rin_i16, V("x"), V("y"));
        default: return sc_binary(P, SC_MUL, call2(rin_f32, V("x"), V("y")), sc_float(P, 8.0));
        }
    }
    sc_expr *a = rand_expr(depth - 1);
    unsigned k = rnd(14);
    if (k < 8) {
        static const sc_binop ops[] = { SC_ADD, SC_SUB, SC_MUL, SC_DIV, SC_MOD, SC_MIN, SC_MAX, SC_ADD };
        return sc_binary(P, ops[k], a, rand_expr(depth - 1));
    }
    bool fl = sc_expr_type(a) == SC_F32;
    switch (k) {
    case 8: return sc_cast(P, casts[rnd(7)], a);
    case 9: return sc_select(P, sc_binary(P, rnd(2) ? SC_LT : SC_GE, a, rand_expr(depth - 1)),
                             a, rand_expr(depth - 1));
    case 10: return sc_math(P, SC_ABS, 1, &a);
    case 11:
        if (fl) {
            static const sc_mathfn fns[] = { SC_SQRT, SC_FLOOR, SC_CEIL, SC_ROUND, SC_SIN, SC_TANH, SC_LOG };
            return sc_math(P, fns[rnd(7)], 1, &a);
        }
        return sc_binary(P, rnd(2) ? SC_SHR : SC_SHL, a, I(rnd(4)));
    case 12:
        if (fl) return sc_cast(P, SC_I32, a);
        return sc_binary(P, rnd(2) ? SC_BITAND : rnd(2) ? SC_BITOR : SC_BITXOR, a,
                         rnd(2) ? I(rnd(64)) : rand_expr(depth - 1));
    default: return sc_unary(P, fl ? SC_NEG : rnd(2) ? SC_NEG : SC_BITNOT, a);
    }
}

/* Every value the evaluator computes for a random expression lies in the
 * interval bounds inference gives it.  Build with -DRANDOM_CASES=100000
 * (and -DRANDOM_SEED=...) for a longer search. */
#ifndef RANDOM_CASES
#define RANDOM_CASES 400
#endif
#ifndef RANDOM_DEPTH
#define RANDOM_DEPTH 4
#endif
#ifndef RANDOM_SEED
#define RANDOM_SEED 12345
#endif
static void random_soundness(void) {
    rng_state = RANDOM_SEED;
    int ext[2] = { 40, 8 }, tested = 0, bounded = 0;
    for (int t = 0; t < RANDOM_CASES; t++) {
        P = sc_pipeline_new("rand");
        rin_u8 = sc_input(P, "a", SC_U8, 2, ext);
        rin_i16 = sc_input(P, "b", SC_I16, 2, ext);
        rin_f32 = sc_input(P, "c", SC_F32, 2, ext);
        sc_expr *e = rand_expr(RANDOM_DEPTH);
        if (!e || sc_expr_type(e) == SC_BOOL) { sc_pipeline_free(P); continue; }
        sc_func *f = def2("f", e);
        if (sc_output(P, f, 2, ext) != 0 || sc_pipeline_finalize(P) != 0) {
            sc_pipeline_free(P);
            continue;
        }
        const char *vars[2] = { "x", "y" };
        bounds_interval env[2] = { { 0, 39 }, { 0, 7 } };
        bool ok;
        bounds_interval r = bounds_of_expr(f->stages[0].value, 2, vars, env, &ok);
        sc_buffer *out = NULL;
        CHECK(sc_evaluate(P, NULL, (uint64_t)t, &out) == 0);
        tested++;
        bounded += ok;
        for (int y = 0; out && y < ext[1]; y++)
            for (int x = 0; x < ext[0]; x++) {
                double v = sc_buffer_get(out, (int[]){ x, y });
                double tol = sc_expr_type(e) == SC_F32 ? 1e-5 * (1 + fabs(v)) : 0;
                bool in = (v >= r.lo - tol && v <= r.hi + tol) ||
                          (isinf(v) && (v > 0 ? r.hi > 3.4e38 : r.lo < -3.4e38)) ||
                          (isnan(v) && !ok);
                if (!in) {
                    char *s = ir_expr_to_string(f->stages[0].value);
                    fprintf(stderr, "  %s at (%d, %d) = %.9g, outside [%g, %g]\n", s, x, y, v, r.lo, r.hi);
                    free(s);
                    CHECK(in);
                    x = ext[0];
                    y = ext[1];
                }
            }
        sc_buffer_free(out);
        sc_pipeline_free(P);
    }
    CHECK(tested > RANDOM_CASES * 3 / 4 && bounded > RANDOM_CASES / 4);
}

/* Random gathers q(c0, c1) + in(c2, c3): whenever bounds inference accepts
 * the pipeline, the evaluator (which aborts on a read outside a computed
 * region) must run it; when it refuses, the reason is a bounds error. */
static void random_regions(void) {
    rng_state = RANDOM_SEED + 1;
    int ext[2] = { 40, 8 }, accepted = 0;
    for (int t = 0; t < RANDOM_CASES; t++) {
        P = sc_pipeline_new("rand");
        rin_u8 = sc_input(P, "a", SC_U8, 2, ext);
        rin_i16 = sc_input(P, "b", SC_I16, 2, ext);
        rin_f32 = sc_input(P, "c", SC_U8, 2, ext);     /* an f32 input is unbounded */
        sc_func *q = def2("q", add(mul(V("x"), I(3)), V("y")));
        sc_expr *c[4];
        for (int i = 0; i < 4; i++) {
            c[i] = rand_expr(RANDOM_DEPTH - 1);
            if (c[i] && sc_expr_type(c[i]) == SC_BOOL) c[i] = NULL;
            /* keep input reads plausible: clamp two in three */
            if (c[i] && i >= 2 && rnd(3) != 0)
                c[i] = sc_clamp(P, sc_cast(P, SC_I32, c[i]), I(0), I(ext[i - 2] - 1));
            c[i] = sc_cast(P, SC_I32, c[i]);
        }
        sc_func *g = c[0] && c[1] && c[2] && c[3]
            ? def2("g", add(call2(q, c[0], c[1]), sc_cast(P, SC_I32, call2(rin_u8, c[2], c[3]))))
            : NULL;
        if (!g || sc_output(P, g, 2, ext) != 0) { sc_pipeline_free(P); continue; }
        if (sc_pipeline_finalize(P) != 0) {
            const char *m = sc_error_message(P, 0);
            bool known = strstr(m, "cannot bound") || strstr(m, "but a is defined over");
            CHECK(known);
            if (!known) fprintf(stderr, "  %s\n", m);
        } else {
            /* a huge (but bounded) region of q would only be slow */
            bounds_result *b = bounds_infer(P);
            int64_t pts = b ? b->funcs[q->id].extent[0] * b->funcs[q->id].extent[1] : 0;
            bounds_free(b);
            if (pts > 1000000) { sc_pipeline_free(P); continue; }
            sc_buffer *out = NULL;
            CHECK(sc_evaluate(P, NULL, (uint64_t)t, &out) == 0);
            sc_buffer_free(out);
            accepted++;
        }
        sc_pipeline_free(P);
    }
    CHECK(accepted > RANDOM_CASES / 40);
}

int main(void) {
    RUN(blur_3x3);
    RUN(resampling);
    RUN(clamped_gather);
    RUN(unbounded_gather);
    RUN(clamped_unbounded_i32);
    RUN(input_out_of_bounds);
    RUN(histogram);
    RUN(recurrences);
    RUN(unused_func);
    RUN(print_format);
    RUN(intervals);
    RUN(load_values);
    RUN(random_soundness);
    RUN(random_regions);
    CHECK_EXIT();
}
