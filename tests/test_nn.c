/*
 * test_nn.c - the learned cost model: the network's gradient against
 * finite differences on every parameter, learning a synthetic target,
 * determinism in the seed, the weights file (round trip and every kind of
 * bad file), the cost-model plug-in agreeing with the training code, and
 * the memo of row parts (cost_predict_memo) giving cost_predict's
 * predictions bit for bit on the states of random walks over apps, from
 * rows that point into the feature cache (feat_compute_refs) equal to
 * the copied ones.
 * Data: random schedules of small pipelines, featurized for a100, with
 * times made up from a known formula of their cost terms.  Seconds.
 *
 * Run from the repository root (targets/).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "check.h"
#include "fixtures.h"
#include "costmodel.h"
#include "space.h"
#include "train.h"

static target A100;

#include "train_pipes.h"

/* The made-up truth: a few terms with fixed weights (ms), per row. */
static double synthetic_row_ms(const feat_row *row) {
    double T[NN_COEF];
    cost_terms(row->v, &A100, T);
    return 2e-6 * T[1] + 5e-6 * T[28] + 4e-3 * T[24] + 1e-6 * T[13] + 2e-3 * T[25];
}

static double synthetic_ms(const feat_result *r) {
    double ms = 0;
    for (int i = 0; i < r->n; i++) ms += synthetic_row_ms(&r->rows[i]);
    return ms + 1e-3;
}

/* The same truth per kernel (its rows', by kernel_func and kernel_stage),
 * attached to the sample added last; whether it was (one kernel: not). */
static int synthetic_kernels(train_data *d, const feat_result *r) {
    int kern[256], nk = 0, func[256], stage[256];
    double ms[256];
    for (int i = 0; i < r->n && i < 256; i++) {
        int k = 0;
        while (k < nk && !(func[k] == r->rows[i].kernel_func && stage[k] == r->rows[i].kernel_stage)) k++;
        if (k == nk) {
            func[k] = r->rows[i].kernel_func;
            stage[k] = r->rows[i].kernel_stage;
            ms[k] = 1e-4;
            nk++;
        }
        ms[k] += synthetic_row_ms(&r->rows[i]);
        kern[i] = k;
    }
    return r->n <= 256 ? train_data_add_kernels(d, kern, ms, nk) : 0;
}

/* nsched random schedules of every pipeline (seeds 1..nsched).  With
 * keep, the feature results of the first pipeline are kept (keep[i]). */
static void synthetic(train_data *d, int nsched, feat_result *keep) {
    train_data_init(d);
    char err[1024];
    for (int p = 0; p < NPIPES; p++) {
        fixture fx = fixture_load(PIPES[p]);
        char name[32];
        snprintf(name, sizeof name, "p%d", p);
        int pi = train_data_pipeline(d, name, p == 2 ? "app:blur" : "random:test", name);
        space_opts so = { &A100, true, false };
        for (int s = 1; s <= nsched; s++) {
            sched_state *st = space_random(fx.a, fx.p, fx.b, &so, (uint64_t)s, err, sizeof err);
            feat_result r = { 0 };
            bool ok = st && feat_compute(fx.p, fx.b, st, &A100, &r, err, sizeof err) == 0;
            if (!ok) fprintf(stderr, "  %s\n", err);
            CHECK(ok);
            if (!ok) continue;
            CHECK(train_data_add(d, pi, &r, &A100, synthetic_ms(&r)) == 1);
            synthetic_kernels(d, &r);
            if (keep && p == 0) keep[s - 1] = r;
            else feat_free(&r);
        }
        fixture_unload(&fx);
    }
}

/* Features before NN_ALGO_IN are the algorithm's, the rest the schedule's. */
static void test_layout(void) {
    for (int i = 0; i < FEAT_COUNT; i++) CHECK(feat_kind_of(i) == (i < NN_ALGO_IN ? FEAT_ALGO : FEAT_SCHED));
    CHECK(NN_NPARAMS > 4000 && NN_NPARAMS < 6000);
    CHECK(nn_layout_hash() == nn_layout_hash());
    /* the terms read the features they name */
    train_data d;
    feat_result keep[2];
    synthetic(&d, 2, keep);
    double T[NN_COEF];
    const double *v = keep[0].rows[0].v;
    cost_terms(v, &A100, T);
    CHECK(T[24] == v[FEAT_AT(FEAT_num_realizations)]);
    CHECK(T[9] == v[FEAT_AT(FEAT_working_set_at_thread)]);
    CHECK(T[12] == 0 && T[14] == 0 && T[15] == 0 && T[23] == 0);
    /* the gathers: the points computed (not num_scalars: guarded iterations
     * do no work) x vector_gathers_per_point x term 1's wastage
     * (T[1] / num_scalars) */
    double executed = T[1] / v[FEAT_AT(FEAT_num_scalars)] * v[FEAT_AT(FEAT_points_computed_total)];
    CHECK(fabs(T[10] - executed * v[FEAT_AT(FEAT_vector_gathers_per_point)]) <= 1e-9 * fmax(1.0, T[10]));
    /* the instruction terms: the points computed x the per-point
     * histogram's arithmetic (casts included) and loads, times the same
     * wastage */
    double arith = 0, loads = 0;
    for (int ty = 0; ty < SC_TYPE_COUNT; ty++) {
        arith += v[FEAT_OP(OPS_CAST, ty)];
        for (int k = OPS_ADD; k <= OPS_MATH; k++) arith += v[FEAT_OP(k, ty)];
        for (int k = OPS_LOAD_INPUT; k <= OPS_LOAD_SELF; k++) loads += v[FEAT_OP(k, ty)];
    }
    double ns = v[FEAT_AT(FEAT_num_scalars)];
    CHECK(arith > 0 && loads > 0 && ns > 0 && v[FEAT_AT(FEAT_inlined_calls)] == 0);
    CHECK(fabs(T[30] - executed * arith) <= 1e-9 * T[30] && fabs(T[31] - executed * loads) <= 1e-9 * T[31]);
    CHECK(cost_term_name(30) && cost_term_name(31));
    CHECK(cost_term_name(1) && cost_term_name(10) && !cost_term_name(12));
    for (int i = 0; i < 2; i++) feat_free(&keep[i]);
    train_data_free(&d);
}

/* The rows of samples 0 .. n-1 of d: their network cost (no floor) over
 * their instructions (terms 30 + 31), in rate[], scaled to ms; the count. */
static int row_rates(const train_data *d, const nn_model *m, int n, double *rate) {
    nn_model bare = *m;
    bare.floor_ms = bare.gather_floor_ms = 0;
    int rows = d->samples[n - 1].row0 + d->samples[n - 1].nrows, k = 0;
    const double **algo = calloc((size_t)rows, sizeof *algo);
    double *cost = calloc((size_t)rows, sizeof(double));
    for (int r = 0; r < rows; r++) algo[r] = d->algo + (size_t)d->row_algo[r] * NN_ALGO_IN;
    nn_rows nr = { rows, algo, d->sched, d->terms };
    nn_forward(&bare, &nr, NULL, cost);
    for (int r = 0; r < rows; r++) {
        double instr = nn_instructions(d->terms + (size_t)r * NN_COEF);
        if (instr > 0) rate[k++] = cost[r] * exp(m->w[NN_OFF_SCALE]) / instr;
    }
    free(algo);
    free(cost);
    return k;
}

/* A floor between the rows' own rates: about half the rows land on it,
 * at the widest gap between neighbouring rates in the middle half (rows
 * of equal rate would put the floor on their kink, where the central
 * differences of the gradient check straddle it). */
static void floor_half_the_rows(const train_data *d, nn_model *m, int n) {
    double rate[512];
    int k = row_rates(d, m, n, rate);
    qsort(rate, (size_t)k, sizeof(double), base_cmp_double);
    int at = k / 2;
    for (int j = k / 4 + 1; j <= 3 * k / 4; j++)
        if (rate[j] / rate[j - 1] > rate[at] / rate[at - 1]) at = j;
    m->floor_ms = sqrt(rate[at - 1] * rate[at]);
}

/* The hand-written backward pass against central differences of the
 * minibatch loss, on every parameter (regularizer included: some
 * coefficients are pushed below zero first); with a floor, about half the
 * rows on it. */
static void gradient_check(train_loss kind, bool floored, double kl) {
    train_data d;
    synthetic(&d, 3, NULL);
    nn_model *m = calloc(1, sizeof *m);
    nn_init(m, 7);
    train_calibrate(&d, m);
    for (int k = 0; k < NN_COEF; k += 5) m->w[NN_OFF_B3 + k] = -0.4;
    m->w[NN_OFF_SCALE] += 0.3;                      /* off the fitted scale: a larger gradient */
    if (floored) floor_half_the_rows(&d, m, 6);
    int idx[] = { 0, 1, 2, 3, 4, 5 };               /* p0's 3 and p1's 3 samples: two pipelines */
    double reg = 1e-2;
    double *g = calloc(NN_NPARAMS, sizeof(double));
    double l0 = train_batch_loss(&d, m, idx, 3, reg, kind, kl, g);
    train_batch_loss(&d, m, idx + 3, 3, reg, kind, kl, g);
    CHECK(isfinite(l0) && l0 > 0);
    int bad = 0, nonzero = 0;
    double worst = 0;
    for (int i = 0; i < NN_NPARAMS; i++) {
        double w = m->w[i], h = 1e-6 * fmax(1.0, fabs(w));
        m->w[i] = w + h;
        double up = train_batch_loss(&d, m, idx, 3, reg, kind, kl, NULL) + train_batch_loss(&d, m, idx + 3, 3, reg, kind, kl, NULL);
        m->w[i] = w - h;
        double dn = train_batch_loss(&d, m, idx, 3, reg, kind, kl, NULL) + train_batch_loss(&d, m, idx + 3, 3, reg, kind, kl, NULL);
        m->w[i] = w;
        double num = (up - dn) / (2 * h), e = fabs(num - g[i]) / fmax(1e-4, fabs(num) + fabs(g[i]));
        nonzero += g[i] != 0;
        if (e > worst) worst = e;
        if (e > 1e-4) {
            if (bad < 5) fprintf(stderr, "  parameter %d: analytic %.9g, numeric %.9g\n", i, g[i], num);
            bad++;
        }
    }
    int with_kernels = 0;
    for (int i = 0; i < 6; i++) with_kernels += d.samples[i].nkern > 1;
    printf("  gradient (%s loss%s%s): %d parameters, %d nonzero, worst relative error %.2g\n",
           kind == TRAIN_LOSS_RANK ? "rank" : "throughput", floored ? ", half the rows on the floor" : "",
           kl > 0 ? ", the per-kernel loss" : "", NN_NPARAMS, nonzero, worst);
    if (kl > 0) {
        /* the per-kernel loss has something to check: samples with
         * kernels, and a loss that differs from the one without it */
        CHECK(with_kernels >= 2);
        CHECK(train_batch_loss(&d, m, idx, 3, reg, kind, kl, NULL) > train_batch_loss(&d, m, idx, 3, reg, kind, 0, NULL));
    }
    CHECK(bad == 0);
    /* every slice takes part */
    int slices[] = { NN_OFF_W1, NN_OFF_B1, NN_OFF_W2, NN_OFF_B2, NN_OFF_W3, NN_OFF_B3, NN_OFF_SCALE, NN_NPARAMS };
    for (int s = 0; s + 1 < (int)(sizeof slices / sizeof slices[0]); s++) {
        double n = 0;
        for (int i = slices[s]; i < slices[s + 1]; i++) n += fabs(g[i]);
        CHECK(n > 0);
    }
    free(g);
    free(m);
    train_data_free(&d);
}

static void test_gradient(void) { gradient_check(TRAIN_LOSS_THROUGHPUT, false, 0); }
static void test_gradient_rank(void) { gradient_check(TRAIN_LOSS_RANK, false, 0); }
static void test_gradient_floor(void) { gradient_check(TRAIN_LOSS_RANK, true, 0); }
static void test_gradient_kernels(void) { gradient_check(TRAIN_LOSS_RANK, true, 0.5); }

/* Checks a floor trained on d (floor_ms per unit of work(terms)) against
 * the samples' times and the predictions pred: the floor alone predicts
 * none of the samples slower than measured and one exactly, and no
 * prediction is below it.  The number of samples with work. */
static int check_floor_bounds(const train_data *d, const double *pred, double (*work)(const double *terms),
                              double floor_ms) {
    int over = 0, exact = 0, under = 0, with = 0;
    for (int i = 0; i < d->nsamples; i++) {
        const train_sample *sm = &d->samples[i];
        double units = 0;
        for (int r = sm->row0; r < sm->row0 + sm->nrows; r++) units += work(d->terms + (size_t)r * NN_COEF);
        with += units > 0;
        double fl = units * floor_ms;
        over += fl > sm->ms * (1 + 1e-12);
        exact += units > 0 && fabs(fl - sm->ms) <= 1e-12 * sm->ms;
        under += pred[i] < fl * (1 - 1e-12);
    }
    CHECK(over == 0 && exact >= 1 && under == 0);
    return with;
}

/* Fine-tuning m on d for an epoch lowers the floor at byte offset field
 * of the model (from far above) to want, what d's samples need, and keeps
 * none where m had none (older weights). */
static void check_fine_tuned_floor(const train_data *d, const nn_model *m, size_t field, double want) {
    train_opts o;
    train_opts_default(&o);
    o.fine_tune = true;
    o.epochs = 1;
    char err[256];
    nn_model *f = calloc(1, sizeof *f);
    *f = *m;
    double *fl = (double *)((char *)f + field);
    *fl = 1e9;
    CHECK(train_run(d, f, &o, NULL, NULL, err, sizeof err) == 0 && *fl == want);
    *f = *m;
    *fl = 0;
    CHECK(train_run(d, f, &o, NULL, NULL, err, sizeof err) == 0 && *fl == 0);
    free(f);
}

/* The instruction floor: training takes it from its samples, so that the
 * floor alone predicts none of them (fewer than a thousand) slower than
 * measured and one exactly; every prediction is at least the floor, also
 * for a stage whose work is multiplied far past anything trained on. */
static void test_instruction_floor(void) {
    train_data d;
    synthetic(&d, 20, NULL);
    nn_model *m = calloc(1, sizeof *m);
    train_opts o;
    train_opts_default(&o);
    o.epochs = 3;
    char err[256];
    CHECK(train_run(&d, m, &o, NULL, NULL, err, sizeof err) == 0);
    CHECK(m->floor_ms > 0 && m->floor_ms == train_instruction_floor(&d, TRAIN_FLOOR_QUANTILE));
    double *pred = calloc((size_t)d.nsamples, sizeof(double));
    train_predict_all(&d, m, pred);
    check_floor_bounds(&d, pred, nn_instructions, m->floor_ms);
    /* one row's arithmetic and loads times 1000: the row costs at least
     * the floor of that work, and more than before */
    const train_sample *s0 = &d.samples[0];
    double *terms = d.terms + (size_t)s0->row0 * NN_COEF, before = pred[0];
    terms[30] *= 1000, terms[31] *= 1000;
    train_predict_all(&d, m, pred);
    CHECK(pred[0] >= nn_instructions(terms) * m->floor_ms * (1 - 1e-12) && pred[0] > before);
    /* fine-tuning lowers the floor to what its own samples need, never
     * raises it; weights of format version 1 keep none */
    check_fine_tuned_floor(&d, m, offsetof(nn_model, floor_ms), train_instruction_floor(&d, TRAIN_FLOOR_QUANTILE));
    free(pred);
    free(m);
    train_data_free(&d);
}

/* The gather floor: with gathers put in some rows' term 10, training
 * takes the floor from the samples that gather (none predicted slower
 * than measured by it alone, one exactly); a row whose gathers are
 * multiplied costs at least their floor, and the tape says which floor;
 * --no-gather-floor trains none; fine-tuning only lowers it. */
static void test_gather_floor(void) {
    train_data d;
    synthetic(&d, 20, NULL);
    int rows = d.samples[d.nsamples - 1].row0 + d.samples[d.nsamples - 1].nrows;
    for (int r = 0; r < rows; r++) {
        double *t = d.terms + (size_t)r * NN_COEF;
        t[NN_TERM_GATHERS] = t[1] * (r % 3);
    }
    nn_model *m = calloc(1, sizeof *m);
    train_opts o;
    train_opts_default(&o);
    CHECK(!o.gather_floor);                         /* off unless asked for */
    o.epochs = 3;
    o.gather_floor = true;
    char err[256];
    CHECK(train_run(&d, m, &o, NULL, NULL, err, sizeof err) == 0);
    CHECK(m->gather_floor_ms > 0 && m->gather_floor_ms == train_gather_floor(&d, TRAIN_FLOOR_QUANTILE));
    CHECK(m->floor_ms == train_instruction_floor(&d, TRAIN_FLOOR_QUANTILE));
    double *pred = calloc((size_t)d.nsamples, sizeof(double));
    train_predict_all(&d, m, pred);
    CHECK(check_floor_bounds(&d, pred, nn_gathers, m->gather_floor_ms) > 10);
    /* one gathering row's gathers times 1e6: it costs at least their floor */
    int row = -1;
    for (int r = 0; r < rows && row < 0; r++)
        if (nn_gathers(d.terms + (size_t)r * NN_COEF) > 0) row = r;
    int s0 = 0;
    while (d.samples[s0].row0 + d.samples[s0].nrows <= row) s0++;
    double *terms = d.terms + (size_t)row * NN_COEF, before = pred[s0];
    terms[NN_TERM_GATHERS] *= 1e6;
    train_predict_all(&d, m, pred);
    CHECK(pred[s0] >= nn_gathers(terms) * m->gather_floor_ms * (1 - 1e-12) && pred[s0] > before);
    const double *algo[1] = { d.algo + (size_t)d.row_algo[row] * NN_ALGO_IN };
    nn_rows one = { 1, algo, d.sched + (size_t)row * NN_SCHED_IN, terms };
    nn_tape tape;
    nn_tape_init(&tape);
    nn_tape_reserve(&tape, 1);
    double cost;
    nn_forward(m, &one, &tape, &cost);
    CHECK(tape.floored[0] == NN_FLOOR_GATHERS);
    CHECK(fabs(cost * exp(m->w[NN_OFF_SCALE]) - nn_gathers(terms) * m->gather_floor_ms) <= 1e-9 * cost * exp(m->w[NN_OFF_SCALE]));
    nn_tape_free(&tape);
    terms[NN_TERM_GATHERS] /= 1e6;
    /* without the option: no gather floor */
    nn_model *f = calloc(1, sizeof *f);
    o.gather_floor = false;
    CHECK(train_run(&d, f, &o, NULL, NULL, err, sizeof err) == 0 && f->gather_floor_ms == 0 && f->floor_ms > 0);
    free(f);
    /* fine-tuning lowers the gather floor; weights of format version 2 keep none */
    check_fine_tuned_floor(&d, m, offsetof(nn_model, gather_floor_ms), train_gather_floor(&d, TRAIN_FLOOR_QUANTILE));
    free(pred);
    free(m);
    train_data_free(&d);
}

/* Training on the synthetic times: the loss falls well below where it
 * starts (to under a third; 0.142 to 0.042 with terms version 9) and the
 * ranking is nearly right. */
static void test_learns(void) {
    train_data d;
    synthetic(&d, 40, NULL);
    CHECK(d.nsamples == 3 * 40);
    nn_model *m = calloc(1, sizeof *m);
    nn_init(m, 3);
    train_calibrate(&d, m);
    train_metrics before = train_evaluate(&d, m, TRAIN_ROLE_TRAIN);
    train_opts o;
    train_opts_default(&o);
    o.epochs = 60;
    o.lr = 3e-3;
    o.seed = 3;
    train_metrics after, valid;
    char err[256];
    CHECK(train_run(&d, m, &o, &after, &valid, err, sizeof err) == 0);
    printf("  synthetic: loss %.4g -> %.4g, pairwise %.3f -> %.3f, rho %.3f -> %.3f\n", before.loss, after.loss,
           before.pairwise, after.pairwise, before.rho, after.rho);
    CHECK(after.loss < 0.35 * before.loss);
    CHECK(after.loss < 0.05);
    CHECK(after.pairwise > 0.9);
    CHECK(after.pairwise > before.pairwise);
    CHECK(after.rho > 0.8);           /* chain's times tie often: rho is lower */
    free(m);
    train_data_free(&d);
}

/* The per-kernel loss: the synthetic truth per kernel attached to the
 * samples of more than one kernel; trained with it, the predicted shares
 * of the kernels come closer to the measured ones than trained without
 * it, and than untrained, and the pipelines' ranking is not lost. */
static void test_learns_kernels(void) {
    train_data d;
    synthetic(&d, 40, NULL);
    CHECK(d.kernel_samples >= 20 && d.kernel_unmatched == 0);
    train_metrics before, with, without, valid;
    char err[256];
    double kl[2] = { 0, 10 };
    for (int i = 0; i < 2; i++) {
        nn_model *m = calloc(1, sizeof *m);
        nn_init(m, 3);
        train_calibrate(&d, m);
        if (i == 0) before = train_evaluate(&d, m, TRAIN_ROLE_TRAIN);
        train_opts o;
        train_opts_default(&o);
        o.epochs = 60;
        o.lr = 3e-3;
        o.seed = 3;
        o.kernel_loss = kl[i];
        CHECK(train_run(&d, m, &o, i ? &with : &without, &valid, err, sizeof err) == 0);
        free(m);
    }
    printf("  synthetic kernels (%d samples): divergence %.4f untrained, %.4f without the loss, %.4f with it; "
           "pairwise %.3f, %.3f\n", before.kernel_samples, before.kernel_divergence, without.kernel_divergence,
           with.kernel_divergence, without.pairwise, with.pairwise);
    CHECK(before.kernel_samples == (int)d.kernel_samples);
    CHECK(with.kernel_divergence < 0.5 * without.kernel_divergence);
    CHECK(with.kernel_divergence < 0.5 * before.kernel_divergence);
    CHECK(with.pairwise > 0.9);
    train_data_free(&d);
}

/* Intensive inputs: the extensive schedule inputs are the totals (21 of
 * them, num_blocks and points_computed_total among them, not
 * points_computed_per_thread); trained with o.intensive their W2 rows stay
 * zero and the model still learns the synthetic data; fine-tuning such
 * weights keeps them zero without being asked; a model trained without
 * uses them. */
static void test_intensive(void) {
    int n = 0;
    for (int k = 0; k < NN_SCHED_IN; k++) n += nn_sched_input_extensive(k);
    CHECK(n == 21);
    CHECK(nn_sched_input_extensive(FEAT_AT(FEAT_num_blocks) - NN_ALGO_IN));
    CHECK(nn_sched_input_extensive(FEAT_AT(FEAT_points_computed_total) - NN_ALGO_IN));
    CHECK(!nn_sched_input_extensive(FEAT_AT(FEAT_points_computed_per_thread) - NN_ALGO_IN));
    CHECK(!nn_sched_input_extensive(FEAT_AT(FEAT_num_threads_per_block) - NN_ALGO_IN));
    train_data d;
    synthetic(&d, 20, NULL);
    nn_model *m = calloc(1, sizeof *m);
    train_opts o;
    train_opts_default(&o);
    o.epochs = 30;
    o.lr = 3e-3;
    o.seed = 3;
    o.intensive = true;
    train_metrics tm;
    char err[256];
    CHECK(train_run(&d, m, &o, &tm, NULL, err, sizeof err) == 0);
    CHECK(!nn_uses_extensive_inputs(m) && tm.pairwise > 0.8);
    char summary[NN_SUMMARY_MAX];
    train_summary(&d, &o, NULL, summary, sizeof summary);
    CHECK(strstr(summary, "intensive schedule inputs") != NULL);
    o.intensive = false;
    o.fine_tune = true;
    o.epochs = 5;
    CHECK(train_run(&d, m, &o, NULL, NULL, err, sizeof err) == 0);
    CHECK(!nn_uses_extensive_inputs(m));
    o.fine_tune = false;
    CHECK(train_run(&d, m, &o, NULL, NULL, err, sizeof err) == 0);
    CHECK(nn_uses_extensive_inputs(m));
    free(m);
    train_data_free(&d);
}

/* The step: constant, then over the last fifth of the epochs falling
 * linearly to a twentieth in the last one; constant with anneal 0. */
static void test_step_size(void) {
    train_opts o;
    train_opts_default(&o);
    o.epochs = 100;
    o.lr = 2e-3;
    CHECK(o.anneal == 0.2);
    CHECK(train_step_size(&o, 1) == o.lr && train_step_size(&o, 80) == o.lr);
    CHECK(train_step_size(&o, 81) < o.lr && fabs(train_step_size(&o, 100) - o.lr / 20) < 1e-15);
    bool falling = true;
    for (int e = 81; e <= 100; e++) falling &= train_step_size(&o, e) < train_step_size(&o, e - 1);
    CHECK(falling);
    o.anneal = 0;
    CHECK(train_step_size(&o, 100) == o.lr);
    o.anneal = 0.2;
    o.epochs = 3;                                   /* a tail of under one epoch: none */
    CHECK(train_step_size(&o, 3) == o.lr);
}

/* Weight decay multiplies the three layers' weights by 1 - f and leaves
 * their biases and the log scale; in training it pulls the weights
 * towards 0: a run with decay ends with a smaller weight norm than the
 * same run without, and still learns the synthetic data. */
static void test_weight_decay(void) {
    nn_model *m = calloc(1, sizeof *m), *k = calloc(1, sizeof *k);
    nn_init(m, 5);
    *k = *m;
    nn_decay_weights(m, 0.25);
    bool layers = true, rest = true;
    for (int i = 0; i < NN_NPARAMS; i++) {
        bool w = (i >= NN_OFF_W1 && i < NN_OFF_B1) || (i >= NN_OFF_W2 && i < NN_OFF_B2) ||
                 (i >= NN_OFF_W3 && i < NN_OFF_B3);
        if (w) layers &= m->w[i] == k->w[i] * 0.75;
        else rest &= m->w[i] == k->w[i];
    }
    CHECK(layers && rest);
    *m = *k;
    nn_decay_weights(m, 0);                         /* no decay: unchanged */
    CHECK(!memcmp(m->w, k->w, sizeof m->w));
    train_data d;
    synthetic(&d, 20, NULL);
    train_opts o;
    train_opts_default(&o);
    CHECK(o.weight_decay == 0);
    o.epochs = 30;
    o.lr = 3e-3;
    o.seed = 3;
    double norm[2];
    train_metrics tm[2];
    char err[256];
    for (int r = 0; r < 2; r++) {
        o.weight_decay = r ? 20 : 0;
        CHECK(train_run(&d, m, &o, &tm[r], NULL, err, sizeof err) == 0);
        norm[r] = 0;
        for (int i = NN_OFF_W2; i < NN_OFF_B2; i++) norm[r] += m->w[i] * m->w[i];
    }
    printf("  schedule layer's squared norm %.4g without decay, %.4g with; pairwise %.3f, %.3f\n", norm[0], norm[1],
           tm[0].pairwise, tm[1].pairwise);
    CHECK(norm[1] < 0.8 * norm[0]);
    CHECK(tm[1].pairwise > 0.8);
    free(m);
    free(k);
    train_data_free(&d);
}

static void save_or_fail(const nn_model *m, const char *path) {
    char err[512];
    if (nn_save(m, path, err, sizeof err) != 0) fprintf(stderr, "  %s\n", err);
}

static long file_bytes(const char *path, unsigned char **out) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc((size_t)n + 1);
    if (fread(*out, 1, (size_t)n, f) != (size_t)n) n = -1;
    fclose(f);
    return n;
}

static void put_bytes(const char *path, const unsigned char *p, long n) {
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, (size_t)n, f);
    fclose(f);
}

/* Same seed, same data: the same weights file, byte for byte; another
 * seed, other weights.  With validation pipelines split off by hash. */
static void test_deterministic(void) {
    train_data d;
    synthetic(&d, 12, NULL);
    const char *held[] = { "blur" };
    CHECK(train_set_role_of_apps(&d, 1, held, TRAIN_ROLE_VALID) == 1);
    train_opts o;
    train_opts_default(&o);
    o.epochs = 4;
    char err[256], path[3][64];
    nn_model *m = calloc(1, sizeof *m);
    for (int r = 0; r < 3; r++) {
        o.seed = r < 2 ? 11 : 12;
        CHECK(train_run(&d, m, &o, NULL, NULL, err, sizeof err) == 0);
        snprintf(path[r], sizeof path[r], "/tmp/test_nn_%d_%d.weights", (int)getpid(), r);
        save_or_fail(m, path[r]);
    }
    unsigned char *a, *b, *c;
    long na = file_bytes(path[0], &a), nb = file_bytes(path[1], &b), nc = file_bytes(path[2], &c);
    CHECK(na > 0 && na == nb && na == nc);
    CHECK(na > 0 && !memcmp(a, b, (size_t)na));
    CHECK(na > 0 && memcmp(a, c, (size_t)na) != 0);
    free(a);
    free(b);
    free(c);
    for (int r = 0; r < 3; r++) remove(path[r]);
    free(m);
    train_data_free(&d);
}

/* A file written and read back predicts the same; a truncated file, a
 * wrong magic, another format version, another feature layout and a
 * corrupted payload each give their own message. */
static void test_weights_file(void) {
    nn_model *m = calloc(1, sizeof *m), *r = calloc(1, sizeof *r);
    nn_init(m, 5);
    for (int k = 0; k < NN_COEF; k++) m->term_scale[k] = 1.0 / (k + 1);
    snprintf(m->device, sizeof m->device, "c:test-device");
    snprintf(m->summary, sizeof m->summary, "12 samples of 3 pipelines");
    m->floor_ms = 3.5e-9;
    m->gather_floor_ms = 2.5e-8;
    char path[64], bad[64], err[512];
    snprintf(path, sizeof path, "/tmp/test_nn_%d.weights", (int)getpid());
    snprintf(bad, sizeof bad, "/tmp/test_nn_%d_bad.weights", (int)getpid());
    CHECK(nn_save(m, path, err, sizeof err) == 0);
    CHECK(nn_load(r, path, err, sizeof err) == 0);
    CHECK(!memcmp(m->w, r->w, sizeof m->w) && !memcmp(m->term_scale, r->term_scale, sizeof m->term_scale));
    CHECK(!strcmp(r->device, "c:test-device") && !strcmp(r->summary, "12 samples of 3 pipelines"));
    CHECK(r->floor_ms == m->floor_ms && r->gather_floor_ms == m->gather_floor_ms);

    unsigned char *p;
    long n = file_bytes(path, &p);
    CHECK(n > 1000);
    put_bytes(bad, p, n / 2);
    CHECK(nn_load(r, bad, err, sizeof err) != 0 && strstr(err, "truncated"));
    put_bytes(bad, p, n - 1);
    CHECK(nn_load(r, bad, err, sizeof err) != 0 && strstr(err, "truncated"));
    p[0] ^= 1;
    put_bytes(bad, p, n);
    CHECK(nn_load(r, bad, err, sizeof err) != 0 && strstr(err, "not a stagecraft weights file"));
    p[0] ^= 1;
    p[8] ^= 4;                                      /* the version: 6 */
    put_bytes(bad, p, n);
    CHECK(nn_load(r, bad, err, sizeof err) != 0 && strstr(err, "format version"));
    p[8] ^= 4;
    /* format versions 1 and 2: no floors, or no gather floor, before the
     * checksum; they load without them */
    for (int version = 1; version <= 2; version++) {
        long keep = n - 8 - 8 * (NN_FORMAT_VERSION - version);  /* without the checksum and newer floors */
        unsigned char *old = malloc((size_t)n);
        memcpy(old, p, (size_t)keep);
        old[8] = (unsigned char)version;
        uint64_t h = 0xcbf29ce484222325ull;
        for (long i = 8; i < keep; i++) h = (h ^ old[i]) * 0x100000001b3ull;
        for (int i = 0; i < 8; i++) old[keep + i] = (unsigned char)(h >> (8 * i));
        put_bytes(bad, old, keep + 8);
        r->floor_ms = r->gather_floor_ms = 1;
        CHECK(nn_load(r, bad, err, sizeof err) == 0 && !memcmp(m->w, r->w, sizeof m->w));
        CHECK(r->floor_ms == (version >= 2 ? m->floor_ms : 0) && r->gather_floor_ms == 0);
        free(old);
    }
    /* a negative floor, each of the two: refused by name (checksum made to match) */
    for (int which = 0; which < 2; which++) {
        unsigned char *neg = malloc((size_t)n);
        memcpy(neg, p, (size_t)n);
        double nf = -1;
        memcpy(neg + n - (which ? 16 : 24), &nf, 8);
        uint64_t h = 0xcbf29ce484222325ull;
        for (long i = 8; i < n - 8; i++) h = (h ^ neg[i]) * 0x100000001b3ull;
        for (int i = 0; i < 8; i++) neg[n - 8 + i] = (unsigned char)(h >> (8 * i));
        put_bytes(bad, neg, n);
        CHECK(nn_load(r, bad, err, sizeof err) != 0 && strstr(err, which ? "gather floor" : "instruction floor"));
        free(neg);
    }
    p[24] ^= 0x40;                                  /* the layout hash */
    put_bytes(bad, p, n);
    CHECK(nn_load(r, bad, err, sizeof err) != 0 && strstr(err, "another feature layout"));
    p[24] ^= 0x40;
    p[n / 2] ^= 0x10;                               /* a parameter */
    put_bytes(bad, p, n);
    CHECK(nn_load(r, bad, err, sizeof err) != 0 && strstr(err, "checksum mismatch"));
    p[n / 2] ^= 0x10;
    put_bytes(bad, p, n);
    CHECK(nn_load(r, bad, err, sizeof err) == 0);
    CHECK(nn_load(r, "/nonexistent/x.weights", err, sizeof err) != 0 && strstr(err, "cannot open"));
    free(p);
    remove(path);
    remove(bad);
    free(m);
    free(r);
}

/* The plug-in (cached algorithm part, one state per call or many) gives
 * the training code's predictions; fine-tuning starts from given weights. */
static void test_costmodel(void) {
    enum { N = 10 };
    train_data d;
    feat_result keep[N];
    synthetic(&d, N, keep);
    nn_model *m = calloc(1, sizeof *m);
    nn_init(m, 9);
    train_calibrate(&d, m);
    floor_half_the_rows(&d, m, N);                  /* the plug-in applies it too */
    double *pred = calloc((size_t)d.nsamples, sizeof(double));
    train_predict_all(&d, m, pred);
    cost_model *cm = cost_learned_new(m, &A100);
    const feat_result *fr[N];
    for (int i = 0; i < N; i++) fr[i] = &keep[i];
    double ms[N], one;
    char err[256];
    CHECK(cost_predict(cm, N, fr, ms, err, sizeof err) == 0);
    for (int i = 0; i < N; i++) {
        CHECK(fabs(ms[i] - pred[i]) <= 1e-9 * fabs(pred[i]));
        CHECK(cost_predict(cm, 1, &fr[i], &one, err, sizeof err) == 0 && one == ms[i]);
    }
    cost_free(cm);
    /* the mean of two models is the mean of their predictions; of one
     * model, that model */
    nn_model *m2 = calloc(1, sizeof *m2);
    nn_init(m2, 10);
    train_calibrate(&d, m2);
    const nn_model *both[2] = { m, m2 };
    cost_model *c1 = cost_learned_new(m2, &A100), *cmean = cost_learned_mean_new(both, 2, &A100);
    cost_model *cone = cost_learned_mean_new(both, 1, &A100);
    double ms2[N], msm[N], ms1[N];
    CHECK(cost_predict(c1, N, fr, ms2, err, sizeof err) == 0 && cost_predict(cmean, N, fr, msm, err, sizeof err) == 0);
    CHECK(cost_predict(cone, N, fr, ms1, err, sizeof err) == 0 && !memcmp(ms1, ms, sizeof ms));
    bool mean_ok = true;
    for (int i = 0; i < N; i++) mean_ok &= fabs(msm[i] - (ms[i] + ms2[i]) / 2) <= 1e-12 * msm[i] && ms[i] != ms2[i];
    CHECK(mean_ok);
    cost_free(c1);
    cost_free(cmean);
    cost_free(cone);
    free(m2);
    /* fine-tuning moves the given weights, keeps their term scales */
    nn_model *f = calloc(1, sizeof *f);
    *f = *m;
    train_opts o;
    train_opts_default(&o);
    o.epochs = 2;
    o.fine_tune = true;
    CHECK(train_run(&d, f, &o, NULL, NULL, err, sizeof err) == 0);
    CHECK(!memcmp(f->term_scale, m->term_scale, sizeof f->term_scale));
    CHECK(memcmp(f->w, m->w, sizeof f->w) != 0);
    for (int i = 0; i < N; i++) feat_free(&keep[i]);
    free(pred);
    free(m);
    free(f);
    train_data_free(&d);
}

static int by_key(const void *a, const void *b) {
    const feat_row *x = *(const feat_row *const *)a, *y = *(const feat_row *const *)b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Every state of random walks over an app (partial ones included),
 * featurized by one feat_ctx: rows with one key are equal, and the memo
 * gives cost_predict's predictions bit for bit, batch after batch. */
static void memo_app(const char *app, cost_model *cm) {
    char path[256], err[512];
    snprintf(path, sizeof path, "apps/%s.pipe", app);
    sc_pipeline *p = sc_parse_file(path, NULL);
    bounds_result *b = sc_error_count(p) ? NULL : bounds_infer(p);
    CHECK(b != NULL);
    if (!b) return;
    space_opts o = { &A100, true, false };
    legal_ctx *x = space_legal(p, b, &o);
    nest_ctx *nx = nest_ctx_new(p, b);
    feat_ctx *fx = feat_ctx_new(p, b);
    cost_memo *memo = cost_memo_new();
    ir_arena *a = ir_arena_new();
    enum { CAP = 600 };
    feat_result *fr = calloc(CAP, sizeof *fr);
    feat_refs *refs = calloc(CAP, sizeof *refs);
    feat_ctx_hold(fx, true);                  /* the refs stay valid to the end */
    int n = 0;
    bool same = true;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        space_rng rng = { seed * 104729 };
        sched_state *s = sched_state_new(a, p);
        while (n < CAP && space_next(p, s, NULL) >= 0) {
            ir_vec ch = { 0 };
            int k = space_children(a, x, p, b, s, &o, &ch);
            if (k <= 0) break;
            /* a few siblings, so that rows repeat as in a search */
            for (int j = 0; j < 3 && n < CAP; j++) {
                const sched_state *c = ch.items[space_rand_below(&rng, k)];
                nest *model = nest_build(nx, c, err, sizeof err);
                if (model && feat_compute_ctx(fx, c, model, &A100, &fr[n], err, sizeof err) == 0) {
                    CHECK(feat_compute_refs(fx, c, model, &A100, &refs[n], err, sizeof err) == 0);
                    n++;
                }
                nest_free(model);
            }
            s = ch.items[space_rand_below(&rng, k)];
        }
    }
    /* in batches of 7, as a search's steps */
    for (int i = 0; i < n; i += 7) {
        int q = n - i < 7 ? n - i : 7;
        const feat_result *fs[7];
        const feat_refs *rs[7];
        double ms1[7], ms2[7];
        for (int j = 0; j < q; j++) {
            fs[j] = &fr[i + j];
            rs[j] = &refs[i + j];
            same &= refs[i + j].n == fr[i + j].n;
            for (int r = 0; r < fr[i + j].n && r < refs[i + j].n; r++)
                same &= !memcmp(refs[i + j].rows[r], &fr[i + j].rows[r], sizeof fr[i + j].rows[r]);
        }
        CHECK(cost_predict(cm, q, fs, ms1, err, sizeof err) == 0);
        CHECK(cost_predict_memo(cm, memo, q, rs, ms2, err, sizeof err) == 0);
        for (int j = 0; j < q; j++) same &= !memcmp(&ms1[j], &ms2[j], sizeof ms1[j]);
    }
    int nrows = 0;
    for (int i = 0; i < n; i++) nrows += fr[i].n;
    const feat_row **rows = calloc((size_t)nrows + 1, sizeof *rows);
    nrows = 0;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < fr[i].n; r++) rows[nrows++] = &fr[i].rows[r];
    qsort(rows, (size_t)nrows, sizeof *rows, by_key);
    int equal = 0;
    for (int i = 1; i < nrows; i++)
        if (rows[i]->key && rows[i]->key == rows[i - 1]->key) {
            equal++;
            same &= !memcmp(rows[i]->v, rows[i - 1]->v, sizeof rows[i]->v) && rows[i]->func == rows[i - 1]->func &&
                    rows[i]->stage == rows[i - 1]->stage;
        }
    cost_memo_stats st = cost_memo_get_stats(memo);
    check_report(same && n > 50 && equal > 0 && st.hits > st.misses,
                 "cost memo %s%s (%d states, %d rows, %lld parts found, %lld costed, %lld unkeyed)", app,
                 strcmp(cm->ops->name, "learned") ? ", a mean of models" : "", n, nrows,
                 (long long)st.hits, (long long)st.misses, (long long)st.unkeyed);
    free(rows);
    for (int i = 0; i < n; i++) {
        feat_free(&fr[i]);
        feat_refs_free(&refs[i]);
    }
    free(fr);
    free(refs);
    ir_arena_free(a);
    cost_memo_free(memo);
    feat_ctx_free(fx);
    nest_ctx_free(nx);
    legal_free(x);
    bounds_free(b);
    sc_pipeline_free(p);
}

static void test_cost_memo(void) {
    nn_model *m = calloc(1, sizeof *m);
    nn_init(m, 11);
    static const char *apps[] = { "harris", "camera_pipe", "conv_layer", "local_laplacian", "bilateral_grid" };
    for (size_t i = 0; i < sizeof apps / sizeof *apps; i++) {
        cost_model *cm = cost_learned_new(m, &A100);
        memo_app(apps[i], cm);
        cost_free(cm);
    }
    /* the mean of models is a sum over rows too */
    nn_model *m2 = calloc(1, sizeof *m2);
    nn_init(m2, 12);
    const nn_model *both[2] = { m, m2 };
    cost_model *cm = cost_learned_mean_new(both, 2, &A100);
    memo_app("harris", cm);
    cost_free(cm);
    free(m2);
    free(m);
}

/* Absurd samples are rejected and counted; hash splits are stable. */
static void test_rejects(void) {
    train_data d;
    feat_result keep[2];
    synthetic(&d, 2, keep);
    int n = d.nsamples;
    CHECK(train_data_add(&d, 0, &keep[0], &A100, NAN) == 0);
    CHECK(train_data_add(&d, 0, &keep[0], &A100, -1) == 0);
    CHECK(train_data_add(&d, 0, &keep[0], &A100, 0) == 0);
    CHECK(d.rejected_time == 3);
    keep[0].rows[0].v[FEAT_AT(FEAT_num_scalars)] = 1e15;
    CHECK(train_data_add(&d, 0, &keep[0], &A100, 1.0) == 0);
    keep[0].rows[0].v[FEAT_AT(FEAT_num_scalars)] = -2;
    CHECK(train_data_add(&d, 0, &keep[0], &A100, 1.0) == 0);
    keep[0].rows[0].v[0] = NAN;
    CHECK(train_data_add(&d, 0, &keep[0], &A100, 1.0) == 0);
    CHECK(d.rejected_features == 3 && d.nsamples == n);
    CHECK(train_data_add(&d, 0, &keep[1], &A100, 1.0) == 1);
    train_split_by_hash(&d, 50, 0);
    train_role r[NPIPES];
    for (int i = 0; i < NPIPES; i++) r[i] = d.pipes[i].role;
    train_split_by_hash(&d, 50, 0);
    for (int i = 0; i < NPIPES; i++) CHECK(d.pipes[i].role == r[i]);
    /* fold 1 of 50% holds out the other half: every role flips; fold 2
     * wraps round to fold 0's */
    train_split_by_hash(&d, 50, 1);
    for (int i = 0; i < NPIPES; i++) CHECK(d.pipes[i].role != r[i] && d.pipes[i].role != TRAIN_ROLE_SKIP);
    train_split_by_hash(&d, 50, 2);
    for (int i = 0; i < NPIPES; i++) CHECK(d.pipes[i].role == r[i]);
    train_split_by_hash(&d, 0, 3);
    for (int i = 0; i < NPIPES; i++) CHECK(d.pipes[i].role == TRAIN_ROLE_TRAIN);
    /* ranking figures by hand: 3 samples, one pair out of order */
    double pred[] = { 1, 3, 2 }, ms[] = { 1, 2, 3 };
    train_rank rk;
    train_rank_of(3, pred, ms, &rk);
    CHECK(rk.pairs == 3 && rk.correct == 2 && fabs(rk.rho - 0.5) < 1e-12 && rk.best_ms == 1 && rk.min_ms == 1);
    /* pairs apart: of times 1, 1.05, 2 and 2.1, the pairs (1, 1.05) and (2, 2.1)
     * lie within 10%; the four others are apart, and the prediction
     * orders three of them right (it swaps 1.05 and 2) */
    double pred4[] = { 1, 3, 2, 4 }, ms4[] = { 1, 1.05, 2, 2.1 };
    train_rank_of(4, pred4, ms4, &rk);
    CHECK(rk.pairs == 6 && rk.correct == 5 && rk.pairs_apart == 4 && rk.correct_apart == 3);
    for (int i = 0; i < 2; i++) feat_free(&keep[i]);
    train_data_free(&d);
}

int main(void) {
    A100 = fixture_target("a100");
    RUN(test_layout);
    RUN(test_gradient);
    RUN(test_gradient_rank);
    RUN(test_gradient_floor);
    RUN(test_gradient_kernels);
    RUN(test_instruction_floor);
    RUN(test_gather_floor);
    RUN(test_learns);
    RUN(test_learns_kernels);
    RUN(test_step_size);
    RUN(test_weight_decay);
    RUN(test_intensive);
    RUN(test_deterministic);
    RUN(test_weights_file);
    RUN(test_costmodel);
    RUN(test_rejects);
    RUN(test_cost_memo);
    CHECK_EXIT();
}
