/*
 * autotune.c - batches from the learned model's search, measured,
 * stored, and the model fine-tuned after each (autotune.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autotune.h"
#include "beam.h"
#include "strategy.h"
#include "train.h"
#include "train_load.h"

void autotune_opts_default(autotune_opts *o) {
    memset(o, 0, sizeof *o);
    o->measure = (collect_opts){ .device = "opencl", .math = CG_MATH_FAST, .jobs = 1, .timeout_ms = 10000, .prune = true,
                                 .log = stderr, .unroll_whole = SPACE_UNROLL_WHOLE_BY_TARGET };
    o->iterations = 20;
    o->batch = 80;
    o->epochs = 40;
    o->dropout = 0.3;
    o->seed = 1;
}

/* The best of this pipeline's samples, for store_each_sample. */
typedef struct {
    int64_t pipeline;
    autotune_result *r;
    double best_score;
} best_scan;

static int scan_sample(const store_sample *s, void *ud) {
    best_scan *b = ud;
    if (s->pipeline != b->pipeline) return 0;
    b->r->samples++;
    double score = s->ref_ms > 0 ? s->ms / s->ref_ms : s->ms;
    if (score < b->best_score) {
        b->best_score = score;
        b->r->best_ms = s->ms;
        b->r->best_ratio = s->ref_ms > 0 ? score : 0;
        free(b->r->best_text);
        if (!(b->r->best_text = strdup(s->schedule_text))) abort();
    }
    return 0;
}

static int find_best(store *st, const char *key, int64_t pid, autotune_result *r, char *err, size_t errlen) {
    best_scan b = { pid, r, INFINITY };
    r->samples = 0;
    r->best_ms = INFINITY;
    r->best_ratio = 0;
    return store_each_sample(st, key, scan_sample, &b, err, errlen) < 0 ? -1 : 0;
}

/* Fine-tunes m on the pipeline's samples (from scratch when fresh). */
static int fine_tune(store *st, const char *key, int64_t pid, const autotune_opts *o, bool fresh, uint64_t seed,
                     nn_model *m, char *err, size_t errlen) {
    train_data d;
    train_data_init(&d);
    train_load_opts lo = { .device_key = key, .pipeline = pid };
    int rc = train_load_store(&d, st, &lo, err, errlen);
    if (rc == 0 && d.nsamples < 2) {
        train_data_free(&d);
        return 0;       /* nothing to learn from yet */
    }
    train_opts to;
    train_opts_default(&to);
    to.epochs = o->epochs;
    to.seed = seed;
    to.fine_tune = !fresh;
    train_metrics tm;
    if (rc == 0) rc = train_run(&d, m, &to, &tm, NULL, err, errlen);
    if (rc == 0) {
        snprintf(m->device, sizeof m->device, "%s", key);
        snprintf(m->summary, sizeof m->summary, "autotuned on %d samples of one pipeline (pairwise %.4f)",
                 tm.samples, tm.pairwise);
    }
    train_data_free(&d);
    return rc;
}

int autotune_run(store *st, const char *name, const char *text, const char *source, const autotune_opts *o,
                 autotune_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    r->best_ms = INFINITY;
    if (!o->weights_out || !*o->weights_out) {
        snprintf(err, errlen, "autotune needs a file for the fine-tuned weights");
        return -1;
    }
    collect_ctx *c = collect_open(st, &o->measure, err, errlen);
    if (!c) return -1;
    int rc = 0;
    collect_pipe *cp = collect_pipe_open(c, name, text, source, o->small, &rc, err, errlen);
    if (!cp) {
        collect_close(c);
        return rc;
    }
    const char *key = collect_device_key(c);
    int64_t pid = collect_pipe_id(cp);
    FILE *log = o->measure.log;
    const char *nl = o->measure.progress_bar ? "\n" : "";
    char mkey[800];
    snprintf(mkey, sizeof mkey, "autotune %" PRId64 " %s %s", pid, key, cg_math_name(o->measure.math));
    char *done_text = store_get_meta(st, mkey, err, errlen);
    int done = 0;
    if (!done_text) rc = -1;
    else if (*done_text && sscanf(done_text, "iteration %d", &done) != 1) {
        snprintf(err, errlen, "the store's progress record '%s' = '%s' is not 'iteration N'", mkey, done_text);
        rc = -1;
    }
    free(done_text);
    /* the starting point: the weights the last recorded iteration wrote,
     * else the shipped (or given) ones, else random ones */
    nn_model *m = NULL;
    bool fresh = false;
    if (rc == 0 && done > 0) {
        if (!(m = malloc(sizeof *m))) abort();
        if (nn_load(m, o->weights_out, err, errlen) != 0) {
            size_t n = strlen(err);
            snprintf(err + n, errlen - n, " (the store records %d autotuning iterations done with these weights; "
                     "remove the record or give the right --save-weights)", done);
            rc = -1;
        }
    } else if (rc == 0 && o->from_scratch) {
        if (!(m = malloc(sizeof *m))) abort();
        nn_init(m, o->seed);
        fresh = true;
    } else if (rc == 0) {
        char used[4200];
        if (!(m = space_load_weights(o->weights, "autotune", collect_target(c), used, sizeof used, err, errlen))) rc = -1;
    }
    if (rc == 0 && log)
        fprintf(log, "autotune: %s on %s (%s math): %d iterations of %d, %d done before\n", name, key,
                cg_math_name(o->measure.math), o->iterations, o->batch, done);
    collect_plan(c, (int64_t)(o->iterations > done ? o->iterations - done : 0) * o->batch);
    search_sample *batch = malloc(sizeof *batch * (size_t)o->batch);
    sched_state **states = malloc(sizeof *states * (size_t)o->batch);
    char **texts = malloc(sizeof *texts * (size_t)o->batch);
    if (!batch || !states || !texts) abort();
    const target *t = collect_target(c);
    for (int it = done; rc == 0 && it < o->iterations && !collect_stopped(c); it++) {
        cost_model *cm = cost_learned_new(m, t);
        search_opts so;
        search_opts_default(&so, t, cm);
        so.prune = o->measure.prune;
        so.unroll_whole = space_unroll_whole_for(o->measure.unroll_whole, t);
        so.dropout = o->dropout;
        so.seed = o->seed + (uint64_t)it * AUTOTUNE_SEED_STRIDE;
        int got = search_batch(collect_pipe_arena(cp), collect_pipe_pipeline(cp), collect_pipe_bounds(cp), &so,
                               o->batch, batch, NULL, err, errlen);
        cost_free(cm);
        if (got < 0) { rc = -1; break; }
        int n = 0;
        for (int i = 0; i < got && rc == 0; i++) {
            store_found f;
            int has = collect_find(c, cp, batch[i].text, &f, err, errlen);
            if (has < 0) rc = -1;
            else if (has) r->skipped++;
            else {
                states[n] = batch[i].s;
                texts[n++] = batch[i].text;
            }
        }
        /* what the batch does not measure leaves the plan */
        collect_plan(c, -(int64_t)(o->batch - n));
        collect_totals before = collect_get_totals(c);
        if (rc == 0) rc = collect_measure(c, cp, states, texts, n, NULL, err, errlen);
        collect_totals after = collect_get_totals(c);
        r->measured += (after.measured + after.failed + after.wrong + after.timeout) -
                       (before.measured + before.failed + before.wrong + before.timeout);
        search_samples_free(batch, got);
        if (rc != 0 || collect_stopped(c)) break;
        /* learn from the batch; the weights first, then the record */
        if ((rc = fine_tune(st, key, pid, o, fresh, o->seed + (uint64_t)it, m, err, errlen)) != 0) break;
        fresh = false;
        if ((rc = nn_save(m, o->weights_out, err, errlen)) != 0) break;
        char v[64];
        snprintf(v, sizeof v, "iteration %d", it + 1);
        if ((rc = store_set_meta(st, mkey, v, err, errlen)) != 0) break;
        done = it + 1;
        if ((rc = find_best(st, key, pid, r, err, errlen)) != 0) break;
        if (log) {
            fprintf(log, "%sautotune: iteration %d/%d: %d of the batch's %d measured; %" PRId64 " samples; best %.4g ms",
                    nl, it + 1, o->iterations, n, got, r->samples, r->best_ms);
            if (r->best_ratio > 0) fprintf(log, " (%.3gx the baseline timed with it)", r->best_ratio);
            fprintf(log, "\n");
            fflush(log);
        }
    }
    r->iterations_done = done;
    if (rc == 0) rc = find_best(st, key, pid, r, err, errlen);
    free(batch);
    free(states);
    free(texts);
    free(m);
    collect_pipe_free(cp);
    collect_close(c);
    return rc;
}
