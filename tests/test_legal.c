/*
 * test_legal.c - the legality module and the enumerator built on it.
 *
 * The children of each phase are counted against hand counts (worked out
 * in the comments) for a copy, a two-stage blur and a diamond; along random
 * walks of every app (at its test size), every child of every state passes
 * legal_fits and every complete child lowers; the walks draw among the
 * enumerated children, so there is nothing to redraw.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "apps.h"
#include "check.h"
#include "fixtures.h"
#include "lower.h"
#include "nest.h"
#include "space.h"

static int count_children(fixture *fx, const sched_state *s, const space_opts *o, ir_vec *kids) {
    legal_ctx *x = space_legal(fx->p, fx->b, o);
    ir_vec v = {0};
    int n = space_children(fx->a, x, fx->p, fx->b, s, o, kids ? kids : &v);
    /* and every one of them is legal */
    ir_vec *all = kids ? kids : &v;
    char err[512];
    for (int i = all->n - n; i < all->n; i++) {
        int rc = legal_fits(x, all->items[i], err, sizeof err);
        if (rc) fprintf(stderr, "illegal child: %s\n", err);
        CHECK(rc == 0);
    }
    legal_free(x);
    return n;
}

static const char *COPY =
    "input f32 in(64, 32);\n"
    "out(x, y) = in(x, y) * 2;\n"
    "output out(64, 32);\n";

/* copy: out is the only Func.
 * Phase (a): an output is root: 1 child.
 * Phase (b), out at root over 64 x 32, x innermost (the first loop of
 * extent >= 16):
 *   x: serial 1, 2, 4, 8 (no odd size divides 64 into warps); the extent
 *      left is 64, 32, 16, 8; thread counts from 16, 32, 64 (each at most
 *      the extent left, or the smallest that covers it) plus the warp, 32:
 *      {16,32,64}, {16,32}, {16,32}, {16,32} -> 3 + 2 + 2 + 2 = 9 pairs;
 *   y: serial 1, 2, 4, 8; left 32, 16, 8, 4; powers of two up to 16:
 *      {1..16}, {1..16}, {1..8}, {1..4} -> 5 + 5 + 4 + 3 = 17 pairs;
 *   9 x 17 = 153 tilings, all within 1024 threads (at most 64 x 16) and
 *   the registers (16 + 64 + at most 8 x 8 serial points).
 * Pruned (§6.6): serial tiles of 16 points or more are dropped (x*y serial
 *   < 16), and warp multiples are required where the stage has a warp of
 *   work (always here): 16 x 1 threads goes, 16 x 2 stays.  Per (sx, sy)
 *   with sx * sy < 16 the count is nx * ny - 1 (the one 16 x 1 pair):
 *   sx=1: sy=1,2,4,8 -> 14 + 14 + 11 + 8 = 47; sx=2: sy=1,2,4 -> 9 + 9 + 7
 *   = 25; sx=4: sy=1,2 -> 9 + 9 = 18; sx=8: sy=1 -> 9; total 99.  The
 *   idle-SM rule does not apply: 2048 points < 2 x 108 SMs x 32. */
static void test_copy_counts(void) {
    fixture fx = fixture_load(COPY);
    target t = fixture_target("a100");
    space_opts o = { &t, false, false }, pr = { &t, true, false };
    sched_state *s = sched_state_new(fx.a, fx.p);
    ir_vec kids = {0};
    CHECK(count_children(&fx, s, &o, &kids) == 1);
    CHECK(count_children(&fx, s, &pr, NULL) == 1);
    sched_state *root = kids.items[0];
    int out = sc_func_lookup(fx.p, "out")->id;
    CHECK(root->f[out]->loc == SCHED_ROOT && root->f[out]->pending == 1);
    bool tiling = false;
    CHECK(space_next(fx.p, root, &tiling) == out && tiling);
    ir_vec tiles = {0};
    CHECK(count_children(&fx, root, &o, &tiles) == 153);
    CHECK(count_children(&fx, root, &pr, NULL) == 99);
    /* every child is complete, and they are all different */
    for (int i = 0; i < tiles.n; i++) {
        CHECK(sched_complete(fx.p, tiles.items[i]));
        CHECK(space_next(fx.p, tiles.items[i], NULL) == -1);
        for (int j = 0; j < i; j++)
            CHECK(sched_hash(tiles.items[i], 3) != sched_hash(tiles.items[j], 3));
    }
    /* the same order every time */
    ir_vec again = {0};
    count_children(&fx, root, &o, &again);
    for (int i = 0; i < tiles.n && i < again.n; i++)
        CHECK(sched_hash(tiles.items[i], 3) == sched_hash(again.items[i], 3));
    fixture_unload(&fx);
}

static const char *BLUR =
    "input f32 in(256, 128);\n"
    "blur_x(x, y) = in(x, y) + in(x + 1, y) + in(x + 2, y);\n"
    "out(x, y) = blur_x(x, y) + blur_x(x, y + 1) + blur_x(x, y + 2);\n"
    "output out(254, 126);\n";

/* blur: out (254 x 126) at root [x=32x1 y=1x1], blur_x (254 x 128) next.
 * Phase (a): inline, root, block of out, thread of out: 4 (all within the
 *   limits; pruned, blur_x is not point-wise, its inlined size is small,
 *   and the recompute of both fused levels is 96 points per 32 computed
 *   (a 32 x 3 footprint per block of 32 x 1, or 1 x 3 per thread):
 *   96 x 1008 blocks / (254 x 128) = 2.98 < 4: still 4).
 * Phase (b) of blur_x at root (254 x 128):
 *   x: serial 1, 2, 4, 8 (254 = 2 x 127: no odd size); left 254, 127, 64,
 *      32; threads {16,32,64} x 3, then {16,32}: 11 pairs;
 *   y: serial 1, 2, 4, 8; left 128, 64, 32, 16: {1..16} each: 20 pairs;
 *   220 tilings.
 * Phase (b) of blur_x at block level of out, whose block has 32 threads:
 *   thread counts only, x (innermost) 1..64, y 1..16, product <= 32:
 *   x=1: 5, x=2: 5, x=4: 4, x=8: 3, x=16: 2, x=32: 1, x=64: 0 -> 20. */
static void test_blur_counts(void) {
    fixture fx = fixture_load(BLUR);
    target t = fixture_target("a100");
    space_opts o = { &t, false, false }, pr = { &t, true, false };
    char err[512];
    sched_state *s = sched_parse(fx.a, fx.p, "t.sched", "schedule t;\nout: root [x=32x1 y=1x1];\nblur_x: inline;\n",
                                 err, sizeof err);
    CHECK(s != NULL);
    if (!s) { fixture_unload(&fx); return; }
    int bx = sc_func_lookup(fx.p, "blur_x")->id, out = sc_func_lookup(fx.p, "out")->id;
    s->f[bx] = NULL;
    ir_vec locs = {0};
    CHECK(count_children(&fx, s, &o, &locs) == 4);
    CHECK(count_children(&fx, s, &pr, NULL) == 4);
    sched_loc want[4] = { SCHED_INLINE, SCHED_ROOT, SCHED_BLOCK, SCHED_THREAD };
    for (int i = 0; i < locs.n && i < 4; i++) {
        const sched_func *sf = ((sched_state *)locs.items[i])->f[bx];
        CHECK(sf->loc == want[i]);
        CHECK(sf->loc == SCHED_INLINE || sf->loc == SCHED_ROOT || sf->at == out);
    }
    if (locs.n == 4) {
        CHECK(count_children(&fx, locs.items[1], &o, NULL) == 220);
        CHECK(count_children(&fx, locs.items[2], &o, NULL) == 20);
        /* inline and thread level are complete already */
        CHECK(space_next(fx.p, locs.items[0], NULL) == -1);
        CHECK(space_next(fx.p, locs.items[3], NULL) == -1);
    }
    fixture_unload(&fx);
}

/* Partial states: a tiling over the limits is refused by legal_tile, and
 * a fused level whose footprint overflows shared memory by legal_fits;
 * the default tiling is within every limit. */
static void test_partial_states(void) {
    fixture fx = fixture_load(BLUR);
    target t = fixture_target("a100");
    legal_ctx *x = legal_new(fx.p, fx.b, &t, true);
    int bx = sc_func_lookup(fx.p, "blur_x")->id, out = sc_func_lookup(fx.p, "out")->id;
    sched_state *s = sched_state_new(fx.a, fx.p);
    char err[512];
    CHECK(legal_fits(x, s, err, sizeof err) == 0);
    sched_func *sf = sched_func_new(fx.a, SCHED_ROOT, -1, 1);
    sf->tile[0] = legal_default_tile(x, sc_func_lookup(fx.p, "out"), 0);
    CHECK(sf->tile[0].threads[0] == 32 && sf->tile[0].threads[1] == 1);
    s->f[out] = sf;
    CHECK(legal_fits(x, s, err, sizeof err) == 0);
    sched_tile big = { 2, { 64, 32 }, { 1, 1 } };
    CHECK(legal_tile(x, s, out, 0, SCHED_ROOT, -1, &big, err, sizeof err) == -1);
    CHECK(strstr(err, "out: 2048 threads per block, over the target's 1024") != NULL);
    sched_tile wide = { 2, { 32, 8 }, { 8, 8 } };     /* 256 x 64 points per block */
    CHECK(legal_tile(x, s, out, 0, SCHED_ROOT, -1, &wide, err, sizeof err) == 0);
    sched_func *o2 = sched_func_new(fx.a, SCHED_ROOT, -1, 1);
    o2->tile[0] = wide;
    s->f[out] = o2;
    sched_func *blk = sched_func_new(fx.a, SCHED_BLOCK, out, 1);
    blk->tile[0] = (sched_tile){ 2, { 32, 8 }, { 1, 1 } };
    s->f[bx] = blk;
    /* 256 x 66 floats, clipped to blur_x's 254 columns: 67056 bytes */
    CHECK(legal_fits(x, s, err, sizeof err) == -1);
    CHECK(strstr(err, "out: 67056 bytes of shared memory per block (blur_x 67056)") != NULL);
    /* redundancy of blur_x in out's 256 x 64 blocks: 254 x 66 points per
     * block, 1 x 2 blocks, over 254 x 128 points: 1.03 */
    double r = legal_redundancy(x, s, bx);
    CHECK(r > 1.0 && r < 1.1);
    legal_free(x);
    fixture_unload(&fx);
}

static const char *STENCILS =
    "input f32 in(256, 128);\n"
    "c = repeat_edge(in);\n"
    "g(x, y) = c(x, y) * 2 + 1;\n"
    "h(x, y) = g(x - 1, y) + g(x, y) + g(x + 1, y);\n"
    "out(x, y) = h(x, y - 2) + h(x, y - 1) + h(x, y) + h(x, y + 1) + h(x, y + 2);\n"
    "output out(256, 128);\n";

/* Inline recompute (§6.6): h inline evaluates its value 5 times per point
 * of out's 256 x 128, 4.85 per point of its own 256 x 132 region; g (258
 * x 132) 3 x 256 x 132 times under a root h (2.98 per point), 15 x 256 x
 * 128 under an inline h (14.4); the boundary Func c has no arithmetic of
 * its own, so it counts 1 however often it is called (14.4 evaluations).  The pruned
 * enumerator offers h no inline location; the unpruned one does. */
static void test_inline_redundancy(void) {
    fixture fx = fixture_load(STENCILS);
    target t = fixture_target("a100");
    legal_ctx *x = legal_new(fx.p, fx.b, &t, true);
    char err[512];
    int c = sc_func_lookup(fx.p, "c")->id, g = sc_func_lookup(fx.p, "g")->id, h = sc_func_lookup(fx.p, "h")->id;
    sched_state *s = sched_parse(fx.a, fx.p, "t.sched",
                                 "schedule t;\nout: root [x=32x1 y=1x1];\nh: inline;\ng: inline;\nc: inline;\n", err,
                                 sizeof err);
    CHECK(s != NULL);
    if (!s) { legal_free(x); fixture_unload(&fx); return; }
    CHECK(fusion_value_ops(sc_func_lookup(fx.p, "c")) == 0);
    CHECK(fusion_value_ops(sc_func_lookup(fx.p, "g")) == 2);
    double rh = legal_inline_redundancy(x, s, h), rg = legal_inline_redundancy(x, s, g);
    CHECK(fabs(rh - 5.0 * 128 / 132) < 1e-9);
    CHECK(fabs(rg - 15.0 * 256 * 128 / (258 * 132)) < 1e-9);
    CHECK(legal_inline_redundancy(x, s, c) == 1);
    fusion_graph *fg = fusion_graph_new(fx.p);
    CHECK(fabs(fusion_inline_evaluations(fg, fx.b, s, c) - rg) < 1e-9);
    fusion_graph_free(fg);
    sched_state *hr = sched_state_copy(fx.a, s);
    hr->f[h] = sched_func_new(fx.a, SCHED_ROOT, -1, 1);
    hr->f[h]->tile[0] = legal_default_tile(x, sc_func_lookup(fx.p, "h"), 0);
    double rg2 = legal_inline_redundancy(x, hr, g);
    CHECK(fabs(rg2 - 3.0 * 256 / 258) < 1e-9);
    CHECK(legal_inline_redundancy(x, hr, h) == 1);
    legal_free(x);
    /* the enumerator, deciding h under a root out */
    sched_state *top = sched_state_copy(fx.a, s);
    top->f[h] = top->f[g] = top->f[c] = NULL;
    space_opts o = { &t, false, false }, pr = { &t, true, false };
    ir_vec all = {0}, pruned = {0};
    count_children(&fx, top, &o, &all);
    count_children(&fx, top, &pr, &pruned);
    bool inl_all = false, inl_pruned = false;
    for (int i = 0; i < all.n; i++) inl_all |= ((sched_state *)all.items[i])->f[h]->loc == SCHED_INLINE;
    for (int i = 0; i < pruned.n; i++) inl_pruned |= ((sched_state *)pruned.items[i])->f[h]->loc == SCHED_INLINE;
    CHECK(inl_all && !inl_pruned && pruned.n > 0);
    fixture_unload(&fx);
}

/* What one walk found. */
typedef struct { long states, children, lowered, illegal, unlowered, complete, redraws, empty; } walk_counts;

/* Walk w of an app: every child of every state passes legal_fits and
 * every complete child lowers.  The children of a state live in the
 * scratch arena ka, reset once they are checked (the legality ctx forgets
 * them first); the drawn child is enumerated again into the walk's arena.
 * la: a scratch arena for lowering. */
static void walk_one(const char *name, app_case *ac, const target *t, int w, ir_arena *ka, ir_arena *la,
                     walk_counts *n) {
    char err[1024];
    space_opts o = { t, w % 2 == 0, false };
    space_rng rng = { (uint64_t)w * 7919 + 17 };
    ir_arena *a = ir_arena_new();
    legal_ctx *x = space_legal(ac->p, ac->b, &o);
    nest_ctx *nx = nest_ctx_new(ac->p, ac->b);    /* lowering's model, kernels kept across children */
    sched_state *s = sched_state_new(a, ac->p);
    for (;;) {
        space_enum e;
        if (space_enum_begin(&e, ka, x, ac->p, ac->b, s, &o) < 0) break;
        n->states++;
        int64_t nk = 0;
        for (sched_state *c; (c = space_enum_next(&e, ka)); nk++) {
            n->children++;
            if (legal_fits(x, c, err, sizeof err) != 0 && n->illegal++ < 3)
                fprintf(stderr, "%s: illegal child: %s\n", name, err);
            if (sched_complete(ac->p, c)) {
                n->lowered++;
                if (!lower_schedule_ctx(la, ac->p, ac->b, c, nx, err, sizeof err) && n->unlowered++ < 3)
                    fprintf(stderr, "%s: does not lower: %s\n", name, err);
                ir_arena_reset(la);
                if (n->lowered % 256 == 0) nest_ctx_flush(nx);
            }
        }
        legal_forget(x);
        ir_arena_reset(ka);
        if (nk == 0) {
            n->empty++;
            break;
        }
        /* draw one: enumerate again, into the walk's arena, up to it */
        int64_t pick = space_rand_below64(&rng, nk);
        space_enum_begin(&e, a, x, ac->p, ac->b, s, &o);
        for (int64_t i = 0; i < pick; i++) space_enum_skip(&e);
        s = space_enum_next(&e, a);
        /* the drawn child is legal: a walk never needs a redraw */
        if (!s || legal_fits(x, s, err, sizeof err) != 0) {
            if (n->redraws++ < 3) fprintf(stderr, "%s: drew an illegal child: %s\n", name, s ? err : "none");
            if (!s) break;
        }
    }
    n->complete += s && sched_complete(ac->p, s);
    nest_ctx_free(nx);
    legal_free(x);
    ir_arena_free(a);
}

/* Random walks over every app (test sizes), 100 each: every child of
 * every state is checked (walk_one: 22.6 million children, 258,831 of
 * them complete and lowered), walks reach a complete state by
 * construction.  The walks run on the machine's cores (OpenMP; each has
 * its own arenas and legality ctx, the pipeline and bounds are only
 * read); the counts do not depend on how they are spread.  Measured on
 * the 2-core development machine, shared with other jobs: 144 s of CPU
 * and 159 s of wall time at a load of 4; 149 s and 232 s at a load of 5
 * (bgu, lens_blur, stencil_chain and interpolate take most of it, about
 * half of it lowering; WALKS=n and APPS=a,b narrow it). */
static void test_walks(void) {
    int walks = getenv("WALKS") ? atoi(getenv("WALKS")) : 100;
    char **names, err[1024];
    int napps = apps_list("apps", &names, err, sizeof err);
    CHECK(napps >= 17);
    target t = fixture_target("a100");
    double t0 = omp_get_wtime();
    const char *only = getenv("APPS");      /* a comma-separated list, to look at a few */
    for (int ai = 0; ai < napps; ai++) {
        if (only && !apps_wanted(only, names[ai])) continue;
        double ta = omp_get_wtime();
        app_case ac;
        if (app_load("apps", names[ai], true, 1, &ac, err, sizeof err) != 0) {
            check_report(false, "%s: %s", names[ai], err);
            continue;
        }
        walk_counts sum = { 0 };
        #pragma omp parallel
        {
            walk_counts mine = { 0 };
            ir_arena *ka = ir_arena_new(), *la = ir_arena_new();
            #pragma omp for schedule(dynamic)
            for (int w = 0; w < walks; w++) walk_one(names[ai], &ac, &t, w, ka, la, &mine);
            ir_arena_free(ka);
            ir_arena_free(la);
            #pragma omp critical
            {
                sum.states += mine.states;
                sum.children += mine.children;
                sum.lowered += mine.lowered;
                sum.illegal += mine.illegal;
                sum.unlowered += mine.unlowered;
                sum.complete += mine.complete;
                sum.redraws += mine.redraws;
                sum.empty += mine.empty;
            }
        }
        check_report(sum.illegal == 0 && sum.unlowered == 0 && sum.complete == walks && sum.redraws == 0 &&
                         sum.empty == 0,
                     "%s: %d walks, %ld states, %ld children checked legal (%ld illegal), %ld complete ones lowered "
                     "(%ld failed), %ld draws that would need a redraw, %ld states without children", names[ai],
                     walks, sum.states, sum.children, sum.illegal, sum.lowered, sum.unlowered, sum.redraws, sum.empty);
        fprintf(stderr, "  %s: %.1f s\n", names[ai], omp_get_wtime() - ta);
        app_free(&ac);
    }
    apps_free_names(names, napps);
    fprintf(stderr, "walks: %.1f s (wall, %d threads)\n", omp_get_wtime() - t0, omp_get_max_threads());
}

/* space_random takes one enumerated child per step: the same seed gives
 * the same schedule, a complete one, every time. */
static void test_random_walk(void) {
    fixture fx = fixture_load(BLUR);
    target t = fixture_target("a100");
    space_opts o = { &t, true, false };
    char err[512];
    for (uint64_t seed = 1; seed <= 20; seed++) {
        sched_state *x = space_random(fx.a, fx.p, fx.b, &o, seed, err, sizeof err);
        sched_state *y = space_random(fx.a, fx.p, fx.b, &o, seed, err, sizeof err);
        CHECK(x && y && sched_complete(fx.p, x));
        CHECK(x && y && sched_hash(x, 5) == sched_hash(y, 5));
        CHECK(x && sched_check(fx.p, fx.b, x, &t, true, err, sizeof err) == 0);
    }
    fixture_unload(&fx);
}

int main(void) {
    RUN(test_copy_counts);
    RUN(test_blur_counts);
    RUN(test_partial_states);
    RUN(test_inline_redundancy);
    RUN(test_random_walk);
    RUN(test_walks);
    CHECK_EXIT();
}
