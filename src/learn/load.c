/*
 * load.c - a training set from the sample store (train_load.h): each
 * pipeline's text parsed once, each schedule parsed and featurized with
 * the pipeline's loop-nest and feature contexts, for the target its
 * device was measured with.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base.h"
#include "stagecraft.h"
#include "codegen.h"
#include "nest_query.h"
#include "train_load.h"

typedef struct {
    train_data *d;
    const train_load_opts *o;
    int64_t pipe_id;              /* the store's id of the pipeline being read */
    int pipe;                     /* its index in d, or -1 (unreadable) or -2 (held out) */
    sc_pipeline *p;
    bounds_result *b;
    nest_ctx *nx;
    feat_ctx *fx;
    ir_arena *a;
    int since_flush;
    double ref0;                  /* the group's first reference time (0: none yet) */
    int64_t group_device;         /* the group's device row and code generation */
    int group_generation;
    char key[NN_DEVICE_MAX];      /* the device whose target t is */
    bool t_ok;
    target t;
    bool first_device, mixed;
} loader;

static void loader_drop(loader *L) {
    if (L->fx) feat_ctx_free(L->fx);
    if (L->nx) nest_ctx_free(L->nx);
    if (L->a) ir_arena_free(L->a);
    if (L->b) bounds_free(L->b);
    if (L->p) sc_pipeline_free(L->p);
    L->fx = NULL;
    L->nx = NULL;
    L->a = NULL;
    L->b = NULL;
    L->p = NULL;
}

static bool loader_held(const loader *L, const char *source) {
    if (strncmp(source, "app:", 4)) return false;
    bool held = false;
    for (int i = 0; i < L->o->nhold; i++)
        if (!strcmp(source + 4, L->o->hold[i])) {
            if (L->o->hold_pipes) L->o->hold_pipes[i]++;   /* every copy of a repeated name */
            held = true;
        }
    return held;
}

/* A new group of the pipeline's samples: those of one code generation and
 * one device row.  Times of other code, or of another machine, rank the
 * same schedules differently (docs/costmodel.md), so each group is a
 * pipeline of its own to the loss and the metrics, in the units of its
 * own first reference time. */
static void loader_group(loader *L, const store_sample *s) {
    L->pipe = train_data_pipeline(L->d, s->pipeline_name, s->pipeline_source, s->pipeline_hash);
    L->ref0 = 0;
    L->group_device = s->device;
    L->group_generation = s->generation;
}

/* Each kernel's time alone (store.h) attached to the sample just added:
 * each feature row's kernel (its root Func and stage) found among them
 * by name (train_data_add_kernels). */
static void loader_kernels(loader *L, const store_sample *s, const feat_result *r) {
    store_kernel_time *k = base_calloc(STORE_MAX_KERNEL_TIMES, sizeof *k);
    int *row_kernel = base_calloc((size_t)r->n + 1, sizeof(int));
    double *ms = base_calloc(STORE_MAX_KERNEL_TIMES, sizeof(double));
    char err[300];
    int nk = store_kernel_ms_parse(s->kernel_ms, k, STORE_MAX_KERNEL_TIMES, err, sizeof err);
    for (int i = 0; i < r->n; i++) {
        int f = r->rows[i].kernel_func, j = 0;
        const sc_func *fn = f >= 0 && f < L->p->funcs.n ? L->p->funcs.items[f] : NULL;
        while (fn && j < nk && !(k[j].stage == r->rows[i].kernel_stage && !strcmp(k[j].func, fn->name))) j++;
        row_kernel[i] = fn && j < nk ? j : -1;
    }
    char (*names)[STORE_FUNC_NAME_MAX + 16] = base_calloc(STORE_MAX_KERNEL_TIMES, sizeof *names);
    const char **np = base_calloc(STORE_MAX_KERNEL_TIMES, sizeof *np);
    for (int j = 0; j < nk; j++) {
        ms[j] = k[j].ms;
        snprintf(names[j], sizeof names[j], "%s.%d", k[j].func, k[j].stage);
        np[j] = names[j];
    }
    if (nk < 0) L->d->kernel_unmatched++;
    else train_data_add_named_kernels(L->d, row_kernel, ms, np, nk);
    free(names);
    free(np);
    free(k);
    free(row_kernel);
    free(ms);
}

/* A new pipeline: parsed, bounded, with fresh contexts. */
static void loader_pipeline(loader *L, const store_sample *s) {
    loader_drop(L);
    L->pipe_id = s->pipeline;
    if (loader_held(L, s->pipeline_source)) {
        L->pipe = -2;
        return;
    }
    char file[300];
    snprintf(file, sizeof file, "%s.pipe", s->pipeline_name);
    L->p = sc_parse_string(file, s->pipeline_text, strlen(s->pipeline_text), NULL);
    L->b = sc_error_count(L->p) ? NULL : bounds_infer(L->p);
    if (!L->b) {
        if (L->o->log)
            fprintf(L->o->log, "skipping pipeline %s: %s\n", s->pipeline_name,
                    sc_error_count(L->p) ? sc_error_message(L->p, 0) : "no bounds");
        loader_drop(L);
        L->pipe = -1;
        return;
    }
    L->nx = nest_ctx_new(L->p, L->b);
    L->fx = feat_ctx_new(L->p, L->b);
    L->a = ir_arena_new();
    L->since_flush = 0;
    loader_group(L, s);
}

static int loader_sample(const store_sample *s, void *ud) {
    loader *L = ud;
    train_data *d = L->d;
    if (L->o->pipeline && s->pipeline != L->o->pipeline) return 0;
    if (s->pipeline != L->pipe_id) loader_pipeline(L, s);
    if (L->pipe == -2) {
        d->held_out++;
        return 0;
    }
    if (L->pipe < 0) {
        d->rejected_input++;
        return 0;
    }
    if (s->generation < L->o->min_generation) {
        d->rejected_generation++;
        return 0;
    }
    if (s->device != L->group_device || s->generation != L->group_generation) loader_group(L, s);
    if (strcmp(L->key, s->device_key)) {
        snprintf(L->key, sizeof L->key, "%s", s->device_key);
        char err[512], what[NN_DEVICE_MAX + 32];
        snprintf(what, sizeof what, "target of device %s", s->device_key);
        L->t_ok = target_parse(what, s->target_text, &L->t, err, sizeof err) == 0;
        if (!L->t_ok && L->o->log) fprintf(L->o->log, "skipping samples of device %s: %s\n", s->device_key, err);
        if (L->first_device) {
            snprintf(d->device, sizeof d->device, "%s", s->device_key);
            L->first_device = false;
        } else if (strcmp(d->device, s->device_key)) {
            L->mixed = true;
        }
    }
    if (!L->t_ok) {
        d->rejected_input++;
        return 0;
    }
    if (s->ref_ms > 0 && s->one_sample && s->date && !strncmp(s->date, "20", 2) &&
        strcmp(s->date, TRAIN_COLD_REFERENCE_FIXED) < 0) {
        d->rejected_cold++;
        return 0;
    }
    char err[1024];
    sched_state *st = sched_parse(L->a, L->p, "schedule", s->schedule_text, err, sizeof err);
    if (!st || !sched_complete(L->p, st)) {
        d->rejected_input++;
        return 0;
    }
    /* the kernel cache grows with every new kernel: dropped now and then */
    if (++L->since_flush >= 256) {
        nest_ctx_flush(L->nx);
        L->since_flush = 0;
    }
    nest_ctx_set_staging(L->nx, target_stages_registers(&L->t));
    /* the thread mapping the sample's code had (codegen.h, generation 20) */
    nest_ctx_set_cyclic(L->nx, target_cyclic_points(&L->t) && s->generation >= CG_GENERATION_CYCLIC_POINTS);
    nest *model = nest_build(L->nx, st, err, sizeof err);
    /* timed with register staging, which a CPU's code no longer has, or
     * with loops rolled that lowering now unrolls */
    cg_code_change change = model ? cg_code_changed_since(s->generation, L->p, L->b, st, model, L->t.cpu,
                                                          !strncmp(s->device_key, "opencl:", 7))
                                  : CG_CODE_SAME;
    /* faster at the edges only, the order kept: in its own group */
    if (change == CG_CODE_ROWS_APART_EDGES) {
        d->kept_rows_apart++;
        change = CG_CODE_SAME;
    }
    /* the older conversions' branches: the order kept, in its own group */
    if (change == CG_CODE_CONVERSIONS) {
        d->kept_conversions++;
        change = CG_CODE_SAME;
    }
    if (change != CG_CODE_SAME && (L->o->keep_changed >> change & 1u)) {
        d->kept_changed++;
        change = CG_CODE_SAME;
    }
    if (change != CG_CODE_SAME) {
        nest_free(model);
        if (change == CG_CODE_STAGING) d->rejected_staged++;
        else if (change == CG_CODE_DIVISION) d->rejected_division++;
        else if (change == CG_CODE_PRIVATE) d->rejected_private++;
        else if (change == CG_CODE_INTERIOR) d->rejected_interior++;
        else if (change == CG_CODE_MINMAX) d->rejected_minmax++;
        else if (change == CG_CODE_SCAN_ORDER) d->rejected_scan++;
        else if (change == CG_CODE_SQUARE) d->rejected_square++;
        else if (change == CG_CODE_MERGED_THREADS) d->rejected_merged++;
        else if (change == CG_CODE_ROWS_APART) d->rejected_rows_apart++;
        else if (change == CG_CODE_POINTER_SELECTS) d->rejected_pointer_selects++;
        else if (change == CG_CODE_NARROW_SPLITS) d->rejected_narrow_splits++;
        else if (change == CG_CODE_PRIVATE_PICKS) d->rejected_private_picks++;
        else if (change == CG_CODE_PARTIAL_GUARDS) d->rejected_partial_guards++;
        else if (change == CG_CODE_GUARDED_MINS) d->rejected_guarded_mins++;
        else if (change == CG_CODE_LONGER_UNROLLS) d->rejected_longer_unrolls++;
        else if (change == CG_CODE_DATA_PICKS) d->rejected_data_picks++;
        else d->rejected_unrolled++;
        return 0;
    }
    if (model && s->date && !strncmp(s->date, "20", 2) && strcmp(s->date, TRAIN_REDUCTION_AROUND_TILE) < 0 &&
        nest_any_reduction_around_tile(model)) {
        nest_free(model);
        d->rejected_order++;
        return 0;
    }
    feat_result r = { 0 };
    if (!model || feat_compute_ctx(L->fx, st, model, &L->t, &r, err, sizeof err) != 0) {
        if (model) nest_free(model);
        d->rejected_input++;
        return 0;
    }
    nest_free(model);
    /* A sample timed in turn with its pipeline's reference schedule is
     * taken as its ratio to it, in the units of the pipeline's first
     * reference time: the load of the machine, which drifts over minutes,
     * cancels (docs/samples.md). */
    double ms = s->ms;
    if (s->ref_ms > 0) {
        if (L->ref0 <= 0) L->ref0 = s->ref_ms;
        ms = s->ms / s->ref_ms * L->ref0;
    }
    if (train_data_add(d, L->pipe, &r, &L->t, ms) == 1 && s->kernel_ms && *s->kernel_ms)
        loader_kernels(L, s, &r);
    feat_free(&r);
    return 0;
}

/* The names of the code changes, as --keep-changed takes them. */
static const struct {
    const char *name;
    cg_code_change change;
} code_change_names[] = {
    { "staging", CG_CODE_STAGING },           { "division", CG_CODE_DIVISION },
    { "unrolling", CG_CODE_UNROLLING },       { "private", CG_CODE_PRIVATE },
    { "interior", CG_CODE_INTERIOR },         { "minmax", CG_CODE_MINMAX },
    { "scan-order", CG_CODE_SCAN_ORDER },     { "square", CG_CODE_SQUARE },
    { "merged-threads", CG_CODE_MERGED_THREADS }, { "rows-apart", CG_CODE_ROWS_APART },
    { "pointer-selects", CG_CODE_POINTER_SELECTS }, { "narrow-store", CG_CODE_NARROW_SPLITS },
    { "private-picks", CG_CODE_PRIVATE_PICKS }, { "partial-guards", CG_CODE_PARTIAL_GUARDS },
    { "guarded-mins", CG_CODE_GUARDED_MINS }, { "longer-unrolls", CG_CODE_LONGER_UNROLLS },
    { "data-picks", CG_CODE_DATA_PICKS },
};

int train_keep_changed_parse(const char *list, unsigned *mask, char *err, size_t errlen) {
    int n = (int)(sizeof code_change_names / sizeof code_change_names[0]);
    unsigned m = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        bool found = false;
        if (len == 3 && !strncmp(p, "all", 3)) {
            for (int k = 0; k < n; k++) m |= 1u << code_change_names[k].change;
            found = true;
        }
        for (int k = 0; k < n && !found; k++)
            if (strlen(code_change_names[k].name) == len && !strncmp(p, code_change_names[k].name, len)) {
                m |= 1u << code_change_names[k].change;
                found = true;
            }
        if (!found) {
            char names[512] = "";
            for (int k = 0; k < n; k++) {
                size_t at = strlen(names);
                snprintf(names + at, sizeof names - at, "%s, ", code_change_names[k].name);
            }
            snprintf(err, errlen, "'%.*s' is not a code change (expected a comma-separated list of %sall)", (int)len,
                     p, names);
            return -1;
        }
        if (!p[len]) break;
        p += len + 1;
    }
    *mask = m;
    return 0;
}

int train_load_store(train_data *d, store *st, const train_load_opts *o, char *err, size_t errlen) {
    loader L = { .d = d, .o = o, .pipe_id = -1, .pipe = -1, .first_device = true };
    int rc = store_each_sample(st, o->device_key, loader_sample, &L, err, errlen);
    loader_drop(&L);
    if (L.mixed) d->device[0] = 0;
    return rc < 0 ? -1 : 0;
}

/* A store with the exchange files' samples, imported in order: in memory
 * when SQLite allows it, else in a temporary file removed at once. */
static store *train_open_data(const char *const *data, int ndata, char *err, size_t errlen) {
    char e2[512];
    store *st = store_open(":memory:", STORE_WRITE, e2, sizeof e2);
    char tmp[] = "/tmp/stagecraft-train-XXXXXX";
    bool temp = false;
    if (!st) {
        int fd = mkstemp(tmp);
        if (fd < 0) {
            base_fail(err, errlen, "cannot make a temporary database for %s", data[0]);
            return NULL;
        }
        close(fd);
        remove(tmp);
        st = store_open(tmp, STORE_WRITE, err, errlen);
        if (!st) return NULL;
        temp = true;
    }
    int rc = 0;
    for (int i = 0; i < ndata && rc == 0; i++) {
        int64_t added = 0;
        rc = store_import(st, data[i], &added, err, errlen);
    }
    if (temp) {
        char side[sizeof tmp + 8];
        remove(tmp);
        snprintf(side, sizeof side, "%s-wal", tmp);
        remove(side);
        snprintf(side, sizeof side, "%s-shm", tmp);
        remove(side);
    }
    if (rc != 0) {
        store_close(st);
        return NULL;
    }
    return st;
}

store *train_open_samples(const char *db, const char *const *data, int ndata, char *err, size_t errlen) {
    if (db) return store_open(db, STORE_READ, err, errlen);
    if (ndata < 1) {
        base_fail(err, errlen, "no samples given (a database or exchange files)");
        return NULL;
    }
    return train_open_data(data, ndata, err, errlen);
}

int train_load(train_data *d, const char *db, const char *data, const train_load_opts *o, char *err,
               size_t errlen) {
    store *st = train_open_samples(db, &data, data ? 1 : 0, err, errlen);
    if (!st) return -1;
    int rc = train_load_store(d, st, o, err, errlen);
    store_close(st);
    return rc;
}

/* The distinct device keys of the store's samples, for a message. */
typedef struct {
    char *buf;
    size_t len;
    int n;
} key_list;

static int collect_key(const store_sample *s, void *ud) {
    key_list *k = ud;
    char quoted[NN_DEVICE_MAX + 4];
    snprintf(quoted, sizeof quoted, "'%s'", s->device_key);
    if (strstr(k->buf, quoted)) return 0;
    size_t at = strlen(k->buf);
    snprintf(k->buf + at, k->len - at, "%s%s", k->n++ ? ", " : "", quoted);
    return 0;
}

int train_store_device_keys(store *st, char *buf, size_t len, char *err, size_t errlen) {
    buf[0] = 0;
    key_list k = { buf, len, 0 };
    int rc = store_each_sample(st, NULL, collect_key, &k, err, errlen);
    return rc < 0 ? -1 : k.n;
}

int train_device_keys(const char *db, const char *data, char *buf, size_t len, char *err, size_t errlen) {
    store *st = train_open_samples(db, &data, data ? 1 : 0, err, errlen);
    if (!st) return -1;
    int n = train_store_device_keys(st, buf, len, err, errlen);
    store_close(st);
    return n;
}
