/*
 * feat_access.c - a stage's accesses as affine forms of its loops
 * (feat_access.h).
 *
 * The walk carries an environment from variable names to forms: a stage's
 * pure variables are its loops, and the pure variables of an inline Func
 * are the forms of the arguments it was called with, so an access made
 * through any depth of inline Funcs is a form of the stage's own loops.
 * The same walk computes the Strahler number of the inlined expression
 * (Anderson et al. 2021 Appendix A, expr_branching): a leaf is 1, a node
 * whose two largest children tie is one more than them, any other node
 * the largest of its children; an inline call is the Strahler number of
 * its definition with its variables standing for the arguments'.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "feat_access.h"

typedef struct {
    int n;
    const char *names[SC_MAX_DIMS];
    feat_form forms[SC_MAX_DIMS];
    int strahler[SC_MAX_DIMS];
} env;

/* An open-addressing index over an array of distinct calls: a slot holds
 * a call's index + 1, 0 is empty; cap is a power of two, > 2 x the calls. */
typedef struct {
    int *slot;
    int cap;
} call_index;

typedef struct {
    const sc_pipeline *p;
    const sched_state *s;
    const sc_func *f;
    int st;
    feat_stage_access *out;
    bool oom;
    call_index calls_ix;              /* over out->calls */
    bool memo;                        /* memoize inline expansions (memo below) */
    struct memo_entry **mtab;         /* [MEMO_TABLE] */
    struct rec *rec;                  /* the innermost recording, NULL: none */
    int64_t *fcalls;                  /* [func id]: inline calls of each Func so far */
    int64_t *fdistinct;               /* [func id]: distinct inline calls of each Func so far */
    feat_call *icalls;                /* the distinct inline calls (prod: the inline Func) */
    int ni, icap;
    call_index inline_ix;             /* over icalls */
} walk;

/* Memoized inline expansions.  Expanding an inline Func g with the same
 * argument forms and Strahler numbers always records the same calls in
 * the same order, counts the same inline calls and gives the same
 * Strahler number (the walk's stage and state are fixed); a chain of
 * inlined stencils would otherwise expand g once per path to it,
 * exponentially many.  An entry keeps the distinct calls the expansion
 * recorded, in first-appearance order (indices into out->calls, which
 * only grows), so replaying it records exactly what the expansion would:
 * calls already in out stay where they are, new ones are appended in the
 * same order.  An expansion that records a call with an irregular
 * coordinate is not kept: such a call is a new access every time. */
#define MEMO_TABLE 256

typedef struct memo_entry {
    struct memo_entry *next;
    uint64_t h;
    int nkey;
    double *key;
    int strahler;
    int64_t inlined;
    int nf;                           /* the inline calls it made, per Func: ids and counts */
    int *fid;
    int64_t *fn;
    int n;
    int *calls;
} memo_entry;

/* The distinct calls of an expansion being recorded: a list and a set. */
typedef struct rec {
    struct rec *up;
    int n, cap, *list;
    int *set, setcap;                 /* open addressing: index + 1, 0 empty */
    bool irregular;                   /* recorded a call with an irregular coordinate, or made an inline
                                       * call with an irregular argument */
} rec;

/* Variable names: the same pointer, or the same text (the first
 * character tells most apart). */
static inline bool same_name(const char *a, const char *b) {
    return a == b || (a[0] == b[0] && !strcmp(a, b));
}

static bool is_inline(const walk *w, const sc_func *g) {
    if (!w->s || g->kind != FUNC_DEFINED || g == w->f) return false;
    const sched_func *sf = w->s->f[g->id];
    return sf && sf->loc == SCHED_INLINE;
}

static feat_form irregular(void) {
    feat_form r;
    memset(&r, 0, sizeof r);
    return r;
}

static feat_form constant(double v) {
    feat_form r = irregular();
    r.ok = true;
    r.off = v;
    return r;
}

static bool is_const_form(const feat_form *a, int nloops) {
    if (!a->ok) return false;
    for (int j = 0; j < nloops; j++)
        if (a->c[j] != 0) return false;
    return true;
}

/* Regular, or irregular within a known bound. */
static bool known(const feat_form *a) { return a->ok || a->bounded; }

/* The irregular form bounded by [lo, hi] (irregular() when both are
 * infinite). */
static feat_form bounded(double lo, double hi) {
    feat_form r = irregular();
    if (isinf(lo) && isinf(hi)) return r;
    r.bounded = true;
    r.rlo = lo;
    r.rhi = hi;
    return r;
}

/* k times the interval [lo, hi] (k != 0), as [*out_lo, *out_hi]. */
static void scale_interval(double lo, double hi, double k, double *out_lo, double *out_hi) {
    *out_lo = k > 0 ? k * lo : k * hi;
    *out_hi = k > 0 ? k * hi : k * lo;
}

static feat_form combine(feat_form a, feat_form b, double sb, int nloops) {
    if (!known(&a) || !known(&b)) return irregular();
    for (int j = 0; j < nloops; j++) a.c[j] += sb * b.c[j];
    a.off += sb * b.off;
    a.lipschitz |= b.lipschitz;
    if (!b.ok) {
        double lo, hi;
        scale_interval(b.rlo, b.rhi, sb, &lo, &hi);
        a.rlo += lo;
        a.rhi += hi;
        a.ok = false;
        a.bounded = true;
    }
    return a;
}

static feat_form scale(feat_form a, double k, int nloops) {
    if (!known(&a)) return a;
    if (k == 0) return constant(0);
    for (int j = 0; j < nloops; j++) a.c[j] *= k;
    a.off *= k;
    if (a.bounded) scale_interval(a.rlo, a.rhi, k, &a.rlo, &a.rhi);
    return a;
}

/* Whether a known form has a loop coefficient. */
static bool moves(const feat_form *a, int nloops) {
    for (int j = 0; j < nloops; j++)
        if (a->c[j] != 0) return true;
    return false;
}

/* The values of a form with no loop coefficients, as an interval; false
 * when it has some.  An unbounded irregular form is (-inf, inf). */
static bool interval_of(const feat_form *a, int nloops, double *lo, double *hi) {
    if (!known(a)) {
        *lo = -INFINITY;
        *hi = INFINITY;
        return true;
    }
    if (moves(a, nloops)) return false;
    *lo = a->off + (a->ok ? 0 : a->rlo);
    *hi = a->off + (a->ok ? 0 : a->rhi);
    return true;
}

static feat_form form_of(walk *w, const sc_expr *e, const env *v);

enum { PICK_MIN, PICK_MAX, PICK_EITHER };

/* min/max/select of two forms: the non-constant one when the other is a
 * constant (a clamp), or the common coefficients.  Of an irregular form
 * and a constant or bounded one without loop coefficients: the bound of
 * the result (min(v, 52): at most 52). */
static feat_form lipschitz(feat_form a, feat_form b, int pick, int nloops) {
    bool take_min = pick != PICK_MAX;
    if (!a.ok || !b.ok) {
        /* a bounded form clamped by a constant keeps its form and bound */
        if (a.bounded && is_const_form(&b, nloops) && moves(&a, nloops)) {
            a.lipschitz = true;
            return a;
        }
        if (b.bounded && is_const_form(&a, nloops) && moves(&b, nloops)) {
            b.lipschitz = true;
            return b;
        }
        double alo, ahi, blo, bhi;
        if (!interval_of(&a, nloops, &alo, &ahi) || !interval_of(&b, nloops, &blo, &bhi)) return irregular();
        feat_form r = pick == PICK_MIN ? bounded(fmin(alo, blo), fmin(ahi, bhi))
                    : pick == PICK_MAX ? bounded(fmax(alo, blo), fmax(ahi, bhi))
                                       : bounded(fmin(alo, blo), fmax(ahi, bhi));
        r.lipschitz = true;
        return r;
    }
    feat_form r;
    if (is_const_form(&b, nloops) && !is_const_form(&a, nloops)) r = a;
    else if (is_const_form(&a, nloops) && !is_const_form(&b, nloops)) r = b;
    else if (feat_form_same_coefs(&a, &b, nloops)) {
        r = a;
        r.off = take_min ? (a.off < b.off ? a.off : b.off) : (a.off > b.off ? a.off : b.off);
    } else return irregular();
    r.lipschitz = true;
    return r;
}

static feat_form form_raw(walk *w, const sc_expr *e, const env *v) {
    int nl = w->out->nloops;
    switch (e->kind) {
    case E_CONST:
        return e->type == SC_F32 ? irregular() : constant((double)e->c.i);
    case E_VAR:
        for (int i = 0; i < v->n; i++)
            if (same_name(v->names[i], e->name)) return v->forms[i];
        return irregular();
    case E_RVAR: {
        const sc_rdom *rd = w->f->stages[w->st].rdom;
        if (rd == e->rdom)
            for (int j = 0; j < nl; j++)
                if (w->out->which[j] == -1 - e->dim) {
                    feat_form r = irregular();
                    r.ok = true;
                    r.c[j] = 1;
                    r.off = e->rdom->min[e->dim];
                    return r;
                }
        return irregular();
    }
    case E_CAST:
        return e->type == SC_F32 ? irregular() : form_of(w, e->args[0], v);
    case E_UNARY:
        return e->op == SC_NEG ? scale(form_of(w, e->args[0], v), -1, nl) : irregular();
    case E_BINARY: {
        if (e->type == SC_F32 || e->type == SC_BOOL) return irregular();
        feat_form a = form_of(w, e->args[0], v), b = form_of(w, e->args[1], v);
        switch (e->op) {
        case SC_ADD: return combine(a, b, 1, nl);
        case SC_SUB: return combine(a, b, -1, nl);
        case SC_MUL:
            if (is_const_form(&a, nl)) return scale(b, a.off, nl);
            if (is_const_form(&b, nl)) return scale(a, b.off, nl);
            return irregular();
        case SC_DIV:
            if (is_const_form(&b, nl) && b.off > 0) return scale(a, 1.0 / b.off, nl);
            return irregular();
        case SC_MIN: return lipschitz(a, b, PICK_MIN, nl);
        case SC_MAX: return lipschitz(a, b, PICK_MAX, nl);
        case SC_MOD:            /* Euclidean: in [0, c) */
            if (is_const_form(&b, nl) && b.off >= 1) return bounded(0, b.off - 1);
            return irregular();
        default: return irregular();
        }
    }
    case E_SELECT: {
        feat_form a = form_of(w, e->args[1], v), b = form_of(w, e->args[2], v);
        return lipschitz(a, b, PICK_EITHER, nl);
    }
    case E_CALL:
        if (is_inline(w, e->func)) {
            env inner = { .n = e->func->ndims };
            for (int i = 0; i < e->func->ndims; i++) {
                inner.names[i] = e->func->vars[i];
                inner.forms[i] = form_of(w, e->args[i], v);
            }
            return form_of(w, e->func->stages[0].value, &inner);
        }
        return irregular();
    default:
        return irregular();
    }
}

static uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* The tables take a hash's low bits, and the bits mixed in are mostly
 * doubles holding small integers, whose low bits are all zero: the high
 * bits are folded down, or the tables' chains grow with their size. */
static uint64_t finish(uint64_t h) {
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* h with f's coefficients over nloops loops and its offset mixed in (their
 * bits). */
static uint64_t mix_affine(uint64_t h, const feat_form *f, int nloops) {
    for (int j = 0; j <= nloops; j++) {
        double x = j < nloops ? f->c[j] : f->off;
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits);
        h = mix(h, bits);
    }
    return h;
}

/* The identity of variable form f for value_id: a regular one by its
 * coefficients and offset, an irregular one by its id; 0 when neither
 * tells the value (an approximation through a clamp, min or max, or an
 * irregular form of unknown value). */
static uint64_t form_identity(const feat_form *f, int nloops) {
    if (!f->ok) return f->id;
    if (f->lipschitz) return 0;
    return finish(mix_affine(mix(0x51ed270b27ull, (uint64_t)nloops), f, nloops)) | 1;
}

/* A hash of the value of e under v: its tree, each variable replaced by
 * the identity of its form (inline calls by their Func and arguments:
 * a Func is pure).  Equal ids mean equal values, so a gather written
 * twice at the same data-dependent coordinate (a lerp's operand appears
 * twice in its expansion, a tap is repeated) is one access, as the
 * generated code computes it once.  0 when a part is unknown or e is
 * larger than *budget nodes. */
static uint64_t value_id(const walk *w, const sc_expr *e, const env *v, int *budget) {
    if (--*budget < 0) return 0;
    uint64_t h;
    if (e->kind == E_VAR) {
        for (int i = 0; i < v->n; i++)
            if (same_name(v->names[i], e->name)) return form_identity(&v->forms[i], w->out->nloops);
        h = ir_expr_node_hash(e);
    } else {
        h = ir_expr_node_hash(e);
        for (int i = 0; i < e->nargs; i++) {
            uint64_t a = value_id(w, e->args[i], v, budget);
            if (!a) return 0;
            h = mix(h, a);
        }
    }
    return finish(h) | 1;
}

/* The form of e under v; an irregular one with the id of its value. */
static feat_form form_of(walk *w, const sc_expr *e, const env *v) {
    feat_form r = form_raw(w, e, v);
    if (!r.ok) {
        int budget = 512;
        r.id = value_id(w, e, v, &budget);
    }
    return r;
}

static uint64_t hash_call(const feat_call *c, int nloops) {
    uint64_t h = mix(0, (uint64_t)(uintptr_t)c->prod);
    for (int d = 0; d < c->ndims; d++) {
        const feat_form *f = &c->dim[d];
        h = mix(h, (uint64_t)f->ok);
        h = mix_affine(mix(h, f->ok ? 0 : f->id), f, nloops);
    }
    return finish(h);
}

static bool same_call(const feat_call *a, const feat_call *b, int nloops) {
    if (a->prod != b->prod || a->ndims != b->ndims) return false;
    for (int d = 0; d < a->ndims; d++) {
        const feat_form *x = &a->dim[d], *y = &b->dim[d];
        if (x->ok != y->ok) return false;
        if (!x->ok) {                 /* irregular: the same value, or never the same */
            if (!x->id || x->id != y->id) return false;
            continue;
        }
        if (x->off != y->off || !feat_form_same_coefs(x, y, nloops)) return false;
    }
    return true;
}

/* The slot of c (hash h) in ix over calls: its index + 1 if present,
 * else the empty slot where it goes (negated - 1). */
static int index_find(const call_index *ix, const feat_call *calls, const feat_call *c, uint64_t h, int nloops) {
    int mask = ix->cap - 1;
    for (int i = (int)(h & (uint64_t)mask);; i = (i + 1) & mask) {
        int k = ix->slot[i];
        if (!k) return -1 - i;
        if (same_call(&calls[k - 1], c, nloops)) return k;
    }
}

/* Room in ix for one more call than the n of calls; false when out of
 * memory. */
static bool index_reserve(call_index *ix, const feat_call *calls, int n, int nloops) {
    if (2 * (n + 1) < ix->cap) return true;
    int cap = ix->cap ? 2 * ix->cap : 64;
    int *t = calloc((size_t)cap, sizeof *t);
    if (!t) return false;
    free(ix->slot);
    ix->slot = t;
    ix->cap = cap;
    for (int k = 0; k < n; k++) {
        int slot = index_find(ix, calls, &calls[k], hash_call(&calls[k], nloops), nloops);
        if (slot < 0) ix->slot[-1 - slot] = k + 1;
    }
    return true;
}

/* Notes call k in the innermost recording (once). */
static void rec_touch(walk *w, rec *r, int k) {
    if (!r) return;
    if (2 * (r->n + 1) >= r->setcap) {
        int cap = r->setcap ? 2 * r->setcap : 32;
        int *set = calloc((size_t)cap, sizeof *set);
        if (!set) { w->oom = true; return; }
        for (int i = 0; i < r->n; i++) {
            int q = (int)(((unsigned)r->list[i] * 2654435761u) & (unsigned)(cap - 1));
            while (set[q]) q = (q + 1) & (cap - 1);
            set[q] = r->list[i] + 1;
        }
        free(r->set);
        r->set = set;
        r->setcap = cap;
    }
    int q = (int)(((unsigned)k * 2654435761u) & (unsigned)(r->setcap - 1));
    for (; r->set[q]; q = (q + 1) & (r->setcap - 1))
        if (r->set[q] == k + 1) return;
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        int *l = realloc(r->list, sizeof *l * (size_t)cap);
        if (!l) { w->oom = true; return; }
        r->list = l;
        r->cap = cap;
    }
    r->set[q] = k + 1;
    r->list[r->n++] = k;
}

/* Records a call, once per distinct form (a repeated access is one load:
 * inlining repeats taps that code generation computes once), an
 * irregular coordinate told apart by the id of its value. */
static void push_call(walk *w, const sc_expr *e, const env *v) {
    feat_stage_access *o = w->out;
    if (!index_reserve(&w->calls_ix, o->calls, o->n, o->nloops)) { w->oom = true; return; }
    feat_call c;
    memset(&c, 0, sizeof c);
    c.prod = e->func;
    c.ndims = e->nargs;
    for (int d = 0; d < e->nargs && d < SC_MAX_DIMS; d++) c.dim[d] = form_of(w, e->args[d], v);
    uint64_t h = hash_call(&c, o->nloops);
    int slot = index_find(&w->calls_ix, o->calls, &c, h, o->nloops);
    if (slot > 0) {
        rec_touch(w, w->rec, slot - 1);
        return;
    }
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 8;
        feat_call *c = realloc(o->calls, (size_t)cap * sizeof *c);
        if (!c) { w->oom = true; return; }
        o->calls = c;
        o->cap = cap;
    }
    w->calls_ix.slot[-1 - slot] = o->n + 1;
    rec_touch(w, w->rec, o->n);
    for (int d = 0; d < c.ndims && d < SC_MAX_DIMS; d++)
        if (!c.dim[d].ok)
            for (rec *r = w->rec; r; r = r->up) r->irregular = true;
    o->calls[o->n++] = c;
}

/* Counts an inline call of g with argument forms inner: distinct unless
 * a call of g with the same forms was made before in this stage (one
 * computation: the compiler evaluates a repeated pure expression once).
 * A call with an irregular argument is distinct every time, and no
 * expansion around it is memoized, so that the count is the same with and
 * without the memo (its own expansion is not looked up there either: its
 * nested calls are counted again).  A memo hit replays an expansion whose
 * inline calls were all counted when it was first made.  Whether the call
 * is irregular. */
static bool count_inline(walk *w, const sc_func *g, const env *inner) {
    int nl = w->out->nloops;
    feat_call c;
    memset(&c, 0, sizeof c);
    c.prod = g;
    c.ndims = inner->n < SC_MAX_DIMS ? inner->n : SC_MAX_DIMS;
    bool irr = false;
    for (int d = 0; d < c.ndims; d++) {
        c.dim[d] = inner->forms[d];
        irr |= !c.dim[d].ok;
    }
    if (irr) {
        for (rec *r = w->rec; r; r = r->up) r->irregular = true;
        w->fdistinct[g->id]++;
        return true;
    }
    if (!index_reserve(&w->inline_ix, w->icalls, w->ni, nl)) { w->oom = true; return false; }
    int slot = index_find(&w->inline_ix, w->icalls, &c, hash_call(&c, nl), nl);
    if (slot > 0) return false;
    if (w->ni == w->icap) {
        int cap = w->icap ? 2 * w->icap : 16;
        feat_call *n = realloc(w->icalls, sizeof *n * (size_t)cap);
        if (!n) { w->oom = true; return false; }
        w->icalls = n;
        w->icap = cap;
    }
    w->icalls[w->ni++] = c;
    w->inline_ix.slot[-1 - slot] = w->ni;
    w->fdistinct[g->id]++;
    return false;
}

static int visit(walk *w, const sc_expr *e, const env *v);

/* visit of g's value under inner, memoized (the comment at memo_entry). */
static int visit_inline(walk *w, const sc_func *g, const env *inner) {
    if (!w->memo) return visit(w, g->stages[0].value, inner);
    int nl = w->out->nloops;
    double key[1 + SC_MAX_DIMS * (FEAT_MAX_LOOPS + 6)];
    int m = 0;
    key[m++] = g->id;
    for (int i = 0; i < inner->n; i++) {
        const feat_form *f = &inner->forms[i];
        key[m++] = f->ok + 2.0 * f->lipschitz + 4.0 * f->bounded;
        key[m++] = f->off;
        key[m++] = f->rlo;
        key[m++] = f->rhi;
        for (int j = 0; j < nl; j++) key[m++] = f->c[j];
        key[m++] = inner->strahler[i];
    }
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < m; i++) {
        uint64_t bits;
        memcpy(&bits, &key[i], sizeof bits);
        h = mix(h, bits);
    }
    h = finish(h);
    if (!w->mtab && !(w->mtab = calloc(MEMO_TABLE, sizeof *w->mtab))) {
        w->oom = true;
        return 1;
    }
    memo_entry **b = &w->mtab[h % MEMO_TABLE];
    for (memo_entry *e = *b; e; e = e->next)
        if (e->h == h && e->nkey == m && !memcmp(e->key, key, sizeof(double) * (size_t)m)) {
            for (int i = 0; i < e->n; i++) rec_touch(w, w->rec, e->calls[i]);
            w->out->inlined_calls_all += e->inlined;
            for (int i = 0; i < e->nf; i++) w->fcalls[e->fid[i]] += e->fn[i];
            return e->strahler;
        }
    rec r = { w->rec, 0, 0, NULL, NULL, 0, false };
    w->rec = &r;
    int64_t inl0 = w->out->inlined_calls_all;
    int nfuncs = (int)w->p->funcs.n;
    int64_t *f0 = malloc(sizeof *f0 * (size_t)nfuncs);
    if (!f0) {
        w->oom = true;
        return 1;
    }
    memcpy(f0, w->fcalls, sizeof *f0 * (size_t)nfuncs);
    int st = visit(w, g->stages[0].value, inner);
    w->rec = r.up;
    for (int i = 0; i < r.n; i++) rec_touch(w, w->rec, r.list[i]);
    free(r.set);
    if (r.irregular) {
        free(r.list);
        free(f0);
        return st;
    }
    int nf = 0;
    for (int i = 0; i < nfuncs; i++) nf += w->fcalls[i] != f0[i];
    memo_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->key = malloc(sizeof(double) * (size_t)m)) || !(e->fid = malloc(sizeof *e->fid * (size_t)(nf + 1))) ||
        !(e->fn = malloc(sizeof *e->fn * (size_t)(nf + 1)))) {
        if (e) {
            free(e->key);
            free(e->fid);
        }
        free(e);
        free(r.list);
        free(f0);
        w->oom = true;
        return st;
    }
    for (int i = 0; i < nfuncs; i++)
        if (w->fcalls[i] != f0[i]) {
            e->fid[e->nf] = i;
            e->fn[e->nf++] = w->fcalls[i] - f0[i];
        }
    free(f0);
    memcpy(e->key, key, sizeof(double) * (size_t)m);
    e->h = h;
    e->nkey = m;
    e->strahler = st;
    e->inlined = w->out->inlined_calls_all - inl0;
    e->n = r.n;
    e->calls = r.list;
    e->next = *b;
    *b = e;
    return st;
}

/* Visits e: records calls, counts inline calls, returns the Strahler
 * number. */
static int visit(walk *w, const sc_expr *e, const env *v) {
    if (w->oom) return 1;
    if (e->kind == E_VAR) {
        for (int i = 0; i < v->n; i++)
            if (same_name(v->names[i], e->name)) return v->strahler[i];
        return 1;
    }
    int best = 0, ties = 0;
    int sarg[SC_MAX_DIMS];
    for (int i = 0; i < e->nargs; i++) {
        int s = visit(w, e->args[i], v);
        if (i < SC_MAX_DIMS) sarg[i] = s;
        if (s > best) { best = s; ties = 1; }
        else if (s == best) ties++;
    }
    if (e->kind == E_CALL && is_inline(w, e->func)) {
        w->out->inlined_calls_all++;
        w->fcalls[e->func->id]++;
        env inner = { .n = e->func->ndims };
        for (int i = 0; i < e->func->ndims; i++) {
            inner.names[i] = e->func->vars[i];
            inner.forms[i] = form_of(w, e->args[i], v);
            inner.strahler[i] = sarg[i];
        }
        if (count_inline(w, e->func, &inner)) return visit(w, e->func->stages[0].value, &inner);
        return visit_inline(w, e->func, &inner);
    }
    if (e->kind == E_CALL) push_call(w, e, v);
    if (e->nargs == 0) return 1;
    return ties >= 2 ? best + 1 : best;
}

int feat_stage_accesses_by(const sc_pipeline *p, const sched_state *s, const sc_func *f, int st, bool memo,
                           feat_stage_access *out) {
    memset(out, 0, sizeof *out);
    out->nloops = ir_stage_loops(f, st, out->which);
    walk w = { .p = p, .s = s, .f = f, .st = st, .out = out, .memo = memo };
    w.fcalls = calloc((size_t)p->funcs.n + 1, sizeof *w.fcalls);
    w.fdistinct = calloc((size_t)p->funcs.n + 1, sizeof *w.fdistinct);
    if (!w.fcalls || !w.fdistinct) {
        free(w.fcalls);
        free(w.fdistinct);
        return -1;
    }
    env v = { 0 };
    for (int j = 0; j < out->nloops; j++) {
        if (out->which[j] < 0) continue;
        v.names[v.n] = f->vars[out->which[j]];
        v.forms[v.n] = irregular();
        v.forms[v.n].ok = true;
        v.forms[v.n].c[j] = 1;
        v.strahler[v.n] = 1;
        v.n++;
    }
    const ir_stage *sg = &f->stages[st];
    out->strahler = visit(&w, sg->value, &v);
    out->nstore = sg->nargs;
    for (int d = 0; d < sg->nargs && d < SC_MAX_DIMS; d++) {
        out->store[d] = form_of(&w, sg->args[d], &v);
        if (st > 0) visit(&w, sg->args[d], &v);   /* a scatter's coordinates may load */
    }
    /* the producers, first called first (a stage calls a few producers
     * through up to hundreds of calls) */
    out->prods = malloc(sizeof *out->prods * (size_t)(out->n + 1));
    out->prod_of = malloc(sizeof *out->prod_of * (size_t)(out->n + 1));
    if (!out->prods || !out->prod_of) w.oom = true;
    for (int i = 0; !w.oom && i < out->n; i++) {
        int k = out->nprods - 1;
        while (k >= 0 && out->prods[k] != out->calls[i].prod) k--;
        if (k < 0) out->prods[k = out->nprods++] = out->calls[i].prod;
        out->prod_of[i] = k;
    }
    /* the inline Funcs expanded, in order of first call: the walk visits
     * a call's arguments before it, so order by the Funcs' ids is as
     * good a canonical order (and the same for the same expansion) */
    int ninl = 0;
    for (int i = 0; i < p->funcs.n; i++) ninl += w.fcalls[i] != 0;
    out->inl = malloc(sizeof *out->inl * (size_t)(ninl + 1));
    out->inl_calls = malloc(sizeof *out->inl_calls * (size_t)(ninl + 1));
    if (!out->inl || !out->inl_calls) w.oom = true;
    for (int i = 0; !w.oom && i < p->funcs.n; i++)
        if (w.fcalls[i]) {
            out->inl[out->ninl] = p->funcs.items[i];
            out->inl_calls[out->ninl++] = w.fdistinct[i];
            out->inlined_calls += w.fdistinct[i];
        }
    free(w.fcalls);
    free(w.fdistinct);
    free(w.icalls);
    free(w.inline_ix.slot);
    free(w.calls_ix.slot);
    for (int i = 0; w.mtab && i < MEMO_TABLE; i++)
        for (memo_entry *e = w.mtab[i], *next; e; e = next) {
            next = e->next;
            free(e->key);
            free(e->fid);
            free(e->fn);
            free(e->calls);
            free(e);
        }
    free(w.mtab);
    if (w.oom) {
        feat_stage_access_free(out);
        return -1;
    }
    return 0;
}

int feat_stage_accesses(const sc_pipeline *p, const sched_state *s, const sc_func *f, int st,
                        feat_stage_access *out) {
    return feat_stage_accesses_by(p, s, f, st, true, out);
}

void feat_stage_access_free(feat_stage_access *a) {
    free(a->calls);
    free(a->prods);
    free(a->prod_of);
    free(a->inl);
    free(a->inl_calls);
    a->calls = NULL;
    a->prods = NULL;
    a->prod_of = NULL;
    a->inl = NULL;
    a->inl_calls = NULL;
    a->n = a->cap = a->nprods = a->ninl = 0;
}
