/*
 * test_sched.c - schedule states: the text form (round trip, parse errors
 * with line:column), structural hashes to each depth, the rules and the
 * hardware limits sched_check enforces, and the Halide form.
 *
 * Pipelines are small .pipe texts; states are parsed from schedule text or
 * built by hand.  The limits are checked against targets/a100.target's
 * numbers, typed in here so the test does not depend on the file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "check.h"
#include "fixtures.h"
#include "sched.h"
#include "stagecraft.h"

static const target A100 = {
    "a100", 108, 32, 1024, 2048, 49152, 167936, 65536, 255, 32, 1555, 19500, 41943040, "sm_80", 256, 4, 128, 1024, false, { 0, 0, 0 },
};

/* blur: a boundary helper, a horizontal and a vertical 3-tap blur. */
static const char *BLUR =
    "pipeline blur;\n"
    "input f32 in(256, 128);\n"
    "clamped = repeat_edge(in);\n"
    "blur_x(x, y) = clamped(x - 1, y) + clamped(x, y) + clamped(x + 1, y);\n"
    "out(x, y) = blur_x(x, y - 1) + blur_x(x, y) + blur_x(x, y + 1);\n"
    "output out(256, 128);\n";

/* chain: a -> b -> c -> out, point-wise and stencil, for nested fusion;
 * d is used by two Funcs; tiny is 20 points wide. */
static const char *CHAIN =
    "pipeline chain;\n"
    "input f32 in(128, 64);\n"
    "a(x, y) = in(x, y) * 2;\n"
    "b(x, y) = a(x, y) + 1;\n"
    "c(x, y) = b(x, y) * b(x, y);\n"
    "d(x, y) = in(x, y) - 1;\n"
    "e(x, y) = d(x, y) + c(x, y);\n"
    "out(x, y) = e(x, y) + d(x, y);\n"
    "tiny(x) = in(x, 0) + 1;\n"
    "output out(128, 64);\n"
    "output tiny(20);\n";

/* upd: Funcs with update definitions: g has a pure update, s a reduction,
 * h a scatter (writes at a computed coordinate); m is used by two stages
 * of s. */
static const char *UPD =
    "pipeline upd;\n"
    "input u8 in(64, 32);\n"
    "k(x, y) = i32(in(x, y)) + 1;\n"
    "g(x, y) = k(x, y) * 2;\n"
    "g(x, y) += 1;\n"
    "m(x) = i32(in(x, 1));\n"
    "rdom r(0, 32);\n"
    "s(x) = k(x, 0) + m(x);\n"
    "s(x) += g(x, r) + m(x);\n"
    "h(x) = 0;\n"
    "rdom q(0, 64);\n"
    "h(clamp(i32(in(q, 0)), 0, 63)) += 1;\n"
    "out(x) = s(x) + h(x);\n"
    "output out(64);\n";

static sched_state *parse(fixture *fx, const char *text) {
    char err[512];
    sched_state *s = sched_parse(fx->a, fx->p, "t.sched", text, err, sizeof err);
    if (!s) fprintf(stderr, "  unexpected parse error: %s\n", err);
    return s;
}

/* Parses `text`, expecting an error that starts with `prefix` (FILE:LINE:COL)
 * and contains `part`. */
static bool parse_fails(fixture *fx, const char *text, const char *prefix, const char *part) {
    char err[512] = "";
    sched_state *s = sched_parse(fx->a, fx->p, "t.sched", text, err, sizeof err);
    bool ok = !s && !strncmp(err, prefix, strlen(prefix)) && strstr(err, part);
    if (!ok) fprintf(stderr, "  want '%s...%s', got '%s'%s\n", prefix, part, err, s ? " (parsed)" : "");
    return ok;
}

/* sched_check with the a100 limits; the message must contain every part. */
static bool check_ok(fixture *fx, const sched_state *s, bool warp) {
    char err[512] = "";
    int rc = sched_check(fx->p, fx->b, s, &A100, warp, err, sizeof err);
    if (rc) fprintf(stderr, "  unexpected check failure: %s\n", err);
    return rc == 0;
}

static bool check_fails(fixture *fx, const char *text, bool warp, const char *part1, const char *part2) {
    sched_state *s = parse(fx, text);
    if (!s) return false;
    char err[512] = "";
    int rc = sched_check(fx->p, fx->b, s, &A100, warp, err, sizeof err);
    bool ok = rc == -1 && strstr(err, part1) && (!part2 || strstr(err, part2));
    if (!ok) fprintf(stderr, "  want '%s' / '%s', got '%s'\n", part1, part2 ? part2 : "", rc ? err : "(accepted)");
    return ok;
}

static const char *BLUR_OK =
    "schedule blur;\n"
    "out: root [x=32x1 y=8x2];\n"
    "blur_x: block of out [x=32 y=8];\n"
    "clamped: inline;\n";

/* ---- text form ---- */

static void test_round_trip(void) {
    fixture fx = fixture_load(BLUR);
    sched_state *s = parse(&fx, BLUR_OK);
    CHECK(s != NULL);
    if (s) {
        char *t = sched_to_text(fx.p, s);
        CHECK(!strcmp(t, BLUR_OK));
        if (strcmp(t, BLUR_OK)) fprintf(stderr, "  got:\n%s", t);
        free(t);
    }
    const char *thread =
        "schedule blur;\n"
        "out: root [x=64x2 y=4x4];\n"
        "blur_x: thread of out;\n"
        "clamped: root [x=16x1 y=16x1];\n";
    s = parse(&fx, thread);
    if (s) {
        char *t = sched_to_text(fx.p, s);
        CHECK(!strcmp(t, thread));
        free(t);
    }
    /* comments, blank lines, free spacing and any order are accepted */
    s = parse(&fx, "# a schedule\nschedule blur ;\n\nclamped:inline;  # boundary\n"
                   "blur_x : block of out[ x = 32 y = 8 ] ;\nout: root [x=32 x 1\n y=8x2];");
    if (s) {
        char *t = sched_to_text(fx.p, s);
        CHECK(!strcmp(t, BLUR_OK));
        free(t);
    }
    fixture_unload(&fx);

    fx = fixture_load(UPD);
    const char *upd =
        "schedule upd;\n"
        "out: root [x=64x1];\n"
        "h: root [x=32x1] [];\n"
        "s: root [x=32x2] [x=16x1];\n"
        "m: root [x=32x1];\n"
        "g: block of s [x=16 y=2] [x=8 y=4];\n"
        "k: root [x=32x1 y=1x1];\n";
    s = parse(&fx, upd);
    if (s) {
        char *t = sched_to_text(fx.p, s);
        CHECK(!strcmp(t, upd));
        if (strcmp(t, upd)) fprintf(stderr, "  got:\n%s", t);
        free(t);
    }
    fixture_unload(&fx);
}

/* A state built by hand prints the same text as the one parsed. */
static void test_hand_built(void) {
    fixture fx = fixture_load(BLUR);
    sched_state *s = sched_state_new(fx.a, fx.p);
    CHECK(!sched_complete(fx.p, s));
    sched_func *out = sched_func_new(fx.a, SCHED_ROOT, -1, 1);
    int out_id = sc_func_lookup(fx.p, "out")->id, bx_id = sc_func_lookup(fx.p, "blur_x")->id,
        cl_id = sc_func_lookup(fx.p, "clamped")->id;
    sched_func *bx = sched_func_new(fx.a, SCHED_BLOCK, out_id, 1);
    sched_func *cl = sched_func_new(fx.a, SCHED_INLINE, -1, 0);
    out->tile[0] = (sched_tile){ 2, { 32, 8 }, { 1, 2 } };
    bx->tile[0] = (sched_tile){ 2, { 32, 8 }, { 1, 1 } };
    s->f[out_id] = out;
    s->f[bx_id] = bx;
    CHECK(!sched_complete(fx.p, s));
    char *partial = sched_to_text(fx.p, s);
    CHECK(strstr(partial, "# clamped: undecided\n") != NULL);
    free(partial);
    sched_state *c = sched_state_copy(fx.a, s);
    c->f[cl_id] = cl;
    CHECK(sched_complete(fx.p, c));
    CHECK(!sched_complete(fx.p, s));       /* the copy is independent */
    CHECK(c->f[out_id] == s->f[out_id]);   /* and shares unchanged Funcs */
    char *t = sched_to_text(fx.p, c);
    CHECK(!strcmp(t, BLUR_OK));
    free(t);
    CHECK(check_ok(&fx, c, true));
    fixture_unload(&fx);
}

static void test_parse_errors(void) {
    fixture fx = fixture_load(BLUR);
    CHECK(parse_fails(&fx, "scheduel blur;", "t.sched:1:1:", "expected 'schedule blur;'"));
    CHECK(parse_fails(&fx, "schedule other;", "t.sched:1:10:", "pipeline 'other', not 'blur'"));
    CHECK(parse_fails(&fx, "schedule blur\nout: inline;", "t.sched:2:1:", "expected ';'"));
    CHECK(parse_fails(&fx, "schedule blur;\nfoo: inline;", "t.sched:2:1:", "unknown Func 'foo'"));
    CHECK(parse_fails(&fx, "schedule blur;\nin: inline;", "t.sched:2:1:", "is an input"));
    CHECK(parse_fails(&fx, "schedule blur;\nclamped: inline;\n  clamped: inline;", "t.sched:3:3:",
                      "clamped is listed twice (first at line 2, column 1)"));
    CHECK(parse_fails(&fx, "schedule blur;\nclamped inline;", "t.sched:2:9:", "expected ':'"));
    CHECK(parse_fails(&fx, "schedule blur;\nclamped: inlined;", "t.sched:2:10:",
                      "expected inline, root, block or thread"));
    CHECK(parse_fails(&fx, "schedule blur;\nblur_x: block out [x=1 y=1];", "t.sched:2:15:", "'of'"));
    CHECK(parse_fails(&fx, "schedule blur;\nblur_x: block of outt [x=1 y=1];", "t.sched:2:18:",
                      "unknown consumer 'outt'"));
    CHECK(parse_fails(&fx, "schedule blur;\nout: root;", "t.sched:2:10:", "expected '['"));
    CHECK(parse_fails(&fx, "schedule blur;\nout: root [y=8x1 x=32x1];", "t.sched:2:12:",
                      "expected 'x', the 1st of the pure loops of out (x y), got 'y'"));
    CHECK(parse_fails(&fx, "schedule blur;\nout: root [x=8x1];", "t.sched:2:17:",
                      "expected 'y', the 2nd of the pure loops of out (x y), got ']'"));
    CHECK(parse_fails(&fx, "schedule blur;\nout: root [x=8x1 y=1x1 z=1x1];", "t.sched:2:24:",
                      "expected ']'"));
    CHECK(parse_fails(&fx, "schedule blur;\nout: root [x=8 y=1x1];", "t.sched:2:16:",
                      "expected 'x' and the serial size"));
    CHECK(parse_fails(&fx, "schedule blur;\nout: root [x=0x1 y=1x1];", "t.sched:2:14:",
                      "positive integer"));
    CHECK(parse_fails(&fx, "schedule blur;\nout: root [x=-4x1 y=1x1];", "t.sched:2:14:",
                      "positive integer"));
    CHECK(parse_fails(&fx, "schedule blur;\nout: root [x=3a2 y=1x1];", "t.sched:2:14:", "bad number '3a2'"));
    CHECK(parse_fails(&fx, "schedule blur;\nout: root [x=99999999999x1 y=1x1];", "t.sched:2:14:",
                      "too large"));
    CHECK(parse_fails(&fx, "schedule blur;\nout: root [x=8x1 y=1x1] [x=8x1 y=1x1];", "t.sched:2:25:",
                      "expected ';'"));
    CHECK(parse_fails(&fx, "schedule blur;\nblur_x: block of out [x=32x2 y=8];", "t.sched:2:27:",
                      "threads only"));
    CHECK(parse_fails(&fx, "schedule blur;\nblur_x: thread of out [x=32 y=8];", "t.sched:2:23:",
                      "not tiled"));
    CHECK(parse_fails(&fx, "schedule blur;\nclamped: inline; 42", "t.sched:2:18:",
                      "expected a Func name or the end of the schedule, got '42'"));
    CHECK(parse_fails(&fx, "schedule blur;\nclamped: inline;;", "t.sched:2:17:", "got ';'"));
    CHECK(parse_fails(&fx, "schedule blur;\nclamped: inline;\nout: root [x=8x1 y=1x1];\n",
                      "t.sched:4:1:", "missing Func blur_x"));
    fixture_unload(&fx);
}

/* ---- hash ---- */

static void test_hash(void) {
    fixture fx = fixture_load(CHAIN);
    const char *base =
        "schedule chain;\nout: root [x=32x1 y=8x1];\ntiny: root [x=32x1];\ne: root [x=32x1 y=8x1];\n"
        "d: root [x=32x1 y=1x1];\nc: block of e [x=32 y=8];\nb: block of c [x=32 y=8];\n"
        "a: thread of b;\n";
    sched_state *s0 = parse(&fx, base);
    CHECK(s0 != NULL);
    if (!s0) { fixture_unload(&fx); return; }
    int a = sc_func_lookup(fx.p, "a")->id, b = sc_func_lookup(fx.p, "b")->id,
        c = sc_func_lookup(fx.p, "c")->id, e = sc_func_lookup(fx.p, "e")->id;
    for (int d = 0; d <= 4; d++) CHECK(sched_hash(s0, d) == sched_hash(sched_state_copy(fx.a, s0), d));
    /* the values themselves are stored with samples (store.h): they must
     * not change (these are FNV-1a's, byte by byte); a tile of 300
     * threads takes the path for values of more than one byte */
    sched_state *big = sched_state_copy(fx.a, s0);
    sched_func *wide = sched_func_copy(fx.a, s0->f[c]);
    wide->tile[0].threads[0] = 300;
    big->f[c] = wide;
    static const uint64_t golden[2][4] = {
        { 0xd6765cf5c7ffb8ceull, 0xf4b747db78981168ull, 0x208c15d2008ff8ecull, 0x1cc504b41310ae8full },
        { 0xd6765cf5c7ffb8ceull, 0xf4b747db78981168ull, 0x208c15d2008ff8ecull, 0x7d7d185fec29b848ull },
    };
    for (int d = 0; d < 4; d++) {
        CHECK(sched_hash(s0, d) == golden[0][d]);
        CHECK(sched_hash(big, d) == golden[1][d]);
    }

    /* a different tiling: equal up to depth 2 */
    sched_state *s1 = sched_state_copy(fx.a, s0);
    sched_func *cf = sched_func_copy(fx.a, s0->f[c]);
    cf->tile[0].threads[0] = 16;
    s1->f[c] = cf;
    for (int d = 0; d <= 2; d++) CHECK(sched_hash(s0, d) == sched_hash(s1, d));
    CHECK(sched_hash(s0, 3) != sched_hash(s1, 3));
    CHECK(sched_hash(s0, 5) != sched_hash(s1, 5));

    /* a at thread level of c instead of b: equal up to depth 1 */
    sched_state *s2 = sched_state_copy(fx.a, s0);
    sched_func *af = sched_func_copy(fx.a, s0->f[a]);
    af->at = c;
    s2->f[a] = af;
    CHECK(sched_hash(s0, 0) == sched_hash(s2, 0));
    CHECK(sched_hash(s0, 1) == sched_hash(s2, 1));
    CHECK(sched_hash(s0, 2) != sched_hash(s2, 2));

    /* b at block level of e instead of c: equal at depth 0 only */
    sched_state *s3 = sched_state_copy(fx.a, s0);
    sched_func *bf = sched_func_copy(fx.a, s0->f[b]);
    bf->at = e;
    s3->f[b] = bf;
    CHECK(sched_hash(s0, 0) == sched_hash(s3, 0));
    CHECK(sched_hash(s0, 1) != sched_hash(s3, 1));

    /* b at thread level rather than block level: same consumer, but the
     * block-level set differs from depth 1 */
    sched_state *s4 = sched_state_copy(fx.a, s0);
    sched_func *bt = sched_func_new(fx.a, SCHED_THREAD, c, 0);
    s4->f[b] = bt;
    CHECK(sched_hash(s0, 0) == sched_hash(s4, 0));
    CHECK(sched_hash(s0, 1) != sched_hash(s4, 1));

    /* c at root rather than fused: differs from depth 0 */
    sched_state *s5 = sched_state_copy(fx.a, s0);
    sched_func *cr = sched_func_copy(fx.a, s0->f[c]);
    cr->loc = SCHED_ROOT;
    cr->at = -1;
    s5->f[c] = cr;
    CHECK(sched_hash(s0, 0) != sched_hash(s5, 0));

    /* inline vs undecided vs root: all different at depth 0 */
    sched_state *s6 = sched_state_copy(fx.a, s0), *s7 = sched_state_copy(fx.a, s0);
    sched_func *ai = sched_func_new(fx.a, SCHED_INLINE, -1, 0);
    s6->f[a] = ai;
    s7->f[a] = NULL;
    CHECK(sched_hash(s0, 0) != sched_hash(s6, 0));
    CHECK(sched_hash(s6, 0) != sched_hash(s7, 0));
    CHECK(sched_hash(s0, 0) != sched_hash(s7, 0));

    /* the tiling of a thread-level Func (meaningless) is not hashed */
    sched_state *s8 = sched_state_copy(fx.a, s0);
    sched_func *at = sched_func_copy(fx.a, s0->f[a]);
    at->tile = sched_func_new(fx.a, SCHED_ROOT, -1, 1)->tile;   /* tiles it should not have */
    at->tile[0].threads[0] = 7;
    s8->f[a] = at;
    CHECK(sched_hash(s0, 5) == sched_hash(s8, 5));
    fixture_unload(&fx);
}

/* ---- check: rules ---- */

static void test_check_valid(void) {
    fixture fx = fixture_load(BLUR);
    sched_state *s = parse(&fx, BLUR_OK);
    CHECK(s && check_ok(&fx, s, true));
    s = parse(&fx, "schedule blur;\nout: root [x=32x2 y=4x2];\nblur_x: thread of out;\nclamped: inline;\n");
    CHECK(s && check_ok(&fx, s, true));
    s = parse(&fx, "schedule blur;\nout: root [x=32x1 y=8x1];\nblur_x: root [x=64x1 y=2x1];\n"
                   "clamped: block of blur_x [x=64 y=2];\n");
    CHECK(s && check_ok(&fx, s, true));
    fixture_unload(&fx);

    fx = fixture_load(CHAIN);
    /* nested fusion: a in b's threads, b in c's block share, c in e's */
    s = parse(&fx, "schedule chain;\nout: root [x=32x1 y=8x1];\ntiny: root [x=20x1];\n"
                   "e: block of out [x=32 y=8];\nd: root [x=32x1 y=1x1];\nc: block of e [x=32 y=8];\n"
                   "b: block of c [x=16 y=8];\na: thread of b;\n");
    CHECK(s && check_ok(&fx, s, true));
    /* inline Funcs pass their calls through: a's consumer is c */
    s = parse(&fx, "schedule chain;\nout: root [x=32x1 y=8x1];\ntiny: root [x=32x1];\ne: inline;\n"
                   "d: root [x=32x1 y=1x1];\nc: root [x=32x1 y=4x1];\nb: inline;\na: block of c [x=32 y=4];\n");
    CHECK(s && check_ok(&fx, s, true));
    fixture_unload(&fx);

    fx = fixture_load(UPD);
    /* a pure update can be fused; the reduction Func is root */
    s = parse(&fx, "schedule upd;\nout: root [x=64x1];\nh: root [x=32x1] [];\ns: root [x=32x1] [x=32x1];\n"
                   "g: block of s [x=32 y=1] [x=16 y=2];\nk: root [x=32x1 y=1x1];\nm: root [x=32x1];\n");
    CHECK(s && check_ok(&fx, s, true));
    s = parse(&fx, "schedule upd;\nout: root [x=64x1];\nh: root [x=32x1] [];\ns: root [x=32x1] [x=32x1];\n"
                   "g: thread of s;\nk: root [x=32x1 y=1x1];\nm: root [x=32x1];\n");
    CHECK(s && check_ok(&fx, s, true));
    fixture_unload(&fx);
}

static void test_check_rules(void) {
    fixture fx = fixture_load(CHAIN);
    const char *rest = "tiny: root [x=32x1];\nd: root [x=32x1 y=1x1];\nc: root [x=32x1 y=1x1];\n"
                       "b: root [x=32x1 y=1x1];\na: root [x=32x1 y=1x1];\n";
    char text[1024];
    /* an output is root */
    snprintf(text, sizeof text, "schedule chain;\nout: inline;\ne: root [x=32x1 y=1x1];\n%s", rest);
    CHECK(check_fails(&fx, text, true, "out: an output must be computed at root", NULL));
    /* several consumers: d is read by e and out */
    snprintf(text, sizeof text, "schedule chain;\nout: root [x=32x1 y=1x1];\ne: root [x=32x1 y=1x1];\n"
             "tiny: root [x=32x1];\nd: block of e [x=32 y=1];\nc: root [x=32x1 y=1x1];\n"
             "b: root [x=32x1 y=1x1];\na: root [x=32x1 y=1x1];\n");
    CHECK(check_fails(&fx, text, true, "d: computed at block level of e", "several consumers"));
    /* ... which inlining e does not change: d's consumers are then out (twice) */
    snprintf(text, sizeof text, "schedule chain;\nout: root [x=32x1 y=1x1];\ne: inline;\n"
             "tiny: root [x=32x1];\nd: block of out [x=32 y=1];\nc: root [x=32x1 y=1x1];\n"
             "b: root [x=32x1 y=1x1];\na: root [x=32x1 y=1x1];\n");
    sched_state *s = parse(&fx, text);
    CHECK(s && check_ok(&fx, s, true));
    /* the wrong consumer */
    snprintf(text, sizeof text, "schedule chain;\nout: root [x=32x1 y=1x1];\ne: root [x=32x1 y=1x1];\n"
             "tiny: root [x=32x1];\nd: root [x=32x1 y=1x1];\nc: root [x=32x1 y=1x1];\n"
             "b: root [x=32x1 y=1x1];\na: thread of c;\n");
    CHECK(check_fails(&fx, text, true, "a: computed at thread level of c", "its consumer is b"));
    /* fused at an inline Func */
    snprintf(text, sizeof text, "schedule chain;\nout: root [x=32x1 y=1x1];\ne: root [x=32x1 y=1x1];\n"
             "tiny: root [x=32x1];\nd: root [x=32x1 y=1x1];\nc: root [x=32x1 y=1x1];\n"
             "b: inline;\na: thread of b;\n");
    CHECK(check_fails(&fx, text, true, "a: computed at thread level of b, which is inline", NULL));
    /* block level inside a thread-level Func */
    snprintf(text, sizeof text, "schedule chain;\nout: root [x=32x1 y=1x1];\ne: root [x=32x1 y=1x1];\n"
             "tiny: root [x=32x1];\nd: root [x=32x1 y=1x1];\nc: root [x=32x1 y=1x1];\n"
             "b: thread of c;\na: block of b [x=1 y=1];\n");
    CHECK(check_fails(&fx, text, true, "a: computed at block level of b, which is itself at thread level",
                      NULL));
    /* at its own level */
    snprintf(text, sizeof text, "schedule chain;\nout: root [x=32x1 y=1x1];\ne: root [x=32x1 y=1x1];\n"
             "tiny: root [x=32x1];\nd: root [x=32x1 y=1x1];\nc: root [x=32x1 y=1x1];\n"
             "b: root [x=32x1 y=1x1];\na: thread of a;\n");
    CHECK(check_fails(&fx, text, true, "a: computed at its own thread level", NULL));
    /* unused: tiny's input is not a Func, nothing consumes out */
    snprintf(text, sizeof text, "schedule chain;\nout: root [x=32x1 y=1x1];\ne: root [x=32x1 y=1x1];\n"
             "tiny: root [x=32x1];\nd: root [x=32x1 y=1x1];\nc: root [x=32x1 y=1x1];\n"
             "b: root [x=32x1 y=1x1];\na: root [x=32x1 y=1x1];\n");
    s = parse(&fx, text);
    CHECK(s && check_ok(&fx, s, true));
    /* a partial state */
    if (s) {
        sched_state *p = sched_state_copy(fx.a, s);
        p->f[sc_func_lookup(fx.p, "c")->id] = NULL;
        char err[256];
        CHECK(sched_check(fx.p, fx.b, p, &A100, true, err, sizeof err) == -1);
        CHECK(strstr(err, "c: not scheduled") != NULL);
        /* a tile with the wrong number of loops, built by hand */
        sched_func *bad = sched_func_copy(fx.a, s->f[sc_func_lookup(fx.p, "c")->id]);
        bad->tile[0].npure = 1;
        p->f[sc_func_lookup(fx.p, "c")->id] = bad;
        CHECK(sched_check(fx.p, fx.b, p, &A100, true, err, sizeof err) == -1);
        CHECK(strstr(err, "c: the tiling has 1 pure loop, but the stage has 2") != NULL);
        bad->tile[0].npure = 2;
        bad->tile[0].serial[1] = 0;
        CHECK(sched_check(fx.p, fx.b, p, &A100, true, err, sizeof err) == -1);
        CHECK(strstr(err, "serial size must be at least 1") != NULL);
    }
    fixture_unload(&fx);

    fx = fixture_load(UPD);
    const char *tail = "out: root [x=64x1];\nh: root [x=32x1] [];\nk: root [x=32x1 y=1x1];\nm: root [x=32x1];\n";
    /* inline needs a single definition */
    snprintf(text, sizeof text, "schedule upd;\n%ss: root [x=32x1] [x=32x1];\ng: inline;\n", tail);
    CHECK(check_fails(&fx, text, true, "g: cannot be inline: it has update definitions", NULL));
    /* a scatter cannot be fused */
    snprintf(text, sizeof text, "schedule upd;\nout: root [x=64x1];\nh: block of out [x=32] [];\n"
             "k: root [x=32x1 y=1x1];\nm: root [x=32x1];\ns: root [x=32x1] [x=32x1];\ng: root [x=32x1 y=1x1] [x=32x1 y=1x1];\n");
    CHECK(check_fails(&fx, text, true, "h: fused at block level", "computed coordinate"));
    /* k is read by both stages of s (after inlining g) */
    snprintf(text, sizeof text, "schedule upd;\nout: root [x=64x1];\nh: root [x=32x1] [];\nm: thread of s;\n"
             "k: root [x=32x1 y=1x1];\ns: root [x=32x1] [x=32x1];\ng: root [x=32x1 y=1x1] [x=32x1 y=1x1];\n");
    CHECK(check_fails(&fx, text, true, "m: computed at thread level of s", "several stages of s use it"));
    fixture_unload(&fx);
}

/* ---- check: limits ---- */

static void test_check_limits(void) {
    fixture fx = fixture_load(BLUR);
    /* threads per block */
    CHECK(check_fails(&fx, "schedule blur;\nout: root [x=64x1 y=32x1];\nblur_x: root [x=32x1 y=1x1];\n"
                           "clamped: inline;\n", true, "out: 2048 threads per block, over the target's 1024 (a100)",
                      NULL));
    /* warp multiples, only when asked */
    const char *w24 = "schedule blur;\nout: root [x=24x1 y=1x1];\nblur_x: root [x=32x1 y=1x1];\nclamped: inline;\n";
    CHECK(check_fails(&fx, w24, true, "out: 24 threads per block, not a multiple of the target's warp size 32", NULL));
    sched_state *s = parse(&fx, w24);
    CHECK(s && check_ok(&fx, s, false));
    /* 16 x 2 is a multiple */
    s = parse(&fx, "schedule blur;\nout: root [x=16x1 y=2x1];\nblur_x: root [x=32x1 y=1x1];\nclamped: inline;\n");
    CHECK(s && check_ok(&fx, s, true));
    /* a block-level Func cannot use more threads than its kernel's block */
    CHECK(check_fails(&fx, "schedule blur;\nout: root [x=32x1 y=2x1];\nblur_x: block of out [x=32 y=4];\n"
                           "clamped: inline;\n", true, "blur_x: 128 threads (block level of out)",
                      "over the 64 threads per block of its kernel out"));
    /* shared memory: a 256 x 64 block needs 256 x 66 floats of blur_x */
    CHECK(check_fails(&fx, "schedule blur;\nout: root [x=32x8 y=32x2];\nblur_x: block of out [x=32 y=32];\n"
                           "clamped: inline;\n", true, "out: 67584 bytes of shared memory per block (blur_x 67584)",
                      "over the target's 49152 (a100)"));
    /* registers: the serial tile alone (16 + 64 set aside for staging + 256) */
    CHECK(check_fails(&fx, "schedule blur;\nout: root [x=2x16 y=16x16];\nblur_x: root [x=32x1 y=1x1];\n"
                           "clamped: inline;\n", true, "out: an estimated 336 registers per thread (16 + 64",
                      "256 serial points), over the target's 255 (a100)"));
    /* registers: a thread-level footprint of 8 x 18 for a 8 x 16 serial tile
     * (16 + 64 set aside for staging + 144 + 128) */
    CHECK(check_fails(&fx, "schedule blur;\nout: root [x=32x8 y=1x16];\nblur_x: thread of out;\n"
                           "clamped: inline;\n", true, "out: an estimated 352 registers per thread (16 + 208",
                      "128 serial points), over the target's 255"));
    s = parse(&fx, "schedule blur;\nout: root [x=32x8 y=1x8];\nblur_x: thread of out;\nclamped: inline;\n");
    CHECK(s && check_ok(&fx, s, true));
    /* an OpenCL device's limits per work-group dimension (a GPU's third is
     * often 64): out's 32 x 8 work-items are over a second dimension of 4 */
    target dims = A100;
    dims.max_threads_per_dim[0] = 1024;
    dims.max_threads_per_dim[1] = 4;
    dims.max_threads_per_dim[2] = 64;
    s = parse(&fx, "schedule blur;\nout: root [x=32x1 y=8x1];\nblur_x: root [x=32x1 y=1x1];\nclamped: inline;\n");
    char err[512] = "";
    CHECK(s && sched_check(fx.p, fx.b, s, &dims, false, err, sizeof err) == -1);
    CHECK(strstr(err, "out: a work-group of 32 x 8 x 1 threads, over the target's limit of 4 along dimension 1 (a100)"));
    CHECK(s && check_ok(&fx, s, false));
    s = parse(&fx, "schedule blur;\nout: root [x=32x1 y=4x2];\nblur_x: root [x=32x1 y=1x1];\nclamped: inline;\n");
    CHECK(s && sched_check(fx.p, fx.b, s, &dims, false, err, sizeof err) == 0);
    fixture_unload(&fx);

    /* a stage too small to fill a warp may use fewer threads */
    fx = fixture_load(CHAIN);
    const char *rest = "e: root [x=32x1 y=1x1];\nd: root [x=32x1 y=1x1];\nc: root [x=32x1 y=1x1];\n"
                       "b: root [x=32x1 y=1x1];\na: root [x=32x1 y=1x1];\n";
    char text[1024];
    snprintf(text, sizeof text, "schedule chain;\nout: root [x=32x1 y=1x1];\ntiny: root [x=20x1];\n%s", rest);
    s = parse(&fx, text);
    CHECK(s && check_ok(&fx, s, true));
    snprintf(text, sizeof text, "schedule chain;\nout: root [x=32x1 y=1x1];\ntiny: root [x=5x2];\n%s", rest);
    s = parse(&fx, text);
    CHECK(s && check_ok(&fx, s, true));
    /* one block covering a whole 128-wide row band is allowed too (40 x 1 would not be) */
    snprintf(text, sizeof text, "schedule chain;\nout: root [x=40x4 y=1x1];\ntiny: root [x=32x1];\n%s", rest);
    CHECK(check_fails(&fx, text, true, "out: 40 threads per block, not a multiple", NULL));
    fixture_unload(&fx);
}

/* ---- Halide ---- */

static void test_halide(void) {
    fixture fx = fixture_load(BLUR);
    sched_state *s = parse(&fx, BLUR_OK);
    if (s) {
        char *h = sched_to_halide(fx.p, s);
        CHECK(strstr(h, "Var x_o(\"x_o\"), x_i(\"x_i\"), x_t(\"x_t\"), x_s(\"x_s\")") != NULL);
        CHECK(strstr(h, "out.compute_root()\n    .split(x, x_o, x_i, 32,") != NULL);
        CHECK(strstr(h, ".split(x, x_o, x_i, 32, TailStrategy::GuardWithIf).split(x_i, x_t, x_s, 1)") != NULL);
        CHECK(strstr(h, ".split(y, y_o, y_i, 16, TailStrategy::GuardWithIf).split(y_i, y_t, y_s, 2)") != NULL);
        CHECK(strstr(h, ".reorder(x_s, y_s, x_t, y_t, x_o, y_o)") != NULL);
        CHECK(strstr(h, ".gpu_blocks(x_o, y_o)\n    .gpu_threads(x_t, y_t).unroll(y_s);") != NULL);
        CHECK(strstr(h, "blur_x.compute_at(out, x_o)\n    .split(x, x_s, x_t, 32, TailStrategy::GuardWithIf)") != NULL);
        CHECK(strstr(h, ".gpu_threads(x_t, y_t);\n// clamped: inline\n") != NULL);
        free(h);
    }
    s = parse(&fx, "schedule blur;\nout: root [x=64x2 y=4x4];\nblur_x: thread of out;\nclamped: root [x=16x1 y=16x1];\n");
    if (s) {
        char *h = sched_to_halide(fx.p, s);
        CHECK(strstr(h, "blur_x.compute_at(out, x_t);\n") != NULL);
        free(h);
    }
    fixture_unload(&fx);

    fx = fixture_load(UPD);
    s = parse(&fx, "schedule upd;\nout: root [x=64x1];\nh: root [x=32x1] [];\ns: root [x=32x2] [x=16x1];\n"
                   "g: block of s [x=16 y=2] [x=8 y=4];\nk: root [x=32x1 y=1x1];\nm: root [x=32x1];\n");
    if (s) {
        char *h = sched_to_halide(fx.p, s);
        CHECK(strstr(h, "h.update(0).gpu_single_thread();\n") != NULL);
        CHECK(strstr(h, "s.update(0)\n    .split(x, x_o, x_i, 16") != NULL);
        CHECK(strstr(h, ".reorder(r.x, x_s, x_t, x_o)") != NULL);
        CHECK(strstr(h, "g.compute_at(LoopLevel(s, x_o, 1))") != NULL);
        CHECK(strstr(h, "g.update(0)\n    .split(x, x_s, x_t, 8") != NULL);
        free(h);
    }
    fixture_unload(&fx);

    /* more than 3 pure loops: the outer ones are fused */
    const char *four =
        "pipeline four;\ninput f32 in(8, 8, 8, 8);\n"
        "out(x, y, z, w) = in(x, y, z, w) * 2;\noutput out(8, 8, 8, 8);\n";
    fx = fixture_load(four);
    s = parse(&fx, "schedule four;\nout: root [x=8x1 y=4x1 z=2x1 w=2x1];\n");
    CHECK(s && check_ok(&fx, s, true));
    if (s) {
        char *h = sched_to_halide(fx.p, s);
        CHECK(strstr(h, ".fuse(z_o, w_o, z_w_o)") != NULL);
        CHECK(strstr(h, ".fuse(z_t, w_t, z_w_t)") != NULL);
        CHECK(strstr(h, ".gpu_blocks(x_o, y_o, z_w_o)") != NULL);
        CHECK(strstr(h, ".gpu_threads(x_t, y_t, z_w_t)") != NULL);
        free(h);
    }
    fixture_unload(&fx);
}

int main(void) {
    RUN(test_round_trip);
    RUN(test_hand_built);
    RUN(test_parse_errors);
    RUN(test_hash);
    RUN(test_check_valid);
    RUN(test_check_rules);
    RUN(test_check_limits);
    RUN(test_halide);
    CHECK_EXIT();
}
