/*
 * test_space.c - the schedule space: every app at its paper size gets a
 * seeded random schedule within the limits of a wide-warp GPU (a100) and
 * of a narrow-warp device (warp 8, like PoCL's), with and without the
 * §6.6 pruning; the walk is deterministic per seed; space_fits rejects a
 * partial state over a limit and accepts the same state within it; the
 * fixed strategies pass sched_check; the kept tilings of a stage
 * (space_tilings_of) are the enumerator's, in its order, at every step
 * of random walks (ROOT and BLOCK stages, with and without pruning); the
 * reference schedule is the baseline, else root, else none (space_reference);
 * re-tilings of the baseline keep its locations (space_retile); with
 * unroll_whole a short loop is also offered its whole extent as a serial
 * size.  (Counts of children and the
 * legality of every child: test_legal.c.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apps.h"
#include "check.h"
#include "fixtures.h"
#include "space.h"

static void test_every_app_gets_random_schedules(void) {
    target wide = fixture_target("a100"), narrow = fixture_target("a100");
    narrow.warp_size = 8;
    snprintf(narrow.name, sizeof narrow.name, "narrow");
    char **names, err[1024];
    int n = apps_list("apps", &names, err, sizeof err);
    CHECK(n >= 17);
    for (int i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "apps/%s.pipe", names[i]);
        sc_pipeline *p = sc_parse_file(path, NULL);
        bounds_result *b = sc_error_count(p) ? NULL : bounds_infer(p);
        CHECK(b != NULL);
        for (int k = 0; b && k < 4; k++) {
            space_opts o = { k / 2 ? &narrow : &wide, k % 2 == 1, false };
            for (uint64_t seed = 1; seed <= 2; seed++) {
                ir_arena *a = ir_arena_new();
                sched_state *s = space_random(a, p, b, &o, seed, err, sizeof err);
                if (!s) fprintf(stderr, "%s on %s (prune %d) seed %llu: %s\n", names[i], o.t->name, o.prune,
                                (unsigned long long)seed, err);
                CHECK(s != NULL);
                CHECK(!s || sched_check(p, b, s, o.t, o.prune, err, sizeof err) == 0);
                ir_arena_free(a);
            }
        }
        for (int k = 0; b && k < 2; k++) {
            ir_arena *a = ir_arena_new();
            sched_state *s = k ? space_baseline(a, p, b, &wide) : space_root(a, p, b, &wide);
            if (sched_check(p, b, s, &wide, false, err, sizeof err) != 0)
                fprintf(stderr, "%s %s: %s\n", names[i], k ? "baseline" : "root", err);
            CHECK(sched_check(p, b, s, &wide, false, err, sizeof err) == 0);
            ir_arena_free(a);
        }
        if (b) bounds_free(b);
        sc_pipeline_free(p);
    }
    apps_free_names(names, n);
}

static const char *BLUR =
    "input f32 in(256, 128);\n"
    "blur_x(x, y) = in(x, y) + in(x + 1, y) + in(x + 2, y);\n"
    "out(x, y) = blur_x(x, y) + blur_x(x, y + 1) + blur_x(x, y + 2);\n"
    "output out(254, 126);\n";

static void test_walk_is_deterministic(void) {
    sc_pipeline *p = sc_parse_string("blur.pipe", BLUR, strlen(BLUR), NULL);
    bounds_result *b = bounds_infer(p);
    target t = fixture_target("a100");
    space_opts o = { &t, true, false };
    char err[512];
    ir_arena *a = ir_arena_new();
    int differ = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        char *x = sched_to_text(p, space_random(a, p, b, &o, seed, err, sizeof err));
        char *y = sched_to_text(p, space_random(a, p, b, &o, seed, err, sizeof err));
        char *z = sched_to_text(p, space_random(a, p, b, &o, seed + 100, err, sizeof err));
        CHECK(!strcmp(x, y));
        differ += strcmp(x, z) != 0;
        free(x);
        free(y);
        free(z);
    }
    CHECK(differ > 0);
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
}

/* out decided (blur_x not yet): too many threads is caught before blur_x
 * is decided; a legal out, then blur_x in registers over a serial tile
 * too large for the register file, likewise. */
static void test_fits_checks_partial_states(void) {
    sc_pipeline *p = sc_parse_string("blur.pipe", BLUR, strlen(BLUR), NULL);
    bounds_result *b = bounds_infer(p);
    target t = fixture_target("a100");
    space_opts o = { &t, false, false };
    char err[512];
    ir_arena *a = ir_arena_new();
    sched_state *s = sched_state_new(a, p);
    int out = space_next(p, s, NULL);
    CHECK(out >= 0 && !strcmp(((sc_func *)p->funcs.items[out])->name, "out"));
    sched_func *sf = sched_func_new(a, SCHED_ROOT, -1, 1);
    sf->tile[0] = (sched_tile){ .npure = 2, .threads = { 64, 32 }, .serial = { 1, 1 } };
    s->f[out] = sf;
    CHECK(space_fits(p, b, s, &o, err, sizeof err) != 0);
    CHECK(strstr(err, "2048 threads per block, over the target's 1024") != NULL);
    sf->tile[0] = (sched_tile){ .npure = 2, .threads = { 32, 4 }, .serial = { 8, 8 } };
    CHECK(space_fits(p, b, s, &o, err, sizeof err) == 0);
    int bx = space_next(p, s, NULL);
    CHECK(bx >= 0 && !strcmp(((sc_func *)p->funcs.items[bx])->name, "blur_x"));
    s->f[bx] = sched_func_new(a, SCHED_THREAD, out, 1);
    /* 16 + 64 set aside for staging + 8x10 blur_x points + 64 serial
     * points = 224: fits */
    CHECK(space_fits(p, b, s, &o, err, sizeof err) == 0);
    t.registers_per_thread = 223;
    CHECK(space_fits(p, b, s, &o, err, sizeof err) != 0);
    CHECK(strstr(err, "registers per thread") != NULL);
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
}

/* src parsed (as `name`) and its bounds inferred into *b; NULL (checked,
 * nothing left allocated) where either fails. */
static sc_pipeline *parse_bounded(const char *name, const char *src, bounds_result **b) {
    sc_pipeline *p = sc_parse_string(name, src, strlen(src), NULL);
    *b = sc_error_count(p) ? NULL : bounds_infer(p);
    CHECK(*b != NULL);
    if (!*b) {
        sc_pipeline_free(p);
        return NULL;
    }
    return p;
}

/* Whether, with out at root in threads of 1 x 4 points, the pruned
 * enumerator offers prod (a reduction of `terms` steps) at thread level
 * of out on target t. */
static bool offers_thread(int terms, target t) {
    char src[512];
    snprintf(src, sizeof src,
             "pipeline mm;\ninput f32 a(%d, 64);\ninput f32 bm(32, %d);\nrdom k(0, %d);\n"
             "prod(i, j) = 0.0f;\nprod(i, j) += a(k.x, j) * bm(i, k.x);\nout(i, j) = prod(i, j) * 2.0f;\n"
             "output out(32, 64);\n", terms, terms, terms);
    bounds_result *b;
    sc_pipeline *p = parse_bounded("mm.pipe", src, &b);
    if (!p) return false;
    space_opts o = { &t, true, false };
    legal_ctx *x = space_legal(p, b, &o);
    ir_arena *a = ir_arena_new();
    sched_state *s = sched_state_new(a, p);
    int out = space_next(p, s, NULL);
    sched_func *sf = sched_func_new(a, SCHED_ROOT, -1, 1);
    sf->tile[0] = (sched_tile){ .npure = 2, .threads = { 32, 4 }, .serial = { 1, 4 } };
    s->f[out] = sf;
    ir_vec ch = { 0 };
    int n = space_children(a, x, p, b, s, &o, &ch);
    bool thread = false;
    for (int i = 0; i < n; i++) {
        const sched_state *c = ch.items[i];
        for (int f = 0; f < p->funcs.n; f++)
            thread |= f != out && c->f[f] && c->f[f]->loc == SCHED_THREAD;
    }
    ir_arena_free(a);
    legal_free(x);
    bounds_free(b);
    sc_pipeline_free(p);
    return thread;
}

/* On a CPU target the pruned search computes no long reduction in its
 * consumer's threads (each work-item would carry its running values
 * through a rolled loop); a short one, and a GPU's, stay. */
static void test_cpu_prunes_thread_reductions(void) {
    target gpu = fixture_target("a100"), cpu = gpu;
    cpu.cpu = true;
    CHECK(offers_thread(256, gpu));
    CHECK(!offers_thread(256, cpu));
    CHECK(offers_thread(8, cpu));
}

/* The tilings offered to the one Func of the pipeline src, put at root
 * (its only location) on target t with options o, as a bit set: for each
 * tiling, 1 << bit(tiling). */
static unsigned root_tiling_bits(const char *src, const space_opts *o, int (*bit)(const sched_tile *)) {
    bounds_result *b;
    sc_pipeline *p = parse_bounded("t.pipe", src, &b);
    if (!p) return 0;
    legal_ctx *x = space_legal(p, b, o);
    ir_arena *a = ir_arena_new();
    sched_state *s = sched_state_new(a, p);
    unsigned bits = 0;
    ir_vec ch = { 0 };
    /* the location (root), then the tilings */
    CHECK(space_children(a, x, p, b, s, o, &ch) == 1);
    space_enum e;
    if (ch.n == 1 && space_enum_begin(&e, a, x, p, b, ch.items[0], o) >= 0 && e.tiling)
        while (space_enum_skip(&e)) bits |= 1u << bit(&e.cur);
    ir_arena_free(a);
    legal_free(x);
    bounds_free(b);
    sc_pipeline_free(p);
    return bits;
}

static int second_serial(const sched_tile *t) { return t->serial[1]; }

/* The serial sizes a root stage's loop of extent ext (the second of an
 * output (256, ext)) is offered, as a bit set: bit s for serial s. */
static unsigned serial_sizes(int ext, bool prune, bool whole) {
    char src[256];
    snprintf(src, sizeof src,
             "pipeline sz;\ninput f32 a(256, %d);\nout(x, c) = select(c == 0, a(x, c), a(x, c) * 2.0f);\n"
             "output out(256, %d);\n", ext, ext);
    target t = fixture_target("a100");
    space_opts o = { &t, prune, whole };
    return root_tiling_bits(src, &o, second_serial);
}

/* With unroll_whole, a short loop (a colour channel of 3) is offered its
 * whole extent as a serial size, for extents 3 to 7, beside 1, 2 and 4 up
 * to the extent; extents of 2 and 8 get nothing new; without it, the
 * sizes are 1, 2, 4 and 8 up to the extent. */
static void test_short_loops_unroll_whole(void) {
    const unsigned s1 = 1u << 1, s2 = 1u << 2, s4 = 1u << 4, s8 = 1u << 8;
    for (int prune = 0; prune < 2; prune++) {
        CHECK(serial_sizes(3, prune, true) == (s1 | s2 | 1u << 3));
        CHECK(serial_sizes(5, prune, true) == (s1 | s2 | s4 | 1u << 5));
        CHECK(serial_sizes(6, prune, true) == (s1 | s2 | s4 | 1u << 6));
        CHECK(serial_sizes(7, prune, true) == (s1 | s2 | s4 | 1u << 7));
        CHECK(serial_sizes(2, prune, true) == (s1 | s2));
        CHECK(serial_sizes(8, prune, true) == (s1 | s2 | s4 | s8));
        CHECK(serial_sizes(3, prune, false) == (s1 | s2));
        CHECK(serial_sizes(7, prune, false) == (s1 | s2 | s4));
        CHECK(serial_sizes(8, prune, false) == (s1 | s2 | s4 | s8));
    }
}

static int first_threads_log2(const sched_tile *t) {
    int k = 0;
    while (k < 31 && (1 << k) < t->threads[0]) k++;
    return k;
}

/* The threads a root stage's innermost loop is offered, as a bit set (bit
 * k for 2^k threads), for a 2-point stencil over an input of type `type`
 * on target t. */
static unsigned inner_threads(const char *type, const target *t) {
    char src[256];
    snprintf(src, sizeof src,
             "pipeline th;\ninput %s a(513, 64);\nout(x, y) = a(x, y) + a(x + 1, y);\noutput out(512, 64);\n", type);
    space_opts o = { t, false, false };
    return root_tiling_bits(src, &o, first_threads_log2);
}

/* On a CPU target (PoCL's: a warp of 8, its f32 lanes) a root stage's
 * work-group is at least as wide as its vector in the narrowest type it
 * stores or reads: 8 work-items of f32, 16 of u16, 32 of u8; a GPU is
 * offered 8 too where it is its warp.  Where no tiling that wide is legal
 * (16 threads a block at most), the narrower ones are offered. */
static void test_cpu_vector_lanes(void) {
    target gpu = fixture_target("a100"), cpu = gpu;
    gpu.warp_size = 8;
    cpu.warp_size = 8;
    cpu.cpu = true;
    const unsigned t8 = 1u << 3, t16 = 1u << 4, t32 = 1u << 5, t64 = 1u << 6;
    CHECK(inner_threads("u8", &gpu) == (t8 | t16 | t32 | t64));
    CHECK(inner_threads("f32", &cpu) == (t8 | t16 | t32 | t64));
    CHECK(inner_threads("u16", &cpu) == (t16 | t32 | t64));
    CHECK(inner_threads("u8", &cpu) == (t32 | t64));
    cpu.max_threads_per_block = 16;
    for (int d = 0; d < 3; d++) cpu.max_threads_per_dim[d] = 16;
    CHECK(inner_threads("u8", &cpu) == (t8 | t16));
}

/* Whether stage `stage` of the output of src (its only Func), at root on
 * options o, is offered (serial, threads) in its innermost loop; the
 * stages before it take their first tiling. */
static bool offers_inner_tile(const char *src, const space_opts *o, int stage, int serial, int threads) {
    bounds_result *b;
    sc_pipeline *p = parse_bounded("t.pipe", src, &b);
    if (!p) return false;
    legal_ctx *x = space_legal(p, b, o);
    ir_arena *a = ir_arena_new();
    sched_state *s = sched_state_new(a, p);
    ir_vec ch = { 0 };
    CHECK(space_children(a, x, p, b, s, o, &ch) == 1);
    s = ch.n == 1 ? ch.items[0] : NULL;
    space_enum e;
    for (int st = 0; s && st < stage; st++) {
        CHECK(space_enum_begin(&e, a, x, p, b, s, o) >= 0 && e.tiling && e.st == st);
        s = space_enum_next(&e, a);
    }
    bool found = false;
    if (s && space_enum_begin(&e, a, x, p, b, s, o) >= 0 && e.tiling && e.st == stage)
        while (space_enum_skip(&e)) found |= e.cur.serial[0] == serial && e.cur.threads[0] == threads;
    ir_arena_free(a);
    legal_free(x);
    bounds_free(b);
    sc_pipeline_free(p);
    return found;
}

/* On a CPU (of 2 cores and 8 f32 lanes), a scan (an update whose
 * reduction runs around the serial tile) may take 16 to 64 serial points
 * innermost on 1 to 16 threads, pruned or not (no warp multiple, no
 * unrolling asked): the device compiler vectorizes its serial loop.  Its
 * pure stage, and every stage on a GPU, keep at most 8 serial points. */
static void test_cpu_vector_tiles(void) {
    const char *scan =
        "pipeline sc;\ninput f32 a(512, 64);\nf(x, y) = a(x, y);\nrdom r(1, 63);\n"
        "f(x, r) = f(x, r - 1) * 0.5f + f(x, r);\noutput f(512, 64);\n";
    target gpu = fixture_target("a100"), cpu = gpu;
    cpu.warp_size = 8;
    cpu.sm_count = 2;
    cpu.cpu = true;
    for (int prune = 0; prune < 2; prune++) {
        space_opts oc = { &cpu, prune, false }, og = { &gpu, prune, false };
        CHECK(offers_inner_tile(scan, &oc, 1, 64, 1));
        CHECK(offers_inner_tile(scan, &oc, 1, 32, 4));
        CHECK(offers_inner_tile(scan, &oc, 1, 16, 8));
        CHECK(offers_inner_tile(scan, &oc, 1, 8, 16));
        CHECK(!offers_inner_tile(scan, &oc, 1, 64, 16));   /* 1024 points over 512 */
        CHECK(!offers_inner_tile(scan, &oc, 0, 64, 1));
        CHECK(!offers_inner_tile(scan, &oc, 0, 16, 8));
        CHECK(!offers_inner_tile(scan, &og, 1, 64, 1));
        CHECK(!offers_inner_tile(scan, &og, 1, 16, 32));
        CHECK(offers_inner_tile(scan, &og, 1, 8, 32));
    }
}

/* Random walks; at every tiling step the kept list must equal what
 * space_enum_skip steps through.  Returns the tiling steps compared. */
static int compare_tilings(const char *app, const char *target_name, int seeds, int *blocks) {
    char path[512];
    snprintf(path, sizeof path, "apps/%s.pipe", app);
    sc_pipeline *p = sc_parse_file(path, NULL);
    bounds_result *b = sc_error_count(p) ? NULL : bounds_infer(p);
    CHECK(b != NULL);
    if (!b) return 0;
    target t = fixture_target(target_name);
    int steps = 0;
    for (int prune = 0; prune < 2; prune++) {
        space_opts o = { &t, prune == 1, false };
        space_tilings *tc = space_tilings_new(p, b, &o);
        legal_ctx *x = space_legal(p, b, &o);
        for (int seed = 1; seed <= seeds; seed++) {
            ir_arena *a = ir_arena_new();
            space_rng rng = { (uint64_t)seed * 7919 };
            sched_state *s = sched_state_new(a, p);
            for (;;) {
                bool tiling;
                int fid = space_next(p, s, &tiling);
                if (fid < 0) break;
                if (tiling) {
                    const sched_tile *kept;
                    int nk = space_tilings_of(tc, x, s, fid, &kept), ne = 0;
                    bool same = true;
                    space_enum e;
                    space_enum_begin(&e, a, x, p, b, s, &o);
                    while (space_enum_skip(&e)) {
                        same &= ne < nk && !memcmp(&kept[ne], &e.cur, sizeof e.cur);
                        ne++;
                    }
                    if (!same || ne != nk)
                        fprintf(stderr, "%s on %s seed %d prune %d func %d: %d kept tilings, %d enumerated\n", app,
                                target_name, seed, prune, fid, nk, ne);
                    CHECK(same && ne == nk);
                    steps++;
                    *blocks += s->f[fid]->loc == SCHED_BLOCK;
                }
                ir_vec ch = { 0 };
                int n = space_children(a, x, p, b, s, &o, &ch);
                CHECK(n > 0);
                if (n <= 0) break;
                /* lean towards fusion, so that BLOCK stages are tiled */
                int pick = space_rand_below(&rng, n);
                if (!tiling && n > 2 && space_rand_below(&rng, 2)) pick = n - 2;
                s = ch.items[pick];
            }
            legal_forget(x);
            ir_arena_free(a);
        }
        legal_free(x);
        space_tilings_free(tc);
    }
    bounds_free(b);
    sc_pipeline_free(p);
    return steps;
}

static void test_kept_tilings_are_the_enumerators(void) {
    static const char *apps[] = { "conv_layer", "nl_means", "harris", "camera_pipe", "bilateral_grid",
                                  "max_filter", "local_laplacian" };
    /* a GPU, and a CPU, where the vector lanes rule narrows the
     * options of a root stage's innermost loop */
    static const char *targets[] = { "a100", "host-opencl" };
    for (int g = 0; g < 2; g++) {
        int steps = 0, blocks = 0;
        for (size_t i = 0; i < sizeof apps / sizeof *apps; i++)
            steps += compare_tilings(apps[i], targets[g], 4, &blocks);
        CHECK(steps > 100);
        CHECK(blocks > 5);
    }
}

/* The reference schedule is the baseline where it passes sched_check,
 * else root; with a block limit under their 64 threads, none. */
static void test_reference_is_baseline_else_root(void) {
    target wide = fixture_target("a100"), small = wide;
    small.max_threads_per_block = 32;
    static const char *apps[] = { "box_blur", "harris", "unsharp" };
    for (size_t i = 0; i < sizeof apps / sizeof *apps; i++) {
        char path[512], err[1024];
        snprintf(path, sizeof path, "apps/%s.pipe", apps[i]);
        sc_pipeline *p = sc_parse_file(path, NULL);
        bounds_result *b = bounds_infer(p);
        ir_arena *a = ir_arena_new();
        sched_state *fixed[2];
        sched_state *r = space_reference(a, p, b, &wide, false, fixed);
        char *rt = r ? sched_to_text(p, r) : NULL, *bt = sched_to_text(p, space_baseline(a, p, b, &wide));
        CHECK(rt && fixed[0] && fixed[1] && !strcmp(rt, bt));
        free(rt);
        free(bt);
        /* neither passes (both tile by 64 threads): NULL, and both NULL */
        CHECK(sched_check(p, b, space_baseline(a, p, b, &small), &small, false, err, sizeof err) != 0);
        CHECK(sched_check(p, b, space_root(a, p, b, &small), &small, false, err, sizeof err) != 0);
        r = space_reference(a, p, b, &small, false, fixed);
        CHECK(!r && !fixed[0] && !fixed[1]);
        CHECK(!space_reference(a, p, b, &small, false, NULL));
        ir_arena_free(a);
        bounds_free(b);
        sc_pipeline_free(p);
    }
}

/* Re-tilings of the baseline (space_retile): the same per seed, the
 * baseline's locations kept, only root tilings changed (every root stage
 * or one of them), the first two pure loops of extent 8 or more within
 * their extents; over many seeds, several block shapes, some serial
 * tiles, and both modes; none on a pipeline whose root stages have no
 * such loop. */
static void test_retile(void) {
    static const char *apps[] = { "box_blur", "unsharp", "camera_pipe" };
    target t = fixture_target("a100");
    for (size_t i = 0; i < sizeof apps / sizeof *apps; i++) {
        char path[512];
        snprintf(path, sizeof path, "apps/%s.pipe", apps[i]);
        sc_pipeline *p = sc_parse_file(path, NULL);
        bounds_result *b = bounds_infer(p);
        ir_arena *a = ir_arena_new();
        sched_state *base = space_baseline(a, p, b, &t);
        int roots = 0, all_changed = 0, one_changed = 0, serial = 0, legal = 0, shapes_seen = 0;
        int seen[1024] = { 0 };
        for (int f = 0; f < p->funcs.n; f++)
            for (int st = 0; base->f[f] && base->f[f]->loc == SCHED_ROOT && st < base->f[f]->nstages; st++) {
                int64_t ext[SC_MAX_DIMS];
                int np = legal_pure_extents(b, p->funcs.items[f], st, ext);
                bool wide = false;
                for (int k = 0; k < np; k++) wide |= ext[k] >= 8;
                roots += wide;     /* stages with a loop to re-tile */
            }
        for (uint64_t seed = 1; seed <= 40; seed++) {
            sched_state *s = space_retile(a, p, b, base, seed), *again = space_retile(a, p, b, base, seed);
            char *x = sched_to_text(p, s), *y = sched_to_text(p, again);
            CHECK(!strcmp(x, y));
            free(x);
            free(y);
            int changed = 0;
            for (int f = 0; f < p->funcs.n; f++) {
                const sched_func *bf = base->f[f], *sf = s->f[f];
                CHECK((bf == NULL) == (sf == NULL));
                if (!bf) continue;
                CHECK(bf->loc == sf->loc && bf->at == sf->at);
                for (int st = 0; bf->loc == SCHED_ROOT && st < bf->nstages; st++) {
                    const sched_tile *bt = &bf->tile[st], *tt = &sf->tile[st];
                    int64_t ext[SC_MAX_DIMS];
                    legal_pure_extents(b, p->funcs.items[f], st, ext);
                    bool diff = false;
                    for (int k = 0; k < bt->npure; k++) {
                        diff |= bt->threads[k] != tt->threads[k] || bt->serial[k] != tt->serial[k];
                        CHECK(tt->threads[k] >= 1 && tt->threads[k] <= (ext[k] > 1 ? ext[k] : 1));
                        serial += tt->serial[k] > 1;
                    }
                    changed += diff;
                    int n = 1;
                    for (int k = 0; k < tt->npure; k++) n *= tt->threads[k];
                    if (diff && n < 1024) seen[n] = 1;
                }
            }
            all_changed += changed == roots;
            one_changed += changed <= 1;
            legal += sched_check(p, b, s, &t, false, NULL, 0) == 0;
        }
        for (int k = 0; k < 1024; k++) shapes_seen += seen[k];
        if (!(all_changed > 0 && one_changed > 0 && serial > 0 && shapes_seen >= 3 && legal >= 10))
            fprintf(stderr, "%s: all %d one %d serial %d shapes %d legal %d\n", apps[i], all_changed, one_changed,
                    serial, shapes_seen, legal);
        CHECK(all_changed > 0 && one_changed > 0 && serial > 0 && shapes_seen >= 3 && legal >= 10);
        ir_arena_free(a);
        bounds_free(b);
        sc_pipeline_free(p);
    }
    static const char *tiny = "input f32 in(4, 4);\nout(x, y) = in(x, y) * 2.0;\noutput out(4, 4);\n";
    sc_pipeline *p = sc_parse_string("tiny.pipe", tiny, strlen(tiny), NULL);
    bounds_result *b = bounds_infer(p);
    ir_arena *a = ir_arena_new();
    CHECK(space_retile(a, p, b, space_baseline(a, p, b, &t), 1) == NULL);
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
}

int main(void) {
    RUN(test_retile);
    RUN(test_every_app_gets_random_schedules);
    RUN(test_reference_is_baseline_else_root);
    RUN(test_walk_is_deterministic);
    RUN(test_fits_checks_partial_states);
    RUN(test_kept_tilings_are_the_enumerators);
    RUN(test_cpu_prunes_thread_reductions);
    RUN(test_short_loops_unroll_whole);
    RUN(test_cpu_vector_lanes);
    RUN(test_cpu_vector_tiles);
    CHECK_EXIT();
}
