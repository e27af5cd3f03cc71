/*
 * test_roundtrip.c - the IR text form prints and parses back to the same IR.
 *
 * For every .pipe file in apps/ (the directory is read at run time, so new
 * apps are covered without touching this file): parse with the small sizes, print
 * with sc_pipeline_to_text, parse that text, print again.  The two texts
 * must be equal, the two IRs structurally equal Func by Func, and both
 * pipelines must compute bit-identical outputs from the same seed.  One
 * PASS/FAIL line per app.  Run from the repository root (tests/run.sh does).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir.h"
#include "stagecraft.h"

static void print_errors(const char *what, const sc_pipeline *p)
{
    for (int i = 0; i < sc_error_count(p) && i < 5; i++)
        fprintf(stderr, "  %s: %s\n", what, sc_error_message(p, i));
}

/* The first line where a and b differ, for the log. */
static void show_difference(const char *a, const char *b)
{
    int line = 1;
    while (*a && *a == *b) { if (*a == '\n') line++; a++; b++; }
    while (line > 1 && a[-1] != '\n') { a--; b--; }
    fprintf(stderr, "  line %d differs:\n    %.*s\n    %.*s\n", line,
            (int)strcspn(a, "\n"), a, (int)strcspn(b, "\n"), b);
}

/* Func by Func, stage by stage: same names, kinds, types, shapes, and
 * structurally equal expressions. */
static int same_ir(const sc_pipeline *p, const sc_pipeline *q)
{
    if (p->funcs.n != q->funcs.n || p->inputs.n != q->inputs.n ||
        p->outputs.n != q->outputs.n || p->rdoms.n != q->rdoms.n || p->params.n != q->params.n) {
        fprintf(stderr, "  different numbers of Funcs, inputs, outputs, rdoms or params\n");
        return 0;
    }
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = p->funcs.items[i], *g = sc_func_lookup(q, f->name);
        if (!g || g->kind != f->kind || g->type != f->type || g->ndims != f->ndims ||
            g->nstages != f->nstages || g->is_output != f->is_output) {
            fprintf(stderr, "  Func %s differs\n", f->name);
            return 0;
        }
        for (int d = 0; d < f->ndims; d++)
            if ((f->kind == FUNC_INPUT && f->extent[d] != g->extent[d]) ||
                (f->is_output && f->out_extent[d] != g->out_extent[d])) {
                fprintf(stderr, "  Func %s: extent %d differs\n", f->name, d);
                return 0;
            }
        for (int s = 0; s < f->nstages; s++) {
            const ir_stage *a = &f->stages[s], *b = &g->stages[s];
            int ok = a->nargs == b->nargs && ir_expr_equal(a->value, b->value) &&
                     (!a->rdom) == (!b->rdom) && (!a->rdom || !strcmp(a->rdom->name, b->rdom->name));
            for (int k = 0; ok && k < a->nargs; k++) ok = ir_expr_equal(a->args[k], b->args[k]);
            if (!ok) {
                fprintf(stderr, "  Func %s: stage %d differs\n", f->name, s);
                return 0;
            }
        }
    }
    return 1;
}

/* Evaluates p and q from the same seed; 1 when every output is
 * bit-identical. */
static int same_outputs(sc_pipeline *p, sc_pipeline *q)
{
    int n = sc_output_count(p), ok = 1;
    sc_buffer **a = calloc((size_t)n + 1, sizeof *a), **b = calloc((size_t)n + 1, sizeof *b);
    if (sc_evaluate(p, NULL, 1, a) != 0) { print_errors("evaluate", p); ok = 0; }
    if (ok && sc_evaluate(q, NULL, 1, b) != 0) { print_errors("evaluate the reparsed IR", q); ok = 0; }
    for (int i = 0; ok && i < n; i++) {
        size_t bytes = (size_t)sc_buffer_count(a[i]) * sc_type_size(a[i]->type);
        if (a[i]->type != b[i]->type || sc_buffer_count(a[i]) != sc_buffer_count(b[i]) ||
            memcmp(a[i]->data, b[i]->data, bytes) != 0) {
            fprintf(stderr, "  output %s differs\n", sc_func_name(sc_output_at(p, i)));
            ok = 0;
        }
    }
    for (int i = 0; i < n; i++) { sc_buffer_free(a[i]); sc_buffer_free(b[i]); }
    free(a);
    free(b);
    return ok;
}

static int roundtrip(const char *path)
{
    sc_parse_options small = { 1, 0, NULL, NULL };
    sc_pipeline *p = sc_parse_file(path, &small), *q = NULL;
    char *t1 = NULL, *t2 = NULL;
    int ok = sc_error_count(p) == 0;
    if (!ok) print_errors("parse", p);
    if (ok) {
        t1 = sc_pipeline_to_text(p);
        q = sc_parse_string("ir.pipe", t1, strlen(t1), NULL);
        ok = sc_error_count(q) == 0;
        if (!ok) print_errors("parse the printed IR", q);
    }
    if (ok) {
        t2 = sc_pipeline_to_text(q);
        ok = strcmp(t1, t2) == 0;
        if (!ok) show_difference(t1, t2);
    }
    ok = ok && same_ir(p, q) && same_outputs(p, q);
    free(t1);
    free(t2);
    sc_pipeline_free(q);
    sc_pipeline_free(p);
    return ok;
}

/* ---- random expressions ------------------------------------------------ */

/* The apps use a fraction of what the printer must get right (typed
 * constants of every type, literals at the ends of their range, every
 * operator and precedence), so random expressions over typed inputs go
 * through the same round trip.  Deterministic: a fixed seed. */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

typedef struct { char buf[4096]; size_t len; } text;

static void put(text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len + n < sizeof t->buf) { memcpy(t->buf + t->len, s, n + 1); t->len += n; }
}

static void gen_num(text *t, int depth);

static void gen_bool(text *t, int depth)
{
    static const char *cmp[] = { " == ", " != ", " < ", " <= ", " > ", " >= " };
    switch (depth > 0 ? rnd(4) : 0) {
    case 0: put(t, "("); gen_num(t, depth - 1); put(t, cmp[rnd(6)]); gen_num(t, depth - 1); put(t, ")"); break;
    case 1: put(t, "("); gen_bool(t, depth - 1); put(t, " && "); gen_bool(t, depth - 1); put(t, ")"); break;
    case 2: put(t, "("); gen_bool(t, depth - 1); put(t, " || "); gen_bool(t, depth - 1); put(t, ")"); break;
    default: put(t, "!"); gen_bool(t, depth - 1); break;
    }
}

static void gen_num(text *t, int depth)
{
    static const char *leaves[] = {
        "a(x)", "b(x)", "c(x)", "d(x)", "e(x)", "x", "k", "0", "1", "7", "-3", "255",
        "2147483647", "-2147483648", "0.5", "-2.25", "1e30", "3.0e-5", "u8(200)", "i8(-128)",
        "u16(65535)", "i16(-3)", "u32(-1)", "u32(7)", "i32(5)", "f32(3)", "(0 - 2147483647)",
    };
    static const char *ops[] = { " + ", " - ", " * ", " / ", " % ", " & ", " | ", " ^ ", " << ", " >> " };
    static const char *types[] = { "u8", "u16", "u32", "i8", "i16", "i32", "f32" };
    static const char *math1[] = { "sqrt", "exp", "log", "floor", "ceil", "round", "sin", "cos", "tanh", "abs" };
    if (depth <= 0 || rnd(4) == 0) { put(t, leaves[rnd(sizeof leaves / sizeof *leaves)]); return; }
    switch (rnd(9)) {
    case 0: case 1: case 2:
        put(t, "("); gen_num(t, depth - 1); put(t, ops[rnd(10)]); gen_num(t, depth - 1); put(t, ")"); break;
    case 3: put(t, rnd(2) ? "-" : "~"); gen_num(t, depth - 1); break;
    case 4: put(t, types[rnd(7)]); put(t, "("); gen_num(t, depth - 1); put(t, ")"); break;
    case 5:
        put(t, "select("); gen_bool(t, depth - 1); put(t, ", "); gen_num(t, depth - 1);
        put(t, ", "); gen_num(t, depth - 1); put(t, ")");
        break;
    case 6: {
        unsigned which = rnd(3);
        put(t, which == 0 ? "clamp(" : which == 1 ? "min(" : "max(");
        gen_num(t, depth - 1); put(t, ", "); gen_num(t, depth - 1);
        if (which == 0) { put(t, ", "); gen_num(t, depth - 1); }
        put(t, ")");
        break;
    }
    case 7: put(t, math1[rnd(10)]); put(t, "("); gen_num(t, depth - 1); put(t, ")"); break;
    default:
        put(t, rnd(2) ? "pow(" : "atan2("); gen_num(t, depth - 1); put(t, ", ");
        gen_num(t, depth - 1); put(t, ")");
        break;
    }
}

/* Round trips of random pipelines: how many parsed, how many failed. */
static void random_expressions(void)
{
    int parsed = 0, bad = 0;
    for (int i = 0; i < 600 && bad < 5; i++) {
        text t = { "", 0 };
        put(&t, "input u8 a(8); input i16 b(8); input u32 c(8); input f32 d(8); input i32 e(8);\n"
                "param i16 k = -5;\nf(x) = ");
        gen_num(&t, 1 + (int)rnd(4));
        put(&t, ";\noutput f(8);\n");
        sc_pipeline *p = sc_parse_string("random.pipe", t.buf, t.len, NULL);
        if (sc_error_count(p) == 0) {
            parsed++;
            char *t1 = sc_pipeline_to_text(p);
            sc_pipeline *q = sc_parse_string("ir.pipe", t1, strlen(t1), NULL);
            char *t2 = sc_error_count(q) ? NULL : sc_pipeline_to_text(q);
            if (!t2 || strcmp(t1, t2) || !same_ir(p, q) || !same_outputs(p, q)) {
                fprintf(stderr, "  round trip fails for\n%s  printed as\n%s", t.buf, t1);
                if (!t2) print_errors("parse the printed IR", q);
                else if (strcmp(t1, t2)) show_difference(t1, t2);
                bad++;
            }
            free(t1);
            free(t2);
            sc_pipeline_free(q);
        }
        sc_pipeline_free(p);
    }
    CHECK(bad == 0);
    CHECK(parsed >= 200);   /* the generator mostly writes valid pipelines */
    if (parsed < 200) fprintf(stderr, "  only %d of 600 random pipelines parsed\n", parsed);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    DIR *dir = opendir("apps");
    if (!dir) {
        printf("FAIL apps_directory (run from the repository root)\n");
        return 1;
    }
    char **names = NULL;
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".pipe")) {
            names = realloc(names, sizeof *names * (size_t)(n + 1));
            names[n++] = strdup(e->d_name);
        }
    }
    closedir(dir);
    if (n) qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "apps/%s", names[i]);
        check_fail_ = 0;
        CHECK(roundtrip(path));
        printf("%s roundtrip_%.*s\n", check_fail_ ? "FAIL" : "PASS", (int)strlen(names[i]) - 5, names[i]);
        fflush(stdout);
        check_total_fail_ += check_fail_;
        free(names[i]);
    }
    free(names);
    RUN(random_expressions);
    if (n == 0) { printf("FAIL apps_found (no .pipe file in apps/)\n"); return 1; }
    CHECK_EXIT();
}
