/*
 * test_parse.c - the .pipe front end: every compile-time feature (templates,
 * loops, conditionals, let, indexed names, sizes, params and --set), the
 * sugar (1-D rdom names, +=, inline reductions, boundary helpers), Halide's
 * type rules, constant folding and its agreement with the evaluator, error
 * locations, and the values small pipelines compute.
 *
 * Pipelines are parsed from strings; results are checked on the IR and by
 * evaluating with explicit inputs against values worked out here by hand.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir.h"
#include "stagecraft.h"

/* ---- helpers ---------------------------------------------------------- */

static sc_pipeline *parse_with(const char *text, int small, int nsets,
                               const char **names, const double *values)
{
    sc_parse_options o = { small, nsets, names, values };
    return sc_parse_string("t.pipe", text, strlen(text), &o);
}

/* Parses text (small sizes) and reports any error. */
static sc_pipeline *parse_ok(const char *text)
{
    sc_pipeline *p = parse_with(text, 1, 0, NULL, NULL);
    for (int i = 0; i < sc_error_count(p); i++)
        fprintf(stderr, "  unexpected: %s\n", sc_error_message(p, i));
    CHECK(sc_error_count(p) == 0);
    return p;
}

/* Whether parsing text gives an error starting with "t.pipe:" prefix and
 * containing substring sub. */
static int parse_fails(const char *text, const char *prefix, const char *sub)
{
    sc_pipeline *p = parse_with(text, 1, 0, NULL, NULL);
    char want[128];
    snprintf(want, sizeof want, "t.pipe:%s: error: ", prefix);
    int found = 0;
    for (int i = 0; i < sc_error_count(p); i++) {
        const char *m = sc_error_message(p, i);
        if (!strncmp(m, want, strlen(want)) && strstr(m, sub)) found = 1;
    }
    if (!found) {
        fprintf(stderr, "  wanted %s...%s; got %d error(s):\n", want, sub, sc_error_count(p));
        for (int i = 0; i < sc_error_count(p); i++)
            fprintf(stderr, "    %s\n", sc_error_message(p, i));
    }
    sc_pipeline_free(p);
    return found;
}

/* The deterministic input value at (x, y, z): small enough for every type. */
static double input_value(int x, int y, int z) { return (x * 7 + y * 13 + z * 3 + 1) % 101; }

/* Evaluates p with every input filled by input_value; returns the outputs
 * (the caller frees them with free_outputs), or NULL on error. */
static sc_buffer **evaluate(sc_pipeline *p)
{
    if (sc_error_count(p)) return NULL;
    int ni = sc_input_count(p), no = sc_output_count(p);
    sc_buffer **in = calloc((size_t)ni + 1, sizeof *in);
    sc_buffer **out = calloc((size_t)no + 1, sizeof *out);
    for (int i = 0; i < ni; i++) {
        const sc_func *f = sc_input_at(p, i);
        in[i] = sc_buffer_new(f->type, f->ndims, NULL, f->extent);
        int c[SC_MAX_DIMS] = {0};
        for (int64_t k = 0; k < sc_buffer_count(in[i]); k++) {
            int64_t r = k;
            for (int d = 0; d < f->ndims; d++) { c[d] = (int)(r % f->extent[d]); r /= f->extent[d]; }
            sc_buffer_set(in[i], c, input_value(c[0], c[1], c[2]));
        }
    }
    int rc = sc_evaluate(p, in, 1, out);
    for (int i = 0; i < ni; i++) sc_buffer_free(in[i]);
    free(in);
    if (rc != 0) {
        for (int i = 0; i < sc_error_count(p); i++) fprintf(stderr, "  %s\n", sc_error_message(p, i));
        free(out);
        return NULL;
    }
    return out;
}

static void free_outputs(sc_pipeline *p, sc_buffer **out)
{
    for (int i = 0; out && i < sc_output_count(p); i++) sc_buffer_free(out[i]);
    free(out);
}

static double at(const sc_buffer *b, int x, int y)
{
    int c[SC_MAX_DIMS] = { x, y };
    return sc_buffer_get(b, c);
}

static const sc_func *func(const sc_pipeline *p, const char *name)
{
    const sc_func *f = sc_func_lookup(p, name);
    if (!f) fprintf(stderr, "  no Func named %s\n", name);
    return f;
}

/* The type of the first output of a one-line definition "f(x) = EXPR". */
static sc_type type_of(const char *decls, const char *expr)
{
    char text[1024];
    snprintf(text, sizeof text, "%s\nf(x) = %s;\noutput f(4);\n", decls, expr);
    sc_pipeline *p = parse_ok(text);
    sc_type t = sc_error_count(p) ? SC_TYPE_COUNT : sc_func_type(sc_func_lookup(p, "f"));
    sc_pipeline_free(p);
    return t;
}

/* ---- compile-time features -------------------------------------------- */

static void templates_mangle_locals(void)
{
    sc_pipeline *p = parse_ok(
        "input u8 in(16, 16);\n"
        "template down(f) {\n"
        "    dx(x, y) = (u16(f(2*x, y)) + f(2*x + 1, y)) / 2;\n"
        "    down(x, y) = (dx(x, 2*y) + dx(x, 2*y + 1)) / 2;\n"
        "}\n"
        "g[0] = repeat_edge(in);\n"
        "for j in 1 .. 3 { g[j] = down(g[j - 1]); }\n"
        "output g_2(4, 4);\n");
    CHECK(func(p, "g_1") && func(p, "g_1_dx") && func(p, "g_2") && func(p, "g_2_dx"));
    CHECK(!sc_func_lookup(p, "dx") && !sc_func_lookup(p, "down") && !sc_func_lookup(p, "g_3"));
    CHECK(sc_func_type(sc_func_lookup(p, "g_2")) == SC_U16);
    sc_buffer **o = evaluate(p);
    CHECK(o);
    if (o) {
        /* g_2(x, y) is the mean of the 4x4 block at (4x, 4y), rounded down
         * at each of the four halvings. */
        int ok = 1;
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++) {
                double g1[2][2];
                for (int b = 0; b < 2; b++)
                    for (int a = 0; a < 2; a++) {
                        int X = 2 * x + a, Y = 2 * y + b;
                        double d0 = floor((input_value(2 * X, 2 * Y, 0) + input_value(2 * X + 1, 2 * Y, 0)) / 2);
                        double d1 = floor((input_value(2 * X, 2 * Y + 1, 0) + input_value(2 * X + 1, 2 * Y + 1, 0)) / 2);
                        g1[b][a] = floor((d0 + d1) / 2);
                    }
                double e0 = floor((g1[0][0] + g1[0][1]) / 2), e1 = floor((g1[1][0] + g1[1][1]) / 2);
                if (at(o[0], x, y) != floor((e0 + e1) / 2)) ok = 0;
            }
        CHECK(ok);
    }
    free_outputs(p, o);
    sc_pipeline_free(p);
}

static void templates_numbers_and_result_name(void)
{
    sc_pipeline *p = parse_ok(
        "input i32 in(8);\n"
        "template scale(f, k, s) {\n"
        "    t(x) = f(x) + k;\n"
        "    scale(x) = f32(t(x)) * s;\n"
        "}\n"
        "r = scale(in, 3, 0.5);\n"
        "output r(8);\n");
    CHECK(func(p, "r_t") && func(p, "r"));
    CHECK(sc_func_type(sc_func_lookup(p, "r")) == SC_F32);
    sc_buffer **o = evaluate(p);
    CHECK(o);
    for (int x = 0; o && x < 8; x++) CHECK(at(o[0], x, 0) == (input_value(x, 0, 0) + 3) * 0.5);
    free_outputs(p, o);
    sc_pipeline_free(p);
    /* Two instances of one template have separate locals. */
    p = parse_ok(
        "input i32 in(8);\n"
        "template inc(f) { t(x) = f(x) + 1; inc(x) = t(x); }\n"
        "a = inc(in);\n"
        "b = inc(a);\n"
        "output b(8);\n");
    CHECK(func(p, "a_t") && func(p, "b_t"));
    sc_buffer **o2 = evaluate(p);
    CHECK(o2 && at(o2[0], 5, 0) == input_value(5, 0, 0) + 2);
    free_outputs(p, o2);
    sc_pipeline_free(p);
}

static void for_loops(void)
{
    sc_pipeline *p = parse_ok(
        "input i32 in(8);\n"
        "g[0](x) = in(x);\n"
        "for j in 1 .. 4 { g[j](x) = g[j - 1](x) + j; }\n"
        "for j in 5 .. 5 { never(x) = in(x); }\n"
        "for j in 0 .. 2 { for k in 0 .. 2 { h[j * 2 + k](x) = in(x) * (j * 10 + k); } }\n"
        "output g_3(8);\n"
        "output h_3(8);\n");
    CHECK(func(p, "g_1") && func(p, "g_3") && !sc_func_lookup(p, "g_4"));
    CHECK(!sc_func_lookup(p, "never"));
    CHECK(func(p, "h_0") && func(p, "h_3") && !sc_func_lookup(p, "h_4"));
    sc_buffer **o = evaluate(p);
    CHECK(o);
    for (int x = 0; o && x < 8; x++) {
        CHECK(at(o[0], x, 0) == input_value(x, 0, 0) + 6);
        CHECK(at(o[1], x, 0) == input_value(x, 0, 0) * 11);
    }
    free_outputs(p, o);
    sc_pipeline_free(p);
}

static void if_else_chains(void)
{
    sc_pipeline *p = parse_ok(
        "input i32 in(4);\n"
        "for j in 0 .. 6 {\n"
        "    if j == 0 { g[j](x) = in(x); }\n"
        "    else if j < 4 { g[j](x) = g[j - 1](x) + 1; }\n"
        "    else if j == 4 { g[j](x) = g[j - 1](x) * 2; }\n"
        "    else { g[j](x) = g[j - 1](x) - 100; }\n"
        "}\n"
        "if 0 { bad(x) = nosuch(x); }\n"
        "output g_5(4);\n");
    CHECK(!sc_func_lookup(p, "bad"));
    sc_buffer **o = evaluate(p);
    CHECK(o && at(o[0], 2, 0) == (input_value(2, 0, 0) + 3) * 2 - 100);
    free_outputs(p, o);
    sc_pipeline_free(p);
}

static void let_int_and_float(void)
{
    sc_pipeline *p = parse_ok(
        "let k = 2 + 3 * 4;\n"
        "let s = 0.25;\n"
        "let t = k * s;\n"
        "input u8 in(4);\n"
        "a(x) = in(x) + k;\n"
        "b(x) = in(x) * s + t;\n"
        "output a(4);\n"
        "output b(4);\n");
    CHECK(sc_func_type(sc_func_lookup(p, "a")) == SC_U8);
    CHECK(sc_func_type(sc_func_lookup(p, "b")) == SC_F32);
    sc_buffer **o = evaluate(p);
    CHECK(o);
    if (o) {
        CHECK(at(o[0], 1, 0) == input_value(1, 0, 0) + 14);
        CHECK(at(o[1], 3, 0) == input_value(3, 0, 0) * 0.25f + 3.5f);
    }
    free_outputs(p, o);
    sc_pipeline_free(p);
}

static void indexed_names(void)
{
    sc_pipeline *p = parse_ok(
        "let n = 2;\n"
        "input u8 in[n + 1](4);\n"
        "g[n * 2](x) = in[3](x);\n"
        "rdom r[1](0, 4);\n"
        "s(x) = 0;\n"
        "s(x) += i32(g_4(r_1));\n"
        "output s(1);\n");
    CHECK(func(p, "in_3") && func(p, "g_4"));
    sc_buffer **o = evaluate(p);
    CHECK(o && at(o[0], 0, 0) == input_value(0, 0, 0) + input_value(1, 0, 0) +
                                    input_value(2, 0, 0) + input_value(3, 0, 0));
    free_outputs(p, o);
    sc_pipeline_free(p);
}

static const char *sizes_text =
    "size W = 100 small 10;\n"
    "size H = 50;\n"
    "param i32 bias = 7;\n"
    "param f32 gain = 1.5;\n"
    "input i32 in(W, H);\n"
    "f(x, y) = f32(in(x, y) + bias) * gain;\n"
    "output f(W, H);\n";

static void sizes_small_and_set(void)
{
    sc_pipeline *p = parse_with(sizes_text, 0, 0, NULL, NULL);
    CHECK(sc_error_count(p) == 0 && sc_input_at(p, 0)->extent[0] == 100 &&
          sc_input_at(p, 0)->extent[1] == 50);
    sc_pipeline_free(p);
    p = parse_with(sizes_text, 1, 0, NULL, NULL);
    CHECK(sc_error_count(p) == 0 && sc_input_at(p, 0)->extent[0] == 10 &&
          sc_output_at(p, 0)->out_extent[0] == 10 && sc_output_at(p, 0)->out_extent[1] == 50);
    sc_pipeline_free(p);
    const char *names[] = { "H", "W" };
    const double values[] = { 3, 12 };
    p = parse_with(sizes_text, 1, 2, names, values);   /* --set wins over small */
    CHECK(sc_error_count(p) == 0 && sc_input_at(p, 0)->extent[0] == 12 &&
          sc_input_at(p, 0)->extent[1] == 3);
    sc_pipeline_free(p);
    const char *bad[] = { "Q" };
    p = parse_with(sizes_text, 1, 1, bad, values);
    CHECK(sc_error_count(p) == 1 && strstr(sc_error_message(p, 0), "there is no size or param named Q"));
    sc_pipeline_free(p);
}

static void params_and_set(void)
{
    sc_pipeline *p = parse_ok(sizes_text);
    /* A param stays a parameter in the IR: it is not folded. */
    char *text = sc_pipeline_to_text(p);
    CHECK(strstr(text, "param i32 bias = 7;") && strstr(text, "param f32 gain = 1.5;"));
    CHECK(strstr(text, "in(x, y) + bias") && strstr(text, "* gain"));
    free(text);
    sc_buffer **o = evaluate(p);
    CHECK(o && at(o[0], 2, 1) == (input_value(2, 1, 0) + 7) * 1.5f);
    free_outputs(p, o);
    sc_pipeline_free(p);
    const char *names[] = { "gain", "bias" };
    const double values[] = { -2, 100 };
    p = parse_with(sizes_text, 1, 2, names, values);
    CHECK(sc_error_count(p) == 0);
    CHECK(sc_param_lookup(p, "gain") && sc_param_lookup(p, "gain")->value == -2);
    o = evaluate(p);
    CHECK(o && at(o[0], 2, 1) == (input_value(2, 1, 0) + 100) * -2.0f);
    free_outputs(p, o);
    sc_pipeline_free(p);
    /* A runtime change of the parameter changes the result. */
    p = parse_ok(sizes_text);
    CHECK(sc_param_set(sc_param_lookup(p, "bias"), 1) == 0);
    o = evaluate(p);
    CHECK(o && at(o[0], 0, 0) == (input_value(0, 0, 0) + 1) * 1.5f);
    free_outputs(p, o);
    sc_pipeline_free(p);
}

/* ---- sugar --------------------------------------------------------------- */

static void rdom_bare_name_and_sugar(void)
{
    sc_pipeline *p = parse_ok(
        "input u8 in(8);\n"
        "rdom r(2, 4);\n"
        "a(x) = 0;\n"
        "a(x) = a(x) + i32(in(r));\n"
        "b(x) = 0;\n"
        "b(x) += i32(in(r.x));\n"
        "c(x) = 1000;\n"
        "c(x) -= i32(in(r));\n"
        "d(x) = 1;\n"
        "d(x) *= 2;\n"
        "d(x) *= 3;\n"
        "e(x) = 1000;\n"
        "e(x) /= 7;\n"
        "output a(1); output b(1); output c(1); output d(1); output e(1);\n");
    const sc_func *a = func(p, "a");
    CHECK(a && a->nstages == 2 && a->stages[1].rdom && a->stages[1].rdom->extent[0] == 4);
    CHECK(func(p, "d") && func(p, "d")->nstages == 3);
    sc_buffer **o = evaluate(p);
    CHECK(o);
    if (o) {
        double s = 0;
        for (int i = 2; i < 6; i++) s += input_value(i, 0, 0);
        CHECK(at(o[0], 0, 0) == s && at(o[1], 0, 0) == s && at(o[2], 0, 0) == 1000 - s);
        CHECK(at(o[3], 0, 0) == 6 && at(o[4], 0, 0) == 142);
    }
    free_outputs(p, o);
    sc_pipeline_free(p);
}

static void inline_reductions(void)
{
    sc_pipeline *p = parse_ok(
        "input u8 in(16);\n"
        "rdom r(0, 3);\n"
        "s(x) = sum(i32(in(x + r)));\n"
        "hi(x) = maximum(in(x + r));\n"
        "lo(x) = minimum(f32(in(x + r)) * 0.5);\n"
        "output s(8); output hi(8); output lo(8);\n");
    /* Each becomes a helper Func named after the Func that uses it. */
    const sc_func *h = NULL;
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = p->funcs.items[i];
        if (!strncmp(f->name, "s_sum", 5)) h = f;
    }
    CHECK(h && h->helper && h->nstages == 2 && h->ndims == 1);
    CHECK(sc_func_type(sc_func_lookup(p, "hi")) == SC_U8);
    sc_buffer **o = evaluate(p);
    CHECK(o);
    for (int x = 0; o && x < 8; x++) {
        double s = 0, mx = 0, mn = 1e9;
        for (int i = 0; i < 3; i++) {
            double v = input_value(x + i, 0, 0);
            s += v;
            mx = fmax(mx, v);
            mn = fmin(mn, v * 0.5);
        }
        CHECK(at(o[0], x, 0) == s && at(o[1], x, 0) == mx && at(o[2], x, 0) == mn);
    }
    free_outputs(p, o);
    sc_pipeline_free(p);
}

/* 0-D Funcs: defined with no arguments, reduced into, read by later
 * stages and by each other, outputs without sizes; the evaluator gives a
 * scalar output as one element.  Wrong uses name the place. */
static void zero_dim_funcs(void)
{
    sc_pipeline *p = parse_ok(
        "input u8 in(10);\n"
        "rdom r(0, 10);\n"
        "total() = 0;\n"
        "total() += i32(in(r));\n"
        "total() = total() * 2;\n"
        "top() = maximum(in(r));\n"
        "mean() = f32(total()) / 20.0;\n"
        "k() = 3;\n"
        "out(x) = i32(in(x)) * k() - i32(top());\n"
        "output out(10);\n"
        "output total();\n"
        "output mean();\n");
    const sc_func *t = func(p, "total"), *m = func(p, "mean");
    CHECK(t && t->ndims == 0 && t->nstages == 3 && t->is_output == 2);
    CHECK(m && m->ndims == 0 && m->type == SC_F32);
    /* the sum's helper has no free variable, so it is 0-D too */
    const sc_func *h = NULL;
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = p->funcs.items[i];
        if (!strncmp(f->name, "top_max", 7)) h = f;
    }
    CHECK(h && h->helper && h->ndims == 0 && h->nstages == 2);
    sc_buffer **o = evaluate(p);
    CHECK(o);
    if (o) {
        double sum = 0, top = 0;
        for (int x = 0; x < 10; x++) { sum += input_value(x, 0, 0); top = fmax(top, input_value(x, 0, 0)); }
        CHECK(o[1]->ndims == 1 && o[1]->extent[0] == 1 && at(o[1], 0, 0) == 2 * sum);
        CHECK(at(o[2], 0, 0) == (double)(float)(2 * sum / 20.0));
        for (int x = 0; x < 10; x++) CHECK(at(o[0], x, 0) == input_value(x, 0, 0) * 3 - top);
    }
    free_outputs(p, o);
    /* the IR text prints them and parses back */
    char *text = sc_pipeline_to_text(p);
    CHECK(text && strstr(text, "total() = total() + i32(in(r.x));") && strstr(text, "output total();"));
    sc_pipeline *q = parse_ok(text);
    char *again = sc_pipeline_to_text(q);
    CHECK(text && again && !strcmp(text, again));
    free(text);
    free(again);
    sc_pipeline_free(q);
    sc_pipeline_free(p);
    /* bad uses */
    const char *decl = "input f32 in(4);\nrdom r(0, 4);\nt() = sum(in(r));\n";
    char buf[512];
    snprintf(buf, sizeof buf, "%sf(x) = in(x) * t(x);\noutput f(4);\n", decl);
    CHECK(parse_fails(buf, "4:16", "t is 0-D (a scalar) and takes no arguments, got 1; write t()"));
    snprintf(buf, sizeof buf, "%sf(x) = in(x) * t;\noutput f(4);\n", decl);
    CHECK(parse_fails(buf, "4:16", "t is a 0-D Func (a scalar); call it as t()"));
    snprintf(buf, sizeof buf, "%soutput t(1);\n", decl);
    CHECK(parse_fails(buf, "4:8", "output t is 0-D (a scalar): declare it without sizes, as output t(); got 1 size"));
    snprintf(buf, sizeof buf, "%st(x) += 1.0;\noutput t();\n", decl);
    CHECK(parse_fails(buf, "4:3", "t is 0-D (a scalar); its updates take no arguments"));
    snprintf(buf, sizeof buf, "%sf(x) = in(x);\ng(x) = f();\noutput g(4);\n", decl);
    CHECK(parse_fails(buf, "5:8", "f takes 1 argument, got 0"));
    snprintf(buf, sizeof buf, "%sf(x) = in(x);\noutput f();\n", decl);
    CHECK(parse_fails(buf, "5:8", "output f has 1 dimension, got 0 sizes"));
    CHECK(parse_fails("input f32 in();\nf(x) = 1.0;\noutput f(4);\n", "1:11", "input in: must have 1 to 4 dimensions, got 0"));
    CHECK(parse_fails("input f32 in(4);\nrdom r();\nf(x) = in(x);\noutput f(4);\n", "2:6",
                      "reduction domain r must have 1 to 4 dimensions, got 0"));
}

static void boundary_helpers(void)
{
    sc_pipeline *p = parse_ok(
        "input u8 in(4, 3);\n"
        "e = repeat_edge(in);\n"
        "c = constant_exterior(in, 9);\n"
        "g(x, y) = in(x, y) * 2;\n"
        "ge = repeat_edge(g, 4, 3);\n"
        "a(x, y) = e(x - 2, y + 1);\n"
        "b(x, y) = c(x - 2, y + 1);\n"
        "d(x, y) = ge(x - 2, y + 1);\n"
        "output a(8, 4); output b(8, 4); output d(8, 4);\n");
    sc_buffer **o = evaluate(p);
    CHECK(o);
    int ok = 1;
    for (int y = 0; o && y < 4; y++)
        for (int x = 0; x < 8; x++) {
            int X = x - 2, Y = y + 1;
            int cx = X < 0 ? 0 : X > 3 ? 3 : X, cy = Y > 2 ? 2 : Y;
            bool inside = X >= 0 && X < 4 && Y < 3;
            if (at(o[0], x, y) != input_value(cx, cy, 0)) ok = 0;
            if (at(o[1], x, y) != (inside ? input_value(X, Y, 0) : 9)) ok = 0;
            if (at(o[2], x, y) != input_value(cx, cy, 0) * 2) ok = 0;
        }
    CHECK(ok);
    free_outputs(p, o);
    sc_pipeline_free(p);
}

/* ---- types ---------------------------------------------------------------- */

static void halide_type_rules(void)
{
    const char *d = "input u8 a(4); input u16 b(4); input u32 c(4);\n"
                    "input i8 s(4); input i16 t(4); input i32 u(4); input f32 v(4);";
    CHECK(type_of(d, "a(x) + 1") == SC_U8);          /* a literal takes the other side's type */
    CHECK(type_of(d, "1 + a(x)") == SC_U8);
    CHECK(type_of(d, "a(x) * 255") == SC_U8);
    CHECK(type_of(d, "a(x) + t(x)") == SC_I16);      /* u8 + i16 -> i16 */
    CHECK(type_of(d, "c(x) + u(x)") == SC_I32);      /* u32 + i32 -> i32 */
    CHECK(type_of(d, "a(x) + b(x)") == SC_U16);      /* same signedness: the wider */
    CHECK(type_of(d, "s(x) + u(x)") == SC_I32);
    CHECK(type_of(d, "a(x) + s(x)") == SC_I8);       /* mixed, 8 bits: i8 */
    CHECK(type_of(d, "b(x) - s(x)") == SC_I16);
    CHECK(type_of(d, "u(x) * 0.5") == SC_F32);       /* int * float -> f32 */
    CHECK(type_of(d, "2 * 0.5") == SC_F32);
    CHECK(type_of(d, "a(x) * v(x)") == SC_F32);
    CHECK(type_of(d, "x + 1") == SC_I32);            /* variables are i32 */
    CHECK(type_of(d, "7") == SC_I32);                /* a lone literal is i32 */
    CHECK(type_of(d, "select(a(x) > 3, a(x), 2)") == SC_U8);
    CHECK(type_of(d, "abs(s(x))") == SC_I8);         /* abs keeps its type */
    CHECK(type_of(d, "sqrt(a(x))") == SC_F32);
    CHECK(type_of(d, "min(b(x), 3)") == SC_U16);
    CHECK(type_of(d, "u8(u(x)) + 1") == SC_U8);
    CHECK(type_of(d, "a(x) << 2") == SC_U8);
    CHECK(type_of(d, "lerp(a(x), a(x), a(x))") == SC_U8);
    CHECK(type_of(d, "lerp(a(x), a(x), 0.5)") == SC_F32);  /* a float weight: f32 */
    CHECK(type_of(d, "-a(x)") == SC_U8);
    CHECK(type_of(d, "i32(a(x) > 2)") == SC_I32);
}

static void literal_range_errors(void)
{
    CHECK(parse_fails("input u8 a(4);\nf(x) = a(x) + 256;\noutput f(4);\n", "2:13", "integer literal 256 does not fit u8"));
    CHECK(parse_fails("input i8 a(4);\nf(x) = a(x) - 129;\noutput f(4);\n", "2:13", "integer literal 129 does not fit i8"));
    CHECK(parse_fails("input u16 a(4);\nf(x) = a(x) & -1;\noutput f(4);\n", "2:13", "integer literal -1 does not fit u16"));
    CHECK(parse_fails("input i32 a(4);\nf(x) = a(x) + 3000000000;\noutput f(4);\n", "2:15", "is too large"));
    /* -2147483648 is fine (the minus applies to 2147483648) only as i32... */
    sc_pipeline *p = parse_ok("input i32 a(4);\nf(x) = a(x) + (-2147483647 - 1);\noutput f(4);\n");
    sc_pipeline_free(p);
    /* ...and a u32 literal may not exceed what a literal can be (i32). */
    CHECK(parse_fails("input u32 a(4);\nf(x) = a(x) + 4000000000;\noutput f(4);\n", "2:15", "is too large"));
}

/* ---- folding ---------------------------------------------------------------- */

static void constant_folding(void)
{
    sc_pipeline *p = parse_ok(
        "input u8 in(4);\n"
        "f(x) = in(x) + (2 + 3) * 4 - 10 / 3;\n"
        "g(x) = u16(300) + 1;\n"
        "h(x) = x * (-7 / 2) + (-7 % 2) + (7 / -2) * 100;\n"
        "output f(4); output g(4); output h(4);\n");
    char *text = sc_pipeline_to_text(p);
    /* Literals fold before they meet a typed operand; typed casts of
     * constants fold too. */
    CHECK(strstr(text, "f(x) = in(x) + u8(20) - u8(3);"));
    CHECK(strstr(text, "g(x) = u16(300) + u16(1);"));
    CHECK(strstr(text, "h(x) = x * (-4) + 1 + (-300);"));
    free(text);
    sc_buffer **o = evaluate(p);
    CHECK(o && at(o[0], 1, 0) == input_value(1, 0, 0) + 17 && at(o[1], 0, 0) == 301 &&
          at(o[2], 3, 0) == -12 + 1 - 300);
    free_outputs(p, o);
    sc_pipeline_free(p);
    /* Folding that leaves i32 is an error, not a wrap. */
    CHECK(parse_fails("let k = 65536 * 65536;\ninput u8 in(4);\nf(x) = in(x);\noutput f(4);\n",
                      "1:15", "integer literal 4294967296 does not fit i32"));
}

/* A compile-time constant (let) must have the value the evaluator gives the
 * same expression at run time: both are checked here on expressions where
 * they could differ (wrapping, rounding of division, shifts, saturation,
 * float rounding). */
static void compile_time_matches_runtime(void)
{
    static const char *exprs[] = {
        "-7 / 2", "-7 % 2", "7 / -2", "7 % -2", "-7 / -2", "-7 % -2", "7 / 0", "7 % 0",
        "i32(-7) / i32(-2)", "i32(7) % i32(-3)", "u8(200) + u8(100)", "u8(3) - u8(5)",
        "i8(100) * i8(3)", "u16(65535) * u16(65535)", "i32(2147483647) + 1",
        "i16(-32768) / i16(-1)", "1 << 31", "1 << 40", "-8 >> 1", "-8 >> 40", "8 << -1",
        "u8(255) << 1", "i8(-128) >> 7", "u8(300)", "u8(-1.5)", "i8(200.7)", "u8(2.5 * 200)",
        "i32(-1e10 * 1.0)", "u16(0.0 / 0.0 * 0.0 + 70000.0)", "abs(i8(-128))", "abs(-5)",
        "~5", "~u8(5)", "2.5 * 3", "7.0 % 2.5", "-7.5 % 2.0", "sqrt(2.0)", "exp(1.0)",
        "pow(2.0, 0.5)", "floor(-2.5)", "round(2.5)", "round(3.5)", "round(-0.5)",
        "atan2(1.0, 2.0)", "tanh(0.5)", "sin(1.0) + cos(1.0)", "log(10.0)", "ceil(1.25)",
        "select(3 > 2, 10, 20)", "min(3, -4)", "max(u8(3), u8(200))", "clamp(17, 0, 10)",
        "i32(2.0 * 1.5) + 1", "0.1 * 3", "f32(16777217)", "lerp(0, 10, 0.25)",
        "select(u8(250) + u8(10) > u8(3), 1, 0)", "(1 & 3) | (4 ^ 6)", "i16(30000) + i16(30000)",
        "-u8(1)", "1.0 / 3.0", "u32(7) / u32(2)",
    };
    int n = (int)(sizeof exprs / sizeof exprs[0]), bad = 0;
    for (int i = 0; i < n; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "let k = %s;\ninput u8 in(1);\na(x) = %s;\nb(x) = k;\noutput a(1);\noutput b(1);\n",
                 exprs[i], exprs[i]);
        sc_pipeline *p = parse_with(text, 0, 0, NULL, NULL);
        sc_buffer **o = evaluate(p);
        if (!o) {
            fprintf(stderr, "  %s: %s\n", exprs[i], sc_error_count(p) ? sc_error_message(p, 0) : "no output");
            bad++;
        } else {
            double rt = at(o[0], 0, 0), ct = at(o[1], 0, 0);
            if (rt != ct && !(isnan(rt) && isnan(ct))) {
                fprintf(stderr, "  %s: run time %.9g, compile time %.9g\n", exprs[i], rt, ct);
                bad++;
            }
        }
        free_outputs(p, o);
        sc_pipeline_free(p);
    }
    CHECK(bad == 0);
}

/* ---- errors ----------------------------------------------------------------- */

static void error_locations(void)
{
    CHECK(parse_fails("input u8 in(4);\nf(x) = in(x) +;\noutput f(4);\n", "2:15", "expected an expression, found ';'"));
    CHECK(parse_fails("input u8 in(4);\n  f(x) = g(x);\noutput f(4);\n", "2:10", "unknown name 'g'"));
    CHECK(parse_fails("input u8 in(4);\nf(x) = in(x, 1);\noutput f(4);\n", "2:8", "in takes 1 argument, got 2"));
    CHECK(parse_fails("input u8 in(4);\nf(x) =\n    in(x) > 1;\noutput f(4);\n", "2:1", "f would hold bool values"));
    CHECK(parse_fails("input u8 in(4);\nf(x) = in(x);\nf(x) = f(x + 1);\noutput f(4);\n", "3:1", "must use x unmodified"));
    CHECK(parse_fails("input u8 in(4);\nf(x) = in(x)\n", "3:1", "expected ';' after the definition, found end of file"));
    CHECK(parse_fails("\n\n   \t$", "3:5", "invalid character '$'"));
    /* An error not tied to a line names only the file. */
    sc_pipeline *p = parse_with("input u8 in(4);\nf(x) = in(x);\n", 0, 0, NULL, NULL);
    CHECK(sc_error_count(p) == 1 && !strcmp(sc_error_message(p, 0),
          "t.pipe: error: the pipeline has no output (declare one with: output NAME(sizes);)"));
    sc_pipeline_free(p);
}

/* One mistake gives one message: later statements are still parsed (their
 * own errors reported), and uses of a name whose definition failed are not
 * reported again. */
static void errors_recover(void)
{
    sc_pipeline *p = parse_with(
        "input u8 in(4);\n"
        "size W = 4;\n"
        "size W = 5;\n"              /* error after the ';': the next line still counts */
        "a(x) = in(x) + 300;\n"      /* a fails... */
        "b(x) = a(x) + 1;\n"         /* ...so b fails silently... */
        "c(x) = in(x) +;\n"
        "d(x) = in(W - 1 - x);\n"    /* fine */
        "output b(4);\n"             /* ...and so does this */
        "output d(4);\n"
        "output e(4);\n",
        0, 0, NULL, NULL);
    CHECK(sc_error_count(p) == 4);
    const char *want[] = { "t.pipe:3:6: error: 'W' is already defined",
                           "t.pipe:4:14: error: integer literal 300 does not fit u8",
                           "t.pipe:6:15: error: expected an expression",
                           "t.pipe:10:8: error: unknown Func 'e'" };
    for (int i = 0; i < 4 && i < sc_error_count(p); i++)
        CHECK(!strncmp(sc_error_message(p, i), want[i], strlen(want[i])));
    CHECK(sc_func_lookup(p, "d") && sc_func_lookup(p, "d")->is_output);
    sc_pipeline_free(p);
}

static void nesting_limit(void)
{
    char text[4096];
    /* 150 parentheses are fine, 250 are too deep. */
    for (int depth = 150; depth <= 250; depth += 100) {
        int n = snprintf(text, sizeof text, "input u8 in(4);\nf(x) = ");
        for (int i = 0; i < depth; i++) text[n++] = '(';
        n += snprintf(text + n, sizeof text - (size_t)n, "in(x)");
        for (int i = 0; i < depth; i++) text[n++] = ')';
        snprintf(text + n, sizeof text - (size_t)n, ";\noutput f(4);\n");
        sc_pipeline *p = parse_with(text, 0, 0, NULL, NULL);
        if (depth == 150) CHECK(sc_error_count(p) == 0);
        else CHECK(sc_error_count(p) == 1 && strstr(sc_error_message(p, 0), "nesting deeper than 200 levels"));
        sc_pipeline_free(p);
    }
}

/* ---- small pipelines -------------------------------------------------------- */

static void evaluate_recurrence_and_scatter(void)
{
    sc_pipeline *p = parse_ok(
        "input u8 in(8, 2);\n"
        "rdom r(1, 7);\n"
        "# a running sum along x, per row\n"
        "cs(x, y) = i32(in(x, y));\n"
        "cs(r, y) = cs(r - 1, y) + cs(r, y);\n"
        "# a histogram of in / 16\n"
        "rdom p(0, 8, 0, 2);\n"
        "hist(b) = 0;\n"
        "hist(i32(in(p.x, p.y)) / 16) += 1;\n"
        "output cs(8, 2);\n"
        "output hist(7);\n");
    sc_buffer **o = evaluate(p);
    CHECK(o);
    if (o) {
        int ok = 1;
        for (int y = 0; y < 2; y++) {
            double s = 0;
            for (int x = 0; x < 8; x++) {
                s += input_value(x, y, 0);
                if (at(o[0], x, y) != s) ok = 0;
            }
        }
        double h[7] = {0};
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 8; x++) h[(int)input_value(x, y, 0) / 16]++;
        for (int b = 0; b < 7; b++) if (at(o[1], b, 0) != h[b]) ok = 0;
        CHECK(ok);
    }
    free_outputs(p, o);
    sc_pipeline_free(p);
}

static void evaluate_gather_and_math(void)
{
    sc_pipeline *p = parse_ok(
        "input u8 img(6);\n"
        "input u8 lut(101);\n"
        "g(x) = lut(img(x) % 101);\n"
        "m(x) = u8(clamp(sqrt(f32(img(x))) * 10, 0, 255));\n"
        "s(x) = select(img(x) > 50 && x != 2, i16(img(x)) - 100, -i16(img(x)));\n"
        "output g(6); output m(6); output s(6);\n");
    sc_buffer **o = evaluate(p);
    CHECK(o);
    for (int x = 0; o && x < 6; x++) {
        int v = (int)input_value(x, 0, 0);
        CHECK(at(o[0], x, 0) == input_value(v % 101, 0, 0));
        CHECK(at(o[1], x, 0) == (int)fminf(sqrtf((float)v) * 10, 255));
        CHECK(at(o[2], x, 0) == (v > 50 && x != 2 ? v - 100 : -v));
    }
    free_outputs(p, o);
    sc_pipeline_free(p);
}

int main(void)
{
    RUN(templates_mangle_locals);
    RUN(templates_numbers_and_result_name);
    RUN(for_loops);
    RUN(if_else_chains);
    RUN(let_int_and_float);
    RUN(indexed_names);
    RUN(sizes_small_and_set);
    RUN(params_and_set);
    RUN(rdom_bare_name_and_sugar);
    RUN(inline_reductions);
    RUN(zero_dim_funcs);
    RUN(boundary_helpers);
    RUN(halide_type_rules);
    RUN(literal_range_errors);
    RUN(constant_folding);
    RUN(compile_time_matches_runtime);
    RUN(error_locations);
    RUN(errors_recover);
    RUN(nesting_limit);
    RUN(evaluate_recurrence_and_scatter);
    RUN(evaluate_gather_and_math);
    CHECK_EXIT();
}
