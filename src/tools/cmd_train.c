/*
 * cmd_train.c - `stagecraft train` (the learned cost model from the sample
 * store) and `stagecraft predict` (a schedule's predicted run time).
 * docs/costmodel.md.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "beam.h"
#include "costmodel.h"
#include "driver.h"
#include "strategy.h"
#include "tools.h"
#include "train_load.h"

/* Whether argument a is option name ("--name" or "--name=value"). */
static bool option_named(const char *a, const char *name) {
    size_t n = strlen(name);
    return !strncmp(a, name, n) && (a[n] == 0 || a[n] == '=');
}

/* "--name value" or "--name=value": the value (and *i moved past it), or
 * NULL when arg is not that option.  *missing is set when the value is
 * absent. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, bool *missing) {
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (!option_named(a, name)) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

static void train_usage(FILE *out) {
    fprintf(out,
            "usage: stagecraft train (--db FILE.db | --data FILE.txt[.xz] [--data ...]) -o FILE.weights [options]\n"
            "       stagecraft train (--db FILE.db | --data FILE.txt[.xz] [--data ...]) --evaluate W [--app A[,B]]\n"
            "       stagecraft train (--db FILE.db | --data FILE.txt[.xz] [--data ...]) --evaluate-held-out DIR[,DIR]\n"
            "       [--device KEY] [--min-generation N] [--keep-changed LIST]\n"
            "\n"
            "Trains the learned cost model (Anderson et al. 2021) on the measured samples and\n"
            "writes its weights.  Prints per epoch the training and validation loss and the\n"
            "validation pipelines' pairwise ranking accuracy and Spearman's rho.\n"
            "\n"
            "options:\n"
            "  --db FILE         a sample database (stagecraft samples ...)\n"
            "  --data FILE       an exchange file of samples (.txt or .txt.xz); repeatable: the\n"
            "                    files' samples together\n"
            "  -o FILE           the weights file to write\n"
            "  --device KEY      only the samples of this device (default: all)\n"
            "  --min-generation N  only samples that timed code of generation N or newer\n"
            "                    (docs/samples.md; default: all)\n"
            "  --keep-changed LIST  keep, with the times of their older code, the samples whose\n"
            "                    code changed since they were timed in these ways (comma-separated:\n"
            "                    rows-apart, narrow-store, pointer-selects, private-picks, partial-guards,\n"
            "                    guarded-mins, longer-unrolls, data-picks, interior, minmax, ..., all; default:\n"
            "                    none, they are\n"
            "                    rejected; docs/costmodel.md)\n"
            "  --hold-out APP    leave out the pipelines of app APP (repeatable, or a,b,c)\n"
            );
    fprintf(out,
            "  --hold-out-each LIST  one model per app of LIST (a,b,c, or all: every app of the\n"
            "                    samples), each trained without that app's pipelines, from one\n"
            "                    load of the samples: -o names a directory (made if missing) that\n"
            "                    gets APP.weights and APP.log (its epochs) for each; the weights\n"
            "                    are those of --hold-out APP with the same options\n"
            "  --jobs J          with --hold-out-each: models trained at once (default: the core\n"
            "                    count; each is one thread, and deterministic in its seed)\n"
            "  --epochs N        passes over the training samples (default 50)\n"
            "  --seed N          initial weights and minibatch order (default 1)\n"
            "  --lr X            Adam's learning rate (default 0.001)\n"
            "  --weight-decay D  decoupled weight decay: each step shrinks the layers' weights by\n"
            "                    D x the step size (default 0; docs/costmodel.md)\n"
            "  --anneal F        the last fraction F of the epochs lowers the rate linearly to\n"
            "                    a twentieth (default 0.2; 0: a constant rate)\n"
            "  --floor-quantile Q  the floors: no stage runs its instructions (its gathers)\n"
            "                    faster than quantile Q of the training samples' rates\n"
            "                    (default 0.999; docs/costmodel.md)\n"
            "  --gather-floor    a gather floor beside the instruction floor (docs/costmodel.md)\n"
            "  --kernel-loss W   add W x the per-kernel loss: how far the predicted shares of each\n"
            "                    sample's kernels are from their times alone, where collect\n"
            "                    stored them (default 0: none; docs/costmodel.md)\n"
            "  --init FILE       fine-tune these weights instead of starting afresh\n"
            "  --evaluate W      train nothing: how weights W rank each pipeline's samples (pairwise\n"
            "                    accuracy, Spearman's rho, and the measured time of the sample it\n"
            "                    predicts fastest over the fastest measured), and over all of them\n"
            "  --evaluate-held-out DIR[,DIR...]\n"
            "                    train nothing: how each app's own model of DIR (DIR/APP.weights,\n"
            "                    as --hold-out-each writes them) ranks that app's pipelines, a line\n"
            "                    per app and the mean over the apps, for each DIR\n"
            "  --app A           with --evaluate or --evaluate-held-out: only the pipelines of app A\n"
            "                    (repeatable, or a,b,c)\n"
            "  --worst-kernels N  with --evaluate: the N kernels priced furthest under their share\n"
            "                    of their samples' kernel times (default 0)\n"
            "  --intensive       the coefficients from the per-point, per-thread and per-block\n"
            "                    schedule features alone, not from totals that grow with the\n"
            "                    size (docs/costmodel.md)\n"
            "  --validation P    percent of pipelines (by hash) kept for validation (default 10)\n"
            "  --validation-fold K\n"
            "                    which window of P percent is kept (default 0: the first); models\n"
            "                    of folds 0, 1, ... train on different pipelines\n"
            "  --loss L          rank (the default: Adams et al. 2019's relative throughput plus a\n"
            "                    pairwise ranking term) or throughput (that alone); docs/costmodel.md\n");
}

static bool parse_double(const char *s, double lo, double hi, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !isfinite(v) || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* The i-th app name of the loaded data (NULL: pipeline i is not an app,
 * or a held-out name that matched nothing): the pipelines trained on, then
 * the held-out names that matched. */
static const char *data_app(const train_data *d, const char *const *hold, const int *hold_pipes, int i) {
    if (i >= d->npipes) return hold_pipes[i - d->npipes] ? hold[i - d->npipes] : NULL;
    return strncmp(d->pipes[i].source, "app:", 4) ? NULL : d->pipes[i].source + 4;
}

/* The apps of the loaded data, each once, comma-separated in buf. */
static void data_apps(const train_data *d, const char *const *hold, const int *hold_pipes, int nhold, char *buf,
                      size_t len) {
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < d->npipes + nhold; i++) {
        const char *name = data_app(d, hold, hold_pipes, i);
        bool seen = false;
        for (int j = 0; name && j < i && !seen; j++) {
            const char *other = data_app(d, hold, hold_pipes, j);
            seen = other && !strcmp(other, name);
        }
        if (name && !seen && at + strlen(name) + 3 < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", name);
    }
}

/* The options that only training uses (refused with --evaluate). */
static const char *const training_only[] = { "--intensive", "--gather-floor", "--epochs", "--seed", "--validation",
                                             "--validation-fold", "--lr", "--weight-decay", "--anneal",
                                             "--floor-quantile", "--loss", "--kernel-loss", NULL };

/* Appends the comma-separated names of v to *list (growing it), in a copy
 * of v kept in copies until the end. */
static void split_names(const char *v, const char ***list, int *n, int *cap, char **copies, int *ncopies) {
    char *c = copies[(*ncopies)++] = strdup(v), *save = NULL;
    for (char *t = strtok_r(c, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == *cap) *list = realloc(*list, sizeof **list * (size_t)(*cap *= 2));
        (*list)[(*n)++] = t;
    }
}

/* `train --evaluate`: how the weights m rank the samples of the pipelines
 * of apps (all pipelines when napps is 0).  A tool status. */
/* train --evaluate --worst-kernels N: the kernels priced furthest under
 * their share (train_worst_kernels). */
static void print_worst_kernels(const train_data *d, const nn_model *m, int n) {
    train_kernel_miss *w = calloc((size_t)n, sizeof *w);
    if (!w) abort();
    int got = train_worst_kernels(d, m, TRAIN_ROLE_VALID, n, w);
    printf("the %d kernel%s priced furthest under their share (m log(m / q), m measured, q predicted):\n", got,
           got == 1 ? "" : "s");
    printf("%-32s %10s %-24s %9s %9s %7s %8s\n", "pipeline", "sample ms", "kernel", "measured", "predicted",
           "m / q", "term");
    for (int i = 0; i < got; i++) {
        const train_sample *sm = &d->samples[w[i].sample];
        const char *name = d->kern_name[sm->kern0 + w[i].kernel];
        printf("%-32s %10.4g %-24s %9.4f %9.4f %7.3g %8.4f\n", d->pipes[sm->pipe].name, sm->ms, name ? name : "?",
               w[i].measured, w[i].predicted, w[i].measured / w[i].predicted, w[i].term);
    }
    free(w);
}

/* --app: makes the pipelines of each app the validation role (the others
 * skipped); every pipeline where napps is 0.  TOOL_USAGE, with a message
 * naming the apps there are, where an app has no pipeline. */
static int set_apps_valid(train_data *d, const char *const *apps, int napps, const char *from) {
    for (int p = 0; p < d->npipes; p++) d->pipes[p].role = napps ? TRAIN_ROLE_SKIP : TRAIN_ROLE_VALID;
    for (int k = 0; k < napps; k++)
        if (train_set_role_of_apps(d, 1, &apps[k], TRAIN_ROLE_VALID) == 0) {
            char names[1024];
            data_apps(d, NULL, NULL, 0, names, sizeof names);
            fprintf(stderr, "stagecraft train: --app '%s': no pipeline of that app in %s (its apps: %s)\n", apps[k],
                    from, names[0] ? names : "none");
            return TOOL_USAGE;
        }
    return TOOL_OK;
}

/* The geometric mean of the pipelines' pick over the fastest, over those
 * evaluated with a finite one (NAN: none); *n their count. */
static double pick_geomean(const train_data *d, const train_pipe_metrics *each, int *n) {
    double log_sum = 0;
    *n = 0;
    for (int p = 0; p < d->npipes; p++)
        if (each[p].samples && isfinite(each[p].pick_over_best) && each[p].pick_over_best > 0) {
            log_sum += log(each[p].pick_over_best);
            (*n)++;
        }
    return *n ? exp(log_sum / *n) : NAN;
}

static int evaluate_weights(train_data *d, const nn_model *m, const char *path, const char *const *apps, int napps,
                            const char *from, int worst) {
    int rc = set_apps_valid(d, apps, napps, from);
    if (rc != TOOL_OK) return rc;
    train_pipe_metrics *each = calloc((size_t)d->npipes + 1, sizeof *each);
    train_metrics all = train_evaluate_pipes(d, m, TRAIN_ROLE_VALID, each);
    printf("evaluating %s (device %s; %s)\n", path, m->device[0] ? m->device : "unknown", m->summary);
    bool kern = all.kernel_samples > 0;
    printf("%-36s %8s %9s %8s %10s%s\n", "pipeline", "samples", "pairwise", "rho", "pick/best",
           kern ? "  kernels (samples, divergence)" : "");
    for (int p = 0; p < d->npipes; p++) {
        const train_pipe_metrics *e = &each[p];
        if (!e->samples) continue;
        printf("%-36s %8d %9.4f %8.4f %10.3f", d->pipes[p].name, e->samples, e->pairwise, e->rho, e->pick_over_best);
        if (kern && e->kernel_samples) printf("  %8d %9.4f", e->kernel_samples, e->kernel_divergence);
        printf("\n");
    }
    int nlog;
    double pick = pick_geomean(d, each, &nlog);
    printf("all: %d samples of %d pipeline%s: pairwise %.4f, rho %.4f (the mean over pipelines of 3 samples or more, "
           "weighted by samples); the pick at %.3fx the fastest (geometric mean over pipelines)\n",
           all.samples, all.pipelines, all.pipelines == 1 ? "" : "s", all.pairwise, all.rho, pick);
    if (kern)
        printf("kernels: %d samples with each kernel's time alone; the predicted shares' mean divergence from "
               "them %.4f (docs/costmodel.md)\n", all.kernel_samples, all.kernel_divergence);
    if (worst) print_worst_kernels(d, m, worst);
    free(each);
    return TOOL_OK;
}

/* `train --evaluate-held-out DIRS`: for every app of d (of apps, where
 * napps > 0), how DIR/APP.weights of each directory ranks that app's
 * pipelines, the models --hold-out-each writes: a line per app, then the
 * mean over the apps, each counted once.  A tool status. */
static int evaluate_held_out(train_data *d, const char *const *dirs, int ndirs, const char *const *apps, int napps,
                             const char *from) {
    char names[8192];
    if (napps == 0) data_apps(d, NULL, NULL, 0, names, sizeof names);
    else {
        int rc = set_apps_valid(d, apps, napps, from);
        if (rc != TOOL_OK) return rc;
        size_t at = 0;
        names[0] = 0;
        for (int k = 0; k < napps; k++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", at ? ", " : "", apps[k]);
    }
    if (!names[0]) {
        fprintf(stderr, "stagecraft train: --evaluate-held-out: no app's pipelines in %s\n", from);
        return TOOL_INPUT;
    }
    train_pipe_metrics *each = calloc((size_t)d->npipes + 1, sizeof *each);
    nn_model *m = calloc(1, sizeof *m);
    if (!each || !m) abort();
    int rc = TOOL_OK;
    for (int k = 0; k < ndirs && rc == TOOL_OK; k++) {
        printf("held out in %s: each app's pipelines ranked by %s/APP.weights\n", dirs[k], dirs[k]);
        printf("%-28s %8s %9s %8s %10s\n", "app", "samples", "pairwise", "rho", "pick/best");
        double pair_sum = 0, rho_sum = 0, log_pick = 0;
        int napp = 0, nrho = 0, npick = 0, missing = 0;
        char list[8192], *save = NULL;
        snprintf(list, sizeof list, "%s", names);
        for (char *app = strtok_r(list, ", ", &save); app; app = strtok_r(NULL, ", ", &save)) {
            char path[4096], err[1024];
            snprintf(path, sizeof path, "%s/%s.weights", dirs[k], app);
            if (access(path, F_OK) != 0) {
                missing++;
                continue;
            }
            if (nn_load(m, path, err, sizeof err) != 0) {
                fprintf(stderr, "stagecraft train: %s\n", err);
                rc = TOOL_INPUT;
                break;
            }
            const char *one[1] = { app };
            set_apps_valid(d, one, 1, from);      /* an app of the data: it has pipelines */
            train_metrics all = train_evaluate_pipes(d, m, TRAIN_ROLE_VALID, each);
            int np;
            double pick = pick_geomean(d, each, &np);
            printf("%-28s %8d %9.4f %8.4f %10.3f\n", app, all.samples, all.pairwise, all.rho, pick);
            if (isfinite(all.pairwise)) {
                pair_sum += all.pairwise;
                napp++;
            }
            if (isfinite(all.rho)) {
                rho_sum += all.rho;
                nrho++;
            }
            if (np) {
                log_pick += log(pick);
                npick++;
            }
        }
        if (rc != TOOL_OK) break;
        if (napp == 0) {
            fprintf(stderr, "stagecraft train: --evaluate-held-out: no APP.weights in %s for the apps of %s (%s)\n",
                    dirs[k], from, names);
            rc = TOOL_INPUT;
            break;
        }
        printf("mean over %d apps: pairwise %.4f, rho %.4f (each app once); the pick at %.3fx the fastest "
               "(geometric mean)", napp, pair_sum / napp, nrho ? rho_sum / nrho : NAN,
               npick ? exp(log_pick / npick) : NAN);
        if (missing) printf("; %d app%s without weights in %s", missing, missing == 1 ? "" : "s", dirs[k]);
        printf("\n");
    }
    free(m);
    free(each);
    return rc;
}

/* The device key a model trained on d records: the one asked for, the
 * samples' own, or "mixed: KEYS" when they are of several devices. */
static void model_device(store *st, const char *asked, const train_data *d, char *buf, size_t len) {
    snprintf(buf, len, "%s", asked ? asked : d->device);
    if (buf[0]) return;
    char keys[NN_DEVICE_MAX - 8], err[256];
    if (train_store_device_keys(st, keys, sizeof keys, err, sizeof err) > 1) snprintf(buf, len, "mixed: %s", keys);
}

/* After training m on d with o: its device, its summary (with where it was
 * fine-tuned from and its validation fold) and the file.  0, or -1 with
 * err. */
static int save_model(const train_data *d, nn_model *m, const train_opts *o, const train_metrics *vm,
                      const char *device, const char *init, long long valid, long long fold, const char *out,
                      char *err, size_t errlen) {
    snprintf(m->device, sizeof m->device, "%s", device);
    train_summary(d, o, vm, m->summary, sizeof m->summary);
    if (init) {
        size_t at = strlen(m->summary);
        snprintf(m->summary + at, sizeof m->summary - at, "; fine-tuned from %s", init);
    }
    if (fold > 0 && valid > 0) {
        size_t at = strlen(m->summary);
        int from = train_fold_start((int)valid, (int)fold);
        snprintf(m->summary + at, sizeof m->summary - at, "; validation fold %lld (hashes %d to %d of 100)", fold, from,
                 (from + (int)valid - 1) % 100);
    }
    return nn_save(m, out, err, errlen);
}

static void print_floors(FILE *f, const nn_model *m, double floor_q) {
    if (m->floor_ms > 0)
        fprintf(f, "instruction floor: %.4g ms per instruction (%.4g instructions per ms; the %g quantile of the "
                "training samples' rates)\n", m->floor_ms, 1.0 / m->floor_ms, floor_q);
    if (m->gather_floor_ms > 0)
        fprintf(f, "gather floor: %.4g ms per gather (%.4g gathers per ms; the %g quantile of the gathering training "
                "samples' rates)\n", m->gather_floor_ms, 1.0 / m->gather_floor_ms, floor_q);
}

/* --hold-out-each: the models to train, shared by the worker threads. */
typedef struct {
    const train_data *d;
    const train_opts *o;
    const nn_model *init_model;       /* fine-tuned from (NULL: afresh) */
    const char *init, *dir, *device;
    const char *const *apps;
    int napps;
    long long valid, fold;
    double floor_q;
    pthread_mutex_t lock;             /* guards next, failed, done and stdout */
    int next, failed, done;
} each_ctx;

/* One model of --hold-out-each: app k's pipelines skipped, the rest split
 * by hash as train does; DIR/APP.weights and DIR/APP.log. */
static void each_train_one(each_ctx *c, int k) {
    const char *app = c->apps[k];
    char path[4096], logpath[4096], err[4096 + 512] = "";
    snprintf(path, sizeof path, "%s/%s.weights", c->dir, app);
    snprintf(logpath, sizeof logpath, "%s/%s.log", c->dir, app);
    train_data d = *c->d;
    d.pipes = malloc(sizeof *d.pipes * (size_t)(d.npipes + 1));
    nn_model *m = calloc(1, sizeof *m);
    if (!d.pipes || !m) abort();
    memcpy(d.pipes, c->d->pipes, sizeof *d.pipes * (size_t)d.npipes);
    for (int p = 0; p < d.npipes; p++) d.pipes[p].role = TRAIN_ROLE_TRAIN;
    int skipped = train_set_role_of_apps(&d, 1, &app, TRAIN_ROLE_SKIP);
    train_split_by_hash(&d, (int)c->valid, (int)c->fold);
    int rc = -1;
    FILE *log = fopen(logpath, "w");
    if (!log) {
        snprintf(err, sizeof err, "%s: cannot write: %s", logpath, strerror(errno));
    } else {
        fprintf(log, "held out: app %s (%d groups of its pipelines)\n", app, skipped);
        train_opts o = *c->o;
        o.log = log;
        o.progress = false;
        if (c->init_model) *m = *c->init_model;
        train_metrics tm, vm;
        rc = train_run(&d, m, &o, &tm, &vm, err, sizeof err);
        if (rc == 0)
            rc = save_model(&d, m, &o, &vm, c->device, c->init, c->valid, c->fold, path, err, sizeof err);
        if (rc == 0) {
            fprintf(log, "wrote %s: %s\n", path, m->summary);
            print_floors(log, m, c->floor_q);
        } else {
            fprintf(log, "stagecraft train: %s\n", err);
        }
        if (fclose(log) != 0 && rc == 0) {
            snprintf(err, sizeof err, "%s: cannot write: %s", logpath, strerror(errno));
            rc = -1;
        }
    }
    pthread_mutex_lock(&c->lock);
    c->done++;
    if (rc == 0) {
        printf("[%d/%d] wrote %s: %s\n", c->done, c->napps, path, m->summary);
    } else {
        c->failed++;
        fprintf(stderr, "stagecraft train: --hold-out-each: the model without %s: %s\n", app, err);
    }
    fflush(stdout);
    pthread_mutex_unlock(&c->lock);
    free(d.pipes);
    free(m);
}

static void *each_worker(void *arg) {
    each_ctx *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        int k = c->next < c->napps ? c->next++ : -1;
        pthread_mutex_unlock(&c->lock);
        if (k < 0) return NULL;
        each_train_one(c, k);
    }
}

/* Trains c->napps models, `jobs` at a time.  The count that failed. */
static int train_each_held_out(each_ctx *c, int jobs) {
    if (jobs > c->napps) jobs = c->napps;
    pthread_mutex_init(&c->lock, NULL);
    pthread_t *th = calloc((size_t)jobs + 1, sizeof *th);
    if (!th) abort();
    int started = 0;
    for (int j = 0; j < jobs; j++)
        if (pthread_create(&th[started], NULL, each_worker, c) == 0) started++;
    if (started == 0) each_worker(c);
    for (int j = 0; j < started; j++) pthread_join(th[j], NULL);
    free(th);
    pthread_mutex_destroy(&c->lock);
    return c->failed;
}

/* --hold-out-each: the apps named (or all of d's), each checked against
 * the samples, the directory made, then the models.  A tool status. */
static int train_each(const train_data *d, const train_opts *o, const char *const *names, int nnames,
                      long long jobs, const char *dir, const nn_model *init_model, const char *init, const char *device,
                      long long valid, long long fold, double floor_q, const char *from) {
    const char **apps = calloc((size_t)d->npipes + (size_t)nnames + 1, sizeof *apps);
    if (!apps) abort();
    int napps = 0;
    bool all = nnames == 1 && !strcmp(names[0], "all");
    for (int i = 0; all && i < d->npipes; i++) {
        const char *s = d->pipes[i].source;
        if (strncmp(s, "app:", 4)) continue;
        bool seen = false;
        for (int k = 0; k < napps && !seen; k++) seen = !strcmp(apps[k], s + 4);
        if (!seen) apps[napps++] = s + 4;
    }
    for (int k = 0; !all && k < nnames; k++) {
        bool found = false, seen = false;
        for (int i = 0; i < d->npipes && !found; i++)
            found = !strncmp(d->pipes[i].source, "app:", 4) && !strcmp(d->pipes[i].source + 4, names[k]);
        if (!found) {
            char list[1024];
            data_apps(d, NULL, NULL, 0, list, sizeof list);
            fprintf(stderr, "stagecraft train: --hold-out-each '%s': no pipeline of that app in %s (its apps: %s)\n",
                    names[k], from, list[0] ? list : "none");
            free(apps);
            return TOOL_USAGE;
        }
        for (int j = 0; j < napps && !seen; j++) seen = !strcmp(apps[j], names[k]);
        if (!seen) apps[napps++] = names[k];
    }
    if (napps == 0) {
        fprintf(stderr, "stagecraft train: --hold-out-each all: no app's pipelines in %s to hold out\n", from);
        free(apps);
        return TOOL_INPUT;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "stagecraft train: -o '%s': cannot make the directory: %s\n", dir, strerror(errno));
        free(apps);
        return TOOL_INPUT;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int j = jobs > 0 ? (int)jobs : cores > 0 ? (int)cores : 1;
    printf("training %d models, each without one app, %d at a time, into %s/ (APP.weights, APP.log)\n", napps,
           j < napps ? j : napps, dir);
    fflush(stdout);
    each_ctx c = { .d = d, .o = o, .init_model = init_model, .init = init, .dir = dir, .device = device,
                   .apps = apps, .napps = napps, .valid = valid, .fold = fold, .floor_q = floor_q };
    int failed = train_each_held_out(&c, j);
    if (failed) fprintf(stderr, "stagecraft train: --hold-out-each: %d of %d models failed (above)\n", failed, napps);
    free(apps);
    return failed ? TOOL_INPUT : TOOL_OK;
}

int tool_train(int argc, char **argv) {
    const char *cmd = "train", *db = NULL, *out = NULL, *device = NULL, *init = NULL, *evaluate = NULL;
    /* --evaluate-held-out directories, split at commas like --hold-out */
    const char **held_dirs = calloc((size_t)argc * 2 + 1, sizeof *held_dirs);
    int nheld_dirs = 0, held_cap = argc * 2;
    /* with --evaluate, the first option that only training uses */
    const char *train_only = NULL;
    /* the --data files, in the order given */
    const char **data = calloc((size_t)argc + 1, sizeof *data);
    int ndata = 0;
    /* --hold-out names: split at commas, in one copy of each value */
    const char **hold = calloc((size_t)argc * 2 + 1, sizeof *hold);
    int *hold_pipes = NULL;        /* per name, the pipelines it left out */
    char **copies = calloc((size_t)argc + 1, sizeof *copies);
    int nhold = 0, ncopies = 0, cap = argc * 2;
    /* --app names (for --evaluate), likewise */
    const char **apps = calloc((size_t)argc * 2 + 1, sizeof *apps);
    int napps = 0, apps_cap = argc * 2;
    /* --hold-out-each names, likewise ("all": every app of the samples) */
    const char **each = calloc((size_t)argc * 2 + 1, sizeof *each);
    int neach = 0, each_cap = argc * 2;
    long long jobs = 0;
    long long epochs = 50, seed = 1, valid = 10, fold = 0, min_generation = 0;
    unsigned keep_changed = 0;
    int worst = 0;
    bool intensive = false, gather_floor = false;
    double lr = 1e-3, anneal = 0.2, floor_q = TRAIN_FLOOR_QUANTILE, decay = 0, kernel_loss = 0;
    train_loss loss = TRAIN_LOSS_RANK;
    int rc = TOOL_OK;
    for (int i = 1; i < argc && rc == TOOL_OK; i++) {
        const char *a = argv[i], *v;
        bool missing = false;
        long long n;
        for (int k = 0; training_only[k] && !train_only; k++)
            if (option_named(a, training_only[k])) train_only = training_only[k];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            train_usage(stdout);
            free(each);
            free(held_dirs);
            free(apps);
            for (int k = 0; k < ncopies; k++) free(copies[k]);
            free(copies);
            free(hold);
            free(data);
            return TOOL_OK;
        }
        if ((v = opt_value(argc, argv, &i, "--db", &missing))) db = v;
        else if ((v = opt_value(argc, argv, &i, "--data", &missing))) data[ndata++] = v;
        else if ((v = opt_value(argc, argv, &i, "-o", &missing))) out = v;
        else if ((v = opt_value(argc, argv, &i, "--device", &missing))) device = v;
        else if ((v = opt_value(argc, argv, &i, "--init", &missing))) init = v;
        else if (!strcmp(a, "--intensive")) intensive = true;
        else if (!strcmp(a, "--gather-floor")) gather_floor = true;
        else if ((v = opt_value(argc, argv, &i, "--evaluate", &missing))) evaluate = v;
        else if ((v = opt_value(argc, argv, &i, "--evaluate-held-out", &missing)))
            split_names(v, &held_dirs, &nheld_dirs, &held_cap, copies, &ncopies);
        else if ((v = opt_value(argc, argv, &i, "--hold-out", &missing)))
            split_names(v, &hold, &nhold, &cap, copies, &ncopies);
        else if ((v = opt_value(argc, argv, &i, "--hold-out-each", &missing)))
            split_names(v, &each, &neach, &each_cap, copies, &ncopies);
        else if ((v = opt_value(argc, argv, &i, "--jobs", &missing))) {
            if (!tool_parse_int(v, 1, 1024, &n))
                rc = tool_usage_error(cmd, "--jobs: expected a number of models at once from 1 to 1024, got '%s'", v);
            jobs = n;
        } else if ((v = opt_value(argc, argv, &i, "--worst-kernels", &missing))) {
            if (!tool_parse_int(v, 1, 100000, &n))
                rc = tool_usage_error(cmd, "--worst-kernels: expected a number of kernels >= 1, got '%s'", v);
            worst = (int)n;
        } else if ((v = opt_value(argc, argv, &i, "--app", &missing)))
            split_names(v, &apps, &napps, &apps_cap, copies, &ncopies);
        else if ((v = opt_value(argc, argv, &i, "--epochs", &missing))) {
            if (!tool_parse_int(v, 0, 1000000, &n)) rc = tool_usage_error(cmd, "--epochs: expected a number of epochs >= 0, got '%s'", v);
            epochs = n;
        } else if ((v = opt_value(argc, argv, &i, "--seed", &missing))) {
            if (!tool_parse_int(v, 0, (long long)1 << 62, &n)) rc = tool_usage_error(cmd, "--seed: expected a number >= 0, got '%s'", v);
            seed = n;
        } else if ((v = opt_value(argc, argv, &i, "--min-generation", &missing))) {
            if (!tool_parse_int(v, 1, CG_GENERATION, &n))
                rc = tool_usage_error(cmd, "--min-generation: expected a code generation from 1 to %d, got '%s'",
                                      CG_GENERATION, v);
            min_generation = n;
        } else if ((v = opt_value(argc, argv, &i, "--keep-changed", &missing))) {
            char why[1024];
            if (train_keep_changed_parse(v, &keep_changed, why, sizeof why) != 0)
                rc = tool_usage_error(cmd, "--keep-changed: %s", why);
        } else if ((v = opt_value(argc, argv, &i, "--validation", &missing))) {
            if (!tool_parse_int(v, 0, 90, &n)) rc = tool_usage_error(cmd, "--validation: expected a percent from 0 to 90, got '%s'", v);
            valid = n;
        } else if ((v = opt_value(argc, argv, &i, "--validation-fold", &missing))) {
            if (!tool_parse_int(v, 0, 99, &n))
                rc = tool_usage_error(cmd, "--validation-fold: expected a fold from 0 to 99, got '%s'", v);
            fold = n;
        } else if ((v = opt_value(argc, argv, &i, "--lr", &missing))) {
            if (!parse_double(v, 1e-9, 1, &lr)) rc = tool_usage_error(cmd, "--lr: expected a rate in (0, 1], got '%s'", v);
        } else if ((v = opt_value(argc, argv, &i, "--weight-decay", &missing))) {
            if (!parse_double(v, 0, 100, &decay))
                rc = tool_usage_error(cmd, "--weight-decay: expected a factor from 0 to 100, got '%s'", v);
        } else if ((v = opt_value(argc, argv, &i, "--anneal", &missing))) {
            if (!parse_double(v, 0, 1, &anneal))
                rc = tool_usage_error(cmd, "--anneal: expected a fraction of the epochs from 0 to 1, got '%s'", v);
        } else if ((v = opt_value(argc, argv, &i, "--kernel-loss", &missing))) {
            if (!parse_double(v, 0, 1000, &kernel_loss))
                rc = tool_usage_error(cmd, "--kernel-loss: expected a weight from 0 to 1000, got '%s'", v);
        } else if ((v = opt_value(argc, argv, &i, "--floor-quantile", &missing))) {
            if (!parse_double(v, 0.5, 1, &floor_q))
                rc = tool_usage_error(cmd, "--floor-quantile: expected a quantile from 0.5 to 1, got '%s'", v);
        } else if ((v = opt_value(argc, argv, &i, "--loss", &missing))) {
            if (!strcmp(v, "throughput")) loss = TRAIN_LOSS_THROUGHPUT;
            else if (!strcmp(v, "rank")) loss = TRAIN_LOSS_RANK;
            else rc = tool_usage_error(cmd, "--loss: '%s' is not one of throughput, rank", v);
        } else if (missing) rc = tool_usage_error(cmd, "option %s needs a value", a);
        else rc = tool_usage_error(cmd, a[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", a);
    }
    if (rc == TOOL_OK) {
        if (!db && !ndata) rc = tool_usage_error(cmd, "no samples given (--db FILE or --data FILE)");
        else if (db && ndata) rc = tool_usage_error(cmd, "--db and --data are exclusive");
        else if (nheld_dirs && evaluate) rc = tool_usage_error(cmd, "--evaluate and --evaluate-held-out are exclusive");
        else if (nheld_dirs && out) rc = tool_usage_error(cmd, "--evaluate-held-out writes no weights: drop -o");
        else if (nheld_dirs && init) rc = tool_usage_error(cmd, "--evaluate-held-out and --init are exclusive");
        else if (nheld_dirs && nhold)
            rc = tool_usage_error(cmd, "--evaluate-held-out trains nothing to hold out from: --app chooses the apps");
        else if (nheld_dirs && train_only)
            rc = tool_usage_error(cmd, "--evaluate-held-out trains nothing: drop %s", train_only);
        else if (nheld_dirs && neach)
            rc = tool_usage_error(cmd, "--evaluate-held-out trains nothing: drop --hold-out-each");
        else if (evaluate && out) rc = tool_usage_error(cmd, "--evaluate writes no weights: drop -o");
        else if (evaluate && init) rc = tool_usage_error(cmd, "--evaluate and --init are exclusive");
        else if (evaluate && nhold)
            rc = tool_usage_error(cmd, "--evaluate trains nothing to hold out from: --app chooses the pipelines");
        else if (evaluate && train_only) rc = tool_usage_error(cmd, "--evaluate trains nothing: drop %s", train_only);
        else if (worst && !evaluate) rc = tool_usage_error(cmd, "--worst-kernels goes with --evaluate");
        else if (napps && !evaluate && !nheld_dirs)
            rc = tool_usage_error(cmd, "--app goes with --evaluate (to train without an app: --hold-out)");
        else if (!out && !evaluate && !nheld_dirs)
            rc = tool_usage_error(cmd, neach ? "no directory to write the models in (-o DIR)"
                                             : "no weights file to write (-o FILE.weights)");
        else if (neach && evaluate) rc = tool_usage_error(cmd, "--evaluate trains nothing: drop --hold-out-each");
        else if (jobs && !neach) rc = tool_usage_error(cmd, "--jobs goes with --hold-out-each");
    }
    for (int k = 0; k < nheld_dirs && rc == TOOL_OK; k++) {
        /* refused before the samples load, which takes minutes */
        struct stat sb;
        if (!held_dirs[k][0]) rc = tool_usage_error(cmd, "--evaluate-held-out: an empty directory name");
        else if (stat(held_dirs[k], &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "stagecraft train: --evaluate-held-out '%s': not a directory (expected one that "
                    "--hold-out-each wrote, with APP.weights in it)\n", held_dirs[k]);
            rc = TOOL_INPUT;
        }
    }
    if (rc == TOOL_OK && neach) {
        /* the directory: refused now if it cannot be one, made once the samples load */
        struct stat sb;
        if (stat(out, &sb) == 0 && !S_ISDIR(sb.st_mode))
            rc = tool_usage_error(cmd, "-o '%s': with --hold-out-each, -o names a directory, and this is a file", out);
        for (int k = 0; k < neach && rc == TOOL_OK; k++)
            if (!strcmp(each[k], "all") && neach > 1)
                rc = tool_usage_error(cmd, "--hold-out-each: 'all' names every app; give it alone");
            else if (!each[k][0] || strchr(each[k], '/'))
                rc = tool_usage_error(cmd, "--hold-out-each: '%s' is not an app name", each[k]);
    }
    if (rc != TOOL_OK) {
        for (int k = 0; k < ncopies; k++) free(copies[k]);
        free(copies);
        free(each);
        free(held_dirs);
        free(apps);
        free(hold);
        free(data);
        return rc;
    }

    char err[2048];
    store *st = NULL;
    nn_model *m = calloc(1, sizeof *m);
    train_data d;
    train_data_init(&d);
    if ((init || evaluate) && nn_load(m, init ? init : evaluate, err, sizeof err) != 0) {
        fprintf(stderr, "stagecraft train: %s\n", err);
        rc = TOOL_INPUT;
        goto done;
    }
    hold_pipes = calloc((size_t)nhold + 1, sizeof *hold_pipes);
    train_load_opts lo = { .device_key = device, .nhold = nhold, .hold = hold, .log = stderr,
                           .hold_pipes = hold_pipes, .min_generation = (int)min_generation,
                           .keep_changed = keep_changed };
    st = train_open_samples(db, data, ndata, err, sizeof err);
    if (!st || train_load_store(&d, st, &lo, err, sizeof err) != 0) {
        fprintf(stderr, "stagecraft train: %s\n", err);
        rc = TOOL_INPUT;
        goto done;
    }
    /* where the samples came from, for the messages */
    char from[1024];
    snprintf(from, sizeof from, "%s", db ? db : data[0]);
    for (int k = 1; k < ndata; k++) {
        size_t at = strlen(from);
        snprintf(from + at, sizeof from - at, " + %s", data[k]);
    }
    for (int k = 0; k < nhold; k++)
        if (hold_pipes[k] == 0) {
            /* a misspelt app would otherwise be trained on, silently */
            char apps[1024];
            data_apps(&d, hold, hold_pipes, nhold, apps, sizeof apps);
            fprintf(stderr, "stagecraft train: --hold-out '%s': no pipeline of that app in %s (its apps: %s)\n",
                    hold[k], from, apps[0] ? apps : "none");
            rc = TOOL_USAGE;
            goto done;
        }
    int npipelines, ngroups;
    train_count_groups(&d, &npipelines, &ngroups);
    printf("loaded %d samples of %d pipelines (%d groups of one code generation and device) from %s (device %s)\n",
           d.nsamples, npipelines, ngroups, from, device ? device : d.device[0] ? d.device : "mixed");
    printf("rejected: %lld with absurd features, %lld with absurd times, %lld unreadable, %lld timed against a "
           "cold reference, %lld measured before the reduction order changed, %lld of CPU code with register "
           "staging, %lld of code with loops rolled that are unrolled now, %lld of code dividing by powers of two with a "
           "helper, %lld of code reading private arrays otherwise, %lld of CPU OpenCL code with interior blocks in a "
           "branch, %lld of CPU OpenCL code calling fmin or fmax, %lld of code with a scan's reduction inside its tile, "
           "%lld of code calling pow for a square, %lld of code reading more than three threaded loops from a flat "
           "index, %lld of CPU OpenCL code indexing rows by a sum, %lld of CPU OpenCL code selecting between loads, "
           "%lld of CPU OpenCL code with a small kernel's narrow guarded store beside its interior, "
           "%lld of OpenCL code reading a private array at a block's coordinate, "
           "%lld of code whose interior a guard's conjuncts now decide otherwise, "
           "%lld of OpenCL code reading a private array through a guarded min, "
           "%lld of code with loops rolled that generation 24 unrolls, "
           "%lld of OpenCL code reading a private array at an index computed from data, "
           "%lld of code older than generation %lld; "
           "held out: %lld; kept: %lld of CPU OpenCL code indexing rows by a sum at the edges only, %lld of code "
           "converting f32 to integers through branches, "
           "%lld timed on code that changed since (--keep-changed)\n",
           (long long)d.rejected_features, (long long)d.rejected_time, (long long)d.rejected_input,
           (long long)d.rejected_cold, (long long)d.rejected_order, (long long)d.rejected_staged,
           (long long)d.rejected_unrolled, (long long)d.rejected_division, (long long)d.rejected_private,
           (long long)d.rejected_interior, (long long)d.rejected_minmax, (long long)d.rejected_scan,
           (long long)d.rejected_square, (long long)d.rejected_merged, (long long)d.rejected_rows_apart,
           (long long)d.rejected_pointer_selects, (long long)d.rejected_narrow_splits,
           (long long)d.rejected_private_picks, (long long)d.rejected_partial_guards,
           (long long)d.rejected_guarded_mins, (long long)d.rejected_longer_unrolls,
           (long long)d.rejected_data_picks, (long long)d.rejected_generation,
           min_generation > 1 ? min_generation : 1, (long long)d.held_out, (long long)d.kept_rows_apart,
           (long long)d.kept_conversions, (long long)d.kept_changed);
    if (d.kernel_samples || d.kernel_unmatched)
        printf("kernel times: %lld samples with each kernel's time alone (of two kernels or more); %lld whose "
               "kernels did not match their stages (left without them)\n",
               (long long)d.kernel_samples, (long long)d.kernel_unmatched);
    if (d.nsamples == 0) {
        if (device) {
            char keys[1024];
            int nk = train_store_device_keys(st, keys, sizeof keys, err, sizeof err);
            fprintf(stderr, "stagecraft train: no samples of device '%s' in %s (its devices: %s)\n", device, from,
                    nk > 0 ? keys : "none");
        } else {
            fprintf(stderr, "stagecraft train: no usable samples in %s\n", from);
        }
        rc = TOOL_INPUT;
        goto done;
    }
    if (evaluate) {
        rc = evaluate_weights(&d, m, evaluate, apps, napps, from, worst);
        goto done;
    }
    if (nheld_dirs) {
        rc = evaluate_held_out(&d, held_dirs, nheld_dirs, apps, napps, from);
        goto done;
    }
    train_split_by_hash(&d, (int)valid, (int)fold);
    train_opts o;
    train_opts_default(&o);
    o.epochs = (int)epochs;
    o.seed = (uint64_t)seed;
    o.lr = lr;
    o.anneal = anneal;
    o.weight_decay = decay;
    o.intensive = intensive;
    o.floor_quantile = floor_q;
    o.gather_floor = gather_floor;
    o.kernel_loss = kernel_loss;
    o.loss = loss;
    o.fine_tune = init != NULL;
    o.progress = true;
    o.log = stdout;
    char model_dev[NN_DEVICE_MAX];
    model_device(st, device, &d, model_dev, sizeof model_dev);
    if (neach) {
        rc = train_each(&d, &o, (const char *const *)each, neach, jobs, out, init ? m : NULL, init, model_dev, valid,
                        fold, floor_q, from);
        goto done;
    }
    train_metrics tm, vm;
    if (train_run(&d, m, &o, &tm, &vm, err, sizeof err) != 0 ||
        save_model(&d, m, &o, &vm, model_dev, init, valid, fold, out, err, sizeof err) != 0) {
        fprintf(stderr, "stagecraft train: %s\n", err);
        rc = TOOL_INPUT;
        goto done;
    }
    printf("wrote %s: %s\n", out, m->summary);
    print_floors(stdout, m, floor_q);
done:
    if (st) store_close(st);
    train_data_free(&d);
    free(m);
    for (int k = 0; k < ncopies; k++) free(copies[k]);
    free(copies);
    free(each);
    free(held_dirs);
    free(apps);
    free(hold);
    free(hold_pipes);
    free(data);
    return rc;
}

static void predict_usage(FILE *out) {
    fprintf(out,
            "usage: stagecraft predict FILE.pipe [--schedule F.sched | --strategy S [--seed N]] [--weights W[,W...]]\n"
            "\n"
            "Prints the run time the learned cost model predicts for a schedule:\n"
            "  predicted: X ms\n"
            "\n"
            "options:\n"
            "  --weights W,...   the model's weights (stagecraft train); several: the mean of\n"
            "                    their predictions (default: the shipped ones for the target,\n"
            "                    weights/pocl.weights and its siblings pocl-2.weights, ...)\n"
            "  --schedule FILE   the schedule (default: --strategy baseline)\n"
            "  --strategy S      make one instead (root, baseline, random)\n"
            "  --seed N          the random strategy's seed (default 1)\n"
            "  --target T        the GPU it is predicted for (default: host-cuda, else host-opencl,\n"
            "                    else a100)\n"
            "  --small           the pipeline's small test sizes\n"
            "  --explain         also each stage's predicted cost and its largest terms\n");
}

int tool_predict(int argc, char **argv) {
    const char *cmd = "predict", *pipe = NULL, *weights = NULL, *sched = NULL, *strategy = NULL, *tname = NULL;
    long long seed = 1;
    bool small = false, explain = false;
    int rc = TOOL_OK;
    for (int i = 1; i < argc && rc == TOOL_OK; i++) {
        const char *a = argv[i], *v;
        bool missing = false;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            predict_usage(stdout);
            return TOOL_OK;
        }
        if (!strcmp(a, "--small")) small = true;
        else if (!strcmp(a, "--explain")) explain = true;
        else if ((v = opt_value(argc, argv, &i, "--weights", &missing))) weights = v;
        else if ((v = opt_value(argc, argv, &i, "--schedule", &missing))) sched = v;
        else if ((v = opt_value(argc, argv, &i, "--strategy", &missing))) strategy = v;
        else if ((v = opt_value(argc, argv, &i, "--target", &missing))) tname = v;
        else if ((v = opt_value(argc, argv, &i, "--seed", &missing))) {
            if (!tool_parse_int(v, 0, (long long)1 << 62, &seed))
                rc = tool_usage_error(cmd, "--seed: expected a number >= 0, got '%s'", v);
        } else if (missing) rc = tool_usage_error(cmd, "option %s needs a value", a);
        else if (a[0] == '-') rc = tool_usage_error(cmd, "unknown option '%s'", a);
        else if (pipe) rc = tool_usage_error(cmd, "one pipeline at a time ('%s' and '%s')", pipe, a);
        else pipe = a;
    }
    if (rc == TOOL_OK) {
        if (!pipe) rc = tool_usage_error(cmd, "no pipeline file given");
        else if (sched && strategy) rc = tool_usage_error(cmd, "--schedule and --strategy are exclusive");
        else if (strategy && !space_strategy_by_name(strategy)) {
            char names[256];
            rc = tool_usage_error(cmd, "--strategy: '%s' is not one of %s", strategy,
                                  space_strategy_names(names, sizeof names, ", ", ", "));
        }
    }
    if (rc != TOOL_OK) return rc;

    char err[2048], used[PATH_MAX + 64];
    driver_state d;
    sc_parse_options po = { small, 0, NULL, NULL };
    if (driver_load(&d, pipe, &po, stderr) != 0) {
        driver_free(&d);
        return TOOL_INPUT;
    }
    driver_sched_opts so = { .schedule_path = sched, .strategy = strategy, .seed = (uint64_t)seed, .target = tname,
                             .unroll_whole = SPACE_UNROLL_WHOLE_BY_TARGET };
    feat_result r = { 0 };
    nn_model *models[SPACE_MAX_WEIGHTS];
    int nm = 0;
    if (driver_schedule(&d, &so, stderr) != 0) rc = TOOL_INPUT;
    else if ((nm = space_load_weights_list(weights, "the prediction", &d.t, models, used, sizeof used, err, sizeof err)) < 0) {
        fprintf(stderr, "stagecraft predict: %s\n", err);
        nm = 0;
        rc = TOOL_INPUT;
    } else if (feat_compute(d.p, d.b, d.s, &d.t, &r, err, sizeof err) != 0) {
        fprintf(stderr, "stagecraft predict: %s\n", err);
        rc = TOOL_INPUT;
    }
    const nn_model *m = nm ? models[0] : NULL;
    if (rc == TOOL_OK) {
        cost_model *cm = cost_learned_mean_new((const nn_model *const *)models, nm, &d.t);
        const feat_result *fr = &r;
        double ms = NAN;
        if (cost_predict(cm, 1, &fr, &ms, err, sizeof err) != 0) {
            fprintf(stderr, "stagecraft predict: %s\n", err);
            rc = TOOL_INPUT;
        } else {
            printf("predicted: %.6g ms\n", ms);
            if (nm > 1) printf("weights: %s (the mean of %d models; the first: device %s; %s)\n", used, nm,
                               m->device[0] ? m->device : "unknown", m->summary);
            else printf("weights: %s (device %s; %s)\n", used, m->device[0] ? m->device : "unknown", m->summary);
            printf("target: %s, %d stages featurized\n", d.t.name, r.n);
            if (explain && search_explain(stdout, d.p, d.b, d.s, &d.t, (const nn_model *const *)models, nm, err,
                                          sizeof err) != 0) {
                fprintf(stderr, "stagecraft predict: %s\n", err);
                rc = TOOL_INPUT;
            }
            /* a CUDA target predicted with weights trained on no GPU's
             * samples: said, not hidden */
            if (d.t.cuda_arch[0] && !space_weights_from_cuda(m))
                printf("note: %s is a CUDA GPU and these weights were trained on another device (%s); the "
                       "prediction uses %s's own figures in the features (SM count, limits, occupancy)\n",
                       d.t.name, m->device[0] ? m->device : "unknown", d.t.name);
        }
        cost_free(cm);
    }
    feat_free(&r);
    driver_free(&d);
    for (int k = 0; k < nm; k++) free(models[k]);
    return rc;
}
