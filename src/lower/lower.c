/*
 * lower.c - from a complete schedule to the kernel IR (lower.h).
 *
 * Steps: substitute inline Funcs into their consumers; check the fusion
 * rules (legal.h); give every input and root Func a global buffer over its
 * region; then build one kernel per stage of each root Func, in
 * topological order.  Inside a kernel:
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
 * Footprints.  The box of a producer P that a tile of its consumer needs
 * is found per call argument as `sym + [lo, hi]`: sym an expression of the
 * tile's base variables (or none), lo/hi constants.  Sums, constant
 * multiples and floor divisions by constants stay exact up to a unit;
 * min/max/clamp against constants are 1-Lipschitz, so clamp(S + o) lies in
 * clamp(S) + [min(lo, 0), max(hi, 0)] - which lets the taps of a clamped
 * stencil share one symbol.  Calls whose symbols agree are united; anything
 * else falls back to the constant interval bounds inference gives over the
 * consumer's whole region.  The box is finally clipped into P's own region
 * (so computing all of it never reads out of bounds):
 *     ext' = min(ext, region extent)
 *     min' = max(min(sym + lo, region max - ext' + 1), region min).
 */
#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "footprint.h"
#include "hull.h"
#include "legal.h"
#include "lower.h"

typedef struct {
    sc_pipeline *p;
    ir_arena *arena;           /* everything lowering makes */
    const bounds_result *b;
    const sched_state *s;
    lower_program *prog;
    char *err;
    size_t errlen;
    bool failed;
    sc_expr ***val;            /* [fid][stage] value after inlining */
    sc_expr ****lhs;           /* [fid][stage][d] left side after inlining */
    legal_ctx *legal;          /* the consumer graph and fusion rules */
    int *stage_at;             /* [fid] the stage of its `at` a fused Func is computed in */
    int *owner, *owner_stage;  /* [fid] fused: the stage whose block (BLOCK: the root
                                  stage of its kernel) or thread tile (THREAD: the first
                                  Func up its chain that is not THREAD) computes it */
    int *hull_root, *hull_stage;  /* [fid] fused with several consumers: its kernel's root
                                  Func and stage (its hull needs the symbols), else -1 */
    sc_expr ***fp_min;         /* [fid] fused: its footprint in the kernel being built */
    int64_t **fp_ext;
    lower_alloc **global;      /* [fid] */
    lower_kernel *k;           /* kernel being built */
    ir_vec names;              /* variable names used in this kernel */
    const char **ntab;         /* the same, open addressing by name (malloc'd) */
    int ncap;
    /* The kernel's LETs as hull.h symbols (sym_name[i] is symbol i), so
     * that the hull of several consumers' boxes is evaluated as the
     * loop-nest model evaluates it: one code, hull_extent. */
    hull_syms hs;
    ir_vec sym_name, sym_var;
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

static const char *fresh(ctx *c, const char *fmt, ...) {
    char stem[200], name[220];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(stem, sizeof stem, fmt, ap);
    va_end(ap);
    snprintf(name, sizeof name, "%s", stem);
    for (int k = 2;; k++) {
        bool taken = !strcmp(name, "bid") || !strcmp(name, "tid") || (c->ntab && c->ntab[name_slot(c, name)]);
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

/* e over the kernel's hull symbols (hull.h): each variable a LET made
 * replaced by its symbol; NULL when e reads another variable. */
static sc_expr *hull_of(ctx *c, sc_expr *e) {
    if (e->kind == E_VAR) {
        for (int i = c->sym_name.n - 1; i >= 0; i--)      /* let() made the variable: the same name */
            if (c->sym_name.items[i] == e->name) return c->sym_var.items[i];
        for (int i = c->sym_name.n - 1; i >= 0; i--)
            if (!strcmp(c->sym_name.items[i], e->name)) return c->sym_var.items[i];
        return NULL;
    }
    if (!e->nargs) return e;
    sc_expr *r = ir_copy_node(c->hs.xa, e);
    for (int i = 0; i < e->nargs; i++)
        if (!(r->args[i] = hull_of(c, e->args[i]))) return NULL;
    return r;
}

/* A LET of name = value in seq, and its variable; def: the value over
 * the hull symbols when it reads the block or thread index (their
 * digits), else NULL (hull_of(value)). */
static sc_expr *let_def(ctx *c, kstmt *seq, const char *name, sc_expr *value, sc_expr *def) {
    kstmt *s = stmt(c, KS_LET);
    s->var = name;
    s->value = value;
    seq_add(c, seq, s);
    if (c->hs.xa) {
        ir_vec_push(c->arena, &c->sym_name, (void *)name);
        ir_vec_push(c->arena, &c->sym_var, hull_sym(&c->hs, def ? def : hull_of(c, value)));
    }
    return mk_var(c, name);
}

static sc_expr *let(ctx *c, kstmt *seq, const char *name, sc_expr *value) {
    return let_def(c, seq, name, value, NULL);
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

/* Inlines every non-inline Func's stages. */
static void prepare(ctx *c) {
    const sc_pipeline *p = c->p;
    int n = p->funcs.n;
    c->val = ir_alloc(c->arena, sizeof(sc_expr **) * (size_t)n);
    c->lhs = ir_alloc(c->arena, sizeof(sc_expr ***) * (size_t)n);
    c->stage_at = ir_alloc(c->arena, sizeof(int) * (size_t)n);
    c->owner = ir_alloc(c->arena, sizeof(int) * (size_t)n);
    c->owner_stage = ir_alloc(c->arena, sizeof(int) * (size_t)n);
    c->hull_root = ir_alloc(c->arena, sizeof(int) * (size_t)n);
    c->hull_stage = ir_alloc(c->arena, sizeof(int) * (size_t)n);
    c->fp_min = ir_alloc(c->arena, sizeof(sc_expr **) * (size_t)n);
    c->fp_ext = ir_alloc(c->arena, sizeof(int64_t *) * (size_t)n);
    for (int i = 0; i < n; i++) {
        c->fp_min[i] = ir_alloc(c->arena, sizeof(sc_expr *) * SC_MAX_DIMS);
        c->fp_ext[i] = ir_alloc(c->arena, sizeof(int64_t) * SC_MAX_DIMS);
    }
    c->global = ir_alloc(c->arena, sizeof(lower_alloc *) * (size_t)n);
    for (int i = 0; i < p->order.n; i++) {
        sc_func *f = ir_order_at(p, i);
        if (f->kind == FUNC_INPUT) continue;
        const sched_func *sf = c->s->f[f->id];
        if (!sf || sf->loc == SCHED_UNDECIDED) {
            fail(c, "the schedule does not place %s", f->name);
            return;
        }
        if (sf->loc == SCHED_INLINE && (f->nstages > 1 || f->is_output)) {
            fail(c, "%s cannot be inline: %s", f->name,
                 f->is_output ? "it is an output" : "it has update definitions");
            return;
        }
        if (f->is_output && sf->loc != SCHED_ROOT) {
            fail(c, "%s is an output and must be computed at root", f->name);
            return;
        }
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

/* Checks the rules for fused Funcs (sched.h, legal.h) and records the
 * stage of its `at` each one is computed in. */
static void check_fusion(ctx *c) {
    const sc_pipeline *p = c->p;
    for (int i = 0; i < p->order.n && !c->failed; i++) {
        sc_func *f = ir_order_at(p, i);
        if (f->kind == FUNC_INPUT) continue;
        const sched_func *sf = c->s->f[f->id];
        c->stage_at[f->id] = -1;
        if ((sf->loc == SCHED_ROOT || sf->loc == SCHED_BLOCK) && (!sf->tile || sf->nstages != f->nstages)) {
            fail(c, "%s has %d stage%s but its schedule tiles %d", f->name, f->nstages,
                 f->nstages == 1 ? "" : "s", sf->tile ? sf->nstages : 0);
            return;
        }
        if (sf->loc != SCHED_BLOCK && sf->loc != SCHED_THREAD) continue;
        if (legal_fusion(c->legal, c->s, f->id, sf->loc, sf->at, &c->stage_at[f->id], c->err, c->errlen)) {
            c->failed = true;
            return;
        }
        /* the chain of consumers must end at a root Func */
        int hops = 0;
        for (int g = f->id; c->s->f[g]->loc != SCHED_ROOT; g = c->s->f[g]->at)
            if (++hops > p->funcs.n) { fail(c, "%s is computed inside a cycle of Funcs", f->name); return; }
    }
    for (int i = 0; i < p->funcs.n; i++) {
        const sched_func *sf = c->s->f[i];
        c->owner[i] = c->owner_stage[i] = -1;
        if (func_at(c, i)->kind == FUNC_INPUT || (sf->loc != SCHED_BLOCK && sf->loc != SCHED_THREAD)) continue;
        int h = i;
        while (c->s->f[c->s->f[h]->at]->loc == sf->loc) h = c->s->f[h]->at;
        c->owner[i] = c->s->f[h]->at;
        c->owner_stage[i] = c->stage_at[h];
    }
    legal_use *uses = ir_alloc(c->arena, sizeof(legal_use) * (size_t)legal_max_uses(c->legal));
    for (int i = 0; i < p->funcs.n; i++) {
        c->hull_root[i] = c->hull_stage[i] = -1;
        if (c->owner[i] < 0 || legal_consumers(c->legal, c->s, i, uses) < 2) continue;
        int h = i;
        while (c->s->f[c->s->f[h]->at]->loc != SCHED_ROOT) h = c->s->f[h]->at;
        c->hull_root[i] = c->s->f[h]->at;
        c->hull_stage[i] = c->stage_at[h];
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

/* The clipped footprint of prod in the consumer stage described by box:
 * LETs of its origin go into seq; returns the origin expressions and
 * extents. */
static bool footprint(ctx *c, const sc_func *prod, const fp_box *box, kstmt *seq,
                      sc_expr **mins, int64_t *ext) {
    ir_vec calls = calls_of(c, prod, box->f, box->stage);
    const fp_box *boxes[1] = { box };
    const fp_box **bx = ir_alloc(c->arena, sizeof(fp_box *) * (size_t)(calls.n + 1));
    for (int i = 0; i < calls.n; i++) bx[i] = boxes[0];
    fp_span dims[SC_MAX_DIMS];
    char msg[256];
    if (fp_union(c->arena, c->b, prod, calls.n, (const sc_expr *const *)calls.items, bx, dims, NULL, msg, sizeof msg)) {
        if (!calls.n) fail(c, "%s does not call %s", box->f->name, prod->name);
        else fail(c, "%s", msg);
        return false;
    }
    for (int d = 0; d < prod->ndims; d++) {
        ext[d] = fp_clip_extent(c->b, prod, d, &dims[d]);
        sc_expr *lo = fp_clip_origin(c->arena, c->b, prod, d, &dims[d], ext[d], NULL);
        mins[d] = lo->kind == E_CONST ? lo : let(c, seq, fresh(c, "%s_%s_min", prod->name, dim_name(prod, d)), lo);
    }
    return true;
}

/* ---- the union of several consumers' footprints ---------------------------- */

/* The footprint of prod for several consumer boxes (a Func fused into
 * several consumers): per dimension, when every box reads it at the same
 * symbol, the union of the spans; otherwise the hull of the boxes' spans,
 * whose origin is the least of their origins and whose extent is the
 * largest the hull has in any block (or thread), found by hull_extent
 * (hull.h, the loop-nest model's evaluation) over the kernel's LETs (each
 * span clamped into prod's region first: no consumer reads outside it);
 * if that cannot be done, prod's whole region.
 * Then clipped into prod's region, like a single footprint. */
static bool footprint_union(ctx *c, const sc_func *prod, const fp_box *boxes, int nb, kstmt *seq,
                            sc_expr **mins, int64_t *ext) {
    if (nb == 1) return footprint(c, prod, &boxes[0], seq, mins, ext);
    if (nb == 0) {
        fail(c, "nothing uses %s where it is computed", prod->name);
        return false;
    }
    fp_span *sp = ir_alloc(c->arena, sizeof(fp_span) * (size_t)nb * SC_MAX_DIMS);
    for (int i = 0; i < nb; i++) {
        ir_vec calls = calls_of(c, prod, boxes[i].f, boxes[i].stage);
        const fp_box **bx = ir_alloc(c->arena, sizeof(fp_box *) * (size_t)(calls.n + 1));
        for (int j = 0; j < calls.n; j++) bx[j] = &boxes[i];
        char msg[256];
        if (fp_union(c->arena, c->b, prod, calls.n, (const sc_expr *const *)calls.items, bx, &sp[i * SC_MAX_DIMS],
                     NULL, msg, sizeof msg)) {
            fail(c, "%s", msg);
            return false;
        }
    }
    bool thread = c->s->f[prod->id]->loc == SCHED_THREAD;
    sc_expr **lo = ir_alloc(c->arena, sizeof(sc_expr *) * (size_t)nb);
    sc_expr **hi = ir_alloc(c->arena, sizeof(sc_expr *) * (size_t)nb);
    fp_span *hsp = ir_alloc(c->arena, sizeof(fp_span) * (size_t)nb);
    for (int d = 0; d < prod->ndims; d++) {
        fp_span u;
        sc_expr *least;
        if (!fp_same_union(c->arena, c->b, prod, d, nb, &sp[d], SC_MAX_DIMS, &u, lo, hi, &least)) {
            /* the spans over the hull symbols (the LETs they read) */
            bool ok = true;
            for (int i = 0; i < nb; i++) {
                hsp[i] = sp[i * SC_MAX_DIMS + d];
                if (hsp[i].sym) ok &= (hsp[i].sym = hull_of(c, hsp[i].sym)) != NULL;
            }
            int64_t e = ok ? hull_extent(&c->hs, c->k->nblocks, thread ? c->k->nthreads : 0, &c->b->funcs[prod->id],
                                         d, nb, hsp, 1)
                           : -1;
            u = fp_hull_span(c->b, prod, d, least, e);
        }
        ext[d] = fp_clip_extent(c->b, prod, d, &u);
        sc_expr *o = fp_clip_origin(c->arena, c->b, prod, d, &u, ext[d], NULL);
        mins[d] = o->kind == E_CONST ? o : let(c, seq, fresh(c, "%s_%s_min", prod->name, dim_name(prod, d)), o);
    }
    return true;
}

/* ---- emission ---------------------------------------------------------- */

static int pure_loops(const sc_func *f, int st, int *dims) { return legal_pure_dims(f, st, dims); }

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

/* The producers a stage reads from global memory, each with its distinct
 * call expressions. */
typedef struct {
    int n;
    const sc_func *func[LOWER_MAX_STAGED];
    int calls[LOWER_MAX_STAGED];
    ir_vec seen, hashes;          /* distinct calls, their ir_expr_hash */
    const sc_func *consumer;
    ctx *c;
} stage_reads;

static void note_read(const sc_expr *e, void *user) {
    stage_reads *r = user;
    ctx *c = r->c;
    if (e->kind != E_CALL || e->func == r->consumer || !c->global[e->func->id]) return;
    const lower_alloc *here = c->k->storage[e->func->id];
    if (here && here != c->global[e->func->id]) return;      /* fused here: not global */
    uint64_t h = ir_expr_hash(e);
    for (int i = 0; i < r->seen.n; i++)
        if ((uint64_t)(uintptr_t)r->hashes.items[i] == h && ir_expr_equal(r->seen.items[i], e)) return;
    ir_vec_push(c->arena, &r->seen, (void *)e);
    ir_vec_push(c->arena, &r->hashes, (void *)(uintptr_t)h);
    for (int i = 0; i < r->n; i++)
        if (r->func[i] == e->func) { r->calls[i]++; return; }
    if (r->n < LOWER_MAX_STAGED) {
        r->func[r->n] = e->func;
        r->calls[r->n++] = 1;
    }
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

/* Stages, for one thread's tile (box) of stage st of f, every producer
 * read from global memory whose footprint over the tile is affine (see
 * affine_footprint), holds at most LOWER_STAGE_ELEMS points and is smaller
 * than the loads it replaces (`loads` per distinct call: the tile's points
 * times reduction points): a MEM_LOCAL copy loaded by unrolled loops in
 * seq (at coordinates clamped into the producer's buffer), read by the
 * stage through a stand-in Func (id p->funcs.n and up, see lower.h).
 * Returns how many were staged (from[i] -> to[i]). */
static int stage_producers(ctx *c, const sc_func *f, int st, const fp_box *box, int64_t loads,
                           kstmt *seq, const sc_func **from, sc_func **to) {
    stage_reads r;
    memset(&r, 0, sizeof r);
    r.consumer = f;
    r.c = c;
    ir_visit(c->val[f->id][st], note_read, &r);
    for (int d = 0; d < f->stages[st].nargs; d++) ir_visit(c->lhs[f->id][st][d], note_read, &r);
    int n = 0;
    lower_kernel *k = c->k;
    for (int i = 0; i < r.n && k->nstaged < LOWER_MAX_STAGED; i++) {
        const sc_func *prod = r.func[i];
        sc_expr *mins[SC_MAX_DIMS];
        int64_t ext[SC_MAX_DIMS], elems = 1;
        fp_span dims[SC_MAX_DIMS];
        if (!affine_footprint(c, prod, box, dims)) continue;
        for (int d = 0; d < prod->ndims; d++) {
            ext[d] = dims[d].hi - dims[d].lo + 1;
            elems *= ext[d];
        }
        if (elems > LOWER_STAGE_ELEMS || elems >= r.calls[i] * loads) continue;
        /* the register estimate (legal.h) sets this much aside per kernel */
        if (k->staged_elems + elems > NEST_STAGED_REGISTERS) continue;
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
    return n;
}

/* Computes stage st of f over the box base[k] + [0, n[k]) of its pure
 * loops (skipping points at or past limit[k] where limit[k] is set), into
 * dst: thread-level producers first, then the serial loops, the reduction
 * loops and the store. */
static void emit_stage(ctx *c, const sc_func *f, int st, lower_alloc *dst, sc_expr **base,
                       const int64_t *n, sc_expr **limit, kstmt *seq) {
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
    /* Register staging needs every loop over the staged copies unrolled
     * (constant indices keep them in registers) and reuse to gain from. */
    int64_t loads = total;
    bool unrolled = total < LEGAL_UNROLL_LIMIT;
    if (stg->rdom)
        for (int d = 0; d < stg->rdom->ndims; d++) {
            unrolled &= stg->rdom->extent[d] < LEGAL_UNROLL_LIMIT && total * stg->rdom->extent[d] < LEGAL_UNROLL_LIMIT;
            loads *= stg->rdom->extent[d];
        }
    const sc_func *from[LOWER_MAX_STAGED];
    sc_func *to[LOWER_MAX_STAGED];
    int nstaged = total > 1 && unrolled ? stage_producers(c, f, st, &box, loads, seq, from, to) : 0;
    kstmt *store = stmt(c, KS_STORE);
    store->alloc = dst;
    for (int d = 0; d < f->ndims; d++)
        store->coords[d] = retarget(c, ir_subst(c->arena, c->lhs[f->id][st][d], &m), nstaged, from, to);
    store->value = retarget(c, ir_subst(c->arena, c->val[f->id][st], &m), nstaged, from, to);
    kstmt *body = store;
    if (stg->rdom)
        for (int d = 0; d < stg->rdom->ndims; d++) {
            kstmt *loop = stmt(c, KS_FOR);
            loop->var = rvar[d];
            loop->min = mk_int(c, stg->rdom->min[d]);
            loop->extent = stg->rdom->extent[d];
            loop->unroll = stg->rdom->extent[d] < LEGAL_UNROLL_LIMIT && total * stg->rdom->extent[d] < LEGAL_UNROLL_LIMIT;
            loop->body = body;
            body = loop;
        }
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
        loop->unroll = total < LEGAL_UNROLL_LIMIT;
        loop->body = body;
        body = loop;
    }
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

/* Splits the flat thread index over loops of `threads[k]` threads: LETs of
 * each thread's tile base, base[k] + t_k * per[k]. */
static void thread_bases(ctx *c, const sc_func *f, int np, const int *dims, const int *threads,
                         sc_expr **base, const int64_t *per, sc_expr **out, kstmt *seq) {
    int64_t below = 1;
    int split = c->hs.xa ? hull_split(&c->hs) : 0;
    for (int k = 0; k < np; k++) {
        bool mod = k < np - 1 || below > 1;
        sc_expr *t = mk_var(c, "tid");
        if (below > 1) t = mk_bin(c, SC_DIV, t, mk_int(c, below));
        if (mod) t = mk_bin(c, SC_MOD, t, mk_int(c, threads[k]));
        if (threads[k] == 1) t = mk_int(c, 0);
        sc_expr *v = mk_bin(c, SC_ADD, base[k], mk_bin(c, SC_MUL, t, mk_int(c, per[k])));
        if (v->kind == E_CONST || !c->hs.xa) {
            out[k] = v->kind == E_CONST ? v : let(c, seq, fresh(c, "%s_%s_t", f->name, f->vars[dims[k]]), v);
        } else {
            /* the same over the hull symbols, the thread index by its digit */
            ir_arena *xa = c->hs.xa;
            sc_expr *hb = hull_of(c, base[k]);
            sc_expr *ht = threads[k] == 1 ? fp_int(xa, 0) : hull_digit(&c->hs, split, true, below, threads[k], mod);
            sc_expr *def = hb ? fp_bin(xa, SC_ADD, hb, fp_bin(xa, SC_MUL, ht, fp_int(xa, per[k]))) : NULL;
            out[k] = let_def(c, seq, fresh(c, "%s_%s_t", f->name, f->vars[dims[k]]), v, def);
        }
        below *= threads[k];
    }
}

/* The phases of a BLOCK-level Func over its footprint (mins, ext): one
 * per stage, its points spread over the stage's threads. */
static void emit_block_phases(ctx *c, const sc_func *prod, lower_alloc *a, sc_expr **mins, const int64_t *ext) {
    lower_kernel *k = c->k;
    const sched_func *sf = c->s->f[prod->id];
    for (int s = 0; s < prod->nstages && !c->failed; s++) {
        const sched_tile *t = &sf->tile[s];
        int dims[SC_MAX_DIMS], np = pure_loops(prod, s, dims);
        if (t->npure != np) {
            fail(c, "the schedule of %s stage %d tiles %d loops; it has %d", prod->name, s, t->npure, np);
            return;
        }
        int64_t used = 1, per[SC_MAX_DIMS];
        for (int q = 0; q < np; q++) {
            if (t->threads[q] < 1) { fail(c, "%s: thread counts must be positive", prod->name); return; }
            used *= t->threads[q];
            per[q] = (ext[q] + t->threads[q] - 1) / t->threads[q];
        }
        if (used > k->nthreads) {
            fail(c, "%s (block level) spreads stage %d over %lld threads, but the block of its kernel has %d",
                 prod->name, s, (long long)used, k->nthreads);
            return;
        }
        kstmt *phase = stmt(c, KS_SEQ), *inner = stmt(c, KS_SEQ);
        sc_expr *tb[SC_MAX_DIMS], *limit[SC_MAX_DIMS];
        thread_bases(c, prod, np, dims, t->threads, mins, per, tb, inner);
        for (int q = 0; q < np; q++) limit[q] = mk_bin(c, SC_ADD, mins[q], mk_int(c, ext[q]));
        emit_stage(c, prod, s, a, tb, per, limit, inner);
        if (used < k->nthreads) {
            kstmt *g = stmt(c, KS_IF);
            g->cond = mk_bin(c, SC_LT, mk_var(c, "tid"), mk_int(c, used));
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
 * their footprints.  Every consumer of a member is the owner's stage or
 * another member (legal.h), so the boxes are found consumers first (the
 * pipeline's order from the outputs), each the union of what its
 * consumers' boxes read; LETs of the origins go into seq.  The members'
 * ids are returned in order producers first (the order they are computed
 * in).  Returns their count. */
static int fused_group(ctx *c, sched_loc level, const sc_func *owner, int ostage, const fp_box *obox,
                       kstmt *seq, int *members) {
    const sc_pipeline *p = c->p;
    int n = 0;
    legal_use *uses = ir_alloc(c->arena, sizeof(legal_use) * (size_t)legal_max_uses(c->legal));
    for (int i = p->order.n - 1; i >= 0 && !c->failed; i--) {
        const sc_func *g = ir_order_at(p, i);
        const sched_func *sf = g->kind == FUNC_DEFINED ? c->s->f[g->id] : NULL;
        if (!sf || sf->loc != level || c->owner[g->id] != owner->id || c->owner_stage[g->id] != ostage) continue;
        int nu = legal_consumers(c->legal, c->s, g->id, uses);
        fp_box *boxes = ir_alloc(c->arena, sizeof(fp_box) * (size_t)(nu + 1));
        for (int u = 0; u < nu; u++) {
            int cf = uses[u].func;
            if (cf == owner->id) {
                boxes[u] = *obox;
            } else {
                assert(c->s->f[cf]->loc == level && c->owner[cf] == owner->id);
                boxes[u] = make_box(c, func_at(c, cf), uses[u].stage, c->fp_min[cf], c->fp_ext[cf]);
            }
        }
        if (!footprint_union(c, g, boxes, nu, seq, c->fp_min[g->id], c->fp_ext[g->id])) return n;
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
        lower_alloc *a = new_alloc(c, g, MEM_SHARED, c->fp_min[g->id], c->fp_ext[g->id]);
        k->storage[g->id] = a;
        lower_alloc **sh = ir_alloc(c->arena, sizeof(lower_alloc *) * (size_t)(k->nshared + 1));
        if (k->nshared) memcpy(sh, k->shared, sizeof(lower_alloc *) * (size_t)k->nshared);
        sh[k->nshared++] = a;
        k->shared = sh;
    }
    for (int i = 0; i < n && !c->failed; i++) {
        const sc_func *g = func_at(c, members[i]);
        emit_block_phases(c, g, k->storage[g->id], c->fp_min[g->id], c->fp_ext[g->id]);
    }
}

/* The THREAD-level Funcs that stage st of f computes per thread tile
 * (box): in registers over their footprints, producers first. */
static void emit_thread_group(ctx *c, const sc_func *f, int st, const fp_box *box, kstmt *seq) {
    int *members = ir_alloc(c->arena, sizeof(int) * (size_t)(c->p->funcs.n + 1));
    int n = fused_group(c, SCHED_THREAD, f, st, box, seq, members);
    for (int i = 0; i < n && !c->failed; i++) {
        const sc_func *g = func_at(c, members[i]);
        lower_alloc *a = new_alloc(c, g, MEM_LOCAL, c->fp_min[g->id], c->fp_ext[g->id]);
        c->k->storage[g->id] = a;
        kstmt *al = stmt(c, KS_ALLOC);
        al->alloc = a;
        seq_add(c, seq, al);
        for (int s = 0; s < g->nstages && !c->failed; s++)
            emit_stage(c, g, s, a, c->fp_min[g->id], c->fp_ext[g->id], NULL, seq);
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

static void build_kernel(ctx *c, const sc_func *r, int st) {
    const sc_pipeline *p = c->p;
    const sched_func *sf = c->s->f[r->id];
    const sched_tile *t = &sf->tile[st];
    int dims[SC_MAX_DIMS], np = pure_loops(r, st, dims);
    nest_grid g;
    int made = nest_grid_of(c->b, r, st, t, np, &g, c->failed ? NULL : c->err, c->errlen);
    if (made < 0) { c->failed = true; return; }
    if (made == 0) return;
    const int64_t *ext = g.ext, *mn = g.min, *blk = g.blk, *nb = g.nb;
    int64_t nblocks = g.nblocks, nthreads = g.nthreads;
    lower_kernel *k = ir_alloc(c->arena, sizeof *k);
    c->k = k;
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
    int split = c->hs.xa ? hull_split(&c->hs) : 0;
    for (int q = 0; q < np; q++) {
        sc_expr *b = mk_var(c, "bid");
        if (below > 1) b = mk_bin(c, SC_DIV, b, mk_int(c, below));
        if (q < np - 1) b = mk_bin(c, SC_MOD, b, mk_int(c, nb[q]));
        if (nb[q] == 1) b = mk_int(c, 0);
        sc_expr *v = mk_bin(c, SC_ADD, mk_int(c, mn[q]), mk_bin(c, SC_MUL, b, mk_int(c, blk[q])));
        if (v->kind == E_CONST || !c->hs.xa) {
            base[q] = v->kind == E_CONST ? v : let(c, k->block_setup, fresh(c, "%s_%s_b", r->name, r->vars[dims[q]]), v);
        } else {
            /* the same over the hull symbols, the block index by its digit */
            ir_arena *xa = c->hs.xa;
            sc_expr *hb = hull_digit(&c->hs, split, false, below, nb[q], q < np - 1);
            sc_expr *def = fp_bin(xa, SC_ADD, fp_int(xa, mn[q]), fp_bin(xa, SC_MUL, hb, fp_int(xa, blk[q])));
            base[q] = let_def(c, k->block_setup, fresh(c, "%s_%s_b", r->name, r->vars[dims[q]]), v, def);
        }
        below *= nb[q];
    }
    fp_box box = make_box(c, r, st, base, blk);
    emit_block_group(c, r, st, &box);
    if (c->failed) return;
    kstmt *main_phase = stmt(c, KS_SEQ);
    sc_expr *tb[SC_MAX_DIMS], *limit[SC_MAX_DIMS];
    int64_t per[SC_MAX_DIMS];
    for (int q = 0; q < np; q++) {
        per[q] = t->serial[q];
        limit[q] = ext[q] % blk[q] ? mk_int(c, mn[q] + ext[q]) : NULL;
    }
    thread_bases(c, r, np, dims, t->threads, base, per, tb, main_phase);
    emit_stage(c, r, st, c->global[r->id], tb, per, limit, main_phase);
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

lower_program *lower_schedule(ir_arena *arena, sc_pipeline *p, const bounds_result *b,
                              const sched_state *s, char *err, size_t errlen) {
    ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.arena = arena;
    c.b = b;
    c.s = s;
    c.err = err;
    c.errlen = errlen;
    if (err && errlen) err[0] = 0;
    if (s->nfuncs != p->funcs.n) {
        snprintf(err, errlen, "the schedule is for a pipeline of %d Funcs, not %d", s->nfuncs, p->funcs.n);
        return NULL;
    }
    int worst;
    double size = legal_max_inlined_size(p, s, &worst);
    if (size > LEGAL_MAX_INLINED) {
        snprintf(err, errlen, "inlining makes the expression of %s %.3g nodes large (the limit is %d): compute some of its producers at root or fused",
                 ((sc_func *)p->funcs.items[worst])->name, size, LEGAL_MAX_INLINED);
        return NULL;
    }
    c.legal = legal_new(p, b, NULL, false);
    prepare(&c);
    if (!c.failed) check_fusion(&c);
    if (c.failed) {
        legal_free(c.legal);
        return NULL;
    }
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
    for (int i = 0; i < p->order.n && !c.failed; i++) {
        sc_func *f = ir_order_at(p, i);
        if (f->kind == FUNC_INPUT || s->f[f->id]->loc != SCHED_ROOT || !c.global[f->id]) continue;
        for (int st = 0; st < f->nstages && !c.failed; st++) {
            /* the symbols only where a hull is to be found (as the model) */
            bool hull = false;
            for (int g = 0; g < p->funcs.n && !hull; g++) hull = c.hull_root[g] == f->id && c.hull_stage[g] == st;
            hull_begin(&c.hs, hull);
            c.sym_name.n = c.sym_var.n = 0;
            build_kernel(&c, f, st);
            hull_end(&c.hs);
        }
    }
    hull_free(&c.hs);
    free(c.ntab);
    legal_free(c.legal);
    return c.failed ? NULL : prog;
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
