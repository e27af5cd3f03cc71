/*
 * cg_c.c - the C (OpenMP) back end: blocks are an OpenMP parallel loop,
 * each barrier-separated phase a serial loop over the thread index (the
 * barrier is the end of that loop).  Exported per kernel, the ABI of rt.h:
 *     void NAME(int64_t nblocks, int32_t nthreads, void **args)
 * args[i] points to the i-th argument: a buffer's data pointer, or an
 * int32_t / float scalar.  Shared arrays are per block: on the stack inside
 * the block loop, or, above CG_C_STACK_BYTES, malloc'd once per OpenMP
 * thread.
 *
 * Expected compiler options: -std=c11 -O2 -fopenmp -ffp-contract=off (GCC
 * does not contract in ISO mode; clang does unless told), never -ffast-math.
 * Fast math (CG_MATH_FAST): the C library's f32 functions (expf, logf ...)
 * and -ffp-contract=fast.
 */
#include <inttypes.h>
#include <stdlib.h>
#include "cg_backend.h"

static void c_prologue(cg_ctx *g)
{
    cg_printf(g, "/* Build: cc -std=c11 -O2 -fopenmp %s -shared -fPIC (no -ffast-math). */\n"
                 "#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n",
              cg_math_options(CG_C, g->math));
    if (!cg_fast(g))
        cg_printf(g, "#ifdef __clang__\n#pragma STDC FP_CONTRACT OFF\n#endif\n");
    cg_math_prologue(g, "static inline");
}

static bool c_big(const lower_alloc *a)
{
    return a->count * (int64_t)sc_type_size(cg_alloc_type(a)) > CG_C_STACK_BYTES;
}

static bool c_any_big(const lower_kernel *k)
{
    for (int i = 0; i < k->nshared; i++)
        if (c_big(k->shared[i]))
            return true;
    return false;
}

static void c_kernel_open(cg_ctx *g, const lower_kernel *k)
{
    cg_line(g, "void %s(int64_t sc_nblocks, int32_t sc_nthreads, void **sc_args)",
            cg_name(g, k->name));
    cg_line(g, "{");
    cg_indent(g, 1);
    for (int i = 0; i < k->nargs; i++) {
        const lower_alloc *a = k->args[i];
        const char *T = cg_type(g, cg_alloc_type(a));
        const char *c = cg_stores_to(k, a) ? "" : "const ";
        if (cg_printed(g, a))
            cg_line(g, "%s%s *restrict %s = (%s%s *)*(void **)sc_args[%d];", c, T,
                    cg_name(g, a->name), c, T, i);
    }
    for (int i = 0; i < k->nparams; i++) {
        const char *T = cg_type(g, cg_param_abi_type(k->params[i]));
        if (cg_printed(g, k->params[i]))
            cg_line(g, "const %s %s = *(const %s *)sc_args[%d];", T,
                    cg_name(g, k->params[i]->name), T, k->nargs + i);
    }
    if (c_any_big(k)) {
        cg_line(g, "#pragma omp parallel");
        cg_line(g, "{");
        cg_indent(g, 1);
        for (int i = 0; i < k->nshared; i++) {
            const lower_alloc *a = k->shared[i];
            const char *T = cg_type(g, cg_alloc_type(a));
            if (!c_big(a))
                continue;
            cg_line(g, "%s *%s = (%s *)malloc(sizeof(%s) * %" PRId64 ");", T,
                    cg_name(g, a->name), T, T, a->count);
            cg_line(g, "if (!%s)", cg_name(g, a->name));
            cg_line(g, "    abort();            /* the C ABI has no error return */");
        }
        cg_line(g, "#pragma omp for schedule(dynamic)");
    } else {
        cg_line(g, "#pragma omp parallel for schedule(dynamic)");
    }
    cg_line(g, "for (int64_t sc_b = 0; sc_b < sc_nblocks; sc_b++) {");
    cg_indent(g, 1);
    if (cg_printed_var(g, "bid"))
        cg_line(g, "const int32_t bid = (int32_t)sc_b;");
    for (int i = 0; i < k->nshared; i++) {
        const lower_alloc *a = k->shared[i];
        if (!c_big(a))
            cg_line(g, "%s %s[%" PRId64 "];", cg_type(g, cg_alloc_type(a)),
                    cg_name(g, a->name), a->count > 0 ? a->count : 1);
    }
}

static void c_phase_open(cg_ctx *g, const lower_kernel *k, int phase)
{
    cg_line(g, "/* phase %d */", phase);
    cg_line(g, "for (int32_t tid = 0; tid < sc_nthreads; tid++) {");
    cg_indent(g, 1);
    /* the root phase reads tid0..2, and so do block-level phases whose
     * threads line up with the work-group's shape (lower.c) */
    cg_tid_defs(g, k, "int32_t", "tid", true);
    cg_line(g, "(void)tid0;");
    cg_line(g, "(void)tid1;");
    cg_line(g, "(void)tid2;");
}

static void c_phase_close(cg_ctx *g, const lower_kernel *k, int phase)
{
    (void)k;
    (void)phase;
    cg_indent(g, -1);
    cg_line(g, "}");
}

static void c_kernel_close(cg_ctx *g, const lower_kernel *k)
{
    cg_indent(g, -1);
    cg_line(g, "}");
    if (c_any_big(k)) {
        for (int i = 0; i < k->nshared; i++)
            if (c_big(k->shared[i]))
                cg_line(g, "free(%s);", cg_name(g, k->shared[i]->name));
        cg_indent(g, -1);
        cg_line(g, "}");
    }
    cg_indent(g, -1);
    cg_line(g, "}");
}

/* The host entry point (cg_host.c): inputs are read in place, an output
 * whose buffer is exactly its [0, extent) is written in place, the other
 * root Funcs get malloc'd buffers. */
static void c_host(cg_ctx *g)
{
    const lower_program *prog = g->prog;
    cg_host_open(g, "", "Returns 0, or -1 if a buffer could not be allocated.");
    bool any_malloc = false;
    bool *own = cg_grow(NULL, sizeof(bool) * ((size_t)prog->nbuffers + 1));
    for (int i = 0; i < prog->nbuffers; i++) {
        const lower_alloc *a = prog->buffers[i];
        const sc_func *f = a->func;
        own[i] = !(f->kind == FUNC_INPUT || (f->is_output && cg_host_output_is_region(f, a)));
        any_malloc |= own[i];
        if (own[i])
            cg_line(g, "void *%s = NULL;", cg_host_buf(g, a));
        else
            cg_line(g, "void *%s = (void *)%s;", cg_host_buf(g, a), cg_name(g, f->name));
    }
    cg_host_params(g);
    if (any_malloc)
        cg_line(g, "int sc_rc = -1;");
    for (int i = 0; i < prog->nbuffers; i++)
        if (own[i])
            cg_line(g, "if (!(%s = malloc(%" PRId64 "))) goto sc_done;",
                    cg_host_buf(g, prog->buffers[i]), cg_host_bytes(prog->buffers[i]));
    for (int i = 0; i < prog->nkernels; i++) {
        const lower_kernel *k = prog->kernels[i];
        if (k->nargs + k->nparams == 0) {
            cg_line(g, "%s(%" PRId64 ", %d, NULL);", cg_name(g, k->name), k->nblocks, k->nthreads);
            continue;
        }
        cg_line(g, "{");
        cg_put_indent(g);
        cg_printf(g, "    void *sc_a[] = { ");
        cg_host_args(g, k, "(void *)&");
        cg_printf(g, " };\n");
        cg_line(g, "    %s(%" PRId64 ", %d, sc_a);", cg_name(g, k->name), k->nblocks, k->nthreads);
        cg_line(g, "}");
    }
    for (int i = 0; i < prog->p->outputs.n; i++) {
        const sc_func *f = cg_host_func(prog, 1, i);
        const lower_alloc *a = cg_host_buffer_of(prog, f);
        if (!cg_host_output_is_region(f, a))
            cg_host_copy_out(g, f, a, "memcpy(%s, %s, %s);");
    }
    if (any_malloc) {
        cg_line(g, "sc_rc = 0;");
        cg_printf(g, "sc_done:\n");
        for (int i = 0; i < prog->nbuffers; i++)
            if (own[i])
                cg_line(g, "free(%s);", cg_host_buf(g, prog->buffers[i]));
        cg_line(g, "return sc_rc;");
    } else {
        cg_line(g, "return 0;");
    }
    free(own);
    cg_host_close(g);
}

const cg_target cg_target_c = {
    .name = "C",
    .type = { [SC_BOOL] = "int", [SC_U8] = "uint8_t", [SC_U16] = "uint16_t",
              [SC_U32] = "uint32_t", [SC_I8] = "int8_t", [SC_I16] = "int16_t",
              [SC_I32] = "int32_t", [SC_F32] = "float" },
    .i64 = "int64_t",
    .fn_qual = "static inline",
    .math = { [SC_SQRT] = "sqrtf", [SC_EXP] = "sc_expf", [SC_LOG] = "sc_logf", [SC_POW] = "sc_powf",
              [SC_FLOOR] = "floorf", [SC_CEIL] = "ceilf", [SC_ROUND] = "rintf",
              [SC_SIN] = "sc_sinf", [SC_COS] = "sc_cosf", [SC_TANH] = "sc_tanhf",
              [SC_ATAN2] = "sc_atan2f", [SC_ABS] = "fabsf" },
    .fast_math = { [SC_EXP] = "expf", [SC_LOG] = "logf", [SC_POW] = "powf", [SC_SIN] = "sinf",
                   [SC_COS] = "cosf", [SC_TANH] = "tanhf", [SC_ATAN2] = "atan2f" },
    .fmin = "fminf",
    .fmax = "fmaxf",
    .inf = "INFINITY",
    .nan = "NAN",
    .unroll = "#pragma GCC unroll %d",
    /* gcc -O2 took minutes on one kernel of local_laplacian whose 4 x 4
     * unrolled points each inline a 20 KB expression (0.8 s rolled) */
    .unroll_nodes = CG_C_UNROLL_NODES,
    .interior = false,
    .prologue = c_prologue,
    .kernel_open = c_kernel_open,
    .phase_open = c_phase_open,
    .phase_close = c_phase_close,
    .kernel_close = c_kernel_close,
    .host = c_host,
};
