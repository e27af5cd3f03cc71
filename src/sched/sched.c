/*
 * sched.c - schedule states: building and copying them, hashing them to a
 * depth, checking them against the pipeline's rules and a target's limits,
 * and their text forms (the schedule text, and the equivalent Halide
 * schedule).  See sched.h for the schedule space and docs/schedule.md for
 * the text form and the limits.
 */
#include <assert.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "lower.h"
#include "nest.h"
#include "sched.h"

static const sc_func *func_at(const sc_pipeline *p, int id) {
    return (const sc_func *)p->funcs.items[id];
}

/* The pure loops of a stage (ir_stage_loops order): dims[k] is the Func
 * dimension of the k-th pure loop.  Returns their count. */
static int pure_dims(const sc_func *f, int st, int *dims) {
    int which[2 * SC_MAX_DIMS], n = ir_stage_loops(f, st, which), np = 0;
    for (int i = 0; i < n; i++) if (which[i] >= 0) dims[np++] = which[i];
    return np;
}

/* The i-th Func from the outputs to the inputs (reverse topological
 * order); creation order if the pipeline is not finalized. */
static const sc_func *from_outputs(const sc_pipeline *p, int i) {
    if (p->order.n == p->funcs.n) return ir_order_at(p, p->order.n - 1 - i);
    return func_at(p, i);
}

static bool is_fused(const sched_func *sf) {
    return sf && (sf->loc == SCHED_BLOCK || sf->loc == SCHED_THREAD);
}

/* ---- a growing string ---------------------------------------------------- */

typedef struct { char *s; size_t n, cap; } sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert(need >= 0);
    if (b->n + (size_t)need + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->n + (size_t)need + 1 > cap) cap *= 2;
        b->s = realloc(b->s, cap);
        if (!b->s) abort();
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

static char *sb_take(sbuf *b) {
    if (!b->s) sb_printf(b, "%s", "");
    return b->s;
}

/* ---- states -------------------------------------------------------------- */

sched_func *sched_func_new(ir_arena *a, sched_loc loc, int at, int nstages) {
    sched_func *sf = ir_alloc(a, sizeof *sf);
    sf->loc = loc;
    sf->at = at;
    sf->nstages = nstages;
    if (loc == SCHED_ROOT || loc == SCHED_BLOCK)
        sf->tile = ir_alloc(a, sizeof(sched_tile) * (size_t)(nstages > 0 ? nstages : 1));
    return sf;
}

sched_func *sched_func_copy(ir_arena *a, const sched_func *sf) {
    sched_func *c = ir_alloc(a, sizeof *c);
    *c = *sf;
    if (sf->tile) {
        c->tile = ir_alloc(a, sizeof(sched_tile) * (size_t)(sf->nstages > 0 ? sf->nstages : 1));
        memcpy(c->tile, sf->tile, sizeof(sched_tile) * (size_t)sf->nstages);
    }
    return c;
}

sched_state *sched_state_new(ir_arena *a, const sc_pipeline *p) {
    sched_state *s = ir_alloc(a, sizeof *s);
    s->nfuncs = p->funcs.n;
    s->f = ir_alloc(a, sizeof(sched_func *) * (size_t)(s->nfuncs ? s->nfuncs : 1));
    return s;
}

sched_state *sched_state_copy(ir_arena *a, const sched_state *s) {
    sched_state *c = ir_alloc(a, sizeof *c);
    c->nfuncs = s->nfuncs;
    c->f = ir_alloc(a, sizeof(sched_func *) * (size_t)(c->nfuncs ? c->nfuncs : 1));
    if (c->nfuncs) memcpy(c->f, s->f, sizeof(sched_func *) * (size_t)c->nfuncs);
    return c;
}

bool sched_complete(const sc_pipeline *p, const sched_state *s) {
    if (s->nfuncs != p->funcs.n) return false;
    for (int i = 0; i < p->funcs.n; i++)
        if (func_at(p, i)->kind == FUNC_DEFINED && (!s->f[i] || s->f[i]->loc == SCHED_UNDECIDED))
            return false;
    return true;
}

/* ---- hash ------------------------------------------------------------------- */

/* FNV-1a, 64 bits, over 32-bit words. */
static uint64_t fnv(uint64_t h, int64_t v) {
    uint64_t u = (uint64_t)v;
    for (int i = 0; i < 8; i++) {
        h ^= (u >> (8 * i)) & 0xff;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Per Func, in id order (inputs and undecided Funcs alike hash a tag):
 *   depth 0: root / inline / fused / undecided.  Inline is a decision like
 *            root, so two states that inline different Funcs differ; which
 *            level a fused Func sits at, and where, is left to depth 1-2.
 *   depth 1: a BLOCK Func also hashes "block" and its consumer.
 *   depth 2: a THREAD Func also hashes "thread" and its consumer.
 *   depth 3+: the tilings: ROOT threads and serial sizes, BLOCK threads,
 *            per stage.  (Deeper depths add nothing more.) */
uint64_t sched_hash(const sched_state *s, int depth) {
    enum { T_UNDECIDED, T_ROOT, T_INLINE, T_FUSED, T_BLOCK, T_THREAD };
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, s->nfuncs);
    for (int i = 0; i < s->nfuncs; i++) {
        const sched_func *sf = s->f[i];
        sched_loc loc = sf ? sf->loc : SCHED_UNDECIDED;
        int tag = loc == SCHED_ROOT ? T_ROOT : loc == SCHED_INLINE ? T_INLINE
                : is_fused(sf) ? T_FUSED : T_UNDECIDED;
        if (depth >= 1 && loc == SCHED_BLOCK) tag = T_BLOCK;
        if (depth >= 2 && loc == SCHED_THREAD) tag = T_THREAD;
        h = fnv(h, tag);
        if (tag == T_BLOCK || tag == T_THREAD) h = fnv(h, sf->at);
        if (depth >= 3 && (loc == SCHED_ROOT || loc == SCHED_BLOCK)) {
            int ns = sf->tile ? sf->nstages : 0;
            h = fnv(h, ns);
            for (int st = 0; st < ns; st++) {
                const sched_tile *t = &sf->tile[st];
                int np = t->npure < SC_MAX_DIMS ? t->npure : SC_MAX_DIMS;
                h = fnv(h, np);
                for (int k = 0; k < np; k++) {
                    h = fnv(h, t->threads[k]);
                    if (loc == SCHED_ROOT) h = fnv(h, t->serial[k]);
                }
            }
        }
    }
    return h;
}

/* ---- consumers ------------------------------------------------------------ */

/* Who consumes each Func once inline Funcs are substituted: cons[g] is the
 * one consumer Func (-1 none, -2 several), cstage[g] the one stage of it
 * that calls g (-2 several).  A call inside an inline Func's definition
 * counts as a call by each of the inline Func's own (non-inline) callers.
 * Self-references of update definitions do not count. */
typedef struct {
    const sc_pipeline *p;
    const sched_state *s;
    int *cons, *cstage;
    unsigned char *seen;        /* inline Funcs already walked for this stage */
    int consumer, stage;
} use_walk;

static void note_use(use_walk *w, int g) {
    if (w->cons[g] == -1) {
        w->cons[g] = w->consumer;
        w->cstage[g] = w->stage;
    } else if (w->cons[g] != w->consumer) {
        w->cons[g] = -2;
    } else if (w->cstage[g] != w->stage) {
        w->cstage[g] = -2;
    }
}

static void walk_uses(use_walk *w, const sc_expr *e) {
    if (e->kind == E_CALL && e->func->kind == FUNC_DEFINED && e->func->id != w->consumer) {
        int g = e->func->id;
        const sched_func *gf = w->s->f[g];
        if (gf && gf->loc == SCHED_INLINE) {
            if (!w->seen[g]) {
                w->seen[g] = 1;
                walk_uses(w, e->func->stages[0].value);
            }
        } else {
            note_use(w, g);
        }
    }
    for (int i = 0; i < e->nargs; i++) walk_uses(w, e->args[i]);
}

static void find_consumers(const sc_pipeline *p, const sched_state *s, int *cons, int *cstage) {
    int n = p->funcs.n;
    use_walk w = { p, s, cons, cstage, calloc((size_t)n + 1, 1), -1, -1 };
    if (!w.seen) abort();
    for (int i = 0; i < n; i++) cons[i] = cstage[i] = -1;
    for (int i = 0; i < n; i++) {
        const sc_func *f = func_at(p, i);
        if (f->kind != FUNC_DEFINED || (s->f[i] && s->f[i]->loc == SCHED_INLINE)) continue;
        for (int st = 0; st < f->nstages; st++) {
            memset(w.seen, 0, (size_t)n);
            w.consumer = i;
            w.stage = st;
            walk_uses(&w, f->stages[st].value);
            for (int d = 0; d < f->stages[st].nargs; d++) walk_uses(&w, f->stages[st].args[d]);
        }
    }
    free(w.seen);
}

/* ---- check ------------------------------------------------------------------ */

typedef struct {
    const sc_pipeline *p;
    const bounds_result *b;
    const sched_state *s;
    const target *t;
    char *err;
    size_t errlen;
    int *cons, *cstage;         /* find_consumers */
    int *root, *kstage;         /* fused Func -> root Func and stage of its kernel */
    int64_t *kthreads;          /* [kbase[root] + stage] threads per block */
    int *kbase;                 /* [func id] index of the Func's first stage */
} check_ctx;

static int fail(check_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(check_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (c->err && c->errlen) vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* "blur_x" for a single-stage Func, "hist stage 1" otherwise. */
static const char *stage_name(const sc_func *f, int st, char *buf, size_t len) {
    if (f->nstages == 1) snprintf(buf, len, "%s", f->name);
    else snprintf(buf, len, "%s stage %d", f->name, st);
    return buf;
}

static const char *loc_word(sched_loc l) {
    switch (l) {
    case SCHED_UNDECIDED: return "undecided";
    case SCHED_INLINE: return "inline";
    case SCHED_ROOT: return "root";
    case SCHED_BLOCK: return "block";
    case SCHED_THREAD: return "thread";
    }
    return "?";
}

/* The tiles of a ROOT or BLOCK Func: one per stage, one entry per pure
 * loop, positive sizes. */
static int check_tiles(check_ctx *c, const sc_func *f, const sched_func *sf) {
    if (sf->nstages != f->nstages)
        return fail(c, "%s: the schedule tiles %d stage%s, but the Func has %d", f->name, sf->nstages,
                    sf->nstages == 1 ? "" : "s", f->nstages);
    for (int st = 0; st < f->nstages; st++) {
        const sched_tile *t = &sf->tile[st];
        int dims[SC_MAX_DIMS], np = pure_dims(f, st, dims);
        char nm[200];
        stage_name(f, st, nm, sizeof nm);
        if (t->npure != np)
            return fail(c, "%s: the tiling has %d pure loop%s, but the stage has %d", nm, t->npure,
                        t->npure == 1 ? "" : "s", np);
        for (int k = 0; k < np; k++) {
            if (t->threads[k] < 1)
                return fail(c, "%s: %d threads in loop %s; a thread count must be at least 1", nm,
                            t->threads[k], f->vars[dims[k]]);
            if (sf->loc == SCHED_ROOT && t->serial[k] < 1)
                return fail(c, "%s: serial tile %d in loop %s; a serial size must be at least 1", nm,
                            t->serial[k], f->vars[dims[k]]);
        }
    }
    return 0;
}

/* The rules of sched.h, Func by Func from the outputs. */
static int check_rules(check_ctx *c) {
    const sc_pipeline *p = c->p;
    const sched_state *s = c->s;
    int n = p->funcs.n;
    for (int i = p->order.n - 1; i >= 0; i--) {
        const sc_func *f = ir_order_at(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        const sched_func *sf = s->f[f->id];
        if (!sf || sf->loc == SCHED_UNDECIDED)
            return fail(c, "%s: not scheduled (the state is partial)", f->name);
        if ((sf->loc == SCHED_ROOT || sf->loc == SCHED_BLOCK) && (!sf->tile || sf->nstages != f->nstages))
            return fail(c, "%s: the schedule tiles %d stage%s, the Func has %d", f->name,
                        sf->tile ? sf->nstages : 0, sf->nstages == 1 ? "" : "s", f->nstages);
    }
    find_consumers(p, s, c->cons, c->cstage);
    for (int i = p->order.n - 1; i >= 0; i--) {
        const sc_func *f = ir_order_at(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        const sched_func *sf = s->f[f->id];
        if (f->is_output && sf->loc != SCHED_ROOT)
            return fail(c, "%s: an output must be computed at root, not %s", f->name, loc_word(sf->loc));
        switch (sf->loc) {
        case SCHED_INLINE:
            if (f->nstages > 1)
                return fail(c, "%s: cannot be inline: it has update definitions (only a Func with a single "
                            "pure definition can be)", f->name);
            continue;
        case SCHED_ROOT:
            if (check_tiles(c, f, sf)) return -1;
            continue;
        case SCHED_BLOCK:
        case SCHED_THREAD:
            break;
        default:
            return fail(c, "%s: unknown compute location %d", f->name, (int)sf->loc);
        }
        const char *lv = loc_word(sf->loc);
        if (sf->at < 0 || sf->at >= n || func_at(p, sf->at)->kind != FUNC_DEFINED)
            return fail(c, "%s: computed at %s level of something that is not a Func (id %d)", f->name, lv,
                        sf->at);
        const sc_func *at = func_at(p, sf->at);
        const sched_func *af = s->f[at->id];
        if (at == f) return fail(c, "%s: computed at its own %s level", f->name, lv);
        if (af->loc == SCHED_INLINE)
            return fail(c, "%s: computed at %s level of %s, which is inline (fuse into a Func that is not)",
                        f->name, lv, at->name);
        if (sf->loc == SCHED_BLOCK && af->loc == SCHED_THREAD)
            return fail(c, "%s: computed at block level of %s, which is itself at thread level (shared "
                        "memory cannot live inside a thread)", f->name, at->name);
        int cn = c->cons[f->id], cs = c->cstage[f->id];
        if (cn == -2)
            return fail(c, "%s: computed at %s level of %s, but it has several consumers (a fused Func has "
                        "exactly one, after inlining)", f->name, lv, at->name);
        if (cn == -1)
            return fail(c, "%s: computed at %s level of %s, but nothing uses it", f->name, lv, at->name);
        if (cn != at->id)
            return fail(c, "%s: computed at %s level of %s, but its consumer is %s (after inlining)", f->name,
                        lv, at->name, func_at(p, cn)->name);
        if (cs < 0)
            return fail(c, "%s: computed at %s level of %s, but several stages of %s use it (fusion needs "
                        "exactly one)", f->name, lv, at->name, at->name);
        for (int st = 1; st < f->nstages; st++)
            for (int d = 0; d < f->ndims; d++) {
                const sc_expr *a = f->stages[st].args[d];
                if (a->kind != E_VAR || strcmp(a->name, f->vars[d]))
                    return fail(c, "%s: fused at %s level, but its update %d writes at a computed coordinate "
                                "(a fused Func's updates must write only at their pure point)", f->name, lv,
                                st);
            }
        if (sf->loc == SCHED_BLOCK && check_tiles(c, f, sf)) return -1;
    }
    /* inlining can grow expressions exponentially; lowering refuses them */
    int worst = -1;
    double size = lower_max_inlined_size(p, s, &worst);
    if (size > LOWER_MAX_INLINED && worst >= 0)
        return fail(c, "%s: inlining makes its expression %.3g nodes large, over the limit of %d (compute "
                    "some of its inline producers at root or fused)", func_at(p, worst)->name, size,
                    LOWER_MAX_INLINED);
    /* every fused Func's kernel: follow `at` up to the root Func */
    for (int i = 0; i < n; i++) {
        c->root[i] = c->kstage[i] = -1;
        if (!is_fused(s->f[i]) || func_at(p, i)->kind != FUNC_DEFINED) continue;
        int g = i, prev = i, hops = 0;
        while (s->f[g]->loc != SCHED_ROOT) {
            if (++hops > n) return fail(c, "%s: computed inside a cycle of fused Funcs", func_at(p, i)->name);
            prev = g;
            g = s->f[g]->at;
        }
        c->root[i] = g;
        c->kstage[i] = c->cstage[prev];
    }
    return 0;
}

/* The extents of a stage's pure loops, from bounds inference. */
static void pure_extents(const bounds_result *b, const sc_func *f, int st, int64_t *ext) {
    const bounds_stage *bs = &b->funcs[f->id].stages[st];
    for (int li = 0, k = 0; li < bs->nloops; li++)
        if (bs->which[li] >= 0) ext[k++] = bs->extent[li];
}

/* a * b for a, b >= 0, saturating at 2^40 (sizes typed in by hand may be
 * absurd; the limits they are compared with are far below). */
static int64_t sat_mul(int64_t a, int64_t b) {
    const int64_t cap = (int64_t)1 << 40;
    if (a <= 0 || b <= 0) return 0;
    if (a > cap / b) return cap;
    return a * b;
}

/* Threads per block of every root stage (and warp multiples), and of every
 * block-level Func against the block of its kernel. */
static int check_threads(check_ctx *c, bool warp_multiple) {
    const sc_pipeline *p = c->p;
    const target *t = c->t;
    for (int i = p->order.n - 1; i >= 0; i--) {
        const sc_func *f = ir_order_at(p, i);
        const sched_func *sf = f->kind == FUNC_DEFINED ? c->s->f[f->id] : NULL;
        if (!sf || sf->loc != SCHED_ROOT) continue;
        for (int st = 0; st < f->nstages; st++) {
            const sched_tile *tl = &sf->tile[st];
            int64_t ext[SC_MAX_DIMS], threads = 1, need = 1;
            pure_extents(c->b, f, st, ext);
            for (int k = 0; k < tl->npure; k++) {
                threads = sat_mul(threads, tl->threads[k]);
                int64_t e = ext[k] > 0 ? ext[k] : 0;
                need = sat_mul(need, (e + tl->serial[k] - 1) / tl->serial[k]);
            }
            c->kthreads[c->kbase[f->id] + st] = threads;
            char nm[200];
            stage_name(f, st, nm, sizeof nm);
            if (threads > t->max_threads_per_block)
                return fail(c, "%s: %lld thread%s per block, over the target's %d (%s)", nm, (long long)threads,
                            threads == 1 ? "" : "s", t->max_threads_per_block, t->name);
            /* A stage whose whole iteration space, at its serial sizes,
             * has fewer than a warp of points, or that one block covers
             * entirely, cannot be helped by a warp-multiple block: more
             * threads would only idle. */
            if (warp_multiple && threads % t->warp_size && need >= t->warp_size && threads < need)
                return fail(c, "%s: %lld thread%s per block, not a multiple of the target's warp size %d (%s)",
                            nm, (long long)threads, threads == 1 ? "" : "s", t->warp_size, t->name);
        }
    }
    for (int i = p->order.n - 1; i >= 0; i--) {
        const sc_func *f = ir_order_at(p, i);
        const sched_func *sf = f->kind == FUNC_DEFINED ? c->s->f[f->id] : NULL;
        if (!sf || sf->loc != SCHED_BLOCK) continue;
        const sc_func *r = func_at(p, c->root[f->id]);
        int64_t kt = c->kthreads[c->kbase[r->id] + c->kstage[f->id]];
        for (int st = 0; st < f->nstages; st++) {
            int64_t threads = 1;
            for (int k = 0; k < sf->tile[st].npure; k++) threads = sat_mul(threads, sf->tile[st].threads[k]);
            char nm[200], rn[200];
            stage_name(f, st, nm, sizeof nm);
            if (threads > kt)
                return fail(c, "%s: %lld threads (block level of %s), over the %lld threads per block of its "
                            "kernel %s", nm, (long long)threads, func_at(p, sf->at)->name, (long long)kt,
                            stage_name(r, c->kstage[f->id], rn, sizeof rn));
        }
    }
    return 0;
}

/* Shared memory and estimated registers per kernel, from the footprints
 * lowering allocates (the loop-nest model's).  Registers per thread are estimated as 16 (indices,
 * addresses) + one 32-bit register per element of every thread-level Func
 * and every register-staged copy of the kernel (smaller types take a whole
 * register too) + one per point of the root stage's serial tile. */
static int check_memory(check_ctx *c) {
    const sc_pipeline *p = c->p;
    const target *t = c->t;
    int n = p->funcs.n;
    int64_t *count = calloc((size_t)n + 1, sizeof(int64_t));
    int64_t *smem = calloc((size_t)c->kbase[p->funcs.n] + 1, sizeof(int64_t));
    int64_t *words = calloc((size_t)c->kbase[p->funcs.n] + 1, sizeof(int64_t));
    if (!count || !smem || !words) abort();
    int rc = 0;
    {
        /* The loop-nest model gives every footprint and the
         * register-staged points of each kernel, as lowering makes them
         * (nest.h), without lowering. */
        char msg[512] = "";
        nest_ctx *nx = nest_ctx_new(p, c->b);
        nest *model = nest_build(nx, c->s, msg, sizeof msg);
        for (int k = 0; model && k < model->nkernels; k++) {
            const nest_kernel *kn = model->kernels[k];
            words[c->kbase[kn->root->id] + kn->stage] += kn->staged_elems;
        }
        for (int i = 0; model && i < n; i++) {
            const nest_func *nf = model->funcs[i];
            if (nf && nf->mem != NEST_GLOBAL && c->root[i] >= 0) count[i] = nf->elems;
        }
        bool built = model != NULL;
        nest_free(model);
        nest_ctx_free(nx);
        if (!built) {
            rc = fail(c, "%s", msg);
            goto done;
        }
        for (int i = 0; i < n; i++) {
            if (c->root[i] < 0) continue;
            int kk = c->kbase[c->root[i]] + c->kstage[i];
            const sc_func *f = func_at(p, i);
            if (c->s->f[i]->loc == SCHED_BLOCK) smem[kk] += count[i] * (int64_t)sc_type_size(f->type);
            else words[kk] += count[i];
        }
    }
    for (int i = p->order.n - 1; i >= 0 && !rc; i--) {
        const sc_func *f = ir_order_at(p, i);
        const sched_func *sf = f->kind == FUNC_DEFINED ? c->s->f[f->id] : NULL;
        if (!sf || sf->loc != SCHED_ROOT) continue;
        for (int st = 0; st < f->nstages && !rc; st++) {
            int kk = c->kbase[f->id] + st;
            char nm[200];
            stage_name(f, st, nm, sizeof nm);
            if (smem[kk] > t->shared_mem_per_block) {
                char who[600] = "";
                for (int j = 0; j < n; j++)
                    if (c->root[j] == f->id && c->kstage[j] == st && c->s->f[j]->loc == SCHED_BLOCK) {
                        size_t l = strlen(who);
                        snprintf(who + l, sizeof who - l, "%s%s %lld", l ? ", " : "", func_at(p, j)->name,
                                 (long long)(count[j] * (int64_t)sc_type_size(func_at(p, j)->type)));
                    }
                rc = fail(c, "%s: %lld bytes of shared memory per block (%s), over the target's %d (%s)", nm,
                          (long long)smem[kk], who, t->shared_mem_per_block, t->name);
                break;
            }
            int64_t serial = 1;
            for (int k = 0; k < sf->tile[st].npure; k++) serial = sat_mul(serial, sf->tile[st].serial[k]);
            int64_t regs = 16 + words[kk] + serial;
            if (regs > t->registers_per_thread)
                rc = fail(c, "%s: an estimated %lld registers per thread (16 + %lld for thread-level and staged points + "
                          "%lld serial points), over the target's %d (%s)", nm, (long long)regs,
                          (long long)words[kk], (long long)serial, t->registers_per_thread, t->name);
        }
    }
done:
    free(count);
    free(smem);
    free(words);
    return rc;
}

int sched_check(const sc_pipeline *p, const bounds_result *b, const sched_state *s,
                const target *t, bool warp_multiple, char *err, size_t errlen) {
    char local[512];
    if (!err || !errlen) {
        err = local;
        errlen = sizeof local;
    }
    err[0] = 0;
    check_ctx c = { p, b, s, t, err, errlen, NULL, NULL, NULL, NULL, NULL, NULL };
    if (s->nfuncs != p->funcs.n)
        return fail(&c, "the schedule is for a pipeline of %d Funcs, not %d", s->nfuncs, p->funcs.n);
    if (p->order.n != p->funcs.n)
        return fail(&c, "pipeline %s is not finalized", p->name);
    if (!b || t->warp_size < 1)
        return fail(&c, "%s", !b ? "no bounds to check the schedule against" : "the target has no warp size");
    size_t n = (size_t)p->funcs.n + 1;
    c.cons = malloc(n * sizeof(int));
    c.cstage = malloc(n * sizeof(int));
    c.root = malloc(n * sizeof(int));
    c.kstage = malloc(n * sizeof(int));
    c.kbase = malloc(n * sizeof(int));
    if (!c.kbase) abort();
    c.kbase[0] = 0;
    for (int i = 0; i < p->funcs.n; i++)
        c.kbase[i + 1] = c.kbase[i] + ((sc_func *)p->funcs.items[i])->nstages;
    c.kthreads = calloc((size_t)c.kbase[p->funcs.n] + 1, sizeof(int64_t));
    if (!c.cons || !c.cstage || !c.root || !c.kstage || !c.kthreads) abort();
    int rc = check_rules(&c);
    if (!rc) rc = check_threads(&c, warp_multiple);
    if (!rc) rc = check_memory(&c);
    free(c.cons);
    free(c.cstage);
    free(c.root);
    free(c.kstage);
    free(c.kthreads);
    free(c.kbase);
    return rc;
}

/* ---- text form -------------------------------------------------------------- */

char *sched_to_text(const sc_pipeline *p, const sched_state *s) {
    sbuf b = {0};
    sb_printf(&b, "schedule %s;\n", p->name);
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = from_outputs(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        const sched_func *sf = f->id < s->nfuncs ? s->f[f->id] : NULL;
        if (!sf || sf->loc == SCHED_UNDECIDED) {
            sb_printf(&b, "# %s: undecided\n", f->name);
            continue;
        }
        sb_printf(&b, "%s: %s", f->name, loc_word(sf->loc));
        if (is_fused(sf))
            sb_printf(&b, " of %s", sf->at >= 0 && sf->at < p->funcs.n ? func_at(p, sf->at)->name : "?");
        if (sf->loc == SCHED_ROOT || sf->loc == SCHED_BLOCK)
            for (int st = 0; sf->tile && st < sf->nstages; st++) {
                const sched_tile *t = &sf->tile[st];
                int dims[SC_MAX_DIMS], np = st < f->nstages ? pure_dims(f, st, dims) : 0;
                sb_printf(&b, " [");
                for (int k = 0; k < t->npure && k < SC_MAX_DIMS; k++) {
                    sb_printf(&b, "%s%s=%d", k ? " " : "", k < np ? f->vars[dims[k]] : "?", t->threads[k]);
                    if (sf->loc == SCHED_ROOT) sb_printf(&b, "x%d", t->serial[k]);
                }
                sb_printf(&b, "]");
            }
        sb_printf(&b, ";\n");
    }
    return sb_take(&b);
}

/* ---- parsing ------------------------------------------------------------------- */

/* The grammar (docs/schedule.md):
 *   schedule := 'schedule' NAME ';' entry*
 *   entry    := FUNC ':' ( 'inline' | 'root' tiles | 'block' 'of' FUNC tiles
 *                        | 'thread' 'of' FUNC ) ';'
 *   tiles    := ( '[' ( VAR '=' INT ( 'x' INT )? )* ']' )*     one per stage
 * '#' starts a comment to the end of the line. */
typedef struct {
    const sc_pipeline *p;
    const char *file, *text;
    size_t pos;
    int line, col;
    char *err;
    size_t errlen;
    bool failed;
} scan;

typedef enum { TK_EOF, TK_IDENT, TK_NUM, TK_PUNCT } tok_kind;

typedef struct {
    tok_kind kind;
    size_t start, len;
    int line, col;
} token;

static void skip_space(scan *s) {
    for (;;) {
        char ch = s->text[s->pos];
        if (ch == '\n') {
            s->line++;
            s->col = 1;
            s->pos++;
        } else if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v') {
            s->pos++;
            s->col++;
        } else if (ch == '#') {
            while (s->text[s->pos] && s->text[s->pos] != '\n') {
                s->pos++;
                s->col++;
            }
        } else {
            return;
        }
    }
}

static bool ident_start(char ch) { return isalpha((unsigned char)ch) || ch == '_'; }
static bool ident_char(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

/* The next token, without consuming it.  A number is its digits and any
 * letters glued to them ("32x2" is handled by the tile reader). */
static token peek(scan *s) {
    skip_space(s);
    token t = { TK_EOF, s->pos, 0, s->line, s->col };
    const char *c = s->text + s->pos;
    if (!*c) return t;
    if (ident_start(*c)) {
        t.kind = TK_IDENT;
        while (ident_char(c[t.len])) t.len++;
    } else if (isdigit((unsigned char)*c)) {
        t.kind = TK_NUM;
        while (isdigit((unsigned char)c[t.len])) t.len++;
    } else {
        t.kind = TK_PUNCT;
        t.len = 1;
    }
    return t;
}

static void advance(scan *s, const token *t) {
    s->pos = t->start + t->len;
    s->col = t->col + (int)t->len;
}

static bool tok_is(const scan *s, const token *t, const char *word) {
    return t->len == strlen(word) && !memcmp(s->text + t->start, word, t->len);
}

/* What a token looks like in a message: 'foo', or "the end of the text". */
static const char *tok_desc(const scan *s, const token *t, char *buf, size_t len) {
    if (t->kind == TK_EOF) return "the end of the text";
    size_t n = t->len;
    /* show a little of what follows a number or punctuation, up to a space */
    if (t->kind != TK_IDENT)
        while (s->text[t->start + n] && !isspace((unsigned char)s->text[t->start + n]) && n < 24 &&
               (t->kind == TK_NUM ? ident_char(s->text[t->start + n]) : false))
            n++;
    if (n > 40) n = 40;
    unsigned char ch = (unsigned char)s->text[t->start];
    if (t->kind == TK_PUNCT && (ch < 32 || ch >= 127)) snprintf(buf, len, "byte 0x%02x", ch);
    else snprintf(buf, len, "'%.*s'", (int)n, s->text + t->start);
    return buf;
}

static void perr(scan *s, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void perr(scan *s, int line, int col, const char *fmt, ...) {
    if (s->failed) return;
    s->failed = true;
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (s->err && s->errlen) snprintf(s->err, s->errlen, "%s:%d:%d: %s", s->file, line, col, msg);
}

/* Consumes one punctuation character or reports what was expected. */
static bool expect(scan *s, char ch, const char *where) {
    token t = peek(s);
    if (t.kind == TK_PUNCT && s->text[t.start] == ch) {
        advance(s, &t);
        return true;
    }
    char d[64];
    perr(s, t.line, t.col, "expected '%c' %s, got %s", ch, where, tok_desc(s, &t, d, sizeof d));
    return false;
}

/* An identifier into buf (truncated copies never match a Func). */
static bool ident(scan *s, token *t, char *buf, size_t len, const char *what) {
    *t = peek(s);
    if (t->kind != TK_IDENT) {
        char d[64];
        perr(s, t->line, t->col, "expected %s, got %s", what, tok_desc(s, t, d, sizeof d));
        return false;
    }
    size_t n = t->len < len - 1 ? t->len : len - 1;
    memcpy(buf, s->text + t->start, n);
    buf[n] = 0;
    advance(s, t);
    return true;
}

/* A positive integer (at most 2^30). */
static bool number(scan *s, int *out, const char *what) {
    token t = peek(s);
    char d[64];
    if (t.kind == TK_PUNCT && s->text[t.start] == '-') {
        perr(s, t.line, t.col, "expected a positive integer for %s, got a negative number", what);
        return false;
    }
    if (t.kind != TK_NUM) {
        perr(s, t.line, t.col, "expected a positive integer for %s, got %s", what, tok_desc(s, &t, d, sizeof d));
        return false;
    }
    if (ident_char(s->text[t.start + t.len]) && s->text[t.start + t.len] != 'x') {
        perr(s, t.line, t.col, "bad number %s for %s (expected digits only)", tok_desc(s, &t, d, sizeof d), what);
        return false;
    }
    long long v = 0;
    for (size_t i = 0; i < t.len; i++) {
        v = v * 10 + (s->text[t.start + i] - '0');
        if (v > (1 << 30)) {
            perr(s, t.line, t.col, "number too large for %s (at most %d)", what, 1 << 30);
            return false;
        }
    }
    if (v < 1) {
        perr(s, t.line, t.col, "expected a positive integer for %s, got 0", what);
        return false;
    }
    advance(s, &t);
    *out = (int)v;
    return true;
}

/* A defined Func by name, or an error naming what it is instead. */
static const sc_func *lookup_func(scan *s, const token *t, const char *name, const char *role) {
    const sc_func *f = sc_func_lookup(s->p, name);
    if (!f) {
        perr(s, t->line, t->col, "unknown %s '%s' (pipeline %s has no such Func)", role, name, s->p->name);
        return NULL;
    }
    if (f->kind != FUNC_DEFINED) {
        perr(s, t->line, t->col, "%s '%s' is an input, not a Func (inputs are not scheduled)", role, name);
        return NULL;
    }
    return f;
}

static const char *ordinal(int k, char *buf, size_t len) {
    const char *suf = (k % 100 >= 11 && k % 100 <= 13) ? "th" : k % 10 == 1 ? "st" : k % 10 == 2 ? "nd"
                    : k % 10 == 3 ? "rd" : "th";
    snprintf(buf, len, "%d%s", k, suf);
    return buf;
}

/* One [...] per stage: `var=TxS` (root) or `var=T` (block) per pure loop. */
static bool parse_tiles(scan *s, const sc_func *f, sched_func *sf) {
    bool root = sf->loc == SCHED_ROOT;
    sf->nstages = f->nstages;
    for (int st = 0; st < f->nstages; st++) {
        char where[400], nm[200];
        stage_name(f, st, nm, sizeof nm);
        snprintf(where, sizeof where, "to open the tiling of %s (one [...] per stage; %d in all)", nm, f->nstages);
        if (!expect(s, '[', where)) return false;
        sched_tile *t = &sf->tile[st];
        int dims[SC_MAX_DIMS], np = pure_dims(f, st, dims);
        t->npure = np;
        char list[160] = "";
        for (int k = 0; k < np; k++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", k ? " " : "", f->vars[dims[k]]);
        }
        for (int k = 0; k < np; k++) {
            token v;
            char name[128], ord[16], what[1024];
            snprintf(what, sizeof what, "'%s', the %s of the pure loops of %s (%s)", f->vars[dims[k]],
                     ordinal(k + 1, ord, sizeof ord), nm, list);
            if (!ident(s, &v, name, sizeof name, what)) return false;
            if (strcmp(name, f->vars[dims[k]])) {
                char d[64];
                perr(s, v.line, v.col, "expected %s, got %s", what, tok_desc(s, &v, d, sizeof d));
                return false;
            }
            char eqw[160];
            snprintf(eqw, sizeof eqw, "after loop %s", name);
            if (!expect(s, '=', eqw)) return false;
            char tw[512];
            snprintf(tw, sizeof tw, "the threads of loop %s of %s", name, nm);
            if (!number(s, &t->threads[k], tw)) return false;
            t->serial[k] = 1;
            if (!root && s->text[s->pos] == 'x') {
                perr(s, s->line, s->col, "block-level tiles give threads only (%s=%d), not threads x serial",
                     name, t->threads[k]);
                return false;
            }
            if (root) {
                /* `x` glued to the number or spaced out */
                skip_space(s);
                if (s->text[s->pos] != 'x') {
                    token q = peek(s);
                    char d[64];
                    perr(s, q.line, q.col, "expected 'x' and the serial size after %s=%d (root tiles are "
                         "threads x serial), got %s", name, t->threads[k], tok_desc(s, &q, d, sizeof d));
                    return false;
                }
                s->pos++;
                s->col++;
                snprintf(tw, sizeof tw, "the serial size of loop %s of %s", name, nm);
                if (!number(s, &t->serial[k], tw)) return false;
            }
        }
        token c = peek(s);
        if (!(c.kind == TK_PUNCT && s->text[c.start] == ']')) {
            char d[64];
            perr(s, c.line, c.col, "%s has %d pure loop%s (%s%s); expected ']', got %s", nm, np,
                 np == 1 ? "" : "s", list, np ? "" : "none", tok_desc(s, &c, d, sizeof d));
            return false;
        }
        advance(s, &c);
    }
    return true;
}

sched_state *sched_parse(ir_arena *a, const sc_pipeline *p, const char *filename,
                         const char *text, char *err, size_t errlen) {
    scan s = { p, filename ? filename : "<schedule>", text ? text : "", 0, 1, 1, err, errlen, false };
    if (err && errlen) err[0] = 0;
    int n = p->funcs.n;
    sched_state *st = sched_state_new(a, p);
    int *seen_line = calloc((size_t)n + 1, sizeof(int)), *seen_col = calloc((size_t)n + 1, sizeof(int));
    if (!seen_line || !seen_col) abort();
    token t;
    char name[128], d[64];

    t = peek(&s);
    if (!tok_is(&s, &t, "schedule")) {
        perr(&s, t.line, t.col, "expected 'schedule %s;' at the start, got %s", p->name, tok_desc(&s, &t, d, sizeof d));
        goto out;
    }
    advance(&s, &t);
    if (!ident(&s, &t, name, sizeof name, "the pipeline's name after 'schedule'")) goto out;
    if (strcmp(name, p->name)) {
        perr(&s, t.line, t.col, "this schedule is for pipeline '%s', not '%s'", name, p->name);
        goto out;
    }
    if (!expect(&s, ';', "after the pipeline's name")) goto out;

    for (;;) {
        t = peek(&s);
        if (t.kind == TK_EOF) break;
        if (t.kind != TK_IDENT) {
            perr(&s, t.line, t.col, "expected a Func name or the end of the schedule, got %s",
                 tok_desc(&s, &t, d, sizeof d));
            goto out;
        }
        token ft;
        if (!ident(&s, &ft, name, sizeof name, "a Func name")) goto out;
        const sc_func *f = lookup_func(&s, &ft, name, "Func");
        if (!f) goto out;
        if (seen_line[f->id]) {
            perr(&s, ft.line, ft.col, "%s is listed twice (first at line %d, column %d)", f->name,
                 seen_line[f->id], seen_col[f->id]);
            goto out;
        }
        seen_line[f->id] = ft.line;
        seen_col[f->id] = ft.col;
        char where[200];
        snprintf(where, sizeof where, "after the Func name %s", f->name);
        if (!expect(&s, ':', where)) goto out;
        token kt;
        snprintf(where, sizeof where, "inline, root, block or thread after '%s:'", f->name);
        if (!ident(&s, &kt, name, sizeof name, where)) goto out;
        sched_func *sf = ir_alloc(a, sizeof *sf);
        sf->at = -1;
        if (tok_is(&s, &kt, "inline")) sf->loc = SCHED_INLINE;
        else if (tok_is(&s, &kt, "root")) sf->loc = SCHED_ROOT;
        else if (tok_is(&s, &kt, "block")) sf->loc = SCHED_BLOCK;
        else if (tok_is(&s, &kt, "thread")) sf->loc = SCHED_THREAD;
        else {
            perr(&s, kt.line, kt.col, "expected %s, got %s", where, tok_desc(&s, &kt, d, sizeof d));
            goto out;
        }
        if (is_fused(sf)) {
            token ot, ct;
            snprintf(where, sizeof where, "'of' and the consumer after '%s: %s'", f->name, loc_word(sf->loc));
            if (!ident(&s, &ot, name, sizeof name, where)) goto out;
            if (!tok_is(&s, &ot, "of")) {
                perr(&s, ot.line, ot.col, "expected %s, got %s", where, tok_desc(&s, &ot, d, sizeof d));
                goto out;
            }
            if (!ident(&s, &ct, name, sizeof name, "the consumer's name after 'of'")) goto out;
            const sc_func *cf = lookup_func(&s, &ct, name, "consumer");
            if (!cf) goto out;
            sf->at = cf->id;
        }
        if (sf->loc == SCHED_ROOT || sf->loc == SCHED_BLOCK) {
            sf->tile = ir_alloc(a, sizeof(sched_tile) * (size_t)(f->nstages ? f->nstages : 1));
            if (!parse_tiles(&s, f, sf)) goto out;
            if (f->nstages == 1) snprintf(where, sizeof where, "after the tiling of %s (it has 1 stage)", f->name);
            else snprintf(where, sizeof where, "after the %d tilings of %s (one per stage)", f->nstages, f->name);
        } else {
            snprintf(where, sizeof where, "after '%s' (%s Funcs are not tiled)", loc_word(sf->loc),
                     sf->loc == SCHED_INLINE ? "inline" : "thread-level");
        }
        if (!expect(&s, ';', where)) goto out;
        st->f[f->id] = sf;
    }
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = from_outputs(p, i);
        if (f->kind == FUNC_DEFINED && !seen_line[f->id]) {
            t = peek(&s);
            perr(&s, t.line, t.col, "missing Func %s (every Func of pipeline %s must be scheduled)", f->name,
                 p->name);
            goto out;
        }
    }
out:
    free(seen_line);
    free(seen_col);
    return s.failed ? NULL : st;
}

/* ---- Halide ------------------------------------------------------------------ */

/* The Halide form, one statement per stage:
 *   root:   per stage, f.compute_root() / f.update(i), then
 *           .split(x, x_o, x_i, T*S, TailStrategy::GuardWithIf).split(x_i, x_t, x_s, S) ...
 *           .reorder(<rvars>, x_s.., x_t.., x_o..)
 *           [.fuse(z_o, w_o, z_w_o) ... when more than 3 pure loops]
 *           .gpu_blocks(x_o, ...).gpu_threads(x_t, ...).unroll(x_s) (S > 1)
 *   block:  f.compute_at(C, <C's innermost block var>) per stage
 *           .split(x, x_s, x_t, T, TailStrategy::GuardWithIf) ... .reorder(x_s.., x_t..).gpu_threads(x_t, ...)
 *   thread: f.compute_at(C, <C's innermost thread var>);
 *   inline: a comment.
 * Halide spreads a block-level Func's points over the threads with a
 * stride (x = x_s * T + x_t) where stagecraft gives each thread
 * consecutive points; the decisions (where, how many threads) are the same. */

typedef struct {
    sbuf vars;                  /* names declared so far, " a b c " */
    sbuf body;
} hal;

static void declare(hal *h, const char *name) {
    char key[200];
    snprintf(key, sizeof key, " %s ", name);
    if (h->vars.s && strstr(h->vars.s, key)) return;
    if (!h->vars.s) sb_printf(&h->vars, " ");
    sb_printf(&h->vars, "%s ", name);
}

/* The handle of a stage: "f" or "f.update(0)". */
static void stage_handle(char *buf, size_t len, const sc_func *f, int st) {
    if (st == 0) snprintf(buf, len, "%s", f->name);
    else snprintf(buf, len, "%s.update(%d)", f->name, st - 1);
}

/* Name of a (possibly fused) group of per-loop vars: loops k0.. of f. */
static void group_name(char *buf, size_t len, const sc_func *f, const int *dims, int from, int to,
                       const char *suffix) {
    buf[0] = 0;
    for (int k = from; k < to; k++) {
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s_", f->vars[dims[k]]);
    }
    size_t l = strlen(buf);
    snprintf(buf + l, len - l, "%s", suffix);
}

/* The loop level "at C": innermost block var (BLOCK) or thread var
 * (THREAD) of the stage of C that consumes the Func, or the outermost
 * level of C when C is itself fused (its loops are thread or serial
 * loops computed once per block or per thread). */
static void loop_level(char *buf, size_t len, const sc_pipeline *p, const sched_state *s, int at,
                       int stage, bool block) {
    const sc_func *c = func_at(p, at);
    const sched_func *cf = s->f[at];
    int dims[SC_MAX_DIMS], np = stage >= 0 && stage < c->nstages ? pure_dims(c, stage, dims) : 0;
    char var[200];
    if (cf && cf->loc == SCHED_ROOT && np > 0) snprintf(var, sizeof var, "%s_%s", c->vars[dims[0]], block ? "o" : "t");
    else if (cf && cf->loc == SCHED_BLOCK && !block && np > 0) snprintf(var, sizeof var, "%s_t", c->vars[dims[0]]);
    else snprintf(var, sizeof var, "Var::outermost()");
    if (stage > 0) snprintf(buf, len, "LoopLevel(%s, %s, %d)", c->name, var, stage);
    else snprintf(buf, len, "%s, %s", c->name, var);
}

static void halide_root_stage(hal *h, const sc_func *f, int st, const sched_tile *t) {
    char hd[200];
    stage_handle(hd, sizeof hd, f, st);
    int dims[SC_MAX_DIMS], np = pure_dims(f, st, dims);
    if (t->npure < np) np = t->npure;
    sbuf *b = &h->body;
    sb_printf(b, "%s%s", hd, st == 0 ? ".compute_root()" : "");
    if (np == 0) {
        sb_printf(b, ".gpu_single_thread();\n");
        return;
    }
    for (int k = 0; k < np; k++) {
        const char *v = f->vars[dims[k]];
        sb_printf(b, "\n    .split(%s, %s_o, %s_i, %d, TailStrategy::GuardWithIf).split(%s_i, %s_t, %s_s, %d)", v,
                  v, v, t->threads[k] * t->serial[k], v, v, v, t->serial[k]);
        const char *suf[4] = { "o", "i", "t", "s" };
        for (int q = 0; q < 4; q++) {
            char nm[200];
            snprintf(nm, sizeof nm, "%s_%s", v, suf[q]);
            declare(h, nm);
        }
    }
    sb_printf(b, "\n    .reorder(");
    const ir_stage *stg = &f->stages[st];
    if (stg->rdom)
        for (int d = 0; d < stg->rdom->ndims; d++) sb_printf(b, "%s.%c, ", stg->rdom->name, "xyzw"[d]);
    for (int k = 0; k < np; k++) sb_printf(b, "%s_s, ", f->vars[dims[k]]);
    for (int k = 0; k < np; k++) sb_printf(b, "%s_t, ", f->vars[dims[k]]);
    for (int k = 0; k < np; k++) sb_printf(b, "%s_o%s", f->vars[dims[k]], k + 1 < np ? ", " : ")");
    /* at most 3 GPU dimensions: the 3rd and outer loops are fused */
    const char *lv[2] = { "o", "t" };
    char fused[2][200];
    for (int q = 0; q < 2; q++) {
        snprintf(fused[q], sizeof fused[q], "%s_%s", np > 2 ? f->vars[dims[2]] : "", lv[q]);
        for (int k = 3; k < np; k++) {
            char next[200];
            group_name(next, sizeof next, f, dims, 2, k + 1, lv[q]);
            sb_printf(b, "\n    .fuse(%s, %s_%s, %s)", fused[q], f->vars[dims[k]], lv[q], next);
            declare(h, next);
            memcpy(fused[q], next, sizeof next);
        }
    }
    for (int q = 0; q < 2; q++) {
        sb_printf(b, "\n    .%s(", q == 0 ? "gpu_blocks" : "gpu_threads");
        for (int k = 0; k < np && k < 3; k++) {
            if (k == 2) sb_printf(b, ", %s", fused[q]);
            else sb_printf(b, "%s%s_%s", k ? ", " : "", f->vars[dims[k]], lv[q]);
        }
        sb_printf(b, ")");
    }
    for (int k = 0; k < np; k++)
        if (t->serial[k] > 1) sb_printf(b, ".unroll(%s_s)", f->vars[dims[k]]);
    sb_printf(b, ";\n");
}

static void halide_block_stage(hal *h, const sc_func *f, int st, const sched_tile *t, const char *level) {
    char hd[200];
    stage_handle(hd, sizeof hd, f, st);
    int dims[SC_MAX_DIMS], np = pure_dims(f, st, dims);
    if (t->npure < np) np = t->npure;
    sbuf *b = &h->body;
    if (st == 0) sb_printf(b, "%s.compute_at(%s)", hd, level);
    else sb_printf(b, "%s", hd);
    if (np == 0) {
        sb_printf(b, ";\n");
        return;
    }
    for (int k = 0; k < np; k++) {
        const char *v = f->vars[dims[k]];
        sb_printf(b, "\n    .split(%s, %s_s, %s_t, %d, TailStrategy::GuardWithIf)", v, v, v, t->threads[k]);
        char nm[200];
        snprintf(nm, sizeof nm, "%s_s", v);
        declare(h, nm);
        snprintf(nm, sizeof nm, "%s_t", v);
        declare(h, nm);
    }
    sb_printf(b, "\n    .reorder(");
    const ir_stage *stg = &f->stages[st];
    if (stg->rdom)
        for (int d = 0; d < stg->rdom->ndims; d++) sb_printf(b, "%s.%c, ", stg->rdom->name, "xyzw"[d]);
    for (int k = 0; k < np; k++) sb_printf(b, "%s_s, ", f->vars[dims[k]]);
    for (int k = 0; k < np; k++) sb_printf(b, "%s_t%s", f->vars[dims[k]], k + 1 < np ? ", " : ")");
    char fused[200];
    snprintf(fused, sizeof fused, "%s_t", np > 2 ? f->vars[dims[2]] : "");
    for (int k = 3; k < np; k++) {
        char next[200];
        group_name(next, sizeof next, f, dims, 2, k + 1, "t");
        sb_printf(b, "\n    .fuse(%s, %s_t, %s)", fused, f->vars[dims[k]], next);
        declare(h, next);
        memcpy(fused, next, sizeof next);
    }
    sb_printf(b, "\n    .gpu_threads(");
    for (int k = 0; k < np && k < 3; k++) {
        if (k == 2) sb_printf(b, ", %s", fused);
        else sb_printf(b, "%s%s_t", k ? ", " : "", f->vars[dims[k]]);
    }
    sb_printf(b, ");\n");
}

char *sched_to_halide(const sc_pipeline *p, const sched_state *s) {
    hal h = { {0}, {0} };
    int n = p->funcs.n;
    int *cons = malloc(sizeof(int) * ((size_t)n + 1)), *cstage = malloc(sizeof(int) * ((size_t)n + 1));
    if (!cons || !cstage) abort();
    find_consumers(p, s, cons, cstage);
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = from_outputs(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        const sched_func *sf = f->id < s->nfuncs ? s->f[f->id] : NULL;
        sbuf *b = &h.body;
        if (!sf || sf->loc == SCHED_UNDECIDED) {
            sb_printf(b, "// %s: undecided\n", f->name);
            continue;
        }
        switch (sf->loc) {
        case SCHED_INLINE:
            sb_printf(b, "// %s: inline\n", f->name);
            break;
        case SCHED_ROOT:
            for (int st = 0; sf->tile && st < f->nstages && st < sf->nstages; st++)
                halide_root_stage(&h, f, st, &sf->tile[st]);
            break;
        case SCHED_BLOCK:
        case SCHED_THREAD: {
            if (sf->at < 0 || sf->at >= n) {
                sb_printf(b, "// %s: fused into an unknown Func\n", f->name);
                break;
            }
            int stage = cons[f->id] == sf->at && cstage[f->id] >= 0 ? cstage[f->id] : 0;
            char level[300];
            loop_level(level, sizeof level, p, s, sf->at, stage, sf->loc == SCHED_BLOCK);
            if (sf->loc == SCHED_THREAD) {
                sb_printf(b, "%s.compute_at(%s);\n", f->name, level);
                break;
            }
            for (int st = 0; sf->tile && st < f->nstages && st < sf->nstages; st++)
                halide_block_stage(&h, f, st, &sf->tile[st], level);
            break;
        }
        default:
            break;
        }
    }
    free(cons);
    free(cstage);
    sbuf out = {0};
    sb_printf(&out, "// Halide schedule for pipeline %s (generated by stagecraft)\n", p->name);
    if (h.vars.s) {
        sb_printf(&out, "Var");
        const char *c = h.vars.s;
        bool first = true;
        while (*c) {
            while (*c == ' ') c++;
            if (!*c) break;
            size_t l = strcspn(c, " ");
            sb_printf(&out, "%s %.*s(\"%.*s\")", first ? "" : ",", (int)l, c, (int)l, c);
            first = false;
            c += l;
        }
        sb_printf(&out, ";\n");
    }
    sb_printf(&out, "%s", h.body.s ? h.body.s : "");
    free(h.vars.s);
    free(h.body.s);
    return sb_take(&out);
}
