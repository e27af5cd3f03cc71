/*
 * test_beam.c - the beam search (src/search/beam.h) at small sizes: the
 * learned model trained in-process on the committed fixture
 * tests/data/train_tiny.txt; one-shot schedules of every app checked,
 * lowered and run on the C back end bit-exactly against the reference
 * evaluator; determinism in the seed; hierarchical sampling's draws per
 * bucket; secondary children; the baseline and root in every batch; the
 * freezing pre-pass on a pipeline whose
 * expensive stages are known (under a cost model of this file whose costs
 * are plain operation counts); pipelines with several outputs, a
 * 1-element output, a 1-D input of 10 million elements, random pipelines.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "apps.h"
#include "beam.h"
#include "check.h"
#include "exec.h"
#include "fixtures.h"
#include "lower.h"
#include "randpipe.h"
#include "train.h"
#include "train_load.h"

static nn_model weights, weights2;    /* seeds 1 and 2 */
static target A100;
static char tmpdir[] = "/tmp/test_beam_XXXXXX";
static rt_device *cdev;

/* ---- a cost model of known costs: points computed x (1 + operations) ---- */

static int ops_predict(cost_model *m, int n, const feat_result *const *feats, double *ms, char *err, size_t errlen) {
    (void)m; (void)err; (void)errlen;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int r = 0; r < feats[i]->n; r++) {
            const double *v = feats[i]->rows[r].v;
            double ops = 1;
            for (int k = 0; k < FEAT_HIST_COUNT; k++) ops += v[k];
            s += v[FEAT_AT(FEAT_points_computed_total)] * ops * (1 + v[FEAT_AT(FEAT_idle_lane_wastage)]);
        }
        ms[i] = s * 1e-6;
    }
    return 0;
}
static void opsm_free(cost_model *m) { (void)m; }
static const cost_ops ops_model_ops = { .name = "ops", .predict = ops_predict, .free = opsm_free };
static cost_model ops_model = { &ops_model_ops };

/* ---- helpers ----------------------------------------------------------------- */

static search_opts small_opts(cost_model *m) {
    search_opts o;
    search_opts_default(&o, &A100, m);
    o.beam = 8;
    o.passes = 3;
    return o;
}

/* Writes text to tmpdir/NAME.pipe and loads it as an app (small sizes,
 * seeded inputs, reference outputs). */
static int load_text(const char *name, const char *text, app_case *ac) {
    char path[256], err[2048];
    snprintf(path, sizeof path, "%s/%s.pipe", tmpdir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    fclose(f);
    if (app_load(tmpdir, name, true, 7, ac, err, sizeof err) != 0) {
        fprintf(stderr, "  %s: %s\n", name, err);
        return -1;
    }
    return 0;
}

/* The schedule fits the target, lowers, and (run) gives the reference's
 * outputs bit for bit on the C back end. */
static bool check_schedule(const char *what, app_case *ac, ir_arena *a, const sched_state *s, bool run) {
    char err[8192];
    if (!s) return false;
    if (sched_check(ac->p, ac->b, s, &A100, false, err, sizeof err) != 0) {
        fprintf(stderr, "  %s: %s\n", what, err);
        return false;
    }
    lower_program *prog = lower_schedule(a, ac->p, ac->b, s, err, sizeof err);
    if (!prog) {
        fprintf(stderr, "  %s: lowering: %s\n", what, err);
        return false;
    }
    if (!run) return true;
    prog->schedule_text = "";
    exec_diff df;
    exec_session *es = exec_open_checked(&rt_c_ops, cdev, prog, CG_MATH_EXACT, NULL, ac->in, ac->ref, 120000, &df,
                                         err, sizeof err);
    bool ok = es && df.mismatches == 0 && df.differ == 0;
    if (!ok) fprintf(stderr, "  %s: %s (%lld points differ)\n", what, es ? "mismatch" : err, (long long)df.differ);
    exec_close(es);
    return ok;
}

/* ---- cases ------------------------------------------------------------------- */

/* One-shot on every app: legal, lowers, bit-exact on the C back end. */
static void test_every_app(void) {
    char err[4096], **names;
    int napps = apps_list("apps", &names, err, sizeof err);
    CHECK(napps > 10);
    cost_model *cm = cost_learned_new(&weights, &A100);
    for (int i = 0; i < napps; i++) {
        if (!apps_wanted(getenv("APPS"), names[i])) continue;
        app_case ac;
        if (app_load("apps", names[i], true, 7, &ac, err, sizeof err) != 0) {
            check_report(false, "oneshot/%s: %s", names[i], err);
            continue;
        }
        search_opts o = small_opts(cm);
        o.beam = 4;                          /* bgu has 118 stages: seconds, not minutes */
        o.passes = 2;
        search_stats st;
        double ms = NAN;
        ir_arena *a = ir_arena_new();
        sched_state *s = search_oneshot(a, ac.p, ac.b, &o, 6, &ms, &st, err, sizeof err);
        if (!s) fprintf(stderr, "  %s: %s\n", names[i], err);
        bool ok = s && isfinite(ms) && ms > 0 && st.samples == 6 && st.costed > 0 && st.drawn <= st.enumerated &&
                  st.unfeaturized == 0;
        ok = check_schedule(names[i], &ac, a, s, true) && ok;
        check_report(ok, "oneshot/%s (%.4g ms predicted; %lld enumerated, %lld costed, %.2f s)", names[i], ms,
                     (long long)st.enumerated, (long long)st.costed, st.wall_s);
        ir_arena_free(a);
        app_free(&ac);
    }
    cost_free(cm);
    apps_free_names(names, napps);
}

/* The model's time for the complete state s (NAN on an error). */
static double predict_one(cost_model *cm, app_case *ac, const sched_state *s) {
    char err[1024];
    feat_result fr = { 0 };
    double ms = NAN;
    if (feat_compute(ac->p, ac->b, s, &A100, &fr, err, sizeof err) != 0) return NAN;
    const feat_result *fs = &fr;
    if (cost_predict(cm, 1, &fs, &ms, err, sizeof err) != 0) ms = NAN;
    feat_free(&fr);
    return ms;
}

/* The fixed schedules, baseline and root, join every batch: the batch's
 * best is never predicted slower than either, under both models, even
 * from a search too small to find them (one greedy sample and a beam of
 * 2).  The batch stays within its room and in order of prediction. */
static void test_hand_made(void) {
    static const char *names[] = { "box_blur", "harris", "camera_pipe", "interpolate" };
    char err[4096];
    cost_model *learned = cost_learned_new(&weights, &A100);
    cost_model *models[2] = { learned, &ops_model };
    for (int i = 0; i < 4; i++) {
        app_case ac;
        if (app_load("apps", names[i], true, 7, &ac, err, sizeof err) != 0) {
            check_report(false, "hand_made/%s: %s", names[i], err);
            continue;
        }
        for (int k = 0; k < 2; k++) {
            ir_arena *a = ir_arena_new();
            sched_state *fx[2];
            space_reference(a, ac.p, ac.b, &A100, false, fx);
            double hand[2], least = INFINITY;
            for (int j = 0; j < 2; j++) {
                hand[j] = fx[j] ? predict_one(models[k], &ac, fx[j]) : INFINITY;
                if (hand[j] < least) least = hand[j];
            }
            search_opts o = small_opts(models[k]);
            o.beam = 2;
            o.passes = 1;
            search_sample out[3];
            search_stats st;
            int n = search_batch(a, ac.p, ac.b, &o, 3, out, &st, err, sizeof err);
            bool ok = n >= 1 && n <= 3 && isfinite(least) && out[0].ms <= least * (1 + 1e-9);
            bool sorted = true, from_hand = false;
            for (int j = 0; j < n; j++) {
                if (j && out[j - 1].ms > out[j].ms) sorted = false;
                from_hand |= out[j].sample < 0;
                /* a fixed schedule carries its own prediction */
                if (out[j].sample < 0) ok = ok && fabs(out[j].ms - hand[-1 - out[j].sample]) <= out[j].ms * 1e-9;
            }
            ok = ok && sorted;
            ok = ok && check_schedule(names[i], &ac, a, n >= 1 ? out[0].s : NULL, false);
            check_report(ok, "hand_made/%s/%s: best of the batch %.4g ms, baseline %.4g ms, root %.4g ms%s",
                         names[i], k ? "ops" : "learned", n >= 1 ? out[0].ms : NAN, hand[0], hand[1],
                         from_hand ? " (one is in the batch)" : "");
            if (n > 0) search_samples_free(out, n);
            ir_arena_free(a);
        }
        app_free(&ac);
    }
    cost_free(learned);
}

/* The same seed gives the same schedule; another seed may not, and both
 * are legal. */
static void test_deterministic(void) {
    char err[4096];
    app_case ac;
    CHECK(app_load("apps", "harris", true, 7, &ac, err, sizeof err) == 0);
    cost_model *cm = cost_learned_new(&weights, &A100);
    char *text[3] = { 0 };
    double ms[3];
    for (int k = 0; k < 3; k++) {
        search_opts o = small_opts(cm);
        o.seed = k == 2 ? 99 : 5;
        o.dropout = 0.3;
        ir_arena *a = ir_arena_new();
        sched_state *s = search_oneshot(a, ac.p, ac.b, &o, 4, &ms[k], NULL, err, sizeof err);
        CHECK(check_schedule("harris", &ac, a, s, false));
        if (s) text[k] = sched_to_text(ac.p, s);
        ir_arena_free(a);
    }
    CHECK(text[0] && text[1] && !strcmp(text[0], text[1]) && ms[0] == ms[1]);
    for (int k = 0; k < 3; k++) free(text[k]);
    cost_free(cm);
    app_free(&ac);
}

typedef struct {
    int buckets, bad_draws, sampled, secondary_with_primary, secondary_partial, secondary_buckets;
} bucket_log;

static void on_bucket(void *hook, int size, int drawn, int primary, int secondary_costed) {
    bucket_log *l = hook;
    int want = 1;
    while ((1 << want) < size) want++;
    if (want > size) want = size;
    l->buckets++;
    l->bad_draws += drawn != want;
    l->sampled += drawn < size;
    l->secondary_with_primary += primary > 0 && secondary_costed > 0;
    l->secondary_partial += primary == 0 && secondary_costed != drawn;
    l->secondary_buckets += secondary_costed > 0;
}

/* ceil(log2(B)) representatives (at least 1) from every bucket of B. */
static void test_bucket_draws(void) {
    char err[4096];
    app_case ac;
    CHECK(app_load("apps", "unsharp", true, 7, &ac, err, sizeof err) == 0);
    bucket_log l = { 0 };
    search_opts o = small_opts(&ops_model);
    o.on_bucket = on_bucket;
    o.hook = &l;
    ir_arena *a = ir_arena_new();
    search_stats st;
    sched_state *s = search_oneshot(a, ac.p, ac.b, &o, 2, NULL, &st, err, sizeof err);
    CHECK(check_schedule("unsharp", &ac, a, s, false));
    CHECK(l.buckets > 10 && l.buckets == st.buckets);
    CHECK(l.bad_draws == 0);
    CHECK(l.sampled > 0);                  /* some buckets were sampled, not taken whole */
    CHECK(st.drawn < st.enumerated / 2);
    ir_arena_free(a);
    app_free(&ac);
}

/* Secondary children are costed only in buckets without a primary
 * representative; with every child secondary, every bucket costs its
 * representatives and the search still finishes. */
static void test_secondary(void) {
    char err[4096];
    app_case ac;
    CHECK(app_load("apps", "harris", true, 7, &ac, err, sizeof err) == 0);
    for (int mode = 0; mode < 2; mode++) {
        bucket_log l = { 0 };
        search_opts o = small_opts(&ops_model);
        o.on_bucket = on_bucket;
        o.hook = &l;
        /* the default thresholds: some secondary (a block-level stage on a
         * few of its block's lanes), some not; or everything secondary */
        if (mode == 1) o.lane_max = -1;
        ir_arena *a = ir_arena_new();
        search_stats st;
        sched_state *s = search_oneshot(a, ac.p, ac.b, &o, 2, NULL, &st, err, sizeof err);
        CHECK(check_schedule("harris", &ac, a, s, false));
        CHECK(l.secondary_with_primary == 0 && l.secondary_partial == 0);
        if (mode == 0) {
            CHECK(st.secondary_skipped > 0);
            CHECK(st.secondary_costed < st.drawn);
        } else {
            /* every child with stages of its own is secondary: its
             * buckets (one location or the tilings of one stage) cost
             * them all */
            CHECK(st.secondary_costed > st.drawn / 2);
            CHECK(l.secondary_buckets > l.buckets / 2);
        }
        ir_arena_free(a);
    }
    app_free(&ac);
}

/* Eight Funcs; h1, h2, h3 are expensive (two stages, so never inline, and
 * many operations per point), the others cheap.  ceil(log2(8)) = 3 stay
 * free: exactly h1, h2, h3. */
static const char *freeze_pipe =
    "pipeline fz;\n"
    "input f32 in(128, 128);\n"
    "a(x, y) = in(x, y) + 1;\n"
    "h1(x, y) = sqrt(a(x, y) * a(x, y) + 1) * exp(a(x, y) * 0.001) + sin(a(x, y)) * cos(a(x, y)) + log(a(x, y) + 2);\n"
    "h1(x, y) = h1(x, y) * 0.5 + sqrt(h1(x, y) + 3) + exp(h1(x, y) * 0.0001) * sin(h1(x, y));\n"
    "b(x, y) = h1(x, y) + 2;\n"
    "h2(x, y) = sqrt(b(x, y) * b(x, y) + 1) * exp(b(x, y) * 0.001) + sin(b(x, y)) * cos(b(x, y)) + log(b(x, y) + 2);\n"
    "h2(x, y) = h2(x, y) * 0.5 + sqrt(h2(x, y) + 3) + exp(h2(x, y) * 0.0001) * sin(h2(x, y));\n"
    "c(x, y) = h2(x, y) - 1;\n"
    "d(x, y) = c(x, y) * 3;\n"
    "h3(x, y) = sqrt(d(x, y) * d(x, y) + 1) * exp(d(x, y) * 0.001) + sin(d(x, y)) * cos(d(x, y)) + log(d(x, y) + 2);\n"
    "h3(x, y) = h3(x, y) * 0.5 + sqrt(h3(x, y) + 3) + exp(h3(x, y) * 0.0001) * sin(h3(x, y));\n"
    "out(x, y) = h3(x, y) + 1;\n"
    "output out(128, 128);\n";

static int func_id(const sc_pipeline *p, const char *name) {
    for (int i = 0; i < p->funcs.n; i++)
        if (!strcmp(((const sc_func *)p->funcs.items[i])->name, name)) return i;
    return -1;
}

static void test_freeze(void) {
    char err[4096];
    app_case ac;
    if (load_text("fz", freeze_pipe, &ac) != 0) { CHECK(!"the freezing pipeline loads"); return; }
    const sc_pipeline *p = ac.p;
    search_opts o = small_opts(&ops_model);
    search_ctx *c = search_new(p, ac.b, &o, err, sizeof err);
    CHECK(c != NULL);
    if (!c) { app_free(&ac); return; }
    bool *is_free = calloc((size_t)p->funcs.n, sizeof *is_free);
    CHECK(search_freeze(c, is_free, err, sizeof err) == 0);
    int nfree = 0;
    for (int i = 0; i < p->funcs.n; i++) nfree += is_free[i];
    CHECK(nfree == 3);
    CHECK(is_free[func_id(p, "h1")] && is_free[func_id(p, "h2")] && is_free[func_id(p, "h3")]);
    CHECK(search_ctx_stats(c).frozen == 5);
    /* the full search keeps the frozen decisions (root or inline) */
    ir_arena *a = ir_arena_new();
    double ms;
    sched_state *s = search_run(c, a, 8, 2, 3, &ms, err, sizeof err);
    CHECK(check_schedule("fz", &ac, a, s, true));
    for (int i = 0; s && i < p->funcs.n; i++)
        if (!is_free[i] && s->f[i]) CHECK(s->f[i]->loc == SCHED_ROOT || s->f[i]->loc == SCHED_INLINE);
    /* each Func's own cost: the expensive ones cost the most */
    double *cost = calloc((size_t)p->funcs.n, sizeof *cost);
    CHECK(s && search_func_costs(c, s, cost, err, sizeof err) == 0);
    for (int i = 0; i < p->funcs.n; i++)
        if (!is_free[i]) CHECK(cost[i] < cost[func_id(p, "h1")] && cost[i] < cost[func_id(p, "h3")]);
    free(cost);
    ir_arena_free(a);
    search_free(c);
    free(is_free);
    /* search_pick_free indexes each Func's own cost */
    double known[16] = { 0 };
    bool pick[16];
    CHECK(p->funcs.n <= 16);
    for (int i = 0; i < p->funcs.n; i++) known[i] = i == func_id(p, "a") ? 9 : i == func_id(p, "d") ? 8 : 1;
    search_pick_free(p, known, 2, pick);
    for (int i = 0; i < p->funcs.n; i++) CHECK(pick[i] == (i == func_id(p, "a") || i == func_id(p, "d")));
    app_free(&ac);
}

/* A Func whose six updates run the same loops (and one that does not):
 * with share_tiles the search decides the six with one tile, legal for
 * each, in fewer steps; without it each is a decision of its own.  Both
 * schedules run bit-exactly. */
static const char *like_pipe =
    "pipeline lk;\n"
    "input f32 in(64, 48);\n"
    "m(x, y, i) = in(x, y) * f32(i);\n"
    "m(x, y, 0) = m(x, y, 0) + m(x, y, 1);\n"
    "m(x, y, 1) = m(x, y, 1) * m(x, y, 0);\n"
    "m(x, y, 2) = m(x, y, 2) - m(x, y, 1);\n"
    "m(x, y, 3) = m(x, y, 3) + m(x, y, 2);\n"
    "m(x, y, 0) = m(x, y, 0) * 0.5 + m(x, y, 3);\n"
    "m(x, y, 1) = m(x, y, 1) - m(x, y, 0);\n"
    "rdom r(1, 3);\n"
    "m(x, y, r) = m(x, y, r) + m(x, y, r - 1);\n"
    "out(x, y) = m(x, y, 0) + m(x, y, 1) + m(x, y, 2) + m(x, y, 3);\n"
    "output out(64, 48);\n";

static void test_share_tiles(void) {
    char err[4096];
    app_case ac;
    if (load_text("lk", like_pipe, &ac) != 0) { CHECK(!"the pipeline of like updates loads"); return; }
    int mid = func_id(ac.p, "m");
    int64_t featurized[2] = { 0, 0 };
    for (int share = 0; share < 2; share++) {
        search_opts o = small_opts(&ops_model);
        o.share_tiles = share;
        o.freeze = false;
        search_ctx *c = search_new(ac.p, ac.b, &o, err, sizeof err);
        CHECK(c != NULL);
        if (!c) continue;
        ir_arena *a = ir_arena_new();
        double ms;
        sched_state *s = search_run(c, a, 8, 2, 5, &ms, err, sizeof err);
        CHECK(check_schedule("lk", &ac, a, s, true));
        featurized[share] = search_ctx_stats(c).featurized;
        /* m has updates, so it is not inlined: tiled, the six like ones alike */
        const sched_func *sf = s ? s->f[mid] : NULL;
        CHECK(sf && sf->tile);
        if (share && sf && sf->tile)
            for (int st = 2; st <= 6; st++) CHECK(!memcmp(&sf->tile[st], &sf->tile[1], sizeof sf->tile[1]));
        ir_arena_free(a);
        search_free(c);
    }
    CHECK(featurized[1] > 0 && featurized[1] < featurized[0]);
    app_free(&ac);
}

/* Pipelines the search must not choke on. */
static void test_shapes(void) {
    static const struct { const char *name, *text; bool run; } cases[] = {
        { "two_outputs",
          "input f32 in(64, 48);\n"
          "f(x, y) = in(clamp(x, 0, 63), y) * 2;\n"
          "g(x, y) = f(x - 1, y) + f(x + 1, y);\n"
          "o1(x, y) = g(x, y) + 1;\n"
          "o2(x, y) = g(x, y) * f(x, y);\n"
          "output o1(64, 48);\n"
          "output o2(64, 48);\n", true },
        { "one_element",
          "input f32 in(1000);\n"
          "rdom r(0, 1000);\n"
          "total(i) = 0.0;\n"
          "total(i) += in(r) * 0.5;\n"
          "output total(1);\n", true },
        { "ten_million",
          "input f32 in(10000000);\n"
          "rdom r(0, 10000000);\n"
          "total(i) = 0.0;\n"
          "total(i) += in(r);\n"
          "scaled(x) = in(x) * 2 + total(0);\n"
          "output scaled(10000000);\n", false },
    };
    cost_model *cm = cost_learned_new(&weights, &A100);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        app_case ac;
        char err[4096];
        if (load_text(cases[i].name, cases[i].text, &ac) != 0) {
            check_report(false, "shape/%s loads", cases[i].name);
            continue;
        }
        search_opts o = small_opts(cm);
        ir_arena *a = ir_arena_new();
        sched_state *s = search_oneshot(a, ac.p, ac.b, &o, 4, NULL, NULL, err, sizeof err);
        if (!s) fprintf(stderr, "  %s: %s\n", cases[i].name, err);
        check_report(check_schedule(cases[i].name, &ac, a, s, cases[i].run), "shape/%s", cases[i].name);
        ir_arena_free(a);
        app_free(&ac);
    }
    cost_free(cm);
}

/* Random pipelines: a legal schedule that lowers and matches. */
static void test_random_pipelines(void) {
    cost_model *cm = cost_learned_new(&weights, &A100);
    for (uint64_t seed = 1; seed <= 6; seed++) {
        char name[64];
        snprintf(name, sizeof name, "random_%llu", (unsigned long long)seed);
        char *text = randpipe_generate(seed, 0, NULL);
        app_case ac;
        if (!text || load_text(name, text, &ac) != 0) {
            check_report(false, "random/%s loads", name);
            free(text);
            continue;
        }
        free(text);
        char err[4096];
        search_opts o = small_opts(cm);
        o.freeze_min = 4;                   /* freezing on as well */
        ir_arena *a = ir_arena_new();
        sched_state *s = search_oneshot(a, ac.p, ac.b, &o, 3, NULL, NULL, err, sizeof err);
        if (!s) fprintf(stderr, "  %s: %s\n", name, err);
        check_report(check_schedule(name, &ac, a, s, true), "random/%s", name);
        ir_arena_free(a);
        app_free(&ac);
    }
    cost_free(cm);
}

/* --spread: a batch of a mean of models ranked by exp(mean + S x sd) of
 * its members' log predictions, the same schedules as the batch by the
 * mean; a single model's batch keeps its order. */
static void test_spread(void) {
    char err[4096];
    app_case ac;
    CHECK(app_load("apps", "unsharp", true, 7, &ac, err, sizeof err) == 0);
    const nn_model *two[2] = { &weights, &weights2 };
    cost_model *mean = cost_learned_mean_new(two, 2, &A100), *one = cost_learned_new(&weights, &A100);
    enum { N = 6 };
    search_sample by[3][N];
    int n[3];
    ir_arena *a = ir_arena_new();
    for (int k = 0; k < 3; k++) {
        search_opts o = small_opts(k < 2 ? mean : one);
        o.spread = k == 0 ? 0 : 2;
        n[k] = search_batch(a, ac.p, ac.b, &o, N, by[k], NULL, err, sizeof err);
        CHECK(n[k] > 1);
        for (int i = 1; i < n[k]; i++) CHECK(by[k][i - 1].rank <= by[k][i].rank);
    }
    /* by the mean: rank is the prediction */
    for (int i = 0; i < n[0]; i++) CHECK(by[0][i].rank == by[0][i].ms);
    /* with the spread: the same schedules, each ranked from its members */
    CHECK(n[1] == n[0]);
    int moved = 0;
    for (int i = 0; i < n[1]; i++) {
        int same = 0;
        for (int j = 0; j < n[0]; j++) same += !strcmp(by[1][i].text, by[0][j].text) && by[1][i].ms == by[0][j].ms;
        CHECK(same == 1);
        moved += strcmp(by[1][i].text, by[0][i].text) != 0;
        feat_result fr = { 0 };
        double each[COST_MAX_MEMBERS];
        CHECK(feat_compute(ac.p, ac.b, by[1][i].s, &A100, &fr, err, sizeof err) == 0);
        CHECK(cost_predict_members(mean, &fr, each, err, sizeof err) == 2);
        feat_free(&fr);
        double l0 = log(each[0]), l1 = log(each[1]), m = (l0 + l1) / 2, sd = fabs(l0 - l1) / sqrt(2.0);
        CHECK(fabs(by[1][i].rank - exp(m + 2 * sd)) <= 1e-9 * by[1][i].rank);
        CHECK(fabs(by[1][i].ms - (each[0] + each[1]) / 2) <= 1e-9 * by[1][i].ms);
    }
    check_report(1, "spread: %d of %d schedules moved", moved, n[1]);
    /* one model: the spread changes nothing */
    search_opts o = small_opts(one);
    search_sample plain[N];
    int np = search_batch(a, ac.p, ac.b, &o, N, plain, NULL, err, sizeof err);
    CHECK(np == n[2]);
    for (int i = 0; i < np && i < n[2]; i++) CHECK(!strcmp(plain[i].text, by[2][i].text));
    search_samples_free(plain, np);
    for (int k = 0; k < 3; k++) search_samples_free(by[k], n[k]);
    ir_arena_free(a);
    cost_free(mean);
    cost_free(one);
    app_free(&ac);
}

static int train_weights(void) {
    char err[2048];
    train_data d;
    train_data_init(&d);
    train_load_opts lo = { 0 };
    if (train_load(&d, NULL, "tests/data/train_tiny.txt", &lo, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    train_opts to;
    train_opts_default(&to);
    to.epochs = 20;
    to.seed = 1;
    int rc = train_run(&d, &weights, &to, NULL, NULL, err, sizeof err);
    to.seed = 2;
    if (rc == 0) rc = train_run(&d, &weights2, &to, NULL, NULL, err, sizeof err);
    if (rc != 0) fprintf(stderr, "%s\n", err);
    train_data_free(&d);
    return rc;
}

int main(void) {
    char err[1024];
    A100 = fixture_target("a100");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }
    cdev = rt_c_ops.open(err, sizeof err);
    check_report(cdev != NULL, "open the C back end%s%s", cdev ? "" : ": ", cdev ? "" : err);
    check_report(train_weights() == 0, "weights trained on tests/data/train_tiny.txt");
    if (!cdev) CHECK_EXIT();
    /* CASES=a,b runs only those (bucket_draws, secondary, freeze, share_tiles, hand_made,
     * deterministic, shapes, random_pipelines, spread, every_app); APPS=a,b only
     * those apps in every_app */
    const char *only = getenv("CASES");
#define CASE(name) do { if (apps_wanted(only, #name)) RUN(test_##name); } while (0)
    CASE(bucket_draws);
    CASE(secondary);
    CASE(freeze);
    CASE(share_tiles);
    CASE(hand_made);
    CASE(deterministic);
    CASE(shapes);
    CASE(random_pipelines);
    CASE(spread);
    if (apps_wanted(only, "every_app")) test_every_app();
    rt_c_ops.close(cdev);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmpdir);
    CHECK_EXIT();
}
