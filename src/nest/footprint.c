/*
 * footprint.c - the footprint algebra shared by lowering and the loop-nest
 * model (footprint.h).
 */
#include <stdio.h>
#include <string.h>
#include "base.h"
#include "footprint.h"

/* ---- expression nodes (lowering mode) ------------------------------------ */

static sc_expr *node(ir_arena *a, ir_kind kind, sc_type t, int nargs) {
    sc_expr *e = ir_alloc(a, sizeof *e);
    e->kind = kind;
    e->type = t;
    e->nargs = nargs;
    if (nargs) e->args = ir_alloc(a, sizeof(sc_expr *) * (size_t)nargs);
    return e;
}

sc_expr *fp_int(ir_arena *arena, int64_t v) {
    sc_expr *e = node(arena, E_CONST, SC_I32, 0);
    e->c.i = v;
    return e;
}

sc_expr *fp_bin(ir_arena *arena, sc_binop op, sc_expr *a, sc_expr *b) {
    if (op == SC_ADD && b->kind == E_CONST && b->c.i == 0) return a;
    if (op == SC_ADD && a->kind == E_CONST && a->c.i == 0) return b;
    if (op == SC_MUL && b->kind == E_CONST && b->c.i == 1) return a;
    if (op == SC_SUB && b->kind == E_CONST && b->c.i == 0) return a;
    if (a->kind == E_CONST && b->kind == E_CONST && a->type == SC_I32 && b->type == SC_I32) {
        int64_t x = a->c.i, y = b->c.i;
        switch (op) {
        case SC_ADD: return fp_int(arena, x + y);
        case SC_SUB: return fp_int(arena, x - y);
        case SC_MUL: return fp_int(arena, x * y);
        case SC_MIN: return fp_int(arena, x < y ? x : y);
        case SC_MAX: return fp_int(arena, x > y ? x : y);
        default: break;
        }
    }
    sc_expr *e = node(arena, E_BINARY, op >= SC_EQ && op <= SC_OR ? SC_BOOL : SC_I32, 2);
    e->op = op;
    e->args[0] = a;
    e->args[1] = b;
    return e;
}

/* ---- symbol hashes ---------------------------------------------------------- */

static uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h ? h : 1;
}

uint64_t fp_hash_leaf(uint64_t key) { return mix(key * 0x9e3779b97f4a7c15ULL + 0x51ed27); }

static uint64_t hash_const(int64_t v) { return mix((uint64_t)v ^ 0x6a09e667f3bcc908ULL); }

/* The hash of the node op(a, b) built by fp_bin on symbols a, b (a
 * symbol is never a constant node, so only x * 1 folds). */
static uint64_t hash_bin(int op, uint64_t a, uint64_t b) {
    return mix(a * 31 + mix(b + (uint64_t)op * 0x100000001b3ULL));
}

/* ---- spans --------------------------------------------------------------- */

static fp_span none(void) { fp_span r = { false, false, NULL, 0, 0, 0 }; return r; }

static fp_span konst(int64_t lo, int64_t hi) { fp_span r = { true, true, NULL, 0, lo, hi }; return r; }

/* op(a, b) on spans: the rules of the header comment. */
static fp_span combine(ir_arena *arena, int op, fp_span a, fp_span b) {
    fp_span r = none();
    if (!a.ok || !b.ok) return r;
    bool ca = !a.h && a.lo == a.hi, cb = !b.h && b.lo == b.hi;
    r.ok = true;
    switch (op) {
    case SC_ADD:
        r.h = !a.h ? b.h : !b.h ? a.h : hash_bin(SC_ADD, a.h, b.h);
        if (arena) r.sym = !a.sym ? b.sym : !b.sym ? a.sym : fp_bin(arena, SC_ADD, a.sym, b.sym);
        r.affine = a.affine && b.affine;
        r.lo = a.lo + b.lo;
        r.hi = a.hi + b.hi;
        return r;
    case SC_SUB:
        r.h = !b.h ? a.h : hash_bin(SC_SUB, a.h ? a.h : hash_const(0), b.h);
        if (arena) r.sym = !b.sym ? a.sym : fp_bin(arena, SC_SUB, a.sym ? a.sym : fp_int(arena, 0), b.sym);
        r.affine = a.affine && b.affine;
        r.lo = a.lo - b.hi;
        r.hi = a.hi - b.lo;
        return r;
    case SC_MUL: {
        if (!ca && cb) { fp_span t = a; a = b; b = t; bool tc = ca; ca = cb; cb = tc; }
        if (!ca) return none();
        int64_t k = a.lo;
        r.h = !b.h ? 0 : k == 1 ? b.h : hash_bin(SC_MUL, b.h, hash_const(k));
        if (arena && b.sym) r.sym = fp_bin(arena, SC_MUL, b.sym, fp_int(arena, k));
        r.affine = b.affine;
        r.lo = k >= 0 ? k * b.lo : k * b.hi;
        r.hi = k >= 0 ? k * b.hi : k * b.lo;
        return r;
    }
    case SC_DIV: {
        if (!cb || b.lo <= 0) return none();
        int64_t k = b.lo;
        if (!a.h) return konst(base_floor_div(a.lo, k), base_floor_div(a.hi, k));
        r.h = hash_bin(SC_DIV, a.h, hash_const(k));
        if (arena) r.sym = fp_bin(arena, SC_DIV, a.sym, fp_int(arena, k));
        r.affine = false;
        r.lo = base_floor_div(a.lo, k);
        r.hi = base_floor_div(a.hi, k) + 1;
        return r;
    }
    case SC_MIN: case SC_MAX: {
        /* 1-Lipschitz in the symbolic side when the other is constant */
        bool mn = op == SC_MIN;
        if (a.h && b.h) return none();
        if (!a.h && !b.h)
            return konst(mn ? (a.lo < b.lo ? a.lo : b.lo) : (a.lo > b.lo ? a.lo : b.lo),
                         mn ? (a.hi < b.hi ? a.hi : b.hi) : (a.hi > b.hi ? a.hi : b.hi));
        fp_span s = a.h ? a : b, k = a.h ? b : a;
        if (k.lo != k.hi) return none();
        r.h = hash_bin(op, s.h, hash_const(k.lo));
        if (arena) r.sym = fp_bin(arena, op, s.sym, fp_int(arena, k.lo));
        r.affine = false;
        r.lo = s.lo < 0 ? s.lo : 0;
        r.hi = s.hi > 0 ? s.hi : 0;
        return r;
    }
    default:
        return none();
    }
}

static fp_span binary(ir_arena *arena, const sc_expr *e, const fp_box *box) {
    fp_span a = fp_arg(arena, e->args[0], box), b = fp_arg(arena, e->args[1], box);
    return combine(arena, e->op, a, b);
}

fp_span fp_arg(ir_arena *arena, const sc_expr *e, const fp_box *box) {
    switch (e->kind) {
    case E_CONST:
        if (e->type == SC_F32) return none();
        return konst(e->c.i, e->c.i);
    case E_VAR:
        for (int i = 0; i < box->n; i++)
            if (box->names[i] && !strcmp(box->names[i], e->name)) {
                fp_span r = { true, true, box->sym[i], box->h[i], box->lo[i], box->hi[i] };
                return r;
            }
        return none();
    case E_RVAR:
        return konst(e->rdom->min[e->dim], e->rdom->min[e->dim] + e->rdom->extent[e->dim] - 1);
    case E_CAST: {
        sc_type from = e->args[0]->type;
        if (from == SC_F32 || from == SC_U32 || from == SC_BOOL) return none();
        return fp_arg(arena, e->args[0], box);
    }
    case E_BINARY:
        return binary(arena, e, box);
    default:
        return none();
    }
}

fp_span fp_fallback(const bounds_result *b, const sc_expr *e, const fp_box *box) {
    const sc_func *f = box->f;
    const bounds_func *bf = &b->funcs[f->id];
    const char *vars[SC_MAX_DIMS];
    bounds_interval iv[SC_MAX_DIMS];
    for (int d = 0; d < f->ndims; d++) {
        vars[d] = f->vars[d];
        iv[d].lo = (double)bf->min[d];
        iv[d].hi = (double)(bf->min[d] + bf->extent[d] - 1);
    }
    bool ok = true;
    bounds_interval r = bounds_of_expr_in(b, e, f->ndims, vars, iv, &ok);
    if (!ok) return none();
    return konst((int64_t)r.lo, (int64_t)r.hi);
}

int fp_union(ir_arena *arena, const bounds_result *b, const sc_func *prod, int n,
             const sc_expr *const *calls, const fp_box *const *boxes, fp_span *dims,
             const fp_hooks *hooks, char *err, size_t errlen) {
    if (n <= 0) {
        snprintf(err, errlen, "nothing calls %s where it is computed", prod->name);
        return -1;
    }
    for (int d = 0; d < prod->ndims; d++) {
        fp_span u = none();
        bool same = true;
        for (int i = 0; i < n && same; i++) {
            fp_span s = hooks ? hooks->arg(hooks->user, i, d) : fp_arg(arena, calls[i]->args[d], boxes[i]);
            if (!s.ok || (i > 0 && u.h != s.h)) { same = false; break; }
            if (i == 0) u = s;
            if (s.lo < u.lo) u.lo = s.lo;
            if (s.hi > u.hi) u.hi = s.hi;
            u.affine &= s.affine;
        }
        if (!same) {
            for (int i = 0; i < n; i++) {
                fp_span s = hooks ? hooks->fallback(hooks->user, i, d) : fp_fallback(b, calls[i]->args[d], boxes[i]);
                if (!s.ok) {
                    snprintf(err, errlen, "cannot bound a coordinate of %s in %s", prod->name, boxes[i]->f->name);
                    return -1;
                }
                if (i == 0) u = s;
                if (s.lo < u.lo) u.lo = s.lo;
                if (s.hi > u.hi) u.hi = s.hi;
            }
        }
        dims[d] = u;
    }
    return 0;
}

bool fp_affine_union(ir_arena *arena, const sc_func *prod, int n, const sc_expr *const *calls,
                     const fp_box *box, fp_span *dims, const fp_hooks *hooks) {
    if (n <= 0) return false;
    for (int d = 0; d < prod->ndims; d++)
        for (int i = 0; i < n; i++) {
            fp_span sp = hooks ? hooks->arg(hooks->user, i, d) : fp_arg(arena, calls[i]->args[d], box);
            if (!sp.ok || (sp.h && !sp.affine) || (i > 0 && dims[d].h != sp.h)) return false;
            if (i == 0) dims[d] = sp;
            if (sp.lo < dims[d].lo) dims[d].lo = sp.lo;
            if (sp.hi > dims[d].hi) dims[d].hi = sp.hi;
        }
    return true;
}

sc_expr *fp_clip_origin(ir_arena *arena, const bounds_result *b, const sc_func *prod, int d,
                        const fp_span *s, int64_t ext, int64_t *value) {
    int64_t rmin = b->funcs[prod->id].min[d], rmax = rmin + b->funcs[prod->id].extent[d] - 1;
    if (!arena) {
        int64_t v = s->lo < rmax - ext + 1 ? s->lo : rmax - ext + 1;
        if (value) *value = v > rmin ? v : rmin;
        return NULL;
    }
    sc_expr *lo = s->sym ? fp_bin(arena, SC_ADD, s->sym, fp_int(arena, s->lo)) : fp_int(arena, s->lo);
    return fp_bin(arena, SC_MAX, fp_bin(arena, SC_MIN, lo, fp_int(arena, rmax - ext + 1)), fp_int(arena, rmin));
}

/* ---- compiled coordinates ---------------------------------------------------- */

enum { P_FAIL, P_CONST, P_VAR, P_BIN };

/* Appends e's code; returns the stack depth it needs, or -1 when fp_arg
 * would give no range (the program is then a single P_FAIL). */
static int emit(ir_arena *a, const sc_expr *e, int nnames, const char *const *names, fp_instr *code, int *n,
                int cap) {
    if (*n >= cap) return -1;
    switch (e->kind) {
    case E_CONST:
        if (e->type == SC_F32) return -1;
        code[(*n)++] = (fp_instr){ P_CONST, 0, e->c.i, e->c.i };
        return 1;
    case E_VAR:
        for (int i = 0; i < nnames; i++)
            if (names[i] && !strcmp(names[i], e->name)) {
                code[(*n)++] = (fp_instr){ P_VAR, 0, i, 0 };
                return 1;
            }
        return -1;
    case E_RVAR:
        code[(*n)++] = (fp_instr){ P_CONST, 0, e->rdom->min[e->dim], e->rdom->min[e->dim] + e->rdom->extent[e->dim] - 1 };
        return 1;
    case E_CAST: {
        sc_type from = e->args[0]->type;
        if (from == SC_F32 || from == SC_U32 || from == SC_BOOL) return -1;
        return emit(a, e->args[0], nnames, names, code, n, cap);
    }
    case E_BINARY: {
        int da = emit(a, e->args[0], nnames, names, code, n, cap);
        if (da < 0) return -1;
        int db = emit(a, e->args[1], nnames, names, code, n, cap);
        if (db < 0 || *n >= cap) return -1;
        code[(*n)++] = (fp_instr){ P_BIN, e->op, 0, 0 };
        return da > db + 1 ? da : db + 1;
    }
    default:
        return -1;
    }
}

fp_prog fp_compile(ir_arena *arena, const sc_expr *e, int nnames, const char *const *names) {
    fp_instr code[FP_PROG_MAX];
    int n = 0;
    int depth = emit(arena, e, nnames, names, code, &n, FP_PROG_MAX);
    fp_prog p = { 0, NULL };
    if (depth < 0 || depth > FP_STACK_MAX) {
        /* too long or too deep to run: fp_arg instead (n < 0) */
        if (depth < 0 && n < FP_PROG_MAX) { p.n = 1; p.code = ir_alloc(arena, sizeof(fp_instr)); p.code[0].kind = P_FAIL; }
        else p.n = -1;
        return p;
    }
    p.n = n;
    p.code = ir_alloc(arena, sizeof(fp_instr) * (size_t)n);
    memcpy(p.code, code, sizeof(fp_instr) * (size_t)n);
    return p;
}

fp_span fp_run(const fp_prog *p, const sc_expr *e, const fp_box *box) {
    if (p->n < 0) return fp_arg(NULL, e, box);
    fp_span st[FP_STACK_MAX + 1];
    int top = 0;
    for (int i = 0; i < p->n; i++) {
        const fp_instr *c = &p->code[i];
        switch (c->kind) {
        case P_FAIL: return none();
        case P_CONST: st[top++] = konst(c->a, c->b); break;
        case P_VAR: {
            fp_span r = { true, true, NULL, box->h[c->a], box->lo[c->a], box->hi[c->a] };
            st[top++] = r;
            break;
        }
        default:
            top--;
            st[top - 1] = combine(NULL, c->op, st[top - 1], st[top]);
            break;
        }
    }
    return st[0];
}

bool fp_ieval(const sc_expr *e, fp_var_fn var, void *user, int64_t *out) {
    switch (e->kind) {
    case E_CONST:
        if (e->type == SC_F32) return false;
        *out = e->c.i;
        return true;
    case E_VAR:
        return var(user, e, out);
    case E_BINARY: {
        int64_t a, b;
        if (!fp_ieval(e->args[0], var, user, &a) || !fp_ieval(e->args[1], var, user, &b)) return false;
        switch (e->op) {
        case SC_ADD: *out = a + b; return true;
        case SC_SUB: *out = a - b; return true;
        case SC_MUL: *out = a * b; return true;
        case SC_MIN: *out = a < b ? a : b; return true;
        case SC_MAX: *out = a > b ? a : b; return true;
        case SC_DIV: case SC_MOD: {
            if (b == 0) { *out = 0; return true; }
            int64_t q = a / b, r = a % b;
            if (r != 0 && ((r < 0) != (b < 0))) { q -= 1; r += b; }
            if (e->op == SC_MOD && r < 0) r += b < 0 ? -b : b;
            *out = e->op == SC_DIV ? q : r;
            return true;
        }
        default: return false;
        }
    }
    default:
        return false;
    }
}

bool fp_same_union(ir_arena *arena, const bounds_result *b, const sc_func *prod, int d, int nb,
                   const fp_span *sp, int stride, fp_span *u, sc_expr **lo, sc_expr **hi, sc_expr **least) {
    *u = sp[0];
    bool same = true;
    for (int i = 1; i < nb; i++) {
        const fp_span *v = &sp[i * stride];
        if (v->h != u->h) same = false;
        if (v->lo < u->lo) u->lo = v->lo;
        if (v->hi > u->hi) u->hi = v->hi;
    }
    if (same) return true;
    const bounds_func *pb = &b->funcs[prod->id];
    int64_t rmin = pb->min[d], rmax = pb->min[d] + pb->extent[d] - 1;
    *least = NULL;
    for (int i = 0; i < nb; i++) {
        const fp_span *v = &sp[i * stride];
        /* clamped into prod's region: no consumer needs a point outside
         * it (tiles past their region are guarded) */
        lo[i] = v->sym ? fp_bin(arena, SC_ADD, v->sym, fp_int(arena, v->lo)) : fp_int(arena, v->lo);
        hi[i] = v->sym ? fp_bin(arena, SC_ADD, v->sym, fp_int(arena, v->hi)) : fp_int(arena, v->hi);
        lo[i] = fp_bin(arena, SC_MAX, fp_bin(arena, SC_MIN, lo[i], fp_int(arena, rmax)), fp_int(arena, rmin));
        hi[i] = fp_bin(arena, SC_MAX, fp_bin(arena, SC_MIN, hi[i], fp_int(arena, rmax)), fp_int(arena, rmin));
        *least = *least ? fp_bin(arena, SC_MIN, *least, lo[i]) : lo[i];
    }
    return false;
}

fp_span fp_hull_span(const bounds_result *b, const sc_func *prod, int d, sc_expr *least, int64_t e) {
    const bounds_func *pb = &b->funcs[prod->id];
    if (e < 1) return (fp_span){ true, false, NULL, 0, pb->min[d], pb->min[d] + pb->extent[d] - 1 };
    return (fp_span){ true, false, least, 1, 0, e - 1 };
}
