/*
 * test_analysis.c - access Jacobians (deps) and operation counts (ops).
 *
 * Small pipelines built with the C API; the expected matrices and counts
 * are worked out by hand next to each check.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* open_memstream */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "check.h"
#include "stagecraft.h"

static sc_pipeline *P;
static sc_expr *V(const char *n) { return sc_var(P, n); }
static sc_expr *I(int64_t v) { return sc_int(P, v); }
static sc_expr *add(sc_expr *a, sc_expr *b) { return sc_binary(P, SC_ADD, a, b); }
static sc_expr *sub(sc_expr *a, sc_expr *b) { return sc_binary(P, SC_SUB, a, b); }
static sc_expr *mul(sc_expr *a, sc_expr *b) { return sc_binary(P, SC_MUL, a, b); }
static sc_expr *call2(sc_func *f, sc_expr *a, sc_expr *b) {
    sc_expr *args[2] = { a, b };
    return sc_call(P, f, 2, args);
}
static const char *XY[2] = { "x", "y" };

static sc_func *def2(const char *name, sc_expr *value) {
    sc_func *f = sc_func_new(P, name);
    CHECK(sc_define(P, f, 2, XY, value) == 0);
    return f;
}

static bool finalize(void) {
    int n = sc_pipeline_finalize(P);
    for (int i = 0; i < sc_error_count(P); i++)
        fprintf(stderr, "  unexpected: %s\n", sc_error_message(P, i));
    return n == 0;
}

/* The access of consumer stage (c, s) to producer p, k-th of them. */
static const deps_access *find(const deps_result *d, const sc_func *c, int s,
                               const sc_func *p, int k) {
    for (int i = 0; i < d->n; i++) {
        const deps_access *a = &d->items[i];
        if (a->consumer == c->id && a->stage == s && a->producer == p->id && k-- == 0) return a;
    }
    return NULL;
}

static bool coef_is(const deps_access *a, int r, int c, int64_t num, int64_t den) {
    return a && a->affine[r] && a->coef[r][c].num == num && a->coef[r][c].den == den;
}

static bool off_is(const deps_access *a, int r, int64_t num, int64_t den) {
    return a && a->affine[r] && a->offset[r].num == num && a->offset[r].den == den;
}

static char *print_to_string(void (*fn)(FILE *, const sc_pipeline *, const void *), const void *r) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    fn(m, P, r);
    fclose(m);
    return buf;
}
static void deps_print_v(FILE *o, const sc_pipeline *p, const void *r) { deps_print(o, p, r); }
static void ops_print_v(FILE *o, const sc_pipeline *p, const void *r) { ops_print(o, p, r); }

/* f(2x + 1, y - 1): [[2 0 | 1] [0 1 | -1]]; f(x / 2, y): 1/2; a clamped
 * coordinate keeps the clamped expression's row, flagged (1-Lipschitz),
 * a min of two varying operands is not affine; f(y, x) transposes. */
static void jacobians(void) {
    P = sc_pipeline_new("jac");
    int ext[2] = { 64, 64 };
    sc_func *in = sc_input(P, "in", SC_F32, 2, ext);
    sc_func *f = def2("f", call2(in, sc_clamp(P, V("x"), I(0), I(63)), sc_clamp(P, V("y"), I(0), I(63))));
    sc_func *g = def2("g", add(add(call2(f, add(mul(I(2), V("x")), I(1)), sub(V("y"), I(1))),
                                   call2(f, sc_binary(P, SC_DIV, add(V("x"), I(1)), I(2)), V("y"))),
                               call2(f, V("y"), V("x"))));
    sc_func *h = def2("h", add(call2(g, sc_clamp(P, sub(V("x"), I(1)), I(0), I(15)), V("y")),
                               call2(g, sc_binary(P, SC_MIN, V("x"), V("y")), I(3))));
    CHECK(sc_output(P, h, 2, (int[]){ 16, 16 }) == 0);
    CHECK(finalize());
    deps_result *d = deps_analyse(P);
    CHECK(d->n == 6);
    const deps_access *a = find(d, g, 0, f, 0);
    CHECK(a && a->rows == 2 && a->cols == 2);
    CHECK(coef_is(a, 0, 0, 2, 1) && coef_is(a, 0, 1, 0, 1) && off_is(a, 0, 1, 1));
    CHECK(coef_is(a, 1, 0, 0, 1) && coef_is(a, 1, 1, 1, 1) && off_is(a, 1, -1, 1));
    a = find(d, g, 0, f, 1);
    CHECK(coef_is(a, 0, 0, 1, 2) && off_is(a, 0, 1, 2) && coef_is(a, 1, 1, 1, 1));
    a = find(d, g, 0, f, 2);
    CHECK(coef_is(a, 0, 0, 0, 1) && coef_is(a, 0, 1, 1, 1) && coef_is(a, 1, 0, 1, 1));
    a = find(d, f, 0, in, 0);
    CHECK(a && a->affine[0] && a->affine[1] && a->clamped[0] && a->clamped[1]);
    CHECK(coef_is(a, 0, 0, 1, 1) && coef_is(a, 0, 1, 0, 1) && coef_is(a, 1, 1, 1, 1) && off_is(a, 0, 0, 1));
    a = find(d, h, 0, g, 0);
    CHECK(a && a->affine[0] && a->clamped[0] && coef_is(a, 0, 0, 1, 1) && off_is(a, 0, -1, 1));
    CHECK(a->affine[1] && !a->clamped[1]);
    a = find(d, h, 0, g, 1);
    CHECK(a && !a->affine[0] && a->affine[1] && off_is(a, 1, 3, 1));
    char *s = print_to_string(deps_print_v, d);
    CHECK(strstr(s, "g.0 <- f(2 * x + 1, y - 1)  loops: x y\n  [2 0 | 1]\n  [0 1 | -1]\n") != NULL);
    CHECK(strstr(s, "g.0 <- f((x + 1) / 2, y)  loops: x y\n  [1/2 0 | 1/2]\n  [0 1 | 0]\n") != NULL);
    CHECK(strstr(s, "f.0 <- in(max(min(x, 63), 0), max(min(y, 63), 0))  loops: x y\n  [1 0 | 0] clamped\n  [0 1 | 0] clamped\n") != NULL);
    if (!strstr(s, "[1/2 0 | 1/2]")) fprintf(stderr, "%s", s);
    free(s);
    deps_free(d);
    sc_pipeline_free(P);
}

/* Update stages: loops are the pure variables then the reduction domain.
 * A scatter's coordinate is data-dependent; a recurrence reads row r - 1;
 * the loads inside a scatter's coordinate are accesses too. */
static void update_jacobians(void) {
    P = sc_pipeline_new("upd");
    int ext[2] = { 8, 6 }, one = 1, hm1 = 5, zero[2] = { 0, 0 };
    sc_func *in = sc_input(P, "in", SC_U8, 2, ext);
    sc_rdom *r = sc_rdom_new(P, "r", 1, &one, &hm1);
    sc_func *iir = def2("iir", sc_cast(P, SC_I32, call2(in, V("x"), V("y"))));
    sc_expr *ry = sc_rvar(P, r, 0);
    sc_expr *lhs[2] = { V("x"), ry };
    CHECK(sc_update(P, iir, 2, lhs, add(call2(iir, V("x"), sub(ry, I(1))), I(3))) == 0);
    sc_rdom *q = sc_rdom_new(P, "q", 2, zero, ext);
    sc_func *hist = sc_func_new(P, "hist");
    CHECK(sc_define(P, hist, 1, XY, I(0)) == 0);
    sc_expr *at = sc_cast(P, SC_I32, call2(in, sc_rvar(P, q, 0), sc_rvar(P, q, 1)));
    sc_expr *self = sc_call(P, hist, 1, &at);
    CHECK(sc_update(P, hist, 1, &at, add(self, I(1))) == 0);
    sc_func *o = def2("o", add(call2(iir, V("x"), V("y")), sc_call(P, hist, 1, (sc_expr *[]){ V("x") })));
    CHECK(sc_output(P, o, 2, ext) == 0);
    CHECK(finalize());
    deps_result *d = deps_analyse(P);
    const deps_access *a = find(d, iir, 1, iir, 0);
    CHECK(a && a->cols == 2);
    CHECK(coef_is(a, 0, 0, 1, 1) && coef_is(a, 0, 1, 0, 1) && off_is(a, 0, 0, 1));
    CHECK(coef_is(a, 1, 0, 0, 1) && coef_is(a, 1, 1, 1, 1) && off_is(a, 1, -1, 1));
    /* hist update: lhs in(q.x, q.y), then value hist(...) and in(...) again */
    a = find(d, hist, 1, in, 0);
    CHECK(a && a->cols == 2);
    CHECK(coef_is(a, 0, 0, 1, 1) && coef_is(a, 1, 1, 1, 1) && coef_is(a, 0, 1, 0, 1));
    CHECK(find(d, hist, 1, in, 1) != NULL);
    a = find(d, hist, 1, hist, 0);
    CHECK(a && !a->affine[0]);
    char *s = print_to_string(deps_print_v, d);
    CHECK(strstr(s, "iir.1 <- iir(x, r.x - 1)  loops: x r.x\n  [1 0 | 0]\n  [0 1 | -1]\n") != NULL);
    free(s);
    deps_free(d);
    sc_pipeline_free(P);
}

static int64_t count(const ops_result *o, const sc_func *f, int s, ops_kind k, sc_type t) {
    for (int i = 0; i < o->n; i++)
        if (o->items[i].func == f->id && o->items[i].stage == s) return o->items[i].count[k][t];
    return -1;
}

/* g(x, y) = in(x, y) * 2 + in(x + 1, y), in u8:
 *   add.u8 1, mul.u8 1, const.u8 1 (the 2 becomes u8), load_input.u8 2,
 *   add.i32 1 and const.i32 1 (x + 1), var.i32 6 (x y on the left, x y x y
 *   in the loads), store.u8 1.
 * h: select(x > y, f32(g(x, y)), sqrt(...)) counts a lt.i32, a cast, a
 * select, a math and a load_func. */
static void op_counts(void) {
    P = sc_pipeline_new("ops");
    int ext[2] = { 8, 8 };
    sc_func *in = sc_input(P, "in", SC_U8, 2, ext);
    sc_func *g = def2("g", add(mul(call2(in, V("x"), V("y")), I(2)), call2(in, add(V("x"), I(1)), V("y"))));
    sc_expr *gf = sc_cast(P, SC_F32, call2(g, V("x"), V("y")));
    sc_func *h = def2("h", sc_select(P, sc_binary(P, SC_GT, V("x"), V("y")), gf, sc_math(P, SC_SQRT, 1, &gf)));
    sc_rdom *r = sc_rdom_new(P, "r", 1, (int[]){ 0 }, (int[]){ 3 });
    sc_expr *lhs[2] = { V("x"), V("y") };
    CHECK(sc_update(P, h, 2, lhs, sc_binary(P, SC_ADD, call2(h, V("x"), V("y")),
                                            sc_cast(P, SC_F32, sc_rvar(P, r, 0)))) == 0);
    CHECK(sc_output(P, h, 2, (int[]){ 7, 8 }) == 0);   /* g reads in(x + 1) */
    CHECK(finalize());
    ops_result *o = ops_count(P);
    CHECK(o->n == 3);
    CHECK(count(o, g, 0, OPS_ADD, SC_U8) == 1);
    CHECK(count(o, g, 0, OPS_MUL, SC_U8) == 1);
    CHECK(count(o, g, 0, OPS_CONST, SC_U8) == 1);
    CHECK(count(o, g, 0, OPS_LOAD_INPUT, SC_U8) == 2);
    CHECK(count(o, g, 0, OPS_ADD, SC_I32) == 1);
    CHECK(count(o, g, 0, OPS_CONST, SC_I32) == 1);
    CHECK(count(o, g, 0, OPS_VAR, SC_I32) == 6);
    CHECK(count(o, g, 0, OPS_STORE, SC_U8) == 1);
    CHECK(count(o, h, 0, OPS_LT, SC_I32) == 1);
    CHECK(count(o, h, 0, OPS_LT, SC_BOOL) == 0);
    CHECK(count(o, h, 0, OPS_LOAD_FUNC, SC_U8) == 2);    /* gf occurs twice */
    CHECK(count(o, h, 0, OPS_CAST, SC_F32) == 2);
    CHECK(count(o, h, 0, OPS_MATH, SC_F32) == 1);
    CHECK(count(o, h, 0, OPS_SELECT, SC_F32) == 1);
    CHECK(count(o, h, 1, OPS_LOAD_SELF, SC_F32) == 1);
    CHECK(count(o, h, 1, OPS_ADD, SC_F32) == 1);
    CHECK(count(o, h, 1, OPS_VAR, SC_I32) == 5);        /* x y = h(x, y) + f32(r.x) */
    CHECK(count(o, h, 1, OPS_STORE, SC_F32) == 1);
    char *s = print_to_string(ops_print_v, o);
    const char *want_g = "g.0:  const.u8 1  const.i32 1  var.i32 6  add.u8 1  add.i32 1  mul.u8 1  load_input.u8 2  store.u8 1\n";
    CHECK(strstr(s, want_g) != NULL);
    if (!strstr(s, want_g)) fprintf(stderr, "%s", s);
    free(s);
    CHECK(strcmp(ops_kind_name(OPS_LOAD_SELF), "load_self") == 0);
    ops_free(o);
    sc_pipeline_free(P);
    /* a subtree of constants is one constant: k(x) = in(x) * (-1.0 / 12)
     * + sqrt(f32(2)) has one multiply, one add and two constants */
    const char *src = "pipeline folded;\ninput f32 in(8);\nk(x) = in(x) * (-1.0 / 12) + sqrt(f32(2));\n"
                      "output k(8);\n";
    P = sc_parse_string("folded.pipe", src, strlen(src), NULL);
    CHECK(sc_error_count(P) == 0);
    sc_func *k = sc_func_lookup(P, "k");
    o = ops_count(P);
    CHECK(k && count(o, k, 0, OPS_MUL, SC_F32) == 1 && count(o, k, 0, OPS_ADD, SC_F32) == 1);
    CHECK(k && count(o, k, 0, OPS_DIV, SC_F32) == 0 && count(o, k, 0, OPS_NEG, SC_F32) == 0);
    CHECK(k && count(o, k, 0, OPS_MATH, SC_F32) == 0 && count(o, k, 0, OPS_CAST, SC_F32) == 0);
    CHECK(k && count(o, k, 0, OPS_CONST, SC_F32) == 2);
    ops_free(o);
    sc_pipeline_free(P);
}

/* pow(a, 2.0) counts as one f32 multiplication, as the back ends compute
 * it (a * a); pow(a, 3.0) and pow(a, 2.5) stay math. */
static void square_counts(void) {
    P = sc_pipeline_new("squares");
    int ext[2] = { 8, 8 };
    sc_func *in = sc_input(P, "in", SC_F32, 2, ext);
    sc_expr *sq[2] = { call2(in, V("x"), V("y")), sc_float(P, 2.0) };
    sc_expr *cube[2] = { call2(in, V("x"), V("y")), sc_float(P, 3.0) };
    sc_expr *frac[2] = { call2(in, V("x"), V("y")), sc_float(P, 2.5) };
    sc_func *g = def2("g", sc_math(P, SC_POW, 2, sq));
    sc_func *h = def2("h", add(sc_math(P, SC_POW, 2, cube), sc_math(P, SC_POW, 2, frac)));
    CHECK(sc_output(P, g, 2, (int[]){ 8, 8 }) == 0 && sc_output(P, h, 2, (int[]){ 8, 8 }) == 0);
    CHECK(finalize());
    CHECK(ir_expr_is_square(sc_math(P, SC_POW, 2, sq)) && !ir_expr_is_square(sc_math(P, SC_POW, 2, cube)));
    ops_result *o = ops_count(P);
    CHECK(count(o, g, 0, OPS_MUL, SC_F32) == 1 && count(o, g, 0, OPS_MATH, SC_F32) == 0);
    CHECK(count(o, h, 0, OPS_MUL, SC_F32) == 0 && count(o, h, 0, OPS_MATH, SC_F32) == 2);
    ops_free(o);
    sc_pipeline_free(P);
}

/* Division and remainder by a constant count as the compilers' code:
 * by a power of two a shift or a mask (an f32 division a multiplication),
 * by another positive integer a multiply-high and a shift (and, for a
 * remainder, a multiply-subtract), by 1 nothing; by a variable or an f32
 * constant that is not a power of two they stay division. */
static void constant_division_counts(void) {
    const char *src = "pipeline divs;\ninput i32 in(16);\ninput f32 fin(16);\nparam i32 n = 3;\n"
                      "a(x) = in(x) / 4 + in(x) % 8;\n"
                      "b(x) = in(x) / 3 + in(x) % 3;\n"
                      "c(x) = in(x) / n + in(x) % n + in(x) / 1;\n"
                      "d(x) = fin(x) / 2.0 + fin(x) / 3.0 + fin(x) / 0.25;\n"
                      "e(x) = in(x) / -2 + in(x) % -4;\n"
                      "output a(16);\noutput b(16);\noutput c(16);\noutput d(16);\noutput e(16);\n";
    P = sc_parse_string("divs.pipe", src, strlen(src), NULL);
    CHECK(sc_error_count(P) == 0);
    for (int i = 0; i < sc_error_count(P); i++) fprintf(stderr, "  %s\n", sc_error_message(P, i));
    sc_func *a = sc_func_lookup(P, "a"), *b = sc_func_lookup(P, "b");
    sc_func *c = sc_func_lookup(P, "c"), *d = sc_func_lookup(P, "d"), *e = sc_func_lookup(P, "e");
    CHECK(a && b && c && d && e);
    if (!a || !b || !c || !d || !e) return;
    ops_result *o = ops_count(P);
    CHECK(count(o, a, 0, OPS_DIV, SC_I32) == 0 && count(o, a, 0, OPS_MOD, SC_I32) == 0);
    CHECK(count(o, a, 0, OPS_SHIFT, SC_I32) == 1 && count(o, a, 0, OPS_BITWISE, SC_I32) == 1);
    CHECK(count(o, a, 0, OPS_MUL, SC_I32) == 0 && count(o, a, 0, OPS_ADD, SC_I32) == 1);
    CHECK(count(o, b, 0, OPS_DIV, SC_I32) == 0 && count(o, b, 0, OPS_MOD, SC_I32) == 0);
    CHECK(count(o, b, 0, OPS_MUL, SC_I32) == 3 && count(o, b, 0, OPS_SHIFT, SC_I32) == 2);
    CHECK(count(o, b, 0, OPS_SUB, SC_I32) == 1 && count(o, b, 0, OPS_ADD, SC_I32) == 1);
    CHECK(count(o, c, 0, OPS_DIV, SC_I32) == 1 && count(o, c, 0, OPS_MOD, SC_I32) == 1);
    CHECK(count(o, c, 0, OPS_ADD, SC_I32) == 2 && count(o, c, 0, OPS_MUL, SC_I32) == 0);
    CHECK(count(o, c, 0, OPS_SHIFT, SC_I32) == 0);
    CHECK(count(o, d, 0, OPS_MUL, SC_F32) == 2 && count(o, d, 0, OPS_DIV, SC_F32) == 1);
    CHECK(count(o, d, 0, OPS_ADD, SC_F32) == 2);
    /* a negative divisor stays a division (C's rounds toward zero) */
    CHECK(count(o, e, 0, OPS_DIV, SC_I32) == 1 && count(o, e, 0, OPS_MOD, SC_I32) == 1);
    CHECK(count(o, e, 0, OPS_SHIFT, SC_I32) == 0 && count(o, e, 0, OPS_BITWISE, SC_I32) == 0);
    ops_free(o);
    sc_pipeline_free(P);
}

int main(void) {
    RUN(jacobians);
    RUN(update_jacobians);
    RUN(op_counts);
    RUN(square_counts);
    RUN(constant_division_counts);
    CHECK_EXIT();
}
