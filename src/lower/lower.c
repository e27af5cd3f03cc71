/*
 * lower.c - from a complete schedule to the kernel IR (lower.h).
 *
 * Lowering writes out what the loop-nest model of the schedule (nest.h)
 * decides: the model checks the rules (fusion, tilings, target-neutral
 * limits) and gives the kernels in launch order, each stage's block,
 * thread and serial extents, the allocation and footprint extents of every
 * fused Func, whether a stage's serial loops are unrolled and which
 * producers it stages in registers.  What lowering adds is code: the
 * inlined expressions, and the origins of tiles and footprints as
 * expressions of the block and thread indices.
 *
 * Steps: build (or take) the model; substitute inline Funcs into their
 * consumers; give every input and root Func a global buffer over its
 * region; then build one kernel per model kernel, in its order.  Inside a
 * kernel:
 *   block_setup  the block's tile base per pure loop, then the footprint
 *                origin of every BLOCK-level Func of the kernel, consumers
 *                first: each the union of what its consumers' boxes read
 *                (a Func may have several, fused into the same block);
 *   phases       one per stage of every BLOCK-level Func (producers
 *                first), then the root stage itself; each thread
 *                computes a serial tile, after computing the THREAD-level
 *                Funcs of that tile (a group found the same way:
 *                footprints consumers first, computed producers first).
 *
 * Footprint origins.  The box of a producer P that a tile of its consumer
 * needs is found per call argument as `sym + [lo, hi]` (footprint.h, the
 * algebra the model counts with), clipped into P's region with the
 * model's extent ext:
 *     min = max(min(sym + lo, region max - ext + 1), region min).
 * For a Func fused into several consumers that read it at different
 * symbols, the origin is the least of theirs and the extent the model's
 * hull (hull.h).
 */
#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "footprint.h"
#include "fusion.h"
#include "legal.h"
#include "lower.h"
#include "nest_query.h"

typedef struct {
    sc_pipeline *p;
    ir_arena *arena;           /* everything lowering makes */
    const bounds_result *b;
    const sched_state *s;
    const nest *m;             /* the loop-nest model of s: the decisions and extents */
    lower_program *prog;
    char *err;
    size_t errlen;
    bool failed;
    sc_expr ***val;            /* [fid][stage] value after inlining */
    sc_expr ****lhs;           /* [fid][stage][d] left side after inlining */
    fusion_graph *graph;       /* the consumer graph */
    fusion_use *uses;          /* fusion_max_uses entries */
    int *owner, *owner_stage;  /* [fid] fused: the stage that computes it (nest_owner) */
    sc_expr ***fp_min;         /* [fid] fused: its footprint origin in the kernel being built */
    lower_alloc **global;      /* [fid] */
    lower_kernel *k;           /* kernel being built */
    const nest_kernel *mk;     /* its model */
    ir_vec names;              /* variable names used in this kernel */
    const char **ntab;         /* the same, open addressing by name (malloc'd) */
    int ncap;
} ctx;

static void fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(ctx *c, const char *fmt, ...) {
    if (c->failed) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    c->failed = true;
}

static sc_func *func_at(const ctx *c, int id) { return c->p->funcs.items[id]; }

/* ---- raw expression nodes (no type rules: lowering knows the types) ---- */

static sc_expr *node(ctx *c, ir_kind kind, sc_type t, int nargs) {
    sc_expr *e = ir_alloc(c->arena, sizeof *e);
    e->kind = kind;
    e->type = t;
    e->nargs = nargs;
    if (nargs) e->args = ir_alloc(c->arena, sizeof(sc_expr *) * (size_t)nargs);
    return e;
}

static sc_expr *mk_int(ctx *c, int64_t v) { return fp_int(c->arena, v); }

static sc_expr *mk_var(ctx *c, const char *name) {
    sc_expr *e = node(c, E_VAR, SC_I32, 0);
    e->name = name;
    return e;
}

/* Integer nodes with lowering's folding (footprint.h). */
static sc_expr *mk_bin(ctx *c, sc_binop op, sc_expr *a, sc_expr *b) { return fp_bin(c->arena, op, a, b); }

static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The slot of name in the kernel's name table, or the empty one where it
 * would go. */
static int name_slot(const ctx *c, const char *name) {
    int i = (int)(str_hash(name) & (uint64_t)(c->ncap - 1));
    while (c->ntab[i] && strcmp(c->ntab[i], name)) i = (i + 1) & (c->ncap - 1);
    return i;
}

static void name_add(ctx *c, const char *name) {
    ir_vec_push(c->arena, &c->names, (void *)name);
    if (2 * c->names.n > c->ncap) {
        c->ncap = c->ncap ? 2 * c->ncap : 256;
        free(c->ntab);
        c->ntab = calloc((size_t)c->ncap, sizeof(char *));
        if (!c->ntab) abort();
        for (int i = 0; i < c->names.n; i++) c->ntab[name_slot(c, c->names.items[i])] = c->names.items[i];
    } else {
        c->ntab[name_slot(c, name)] = name;
    }
}

/* A new kernel: no names taken. */
static void names_clear(ctx *c) {
    c->names.n = 0;
    if (c->ntab) memset(c->ntab, 0, sizeof(char *) * (size_t)c->ncap);
}

/* A fresh variable name for this kernel, from a readable stem. */
static const char *fresh(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const char *const lower_tid_names[3] = { "tid0", "tid1", "tid2" };

int lower_tid_index(const char *name) {
    for (int d = 0; d < 3; d++)
        if (!strcmp(name, lower_tid_names[d])) return d;
    return -1;
}

bool lower_thread_var(const char *name) {
    return !strcmp(name, "bid") || !strcmp(name, "tid") || lower_tid_index(name) >= 0;
}

static const char *fresh(ctx *c, const char *fmt, ...) {
    char stem[200], name[220];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(stem, sizeof stem, fmt, ap);
    va_end(ap);
    snprintf(name, sizeof name, "%s", stem);
    for (int k = 2;; k++) {
        bool taken = lower_thread_var(name) || (c->ntab && c->ntab[name_slot(c, name)]);
        if (!taken) break;
        snprintf(name, sizeof name, "%s_%d", stem, k);
    }
    char *r = ir_strdup(c->arena, name);
    name_add(c, r);
    return r;
}

/* ---- statements --------------------------------------------------------- */

static kstmt *stmt(ctx *c, kstmt_kind kind) {
    kstmt *s = ir_alloc(c->arena, sizeof *s);
    s->kind = kind;
    return s;
}

/* Appends item; the items array (only ever made here) has room for 4,
 * then for the next power of two, so a long sequence is not copied at
 * every statement. */
static void seq_add(ctx *c, kstmt *seq, kstmt *item) {
    if (!item) return;
    int n = seq->n;
    if (n == 0 || (n >= 4 && !(n & (n - 1)))) {
        kstmt **items = ir_alloc(c->arena, sizeof(kstmt *) * (size_t)(n ? 2 * n : 4));
        if (n) memcpy(items, seq->items, sizeof(kstmt *) * (size_t)n);
        seq->items = items;
    }
    seq->items[seq->n++] = item;
}

/* A LET of name = value in seq, and its variable. */
static sc_expr *let(ctx *c, kstmt *seq, const char *name, sc_expr *value) {
    kstmt *s = stmt(c, KS_LET);
    s->var = name;
    s->value = value;
    seq_add(c, seq, s);
    return mk_var(c, name);
}

/* ---- substitution ----------------------------------------------------- */

/* Replaces calls of inline Funcs by their (already inlined) values. */
static sc_expr *inline_expr(ctx *c, sc_expr *e) {
    sc_expr *r = e;
    for (int i = 0; i < e->nargs; i++) {
        sc_expr *a = inline_expr(c, e->args[i]);
        if (a != e->args[i]) {
            if (r == e) {
                r = ir_copy_node(c->arena, e);
            }
            r->args[i] = a;
        }
    }
    if (r->kind == E_CALL && r->func->kind == FUNC_DEFINED) {
        const sched_func *sf = c->s->f[r->func->id];
        if (sf && sf->loc == SCHED_INLINE) {
            ir_subst_map m = {0};
            for (int d = 0; d < r->func->ndims; d++) {
                m.names[m.n] = r->func->vars[d];
                m.vals[m.n++] = r->args[d];
            }
            return ir_subst(c->arena, c->val[r->func->id][0], &m);
        }
    }
    return r;
}

/* Inlines every non-inline Func's stages (the model has checked the
 * rules: no inline Func has updates or is an output), and finds the
 * owner of every fused Func. */
static void prepare(ctx *c) {
    const sc_pipeline *p = c->p;
    int n = p->funcs.n;
    c->val = ir_alloc(c->arena, sizeof(sc_expr **) * (size_t)n);
    c->lhs = ir_alloc(c->arena, sizeof(sc_expr ***) * (size_t)n);
    c->owner = ir_alloc(c->arena, sizeof(int) * (size_t)n);
    c->owner_stage = ir_alloc(c->arena, sizeof(int) * (size_t)n);
    c->fp_min = ir_alloc(c->arena, sizeof(sc_expr **) * (size_t)n);
    for (int i = 0; i < n; i++) {
        c->fp_min[i] = ir_alloc(c->arena, sizeof(sc_expr *) * SC_MAX_DIMS);
        nest_owner(c->m, i, &c->owner[i], &c->owner_stage[i]);
    }
    c->global = ir_alloc(c->arena, sizeof(lower_alloc *) * (size_t)n);
    for (int i = 0; i < p->order.n; i++) {
        sc_func *f = ir_order_at(p, i);
        if (f->kind == FUNC_INPUT) continue;
        c->val[f->id] = ir_alloc(c->arena, sizeof(sc_expr *) * (size_t)f->nstages);
        c->lhs[f->id] = ir_alloc(c->arena, sizeof(sc_expr **) * (size_t)f->nstages);
        for (int s = 0; s < f->nstages; s++) {
            const ir_stage *st = &f->stages[s];
            c->val[f->id][s] = inline_expr(c, st->value);
            c->lhs[f->id][s] = ir_alloc(c->arena, sizeof(sc_expr *) * (size_t)(st->nargs + 1));
            for (int d = 0; d < st->nargs; d++) c->lhs[f->id][s][d] = inline_expr(c, st->args[d]);
        }
    }
}

/* ---- footprints (footprint.h) -------------------------------------------- */

typedef struct { const sc_func *prod; ir_arena *arena; ir_vec calls; } fp_walk;

static void fp_call(const sc_expr *e, void *user) {
    fp_walk *w = user;
    if (e->kind == E_CALL && e->func == w->prod) ir_vec_push(w->arena, &w->calls, (void *)e);
}

/* The calls of prod in stage st of f, after inlining. */
static ir_vec calls_of(ctx *c, const sc_func *prod, const sc_func *f, int st) {
    fp_walk w = { prod, c->arena, {0} };
    ir_visit(c->val[f->id][st], fp_call, &w);
    for (int d = 0; d < f->stages[st].nargs; d++) ir_visit(c->lhs[f->id][st][d], fp_call, &w);
    return w.calls;
}

/* The name of dimension d of f in generated names (inputs have no
 * variables: x, y, z, w, then d4 ...). */
static const char *dim_name(const sc_func *f, int d) {
    static const char *const xyzw[] = { "x", "y", "z", "w", "d4", "d5", "d6", "d7" };
    if (f->vars[d]) return f->vars[d];
    return d < 8 ? xyzw[d] : "d";
}

/* The origin of fused Func prod's footprint for its consumers' boxes
 * boxes[0..nb) (several for a Func fused into several consumers), the
 * model's extent clipped into prod's region: per dimension, when every
 * box reads it at the same symbol, the origin of the union of the spans;
 * otherwise the least of the boxes' origins (each clamped into prod's
 * region), with the model's hull extent, or prod's whole region where the
 * model took it.  LETs of the origins that are not constant go into seq. */
static bool footprint(ctx *c, const sc_func *prod, const fp_box *boxes, int nb, kstmt *seq, sc_expr **mins) {
    if (nb == 0) {
        fail(c, "nothing uses %s where it is computed", prod->name);
        return false;
    }
    const nest_func *mf = c->m->funcs[prod->id];
    fp_span *sp = ir_alloc(c->arena, sizeof(fp_span) * (size_t)nb * SC_MAX_DIMS);
    for (int i = 0; i < nb; i++) {
        ir_vec calls = calls_of(c, prod, boxes[i].f, boxes[i].stage);
        const fp_box **bx = ir_alloc(c->arena, sizeof(fp_box *) * (size_t)(calls.n + 1));
        for (int j = 0; j < calls.n; j++) bx[j] = &boxes[i];
        char msg[256];
        if (fp_union(c->arena, c->b, prod, calls.n, (const sc_expr *const *)calls.items, bx, &sp[i * SC_MAX_DIMS],
                     NULL, msg, sizeof msg)) {
            if (!calls.n) fail(c, "%s does not call %s", boxes[i].f->name, prod->name);
            else fail(c, "%s", msg);
            return false;
        }
    }
    sc_expr **lo = ir_alloc(c->arena, sizeof(sc_expr *) * (size_t)nb);
    sc_expr **hi = ir_alloc(c->arena, sizeof(sc_expr *) * (size_t)nb);
    for (int d = 0; d < prod->ndims; d++) {
        fp_span u;
        sc_expr *least;
        if (!fp_same_union(c->arena, c->b, prod, d, nb, &sp[d], SC_MAX_DIMS, &u, lo, hi, &least))
            u = fp_hull_span(c->b, prod, d, least, mf->hull_whole >> d & 1 ? -1 : mf->extent[d]);
        /* one algebra: the span's extent is the model's */
        assert(fp_clip_extent(c->b, prod, d, &u) == mf->extent[d]);
        sc_expr *o = fp_clip_origin(c->arena, c->b, prod, d, &u, mf->extent[d], NULL);
        mins[d] = o->kind == E_CONST ? o : let(c, seq, fresh(c, "%s_%s_min", prod->name, dim_name(prod, d)), o);
    }
    return true;
}

/* ---- emission ---------------------------------------------------------- */

static int pure_loops(const sc_func *f, int st, int *dims) { return fusion_pure_dims(f, st, dims); }

/* A tile base is a constant or a variable of its own (a LET). */
static uint64_t name_hash(const sc_expr *e) {
    assert(e->kind == E_VAR);
    return str_hash(e->name);
}

/* The box of f's stage st where its k-th pure loop covers base[k] + [0, n[k]). */
static fp_box make_box(ctx *c, const sc_func *f, int st, sc_expr **base, const int64_t *n) {
    fp_box box;
    memset(&box, 0, sizeof box);
    box.f = f;
    box.stage = st;
    int dims[SC_MAX_DIMS], np = pure_loops(f, st, dims);
    (void)c;
    for (int k = 0; k < np; k++) {
        box.names[k] = f->vars[dims[k]];
        if (base[k]->kind == E_CONST) {
            box.sym[k] = NULL;
            box.lo[k] = base[k]->c.i;
            box.hi[k] = base[k]->c.i + n[k] - 1;
        } else {
            box.sym[k] = base[k];
            box.h[k] = fp_hash_leaf(name_hash(base[k]));
            box.lo[k] = 0;
            box.hi[k] = n[k] - 1;
        }
    }
    box.n = np;
    return box;
}

static void emit_thread_group(ctx *c, const sc_func *f, int st, const fp_box *box, kstmt *seq);
static lower_alloc *new_alloc(ctx *c, const sc_func *f, lower_mem mem, sc_expr **mins, const int64_t *ext);

/* ---- register staging (Anderson et al. 2021 §6.7) ---- */

/* The producers a stage stages (the model's decision), in the order the
 * stage first calls them. */
typedef struct {
    int n, nwant;
    const sc_func *want[LOWER_MAX_STAGED];
    const sc_func *func[LOWER_MAX_STAGED];
} stage_reads;

static void note_read(const sc_expr *e, void *user) {
    stage_reads *r = user;
    if (e->kind != E_CALL || r->n == r->nwant) return;
    for (int i = 0; i < r->n; i++)
        if (r->func[i] == e->func) return;
    for (int i = 0; i < r->nwant; i++)
        if (r->want[i] == e->func) { r->func[r->n++] = e->func; return; }
}

/* Copies e with the calls of from[i] made calls of to[i]. */
static sc_expr *retarget(ctx *c, sc_expr *e, int n, const sc_func *const *from, sc_func *const *to) {
    sc_expr *r = e;
    for (int i = 0; i < e->nargs; i++) {
        sc_expr *a = retarget(c, e->args[i], n, from, to);
        if (a != e->args[i]) {
            if (r == e) {
                r = ir_copy_node(c->arena, e);
            }
            r->args[i] = a;
        }
    }
    if (r->kind == E_CALL)
        for (int i = 0; i < n; i++)
            if (r->func == from[i]) {
                if (r == e) {
                    r = ir_copy_node(c->arena, e);
                }
                r->func = to[i];
                break;
            }
    return r;
}

/* The footprint of prod's calls in stage st of f over box, per dimension
 * one affine symbol shared by every call + [lo, hi] (footprint.h).  Not
 * clipped into prod's region: loads clamp. */
static bool affine_footprint(ctx *c, const sc_func *prod, const fp_box *box, fp_span *dims) {
    ir_vec calls = calls_of(c, prod, box->f, box->stage);
    return fp_affine_union(c->arena, prod, calls.n, (const sc_expr *const *)calls.items, box, dims, NULL);
}

/* Stages, for one thread's tile (box) of stage st of f, the producers
 * the model stages there (rec): each a MEM_LOCAL copy over the calls'
 * affine footprint (see affine_footprint), loaded by unrolled loops in
 * seq (at coordinates clamped into the producer's buffer), read by the
 * stage through a stand-in Func (id p->funcs.n and up, see lower.h).
 * Returns how many were staged (from[i] -> to[i]). */
static int stage_producers(ctx *c, const sc_func *f, int st, const nest_stage *rec, const fp_box *box,
                           kstmt *seq, const sc_func **from, sc_func **to) {
    stage_reads r;
    memset(&r, 0, sizeof r);
    r.nwant = nest_staged_producers(rec, r.want);
    ir_visit(c->val[f->id][st], note_read, &r);
    for (int d = 0; d < f->stages[st].nargs; d++) ir_visit(c->lhs[f->id][st][d], note_read, &r);
    assert(r.n == r.nwant);
    int n = 0;
    int64_t staged = 0;
    lower_kernel *k = c->k;
    for (int i = 0; i < r.n; i++) {
        const sc_func *prod = r.func[i];
        sc_expr *mins[SC_MAX_DIMS];
        int64_t ext[SC_MAX_DIMS], elems = 1;
        fp_span dims[SC_MAX_DIMS];
        bool affine = affine_footprint(c, prod, box, dims);
        assert(affine);
        (void)affine;
        for (int d = 0; d < prod->ndims; d++) {
            ext[d] = dims[d].hi - dims[d].lo + 1;
            elems *= ext[d];
        }
        for (int d = 0; d < prod->ndims; d++) {
            sc_expr *lo = dims[d].sym ? mk_bin(c, SC_ADD, dims[d].sym, mk_int(c, dims[d].lo)) : mk_int(c, dims[d].lo);
            mins[d] = lo->kind == E_CONST ? lo : let(c, seq, fresh(c, "%s_%s_min", prod->name, dim_name(prod, d)), lo);
        }
        sc_func *copy = ir_alloc(c->arena, sizeof *copy);
        *copy = *prod;
        copy->id = c->p->funcs.n + k->nstaged++;
        lower_alloc *a = new_alloc(c, copy, MEM_LOCAL, mins, ext);
        copy->name = a->name;                    /* "blur_r", as printed */
        k->storage[copy->id] = a;
        k->staged_elems += elems;
        staged += elems;
        kstmt *al = stmt(c, KS_ALLOC);
        al->alloc = a;
        seq_add(c, seq, al);
        kstmt *store = stmt(c, KS_STORE);
        store->alloc = a;
        sc_expr *call = node(c, E_CALL, prod->type, prod->ndims);
        call->func = (sc_func *)prod;
        const char *var[SC_MAX_DIMS];
        const lower_alloc *g = c->global[prod->id];
        for (int d = 0; d < prod->ndims; d++) {
            var[d] = fresh(c, "%s_%s_l", prod->name, dim_name(prod, d));
            store->coords[d] = mk_var(c, var[d]);
            /* points past the buffer (never used) load its edge */
            int64_t gmin = g->min[d]->c.i, gmax = gmin + g->extent[d] - 1;
            call->args[d] = mk_bin(c, SC_MAX, mk_bin(c, SC_MIN, store->coords[d], mk_int(c, gmax)), mk_int(c, gmin));
        }
        store->value = call;
        kstmt *body = store;
        for (int d = 0; d < prod->ndims; d++) {
            kstmt *loop = stmt(c, KS_FOR);
            loop->var = var[d];
            loop->min = mins[d];
            loop->extent = ext[d];
            loop->unroll = true;
            loop->body = body;
            body = loop;
        }
        seq_add(c, seq, body);
        from[n] = prod;
        to[n++] = copy;
    }
    /* one algebra: the copies are the model's */
    assert(staged == rec->staged_elems);
    (void)staged;
    return n;
}

/* The reduction loops of stg (variables rvar) around body, dimension x
 * innermost, around the serial tile of `total` points (around) or inside
 * it; each is unrolled where nest_reduction_unrolls says. */
static kstmt *reduction_loops(ctx *c, const ir_stage *stg, const char *const *rvar, int64_t total, int lim,
                              bool around, kstmt *body) {
    int64_t red[SC_MAX_DIMS];
    int nred = stg->rdom ? stg->rdom->ndims : 0;
    for (int d = 0; d < nred; d++) red[d] = stg->rdom->extent[d];
    bool whole = nest_reduction_unrolls_whole(red, nred, total, lim, around);
    if (stg->rdom)
        for (int d = 0; d < stg->rdom->ndims; d++) {
            kstmt *loop = stmt(c, KS_FOR);
            loop->var = rvar[d];
            loop->min = mk_int(c, stg->rdom->min[d]);
            loop->extent = stg->rdom->extent[d];
            loop->unroll = nest_reduction_unrolls(red, nred, d, total, lim, around);
            loop->unroll_whole = whole;
            loop->body = body;
            body = loop;
        }
    return body;
}

/* Computes stage st of f (its model rec) over the box base[k] + [0,
 * serial[k]) of its pure loops (skipping points at or past limit[k] where
 * limit[k] is set), into dst: thread-level producers first, then the
 * staged copies, the serial loops, the reduction loops and the store; a
 * stage that accumulates in place over a tile of several points has its
 * reduction loops around the serial loops instead
 * (nest_reduction_around_tile): each reduction step updates the whole
 * tile (pure points never interact), so that an unrolled tile shares the
 * step's loads and keeps its running values in registers, and a larger
 * one runs its innermost loop over contiguous points. */
static void emit_stage(ctx *c, const sc_func *f, int st, const nest_stage *rec, lower_alloc *dst, sc_expr **base,
                       sc_expr **limit, kstmt *seq) {
    const int64_t *n = rec->serial;
    fp_box box = make_box(c, f, st, base, n);
    /* a THREAD-level Func's own thread-level producers belong to the
     * group of the stage that computes it */
    if (c->s->f[f->id]->loc != SCHED_THREAD) emit_thread_group(c, f, st, &box, seq);
    if (c->failed) return;
    int dims[SC_MAX_DIMS], np = pure_loops(f, st, dims);
    const ir_stage *stg = &f->stages[st];
    ir_subst_map m = {0};
    const char *loopvar[SC_MAX_DIMS];
    int64_t total = 1;
    for (int k = 0; k < np; k++) {
        loopvar[k] = fresh(c, "%s_%s", f->name, f->vars[dims[k]]);
        m.names[m.n] = f->vars[dims[k]];
        m.vals[m.n++] = mk_var(c, loopvar[k]);
        total *= n[k];
    }
    const char *rvar[SC_MAX_DIMS];
    if (stg->rdom) {
        m.rdom = stg->rdom;
        for (int d = 0; d < stg->rdom->ndims; d++) {
            rvar[d] = fresh(c, "%s_%s_%c", f->name, stg->rdom->name, "xyzw"[d]);
            m.rvals[d] = mk_var(c, rvar[d]);
        }
    }
    const sc_func *from[LOWER_MAX_STAGED];
    sc_func *to[LOWER_MAX_STAGED];
    int nstaged = rec->nstaged ? stage_producers(c, f, st, rec, &box, seq, from, to) : 0;
    kstmt *store = stmt(c, KS_STORE);
    store->alloc = dst;
    for (int d = 0; d < f->ndims; d++)
        store->coords[d] = retarget(c, ir_subst(c->arena, c->lhs[f->id][st][d], &m), nstaged, from, to);
    store->value = retarget(c, ir_subst(c->arena, c->val[f->id][st], &m), nstaged, from, to);
    kstmt *body = store;
    /* the reduction loops: innermost, or around the serial tile
     * (nest_reduction_around_tile) */
    bool red_outer = nest_reduction_around_tile(rec);
    if (!red_outer) body = reduction_loops(c, stg, rvar, total, rec->unroll_limit, false, body);
    sc_expr *cond = NULL;
    for (int k = 0; k < np; k++)
        if (limit && limit[k]) {
            sc_expr *lt = mk_bin(c, SC_LT, mk_var(c, loopvar[k]), limit[k]);
            cond = cond ? mk_bin(c, SC_AND, cond, lt) : lt;
        }
    if (cond) {
        kstmt *g = stmt(c, KS_IF);
        g->cond = cond;
        g->body = body;
        body = g;
    }
    for (int k = 0; k < np; k++) {
        kstmt *loop = stmt(c, KS_FOR);
        loop->var = loopvar[k];
        loop->min = base[k];
        loop->extent = n[k];
        loop->unroll = rec->unrolled;
        if (k == 0 && rec->cyclic) {
            /* point u of the thread at base + u * threads: a counter and
             * the coordinate as a LET */
            kstmt *seq = stmt(c, KS_SEQ), *at = stmt(c, KS_LET);
            loop->var = fresh(c, "%s_%s_c", f->name, f->vars[dims[k]]);
            loop->min = mk_int(c, 0);
            at->var = loopvar[k];
            at->value = mk_bin(c, SC_ADD, base[k], mk_bin(c, SC_MUL, mk_var(c, loop->var), mk_int(c, rec->threads[k])));
            seq_add(c, seq, at);
            seq_add(c, seq, body);
            body = seq;
        }
        loop->body = body;
        body = loop;
    }
    if (red_outer) body = reduction_loops(c, stg, rvar, total, rec->unroll_limit, rec->unroll_whole_ok, body);
    seq_add(c, seq, body);
}

static lower_alloc *new_alloc(ctx *c, const sc_func *f, lower_mem mem, sc_expr **mins, const int64_t *ext) {
    lower_alloc *a = ir_alloc(c->arena, sizeof *a);
    a->func = f;
    a->mem = mem;
    char name[256];
    snprintf(name, sizeof name, "%s_%s", f->name, mem == MEM_GLOBAL ? "g" : mem == MEM_SHARED ? "s" : "r");
    a->name = mem == MEM_GLOBAL ? ir_strdup(c->arena, name) : fresh(c, "%s", name);
    a->ndims = f->ndims;
    a->count = 1;
    for (int d = 0; d < f->ndims; d++) {
        a->min[d] = mins[d];
        a->extent[d] = ext[d];
        a->stride[d] = a->count;
        a->count *= ext[d];
    }
    return a;
}

/* The kernel's work-group shape (lower_kernel.tdim) from its root stage
 * rec: the threads of each loop that has some, in loop order, the third
 * dimension those of the third and every later one (lower.h).  Set
 * before any phase is lowered: block-level phases read their threads
 * from it. */
static void kernel_tdim(ctx *c, const nest_stage *rec) {
    int64_t dims[3];
    c->k->merged_tdim = target_group_dims(rec->threads, rec->npure, dims);
    for (int j = 0; j < 3; j++) c->k->tdim[j] = (int)dims[j];
}

/* A thread digit (tid / below) % t as a local id
 * where the work-group's shape allows: below the threads of the group's
 * dimensions before j and t those of dimension j give tid_j (whose range
 * is the digit's, so the interior copies lose nothing); in a kernel whose
 * third dimension merges several loops (lower_kernel.merged_tdim), a digit
 * of it is one of tid2: (tid2 / (below / (T0 T1))) % t, the same value.
 * PoCL vectorizes a work-group's loop over its work-items only where the
 * addresses are affine in local id 0, which a digit of the flat index
 * taken with / or % never is; tid2 is the same in all of its lanes.  NULL
 * where the shape does not line up. */
static sc_expr *digit_in_local_ids(ctx *c, int64_t below, int t) {
    const int *T = c->k->tdim;
    int64_t prefix = 1;
    for (int j = 0; j < 3; prefix *= T[j], j++)
        if (prefix == below && t == T[j]) return mk_var(c, lower_tid_names[j]);
    int64_t plane = (int64_t)T[0] * T[1];
    if (!c->k->merged_tdim || below % plane) return NULL;
    int64_t sub = below / plane;
    sc_expr *e = mk_var(c, lower_tid_names[2]);
    if (sub > 1) e = mk_bin(c, SC_DIV, e, mk_int(c, sub));
    if (sub * t < T[2]) e = mk_bin(c, SC_MOD, e, mk_int(c, t));
    return e;
}

/* Splits the flat thread index over the loops of rec (threads[k] threads
 * each): LETs of each thread's tile base, base[k] + t_k * serial[k]
 * (base[0] + t_0 where the points are cyclic, nest_stage.cyclic).  A
 * t_k is a local id where it lines up with the work-group's shape
 * (kernel_tdim: always, in the root phase of a kernel with at most three
 * threaded loops), else a digit of the flat index. */
static void thread_bases(ctx *c, const sc_func *f, const nest_stage *rec, const int *dims, sc_expr **base,
                         sc_expr **out, kstmt *seq) {
    int64_t below = 1;
    int np = rec->npure;
    const int *threads = rec->threads;
    for (int k = 0; k < np; k++) {
        sc_expr *t;
        if (threads[k] == 1) {
            t = mk_int(c, 0);
        } else if (!(t = digit_in_local_ids(c, below, threads[k]))) {
            t = mk_var(c, "tid");
            if (below > 1) t = mk_bin(c, SC_DIV, t, mk_int(c, below));
            if (nest_thread_digit_wraps(threads, np, k)) t = mk_bin(c, SC_MOD, t, mk_int(c, threads[k]));
        }
        int64_t step = nest_thread_step(rec->cyclic, k, rec->serial[k]);
        sc_expr *v = mk_bin(c, SC_ADD, base[k], mk_bin(c, SC_MUL, t, mk_int(c, step)));
        out[k] = v->kind == E_CONST ? v : let(c, seq, fresh(c, "%s_%s_t", f->name, f->vars[dims[k]]), v);
        below *= threads[k];
    }
}

/* The phases of a BLOCK-level Func (model mf) over its footprint from
 * mins: one per stage, its points spread over the stage's threads. */
static void emit_block_phases(ctx *c, const sc_func *prod, const nest_func *mf, lower_alloc *a, sc_expr **mins) {
    lower_kernel *k = c->k;
    for (int s = 0; s < prod->nstages && !c->failed; s++) {
        const nest_stage *rec = mf->stages[s];
        int dims[SC_MAX_DIMS], np = pure_loops(prod, s, dims);
        kstmt *phase = stmt(c, KS_SEQ), *inner = stmt(c, KS_SEQ);
        sc_expr *tb[SC_MAX_DIMS], *limit[SC_MAX_DIMS];
        thread_bases(c, prod, rec, dims, mins, tb, inner);
        /* a guard only where the threads' tiles reach past the footprint */
        for (int q = 0; q < np; q++)
            limit[q] = rec->threads[q] * rec->serial[q] > rec->extent[q]
                           ? mk_bin(c, SC_ADD, mins[q], mk_int(c, rec->extent[q])) : NULL;
        emit_stage(c, prod, s, rec, a, tb, limit, inner);
        if (rec->threads_used < k->nthreads) {
            kstmt *g = stmt(c, KS_IF);
            g->cond = mk_bin(c, SC_LT, mk_var(c, "tid"), mk_int(c, rec->threads_used));
            g->body = inner;
            seq_add(c, phase, g);
        } else {
            phase = inner;
        }
        kstmt **ph = ir_alloc(c->arena, sizeof(kstmt *) * (size_t)(k->nphases + 1));
        if (k->nphases) memcpy(ph, k->phases, sizeof(kstmt *) * (size_t)k->nphases);
        ph[k->nphases++] = phase;
        k->phases = ph;
    }
}

/* The Funcs fused at `level` that the stage (owner, ostage) computes, and
 * the origins of their footprints.  Every consumer of a member is the
 * owner's stage or another member (fusion.h), so the boxes are found
 * consumers first (the pipeline's order from the outputs), each over
 * what its consumers' boxes read; LETs of the origins go into seq.  The
 * members' ids are returned in order producers first (the order they are
 * computed in).  Returns their count. */
static int fused_group(ctx *c, sched_loc level, const sc_func *owner, int ostage, const fp_box *obox,
                       kstmt *seq, int *members) {
    const sc_pipeline *p = c->p;
    int n = 0;
    for (int i = p->order.n - 1; i >= 0 && !c->failed; i--) {
        const sc_func *g = ir_order_at(p, i);
        const nest_func *mf = g->kind == FUNC_DEFINED ? c->m->funcs[g->id] : NULL;
        if (!mf || mf->loc != level || c->owner[g->id] != owner->id || c->owner_stage[g->id] != ostage) continue;
        int nu = fusion_consumers(c->graph, c->s, g->id, c->uses);
        fp_box *boxes = ir_alloc(c->arena, sizeof(fp_box) * (size_t)(nu + 1));
        for (int u = 0; u < nu; u++) {
            int cf = c->uses[u].func;
            if (cf == owner->id) {
                boxes[u] = *obox;
            } else {
                assert(c->m->funcs[cf]->loc == level && c->owner[cf] == owner->id);
                boxes[u] = make_box(c, func_at(c, cf), c->uses[u].stage, c->fp_min[cf], c->m->funcs[cf]->extent);
            }
        }
        if (!footprint(c, g, boxes, nu, seq, c->fp_min[g->id])) return n;
        members[n++] = g->id;
    }
    for (int i = 0; i < n / 2; i++) {
        int t = members[i];
        members[i] = members[n - 1 - i];
        members[n - 1 - i] = t;
    }
    return n;
}

/* The BLOCK-level Funcs of the kernel of root stage (r, st), whose block
 * covers box: footprint origins in block_setup, shared arrays, then their
 * phases, producers first. */
static void emit_block_group(ctx *c, const sc_func *r, int st, const fp_box *box) {
    lower_kernel *k = c->k;
    int *members = ir_alloc(c->arena, sizeof(int) * (size_t)(c->p->funcs.n + 1));
    int n = fused_group(c, SCHED_BLOCK, r, st, box, k->block_setup, members);
    for (int i = 0; i < n && !c->failed; i++) {
        const sc_func *g = func_at(c, members[i]);
        lower_alloc *a = new_alloc(c, g, MEM_SHARED, c->fp_min[g->id], c->m->funcs[g->id]->extent);
        k->storage[g->id] = a;
        lower_alloc **sh = ir_alloc(c->arena, sizeof(lower_alloc *) * (size_t)(k->nshared + 1));
        if (k->nshared) memcpy(sh, k->shared, sizeof(lower_alloc *) * (size_t)k->nshared);
        sh[k->nshared++] = a;
        k->shared = sh;
    }
    for (int i = 0; i < n && !c->failed; i++) {
        const sc_func *g = func_at(c, members[i]);
        emit_block_phases(c, g, c->m->funcs[g->id], k->storage[g->id], c->fp_min[g->id]);
    }
}

/* The THREAD-level Funcs that stage st of f computes per thread tile
 * (box): in registers over their footprints, producers first. */
static void emit_thread_group(ctx *c, const sc_func *f, int st, const fp_box *box, kstmt *seq) {
    int *members = ir_alloc(c->arena, sizeof(int) * (size_t)(c->p->funcs.n + 1));
    int n = fused_group(c, SCHED_THREAD, f, st, box, seq, members);
    for (int i = 0; i < n && !c->failed; i++) {
        const sc_func *g = func_at(c, members[i]);
        const nest_func *mf = c->m->funcs[g->id];
        lower_alloc *a = new_alloc(c, g, MEM_LOCAL, c->fp_min[g->id], mf->extent);
        c->k->storage[g->id] = a;
        kstmt *al = stmt(c, KS_ALLOC);
        al->alloc = a;
        seq_add(c, seq, al);
        for (int s = 0; s < g->nstages && !c->failed; s++)
            emit_stage(c, g, s, mf->stages[s], a, c->fp_min[g->id], NULL, seq);
    }
}

/* ---- kernels ------------------------------------------------------------ */

typedef struct { ctx *c; bool *used_func; bool *used_param; } arg_walk;

static void arg_expr(const sc_expr *e, void *user) {
    arg_walk *w = user;
    if (e->kind == E_CALL) w->used_func[e->func->id] = true;
    if (e->kind == E_PARAM) w->used_param[e->param->id] = true;
}

static void arg_stmt(const kstmt *s, arg_walk *w) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) arg_stmt(s->items[i], w);
    if (s->min) ir_visit(s->min, arg_expr, w);
    if (s->cond) ir_visit(s->cond, arg_expr, w);
    if (s->value) ir_visit(s->value, arg_expr, w);
    if (s->kind == KS_STORE) {
        w->used_func[s->alloc->func->id] = true;
        for (int d = 0; d < s->alloc->ndims; d++) ir_visit(s->coords[d], arg_expr, w);
    }
    if (s->kind == KS_ALLOC)
        for (int d = 0; d < s->alloc->ndims; d++) ir_visit(s->alloc->min[d], arg_expr, w);
    arg_stmt(s->body, w);
}

/* The global buffers and parameters a kernel uses, in id order. */
static void collect_args(ctx *c, lower_kernel *k) {
    const sc_pipeline *p = c->p;
    arg_walk w = { c, ir_alloc(c->arena, (size_t)(p->funcs.n + LOWER_MAX_STAGED) + 1),
                   ir_alloc(c->arena, (size_t)p->params.n + 1) };
    arg_stmt(k->block_setup, &w);
    for (int i = 0; i < k->nphases; i++) arg_stmt(k->phases[i], &w);
    for (int i = 0; i < k->nshared; i++)
        for (int d = 0; d < k->shared[i]->ndims; d++) ir_visit(k->shared[i]->min[d], arg_expr, &w);
    k->args = ir_alloc(c->arena, sizeof(lower_alloc *) * (size_t)(p->funcs.n + 1));
    for (int i = 0; i < p->funcs.n; i++)
        if (w.used_func[i] && c->global[i] && (!k->storage[i] || k->storage[i] == c->global[i])) {
            k->args[k->nargs++] = c->global[i];
            k->storage[i] = c->global[i];
        }
    k->params = ir_alloc(c->arena, sizeof(sc_param *) * (size_t)(p->params.n + 1));
    for (int i = 0; i < p->params.n; i++)
        if (w.used_param[i]) k->params[k->nparams++] = p->params.items[i];
}

static void describe_tile(char *buf, size_t n, const sc_func *f, int st, const sched_tile *t, bool serial) {
    int dims[SC_MAX_DIMS], np = pure_loops(f, st, dims);
    size_t len = strlen(buf);
    snprintf(buf + len, n - len, " [");
    for (int k = 0; k < np && k < t->npure; k++) {
        len = strlen(buf);
        if (serial) snprintf(buf + len, n - len, "%s%s=%dx%d", k ? " " : "", f->vars[dims[k]], t->threads[k], t->serial[k]);
        else snprintf(buf + len, n - len, "%s%s=%d", k ? " " : "", f->vars[dims[k]], t->threads[k]);
    }
    len = strlen(buf);
    snprintf(buf + len, n - len, "]");
}

/* The kernel the model has as mk: its root stage over the grid of the
 * model's record. */
static void build_kernel(ctx *c, const nest_kernel *mk) {
    const sc_pipeline *p = c->p;
    const sc_func *r = mk->root;
    int st = mk->stage;
    const sched_tile *t = &c->s->f[r->id]->tile[st];
    const nest_stage *rec = c->m->funcs[r->id]->stages[st];
    int dims[SC_MAX_DIMS], np = pure_loops(r, st, dims);
    /* the pure loops' minima, from bounds inference */
    const bounds_stage *bs = &c->b->funcs[r->id].stages[st];
    int64_t mn[SC_MAX_DIMS], blk[SC_MAX_DIMS];
    for (int q = 0, li = 0; q < np; q++, li++) {
        while (bs->which[li] < 0) li++;
        mn[q] = bs->min[li];
        blk[q] = rec->threads[q] * rec->serial[q];
    }
    const int64_t *ext = rec->extent, *nb = rec->blocks;
    int64_t nblocks = mk->nblocks, nthreads = mk->nthreads;
    lower_kernel *k = ir_alloc(c->arena, sizeof *k);
    c->k = k;
    c->mk = mk;
    names_clear(c);
    char name[256];
    snprintf(name, sizeof name, "%s_s%d", r->name, st);
    k->name = ir_strdup(c->arena, name);
    k->nblocks = nblocks;
    k->nthreads = (int)nthreads;
    k->block_setup = stmt(c, KS_SEQ);
    k->storage = ir_alloc(c->arena, sizeof(lower_alloc *) * (size_t)(p->funcs.n + LOWER_MAX_STAGED));
    k->root = r;
    k->stage = st;
    k->storage[r->id] = c->global[r->id];
    char comment[1024];
    snprintf(comment, sizeof comment, "%s stage %d: root", r->name, st);
    describe_tile(comment, sizeof comment, r, st, t, true);
    size_t len = strlen(comment);
    snprintf(comment + len, sizeof comment - len, ", %lld block%s of %lld thread%s", (long long)nblocks,
             nblocks == 1 ? "" : "s", (long long)nthreads, nthreads == 1 ? "" : "s");
    k->comment = ir_strdup(c->arena, comment);

    /* the block's tile base in each pure loop */
    sc_expr *base[SC_MAX_DIMS];
    int64_t below = 1;
    for (int q = 0; q < np; q++) {
        sc_expr *b = mk_var(c, "bid");
        if (below > 1) b = mk_bin(c, SC_DIV, b, mk_int(c, below));
        if (q < np - 1) b = mk_bin(c, SC_MOD, b, mk_int(c, nb[q]));
        if (nb[q] == 1) b = mk_int(c, 0);
        sc_expr *v = mk_bin(c, SC_ADD, mk_int(c, mn[q]), mk_bin(c, SC_MUL, b, mk_int(c, blk[q])));
        base[q] = v->kind == E_CONST ? v : let(c, k->block_setup, fresh(c, "%s_%s_b", r->name, r->vars[dims[q]]), v);
        if (base[q]->kind == E_VAR && nb[q] > 1) {
            k->bases[k->nbases].var = base[q]->name;
            k->bases[k->nbases].min = mn[q];
            k->bases[k->nbases].step = blk[q];
            k->bases[k->nbases++].count = nb[q];
        }
        below *= nb[q];
    }
    fp_box box = make_box(c, r, st, base, blk);
    kernel_tdim(c, rec);
    emit_block_group(c, r, st, &box);
    if (c->failed) return;
    kstmt *main_phase = stmt(c, KS_SEQ);
    sc_expr *tb[SC_MAX_DIMS], *limit[SC_MAX_DIMS];
    for (int q = 0; q < np; q++) limit[q] = ext[q] % blk[q] ? mk_int(c, mn[q] + ext[q]) : NULL;
    thread_bases(c, r, rec, dims, base, tb, main_phase);
    emit_stage(c, r, st, rec, c->global[r->id], tb, limit, main_phase);
    if (c->failed) return;
    kstmt **ph = ir_alloc(c->arena, sizeof(kstmt *) * (size_t)(k->nphases + 1));
    if (k->nphases) memcpy(ph, k->phases, sizeof(kstmt *) * (size_t)k->nphases);
    ph[k->nphases++] = main_phase;
    k->phases = ph;
    collect_args(c, k);
    lower_program *prog = c->prog;
    lower_kernel **ks = ir_alloc(c->arena, sizeof(lower_kernel *) * (size_t)(prog->nkernels + 1));
    if (prog->nkernels) memcpy(ks, prog->kernels, sizeof(lower_kernel *) * (size_t)prog->nkernels);
    ks[prog->nkernels++] = k;
    prog->kernels = ks;
}

/* What the model cannot check on a partial schedule: every Func placed;
 * and, before anything is inlined, that inlining stays small. */
static int check_complete(const sc_pipeline *p, const sched_state *s, char *err, size_t errlen) {
    if (s->nfuncs != p->funcs.n)
        return base_fail(err, errlen, "the schedule is for a pipeline of %d Funcs, not %d", s->nfuncs, p->funcs.n);
    int worst;
    double size = legal_max_inlined_size(p, s, &worst);
    if (size > LEGAL_MAX_INLINED)
        return base_fail(err, errlen, "inlining makes the expression of %s %.3g nodes large (the limit is %d): "
                         "compute some of its producers at root or fused",
                         ((sc_func *)p->funcs.items[worst])->name, size, LEGAL_MAX_INLINED);
    for (int i = 0; i < p->order.n; i++) {
        sc_func *f = ir_order_at(p, i);
        const sched_func *sf = f->kind == FUNC_INPUT ? NULL : s->f[f->id];
        if (f->kind != FUNC_INPUT && (!sf || sf->loc == SCHED_UNDECIDED))
            return base_fail(err, errlen, "the schedule does not place %s", f->name);
    }
    return 0;
}

/* Lowers s, complete and checked by check_complete, by its model. */
static lower_program *lower_model(ir_arena *arena, sc_pipeline *p, const bounds_result *b, const sched_state *s,
                                  const nest *model, char *err, size_t errlen) {
    ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.arena = arena;
    c.b = b;
    c.s = s;
    c.m = model;
    c.err = err;
    c.errlen = errlen;
    c.graph = fusion_graph_new(p);
    c.uses = ir_alloc(arena, sizeof(fusion_use) * (size_t)(fusion_max_uses(c.graph) + 1));
    prepare(&c);
    lower_program *prog = ir_alloc(arena, sizeof *prog);
    prog->p = p;
    c.prog = prog;
    prog->buffers = ir_alloc(arena, sizeof(lower_alloc *) * (size_t)(p->funcs.n + 1));
    for (int i = 0; i < p->order.n; i++) {
        sc_func *f = ir_order_at(p, i);
        if (f->kind != FUNC_INPUT && s->f[f->id]->loc != SCHED_ROOT) continue;
        const bounds_func *bf = &b->funcs[f->id];
        sc_expr *mins[SC_MAX_DIMS];
        int64_t ext[SC_MAX_DIMS];
        bool empty = false;
        for (int d = 0; d < f->ndims; d++) {
            mins[d] = mk_int(&c, f->kind == FUNC_INPUT ? 0 : bf->min[d]);
            ext[d] = f->kind == FUNC_INPUT ? f->extent[d] : bf->extent[d];
            empty |= ext[d] <= 0;
        }
        if (empty) continue;
        c.global[f->id] = new_alloc(&c, f, MEM_GLOBAL, mins, ext);
        prog->buffers[prog->nbuffers++] = c.global[f->id];
    }
    for (int i = 0; i < model->nkernels && !c.failed; i++) build_kernel(&c, model->kernels[i]);
    free(c.ntab);
    fusion_graph_free(c.graph);
    return c.failed ? NULL : prog;
}

lower_program *lower_schedule_nest(ir_arena *arena, sc_pipeline *p, const bounds_result *b, const sched_state *s,
                                   const nest *model, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (check_complete(p, s, err, errlen)) return NULL;
    return lower_model(arena, p, b, s, model, err, errlen);
}

lower_program *lower_schedule_ctx(ir_arena *arena, sc_pipeline *p, const bounds_result *b, const sched_state *s,
                                  nest_ctx *x, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (check_complete(p, s, err, errlen)) return NULL;
    nest *m = nest_build(x, s, err, errlen);
    lower_program *prog = m ? lower_model(arena, p, b, s, m, err, errlen) : NULL;
    nest_free(m);
    return prog;
}

lower_program *lower_schedule(ir_arena *arena, sc_pipeline *p, const bounds_result *b,
                              const sched_state *s, char *err, size_t errlen) {
    return lower_schedule_for(arena, p, b, s, false, err, errlen);
}

lower_program *lower_schedule_for(ir_arena *arena, sc_pipeline *p, const bounds_result *b,
                                  const sched_state *s, bool cpu, char *err, size_t errlen) {
    return lower_schedule_mapped(arena, p, b, s, cpu, cpu, err, errlen);
}

lower_program *lower_schedule_mapped(ir_arena *arena, sc_pipeline *p, const bounds_result *b,
                                     const sched_state *s, bool cpu, bool cyclic, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (check_complete(p, s, err, errlen)) return NULL;
    nest_ctx *x = nest_ctx_new(p, b);
    nest_ctx_set_staging(x, !cpu);
    nest_ctx_set_cyclic(x, cyclic);
    nest_ctx_cache_kernels(x, false);
    nest *m = nest_build(x, s, err, errlen);
    lower_program *prog = m ? lower_model(arena, p, b, s, m, err, errlen) : NULL;
    if (prog) prog->cpu = cpu;
    nest_free(m);
    nest_ctx_free(x);
    return prog;
}

/* ---- printing ------------------------------------------------------------- */

static void indent(FILE *out, int depth) {
    for (int i = 0; i < depth; i++) fputs("  ", out);
}

static void print_expr(FILE *out, const sc_expr *e) {
    char *s = ir_expr_to_string(e);
    fputs(s, out);
    free(s);
}

static void print_alloc(FILE *out, const lower_alloc *a) {
    static const char *mem[] = { "global", "shared", "local" };
    fprintf(out, "%s %s %s[", mem[a->mem], sc_type_name(a->func->type), a->name);
    for (int d = 0; d < a->ndims; d++) {
        fprintf(out, "%s", d ? ", " : "");
        print_expr(out, a->min[d]);
        fprintf(out, " + %lld", (long long)a->extent[d]);
    }
    fprintf(out, "]");
}

static void print_stmt(FILE *out, const kstmt *s, int depth) {
    if (!s) return;
    switch (s->kind) {
    case KS_SEQ:
        for (int i = 0; i < s->n; i++) print_stmt(out, s->items[i], depth);
        break;
    case KS_FOR:
        indent(out, depth);
        fprintf(out, "for %s in ", s->var);
        print_expr(out, s->min);
        fprintf(out, " + [0, %lld)%s:\n", (long long)s->extent, s->unroll ? " unrolled" : "");
        print_stmt(out, s->body, depth + 1);
        break;
    case KS_IF:
        indent(out, depth);
        fprintf(out, "if ");
        print_expr(out, s->cond);
        fprintf(out, ":\n");
        print_stmt(out, s->body, depth + 1);
        break;
    case KS_LET:
        indent(out, depth);
        fprintf(out, "let %s = ", s->var);
        print_expr(out, s->value);
        fprintf(out, "\n");
        break;
    case KS_ALLOC:
        indent(out, depth);
        fprintf(out, "alloc ");
        print_alloc(out, s->alloc);
        fprintf(out, "\n");
        break;
    case KS_STORE:
        indent(out, depth);
        fprintf(out, "%s(", s->alloc->name);
        for (int d = 0; d < s->alloc->ndims; d++) {
            if (d) fprintf(out, ", ");
            print_expr(out, s->coords[d]);
        }
        fprintf(out, ") = ");
        print_expr(out, s->value);
        fprintf(out, "\n");
        break;
    }
}

void lower_print(FILE *out, const lower_program *prog) {
    fprintf(out, "# kernels of %s: %d kernel%s, %d global buffer%s\n", prog->p->name, prog->nkernels,
            prog->nkernels == 1 ? "" : "s", prog->nbuffers, prog->nbuffers == 1 ? "" : "s");
    for (int i = 0; i < prog->nbuffers; i++) {
        fprintf(out, "buffer ");
        print_alloc(out, prog->buffers[i]);
        fprintf(out, "\n");
    }
    for (int i = 0; i < prog->nkernels; i++) {
        const lower_kernel *k = prog->kernels[i];
        fprintf(out, "\nkernel %s  # %s\n", k->name, k->comment);
        fprintf(out, "  grid %lld blocks x %d threads\n  args:", (long long)k->nblocks, k->nthreads);
        for (int a = 0; a < k->nargs; a++) fprintf(out, " %s", k->args[a]->name);
        for (int a = 0; a < k->nparams; a++) fprintf(out, " %s", k->params[a]->name);
        fprintf(out, "\n  block setup (bid):\n");
        print_stmt(out, k->block_setup, 2);
        for (int a = 0; a < k->nshared; a++) {
            fprintf(out, "  ");
            print_alloc(out, k->shared[a]);
            fprintf(out, "\n");
        }
        for (int ph = 0; ph < k->nphases; ph++) {
            fprintf(out, "  phase %d (tid)%s:\n", ph, ph + 1 < k->nphases ? ", then barrier" : "");
            print_stmt(out, k->phases[ph], 2);
        }
    }
}
