/*
 * pipeline.c - finishing a pipeline (structural checks, topological order,
 * bounds check) and running it through the reference evaluator.
 */
#include <stdlib.h>
#include <string.h>
#include "bounds.h"
#include "eval.h"
#include "ir.h"

typedef struct { sc_func **callees; int n, cap; } callee_list;

static void add_callee(const sc_expr *e, void *user) {
    callee_list *l = user;
    if (e->kind != E_CALL) return;
    for (int i = 0; i < l->n; i++) if (l->callees[i] == e->func) return;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->callees = realloc(l->callees, sizeof(sc_func *) * (size_t)l->cap);
        if (!l->callees) abort();
    }
    l->callees[l->n++] = e->func;
}

/* The Funcs f calls in any stage, itself excluded.  Caller frees. */
static callee_list callees_of(const sc_func *f) {
    callee_list l = {0};
    for (int s = 0; s < f->nstages; s++) {
        const ir_stage *st = &f->stages[s];
        for (int a = 0; a < st->nargs; a++) ir_visit(st->args[a], add_callee, &l);
        ir_visit(st->value, add_callee, &l);
    }
    for (int i = 0; i < l.n; i++)
        if (l.callees[i] == f) { l.callees[i] = l.callees[--l.n]; break; }
    return l;
}

enum { WHITE, GREY, BLACK };

/* Depth-first post-order: producers before consumers.  A grey node met
 * again closes a cycle, which only update definitions can create. */
static bool visit(sc_pipeline *p, sc_func *f, int *color, sc_func **path, int depth) {
    if (color[f->id] == BLACK) return true;
    path[depth] = f;
    if (color[f->id] == GREY) {
        char msg[900] = "";
        int start = 0;
        for (int i = 0; i < depth; i++) if (path[i] == f) start = i;
        for (int i = start; i <= depth; i++) {
            if (strlen(msg) + strlen(path[i]->name) + 8 >= sizeof msg) break;
            strcat(msg, path[i]->name);
            if (i < depth) strcat(msg, " -> ");
        }
        sc_pipeline_set_loc(p, f->loc.file, f->loc.line, f->loc.col);
        sc_error(p, "cycle between Funcs: %s (a Func may refer to itself only in its own update definitions)", msg);
        return false;
    }
    color[f->id] = GREY;
    callee_list l = callees_of(f);
    bool ok = true;
    for (int i = 0; i < l.n && ok; i++) ok = visit(p, l.callees[i], color, path, depth + 1);
    free(l.callees);
    color[f->id] = BLACK;
    if (ok) ir_vec_push(p->arena, &p->order, f);
    return ok;
}

int sc_pipeline_finalize(sc_pipeline *p) {
    if (p->finalized) return sc_error_count(p);
    if (sc_error_count(p)) return sc_error_count(p);
    for (int i = 0; i < p->funcs.n; i++) {
        sc_func *f = p->funcs.items[i];
        if (f->kind == FUNC_DEFINED && f->nstages == 0) {
            sc_pipeline_set_loc(p, f->loc.file, f->loc.line, f->loc.col);
            sc_error(p, "%s is declared but never defined", f->name);
        }
    }
    if (p->outputs.n == 0) {
        sc_pipeline_set_loc(p, p->loc.file, 0, 0);
        sc_error(p, "the pipeline has no output (declare one with: output NAME(sizes);)");
    }
    if (sc_error_count(p)) return sc_error_count(p);
    int *color = calloc((size_t)p->funcs.n, sizeof(int));
    sc_func **path = calloc((size_t)p->funcs.n + 1, sizeof(sc_func *));
    if (!color || !path) abort();
    p->order.n = 0;
    for (int i = 0; i < p->funcs.n; i++)
        if (!visit(p, p->funcs.items[i], color, path, 0)) break;
    free(color);
    free(path);
    if (sc_error_count(p)) return sc_error_count(p);
    for (int i = 0; i < p->order.n; i++) ir_order_at(p, i)->order = i;
    bounds_result *b = bounds_infer(p);
    if (!b) return sc_error_count(p) ? sc_error_count(p) : 1;
    bounds_free(b);
    p->finalized = true;
    return 0;
}

sc_buffer *sc_input_random(const sc_pipeline *p, int i, uint64_t seed) {
    if (i < 0 || i >= p->inputs.n) return NULL;
    const sc_func *f = p->inputs.items[i];
    int mins[SC_MAX_DIMS] = {0};
    sc_buffer *b = sc_buffer_new(f->type, f->ndims, mins, f->extent);
    /* Each input gets its own stream, so adding an input does not change
     * the others' data. */
    if (b) sc_buffer_fill_random(b, seed * 1000003u + (uint64_t)i);
    return b;
}

int sc_evaluate(sc_pipeline *p, sc_buffer **inputs, uint64_t seed, sc_buffer **outputs) {
    if (!p->finalized && sc_pipeline_finalize(p) != 0) return -1;
    bounds_result *b = bounds_infer(p);
    if (!b) return -1;
    int n = p->inputs.n;
    sc_buffer **in = calloc((size_t)(n ? n : 1), sizeof(sc_buffer *));
    bool *made = calloc((size_t)(n ? n : 1), sizeof(bool));
    if (!in || !made) abort();
    int rc = 0;
    for (int i = 0; i < n; i++) {
        in[i] = inputs ? inputs[i] : NULL;
        if (in[i]) continue;
        in[i] = sc_input_random(p, i, seed);
        if (!in[i]) {
            sc_error(p, "cannot allocate input %s", ((const sc_func *)p->inputs.items[i])->name);
            rc = -1;
            break;
        }
        made[i] = true;
    }
    if (rc == 0) rc = eval_pipeline(p, b, in, outputs);
    for (int i = 0; i < n; i++) if (made[i]) sc_buffer_free(in[i]);
    free(in);
    free(made);
    bounds_free(b);
    return rc;
}
