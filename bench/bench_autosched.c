/*
 * bench_autosched.c - how good the autoscheduler's schedules are (issue 10
 * §4): for every app, on one device, in one run: the baseline, the best of
 * N random schedules, one-shot, top-K, and for a subset autotuning, each
 * checked against the reference evaluator and timed; the one-shot search's
 * time; printed as a table, and written as TSV for bench/plot_autosched.sh.
 *
 *   build/bench_autosched [--apps a,b] [--small] [--device opencl|c|cuda]
 *        [--random 80] [--k 5] [--samples 80] [--weights W] [--weights-dir D]
 *        [--autotune a,b] [--iterations 5] [--batch 80] [--timeout-ms 10000]
 *        [--jobs J] [--tsv DIR] [--margin R] [--spread S] [--freeze-min N]
 *        [--unroll-whole | --no-unroll-whole]
 *
 * Every schedule is measured as src/driver/measure.h describes, in turn
 * with the app's baseline in the same process: a mode's speed-up is the
 * baseline's time over its own, both timed within the same second, so the
 * load of a shared machine cancels; the ms shown are the mode's own.
 * Top-K measures the K best predicted of the one-shot batch, one-shot's
 * schedule among them (its measurement is shared), so top-K is never
 * slower than one-shot in this table by construction of the mode.
 *
 * A mode whose schedule is the baseline itself gets the baseline's time
 * and a speed-up of exactly 1 (its in-turn ratio to itself would be
 * noise).  A baseline that cannot be timed in turn (past the first run's
 * limit: timed once alone with a longer one; or unable to run on the
 * device) leaves every mode timed alone (with limits of twice the
 * baseline's time), its speed-up against that one time (or none), and the
 * row says so.
 *
 * --margin R adds a second summary line: one-shot as `schedule --strategy
 * oneshot --margin R` would have picked, from the same measurements (the
 * baseline, speed-up 1, where the pick's predicted gain over the
 * baseline's prediction is at most R; the pick's own otherwise).
 *
 * --spread S ranks the batch of a mean of models by exp(mean + S x the
 * standard deviation) of the members' log predictions (search_opts.spread;
 * `schedule --spread S`).
 *
 * --freeze-min N runs the freezing pre-pass for pipelines of at least N
 * Funcs (search_opts.freeze_min; `schedule --freeze-min N`).
 *
 * --unroll-whole: every mode's space also offers a root loop of extent 3
 * to 7 unrolled whole (space_opts.unroll_whole; `schedule --unroll-whole`);
 * the default on a CPU target (space_unroll_whole_for), --no-unroll-whole
 * leaves it out there.
 *
 * Under each app a line gives the model's predictions for the baseline
 * and for one-shot's pick beside their measured times (the two numbers
 * one-shot's speed-up rests on); --tsv DIR writes modes.tsv, autotune.tsv
 * and predictions.tsv (with one-shot's speed-up and, for a mean of models,
 * each member's predictions of the two).
 *
 * Hold-one-app-out: with --weights-dir D the weights for app X are
 * D/X.weights (trained without X: `make holdout-weights`); an app without
 * one uses --weights (default weights/pocl.weights, or weights/cuda.weights
 * for a CUDA GPU target where it exists) and is marked '*'.
 * --weights and --weights-dir take comma-separated lists: one-shot and
 * top-K then search with the mean of the models (cost_learned_mean_new),
 * autotuning fine-tunes the first.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "apps.h"
#include "autotune.h"
#include "beam.h"
#include "driver.h"
#include "floor.h"
#include "measure.h"
#include "space.h"
#include "strategy.h"

/* The floor column covers the apps whose intensity is below this many
 * times the balance: the memory-bound ones and those near the ridge
 * (harris and interpolate on PoCL). */
#define FLOOR_NEAR 2.5

/* A baseline past the in-turn limits gets this many times the run limit,
 * once, alone (lens_blur's and nl_means' at paper size on PoCL). */
enum { BASELINE_ALONE_FACTOR = 12 };

/* The held-out weights of app under each folder of the comma-separated
 * list dirs (D/APP.weights), as a comma-separated list in buf; false
 * when a folder lacks them. */
static bool held_out_weights(const char *dirs, const char *app, char *buf, size_t len) {
    buf[0] = 0;
    const char *d = dirs;
    while (*d) {
        size_t n = strcspn(d, ","), u = strlen(buf);
        snprintf(buf + u, len - u, "%s%.*s/%s.weights", u ? "," : "", (int)n, d, app);
        if (access(buf + u + (u ? 1 : 0), R_OK) != 0) return false;
        d += n + (d[n] == ',');
    }
    return buf[0] != 0;
}

/* The first path of a comma-separated list (NULL stays NULL). */
static const char *wfirst(const char *list, char *buf, size_t len) {
    if (!list) return NULL;
    snprintf(buf, len, "%.*s", (int)strcspn(list, ","), list);
    return buf;
}

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct {
    double ms;                    /* the mode's time (INFINITY: none ran) */
    double speedup;               /* the baseline's time timed with it / ms (0: none, or no baseline) */
} result;

/* A measurement's result, or none (why says why). */
static result result_of(const measure_outcome *o, char *why, size_t whylen) {
    if (o->kind != MEASURE_OK) {
        snprintf(why, whylen, "%s", o->msg);
        return (result){ INFINITY, 0 };
    }
    return (result){ o->ms, o->ref_ms > 0 ? o->ref_ms / o->ms : 1 };
}

/* Measures s with the baseline rs in turn; with rs NULL (a baseline that
 * cannot be timed in turn: too slow, timed once alone at base_ms, or failed,
 * base_ms INFINITY), alone, the speed-up taken against base_ms (none when
 * the baseline has no time). */
static result measure(const measure_device *d, app_case *ac, const sched_state *s, const sched_state *rs,
                      double base_ms, measure_limits lim, char *why, size_t whylen) {
    measure_outcome o;
    measure_schedule(d, ac->p, ac->b, s, rs, ac->in, ac->ref, lim, &o);
    result r = result_of(&o, why, whylen);
    if (!rs && r.ms < INFINITY) r.speedup = base_ms < INFINITY ? base_ms / r.ms : 0;
    return r;
}

static void better(result *best, result r) {
    if (r.speedup > best->speedup || (r.speedup == best->speedup && r.ms < best->ms)) *best = r;
}

static void cell(char *buf, size_t n, result r) {
    if (r.ms == INFINITY) snprintf(buf, n, "-");
    else if (r.speedup <= 0) snprintf(buf, n, "%.4g ms      -", r.ms);
    else snprintf(buf, n, "%.4g ms %5.2fx", r.ms, r.speedup);
}

static void tsv_row(FILE *f, const char *app, const char *mode, result r) {
    if (!f || r.ms == INFINITY) return;
    if (r.speedup > 0) fprintf(f, "%s\t%s\t%.6g\t%.4f\n", app, mode, r.ms, r.speedup);
    else fprintf(f, "%s\t%s\t%.6g\t-\n", app, mode, r.ms);   /* no baseline to compare with */
}

/* Each member's prediction of s, comma-separated, in buf ("-" when they
 * cannot be had): how far a mean of models agrees with itself. */
static const char *predict_members(cost_model *cm, const sc_pipeline *p, const bounds_result *b,
                                   const sched_state *s, const target *t, char *buf, size_t len) {
    char err[512];
    double each[COST_MAX_MEMBERS];
    feat_result fr = { 0 };
    int k = s && feat_compute(p, b, s, t, &fr, err, sizeof err) == 0
                ? cost_predict_members(cm, &fr, each, err, sizeof err) : -1;
    feat_free(&fr);
    snprintf(buf, len, "-");
    for (int i = 0, n = 0; i < k; i++) n += snprintf(buf + n, len - (size_t)n, "%s%.6g", i ? "," : "", each[i]);
    return buf;
}

/* The model's prediction for one schedule (NAN when it cannot be had). */
static double predict_one(cost_model *cm, const sc_pipeline *p, const bounds_result *b, const sched_state *s,
                          const target *t) {
    char err[512];
    double ms;
    return s && cost_predict_schedule(cm, p, b, s, t, &ms, err, sizeof err) == 0 ? ms : NAN;
}

int main(int argc, char **argv) {
    const char *apps = NULL, *devname = "opencl", *weights = NULL, *wdir = NULL, *tuned = NULL, *tsv = NULL;
    FILE *preds = NULL;
    int nrandom = 80, k = 5, samples = 80, iterations = 5, batch = 80, timeout_ms = 10000;
    int jobs = (int)sysconf(_SC_NPROCESSORS_ONLN), freeze_min = SEARCH_FREEZE_MIN;
    double margin = 0, spread = 0;
    bool small = false;
    int unroll_whole = SPACE_UNROLL_WHOLE_BY_TARGET;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--small")) { small = true; continue; }
        if (!strcmp(a, "--unroll-whole")) { unroll_whole = 1; continue; }
        if (!strcmp(a, "--no-unroll-whole")) { unroll_whole = 0; continue; }
        if (!v) { fprintf(stderr, "bench_autosched: %s needs a value (see the comment at the top of the file)\n", a); return 2; }
        i++;
        if (!strcmp(a, "--apps")) apps = v;
        else if (!strcmp(a, "--device")) devname = v;
        else if (!strcmp(a, "--weights")) weights = v;
        else if (!strcmp(a, "--weights-dir")) wdir = v;
        else if (!strcmp(a, "--autotune")) tuned = v;
        else if (!strcmp(a, "--tsv")) tsv = v;
        else if (!strcmp(a, "--random")) nrandom = atoi(v);
        else if (!strcmp(a, "--k")) k = atoi(v);
        else if (!strcmp(a, "--samples")) samples = atoi(v);
        else if (!strcmp(a, "--iterations")) iterations = atoi(v);
        else if (!strcmp(a, "--batch")) batch = atoi(v);
        else if (!strcmp(a, "--timeout-ms")) timeout_ms = atoi(v);
        else if (!strcmp(a, "--jobs")) jobs = atoi(v);
        else if (!strcmp(a, "--margin")) margin = atof(v);
        else if (!strcmp(a, "--spread")) spread = atof(v);
        else if (!strcmp(a, "--freeze-min")) freeze_min = atoi(v);
        else { fprintf(stderr, "bench_autosched: unknown option %s\n", a); return 2; }
    }
    if (nrandom < 0 || k < 1 || samples < 1 || iterations < 1 || batch < 1 || timeout_ms < 1 || jobs < 1 || freeze_min < 1) {
        fprintf(stderr, "bench_autosched: counts must be positive\n");
        return 2;
    }
    if (margin != 0 && !(margin >= 1)) {
        fprintf(stderr, "bench_autosched: --margin: expected a number of at least 1\n");
        return 2;
    }
    if (!(spread >= 0 && spread <= 10)) {
        fprintf(stderr, "bench_autosched: --spread: expected a number from 0 to 10\n");
        return 2;
    }
    measure_device dev;
    if (!measure_device_by_name(devname, CG_MATH_FAST, &dev)) {
        fprintf(stderr, "bench_autosched: unknown device '%s'\n", devname);
        return 2;
    }
    char err[4096], desc[1024], key[512];
    target t;
    if (measure_find_target(devname, &t, desc, sizeof desc, key, sizeof key, err, sizeof err) != 0) {
        fprintf(stderr, "bench_autosched: %s\n", err);
        return 1;
    }
    dev.cpu = t.cpu;
    FILE *modes = NULL, *curve = NULL;
    if (tsv) {
        char path[4200];
        mkdir(tsv, 0755);
        snprintf(path, sizeof path, "%s/modes.tsv", tsv);
        modes = fopen(path, "w");
        snprintf(path, sizeof path, "%s/autotune.tsv", tsv);
        curve = fopen(path, "w");
        snprintf(path, sizeof path, "%s/predictions.tsv", tsv);
        preds = fopen(path, "w");
        if (!modes || !curve || !preds) { fprintf(stderr, "bench_autosched: cannot write %s/*.tsv\n", tsv); return 1; }
        fprintf(modes, "app\tmode\tms\tspeedup\n");
        fprintf(curve, "app\tsamples\tbest_ms\n");
        fprintf(preds, "app\tbaseline_predicted_ms\tbaseline_ms\toneshot_predicted_ms\toneshot_ms\toneshot_speedup\t"
                       "baseline_members_ms\toneshot_members_ms\n");
    }
    /* the copy kernel's bandwidth: the memory-bound apps' floors */
    measure_outcome co;
    char which[128];
    double bw = floor_copy_bandwidth(&dev, &t, (int64_t)64 << 20, (measure_limits){ 60000, 60000 }, &co, which, sizeof which);
    /* PoCL's measured balance; a GPU's nominal one (its target's) */
    double balance = strcmp(devname, "opencl") ? t.peak_gflops / t.mem_bandwidth_gbs : FLOOR_BALANCE_POCL;
    printf("copy kernel: %.2f GB/s (64 MiB each way; the fastest copy schedule: %s); memory-bound: intensity below "
           "%.1f ops/byte (docs/benchmarks.md); floors shown below %.1f\n", bw, which, balance, FLOOR_NEAR * balance);
    char **names;
    int napps = apps_list("apps", &names, err, sizeof err);
    if (napps < 0) { fprintf(stderr, "bench_autosched: %s\n", err); return 1; }
    printf("device: %s (%s), fast math, %s sizes; random %d, one-shot %d samples, top-%d%s\n", key, t.name,
           small ? "small" : "paper", nrandom, samples, k, tuned ? "" : "; no autotuning");
    printf("%-16s %6s | %-18s | %-18s | %-18s | %-18s | %-18s | %8s | %s\n", "app", "stages", "baseline",
           "best random", "one-shot", "top-K", "autotune", "search s", "floor (memory-bound and near)");
    int faster = 0, counted = 0, top_ok = 0, mfaster = 0, unheld = 0;
    double log_sum = 0, mlog_sum = 0;
    for (int ai = 0; ai < napps; ai++) {
        if (!apps_wanted(apps, names[ai])) continue;
        app_case ac;
        if (app_load("apps", names[ai], small, 1, &ac, err, sizeof err) != 0) {
            printf("%-16s load failed: %s\n", names[ai], err);
            continue;
        }
        ir_arena *a = ir_arena_new();
        char why[1024] = "", msg[512];
        sched_state *base = space_reference(a, ac.p, ac.b, &t, false, NULL);
        /* an app whose baseline is wrong with fast math runs exact code
         * (measure_exact_retry; collect.c does the same) */
        measure_device d = dev;
        bool exact = false, alone = false;
        result rb = { INFINITY, 0 };
        if (base) {
            measure_outcome o, e;
            measure_limits lim = measure_limits_for(timeout_ms);
            measure_schedule(&d, ac.p, ac.b, base, NULL, ac.in, ac.ref, lim, &o);
            rb = result_of(&o, why, sizeof why);
            if ((exact = measure_exact_retry(&d, ac.p, ac.b, base, NULL, ac.in, ac.ref, lim, &o, &e))) {
                d.math = CG_MATH_EXACT;
                rb = result_of(&e, why, sizeof why);
            }
            if (!exact && o.kind == MEASURE_TIMEOUT) {
                /* past the limit: timed once alone with a limit long enough
                 * to give the modes a time to beat; they run alone then */
                int slow_ms = BASELINE_ALONE_FACTOR * timeout_ms;
                measure_schedule(&d, ac.p, ac.b, base, NULL, ac.in, ac.ref, (measure_limits){ slow_ms, slow_ms }, &o);
                rb = result_of(&o, why, sizeof why);
                alone = rb.speedup > 0;
            }
        }
        /* a baseline that cannot run here (PoCL's largest buffer, say):
         * the modes are timed alone, with no speed-up */
        char base_why[1024];
        snprintf(base_why, sizeof base_why, "%s", why);
        if (base && rb.ms == INFINITY) alone = true;
        const sched_state *turn = alone ? NULL : base;
        /* timed alone against a slow baseline, a mode may take twice its
         * time: a limit below the baseline's would hide a speed-up */
        measure_limits ml = measure_limits_for(timeout_ms);
        if (alone && rb.ms < INFINITY) {
            int twice = (int)fmin(2 * rb.ms, 1e9);
            if (ml.first_ms < twice) ml.first_ms = twice;
            if (ml.run_ms < twice) ml.run_ms = twice;
        }
        /* random schedules */
        result rr = { INFINITY, 0 };
        space_opts so = { &t, true, space_unroll_whole_for(unroll_whole, &t) };
        sched_state **rs = calloc((size_t)nrandom + 1, sizeof *rs);
        int nr = 0;
        for (int s = 1; s <= nrandom; s++)
            if ((rs[nr] = space_random(a, ac.p, ac.b, &so, (uint64_t)s, msg, sizeof msg))) nr++;
        measure_precompile(&d, ac.p, ac.b, (const sched_state *const *)rs, nr, jobs);
        for (int i = 0; i < nr; i++) better(&rr, measure(&d, &ac, rs[i], turn, rb.ms, ml, why, sizeof why));
        free(rs);
        /* one-shot and top-K from one batch */
        char wpath[4200], used[4300];
        bool held = false;
        const char *w = weights;
        if (wdir && held_out_weights(wdir, names[ai], wpath, sizeof wpath)) {
            w = wpath;
            held = true;
        }
        nn_model *ms[SPACE_MAX_WEIGHTS];
        int nm = space_load_weights_list(w, "bench_autosched", &t, ms, used, sizeof used, err, sizeof err);
        nn_model *m = nm > 0 ? ms[0] : NULL;
        result ro = { INFINITY, 0 }, rk = { INFINITY, 0 };
        bool picked_base = false;
        double search_s = NAN, pred_base = NAN, pred_one = NAN;
        char mem_base[COST_MAX_MEMBERS * 16 + 8] = "-", mem_one[COST_MAX_MEMBERS * 16 + 8] = "-";
        if (m) {
            cost_model *cm = cost_learned_mean_new((const nn_model *const *)ms, nm, &t);
            search_opts o;
            search_opts_default(&o, &t, cm);
            o.spread = spread;
            o.freeze_min = freeze_min;
            o.unroll_whole = space_unroll_whole_for(unroll_whole, &t);
            search_sample *bt = malloc(sizeof *bt * (size_t)samples);
            double c0 = cpu_s();
            int n = search_batch(a, ac.p, ac.b, &o, samples, bt, NULL, err, sizeof err);
            search_s = cpu_s() - c0;
            int top = n < k ? n : k;
            if (n > 0) pred_one = bt[0].ms;
            pred_base = predict_one(cm, ac.p, ac.b, base, &t);
            predict_members(cm, ac.p, ac.b, base, &t, mem_base, sizeof mem_base);
            if (n > 0) predict_members(cm, ac.p, ac.b, bt[0].s, &t, mem_one, sizeof mem_one);
            const sched_state **ts = malloc(sizeof *ts * (size_t)(top > 0 ? top : 1));
            for (int i = 0; i < top; i++) ts[i] = bt[i].s;
            measure_precompile(&d, ac.p, ac.b, ts, top, jobs);
            char *base_text = base ? sched_to_text(ac.p, base) : NULL;
            for (int i = 0; i < top; i++) {
                /* the baseline itself: its own time, not timed against
                 * itself (that ratio is noise) */
                bool is_base = base_text && !strcmp(bt[i].text, base_text) && rb.ms < INFINITY;
                result r = is_base ? (result){ rb.ms, 1 }
                                   : measure(&d, &ac, bt[i].s, turn, rb.ms, ml, why, sizeof why);
                if (i == 0) {
                    ro = r;
                    picked_base = is_base;
                }
                better(&rk, r);
            }
            free(base_text);
            if (n > 0) search_samples_free(bt, n);
            free(ts);
            free(bt);
            cost_free(cm);
        } else {
            snprintf(why, sizeof why, "%.1000s", err);
        }
        /* autotuning: a fresh database, one iteration at a time (a rerun
         * continues), the best after each */
        result ra = { INFINITY, 0 };
        if (tuned && apps_wanted(tuned, names[ai]) && m) {
            char db[256], wo[256], wone[4200];
            snprintf(db, sizeof db, "/tmp/bench_autosched_%d_%s.db", (int)getpid(), names[ai]);
            snprintf(wo, sizeof wo, "/tmp/bench_autosched_%d_%s.weights", (int)getpid(), names[ai]);
            char path[512];
            snprintf(path, sizeof path, "apps/%s.pipe", names[ai]);
            char *text = driver_read_text(path, err, sizeof err);
            store *st = text ? store_open(db, STORE_WRITE, err, sizeof err) : NULL;
            for (int it = 1; st && it <= iterations; it++) {
                autotune_opts ao;
                autotune_opts_default(&ao);
                ao.measure.device = devname;
                ao.measure.math = d.math;
                ao.measure.jobs = jobs;
                ao.measure.timeout_ms = timeout_ms;
                ao.measure.log = NULL;
                ao.measure.unroll_whole = unroll_whole;
                ao.iterations = it;
                ao.batch = batch;
                ao.weights = wfirst(w, wone, sizeof wone);      /* fine-tuning starts from one model */
                ao.weights_out = wo;
                ao.small = small;
                autotune_result r;
                if (autotune_run(st, path, text, "app", &ao, &r, err, sizeof err) != 0) {
                    snprintf(why, sizeof why, "autotune: %.1000s", err);
                    free(r.best_text);
                    break;
                }
                if (r.best_ratio > 0) ra = (result){ r.best_ms, !alone ? 1 / r.best_ratio : rb.ms < INFINITY ? rb.ms / r.best_ms : 0 };
                if (curve && r.best_text) fprintf(curve, "%s\t%lld\t%.6g\n", names[ai], (long long)r.samples, r.best_ms);
                free(r.best_text);
            }
            if (st) store_close(st);
            free(text);
            remove(db);
            remove(wo);
        }
        for (int k = 0; k < nm; k++) free(ms[k]);
        char cb[40], cr[40], co[40], ck[40], ca[40];
        cell(cb, sizeof cb, rb);
        cell(cr, sizeof cr, rr);
        cell(co, sizeof co, ro);
        cell(ck, sizeof ck, rk);
        cell(ca, sizeof ca, ra);
        char fl[80] = "";
        if (floor_intensity(ac.p, ac.b) < FLOOR_NEAR * balance && bw > 0) {
            double fms = floor_time_ms(ac.p, ac.b, bw);
            result best = ra.ms < rk.ms ? ra : rk;
            if (best.ms < INFINITY) snprintf(fl, sizeof fl, "%.4g ms; best %.2fx it", fms, best.ms / fms);
            else snprintf(fl, sizeof fl, "%.4g ms", fms);
        }
        if (exact) printf("    (%s: fast math changes the result beyond its tolerance; exact code timed)\n", names[ai]);
        if (alone && rb.ms < INFINITY)
            printf("    (%s: the baseline ran past the first run's limit and took %.4g s alone; every mode timed "
                   "alone, its speed-up against that time)\n", names[ai], rb.ms / 1000);
        else if (alone)
            printf("    (%s: the baseline does not run here: %s; every mode timed alone, no speed-up)\n", names[ai],
                   base_why);
        unheld += wdir && !held;
        printf("%-15s%s %6d | %-18s | %-18s | %-18s | %-18s | %-18s | %8.2f | %s\n", names[ai], held || !wdir ? " " : "*",
               ac.stages, cb, cr, co, ck, ca, search_s, fl);
        if (ro.ms == INFINITY) printf("    (%s)\n", why);
        if (picked_base) printf("    (%s: one-shot returned the baseline: speed-up 1)\n", names[ai]);
        /* the model against the clock on the two schedules that decide
         * one-shot's speed-up: a loss is the baseline over-predicted or
         * the pick under-predicted (or both) */
        if (pred_one == pred_one && ro.ms < INFINITY)
            printf("    (model: baseline %.4g ms predicted, %.4g measured; one-shot %.4g predicted, %.4g measured)\n",
                   pred_base, rb.ms, pred_one, ro.ms);
        if (preds && pred_one == pred_one)
            fprintf(preds, "%s\t%.6g\t%.6g\t%.6g\t%.6g\t%.4f\t%s\t%s\n", names[ai], pred_base, rb.ms, pred_one, ro.ms,
                    ro.speedup, mem_base, mem_one);
        fflush(stdout);
        tsv_row(modes, names[ai], "baseline", rb);
        tsv_row(modes, names[ai], "random", rr);
        tsv_row(modes, names[ai], "oneshot", ro);
        char topk[16];
        snprintf(topk, sizeof topk, "top%d", k);
        tsv_row(modes, names[ai], topk, rk);
        tsv_row(modes, names[ai], "autotune", ra);
        if (ro.speedup > 0) {
            counted++;
            faster += ro.speedup > 1;
            log_sum += log(ro.speedup);
            top_ok += rk.speedup >= ro.speedup;
            /* --margin: the baseline where the pick's predicted gain is
             * at most the margin (as strategy.c keeps it) */
            double ms_ = margin > 1 && pred_base <= margin * pred_one ? 1.0 : ro.speedup;
            mfaster += ms_ > 1;
            mlog_sum += log(ms_);
        }
        ir_arena_free(a);
        app_free(&ac);
    }
    if (counted)
        printf("one-shot faster than the baseline on %d of %d apps (goal 15 of 18), geomean %.3gx (goal 2x); "
               "top-%d at least one-shot on %d of %d\n", faster, counted, exp(log_sum / counted), k, top_ok, counted);
    if (counted && margin > 1)
        printf("with --margin %g (the baseline kept where the pick is predicted at most %gx faster): one-shot faster "
               "on %d of %d apps, geomean %.3gx\n", margin, margin, mfaster, counted, exp(mlog_sum / counted));
    if (unheld) printf("'*': no held-out weights in %s; the shipped weights were used (trained with this app)\n", wdir);
    if (modes) fclose(modes);
    if (preds) fclose(preds);
    if (curve) fclose(curve);
    apps_free_names(names, napps);
    return 0;
}
