/*
 * legal.c - what a schedule may do (legal.h): the consumer graph, the
 * fusion rules, tilings, and the target's limits for complete and partial
 * states.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "legal.h"
#include "nest.h"

/* A measured fused Func: its footprint (elements) per realization, keyed
 * by its sched_func record. */
typedef struct {
    const sched_func *key;
    int64_t count;
    int64_t ext[SC_MAX_DIMS];
} fp_entry;

/* A stage's pure loops: legal_pure_dims, and legal_pure_extents when the
 * ctx has bounds. */
typedef struct {
    int np;
    int dims[SC_MAX_DIMS];
    int64_t ext[SC_MAX_DIMS];
} stage_loops;

struct legal_ctx {
    const sc_pipeline *p;
    const bounds_result *b;
    const target *t;
    bool warp_multiple;
    int n;                      /* funcs */
    fusion_graph *g;            /* the consumer graph and the fusion rules */
    fp_entry *memo;             /* open addressing, power-of-two size */
    int memo_cap, memo_n;
    unsigned char *inl;         /* the inline decisions of the last size asked */
    double inl_size;
    int inl_worst;
    bool inl_valid;
    nest_ctx *nest;             /* the loop-nest model, made when first needed */
    ir_arena *scratch;          /* legal_fits' completed state, reset at every call */
    stage_loops **loops;        /* [fid][stage] its pure loops (every check asks) */
    /* What legal_fits asks of every state, kept: the record of an
     * undecided Func (root, default tiles) per Func, in `keep`; the ROOT
     * records whose tiles all passed legal_tile (the check depends on the
     * record only); check_memory's buffers. */
    ir_arena *keep;
    sched_func **defaults;
    const sched_func **tiled;   /* open addressing, power-of-two size */
    int tiled_cap, tiled_n;
    int *kbase, *root, *rstage;
    int64_t *smem, *words;
};

static const sc_func *func_at(const sc_pipeline *p, int id) { return p->funcs.items[id]; }

legal_ctx *legal_new(const sc_pipeline *p, const bounds_result *b, const target *t, bool warp_multiple) {
    legal_ctx *x = base_calloc(1, sizeof *x);
    x->p = p;
    x->b = b;
    x->t = t;
    x->warp_multiple = warp_multiple;
    x->n = p->funcs.n;
    x->g = fusion_graph_new(p);
    x->inl = base_calloc((size_t)x->n + 1, 1);
    x->memo_cap = 64;
    x->memo = base_calloc((size_t)x->memo_cap, sizeof(fp_entry));
    x->scratch = ir_arena_new();
    x->keep = ir_arena_new();
    x->defaults = base_calloc((size_t)x->n + 1, sizeof(sched_func *));
    x->tiled_cap = 64;
    x->tiled = base_calloc((size_t)x->tiled_cap, sizeof(sched_func *));
    x->kbase = base_calloc((size_t)x->n + 1, sizeof(int));
    for (int i = 0; i < x->n; i++) x->kbase[i + 1] = x->kbase[i] + func_at(p, i)->nstages;
    x->smem = base_calloc((size_t)x->kbase[x->n] + 1, sizeof(int64_t));
    x->words = base_calloc((size_t)x->kbase[x->n] + 1, sizeof(int64_t));
    x->root = base_calloc((size_t)x->n + 1, sizeof(int));
    x->rstage = base_calloc((size_t)x->n + 1, sizeof(int));
    x->loops = base_calloc((size_t)x->n + 1, sizeof(stage_loops *));
    for (int i = 0; i < x->n; i++) {
        const sc_func *f = func_at(p, i);
        x->loops[i] = base_calloc((size_t)f->nstages + 1, sizeof(stage_loops));
        for (int st = 0; st < f->nstages; st++) {
            stage_loops *l = &x->loops[i][st];
            l->np = fusion_pure_dims(f, st, l->dims);
            if (b) fusion_pure_extents(b, f, st, l->ext);
        }
    }
    return x;
}

void legal_free(legal_ctx *x) {
    if (!x) return;
    fusion_graph_free(x->g);
    free(x->memo);
    free(x->inl);
    if (x->nest) nest_ctx_free(x->nest);
    ir_arena_free(x->scratch);
    for (int i = 0; i < x->n; i++) free(x->loops[i]);
    free(x->loops);
    ir_arena_free(x->keep);
    free(x->defaults);
    free(x->tiled);
    free(x->kbase);
    free(x->smem);
    free(x->words);
    free(x->root);
    free(x->rstage);
    free(x);
}

void legal_forget(legal_ctx *x) {
    memset(x->memo, 0, sizeof(fp_entry) * (size_t)x->memo_cap);
    x->memo_n = 0;
    memset(x->tiled, 0, sizeof(sched_func *) * (size_t)x->tiled_cap);
    x->tiled_n = 0;
}

/* ---- the consumer graph and the fusion rules (fusion.h) ------------------- */

int legal_max_uses(const legal_ctx *x) { return fusion_max_uses(x->g); }

int legal_consumers(legal_ctx *x, const sched_state *s, int fid, legal_use *out) {
    return fusion_consumers(x->g, s, fid, out);
}

int legal_pure_dims(const sc_func *f, int st, int *dims) { return fusion_pure_dims(f, st, dims); }

int legal_pure_extents(const bounds_result *b, const sc_func *f, int st, int64_t *ext) {
    return fusion_pure_extents(b, f, st, ext);
}

bool legal_pure_updates(const sc_func *f) { return fusion_pure_updates(f); }

int legal_fusion(legal_ctx *x, const sched_state *s, int fid, sched_loc loc, int at, int *stage,
                 char *err, size_t errlen) {
    assert(loc == SCHED_BLOCK || loc == SCHED_THREAD);
    return fusion_check(x->g, s, fid, loc, at, stage, err, errlen);
}

int legal_lca(legal_ctx *x, const sched_state *s, int fid, sched_loc loc) { return fusion_lca(x->g, s, fid, loc); }

int legal_stage_at(legal_ctx *x, const sched_state *s, int fid) { return fusion_stage_at(x->g, s, fid); }

static bool fused(const sched_func *sf) { return sf && (sf->loc == SCHED_BLOCK || sf->loc == SCHED_THREAD); }

static bool is_inline(const sched_state *s, int g) { return s->f[g] && s->f[g]->loc == SCHED_INLINE; }

/* ---- tiles ------------------------------------------------------------------- */

int64_t legal_threads(const sched_tile *t) {
    int64_t n = 1;
    for (int k = 0; k < t->npure; k++) n *= t->threads[k] > 0 ? t->threads[k] : 1;
    return n;
}

static int64_t serial_points(const sched_tile *t) {
    int64_t n = 1;
    for (int k = 0; k < t->npure; k++) n *= t->serial[k] > 0 ? t->serial[k] : 1;
    return n;
}

int64_t legal_blocks(const legal_ctx *x, const sc_func *f, int st, const sched_tile *t) {
    int64_t ext[SC_MAX_DIMS], n = 1;
    int np = legal_pure_extents(x->b, f, st, ext);
    for (int k = 0; k < np && k < t->npure; k++) {
        int64_t tile = (int64_t)(t->threads[k] > 0 ? t->threads[k] : 1) * (t->serial[k] > 0 ? t->serial[k] : 1);
        n *= (ext[k] + tile - 1) / tile;
    }
    return n;
}

static int first_large(int np, const int64_t *ext) {
    for (int k = 0; k < np; k++) if (ext[k] >= 16) return k;
    return 0;
}

sched_tile legal_default_tile(const legal_ctx *x, const sc_func *f, int st) {
    sched_tile t;
    memset(&t, 0, sizeof t);
    const int64_t *ext = x->loops[f->id][st].ext;
    t.npure = x->loops[f->id][st].np;
    for (int k = 0; k < t.npure; k++) t.threads[k] = t.serial[k] = 1;
    if (t.npure) t.threads[first_large(t.npure, ext)] = x->t ? x->t->warp_size : 32;
    return t;
}

/* "blur_x" for a single-stage Func, "hist stage 1" otherwise. */
static const char *stage_name(const sc_func *f, int st, char *buf, size_t len) {
    if (f->nstages == 1) snprintf(buf, len, "%s", f->name);
    else snprintf(buf, len, "%s stage %d", f->name, st);
    return buf;
}

/* a * b for a, b >= 0, saturating at 2^40 (sizes typed in by hand may be
 * absurd; the limits they are compared with are far below). */
static int64_t sat_mul(int64_t a, int64_t b) {
    const int64_t cap = (int64_t)1 << 40;
    if (a <= 0 || b <= 0) return 0;
    if (a < ((int64_t)1 << 20) && b < ((int64_t)1 << 20)) return a * b;    /* below 2^40: no division */
    if (a > cap / b) return cap;
    return a * b;
}

/* Well formed: one entry per pure loop, positive sizes. */
static int tile_shape(const legal_ctx *x, const sc_func *f, int st, sched_loc loc, const sched_tile *t, char *err,
                      size_t errlen) {
    const int *dims = x->loops[f->id][st].dims, np = x->loops[f->id][st].np;
    char nm[200];
    if (t->npure != np)
        return base_fail(err, errlen, "%s: the tiling has %d pure loop%s, but the stage has %d",
                    stage_name(f, st, nm, sizeof nm), t->npure, t->npure == 1 ? "" : "s", np);
    for (int k = 0; k < np; k++) {
        if (t->threads[k] < 1)
            return base_fail(err, errlen, "%s: %d threads in loop %s; a thread count must be at least 1",
                        stage_name(f, st, nm, sizeof nm), t->threads[k], f->vars[dims[k]]);
        if (loc == SCHED_ROOT && t->serial[k] < 1)
            return base_fail(err, errlen, "%s: serial tile %d in loop %s; a serial size must be at least 1",
                        stage_name(f, st, nm, sizeof nm), t->serial[k], f->vars[dims[k]]);
    }
    return 0;
}

/* The root stage that a fused Func's chain ends in: *root, *rstage. */
static bool kernel_of(legal_ctx *x, const sched_state *s, int g, int *root, int *rstage) {
    int prev = g, hops = 0;
    while (fused(s->f[g])) {
        if (hops++ > x->n) return false;
        prev = g;
        g = s->f[g]->at;
        if (g < 0 || g >= x->n || !s->f[g]) return false;
    }
    if (s->f[g]->loc != SCHED_ROOT || prev == g) return false;
    *root = g;
    *rstage = fusion_stage_at(x->g, s, prev);
    return *rstage >= 0;
}

/* The tile of stage st of a ROOT or BLOCK Func, its pending stages tiled
 * by default. */
static sched_tile tile_of(const legal_ctx *x, const sched_state *s, int g, int st) {
    const sched_func *sf = s->f[g];
    const sc_func *f = func_at(x->p, g);
    if (sf && sf->tile && st < sf->nstages - sf->pending) return sf->tile[st];
    sched_tile t = legal_default_tile(x, f, st);
    if (sf && sf->loc == SCHED_BLOCK)
        for (int k = 0; k < t.npure; k++) t.threads[k] = 1;
    return t;
}

bool legal_cpu_vector_stage(const target *t, const sc_func *f, int st) {
    return t && t->cpu && ir_stage_reduction_around(f, st);
}

static int root_tile(legal_ctx *x, const sc_func *f, int st, const sched_tile *t, char *err, size_t errlen) {
    const target *tg = x->t;
    if (tile_shape(x, f, st, SCHED_ROOT, t, err, errlen)) return -1;
    if (!tg) return 0;
    char nm[200];
    int64_t threads = 1, need = 1;
    const int64_t *ext = x->loops[f->id][st].ext;
    for (int k = 0; k < t->npure; k++) threads = sat_mul(threads, t->threads[k]);
    /* a vector tile's lanes are its serial points: no warp multiple */
    bool warp_multiple = x->warp_multiple &&
                         !(legal_cpu_vector_stage(tg, f, st) && serial_points(t) >= LEGAL_UNROLL_LIMIT);
    /* the points at serial sizes: only the warp-multiple rule asks */
    if (warp_multiple && threads % tg->warp_size)
        for (int k = 0; k < t->npure; k++) need = sat_mul(need, (ext[k] + t->serial[k] - 1) / t->serial[k]);
    if (err && errlen &&
        (threads > tg->max_threads_per_block || (warp_multiple && threads % tg->warp_size) ||
         LEGAL_BASE_REGISTERS + LEGAL_STAGED_REGISTERS + serial_points(t) > tg->registers_per_thread))
        stage_name(f, st, nm, sizeof nm);
    if (threads > tg->max_threads_per_block)
        return base_fail(err, errlen, "%s: %lld thread%s per block, over the target's %d (%s)", nm, (long long)threads,
                    threads == 1 ? "" : "s", tg->max_threads_per_block, tg->name);
    int64_t dims[3];
    target_group_dims(t->threads, t->npure, dims);
    int over = target_dim_over(tg, dims);
    if (over >= 0) {
        stage_name(f, st, nm, sizeof nm);
        return base_fail(err, errlen, "%s: a work-group of %lld x %lld x %lld threads, over the target's limit of %d "
                         "along dimension %d (%s)", nm, (long long)dims[0], (long long)dims[1], (long long)dims[2],
                         tg->max_threads_per_dim[over], over, tg->name);
    }
    /* A stage whose whole iteration space, at its serial sizes, has fewer
     * than a warp of points, or that one block covers entirely, cannot be
     * helped by a warp-multiple block: more threads would only idle. */
    if (warp_multiple && threads % tg->warp_size && need >= tg->warp_size && threads < need)
        return base_fail(err, errlen, "%s: %lld thread%s per block, not a multiple of the target's warp size %d (%s)", nm,
                    (long long)threads, threads == 1 ? "" : "s", tg->warp_size, tg->name);
    int64_t serial = serial_points(t), regs = LEGAL_BASE_REGISTERS + LEGAL_STAGED_REGISTERS + serial;
    if (regs > tg->registers_per_thread)
        return base_fail(err, errlen, "%s: an estimated %lld registers per thread (%d + %d for thread-level and staged "
                    "points + %lld serial points), over the target's %d (%s)", nm, (long long)regs,
                    LEGAL_BASE_REGISTERS, LEGAL_STAGED_REGISTERS, (long long)serial, tg->registers_per_thread, tg->name);
    return 0;
}

/* The threads per block of the kernel that fid, at BLOCK of `at`, is
 * computed in (its own link counts): the limit of its block tilings, with
 * the kernel's root and stage; INT64_MAX when the kernel cannot be found
 * (the fusion rules report that). */
static int64_t block_limit(legal_ctx *x, const sched_state *s, int fid, int at, int *root, int *stage) {
    int g = at, prev = -1, hops = 0, rstage = -1;
    while (g >= 0 && g < x->n && fused(s->f[g]) && hops++ <= x->n) { prev = g; g = s->f[g]->at; }
    if (g < 0 || g >= x->n || !s->f[g] || s->f[g]->loc != SCHED_ROOT) return INT64_MAX;
    if (prev < 0) {
        /* fid is fused straight into the root: its own stage there */
        const sched_func *mine = s->f[fid];
        if (mine && fused(mine) && mine->at == at) rstage = fusion_stage_at(x->g, s, fid);
        else if (legal_fusion(x, s, fid, SCHED_BLOCK, at, &rstage, NULL, 0) != 0) return INT64_MAX;
    } else {
        rstage = fusion_stage_at(x->g, s, prev);
    }
    if (rstage < 0) return INT64_MAX;
    sched_tile rt = tile_of(x, s, g, rstage);
    if (root) *root = g;
    if (stage) *stage = rstage;
    return legal_threads(&rt);
}

int64_t legal_block_threads(legal_ctx *x, const sched_state *s, int fid, int at) {
    return block_limit(x, s, fid, at, NULL, NULL);
}

static int block_tile(legal_ctx *x, const sched_state *s, int fid, int st, int at, const sched_tile *t, char *err,
                      size_t errlen) {
    const sc_func *f = func_at(x->p, fid);
    if (tile_shape(x, f, st, SCHED_BLOCK, t, err, errlen)) return -1;
    int g = -1, rstage = -1;
    int64_t kt = block_limit(x, s, fid, at, &g, &rstage), threads = 1;
    for (int k = 0; k < t->npure; k++) threads = sat_mul(threads, t->threads[k]);
    if (threads > kt) {
        char nm[200], rn[200];
        stage_name(f, st, nm, sizeof nm);
        return base_fail(err, errlen, "%s: %lld threads (block level of %s), over the %lld threads per block of its "
                    "kernel %s", nm, (long long)threads, func_at(x->p, at)->name, (long long)kt,
                    stage_name(func_at(x->p, g), rstage, rn, sizeof rn));
    }
    return 0;
}

int legal_tile(legal_ctx *x, const sched_state *s, int fid, int st, sched_loc loc, int at,
               const sched_tile *t, char *err, size_t errlen) {
    const sc_func *f = func_at(x->p, fid);
    if (loc == SCHED_ROOT) return root_tile(x, f, st, t, err, errlen);
    assert(loc == SCHED_BLOCK);
    return block_tile(x, s, fid, st, at, t, err, errlen);
}

double legal_max_inlined_size(const sc_pipeline *p, const sched_state *s, int *worst) {
    return fusion_max_inlined_size(p, s, worst);
}

/* ---- footprints ----------------------------------------------------------- */

static fp_entry *memo_find(legal_ctx *x, const sched_func *key) {
    uint64_t h = ((uint64_t)(uintptr_t)key >> 4) * 0x9e3779b97f4a7c15ull;
    for (int i = (int)(h & (uint64_t)(x->memo_cap - 1));; i = (i + 1) & (x->memo_cap - 1)) {
        if (x->memo[i].key == key || !x->memo[i].key) return &x->memo[i];
    }
}

static void memo_put(legal_ctx *x, const sched_func *key, int64_t count, const int64_t *ext, int nd) {
    if (2 * (x->memo_n + 1) > x->memo_cap) {
        fp_entry *old = x->memo;
        int cap = x->memo_cap;
        x->memo_cap *= 2;
        x->memo = base_calloc((size_t)x->memo_cap, sizeof(fp_entry));
        x->memo_n = 0;
        for (int i = 0; i < cap; i++) if (old[i].key) memo_put(x, old[i].key, old[i].count, old[i].ext, SC_MAX_DIMS);
        free(old);
    }
    fp_entry *e = memo_find(x, key);
    if (!e->key) x->memo_n++;
    e->key = key;
    e->count = count;
    for (int d = 0; d < nd && d < SC_MAX_DIMS; d++) e->ext[d] = ext[d];
}

void legal_inherit(legal_ctx *x, const sched_func *child, const sched_func *parent) {
    fp_entry *e = memo_find(x, parent);
    if (!e->key) return;
    fp_entry copy = *e;
    memo_put(x, child, copy.count, copy.ext, SC_MAX_DIMS);
}

/* The state with every undecided Func at root and every pending stage
 * tiled by default, in the scratch arena. */
static sched_state *completed(legal_ctx *x, ir_arena *scratch, const sched_state *s) {
    sched_state *full = sched_state_copy(scratch, s);
    for (int i = 0; i < x->n; i++) {
        const sc_func *f = func_at(x->p, i);
        if (f->kind != FUNC_DEFINED) continue;
        const sched_func *sf = full->f[i];
        if (sf && sf->loc != SCHED_UNDECIDED && !(sf->tile && sf->pending > 0)) continue;
        sched_func *c;
        if (sf && sf->loc != SCHED_UNDECIDED) {
            c = sched_func_copy(scratch, sf);
            for (int st = sf->nstages - sf->pending; st < sf->nstages; st++) c->tile[st] = tile_of(x, s, i, st);
            c->pending = 0;
        } else {
            if (!x->defaults[i]) {
                x->defaults[i] = sched_func_new(x->keep, SCHED_ROOT, -1, f->nstages);
                for (int st = 0; st < f->nstages; st++) x->defaults[i]->tile[st] = legal_default_tile(x, f, st);
            }
            c = x->defaults[i];
        }
        full->f[i] = c;
    }
    return full;
}

/* The ctx's loop-nest context, made at first use, staging as its target
 * wants (target_stages_registers). */
static nest_ctx *legal_nest(legal_ctx *x) {
    if (!x->nest) {
        x->nest = nest_ctx_new(x->p, x->b);
        nest_ctx_set_staging(x->nest, target_stages_registers(x->t));
        nest_ctx_set_cyclic(x->nest, target_cyclic_points(x->t));
    }
    return x->nest;
}

/* Measures the footprint of every fused Func of the complete state full
 * not measured yet (keys: the records of s, which full shares): from the
 * loop-nest model (nest.h), which gives lowering's footprints without
 * lowering.  0, or -1 with the model's message. */
static int measure(legal_ctx *x, const sched_state *s, const sched_state *full, char *err, size_t errlen) {
    bool need = false;
    for (int i = 0; i < x->n && !need; i++)
        if (fused(full->f[i]) && !memo_find(x, s->f[i] ? s->f[i] : full->f[i])->key) need = true;
    if (!need) return 0;
    char msg[512] = "";
    nest *model = nest_build(legal_nest(x), full, msg, sizeof msg);
    if (!model) return base_fail(err, errlen, "%s", msg);
    for (int i = 0; i < x->n; i++) {
        if (!fused(full->f[i])) continue;
        const nest_func *nf = model->funcs[i];
        int64_t zero[SC_MAX_DIMS] = {0};
        memo_put(x, s->f[i] ? s->f[i] : full->f[i], nf ? nf->elems : 0, nf ? nf->extent : zero, nf ? nf->ndims : 0);
    }
    nest_free(model);
    return 0;
}

/* ---- records already checked ------------------------------------------------ */

static size_t tiled_slot(const legal_ctx *x, const sched_func *sf) {
    uint64_t h = ((uint64_t)(uintptr_t)sf >> 4) * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> 20) & (size_t)(x->tiled_cap - 1);
    while (x->tiled[i] && x->tiled[i] != sf) i = (i + 1) & (size_t)(x->tiled_cap - 1);
    return i;
}

/* Whether the ROOT record sf passed legal_tile in every stage before. */
static bool tiled_ok(const legal_ctx *x, const sched_func *sf) { return x->tiled[tiled_slot(x, sf)] == sf; }

static void tiled_put(legal_ctx *x, const sched_func *sf) {
    if (2 * (x->tiled_n + 1) > x->tiled_cap) {
        const sched_func **old = x->tiled;
        int cap = x->tiled_cap;
        x->tiled_cap *= 2;
        x->tiled = base_calloc((size_t)x->tiled_cap, sizeof(sched_func *));
        for (int i = 0; i < cap; i++)
            if (old[i]) x->tiled[tiled_slot(x, old[i])] = old[i];
        free(old);
    }
    size_t i = tiled_slot(x, sf);
    if (!x->tiled[i]) x->tiled_n++;
    x->tiled[i] = sf;
}

/* ---- the whole state --------------------------------------------------------- */

/* The rules of sched.h, Func by Func from the outputs. */
static int check_rules(legal_ctx *x, const sched_state *s, char *err, size_t errlen) {
    const sc_pipeline *p = x->p;
    for (int i = p->order.n - 1; i >= 0; i--) {
        const sc_func *f = ir_order_at(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        const sched_func *sf = s->f[f->id];
        if (!sf || sf->loc == SCHED_UNDECIDED)
            return base_fail(err, errlen, "%s: not scheduled (the state is partial)", f->name);
        if ((sf->loc == SCHED_ROOT || sf->loc == SCHED_BLOCK) && (!sf->tile || sf->nstages != f->nstages))
            return base_fail(err, errlen, "%s: the schedule tiles %d stage%s, the Func has %d", f->name,
                        sf->tile ? sf->nstages : 0, sf->nstages == 1 ? "" : "s", f->nstages);
    }
    for (int i = p->order.n - 1; i >= 0; i--) {
        const sc_func *f = ir_order_at(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        const sched_func *sf = s->f[f->id];
        if (f->is_output && sf->loc != SCHED_ROOT)
            return base_fail(err, errlen, "%s: an output must be computed at root, not %s", f->name, sched_loc_name(sf->loc));
        switch (sf->loc) {
        case SCHED_INLINE:
            if (f->nstages > 1)
                return base_fail(err, errlen, "%s: cannot be inline: it has update definitions (only a Func with a "
                            "single pure definition can be)", f->name);
            continue;
        case SCHED_ROOT:
            for (int st = 0; st < f->nstages && !tiled_ok(x, sf); st++)
                if (tile_shape(x, f, st, SCHED_ROOT, &sf->tile[st], err, errlen)) return -1;
            continue;
        case SCHED_BLOCK:
        case SCHED_THREAD:
            break;
        default:
            return base_fail(err, errlen, "%s: unknown compute location %d", f->name, (int)sf->loc);
        }
        if (legal_fusion(x, s, f->id, sf->loc, sf->at, NULL, err, errlen)) return -1;
        int r, rs;
        if (!kernel_of(x, s, f->id, &r, &rs))
            return base_fail(err, errlen, "%s: computed inside a cycle of fused Funcs", f->name);
        if (sf->loc == SCHED_BLOCK)
            for (int st = 0; st < f->nstages; st++)
                if (tile_shape(x, f, st, SCHED_BLOCK, &sf->tile[st], err, errlen)) return -1;
    }
    /* the size depends only on which Funcs are inline: the tilings of one
     * state's children all ask the same */
    bool same = x->inl_valid;
    for (int i = 0; i < x->n; i++) {
        unsigned char v = is_inline(s, i);
        if (x->inl[i] != v) same = false;
        x->inl[i] = v;
    }
    if (!same) {
        x->inl_size = legal_max_inlined_size(p, s, &x->inl_worst);
        x->inl_valid = true;
    }
    int worst = x->inl_worst;
    double size = x->inl_size;
    if (size > LEGAL_MAX_INLINED && worst >= 0)
        return base_fail(err, errlen, "%s: inlining makes its expression %.3g nodes large, over the limit of %d "
                    "(compute some of its inline producers at root or fused)", func_at(p, worst)->name, size,
                    LEGAL_MAX_INLINED);
    return 0;
}

/* Shared memory and registers of every kernel (a complete state full;
 * footprints keyed by the records of s). */
static int check_memory(legal_ctx *x, const sched_state *s, const sched_state *full, char *err, size_t errlen) {
    const sc_pipeline *p = x->p;
    const target *t = x->t;
    int n = x->n;
    const int *kbase = x->kbase;
    int64_t *smem = x->smem, *words = x->words;
    int *root = x->root, *rstage = x->rstage;
    memset(smem, 0, sizeof(int64_t) * (size_t)kbase[n]);
    memset(words, 0, sizeof(int64_t) * (size_t)kbase[n]);
    int rc = measure(x, s, full, err, errlen);
    for (int i = 0; i < n && !rc; i++) {
        root[i] = -1;
        if (!fused(full->f[i])) continue;
        if (!kernel_of(x, full, i, &root[i], &rstage[i])) { root[i] = -1; continue; }
        int64_t count = memo_find(x, s->f[i] ? s->f[i] : full->f[i])->count;
        int kk = kbase[root[i]] + rstage[i];
        if (full->f[i]->loc == SCHED_BLOCK) smem[kk] += count * (int64_t)sc_type_size(func_at(p, i)->type);
        else words[kk] += count;
    }
    for (int i = p->order.n - 1; i >= 0 && !rc; i--) {
        const sc_func *f = ir_order_at(p, i);
        const sched_func *sf = f->kind == FUNC_DEFINED ? full->f[f->id] : NULL;
        if (!sf || sf->loc != SCHED_ROOT) continue;
        for (int st = 0; st < f->nstages && !rc; st++) {
            int kk = kbase[f->id] + st;
            char nm[200];
            int64_t serial = serial_points(&sf->tile[st]);
            int64_t w = words[kk] + LEGAL_STAGED_REGISTERS, regs = LEGAL_BASE_REGISTERS + w + serial;
            if (smem[kk] > t->shared_mem_per_block || regs > t->registers_per_thread) stage_name(f, st, nm, sizeof nm);
            if (smem[kk] > t->shared_mem_per_block) {
                char who[600] = "";
                for (int j = 0; j < n; j++)
                    if (root[j] == f->id && rstage[j] == st && full->f[j]->loc == SCHED_BLOCK) {
                        size_t l = strlen(who);
                        int64_t c = memo_find(x, s->f[j] ? s->f[j] : full->f[j])->count;
                        snprintf(who + l, sizeof who - l, "%s%s %lld", l ? ", " : "", func_at(p, j)->name,
                                 (long long)(c * (int64_t)sc_type_size(func_at(p, j)->type)));
                    }
                rc = base_fail(err, errlen, "%s: %lld bytes of shared memory per block (%s), over the target's %d (%s)",
                          nm, (long long)smem[kk], who, t->shared_mem_per_block, t->name);
                break;
            }
            if (regs > t->registers_per_thread)
                rc = base_fail(err, errlen, "%s: an estimated %lld registers per thread (%d + %lld for thread-level and "
                          "staged points + %lld serial points), over the target's %d (%s)", nm, (long long)regs,
                          LEGAL_BASE_REGISTERS, (long long)w, (long long)serial, t->registers_per_thread, t->name);
        }
    }
    return rc;
}

int legal_fits(legal_ctx *x, const sched_state *s, char *err, size_t errlen) {
    const sc_pipeline *p = x->p;
    if (s->nfuncs != p->funcs.n)
        return base_fail(err, errlen, "the schedule is for a pipeline of %d Funcs, not %d", s->nfuncs, p->funcs.n);
    if (p->order.n != p->funcs.n) return base_fail(err, errlen, "pipeline %s is not finalized", p->name);
    if (!x->b) return base_fail(err, errlen, "no bounds to check the schedule against");
    if (x->t && x->t->warp_size < 1) return base_fail(err, errlen, "the target has no warp size");
    /* (the records completed() makes are never memo keys: see measure) */
    ir_arena_reset(x->scratch);
    sched_state *full = completed(x, x->scratch, s);
    int rc = check_rules(x, full, err, errlen);
    for (int i = p->order.n - 1; i >= 0 && !rc && x->t; i--) {
        const sc_func *f = ir_order_at(p, i);
        const sched_func *sf = f->kind == FUNC_DEFINED ? full->f[f->id] : NULL;
        if (!sf || (sf->loc != SCHED_ROOT && sf->loc != SCHED_BLOCK)) continue;
        bool root = sf->loc == SCHED_ROOT;
        if (root && tiled_ok(x, sf)) continue;
        for (int st = 0; st < f->nstages && !rc; st++)
            rc = legal_tile(x, full, f->id, st, sf->loc, sf->at, &sf->tile[st], err, errlen);
        /* a ROOT tiling depends on its record alone: remembered for the
         * records that outlive this call (s's own, the defaults) */
        if (!rc && root && (sf == s->f[f->id] || sf == x->defaults[f->id])) tiled_put(x, sf);
    }
    if (!rc && x->t) rc = check_memory(x, s, full, err, errlen);
    return rc;
}

double legal_inline_redundancy(legal_ctx *x, const sched_state *s, int fid) {
    if (fusion_value_ops(func_at(x->p, fid)) == 0) return 1;
    return fusion_inline_evaluations(x->g, x->b, s, fid);
}

double legal_redundancy(legal_ctx *x, const sched_state *s, int fid) {
    const sched_func *sf = s->f[fid];
    if (!fused(sf)) return 1;
    ir_arena *scratch = ir_arena_new();
    sched_state *full = completed(x, scratch, s);
    double r = -1;
    int root, rstage;
    const bounds_func *rb = &x->b->funcs[fid];
    double region = 1;
    for (int d = 0; d < func_at(x->p, fid)->ndims; d++) region *= rb->extent[d] > 0 ? (double)rb->extent[d] : 1;
    /* the loop-nest model's figure: the points its pure stage computes,
     * recompute included */
    char msg[256];
    nest *model = nest_build(legal_nest(x), full, msg, sizeof msg);
    if (model && model->funcs[fid] && model->funcs[fid]->nstages > 0) {
        /* stage 0, the pure definition, has no reduction loops */
        const nest_stage *ns = model->funcs[fid]->stages[0];
        r = (double)ns->points_total / region;
    }
    nest_free(model);
    if (r >= 0) {
        ir_arena_free(scratch);
        return r;
    }
    /* a Func fused into several consumers: from the footprint */
    if (measure(x, s, full, NULL, 0) == 0 && kernel_of(x, full, fid, &root, &rstage)) {
        /* how many times fid is computed: once per block of its kernel
         * (BLOCK), or once per thread of the Func it sits in (THREAD) */
        sched_tile rt = tile_of(x, full, root, rstage);
        double times = (double)legal_blocks(x, func_at(x->p, root), rstage, &rt);
        if (sf->loc == SCHED_THREAD) {
            int g = fid;
            while (full->f[g]->loc == SCHED_THREAD) g = full->f[g]->at;
            int gst = rstage;
            if (g != root) {
                /* the BLOCK Func g whose thread loop holds fid: its stage
                 * that fid's chain enters */
                int h = fid;
                while (full->f[h]->at != g) h = full->f[h]->at;
                gst = fusion_stage_at(x->g, full, h);
            }
            if (gst >= 0) {
                sched_tile gt = tile_of(x, full, g, gst);
                times *= (double)legal_threads(&gt);
            }
        }
        r = (double)memo_find(x, sf)->count * times / region;
    }
    ir_arena_free(scratch);
    return r;
}
