/*
 * bench_costmodel.c - the learned cost model: how fast it evaluates
 * stages, and how well it ranks schedules of apps it has not seen.
 *
 *   build/bench_costmodel [--weights W] [--apps a,b] [--states N] [--min-s S]
 *   build/bench_costmodel --db F | --data F.txt.xz [--epochs N] [--seed N] [--apps a,b]
 *                         [--loss throughput|rank] [--min-generation N] [--weight-decay D]
 *
 * Speed (always): N random complete schedules (default 64) of each app
 * (default: camera_pipe, harris, local_laplacian, unsharp, bilateral_grid
 * at their paper sizes, a100), featurized before any timing; then the
 * cost model (costmodel.h) predicts all of them in one batched call,
 * repeated until --min-s seconds (0.5) have passed, on one core.  Printed
 * as stage evaluations per second, beside the training code's forward
 * pass (no per-stage cache) and, for the schedule layer alone, the same
 * matrix product through a BLAS's cblas_dgemm when one can be opened at
 * run time (libblas.so.3).
 *
 * Hold-one-app-out (with samples): for each app with samples, the network
 * is trained on every other pipeline (random pipelines and the other
 * apps) and ranks the app's samples: pairwise accuracy, Spearman's rho,
 * and the measured time of the sample it ranks first over the fastest
 * sample's; the same for two simple predictors: total bytes moved (global
 * memory sectors loaded and stored x 32) and a least-squares fit of fixed
 * coefficients on the Appendix B terms; and, with --db, a check of the
 * measurements rather than a predictor: each sample ranked by the median
 * time of the 3 samples of its pipeline measured before it and the 3
 * after (train_neighbour_predict).  It sees no schedule, so where it beats
 * chance the times carry the machine's load while they were measured.
 * --min-generation N trains and ranks only samples of code of generation N
 * or newer (train --min-generation).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base.h"
#include "apps.h"
#include "codegen.h"
#include "costmodel.h"
#include "space.h"
#include "train_load.h"

static const char *DEFAULT_APPS = "camera_pipe,harris,local_laplacian,unsharp,bilateral_grid";

/* ---- speed ---- */

typedef void (*dgemm_fn)(int order, int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
                         const double *b, int ldb, double beta, double *c, int ldc);

static int bench_speed(const nn_model *w, const char *apps, int nstates, double min_s) {
    target t;
    char err[1024];
    if (target_by_name("a100", NULL, &t, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    char **names;
    int n = apps_list("apps", &names, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int cap = 64, ns = 0;
    feat_result *states = calloc((size_t)cap, sizeof *states);
    long rows = 0;
    for (int i = 0; i < n; i++) {
        if (!apps_wanted(apps, names[i])) continue;
        app_case c;
        if (app_load("apps", names[i], false, 1, &c, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            continue;
        }
        ir_arena *a = ir_arena_new();
        space_opts so = { &t, true, false };
        for (int s = 1; s <= nstates; s++) {
            sched_state *st = space_random(a, c.p, c.b, &so, (uint64_t)s, err, sizeof err);
            if (ns == cap) states = realloc(states, sizeof *states * (size_t)(cap *= 2));
            if (st && feat_compute(c.p, c.b, st, &t, &states[ns], err, sizeof err) == 0) rows += states[ns++].n;
        }
        ir_arena_free(a);
        app_free(&c);
    }
    apps_free_names(names, n);
    if (!ns) {
        fprintf(stderr, "no states featurized\n");
        return 1;
    }
    const feat_result **fr = calloc((size_t)ns, sizeof *fr);
    for (int i = 0; i < ns; i++) fr[i] = &states[i];
    double *ms = calloc((size_t)ns, sizeof(double));
    printf("%d states, %ld stage rows (a100)\n", ns, rows);

    /* the plug-in, one batched call over every state */
    cost_model *cm = cost_learned_new(w, &t);
    int reps = 0;
    double t0 = base_now_s(), el;
    do {
        cost_predict(cm, ns, fr, ms, err, sizeof err);
        reps++;
    } while ((el = base_now_s() - t0) < min_s);
    cost_free(cm);
    double rate = (double)rows * reps / el;
    printf("cost model (batched, per-stage cache): %.0f stage evaluations/s, %.0f states/s\n", rate,
           (double)ns * reps / el);

    /* the training code's forward pass: every row through the whole network */
    double *sched = calloc((size_t)rows * NN_SCHED_IN, sizeof(double)), *terms = calloc((size_t)rows * NN_COEF, sizeof(double));
    const double **algo = calloc((size_t)rows, sizeof *algo);
    long at = 0;
    for (int i = 0; i < ns; i++)
        for (int r = 0; r < states[i].n; r++, at++) {
            algo[at] = states[i].rows[r].v;
            nn_sched_inputs(states[i].rows[r].v, sched + at * NN_SCHED_IN);
            cost_terms(states[i].rows[r].v, &t, terms + at * NN_COEF);
        }
    nn_rows nr = { (int)rows, algo, sched, terms };
    double *cost = calloc((size_t)rows, sizeof(double));
    nn_tape tape;
    nn_tape_init(&tape);
    reps = 0;
    t0 = base_now_s();
    do {
        nn_forward(w, &nr, &tape, cost);
        reps++;
    } while ((el = base_now_s() - t0) < min_s);
    printf("network forward pass (inputs prepared, no cache): %.0f stage evaluations/s\n", (double)rows * reps / el);

    /* the schedule layer (rows x NN_SCHED_IN times NN_SCHED_IN x NN_H2):
     * the loop nn.c runs against a BLAS */
    double *c = calloc((size_t)rows * NN_H2, sizeof(double));
    reps = 0;
    t0 = base_now_s();
    do {
        for (long r = 0; r < rows; r++) {
            double *cr = c + r * NN_H2;
            const double *s = sched + r * NN_SCHED_IN;
            for (int j = 0; j < NN_H2; j++) cr[j] = 0;
            for (int q = 0; q < NN_SCHED_IN; q++) {
                if (s[q] == 0) continue;
                const double *wq = w->w + NN_OFF_W2 + q * NN_H2;
                for (int j = 0; j < NN_H2; j++) cr[j] += wq[j] * s[q];
            }
        }
        reps++;
    } while ((el = base_now_s() - t0) < min_s);
    printf("schedule layer, loops of nn.c: %.0f rows/s\n", (double)rows * reps / el);
    void *lib = dlopen("libblas.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    dgemm_fn gemm = lib ? (dgemm_fn)(uintptr_t)dlsym(lib, "cblas_dgemm") : NULL;
    if (gemm) {
        reps = 0;
        t0 = base_now_s();
        do {
            /* row-major (101), no transposes (111) */
            gemm(101, 111, 111, (int)rows, NN_H2, NN_SCHED_IN, 1.0, sched, NN_SCHED_IN, w->w + NN_OFF_W2, NN_H2, 0.0,
                 c, NN_H2);
            reps++;
        } while ((el = base_now_s() - t0) < min_s);
        printf("schedule layer, cblas_dgemm (%s): %.0f rows/s\n", dlopen("libopenblas.so.0", RTLD_NOLOAD) ? "OpenBLAS" : "libblas.so.3",
               (double)rows * reps / el);
    } else {
        printf("schedule layer, cblas_dgemm: no BLAS could be opened\n");
    }
    if (lib) dlclose(lib);
    nn_tape_free(&tape);
    free(c);
    free(cost);
    free(sched);
    free(terms);
    free(algo);
    free(ms);
    free(fr);
    for (int i = 0; i < ns; i++) feat_free(&states[i]);
    free(states);
    return 0;
}

/* ---- hold-one-app-out ---- */

/* Total bytes moved by global memory: sectors loaded and stored x 32. */
static void bytes_predict(const train_data *d, double *pred) {
    int nb = FEAT_AT(FEAT_num_blocks) - NN_ALGO_IN, gl = FEAT_AT(FEAT_num_global_mem_loads_per_block) - NN_ALGO_IN,
        gs = FEAT_AT(FEAT_num_global_mem_stores_per_block) - NN_ALGO_IN;
    for (int i = 0; i < d->nsamples; i++) {
        const train_sample *s = &d->samples[i];
        double b = 0;
        for (int r = s->row0; r < s->row0 + s->nrows; r++) {
            const double *x = d->sched + (size_t)r * NN_SCHED_IN;
            b += 32.0 * expm1(x[nb]) * (expm1(x[gl]) + expm1(x[gs]));
        }
        pred[i] = b;
    }
}

typedef struct {
    int n;
    double acc, rho, ratio;
    double apart;                     /* pairwise accuracy on pairs measured > TRAIN_APART apart */
} figures;

static figures rank_app(const train_data *d, const double *pred) {
    figures f = { 0, NAN, NAN, NAN, NAN };
    double *p = calloc((size_t)d->nsamples + 1, sizeof(double)), *m = calloc((size_t)d->nsamples + 1, sizeof(double));
    for (int i = 0; i < d->nsamples; i++)
        if (d->pipes[d->samples[i].pipe].role == TRAIN_ROLE_VALID) {
            p[f.n] = pred[i];
            m[f.n++] = d->samples[i].ms;
        }
    train_rank rk;
    train_rank_of(f.n, p, m, &rk);
    f.acc = rk.pairs ? (double)rk.correct / (double)rk.pairs : NAN;
    f.rho = rk.rho;
    f.ratio = rk.best_ms / rk.min_ms;
    f.apart = rk.pairs_apart ? (double)rk.correct_apart / (double)rk.pairs_apart : NAN;
    free(p);
    free(m);
    return f;
}

static int bench_holdout(const char *db, const char *data, const char *apps, int epochs, uint64_t seed,
                         train_loss loss, int min_generation, double decay) {
    char err[2048];
    train_data d;
    train_data_init(&d);
    train_load_opts lo = { .log = stderr, .min_generation = min_generation };
    if (train_load(&d, db, data, &lo, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int pipelines, groups;
    train_count_groups(&d, &pipelines, &groups);
    printf("%d samples of %d groups (rejected: %lld features, %lld times, %lld unreadable, %lld of code older "
           "than generation %d)\n", d.nsamples, groups, (long long)d.rejected_features, (long long)d.rejected_time,
           (long long)d.rejected_input, (long long)d.rejected_generation, min_generation > 1 ? min_generation : 1);
    printf("hold-one-app-out, %d epochs, seed %llu, %s loss, weight decay %g: pairwise accuracy / Spearman rho / "
           "time of the top-ranked sample over the fastest\n", epochs, (unsigned long long)seed,
           loss == TRAIN_LOSS_RANK ? "rank" : "throughput", decay);
    printf("%-26s %5s | %-21s | %-21s | %-21s | %-21s\n", "app", "n", "network", "bytes moved", "least squares",
           db ? "neighbours in time" : "(neighbours: --db)");
    char **names;
    int n = apps_list("apps", &names, err, sizeof err);
    nn_model *m = calloc(1, sizeof *m);
    double *pred = calloc((size_t)d.nsamples + 1, sizeof(double));
    /* per predictor: sums of pairwise, rho, log ratio; how many of each
     * were finite (an app of one sample has no pairs); apps with a ratio
     * within 1.2x */
    double sum[4][3] = { { 0 } }, apart[4] = { 0 };
    int cnt[4][3] = { { 0 } }, within[4] = { 0 }, napart[4] = { 0 };
    int counted = 0;
    for (int a = 0; a < n; a++) {
        if (!apps_wanted(apps, names[a])) continue;
        for (int p = 0; p < d.npipes; p++) d.pipes[p].role = TRAIN_ROLE_TRAIN;
        const char *one[] = { names[a] };
        if (train_set_role_of_apps(&d, 1, one, TRAIN_ROLE_VALID) == 0) {
            printf("%-26s %5s | no samples\n", names[a], "-");
            continue;
        }
        train_opts o;
        train_opts_default(&o);
        o.epochs = epochs;
        o.seed = seed;
        o.loss = loss;
        o.weight_decay = decay;
        figures f[4];
        if (train_run(&d, m, &o, NULL, NULL, err, sizeof err) != 0) {
            printf("%-26s | %s\n", names[a], err);
            continue;
        }
        train_predict_all(&d, m, pred);
        f[0] = rank_app(&d, pred);
        bytes_predict(&d, pred);
        f[1] = rank_app(&d, pred);
        double coef[NN_COEF];
        if (train_lsq_fit(&d, coef) == 0) {
            train_lsq_predict(&d, coef, pred);
            f[2] = rank_app(&d, pred);
        } else {
            f[2] = (figures){ 0, NAN, NAN, NAN, NAN };
        }
        /* no features: the times of the samples measured just before and
         * after (store order; an exchange file's is not the measurement's) */
        f[3] = (figures){ 0, NAN, NAN, NAN, NAN };
        if (db) {
            train_neighbour_predict(&d, 3, pred);
            f[3] = rank_app(&d, pred);
        }
        printf("%-26s %5d", names[a], f[0].n);
        for (int k = 0; k < 4; k++) {
            printf(" | %5.3f %6.3f %7.3fx", f[k].acc, f[k].rho, f[k].ratio);
            double v[3] = { f[k].acc, f[k].rho, log(f[k].ratio) };
            for (int j = 0; j < 3; j++)
                if (isfinite(v[j]) && isfinite(f[k].acc)) sum[k][j] += v[j], cnt[k][j]++;
            if (isfinite(f[k].acc) && f[k].ratio <= 1.2) within[k]++;
            if (isfinite(f[k].apart)) apart[k] += f[k].apart, napart[k]++;
        }
        printf("\n");
        fflush(stdout);
        counted++;
    }
    if (counted) {
        printf("%-26s %5s", "mean (ratio: geometric)", "");
        for (int k = 0; k < 4; k++)
            printf(" | %5.3f %6.3f %7.3fx", sum[k][0] / cnt[k][0], sum[k][1] / cnt[k][1], exp(sum[k][2] / cnt[k][2]));
        printf("\n%-26s %5s", "top pick within 1.2x", "");
        for (int k = 0; k < 4; k++) printf(" | %2d of %2d apps        ", within[k], cnt[k][0]);
        printf("\n%-26s %5s", "pairs > 10% apart", "");
        for (int k = 0; k < 4; k++) printf(" | %5.3f                ", napart[k] ? apart[k] / napart[k] : NAN);
        printf("\n(means and counts over the apps with pairs to rank; the last line: the mean pairwise\n"
               "accuracy on the pairs whose measured times differ by more than 10%%, beyond the\n"
               "in-turn measurement's agreement band)\n");
    }
    apps_free_names(names, n);
    free(pred);
    free(m);
    train_data_free(&d);
    return 0;
}

int main(int argc, char **argv) {
    const char *weights = NULL, *apps = NULL, *db = NULL, *data = NULL;
    int nstates = 64, epochs = 200, min_generation = 0;
    double min_s = 0.5, decay = 0;
    uint64_t seed = 1;
    train_loss loss = TRAIN_LOSS_RANK;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--weights") && v) weights = v, i++;
        else if (!strcmp(a, "--apps") && v) apps = v, i++;
        else if (!strcmp(a, "--db") && v) db = v, i++;
        else if (!strcmp(a, "--data") && v) data = v, i++;
        else if (!strcmp(a, "--states") && v) nstates = atoi(v), i++;
        else if (!strcmp(a, "--epochs") && v) epochs = atoi(v), i++;
        else if (!strcmp(a, "--weight-decay") && v) decay = atof(v), i++;
        else if (!strcmp(a, "--seed") && v) seed = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--min-s") && v) min_s = atof(v), i++;
        else if (!strcmp(a, "--min-generation") && v && atoi(v) >= 1 && atoi(v) <= CG_GENERATION)
            min_generation = atoi(v), i++;
        else if (!strcmp(a, "--loss") && v && (!strcmp(v, "rank") || !strcmp(v, "throughput")))
            loss = strcmp(v, "rank") ? TRAIN_LOSS_THROUGHPUT : TRAIN_LOSS_RANK, i++;
        else {
            fprintf(stderr, "usage: bench_costmodel [--weights W] [--apps a,b] [--states N] [--min-s S] "
                            "[--db F | --data F] [--epochs N] [--seed N] [--loss throughput|rank] "
                            "[--min-generation 1..%d] [--weight-decay D]\n", CG_GENERATION);
            return 2;
        }
    }
    nn_model *w = calloc(1, sizeof *w);
    char err[1024];
    if (weights) {
        if (nn_load(w, weights, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
    } else {
        nn_init(w, 1);
    }
    int rc = bench_speed(w, db || data ? DEFAULT_APPS : apps ? apps : DEFAULT_APPS, nstates, min_s);
    if (rc == 0 && (db || data)) rc = bench_holdout(db, data, apps, epochs, seed, loss, min_generation, decay);
    free(w);
    return rc;
}
