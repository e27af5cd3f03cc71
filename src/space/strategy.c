/*
 * strategy.c - the table of schedule strategies (strategy.h).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "beam.h"
#include "nn.h"
#include "strategy.h"

static sched_state *make_root(ir_arena *a, sc_pipeline *p, const bounds_result *b, const space_opts *o,
                              const space_search_args *args, uint64_t seed, char *err, size_t errlen)
{
    (void)seed;
    (void)args;
    sched_state *s = space_root(a, p, b, o->t);
    if (!s) snprintf(err, errlen, "the root strategy found no schedule for %s", p->name);
    return s;
}

static sched_state *make_baseline(ir_arena *a, sc_pipeline *p, const bounds_result *b, const space_opts *o,
                                  const space_search_args *args, uint64_t seed, char *err, size_t errlen)
{
    (void)seed;
    (void)args;
    sched_state *s = space_baseline(a, p, b, o->t);
    if (!s) snprintf(err, errlen, "the baseline strategy found no schedule for %s", p->name);
    return s;
}

static sched_state *make_random(ir_arena *a, sc_pipeline *p, const bounds_result *b, const space_opts *o,
                                const space_search_args *args, uint64_t seed, char *err, size_t errlen)
{
    (void)args;
    return space_random(a, p, b, o, seed, err, errlen);
}

/* weights/NAME here if it exists, else in the weights/ folder beside the
 * folder of the running program (as targets are found, build/stagecraft ->
 * weights/); the path looked at last is left in buf either way. */
static const char *find_weights(const char *name, char *buf, size_t len) {
    snprintf(buf, len, "weights/%s", name);
    if (access(buf, R_OK) == 0) return buf;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return buf;
    exe[n] = 0;
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash) return buf;
        *slash = 0;
    }
    snprintf(buf, len, "%s/weights/%s", exe, name);
    return buf;
}

const char *space_default_weights(const target *t, char *buf, size_t len) {
    if (t && t->cuda_arch[0] && access(find_weights(SPACE_CUDA_WEIGHTS, buf, len), R_OK) == 0) return buf;
    return find_weights(SPACE_POCL_WEIGHTS, buf, len);
}

bool space_weights_from_cuda(const nn_model *m) { return strstr(m->device, "cuda:") != NULL; }

nn_model *space_load_weights(const char *path, const char *who, const target *t, char *used, size_t usedlen,
                             char *err, size_t errlen) {
    const char *w = path ? path : space_default_weights(t, used, usedlen);
    if (path) snprintf(used, usedlen, "%s", path);
    if (!path && access(w, R_OK) != 0) {
        snprintf(err, errlen, "%s needs the learned model's weights: no file %s (nor weights/%s here); "
                 "make one with `make train` or give --weights FILE", who, w, SPACE_POCL_WEIGHTS);
        return NULL;
    }
    nn_model *m = malloc(sizeof *m);
    if (!m) abort();
    if (nn_load(m, w, err, errlen) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

/* The k-th member (k >= 2) of the default weights at path: NAME-k.weights
 * beside NAME.weights. */
static void weights_sibling(const char *path, int k, char *buf, size_t len) {
    size_t n = strlen(path), ext = strlen(".weights");
    if (n > ext && !strcmp(path + n - ext, ".weights")) n -= ext;
    snprintf(buf, len, "%.*s-%d.weights", (int)n, path, k);
}

/* The default weights for t and the siblings beside them (NAME-2.weights,
 * NAME-3.weights, ...: the same network trained with other seeds), as
 * many as exist in a row, at most SPACE_MAX_WEIGHTS. */
static int load_default_weights(const char *who, const target *t, nn_model **ms, char *used, size_t usedlen,
                                char *err, size_t errlen) {
    if (!(ms[0] = space_load_weights(NULL, who, t, used, usedlen, err, errlen))) return -1;
    char first[PATH_MAX + 64];
    snprintf(first, sizeof first, "%s", used);
    int n = 1;
    for (int k = 2; k <= SPACE_MAX_WEIGHTS; k++) {
        char sib[PATH_MAX + 80], one[PATH_MAX + 80];
        weights_sibling(first, k, sib, sizeof sib);
        if (access(sib, R_OK) != 0) break;
        if (!(ms[n] = space_load_weights(sib, who, t, one, sizeof one, err, errlen))) {
            while (n > 0) free(ms[--n]);
            return -1;
        }
        size_t u = strlen(used);
        snprintf(used + u, usedlen - u, ",%s", sib);
        n++;
    }
    return n;
}

int space_load_weights_list(const char *paths, const char *who, const target *t, nn_model **ms, char *used,
                            size_t usedlen, char *err, size_t errlen) {
    if (!paths) return load_default_weights(who, t, ms, used, usedlen, err, errlen);
    char *list = strdup(paths), *save = NULL;
    if (!list) abort();
    int n = 0;
    used[0] = 0;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char one[PATH_MAX + 64];
        if (n == SPACE_MAX_WEIGHTS) {
            snprintf(err, errlen, "%s: at most %d weights files in --weights, got more", who, SPACE_MAX_WEIGHTS);
        } else if ((ms[n] = space_load_weights(tok, who, t, one, sizeof one, err, errlen)) != NULL) {
            size_t u = strlen(used);
            snprintf(used + u, usedlen - u, "%s%s", n ? "," : "", one);
            n++;
            continue;
        }
        while (n > 0) free(ms[--n]);
        free(list);
        return -1;
    }
    free(list);
    if (n == 0) {
        snprintf(err, errlen, "%s: --weights names no file ('%s')", who, paths);
        return -1;
    }
    return n;
}

/* --margin: the baseline (space_reference's first) where the pick is not
 * predicted more than margin times faster than it, else NULL.  Its
 * prediction is the batch's where the batch holds it, else cm's. */
static sched_state *kept_baseline(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const target *t,
                                  cost_model *cm, const search_sample *pick, const search_sample *batch, int n,
                                  double margin, double *base_ms) {
    sched_state *fx[2] = { NULL, NULL };
    space_reference(a, p, b, t, false, fx);
    char *text = fx[0] ? sched_to_text(p, fx[0]) : NULL;
    if (!text || (pick->text && !strcmp(pick->text, text))) {
        free(text);
        return NULL;
    }
    double ms = NAN;
    for (int i = 0; i < n && ms != ms; i++)
        if (batch[i].text && !strcmp(batch[i].text, text)) ms = batch[i].ms;
    free(text);
    char err[512];
    if (ms != ms && cost_predict_schedule(cm, p, b, fx[0], t, &ms, err, sizeof err) != 0) ms = NAN;
    *base_ms = ms;
    return ms <= margin * pick->ms ? fx[0] : NULL;
}

/* One-shot and top-K (Anderson et al. 2021 §8): one beam search and
 * greedy samples (beam.h); one-shot returns the best by the learned model
 * (or what the driver's pick keeps of the batch: the CUDA spill filter),
 * top-K what the pick measures fastest among the K best predicted. */
static sched_state *make_batch(const char *who, ir_arena *a, sc_pipeline *p, const bounds_result *b,
                               const space_opts *o, const space_search_args *args, uint64_t seed, char *err,
                               size_t errlen) {
    static const space_search_args none = { 0 };
    const space_search_args *sa = args ? args : &none;
    bool topk = !strcmp(who, "topk");
    if (topk && !sa->pick) {
        snprintf(err, errlen, "the topk strategy measures its candidates on a device: give --device D");
        return NULL;
    }
    char w[PATH_MAX + 64], whom[64];
    snprintf(whom, sizeof whom, "the %s strategy", who);
    nn_model *ms[SPACE_MAX_WEIGHTS];
    int nm = space_load_weights_list(sa->weights, whom, o->t, ms, w, sizeof w, err, errlen);
    if (nm < 0) return NULL;
    nn_model *m = ms[0];
    cost_model *cm = cost_learned_mean_new((const nn_model *const *)ms, nm, o->t);
    search_opts so;
    search_opts_default(&so, o->t, cm);
    so.seed = seed;
    if (sa->beam > 0) so.beam = sa->beam;
    if (sa->passes > 0) so.passes = sa->passes;
    if (sa->spread_given) so.spread = sa->spread;
    if (sa->freeze_min > 0) so.freeze_min = sa->freeze_min;
    so.unroll_whole = o->unroll_whole;
    int samples = sa->samples > 0 ? sa->samples : 80;
    search_stats st;
    search_sample *batch = malloc(sizeof *batch * (size_t)samples);
    if (!batch) abort();
    int n = search_batch(a, p, b, &so, samples, batch, &st, err, errlen);
    FILE *r = sa->report;
    if (n > 0 && r) {
        fprintf(r, "# %s: predicted %.6g ms (weights %s); %d distinct schedules in the batch\n", who,
                batch[0].ms, w, n);
        fprintf(r, "# search: %d samples (beam %d x %d passes, then beam 1 x 1 pass), %d passes in all, "
                "%d Funcs frozen\n", st.samples, so.beam, so.passes, st.passes, st.frozen);
        fprintf(r, "# states: %lld enumerated, %lld dropped, %lld buckets, %lld drawn, %lld featurized, "
                "%lld costed in %lld calls, %lld memoized, %lld secondary costed, %lld secondary skipped\n",
                (long long)st.enumerated, (long long)st.dropped, (long long)st.buckets, (long long)st.drawn,
                (long long)st.featurized, (long long)st.costed, (long long)st.predict_calls,
                (long long)st.memo_hits, (long long)st.secondary_costed, (long long)st.secondary_skipped);
        fprintf(r, "# wall time: %.3f s\n", st.wall_s);
        if (o->t->cuda_arch[0] && !space_weights_from_cuda(m))
            fprintf(r, "# note: these weights were trained on no CUDA GPU's samples but on %s; the features "
                    "use target %s's own figures (SMs, limits, occupancy)\n", m->device[0] ? m->device : "another device",
                    o->t->name);
        fflush(r);
    }
    int pick = n > 0 ? 0 : -1;
    if (n > 0 && sa->pick) pick = sa->pick(sa->pick_ctx, p, b, batch, n, err, errlen);
    sched_state *s = pick >= 0 ? batch[pick].s : NULL;
    double base_ms;
    sched_state *kept = s && !topk && sa->margin > 1
                            ? kept_baseline(a, p, b, o->t, cm, &batch[pick], batch, n, sa->margin, &base_ms) : NULL;
    if (kept) {
        if (r)
            fprintf(r, "# %s: kept the baseline (%.6g ms predicted), within --margin %g of the pick (%.6g ms)\n",
                    who, base_ms, sa->margin, batch[pick].ms);
        s = kept;
        pick = -1;
    }
    if (s && r) {
        if (pick > 0) fprintf(r, "# %s: chose the schedule predicted #%d (%.6g ms)\n", who, pick + 1, batch[pick].ms);
        if (sa->explain && search_explain(r, p, b, s, o->t, (const nn_model *const *)ms, nm, err, errlen) != 0) s = NULL;
    }
    if (n > 0) search_samples_free(batch, n);
    free(batch);
    cost_free(cm);
    for (int k = 0; k < nm; k++) free(ms[k]);
    return s;
}

static sched_state *make_oneshot(ir_arena *a, sc_pipeline *p, const bounds_result *b, const space_opts *o,
                                 const space_search_args *args, uint64_t seed, char *err, size_t errlen) {
    return make_batch("oneshot", a, p, b, o, args, seed, err, errlen);
}

static sched_state *make_topk(ir_arena *a, sc_pipeline *p, const bounds_result *b, const space_opts *o,
                              const space_search_args *args, uint64_t seed, char *err, size_t errlen) {
    return make_batch("topk", a, p, b, o, args, seed, err, errlen);
}

static const space_strategy strategies[] = {
    { "root", "every Func at root (boundary wrappers inlined), 1-D tiles", false, make_root },
    { "baseline", "point-wise Funcs inlined, the rest at root, 64-thread tiles (Li 2018)", false,
      make_baseline },
    { "random", "a random walk through the schedule space", true, make_random },
    { "oneshot", "beam search guided by the learned cost model (Anderson 2021 s8)", true, make_oneshot },
    { "topk", "the K best of the one-shot batch measured on the device, the fastest", true, make_topk },
};

enum { NSTRATEGIES = sizeof strategies / sizeof strategies[0] };

const space_strategy *space_strategy_by_name(const char *name)
{
    for (int i = 0; name && i < NSTRATEGIES; i++)
        if (!strcmp(strategies[i].name, name))
            return &strategies[i];
    return NULL;
}

int space_strategy_count(void)
{
    return NSTRATEGIES;
}

const space_strategy *space_strategy_at(int i)
{
    return i >= 0 && i < NSTRATEGIES ? &strategies[i] : NULL;
}

const char *space_strategy_names(char *buf, size_t len, const char *sep, const char *last)
{
    size_t n = 0;
    if (len)
        buf[0] = 0;
    for (int i = 0; i < NSTRATEGIES && n < len; i++) {
        const char *join = i == 0 ? "" : i == NSTRATEGIES - 1 ? last : sep;
        int w = snprintf(buf + n, len - n, "%s%s", join, strategies[i].name);
        if (w < 0)
            break;
        n += (size_t)w;
    }
    return buf;
}
