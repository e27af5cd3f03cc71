/*
 * cg_changes.c - what changed since an older code generation's code for a
 * schedule (cg_code_changed_since, codegen.h): each generation that made
 * some schedules' code run differently says here how to tell them, from
 * the pipeline, the loop-nest model or the code this build prints, so
 * that training leaves out (or groups apart) the samples that timed the
 * older code.
 */
#include <stdlib.h>

#include "base.h"
#include "cg_backend.h"
#include "nest_query.h"

/* Whether prog's OpenCL code for a CPU launches some kernel's interior
 * apart, of the kernels that probe prints. */
static bool opencl_splits(const lower_program *prog, split_probe probe)
{
    bool candidate = false, narrow;
    for (int i = 0; i < prog->nkernels && !candidate; i++)
        candidate = prog->kernels[i]->nbases > 0 && cg_split_worthy(prog->kernels[i], &narrow) &&
                    (probe == PROBE_SPLITS || narrow);
    if (!prog->cpu || !candidate)
        return false;
    cg_launch *launches = NULL;
    int n = 0;
    cg_generate_probe(prog, CG_OPENCL, CG_MATH_FAST, NULL, &launches, &n, probe);
    bool split = false;
    for (int i = 0; i < n && !split; i++)
        split = launches[i].interior;
    free(launches);
    return split;
}

bool cg_opencl_splits(const lower_program *prog)
{
    return opencl_splits(prog, PROBE_SPLITS);
}

bool cg_opencl_splits_narrow(const lower_program *prog)
{
    return opencl_splits(prog, PROBE_NARROW_SPLITS);
}

bool cg_decides_guards_apart(const lower_program *prog, cg_backend backend)
{
    code_counts n = {0};
    if (backend != CG_C)
        cg_generate_probe(prog, backend, CG_MATH_FAST, &n, NULL, NULL, PROBE_GUARDS);
    return n.guards_apart;
}

int64_t cg_pow2_shifts(const lower_program *prog)
{
    code_counts n = {0};
    free(cg_generate_probe(prog, CG_C, CG_MATH_EXACT, &n, NULL, NULL, PROBE_NONE));
    return n.pow2_shifts;
}

/* Whether a kernel of prog keeps a Func, or a staged copy, in a private
 * array (the only arrays whose reads generation 19 prints as selects). */
static bool has_private_arrays(const lower_program *prog)
{
    for (int i = 0; i < prog->nkernels; i++) {
        const lower_kernel *k = prog->kernels[i];
        for (int f = 0; f < prog->p->funcs.n + k->nstaged; f++)
            if (k->storage[f] && k->storage[f]->mem == MEM_LOCAL) return true;
    }
    return false;
}

cg_opencl_forms cg_opencl_forms_of(const lower_program *prog)
{
    code_counts n = {0};
    if (prog->cpu || has_private_arrays(prog))
        free(cg_generate_probe(prog, CG_OPENCL, CG_MATH_FAST, &n, NULL, NULL, PROBE_NONE));
    return n.opencl;
}

int64_t cg_opencl_pointer_selects(const lower_program *prog)
{
    return cg_opencl_forms_of(prog).pointer_selects;
}

int64_t cg_opencl_private_picks(const lower_program *prog)
{
    return cg_opencl_forms_of(prog).private_picks;
}

int64_t cg_opencl_rows_apart(const lower_program *prog, int64_t *in_edges)
{
    cg_opencl_forms n = cg_opencl_forms_of(prog);
    if (in_edges)
        *in_edges = n.rows_apart_edge;
    return n.rows_apart;
}

static void note_pow2_division(const sc_expr *e, void *user)
{
    if (e->kind == E_BINARY && (e->op == SC_DIV || e->op == SC_MOD) && sc_type_is_signed(e->type) &&
        e->type != SC_F32 && e->args[1]->kind == E_CONST && base_log2_exact(e->args[1]->c.i) > 0)
        *(bool *)user = true;
}

/* Whether note, visiting every node of p's definitions (values and
 * update coordinates), sets its flag. */
static bool any_definition(const sc_pipeline *p, void (*note)(const sc_expr *, void *))
{
    bool found = false;
    for (int i = 0; i < p->funcs.n && !found; i++) {
        const sc_func *f = p->funcs.items[i];
        if (f->kind != FUNC_DEFINED)
            continue;
        for (int st = 0; st < f->nstages; st++) {
            ir_visit(f->stages[st].value, note, &found);
            for (int d = 0; d < f->stages[st].nargs; d++)
                ir_visit(f->stages[st].args[d], note, &found);
        }
    }
    return found;
}

bool cg_divides_by_pow2(const sc_pipeline *p) { return any_definition(p, note_pow2_division); }

static void note_square(const sc_expr *e, void *user)
{
    if (ir_expr_is_square(e))
        *(bool *)user = true;
}

bool cg_squares(const sc_pipeline *p) { return any_definition(p, note_square); }

static void note_f32_minmax(const sc_expr *e, void *user)
{
    if (e->kind == E_BINARY && (e->op == SC_MIN || e->op == SC_MAX) && e->args[0]->type == SC_F32)
        *(bool *)user = true;
}

bool cg_uses_f32_minmax(const sc_pipeline *p) { return any_definition(p, note_f32_minmax); }

static void note_f32_conversion(const sc_expr *e, void *user)
{
    if (e->kind == E_CAST && e->args[0]->type == SC_F32 && e->type != SC_F32 && e->type != SC_BOOL)
        *(bool *)user = true;
}

bool cg_converts_f32(const sc_pipeline *p) { return any_definition(p, note_f32_conversion); }

/* The schedule's program, lowered on the first call only. */
typedef struct {
    sc_pipeline *p;
    const bounds_result *b;
    const sched_state *s;
    const nest *model;
    bool cpu, done;
    ir_arena *a;
    lower_program *prog;
} lowered;

static lower_program *lowered_program(lowered *l)
{
    if (!l->done) {
        char err[512];
        l->done = true;
        l->a = ir_arena_new();
        /* as it was measured, with the thread mapping of the sample's
         * model (that of its generation) */
        l->prog = lower_schedule_mapped(l->a, l->p, l->b, l->s, l->cpu, l->cpu && nest_any_cyclic(l->model), err,
                                        sizeof err);
    }
    return l->prog;
}

/* The changes of generations 16, 17, 19 and 23 in OpenCL's forms n. */
static cg_code_change older_forms_change(int generation, const lowered *l, const cg_opencl_forms *n)
{
    if (generation >= CG_GENERATION_GUARDED_MINS)
        return CG_CODE_SAME;
    if (generation >= CG_GENERATION_PRIVATE_PICKS)
        return n->guarded_mins > 0 ? CG_CODE_GUARDED_MINS : CG_CODE_SAME;
    if (n->private_picks > 0)
        return CG_CODE_PRIVATE_PICKS;
    if (n->guarded_mins > 0)
        return CG_CODE_GUARDED_MINS;
    if (generation < CG_GENERATION_POINTER_SELECTS && l->cpu) {
        bool rows = generation < CG_GENERATION_ROWS_APART;
        if (rows && n->rows_apart > n->rows_apart_edge)
            return CG_CODE_ROWS_APART;
        if (n->pointer_selects > 0)
            return CG_CODE_POINTER_SELECTS;
        if (rows && n->rows_apart > 0)
            return CG_CODE_ROWS_APART_EDGES;
    }
    return CG_CODE_SAME;
}

/* The changes of generations 16, 17, 19, 23 and 25, read from OpenCL's
 * forms: an older one's first, else generation 25's. */
static cg_code_change opencl_forms_change(int generation, lowered *l, bool opencl)
{
    if (generation >= CG_GENERATION_DATA_PICKS || !opencl || !lowered_program(l))
        return CG_CODE_SAME;
    cg_opencl_forms n = cg_opencl_forms_of(lowered_program(l));
    cg_code_change c = older_forms_change(generation, l, &n);
    return c != CG_CODE_SAME ? c : n.data_picks > 0 ? CG_CODE_DATA_PICKS : CG_CODE_SAME;
}

static cg_code_change code_change(int generation, lowered *l, bool opencl)
{
    const nest *model = l->model;
    if (l->cpu && generation < CG_GENERATION_CPU_UNSTAGED && nest_would_stage(model))
        return CG_CODE_STAGING;
    /* where the pipeline divides so, whether its code does (a dividend
     * that is never negative was divided in plain C before too) */
    if (generation < CG_GENERATION_POW2_DIVISION && cg_divides_by_pow2(l->p) && lowered_program(l) &&
        cg_pow2_shifts(lowered_program(l)) > 0)
        return CG_CODE_DIVISION;
    if (generation < CG_GENERATION_THREAD_UNROLLED) {
        if (nest_unrolls_thread_tiles(model))
            return CG_CODE_UNROLLING;
        if (opencl && lowered_program(l) &&
            cg_opencl_unrolls_past(lowered_program(l), CG_OPENCL_UNROLL_NODES_BEFORE_8))
            return CG_CODE_UNROLLING;
    }
    /* the readers' loops; OpenCL's indices changed form in every reader,
     * but where its loops were unrolled already PoCL ran the same (docs) */
    if (generation < CG_GENERATION_PRIVATE_INDICES && nest_unrolls_private_readers(model))
        return CG_CODE_PRIVATE;
    if (generation < CG_GENERATION_SPLIT_INTERIOR && opencl && l->cpu && lowered_program(l) &&
        cg_opencl_splits(lowered_program(l)))
        return CG_CODE_INTERIOR;
    if (generation < CG_GENERATION_CPU_MINMAX && opencl && l->cpu && cg_uses_f32_minmax(l->p))
        return CG_CODE_MINMAX;
    if (generation < CG_GENERATION_SCANS_AROUND && nest_any_scan_around_tile(model))
        return CG_CODE_SCAN_ORDER;
    if (generation < CG_GENERATION_SQUARES && cg_squares(l->p))
        return CG_CODE_SQUARE;
    if (generation < CG_GENERATION_MERGED_THREADS && nest_merges_thread_loops(model))
        return CG_CODE_MERGED_THREADS;
    if (generation < CG_GENERATION_NARROW_SPLITS && generation >= CG_GENERATION_SPLIT_INTERIOR && opencl && l->cpu &&
        lowered_program(l) && cg_opencl_splits_narrow(lowered_program(l)))
        return CG_CODE_NARROW_SPLITS;
    cg_code_change c = opencl_forms_change(generation, l, opencl);
    if (c != CG_CODE_SAME)
        return c;
    /* before the conversions: the interior's code differs more */
    if (generation < CG_GENERATION_PARTIAL_GUARDS && lowered_program(l) &&
        cg_decides_guards_apart(lowered_program(l), opencl ? CG_OPENCL : l->cpu ? CG_C : CG_CUDA))
        return CG_CODE_PARTIAL_GUARDS;
    if (generation < CG_GENERATION_BRANCHLESS_CONVERSIONS && cg_converts_f32(l->p))
        return CG_CODE_CONVERSIONS;
    if (generation < CG_GENERATION_LONGER_UNROLLS &&
        (nest_unrolls_reductions_around(model) ||
         ((opencl || l->cpu) && lowered_program(l) && cg_unrolls_whole_past(lowered_program(l)))))
        return CG_CODE_LONGER_UNROLLS;
    return CG_CODE_SAME;
}

cg_code_change cg_code_changed_since(int generation, sc_pipeline *p, const bounds_result *b,
                                     const sched_state *s, const nest *model, bool cpu, bool opencl)
{
    /* generation 20 (cyclic points) changed no older sample's code as the
     * loader models it: the model passed in has the sample's mapping;
     * generation 21 changed the f32-to-integer helpers (CG_CODE_CONVERSIONS);
     * generation 22 the interior of kernels guarded by a conjunction
     * (CG_CODE_PARTIAL_GUARDS); generation 23 OpenCL's reads of private
     * arrays through a guarded min (CG_CODE_GUARDED_MINS); generation 24
     * a CPU's reductions around an unrolled tile, unrolled whole up to
     * 16,384 nodes (CG_CODE_LONGER_UNROLLS); generation 25 OpenCL's reads
     * of private arrays at a temporary's values (CG_CODE_DATA_PICKS) */
    _Static_assert(CG_GENERATION == CG_GENERATION_DATA_PICKS,
                   "a new generation: say here which older code it changed");
    lowered l = { p, b, s, model, cpu, false, NULL, NULL };
    cg_code_change c = code_change(generation, &l, opencl);
    ir_arena_free(l.a);
    return c;
}
