/*
 * train.c - the dataset, the loss, the metrics and the epoch loop of the
 * learned cost model (train.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base.h"
#include "train.h"

/* ---- the dataset ---- */

void train_data_init(train_data *d) { memset(d, 0, sizeof *d); }

void train_data_free(train_data *d) {
    for (int i = 0; i < d->npipes; i++) {
        free(d->pipes[i].name);
        free(d->pipes[i].source);
        free(d->pipes[i].hash);
    }
    free(d->pipes);
    free(d->samples);
    free(d->row_algo);
    free(d->sched);
    free(d->terms);
    free(d->algo);
    free(d->algo_pipe);
    free(d->row_kernel);
    free(d->kern_share);
    for (int k = 0; d->kern_name && k < d->nkern; k++) free(d->kern_name[k]);
    free(d->kern_name);
    train_data_init(d);
}

static char *train_strdup(const char *s) {
    size_t n = strlen(s ? s : "") + 1;
    char *c = base_calloc(n, 1);
    memcpy(c, s ? s : "", n);
    return c;
}

/* Room for `need` items of `size` bytes in *p, capacity *cap. */
static void train_grow(void **p, int *cap, int need, size_t size) {
    if (need <= *cap) return;
    int c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    *p = base_realloc(*p, size * (size_t)c);
    *cap = c;
}

char *train_pipes_with_samples(const train_data *d) {
    char *has = calloc((size_t)d->npipes + 1, 1);
    if (!has) abort();
    for (int i = 0; i < d->nsamples; i++) has[d->samples[i].pipe] = 1;
    return has;
}

void train_count_groups(const train_data *d, int *pipelines, int *groups) {
    char *has = train_pipes_with_samples(d);
    *pipelines = *groups = 0;
    const char *last = NULL;
    for (int i = 0; i < d->npipes; i++) {
        if (!has[i]) continue;
        ++*groups;
        if (!last || strcmp(last, d->pipes[i].hash)) ++*pipelines;
        last = d->pipes[i].hash;
    }
    free(has);
}

int train_data_pipeline(train_data *d, const char *name, const char *source, const char *hash) {
    train_grow((void **)&d->pipes, &d->capp, d->npipes + 1, sizeof *d->pipes);
    train_pipe *p = &d->pipes[d->npipes];
    p->name = train_strdup(name);
    p->source = train_strdup(source);
    p->hash = train_strdup(hash);
    p->role = TRAIN_ROLE_TRAIN;
    return d->npipes++;
}

static bool train_sane(double x) { return isfinite(x) && x >= 0 && x <= TRAIN_ABSURD; }

/* The index of pipeline pipe's algorithm vector a, added if new (a
 * pipeline has a few dozen stages: a linear search back over its own). */
static int train_algo_index(train_data *d, int pipe, const double *a) {
    for (int i = d->nalgo - 1; i >= 0; i--)
        if (d->algo_pipe[i] == pipe && !memcmp(d->algo + (size_t)i * NN_ALGO_IN, a, sizeof(double) * NN_ALGO_IN))
            return i;
    int cap = d->capa;
    train_grow((void **)&d->algo, &d->capa, d->nalgo + 1, sizeof(double) * NN_ALGO_IN);
    d->capa = cap;
    train_grow((void **)&d->algo_pipe, &d->capa, d->nalgo + 1, sizeof(int));
    memcpy(d->algo + (size_t)d->nalgo * NN_ALGO_IN, a, sizeof(double) * NN_ALGO_IN);
    d->algo_pipe[d->nalgo] = pipe;
    return d->nalgo++;
}

int train_data_add(train_data *d, int pipe, const feat_result *r, const target *t, double ms) {
    if (!isfinite(ms) || ms <= 0 || ms > TRAIN_MAX_MS) {
        d->rejected_time++;
        return 0;
    }
    if (r->n == 0) {
        d->rejected_features++;
        return 0;
    }
    for (int i = 0; i < r->n; i++)
        for (int k = 0; k < FEAT_COUNT; k++)
            if (!train_sane(r->rows[i].v[k])) {
                d->rejected_features++;
                return 0;
            }
    int need = d->nrows + r->n, cap = d->capr;
    train_grow((void **)&d->row_algo, &d->capr, need, sizeof(int));
    d->capr = cap;
    train_grow((void **)&d->sched, &d->capr, need, sizeof(double) * NN_SCHED_IN);
    d->capr = cap;
    train_grow((void **)&d->terms, &d->capr, need, sizeof(double) * NN_COEF);
    d->capr = cap;
    train_grow((void **)&d->row_kernel, &d->capr, need, sizeof(int));
    for (int i = 0; i < r->n; i++) {
        int row = d->nrows + i;
        d->row_kernel[row] = -1;
        d->row_algo[row] = train_algo_index(d, pipe, r->rows[i].v);
        nn_sched_inputs(r->rows[i].v, d->sched + (size_t)row * NN_SCHED_IN);
        cost_terms(r->rows[i].v, t, d->terms + (size_t)row * NN_COEF);
    }
    train_grow((void **)&d->samples, &d->caps, d->nsamples + 1, sizeof *d->samples);
    d->samples[d->nsamples++] = (train_sample){ pipe, ms, d->nrows, r->n, 0, 0 };
    d->nrows = need;
    return 1;
}

int train_data_add_kernels(train_data *d, const int *row_kernel, const double *ms, int nk) {
    return train_data_add_named_kernels(d, row_kernel, ms, NULL, nk);
}

int train_data_add_named_kernels(train_data *d, const int *row_kernel, const double *ms, const char *const *names,
                                 int nk) {
    if (d->nsamples == 0 || nk < 2) return 0;
    if (nk > TRAIN_MAX_KERNELS) {
        d->kernel_unmatched++;
        return 0;
    }
    train_sample *sm = &d->samples[d->nsamples - 1];
    double sum = 0;
    bool ok = true;
    int *rows_of = base_calloc((size_t)nk, sizeof(int));
    for (int k = 0; k < nk; k++) {
        ok = ok && isfinite(ms[k]) && ms[k] > 0;
        sum += ms[k];
    }
    for (int i = 0; ok && i < sm->nrows; i++) {
        ok = row_kernel[i] >= 0 && row_kernel[i] < nk;
        if (ok) rows_of[row_kernel[i]]++;
    }
    for (int k = 0; ok && k < nk; k++) ok = rows_of[k] > 0;
    free(rows_of);
    if (!ok || !(sum > 0)) {
        d->kernel_unmatched++;
        return 0;
    }
    int cap = d->capk;
    train_grow((void **)&d->kern_share, &cap, d->nkern + nk, sizeof(double));
    cap = d->capk;
    train_grow((void **)&d->kern_name, &cap, d->nkern + nk, sizeof(char *));
    d->capk = cap;
    for (int k = 0; k < nk; k++) d->kern_name[d->nkern + k] = names && names[k] ? train_strdup(names[k]) : NULL;
    sm->kern0 = d->nkern;
    sm->nkern = nk;
    for (int k = 0; k < nk; k++) d->kern_share[d->nkern + k] = ms[k] / sum;
    for (int i = 0; i < sm->nrows; i++) d->row_kernel[sm->row0 + i] = row_kernel[i];
    d->nkern += nk;
    d->kernel_samples++;
    return 1;
}

static uint64_t train_fnv(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

int train_fold_start(int percent, int fold) { return (int)(((int64_t)(fold > 0 ? fold : 0) * percent) % 100); }

void train_split_by_hash(train_data *d, int percent, int fold) {
    int start = train_fold_start(percent, fold);
    for (int i = 0; i < d->npipes; i++) {
        train_pipe *p = &d->pipes[i];
        if (p->role == TRAIN_ROLE_SKIP) continue;
        uint64_t h = train_fnv(p->hash[0] ? p->hash : p->name);
        int at = ((int)(h % 100) - start + 100) % 100;
        p->role = at < percent ? TRAIN_ROLE_VALID : TRAIN_ROLE_TRAIN;
    }
}

int train_set_role_of_apps(train_data *d, int n, const char *const *names, train_role r) {
    int hits = 0;
    for (int i = 0; i < d->npipes; i++) {
        const char *s = d->pipes[i].source;
        if (strncmp(s, "app:", 4)) continue;
        for (int k = 0; k < n; k++)
            if (!strcmp(s + 4, names[k])) {
                d->pipes[i].role = r;
                hits++;
            }
    }
    return hits;
}

/* ---- the loss ---- */

/* The rows of some samples, copied side by side for nn_forward. */
typedef struct {
    nn_rows r;
    const double **algo;
    double *sched, *terms, *cost, *dcost;
    nn_tape tape;
} train_scratch;

static void train_gather(const train_data *d, const int *idx, int n, train_scratch *s) {
    int rows = 0;
    for (int i = 0; i < n; i++) rows += d->samples[idx[i]].nrows;
    s->algo = base_calloc((size_t)rows, sizeof *s->algo);
    s->sched = base_calloc((size_t)rows * NN_SCHED_IN, sizeof(double));
    s->terms = base_calloc((size_t)rows * NN_COEF, sizeof(double));
    s->cost = base_calloc((size_t)rows, sizeof(double));
    s->dcost = base_calloc((size_t)rows, sizeof(double));
    int at = 0;
    for (int i = 0; i < n; i++) {
        const train_sample *sm = &d->samples[idx[i]];
        for (int k = 0; k < sm->nrows; k++, at++) {
            int row = sm->row0 + k;
            s->algo[at] = d->algo + (size_t)d->row_algo[row] * NN_ALGO_IN;
        }
        memcpy(s->sched + (size_t)(at - sm->nrows) * NN_SCHED_IN, d->sched + (size_t)sm->row0 * NN_SCHED_IN,
               sizeof(double) * NN_SCHED_IN * (size_t)sm->nrows);
        memcpy(s->terms + (size_t)(at - sm->nrows) * NN_COEF, d->terms + (size_t)sm->row0 * NN_COEF,
               sizeof(double) * NN_COEF * (size_t)sm->nrows);
    }
    s->r = (nn_rows){ rows, s->algo, s->sched, s->terms };
    nn_tape_init(&s->tape);
}

static void train_scratch_free(train_scratch *s) {
    free(s->algo);
    free(s->sched);
    free(s->terms);
    free(s->cost);
    free(s->dcost);
    nn_tape_free(&s->tape);
}

/* Adams et al. 2019: with the batch's fastest time as reference, the
 * squared difference of predicted and measured relative throughput,
 * (ms_ref / pred - ms_ref / ms)^2, averaged over the batch.  With
 * TRAIN_LOSS_RANK, also the pairwise logistic loss on log predictions,
 * log(1 + exp(log pred_i - log pred_j)) over the pairs whose measured
 * times differ by more than 1% (i the faster), averaged over the pairs. */
double train_kernel_divergence(const train_data *d, const train_sample *sm, const double *cost, double w,
                               double *dcost) {
    if (sm->nkern < 2) return 0;
    double kc[TRAIN_MAX_KERNELS], total = 0;
    int nk = sm->nkern;               /* at most TRAIN_MAX_KERNELS: train_data_add_named_kernels */
    for (int k = 0; k < nk; k++) kc[k] = 0;
    for (int i = 0; i < sm->nrows; i++) {
        kc[d->row_kernel[sm->row0 + i]] += cost[i];
        total += cost[i];
    }
    if (!(total > 0)) return 0;
    /* a kernel predicted at nothing is taken at a millionth of the total:
     * its share's log stays finite, and it gets no gradient there */
    double floor = 1e-6 * total, loss = 0, live = 0;
    const double *share = d->kern_share + sm->kern0;
    for (int k = 0; k < nk; k++) {
        double c = kc[k] > floor ? kc[k] : floor;
        loss += share[k] * log(share[k] * total / c);
        /* d/dc_k of -m_k log(c_k / total), k not clamped: -m_k / c_k, and
         * m_k / total through the total, for every row */
        live += kc[k] > floor ? share[k] : 0;
        kc[k] = kc[k] > floor ? -share[k] / c : 0;
    }
    if (dcost)
        for (int i = 0; i < sm->nrows; i++) dcost[i] += w * (kc[d->row_kernel[sm->row0 + i]] + live / total);
    return loss;
}

double train_batch_loss(const train_data *d, const nn_model *m, const int *idx, int n, double reg,
                        train_loss kind, double kernel_loss, double *grad) {
    if (n <= 0) return 0;
    train_scratch s;
    train_gather(d, idx, n, &s);
    nn_forward(m, &s.r, &s.tape, s.cost);
    double ref = INFINITY;
    for (int i = 0; i < n; i++) ref = fmin(ref, d->samples[idx[i]].ms);
    double scale = exp(m->w[NN_OFF_SCALE]), loss = 0, dscale = 0;
    double *pred = base_calloc((size_t)n, sizeof(double)), *dpred = base_calloc((size_t)n, sizeof(double));
    int at = 0;
    for (int i = 0; i < n; i++) {
        const train_sample *sm = &d->samples[idx[i]];
        double sum = 0;
        for (int k = 0; k < sm->nrows; k++) sum += s.cost[at + k];
        at += sm->nrows;
        pred[i] = scale * sum;
        double p = pred[i] / ref, r = sm->ms / ref;
        double diff = 1.0 / (p > 1e-10 ? p : 1e-10) - 1.0 / r;
        loss += diff * diff / n;
        dpred[i] = p > 1e-10 ? 2.0 * diff * (-1.0 / (p * p)) / ref / n : 0;
    }
    if (kind == TRAIN_LOSS_RANK) {
        int pairs = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) pairs += d->samples[idx[i]].ms * 1.01 < d->samples[idx[j]].ms;
        for (int i = 0; pairs && i < n; i++)
            for (int j = 0; j < n; j++) {
                if (!(d->samples[idx[i]].ms * 1.01 < d->samples[idx[j]].ms)) continue;
                double pi = fmax(pred[i], 1e-30), pj = fmax(pred[j], 1e-30), x = log(pi) - log(pj);
                loss += (x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))) / pairs;
                double sg = 1.0 / (1.0 + exp(-x)) / pairs;
                if (pred[i] > 1e-30) dpred[i] += sg / pi;
                if (pred[j] > 1e-30) dpred[j] -= sg / pj;
            }
    }
    /* d pred / d log_scale: the rows at the instruction floor take no part */
    at = 0;
    for (int i = 0; i < n; i++) {
        const train_sample *sm = &d->samples[idx[i]];
        double scaled = 0;
        for (int k = 0; k < sm->nrows; k++) {
            s.dcost[at + k] = dpred[i] * scale;
            if (!s.tape.floored[at + k]) scaled += s.cost[at + k];
        }
        dscale += dpred[i] * scale * scaled;
        /* the shares depend on the scale through the rows on a floor
         * only (their cost is the floor's over the scale) */
        if (kernel_loss > 0 && sm->nkern > 1) {
            double *dk = base_calloc((size_t)sm->nrows, sizeof(double));
            loss += kernel_loss / n * train_kernel_divergence(d, sm, s.cost + at, kernel_loss / n, dk);
            for (int k = 0; k < sm->nrows; k++) {
                s.dcost[at + k] += dk[k];
                if (s.tape.floored[at + k]) dscale -= dk[k] * s.cost[at + k];
            }
            free(dk);
        }
        at += sm->nrows;
    }
    loss += reg / n * nn_reg_value(&s.tape, s.r.n);
    if (grad) {
        nn_backward(m, &s.r, &s.tape, s.dcost, reg / n, grad);
        grad[NN_OFF_SCALE] += dscale;
    }
    free(pred);
    free(dpred);
    train_scratch_free(&s);
    return loss;
}

/* ---- metrics ---- */

typedef struct {
    double v;
    int i;
} train_ranked;

static int train_cmp_ranked(const void *a, const void *b) {
    const train_ranked *x = a, *y = b;
    return x->v < y->v ? -1 : x->v > y->v ? 1 : x->i - y->i;
}

/* Ranks 1..n, ties given their mean rank. */
static void train_ranks(int n, const double *v, double *rank) {
    train_ranked *r = base_calloc((size_t)n, sizeof *r);
    for (int i = 0; i < n; i++) r[i] = (train_ranked){ v[i], i };
    qsort(r, (size_t)n, sizeof *r, train_cmp_ranked);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && r[j + 1].v == r[i].v) j++;
        for (int k = i; k <= j; k++) rank[r[k].i] = 0.5 * (i + j) + 1;
        i = j + 1;
    }
    free(r);
}

void train_rank_of(int n, const double *pred, const double *ms, train_rank *out) {
    memset(out, 0, sizeof *out);
    out->rho = NAN;
    out->best_ms = out->min_ms = NAN;
    if (n <= 0) return;
    int best = 0, fastest = 0;
    for (int i = 0; i < n; i++) {
        if (pred[i] < pred[best]) best = i;
        if (ms[i] < ms[fastest]) fastest = i;
        for (int j = i + 1; j < n; j++) {
            if (ms[i] == ms[j]) continue;
            out->pairs++;
            bool right = (pred[i] - pred[j]) * (ms[i] - ms[j]) > 0;
            out->correct += right;
            if (fmax(ms[i], ms[j]) > TRAIN_APART * fmin(ms[i], ms[j])) {
                out->pairs_apart++;
                out->correct_apart += right;
            }
        }
    }
    out->best_ms = ms[best];
    out->min_ms = ms[fastest];
    if (n < 2) return;
    double *rp = base_calloc((size_t)n, sizeof(double)), *rm = base_calloc((size_t)n, sizeof(double));
    train_ranks(n, pred, rp);
    train_ranks(n, ms, rm);
    double mean = 0.5 * (n + 1), sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < n; i++) {
        sxy += (rp[i] - mean) * (rm[i] - mean);
        sxx += (rp[i] - mean) * (rp[i] - mean);
        syy += (rm[i] - mean) * (rm[i] - mean);
    }
    out->rho = sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0;
    free(rp);
    free(rm);
}

/* One sample's rows forwarded: their costs in *cost (grown as needed). */
static void train_sample_costs(const train_data *d, const nn_model *m, const train_sample *sm, nn_tape *t,
                               double **cost, int *capc) {
    const double *algo[256];
    const double **ap = sm->nrows <= 256 ? algo : base_calloc((size_t)sm->nrows, sizeof *ap);
    for (int k = 0; k < sm->nrows; k++) ap[k] = d->algo + (size_t)d->row_algo[sm->row0 + k] * NN_ALGO_IN;
    nn_rows r = { sm->nrows, ap, d->sched + (size_t)sm->row0 * NN_SCHED_IN, d->terms + (size_t)sm->row0 * NN_COEF };
    train_grow((void **)cost, capc, sm->nrows, sizeof(double));
    nn_forward(m, &r, t, *cost);
    if (ap != algo) free(ap);
}

void train_predict_all(const train_data *d, const nn_model *m, double *pred) {
    double scale = exp(m->w[NN_OFF_SCALE]);
    nn_tape t;
    nn_tape_init(&t);
    double *cost = NULL;
    int capc = 0;
    for (int i = 0; i < d->nsamples; i++) {
        const train_sample *sm = &d->samples[i];
        train_sample_costs(d, m, sm, &t, &cost, &capc);
        double sum = 0;
        for (int k = 0; k < sm->nrows; k++) sum += cost[k];
        pred[i] = scale * sum;
    }
    free(cost);
    nn_tape_free(&t);
}

/* The per-kernel loss (train_kernel_divergence) of each sample of role r
 * with kernel times in div[i] (NAN for the others); their count. */
static int train_kernel_divergences(const train_data *d, const nn_model *m, train_role role, double *div) {
    nn_tape t;
    nn_tape_init(&t);
    double *cost = NULL;
    int capc = 0, n = 0;
    for (int i = 0; i < d->nsamples; i++) {
        const train_sample *sm = &d->samples[i];
        div[i] = NAN;
        if (sm->nkern < 2 || d->pipes[sm->pipe].role != role) continue;
        train_sample_costs(d, m, sm, &t, &cost, &capc);
        div[i] = train_kernel_divergence(d, sm, cost, 0, NULL);
        n++;
    }
    free(cost);
    nn_tape_free(&t);
    return n;
}

int train_worst_kernels(const train_data *d, const nn_model *m, train_role role, int n, train_kernel_miss *out) {
    nn_tape t;
    nn_tape_init(&t);
    double *cost = NULL, kc[TRAIN_MAX_KERNELS];
    int capc = 0, got = 0;
    for (int i = 0; i < d->nsamples && n > 0; i++) {
        const train_sample *sm = &d->samples[i];
        if (sm->nkern < 2 || d->pipes[sm->pipe].role != role) continue;
        train_sample_costs(d, m, sm, &t, &cost, &capc);
        double total = 0;
        for (int k = 0; k < sm->nkern; k++) kc[k] = 0;
        for (int r = 0; r < sm->nrows; r++) {
            kc[d->row_kernel[sm->row0 + r]] += cost[r];
            total += cost[r];
        }
        if (!(total > 0)) continue;
        for (int k = 0; k < sm->nkern; k++) {
            double mk = d->kern_share[sm->kern0 + k], q = fmax(kc[k], 1e-6 * total) / total;
            train_kernel_miss x = { i, k, mk, q, mk * log(mk / q) };
            if (got == n && x.term <= out[got - 1].term) continue;
            int at = got < n ? got++ : n - 1;
            while (at > 0 && out[at - 1].term < x.term) {
                out[at] = out[at - 1];
                at--;
            }
            out[at] = x;
        }
    }
    free(cost);
    nn_tape_free(&t);
    return got;
}

/* The samples of each pipeline, in sample order: order[start[p] ..
 * start[p + 1]). */
static void train_by_pipe(const train_data *d, int **order, int **start) {
    int *st = base_calloc((size_t)d->npipes + 1, sizeof(int)), *o = base_calloc((size_t)d->nsamples, sizeof(int));
    for (int i = 0; i < d->nsamples; i++) st[d->samples[i].pipe + 1]++;
    for (int p = 0; p < d->npipes; p++) st[p + 1] += st[p];
    int *fill = base_calloc((size_t)d->npipes, sizeof(int));
    for (int i = 0; i < d->nsamples; i++) {
        int p = d->samples[i].pipe;
        o[st[p] + fill[p]++] = i;
    }
    free(fill);
    *order = o;
    *start = st;
}

train_metrics train_evaluate_pipes(const train_data *d, const nn_model *m, train_role role, train_pipe_metrics *each) {
    train_metrics out = { 0 };
    double *pred = base_calloc((size_t)d->nsamples + 1, sizeof(double));
    train_predict_all(d, m, pred);
    int *order, *start;
    train_by_pipe(d, &order, &start);
    int64_t pairs = 0, correct = 0;
    double rho_sum = 0, rho_w = 0, loss = 0;
    for (int p = 0; p < d->npipes; p++) {
        int n = start[p + 1] - start[p];
        if (each) each[p] = (train_pipe_metrics){ 0, NAN, NAN, NAN, 0, NAN };
        if (d->pipes[p].role != role || n == 0) continue;
        const int *idx = order + start[p];
        out.pipelines++;
        out.samples += n;
        for (int b = 0; b < n; b += TRAIN_BATCH) {
            int k = n - b < TRAIN_BATCH ? n - b : TRAIN_BATCH;
            loss += k * train_batch_loss(d, m, idx + b, k, 0, TRAIN_LOSS_THROUGHPUT, 0, NULL);
        }
        double *pp = base_calloc((size_t)n, sizeof(double)), *mm = base_calloc((size_t)n, sizeof(double));
        for (int i = 0; i < n; i++) {
            pp[i] = pred[idx[i]];
            mm[i] = d->samples[idx[i]].ms;
        }
        train_rank rk;
        train_rank_of(n, pp, mm, &rk);
        pairs += rk.pairs;
        correct += rk.correct;
        if (n >= 3 && isfinite(rk.rho)) {
            rho_sum += rk.rho * n;
            rho_w += n;
        }
        if (each)
            each[p] = (train_pipe_metrics){ n, rk.pairs ? (double)rk.correct / (double)rk.pairs : NAN,
                                            n >= 3 ? rk.rho : NAN, rk.min_ms > 0 ? rk.best_ms / rk.min_ms : NAN,
                                            0, NAN };
        free(pp);
        free(mm);
    }
    out.loss = out.samples ? loss / out.samples : NAN;
    /* the per-kernel loss: over all, and per pipeline */
    double *div = base_calloc((size_t)d->nsamples + 1, sizeof(double)), dsum = 0;
    out.kernel_samples = train_kernel_divergences(d, m, role, div);
    for (int i = 0; i < d->nsamples; i++) {
        if (isnan(div[i])) continue;
        dsum += div[i];
        if (!each) continue;
        train_pipe_metrics *e = &each[d->samples[i].pipe];
        e->kernel_divergence = e->kernel_samples ? e->kernel_divergence + div[i] : div[i];
        e->kernel_samples++;
    }
    for (int p = 0; each && p < d->npipes; p++)
        if (each[p].kernel_samples) each[p].kernel_divergence /= each[p].kernel_samples;
    out.kernel_divergence = out.kernel_samples ? dsum / out.kernel_samples : NAN;
    free(div);
    out.pairwise = pairs ? (double)correct / (double)pairs : NAN;
    out.rho = rho_w > 0 ? rho_sum / rho_w : NAN;
    free(order);
    free(start);
    free(pred);
    return out;
}

train_metrics train_evaluate(const train_data *d, const nn_model *m, train_role role) {
    return train_evaluate_pipes(d, m, role, NULL);
}

/* ---- training ---- */

void train_opts_default(train_opts *o) {
    memset(o, 0, sizeof *o);
    o->epochs = 50;
    o->seed = 1;
    o->lr = 1e-3;
    o->anneal = 0.2;
    o->reg = 1e-5;
    o->weight_decay = 0;
    o->batch = TRAIN_BATCH;
    o->loss = TRAIN_LOSS_RANK;        /* ranks measured samples better (docs/costmodel.md) */
    o->floor_quantile = TRAIN_FLOOR_QUANTILE;
    o->gather_floor = false;          /* train --gather-floor (docs/costmodel.md) */
}

void train_neighbour_predict(const train_data *d, int w, double *pred) {
    double *v = base_calloc((size_t)(2 * (w > 0 ? w : 0)) + 1, sizeof(double));
    for (int i = 0; i < d->nsamples; i++) {
        int pipe = d->samples[i].pipe, n = 0;
        for (int j = i - 1, k = 0; j >= 0 && k < w; j--) {
            if (d->samples[j].pipe != pipe) continue;
            v[n++] = log(d->samples[j].ms);
            k++;
        }
        for (int j = i + 1, k = 0; j < d->nsamples && k < w; j++) {
            if (d->samples[j].pipe != pipe) continue;
            v[n++] = log(d->samples[j].ms);
            k++;
        }
        if (n == 0) {
            pred[i] = 0;
            continue;
        }
        pred[i] = exp(base_median(v, n));
    }
    free(v);
}

void train_calibrate(const train_data *d, nn_model *m) {
    double sum[NN_COEF] = { 0 };
    int64_t cnt[NN_COEF] = { 0 };
    for (int i = 0; i < d->nsamples; i++) {
        const train_sample *sm = &d->samples[i];
        if (d->pipes[sm->pipe].role != TRAIN_ROLE_TRAIN) continue;
        for (int r = sm->row0; r < sm->row0 + sm->nrows; r++)
            for (int k = 0; k < NN_COEF; k++) {
                double t = d->terms[(size_t)r * NN_COEF + k];
                if (t > 0) {
                    sum[k] += t;
                    cnt[k]++;
                }
            }
    }
    for (int k = 0; k < NN_COEF; k++) m->term_scale[k] = cnt[k] && sum[k] > 0 ? (double)cnt[k] / sum[k] : 1.0;
    /* The schedule inputs are all >= 0 and far from centred, so with
     * random weights a unit's pre-activation is shifted by W2 mean(s):
     * about half the units would start dead on every row.  Their biases
     * start where the mean training row puts them at 0.1. */
    double mean[NN_SCHED_IN] = { 0 };
    int64_t rows = 0;
    for (int i = 0; i < d->nsamples; i++) {
        const train_sample *sm = &d->samples[i];
        if (d->pipes[sm->pipe].role != TRAIN_ROLE_TRAIN) continue;
        for (int r = sm->row0; r < sm->row0 + sm->nrows; r++, rows++)
            for (int q = 0; q < NN_SCHED_IN; q++) mean[q] += d->sched[(size_t)r * NN_SCHED_IN + q];
    }
    for (int j = 0; rows && j < NN_H2; j++) {
        double b = 0.1;
        for (int q = 0; q < NN_SCHED_IN; q++) b -= m->w[NN_OFF_W2 + q * NN_H2 + j] * mean[q] / (double)rows;
        m->w[NN_OFF_B2 + j] = b;
    }
    m->w[NN_OFF_SCALE] = 0;
    double *pred = base_calloc((size_t)d->nsamples + 1, sizeof(double));
    double *ratio = base_calloc((size_t)d->nsamples + 1, sizeof(double));
    train_predict_all(d, m, pred);
    int n = 0;
    for (int i = 0; i < d->nsamples; i++)
        if (d->pipes[d->samples[i].pipe].role == TRAIN_ROLE_TRAIN && pred[i] > 0)
            ratio[n++] = d->samples[i].ms / pred[i];
    if (n) {
        qsort(ratio, (size_t)n, sizeof(double), base_cmp_double);
        m->w[NN_OFF_SCALE] = log(ratio[n / 2]);
    }
    free(pred);
    free(ratio);
}

/* ms per unit of work at quantile q of the training samples' rates, the
 * work of a sample being work(terms) summed over its stages; samples
 * without such work take no part.  0 without samples. */
static double train_rate_floor(const train_data *d, double q_share, double (*work)(const double *terms)) {
    double *rate = base_calloc((size_t)d->nsamples + 1, sizeof(double));
    int n = 0;
    for (int i = 0; i < d->nsamples; i++) {
        const train_sample *sm = &d->samples[i];
        if (d->pipes[sm->pipe].role != TRAIN_ROLE_TRAIN) continue;
        double units = 0;
        for (int r = sm->row0; r < sm->row0 + sm->nrows; r++) units += work(d->terms + (size_t)r * NN_COEF);
        if (units > 0) rate[n++] = units / sm->ms;
    }
    double floor_ms = 0;
    if (n) {
        qsort(rate, (size_t)n, sizeof(double), base_cmp_double);
        int q = (int)ceil(q_share * n) - 1;
        floor_ms = 1.0 / rate[q < 0 ? 0 : q];
    }
    free(rate);
    return floor_ms;
}

double train_instruction_floor(const train_data *d, double q_share) {
    return train_rate_floor(d, q_share, nn_instructions);
}

double train_gather_floor(const train_data *d, double q_share) { return train_rate_floor(d, q_share, nn_gathers); }

/* Adam's step in epoch e (1-based): lr, then over the last `anneal` of
 * the epochs falling linearly to lr / 20 in the last one, so that the
 * weights written settle instead of being one draw of the noise of a
 * constant step (the validation figures move by several points from one
 * epoch to the next without it: docs/costmodel.md). */
double train_step_size(const train_opts *o, int e) {
    double tail = o->anneal * o->epochs;
    if (!(tail >= 1) || e <= o->epochs - tail) return o->lr;
    double f = (o->epochs - e) / tail;            /* 1 where the tail starts .. 0 in the last epoch */
    return o->lr * (0.05 + 0.95 * f);
}

static uint64_t train_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void train_shuffle(int *v, int n, uint64_t *s) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(train_rand(s) % (uint64_t)(i + 1));
        int t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

typedef struct {
    int *idx;
    int n;
} train_batch;

static void train_bar(int epoch, int epochs, int done, int total) {
    int w = 30, fill = total ? w * done / total : w;
    fprintf(stderr, "\repoch %d/%d [", epoch, epochs);
    for (int i = 0; i < w; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %d/%d batches", done, total);
    fflush(stderr);
}

int train_run(const train_data *d, nn_model *m, const train_opts *o, train_metrics *train_out,
              train_metrics *valid_out, char *err, size_t errlen) {
    int *order, *start;
    train_by_pipe(d, &order, &start);
    int ntrain = 0, nvalid = 0;
    for (int p = 0; p < d->npipes; p++) {
        int n = start[p + 1] - start[p];
        if (d->pipes[p].role == TRAIN_ROLE_TRAIN) ntrain += n;
        if (d->pipes[p].role == TRAIN_ROLE_VALID) nvalid += n;
    }
    if (ntrain == 0) {
        free(order);
        free(start);
        return base_fail(err, errlen, "no training samples (%d samples in all, %d of validation pipelines)",
                         d->nsamples, nvalid);
    }
    double floor_ms = train_instruction_floor(d, o->floor_quantile);
    /* the gather floor: asked for, or kept (and lowered) by fine-tuning */
    bool gathers = o->fine_tune ? m->gather_floor_ms > 0 : o->gather_floor;
    double gather_ms = gathers ? train_gather_floor(d, o->floor_quantile) : 0;
    /* fine-tuning keeps weights trained with intensive inputs so */
    bool intensive = o->intensive || (o->fine_tune && !nn_uses_extensive_inputs(m));
    if (!o->fine_tune) {
        nn_init(m, o->seed);
        if (intensive) nn_drop_extensive_inputs(m);
        train_calibrate(d, m);
        m->floor_ms = floor_ms;
        m->gather_floor_ms = gather_ms;
    } else {
        /* a floor is lowered where the new samples ran faster, never added */
        if (floor_ms > 0 && m->floor_ms > floor_ms) m->floor_ms = floor_ms;
        if (gather_ms > 0 && m->gather_floor_ms > gather_ms) m->gather_floor_ms = gather_ms;
    }
    int bsize = o->batch > 0 && o->batch <= TRAIN_BATCH ? o->batch : TRAIN_BATCH;
    nn_adam *adam = base_calloc(1, sizeof *adam);
    nn_adam_init(adam);
    double *grad = base_calloc(NN_NPARAMS, sizeof(double));
    uint64_t rng = o->seed * 0x9e3779b97f4a7c15ull + 77;
    train_batch *batches = base_calloc((size_t)ntrain, sizeof *batches);
    int *perm = base_calloc((size_t)ntrain, sizeof(int));
    bool bar = o->progress && isatty(fileno(stderr));
    int rc = 0;
    train_metrics tm = { 0 }, vm = { 0 };
    for (int e = 1; e <= o->epochs && rc == 0; e++) {
        /* minibatches: each pipeline's samples shuffled and cut in
         * pieces of bsize; the pieces in a shuffled order */
        int nb = 0, at = 0;
        for (int p = 0; p < d->npipes; p++) {
            int n = start[p + 1] - start[p];
            if (d->pipes[p].role != TRAIN_ROLE_TRAIN || n == 0) continue;
            int *mine = perm + at;
            memcpy(mine, order + start[p], sizeof(int) * (size_t)n);
            train_shuffle(mine, n, &rng);
            for (int b = 0; b < n; b += bsize) batches[nb++] = (train_batch){ mine + b, n - b < bsize ? n - b : bsize };
            at += n;
        }
        for (int i = nb - 1; i > 0; i--) {
            int j = (int)(train_rand(&rng) % (uint64_t)(i + 1));
            train_batch t = batches[i];
            batches[i] = batches[j];
            batches[j] = t;
        }
        double loss = 0, lr = train_step_size(o, e);
        for (int b = 0; b < nb; b++) {
            memset(grad, 0, sizeof(double) * NN_NPARAMS);
            loss += batches[b].n * train_batch_loss(d, m, batches[b].idx, batches[b].n, o->reg, o->loss, o->kernel_loss, grad);
            nn_adam_step(m, adam, grad, lr);
            nn_decay_weights(m, lr * o->weight_decay);
            if (intensive) nn_drop_extensive_inputs(m);
            if (bar && (b % 8 == 0 || b == nb - 1)) train_bar(e, o->epochs, b + 1, nb);
        }
        if (bar) fprintf(stderr, "\r\033[K");
        loss /= ntrain;
        if (!isfinite(loss)) {
            rc = base_fail(err, errlen, "training diverged at epoch %d (loss %g)", e, loss);
            break;
        }
        bool last = e == o->epochs;
        if (nvalid) vm = train_evaluate(d, m, TRAIN_ROLE_VALID);
        if (!nvalid || last) tm = train_evaluate(d, m, TRAIN_ROLE_TRAIN);
        if (o->log) {
            const train_metrics *rk = nvalid ? &vm : &tm;
            fprintf(o->log, "epoch %d/%d  train loss %.5g", e, o->epochs, loss);
            if (nvalid) fprintf(o->log, "  val loss %.5g", vm.loss);
            fprintf(o->log, "  %s pairwise %.4f  rho %.4f", nvalid ? "val" : "train", rk->pairwise, rk->rho);
            if (rk->kernel_samples)
                fprintf(o->log, "  kernel divergence %.4f (%d samples)", rk->kernel_divergence, rk->kernel_samples);
            fprintf(o->log, "\n");
            fflush(o->log);
        }
    }
    if (train_out) *train_out = tm;
    if (valid_out) *valid_out = vm;
    free(batches);
    free(perm);
    free(grad);
    free(adam);
    free(order);
    free(start);
    return rc;
}

void train_summary(const train_data *d, const train_opts *o, const train_metrics *valid, char *buf, size_t len) {
    int tp = 0, vp = 0, ts = 0, vs = 0;
    for (int i = 0; i < d->nsamples; i++) {
        train_role r = d->pipes[d->samples[i].pipe].role;
        ts += r == TRAIN_ROLE_TRAIN;
        vs += r == TRAIN_ROLE_VALID;
    }
    char *has = train_pipes_with_samples(d);
    for (int p = 0; p < d->npipes; p++) {
        tp += has[p] && d->pipes[p].role == TRAIN_ROLE_TRAIN;
        vp += has[p] && d->pipes[p].role == TRAIN_ROLE_VALID;
    }
    free(has);
    int n = snprintf(buf, len, "%d samples of %d groups trained, %d samples of %d validation; %d epochs, seed %llu",
                     ts, tp, vs, vp, o->epochs, (unsigned long long)o->seed);
    if (o->intensive && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ", intensive schedule inputs");
    if (valid && valid->samples && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "; validation pairwise %.4f rho %.4f", valid->pairwise, valid->rho);
}

/* ---- the least-squares baseline ---- */

/* Per sample, the sum over its rows of each term. */
static void train_sample_terms(const train_data *d, int i, double *x) {
    const train_sample *sm = &d->samples[i];
    for (int k = 0; k < NN_COEF; k++) x[k] = 0;
    for (int r = sm->row0; r < sm->row0 + sm->nrows; r++)
        for (int k = 0; k < NN_COEF; k++) x[k] += d->terms[(size_t)r * NN_COEF + k];
}

int train_lsq_fit(const train_data *d, double *coef) {
    enum { K = NN_COEF };
    double A[K][K] = { { 0 } }, b[K] = { 0 }, norm[K] = { 0 }, x[K];
    int n = 0;
    /* minimize sum_i (sum_k c_k x_ik / ms_i - 1)^2: columns scaled by
     * their root mean square first, for the conditioning */
    for (int i = 0; i < d->nsamples; i++) {
        if (d->pipes[d->samples[i].pipe].role != TRAIN_ROLE_TRAIN) continue;
        train_sample_terms(d, i, x);
        for (int k = 0; k < K; k++) norm[k] += (x[k] / d->samples[i].ms) * (x[k] / d->samples[i].ms);
        n++;
    }
    if (n == 0) return -1;
    for (int k = 0; k < K; k++) norm[k] = norm[k] > 0 ? sqrt(norm[k] / n) : 0;
    for (int i = 0; i < d->nsamples; i++) {
        if (d->pipes[d->samples[i].pipe].role != TRAIN_ROLE_TRAIN) continue;
        train_sample_terms(d, i, x);
        for (int k = 0; k < K; k++) x[k] = norm[k] > 0 ? x[k] / d->samples[i].ms / norm[k] : 0;
        for (int j = 0; j < K; j++) {
            b[j] += x[j];
            for (int k = 0; k < K; k++) A[j][k] += x[j] * x[k];
        }
    }
    for (int k = 0; k < K; k++) A[k][k] += 1e-6 * n + (norm[k] > 0 ? 0 : 1);
    /* Gaussian elimination with partial pivoting */
    for (int c = 0; c < K; c++) {
        int piv = c;
        for (int r = c + 1; r < K; r++)
            if (fabs(A[r][c]) > fabs(A[piv][c])) piv = r;
        if (piv != c) {
            for (int k = 0; k < K; k++) {
                double t = A[c][k];
                A[c][k] = A[piv][k];
                A[piv][k] = t;
            }
            double t = b[c];
            b[c] = b[piv];
            b[piv] = t;
        }
        for (int r = c + 1; r < K; r++) {
            double f = A[r][c] / A[c][c];
            for (int k = c; k < K; k++) A[r][k] -= f * A[c][k];
            b[r] -= f * b[c];
        }
    }
    for (int c = K - 1; c >= 0; c--) {
        double s = b[c];
        for (int k = c + 1; k < K; k++) s -= A[c][k] * coef[k];
        coef[c] = s / A[c][c];
    }
    for (int k = 0; k < K; k++) coef[k] = norm[k] > 0 ? coef[k] / norm[k] : 0;
    return 0;
}

void train_lsq_predict(const train_data *d, const double *coef, double *pred) {
    double x[NN_COEF];
    for (int i = 0; i < d->nsamples; i++) {
        train_sample_terms(d, i, x);
        double s = 0;
        for (int k = 0; k < NN_COEF; k++) s += coef[k] * x[k];
        pred[i] = s;
    }
}
