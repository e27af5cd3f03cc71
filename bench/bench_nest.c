/*
 * bench_nest.c - how fast the loop-nest model answers, per app at its
 * paper size, on one core (nothing here is parallel):
 *
 *   extend     a state extended by one decision and its model updated
 *              (every walk's prefixes in order, one ctx per pass, so what
 *              earlier states built is reused as a search would; passes
 *              repeat until --min-s has passed)
 *   partial    a state extended by one decision, its model updated and
 *              its features computed (feat_compute_ctx), as a search does
 *              it: the extend pass with a feat_ctx beside the nest_ctx,
 *              both fresh per pass, so rows of unchanged kernels are reused
 *   featurize  a complete state from scratch: its model built with no
 *              kernel reuse, its features with no row reuse (one feat_ctx
 *              per app, its access cache warm)
 *   children   space_children of each prefix state (all children, up
 *              to 4096), per state expanded
 *   lower      lower_schedule of the complete state, for comparison
 *   feat%      the share of partial's time spent in feat_compute_ctx
 *   hit%       kernels the extend pass found in the nest_ctx's cache
 *   rows%      feature rows the partial pass found in the feat_ctx's cache
 *
 *   build/bench_nest [--walks N] [--apps a,b] [--small] [--min-s S] [--cpu]
 *                    [--skip partial,featurize,children,lower]
 *
 * Rates are states per second; every figure repeats its loop until it has
 * run --min-s seconds (0.3).  Seconds are wall-clock seconds, or with
 * --cpu the CPU seconds of the benchmark's thread, which other jobs on a
 * shared machine disturb less (they still share its caches).  The walks are space_random's (seeds
 * 1..N, default 20, a100 limits, §6.6 pruning on), drawn before any
 * timing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "apps.h"
#include "features.h"
#include "lower.h"
#include "nest.h"
#include "space.h"

static clockid_t clock_id = CLOCK_MONOTONIC;

static double now_s(void) {
    struct timespec t;
    clock_gettime(clock_id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct {
    int n;                        /* states */
    sched_state **q;              /* q[i]: the first i + 1 decisions */
} walk;

/* The prefixes of a complete state in decision order. */
static walk prefixes(ir_arena *a, const sc_pipeline *p, const sched_state *s) {
    walk w = { 0, ir_alloc(a, sizeof(sched_state *) * (size_t)(p->funcs.n + 1)) };
    sched_state *q = sched_state_new(a, p);
    for (int f = space_next(p, q, NULL); f >= 0; f = space_next(p, q, NULL)) {
        sched_state *c = sched_state_copy(a, q);
        c->f[f] = s->f[f];
        w.q[w.n++] = c;
        q = c;
    }
    return w;
}

int main(int argc, char **argv) {
    int nwalks = 20;
    const char *apps = NULL, *skip = "";
    bool small = false;
    double min_s = 0.3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--walks") && i + 1 < argc) nwalks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--apps") && i + 1 < argc) apps = argv[++i];
        else if (!strcmp(argv[i], "--min-s") && i + 1 < argc) min_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--small")) small = true;
        else if (!strcmp(argv[i], "--cpu")) clock_id = CLOCK_THREAD_CPUTIME_ID;
        else if (!strcmp(argv[i], "--skip") && i + 1 < argc) skip = argv[++i];
        else {
            fprintf(stderr, "usage: bench_nest [--walks N] [--apps a,b] [--small] [--min-s S] [--cpu] "
                            "[--skip partial,featurize,children,lower]\n");
            return 2;
        }
    }
    if (nwalks < 1) nwalks = 1;
    target t;
    char err[1024];
    if (target_by_name("a100", NULL, &t, err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return 1; }
    char **names;
    int napps = apps_list("apps", &names, err, sizeof err);
    if (napps < 0) { fprintf(stderr, "%s\n", err); return 1; }
    printf("%-22s %5s %6s %9s %9s %5s %11s %10s %8s %6s %6s\n", "app", "funcs", "states", "extend/s",
           "partial/s", "feat%", "featurize/s", "children/s", "lower/s", "hit%", "rows%");
    double check = 0;
    for (int ai = 0; ai < napps; ai++) {
        if (!apps_wanted(apps, names[ai])) continue;
        char path[512];
        snprintf(path, sizeof path, "apps/%s.pipe", names[ai]);
        sc_parse_options po = { small, 0, NULL, NULL };
        sc_pipeline *p = sc_parse_file(path, &po);
        bounds_result *b = sc_error_count(p) ? NULL : bounds_infer(p);
        if (!b) { printf("%-26s  (does not load)\n", names[ai]); sc_pipeline_free(p); continue; }
        ir_arena *a = ir_arena_new();
        space_opts o = { &t, true, false };
        walk *walks = calloc((size_t)nwalks, sizeof *walks);
        sched_state **full = calloc((size_t)nwalks, sizeof *full);
        int nw = 0, nstates = 0;
        for (int k = 0; k < nwalks; k++) {
            sched_state *s = space_random(a, p, b, &o, (uint64_t)k + 1, err, sizeof err);
            if (!s) continue;
            full[nw] = s;
            walks[nw] = prefixes(a, p, s);
            nstates += walks[nw++].n;
        }
        if (!nw) { printf("%-22s  (no schedule)\n", names[ai]); goto next; }
        /* (a) extend by one decision, with reuse: passes over every walk,
         * each with a fresh ctx (one search; a second pass in the same ctx
         * would find every kernel cached), until --min-s has passed */
        nest_ctx *x = NULL;
        int64_t built = 0;
        double t0 = now_s(), el;
        do {
            nest_ctx_free(x);
            x = nest_ctx_new(p, b);
            for (int w = 0; w < nw; w++)
                for (int i = 0; i < walks[w].n; i++) {
                    sched_state *c = sched_state_copy(a, i ? walks[w].q[i - 1] : sched_state_new(a, p));
                    int f = space_next(p, c, NULL);
                    c->f[f] = walks[w].q[i]->f[f];
                    nest *m = nest_build(x, c, err, sizeof err);
                    if (m) check += m->nkernels;
                    nest_free(m);
                    built++;
                }
            el = now_s() - t0;
        } while (el < min_s);
        double extend = (double)built / el;
        nest_stats st = nest_ctx_stats(x);
        double hit = 100.0 * (double)st.kernel_hits / (double)(st.kernel_hits + st.kernel_misses + 1);
        /* (b) extend by one decision, update the model and featurize:
         * the same passes with a feat_ctx beside the nest_ctx */
        feat_result fr;
        double partial = 0, rows_hit = 0, in_feat = 0;
        if (!strstr(skip, "partial")) {
            nest_ctx *px = NULL;
            feat_ctx *fx = NULL;
            built = 0;
            t0 = now_s();
            do {
                nest_ctx_free(px);
                feat_ctx_free(fx);
                px = nest_ctx_new(p, b);
                fx = feat_ctx_new(p, b);
                for (int w = 0; w < nw; w++)
                    for (int i = 0; i < walks[w].n; i++) {
                        sched_state *c = sched_state_copy(a, i ? walks[w].q[i - 1] : sched_state_new(a, p));
                        int f = space_next(p, c, NULL);
                        c->f[f] = walks[w].q[i]->f[f];
                        nest *m = nest_build(px, c, err, sizeof err);
                        double f0 = now_s();
                        if (m && feat_compute_ctx(fx, c, m, &t, &fr, err, sizeof err) == 0) {
                            for (int r = 0; r < fr.n; r++) check += fr.rows[r].v[FEAT_AT(FEAT_num_blocks)];
                            feat_free(&fr);
                        }
                        in_feat += now_s() - f0;
                        nest_free(m);
                        built++;
                    }
                el = now_s() - t0;
            } while (el < min_s);
            partial = (double)built / el;
            in_feat = 100.0 * in_feat / el;
            feat_cache_stats fs = feat_ctx_stats(fx);
            rows_hit = 100.0 * (double)fs.row_hits / (double)(fs.row_hits + fs.row_misses + fs.uncached + 1);
            nest_ctx_free(px);
            feat_ctx_free(fx);
        }
        /* (c) featurize a complete state from scratch: no kernel reuse,
         * no row reuse */
        feat_ctx *fx = feat_ctx_new(p, b);
        feat_ctx_cache_rows(fx, false);
        nest_ctx_cache_kernels(x, false);
        built = 0;
        t0 = now_s();
        bool feat_on = !strstr(skip, "featurize");
        while (feat_on) {
            for (int w = 0; w < nw; w++) {
                nest *m = nest_build(x, full[w], err, sizeof err);
                if (m && feat_compute_ctx(fx, full[w], m, &t, &fr, err, sizeof err) == 0) {
                    for (int r = 0; r < fr.n; r++) check += fr.rows[r].v[FEAT_AT(FEAT_num_blocks)];
                    feat_free(&fr);
                }
                nest_free(m);
                built++;
            }
            el = now_s() - t0;
            if (el >= min_s) break;
        }
        double feat = built ? (double)built / el : 0;
        feat_ctx_free(fx);
        nest_ctx_free(x);
        /* (d) children of every prefix state */
        legal_ctx *lx = space_legal(p, b, &o);
        built = 0;
        t0 = now_s();
        bool kids_on = !strstr(skip, "children"), lower_on = !strstr(skip, "lower");
        /* states are expanded until --min-s has passed (bgu's take a
         * second each at its paper size) */
        for (int w = 0; kids_on && w < nw && now_s() - t0 < min_s; w++)
            for (int i = 0; i + 1 < walks[w].n && now_s() - t0 < min_s; i++) {
                ir_arena *ca = ir_arena_new();
                ir_vec kids = {0};
                check += space_children(ca, lx, p, b, walks[w].q[i], &o, &kids);
                ir_arena_free(ca);
                built++;
            }
        el = now_s() - t0;
        legal_free(lx);
        double children = built ? (double)built / el : 0;
        /* (e) lowering */
        built = 0;
        t0 = now_s();
        while (lower_on) {
            for (int w = 0; w < nw; w++) {
                ir_arena *la = ir_arena_new();
                lower_program *prog = lower_schedule(la, p, b, full[w], err, sizeof err);
                if (prog) check += prog->nkernels;
                ir_arena_free(la);
                built++;
            }
            el = now_s() - t0;
            if (el >= min_s) break;
        }
        double lower = built ? (double)built / el : 0;
        printf("%-22s %5d %6d %9.0f %9.0f %4.0f%% %11.0f %10.0f %8.0f %5.1f%% %5.1f%%\n", names[ai], p->funcs.n,
               nstates / nw, extend, partial, in_feat, feat, children, lower, hit, rows_hit);
        fflush(stdout);
    next:
        free(walks);
        free(full);
        ir_arena_free(a);
        bounds_free(b);
        sc_pipeline_free(p);
    }
    apps_free_names(names, napps);
    printf("# states: decisions per walk (mean); feat%%: share of partial's time in feat_compute_ctx; hit%%: kernels reused while extending; rows%%: feature rows reused while extending; checksum %.6g\n", check);
    return 0;
}
