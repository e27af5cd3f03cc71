/*
 * collect.c - measuring schedules into the sample store (collect.h).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base.h"
#include "collect.h"
#include "beam.h"
#include "nest_query.h"
#include "space.h"

struct collect_ctx {
    store *st;
    collect_opts o;
    measure_device dev;
    target t;
    char desc[1024], key[512];
    int64_t device_id;
    /* A pipeline whose fast-math code is wrong where exact code is right
     * (measure_exact_retry) is measured with exact code, stored under the
     * device's exact-math row (0 until needed). */
    measure_device exact;
    int64_t exact_id;
    collect_totals tot;
    double t0;
    cost_model *model;            /* the beam sampler's (the mean of o.models for t), or NULL */
};

static volatile sig_atomic_t stop_requested;

void collect_request_stop(void) { stop_requested = 1; }

collect_ctx *collect_open(store *st, const collect_opts *o, char *err, size_t errlen) {
    collect_ctx *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->st = st;
    c->o = *o;
    c->t0 = base_now_s();
    if (!measure_device_by_name(o->device, o->math, &c->dev)) {
        snprintf(err, errlen, "unknown device '%s' (expected opencl, c or cuda)", o->device);
        free(c);
        return NULL;
    }
    if (measure_find_target(o->device, &c->t, c->desc, sizeof c->desc, c->key, sizeof c->key, err, errlen)) {
        free(c);
        return NULL;
    }
    char ttext[4096];
    target_print(&c->t, ttext, sizeof ttext);
    store_device d = { c->key, cg_math_name(o->math), c->desc, ttext };
    if ((c->device_id = store_put_device(st, &d, err, errlen)) < 0 ||
        (c->exact_id = o->math == CG_MATH_FAST ? store_find_device(st, c->key, "exact", err, errlen) : 0) < 0) {
        free(c);
        return NULL;
    }
    c->dev.cpu = c->t.cpu;
    c->dev.kernel_times = true;       /* the per-kernel loss's labels (docs/costmodel.md) */
    c->exact = c->dev;
    c->exact.math = CG_MATH_EXACT;
    collect_set_models(c, o->models, o->nmodels);
    return c;
}

void collect_close(collect_ctx *c) {
    if (c && c->model) cost_free(c->model);
    free(c);
}
void collect_set_models(collect_ctx *c, const nn_model *const *ms, int n) {
    if (c->model) cost_free(c->model);
    c->o.models = ms;
    c->o.nmodels = n;
    c->model = n > 0 ? cost_learned_mean_new(ms, n, &c->t) : NULL;
}

const target *collect_target(const collect_ctx *c) { return &c->t; }
const char *collect_device_key(const collect_ctx *c) { return c->key; }
collect_totals collect_get_totals(const collect_ctx *c) { return c->tot; }
void collect_plan(collect_ctx *c, int64_t n) { c->tot.planned += n; }

bool collect_stopped(const collect_ctx *c) {
    return stop_requested || (c->o.budget_s > 0 && base_now_s() - c->t0 >= c->o.budget_s);
}

static void fmt_duration(char *buf, size_t len, double s) {
    if (s < 0 || s > 1e7) snprintf(buf, len, "?");
    else if (s >= 3600) snprintf(buf, len, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
    else snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)s % 60);
}

/* A message on the log, if there is one. */
static void say(collect_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(collect_ctx *c, const char *fmt, ...) {
    if (!c->o.log) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->o.log, fmt, ap);
    va_end(ap);
}

/* One line of progress: done / planned, results per minute, time left. */
static void progress(collect_ctx *c, const char *what) {
    if (!c->o.log) return;
    collect_totals *t = &c->tot;
    int64_t done = t->measured + t->failed + t->wrong + t->timeout;
    double el = base_now_s() - c->t0, rate = el > 0 ? done / (el / 60) : 0;
    int64_t left = t->planned > done ? t->planned - done : 0;
    double eta = rate > 0 ? left / rate * 60 : -1;
    if (c->o.budget_s > 0 && (eta < 0 || eta > c->o.budget_s - el)) eta = c->o.budget_s - el;
    char eta_s[32];
    fmt_duration(eta_s, sizeof eta_s, eta);
    if (c->o.progress_bar) {
        int width = 24, fill = t->planned ? (int)(width * done / (t->planned > 0 ? t->planned : 1)) : 0;
        if (fill > width) fill = width;
        fprintf(c->o.log, "\r[%.*s%*s] %lld/%lld  %.1f/min  %s left  %-40.40s", fill, "########################",
                width - fill, "", (long long)done, (long long)t->planned, rate, eta_s, what);
    } else {
        fprintf(c->o.log, "collect: %s (%lld/%lld, %.1f/min, %s left)\n", what, (long long)done,
                (long long)t->planned, rate, eta_s);
    }
    fflush(c->o.log);
}

static void sizes_of(const sc_pipeline *p, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < p->outputs.n && n < len; i++) {
        const sc_func *f = p->outputs.items[i];
        n += (size_t)snprintf(buf + n, len - n, "%s%s(", i ? " " : "", f->name);
        for (int k = 0; k < f->ndims && n < len; k++)
            n += (size_t)snprintf(buf + n, len - n, "%s%d", k ? "x" : "", f->out_extent[k]);
        if (n < len) n += (size_t)snprintf(buf + n, len - n, ")");
    }
}

static store_outcome outcome_of(measure_kind k) {
    return k == MEASURE_OK ? STORE_OK : k == MEASURE_WRONG ? STORE_WRONG : k == MEASURE_TIMEOUT ? STORE_TIMEOUT
                                                                                                : STORE_FAILED;
}

struct collect_pipe {
    char *name;
    sc_pipeline *p;
    bounds_result *b;
    ir_arena *a;                  /* the fixed schedules and the caller's */
    int64_t pid;
    sched_state *fixed[2];        /* baseline, root (NULL where they do not fit) */
    sched_state *reference;       /* the first of them that fits (space_reference) */
    sc_buffer **in, **ref;        /* made at the first measurement */
    char sizes[256];
    bool exact, tried_exact;      /* measured with exact code (see collect_ctx) */
    char **stale;                 /* --remeasure: stored schedule texts to time again */
    int nstale;
    nest_ctx *unstaged;           /* --remeasure: which stale results timed other code (made when asked) */
};

collect_pipe *collect_pipe_open(collect_ctx *c, const char *name, const char *text, const char *source, bool small,
                                int *rc, char *err, size_t errlen) {
    *rc = 0;
    sc_parse_options po = { small, 0, NULL, NULL };
    sc_pipeline *p0 = sc_parse_string(name, text, strlen(text), &po);
    if (sc_error_count(p0)) {
        snprintf(err, errlen, "%s", sc_error_message(p0, 0));
        sc_pipeline_free(p0);
        *rc = -2;
        return NULL;
    }
    /* the canonical text, parsed back: what is measured is what is stored */
    char *canon = sc_pipeline_to_text(p0);
    sc_pipeline_free(p0);
    sc_pipeline *p = sc_parse_string(name, canon, strlen(canon), NULL);
    bounds_result *b = sc_error_count(p) ? NULL : bounds_infer(p);
    if (!b) {
        snprintf(err, errlen, "%s: %s", name, sc_error_count(p) ? sc_error_message(p, 0) : "bounds failed");
        free(canon);
        sc_pipeline_free(p);
        *rc = -2;
        return NULL;
    }
    int64_t pid = store_put_pipeline(c->st, p->name, canon, source, err, errlen);
    free(canon);
    if (pid < 0) {
        bounds_free(b);
        sc_pipeline_free(p);
        *rc = -1;
        return NULL;
    }
    collect_pipe *cp = calloc(1, sizeof *cp);
    if (!cp || !(cp->name = strdup(name))) abort();
    cp->p = p;
    cp->b = b;
    cp->a = ir_arena_new();
    cp->pid = pid;
    /* legal on the target is enough: the pruning's warp multiples restrict
     * what is drawn, not the points of reference (a baseline with a stage
     * of a few points, camera_pipe's 3x4 matrix, breaks them) */
    cp->reference = space_reference(cp->a, p, b, &c->t, false, cp->fixed);
    sizes_of(p, cp->sizes, sizeof cp->sizes);
    c->tot.pipelines++;
    return cp;
}

void collect_pipe_free(collect_pipe *cp) {
    if (!cp) return;
    for (int i = 0; i < cp->nstale; i++) free(cp->stale[i]);
    free(cp->stale);
    nest_ctx_free(cp->unstaged);
    measure_buffers_free(cp->p, cp->in, cp->ref);
    ir_arena_free(cp->a);
    bounds_free(cp->b);
    sc_pipeline_free(cp->p);
    free(cp->name);
    free(cp);
}

sc_pipeline *collect_pipe_pipeline(const collect_pipe *cp) { return cp->p; }
const bounds_result *collect_pipe_bounds(const collect_pipe *cp) { return cp->b; }
ir_arena *collect_pipe_arena(const collect_pipe *cp) { return cp->a; }
const sched_state *collect_pipe_baseline(const collect_pipe *cp) { return cp->reference; }
int64_t collect_pipe_id(const collect_pipe *cp) { return cp->pid; }

int collect_find(collect_ctx *c, const collect_pipe *cp, const char *text, store_found *f, char *err, size_t errlen) {
    int has = store_find_result(c->st, cp->pid, c->device_id, text, f, err, errlen);
    if (has == 0 && c->exact_id > 0) has = store_find_result(c->st, cp->pid, c->exact_id, text, f, err, errlen);
    return has;
}

/* The oldest generation whose code differs from this build's only where
 * the rules below say (codegen.h). */
#define COLLECT_CURRENT_SINCE 6

/* Whether the result f of s, stale by its generation, timed the code this
 * build makes all the same: generations 7 to 16 changed only what
 * cg_code_changed_since (codegen.h) tells apart; older ones changed more. */
static bool current_code(collect_ctx *c, collect_pipe *cp, const sched_state *s, const store_found *f) {
    if (f->generation < COLLECT_CURRENT_SINCE || f->ref_ms <= 0) return false;
    if (!cp->unstaged) {
        cp->unstaged = nest_ctx_new(cp->p, cp->b);
        nest_ctx_set_staging(cp->unstaged, target_stages_registers(&c->t));
        nest_ctx_set_cyclic(cp->unstaged, target_cyclic_points(&c->t));
        nest_ctx_cache_kernels(cp->unstaged, false);
    }
    char err[512];
    nest *m = nest_build(cp->unstaged, s, err, sizeof err);
    /* this build's model: where it has cyclic points the code is new
     * since generation 20, else it is the older mapping's too */
    bool current = m && !(f->generation < CG_GENERATION_CYCLIC_POINTS && nest_any_cyclic(m)) &&
                   cg_code_changed_since(f->generation, cp->p, cp->b, s, m, c->t.cpu,
                                         c->dev.ops == &rt_opencl_ops) == CG_CODE_SAME;
    nest_free(m);
    return current;
}

/* Whether a drawn schedule is to be measured: 1 yes, 0 it has a result
 * (with --remeasure: a result that is not stale), -1 with err. */
static int wanted(collect_ctx *c, collect_pipe *cp, const sched_state *s, const char *text, char *err,
                  size_t errlen) {
    store_found f;
    int has = collect_find(c, cp, text, &f, err, errlen);
    if (has < 0) return -1;
    return has == 0 || (c->o.remeasure && has == 1 && store_found_stale(&f) && !current_code(c, cp, s, &f)) ||
           (c->o.add_kernel_times && has == 1 && store_found_without_kernel_times(&f));
}

/* Adds the drawn schedule s (its text owned by the caller) to the list
 * unless it was drawn before or is stored; 1 added, 0 not, -1 err. */
static int consider(collect_ctx *c, collect_pipe *cp, sched_state *s, const char *text, char ***seen,
                    int *distinct, sched_state **states, char **texts, int *n, char *err, size_t errlen) {
    for (int i = 0; i < *distinct; i++)
        if (!strcmp((*seen)[i], text)) {
            c->tot.duplicates++;
            return 0;
        }
    *seen = realloc(*seen, sizeof **seen * (size_t)(*distinct + 1));
    if (!*seen || !((*seen)[(*distinct)++] = strdup(text))) abort();
    int w = wanted(c, cp, s, text, err, errlen);
    if (w <= 0) {
        if (w == 0) c->tot.skipped++;
        return w;
    }
    states[*n] = s;
    if (!(texts[(*n)++] = strdup(text))) abort();
    return 1;
}

/* --remeasure: the pipeline's stored schedules whose every measurement is
 * stale (store_stale_schedules), read back from their text, after those
 * drawn; states and texts have room for them (collect_pipeline).  Texts
 * that no longer parse (the schedule language or the pipeline changed)
 * are counted and left.  0, or -1 with err. */
static int add_stale(collect_ctx *c, collect_pipe *cp, char ***seen, int *distinct, sched_state **states,
                     char **texts, int *n, char *err, size_t errlen) {
    int bad = 0;
    for (int i = 0; i < cp->nstale && !bad; i++) {
        char msg[512];
        sched_state *s = sched_parse(cp->a, cp->p, "stored schedule", cp->stale[i], msg, sizeof msg);
        if (!s || !sched_complete(cp->p, s)) {
            c->tot.unreadable++;
            continue;
        }
        c->tot.stale++;
        bad = consider(c, cp, s, cp->stale[i], seen, distinct, states, texts, n, err, errlen) < 0;
    }
    return bad ? -1 : 0;
}

/* The picks sampler: the best COLLECT_PICKS of a one-shot batch of
 * COLLECT_PICK_BATCH samples are re-tiled. */
enum { COLLECT_PICKS = 4, COLLECT_PICK_BATCH = 80 };

/* Re-tilings of the nb (at most COLLECT_PICKS) bases in turn (base k % nb
 * with seed k / nb + 1: space_retile), those within the target's limits
 * considered, until want are distinct or 8 x want + 16 are drawn; a base
 * with no root stage to re-tile gives none, and is not asked again.  0,
 * or -1 with err. */
static int consider_retilings(collect_ctx *c, collect_pipe *cp, sched_state *const *bases, int nb, int want,
                              char ***seen, int *distinct, sched_state **states, char **texts, int *n, char *err,
                              size_t errlen) {
    bool none[COLLECT_PICKS] = { false };
    int bad = 0, left = nb;
    for (int k = 0; left > 0 && k < 8 * want + 16 && *distinct < want && !bad; k++) {
        if (none[k % nb]) continue;
        sched_state *s = space_retile(cp->a, cp->p, cp->b, bases[k % nb], (uint64_t)(k / nb + 1));
        if (!s) {
            none[k % nb] = true;
            left--;
            continue;
        }
        if (sched_check(cp->p, cp->b, s, &c->t, false, NULL, 0) != 0) continue;
        char *text = sched_to_text(cp->p, s);
        bad = consider(c, cp, s, text, seen, distinct, states, texts, n, err, errlen) < 0;
        free(text);
    }
    return bad ? -1 : 0;
}

/* The schedules to measure: the fixed ones (baseline and root, the
 * points of reference of every benchmark), then random walks (seeds 1, 2,
 * ...), re-tilings of the baseline (space_retile, seeds 1, 2, ...), the
 * cost model's batches (search_batch, dropout for variety) or its best
 * picks and their re-tilings,
 * until `want` distinct ones are drawn; those not yet in the store are
 * returned (the count; texts and states in the arrays, room for want). */
static int draw(collect_ctx *c, collect_pipe *cp, sched_state **states, char **texts, int want, char *err,
                size_t errlen) {
    space_opts so = { &c->t, c->o.prune, space_unroll_whole_for(c->o.unroll_whole, &c->t) };
    int n = 0, distinct = 0, bad = 0;
    char **seen = NULL;
    for (int k = 0; k < 2 && distinct < want && !bad; k++) {
        if (!cp->fixed[k]) continue;
        char *text = sched_to_text(cp->p, cp->fixed[k]);
        bad = consider(c, cp, cp->fixed[k], text, &seen, &distinct, states, texts, &n, err, errlen) < 0;
        free(text);
    }
    if (c->model && c->o.retile) {
        /* the model's COLLECT_PICKS best of the one-shot batch (no
         * dropout: its first is one-shot's pick), then re-tilings of
         * each in turn (seeds 1, 2, ...): its favourite fusions in other
         * block shapes and serial tiles, where it errs the most */
        search_sample *batch = malloc(sizeof *batch * (size_t)COLLECT_PICK_BATCH);
        if (!batch) abort();
        search_opts o;
        search_opts_default(&o, &c->t, c->model);
        o.prune = c->o.prune;
        o.unroll_whole = space_unroll_whole_for(c->o.unroll_whole, &c->t);
        int got = search_batch(cp->a, cp->p, cp->b, &o, COLLECT_PICK_BATCH, batch, NULL, err, errlen);
        bad = got < 0;
        int nb = got < COLLECT_PICKS ? got : COLLECT_PICKS;
        for (int i = 0; i < nb && distinct < want && !bad; i++)
            bad = consider(c, cp, batch[i].s, batch[i].text, &seen, &distinct, states, texts, &n, err, errlen) < 0;
        sched_state *bases[COLLECT_PICKS] = { NULL };
        for (int i = 0; i < nb; i++) bases[i] = batch[i].s;
        if (!bad) bad = consider_retilings(c, cp, bases, nb, want, &seen, &distinct, states, texts, &n, err, errlen) < 0;
        if (got > 0) search_samples_free(batch, got);
        free(batch);
    } else if (c->model) {
        /* batches of the beam search until enough are new, or a batch
         * brings nothing new */
        search_sample *batch = malloc(sizeof *batch * (size_t)want);
        if (!batch) abort();
        for (int round = 0; distinct < want && !bad && round < 8; round++) {
            search_opts o;
            search_opts_default(&o, &c->t, c->model);
            o.prune = c->o.prune;
            o.unroll_whole = space_unroll_whole_for(c->o.unroll_whole, &c->t);
            o.dropout = c->o.dropout;
            o.seed = (uint64_t)round * (uint64_t)want + 1;
            int got = search_batch(cp->a, cp->p, cp->b, &o, want, batch, NULL, err, errlen);
            if (got < 0) {
                bad = 1;
                break;
            }
            int before = distinct;
            for (int i = 0; i < got && distinct < want && !bad; i++)
                bad = consider(c, cp, batch[i].s, batch[i].text, &seen, &distinct, states, texts, &n, err, errlen) < 0;
            search_samples_free(batch, got);
            if (distinct == before) break;
        }
        free(batch);
    } else if (c->o.retile) {
        sched_state *base = cp->fixed[0] ? cp->fixed[0] : cp->fixed[1];
        bad = consider_retilings(c, cp, &base, base ? 1 : 0, want, &seen, &distinct, states, texts, &n, err,
                                 errlen) < 0;
    } else {
        for (int k = 0; k < 4 * want + 16 && distinct < want && !bad; k++) {
            char msg[512];
            sched_state *s = space_random(cp->a, cp->p, cp->b, &so, (uint64_t)(k + 1), msg, sizeof msg);
            if (!s) break;      /* the space cannot schedule this pipeline at all */
            char *text = sched_to_text(cp->p, s);
            bad = consider(c, cp, s, text, &seen, &distinct, states, texts, &n, err, errlen) < 0;
            free(text);
        }
    }
    if ((c->o.remeasure || c->o.add_kernel_times) && !bad)
        bad = add_stale(c, cp, &seen, &distinct, states, texts, &n, err, errlen) < 0;
    for (int i = 0; i < distinct; i++) free(seen[i]);
    free(seen);
    if (bad) {
        for (int i = 0; i < n; i++) free(texts[i]);
        return -1;
    }
    return n;
}

int collect_measure(collect_ctx *c, collect_pipe *cp, sched_state *const *states, char *const *texts, int n,
                    collect_result *res, char *err, size_t errlen) {
    sc_pipeline *p = cp->p;
    const bounds_result *b = cp->b;
    int rc = 0;
    for (int i = 0; res && i < n; i++) res[i] = (collect_result){ false, STORE_FAILED, 0, 0 };
    char msg[1024];
    if (n > 0 && !cp->in && measure_buffers_new(p, 1, &cp->in, &cp->ref, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "%s: %s", cp->name, msg);
        return -2;
    }
    measure_limits lim = measure_limits_for(c->o.timeout_ms);
    /* every schedule is timed in turn with the reference: the baseline
     * (else root) that fits the target (measure.h says why) */
    const sched_state *rs = collect_pipe_baseline(cp);
    /* compiled a chunk at a time, so that results keep coming */
    int chunk = 4 * c->o.jobs;
    for (int i = 0; rc == 0 && i < n && !collect_stopped(c); i++) {
        if (i % chunk == 0) {
            char what[160];
            int k = n - i < chunk ? n - i : chunk;
            snprintf(what, sizeof what, "%s: compiling schedules %d-%d of %d", p->name, i + 1, i + k, n);
            progress(c, what);
            measure_precompile(cp->exact ? &c->exact : &c->dev, p, b, (const sched_state *const *)states + i, k,
                               c->o.jobs);
        }
        measure_outcome m;
        measure_schedule(cp->exact ? &c->exact : &c->dev, p, b, states[i], rs, cp->in, cp->ref, lim, &m);
        if (stop_requested) break;      /* the child may have died of the same signal */
        /* the first wrong result: is it the schedule, or fast math? */
        measure_outcome e;
        if (!cp->exact && !cp->tried_exact &&
            measure_exact_retry(&c->dev, p, b, states[i], rs, cp->in, cp->ref, lim, &m, &e)) {
            cp->tried_exact = true;
            if (stop_requested) break;
            if (e.kind == MEASURE_OK) {
                char ttext[4096];
                target_print(&c->t, ttext, sizeof ttext);
                store_device d = { c->key, "exact", c->desc, ttext };
                if (!c->exact_id && (c->exact_id = store_put_device(c->st, &d, err, errlen)) < 0) { rc = -1; break; }
                say(c, "%scollect: %s: fast math changes the result beyond its tolerance (%s) where exact "
                        "code matches: its schedules are measured with exact code\n",
                        c->o.progress_bar ? "\n" : "", p->name, m.msg);
                cp->exact = true;
                m = e;
            } else {
                say(c, "%scollect: %s: wrong with fast math, and exact code %s too: %s\n",
                        c->o.progress_bar ? "\n" : "", p->name,
                        e.kind == MEASURE_WRONG ? "is wrong" : e.kind == MEASURE_TIMEOUT ? "timed out" : "failed", e.msg);
            }
        }
        store_result r = {0};
        r.pipeline = cp->pid;
        r.device = cp->exact ? c->exact_id : c->device_id;
        r.schedule_text = texts[i];
        for (int d = 0; d < 4; d++) r.hash[d] = sched_hash(states[i], d);
        r.outcome = outcome_of(m.kind);
        r.ms = m.ms;
        r.ref_ms = m.ref_ms;
        r.nsamples = m.nsamples;
        r.samples_ms = m.samples_ms;
        r.runs = m.runs;
        r.kernels = m.kernels;
        r.kernel_ms = m.kernel_ms;
        r.check = m.check;
        r.message = m.msg;
        r.sizes = cp->sizes;
        r.replace_stale = c->o.remeasure;
        r.replace_without_kernel_times = c->o.add_kernel_times;
        if (store_put_result(c->st, &r, err, errlen) < 0) { rc = -1; break; }
        if (res) res[i] = (collect_result){ true, r.outcome, m.ms, m.ref_ms };
        char what[200];
        if (m.kind == MEASURE_OK) {
            c->tot.measured++;
            snprintf(what, sizeof what, "%s #%d: %.4g ms", p->name, i + 1, m.ms);
        } else {
            if (m.kind == MEASURE_WRONG) c->tot.wrong++;
            else if (m.kind == MEASURE_TIMEOUT) c->tot.timeout++;
            else c->tot.failed++;
            snprintf(what, sizeof what, "%s #%d: %s", p->name, i + 1, store_outcome_name(r.outcome));
            /* a wrong result is a bug of the compiler: always on a line of its own */
            say(c, "%scollect: %s schedule #%d: %s: %s\n", c->o.progress_bar ? "\n" : "", p->name, i + 1,
                    store_outcome_name(r.outcome), m.msg);
        }
        progress(c, what);
    }
    return rc;
}

int collect_pipeline(collect_ctx *c, const char *name, const char *text, const char *source, bool small,
                     char *err, size_t errlen) {
    if (collect_stopped(c)) return 0;
    int rc;
    collect_pipe *cp = collect_pipe_open(c, name, text, source, small, &rc, err, errlen);
    if (!cp) return rc;
    int want = c->o.schedules;
    if (c->o.remeasure || c->o.add_kernel_times) {
        int k = store_stale_schedules(c->st, cp->pid, c->o.add_kernel_times, &cp->stale, err, errlen);
        if (k < 0) {
            collect_pipe_free(cp);
            return -1;
        }
        cp->nstale = k;
        collect_plan(c, k);
    }
    sched_state **states = calloc((size_t)(want + cp->nstale) + 1, sizeof *states);
    char **texts = calloc((size_t)(want + cp->nstale) + 1, sizeof *texts);
    if (!states || !texts) abort();
    int n = draw(c, cp, states, texts, want, err, errlen);
    if (n < 0) rc = -1;
    /* what this pipeline will not measure leaves the plan */
    c->tot.planned -= want + cp->nstale - (n > 0 ? n : 0);
    if (rc == 0) rc = collect_measure(c, cp, states, texts, n, NULL, err, errlen);
    for (int i = 0; i < n; i++) free(texts[i]);
    free(texts);
    free(states);
    collect_pipe_free(cp);
    return rc;
}
