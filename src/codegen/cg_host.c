/*
 * cg_host.c - the host entry point of generated C and CUDA code: one
 * function that runs the whole program on arrays in host memory,
 *
 *     int PIPELINE_run(inputs..., params..., outputs...)
 *
 * so that a generated file is usable on its own, without stagecraft's
 * runtime: it allocates the global buffers (inputs and root Funcs), copies
 * the inputs in, launches the kernels in order with the arguments of the
 * kernel ABI (rt.h), copies each output's [0, extent) out of its Func's
 * region, and frees everything, on the error path too.  What is common
 * (the signature and its comment, names, argument lists, the row copies of
 * the outputs) is here; cg_c.c and cg_cuda.c print the allocation, copy and
 * launch statements of their API.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_backend.h"

const sc_func *cg_host_func(const lower_program *prog, int list, int i)
{
    const ir_vec *v = list == 0 ? &prog->p->inputs : &prog->p->outputs;
    return v->items[i];
}

const lower_alloc *cg_host_buffer_of(const lower_program *prog, const sc_func *f)
{
    for (int i = 0; i < prog->nbuffers; i++)
        if (prog->buffers[i]->func == f)
            return prog->buffers[i];
    return NULL;
}

bool cg_host_possible(const lower_program *prog)
{
    if (!prog->p)
        return false;
    for (int i = 0; i < prog->p->outputs.n; i++)
        if (!cg_host_buffer_of(prog, cg_host_func(prog, 1, i)))
            return false;
    for (int i = 0; i < prog->nkernels; i++)
        for (int j = 0; j < prog->kernels[i]->nargs; j++) {
            bool found = false;
            for (int b = 0; b < prog->nbuffers && !found; b++)
                found = prog->buffers[b] == prog->kernels[i]->args[j];
            if (!found)
                return false;
        }
    return true;
}

const char *cg_host_name(cg_ctx *g)
{
    char *name = cg_scratch(g);
    const char *p = g->prog->p->name ? g->prog->p->name : "pipeline";
    snprintf(name, CG_SCRATCH, "%s_run", cg_name(g, p));
    return name;
}

/* The extents of an input or output as "2560 x 1536 x 3" ("one element"
 * for a 0-D output). */
static void pr_extents(cg_ctx *g, const sc_func *f)
{
    const int *e = f->kind == FUNC_INPUT ? f->extent : f->out_extent;
    if (f->ndims == 0)
        cg_printf(g, "one element (0-D)");
    for (int d = 0; d < f->ndims; d++)
        cg_printf(g, "%s%d", d ? " x " : "", e[d]);
}

/* "QUAL int NAME_run(inputs, params, outputs)", no newline. */
static void pr_signature(cg_ctx *g, const char *qual)
{
    const sc_pipeline *p = g->prog->p;
    cg_printf(g, "%s%sint %s(", qual, *qual ? " " : "", cg_host_name(g));
    const char *sep = "";
    for (int i = 0; i < p->inputs.n; i++, sep = ", ") {
        const sc_func *f = cg_host_func(g->prog, 0, i);
        cg_printf(g, "%sconst %s *%s", sep, cg_type(g, f->type), cg_name(g, f->name));
    }
    for (int i = 0; i < p->params.n; i++, sep = ", ") {
        const sc_param *q = p->params.items[i];
        cg_printf(g, "%s%s %s", sep, cg_type(g, q->type), cg_name(g, q->name));
    }
    for (int i = 0; i < p->outputs.n; i++, sep = ", ") {
        const sc_func *f = cg_host_func(g->prog, 1, i);
        cg_printf(g, "%s%s *%s", sep, cg_type(g, f->type), cg_name(g, f->name));
    }
    cg_printf(g, "%s)", *sep ? "" : "void");
}

void cg_host_open(cg_ctx *g, const char *qual, const char *returns)
{
    const sc_pipeline *p = g->prog->p;
    cg_printf(g, "\n/*\n * %s: runs pipeline %s on arrays in host memory, dense, dimension 0\n"
                 " * fastest (the first size is the row length).  The sizes are the ones\n"
                 " * this code was generated for; the parameters may take any value.\n",
              cg_host_name(g), p->name ? p->name : "?");
    for (int l = 0; l < 2; l++) {
        int n = l == 0 ? p->inputs.n : p->outputs.n;
        for (int i = 0; i < n; i++) {
            const sc_func *f = cg_host_func(g->prog, l, i);
            cg_printf(g, " *   %-16s %s %s, ", cg_name(g, f->name), l ? "output" : "input ",
                      cg_type(g, f->type));
            pr_extents(g, f);
            cg_printf(g, "\n");
        }
        for (int i = 0; l == 0 && i < p->params.n; i++) {
            const sc_param *q = p->params.items[i];
            cg_printf(g, " *   %-16s param  %s\n", cg_name(g, q->name), cg_type(g, q->type));
        }
    }
    cg_printf(g, " * %s\n */\n", returns);
    pr_signature(g, qual);
    cg_printf(g, "\n{\n");
    g->indent = 1;
}

void cg_host_close(cg_ctx *g)
{
    g->indent = 0;
    cg_line(g, "}");
}

const char *cg_host_buf(cg_ctx *g, const lower_alloc *a)
{
    char *s = cg_scratch(g);
    snprintf(s, CG_SCRATCH, "sc_%s", cg_name(g, a->name));
    return s;
}

int64_t cg_host_bytes(const lower_alloc *a)
{
    int64_t n = a->count * (int64_t)sc_type_size(cg_alloc_type(a));
    return n > 0 ? n : 1;
}

static bool param_used(const lower_program *prog, const sc_param *q)
{
    for (int i = 0; i < prog->nkernels; i++)
        for (int j = 0; j < prog->kernels[i]->nparams; j++)
            if (prog->kernels[i]->params[j] == q)
                return true;
    return false;
}

void cg_host_params(cg_ctx *g)
{
    const sc_pipeline *p = g->prog->p;
    for (int i = 0; i < p->params.n; i++) {
        const sc_param *q = p->params.items[i];
        const char *T = cg_type(g, cg_param_abi_type(q)), *name = cg_name(g, q->name);
        if (param_used(g->prog, q))
            cg_line(g, "const %s sc_p_%s = (%s)%s;", T, name, T, name);
        else
            cg_line(g, "(void)%s;            /* no kernel reads it */", name);
    }
    for (int i = 0; i < p->inputs.n; i++) {
        const sc_func *f = cg_host_func(g->prog, 0, i);
        if (!cg_host_buffer_of(g->prog, f))
            cg_line(g, "(void)%s;            /* no kernel reads it */", cg_name(g, f->name));
    }
}

void cg_host_args(cg_ctx *g, const lower_kernel *k, const char *prefix)
{
    for (int i = 0; i < k->nargs + k->nparams; i++) {
        cg_printf(g, "%s%s", i ? ", " : "", prefix);
        if (i < k->nargs)
            cg_printf(g, "%s", cg_host_buf(g, k->args[i]));
        else
            cg_printf(g, "sc_p_%s", cg_name(g, k->params[i - k->nargs]->name));
    }
}

bool cg_host_output_is_region(const sc_func *f, const lower_alloc *a)
{
    for (int d = 0; d < f->ndims; d++)
        if (a->min[d]->c.i != 0 || a->extent[d] != f->out_extent[d])
            return false;
    return true;
}

/*
 * Copies output f out of its buffer a (its Func's whole region, which may
 * be larger than [0, extent) when other Funcs read the output) into the
 * user's dense array: one copy when the two coincide, else one per row of
 * dimension 0, in loops over the other dimensions.  copy is a statement
 * format with three %s: destination pointer, source pointer, byte count.
 */
void cg_host_copy_out(cg_ctx *g, const sc_func *f, const lower_alloc *a, const char *copy)
{
    const char *T = cg_type(g, f->type), *user = cg_name(g, f->name);
    char dst[256], src[512], bytes[128];
    if (cg_host_output_is_region(f, a)) {
        snprintf(dst, sizeof dst, "%s", user);
        snprintf(src, sizeof src, "%s", cg_host_buf(g, a));
        snprintf(bytes, sizeof bytes, "%" PRId64, cg_host_bytes(a));
        cg_line(g, copy, dst, src, bytes);
        return;
    }
    int64_t ustride = f->out_extent[0];
    int n = snprintf(dst, sizeof dst, "%s", user);
    int m = snprintf(src, sizeof src, "(%s *)%s", T, cg_host_buf(g, a));
    if (a->min[0]->c.i != 0)
        m += snprintf(src + m, sizeof src - (size_t)m, " + %" PRId64, -a->min[0]->c.i * a->stride[0]);
    for (int d = f->ndims - 1; d >= 1; d--) {
        cg_line(g, "for (int64_t sc_c%d = 0; sc_c%d < %d; sc_c%d++)", d, d, f->out_extent[d], d);
        cg_indent(g, 1);
    }
    for (int d = 1; d < f->ndims; d++) {
        n += snprintf(dst + n, sizeof dst - (size_t)n, " + sc_c%d * %" PRId64, d, ustride);
        if (a->min[d]->c.i != 0)
            m += snprintf(src + m, sizeof src - (size_t)m, " + (sc_c%d - %" PRId64 ") * %" PRId64, d,
                          a->min[d]->c.i, a->stride[d]);
        else
            m += snprintf(src + m, sizeof src - (size_t)m, " + sc_c%d * %" PRId64, d, a->stride[d]);
        ustride *= f->out_extent[d];
    }
    snprintf(bytes, sizeof bytes, "sizeof(%s) * %d", T, f->out_extent[0]);
    cg_line(g, copy, dst, src, bytes);
    cg_indent(g, -(f->ndims - 1));
}

char *cg_generate_header(const lower_program *prog)
{
    if (!prog || !cg_host_possible(prog))
        return NULL;
    cg_ctx g;
    cg_buf out = {0};
    memset(&g, 0, sizeof g);
    g.t = &cg_target_c;
    g.prog = prog;
    g.out = &out;
    const char *name = prog->p->name ? prog->p->name : "pipeline";
    cg_printf(&g, "/*\n * Generated by stagecraft from pipeline %s: the entry point of its\n"
                  " * generated C (%s.c) and CUDA (%s.cu) code; the comment above it\n"
                  " * there gives the arrays' sizes.  Link with the compiled source.\n */\n",
              name, name, name);
    char guard[CG_SCRATCH];
    snprintf(guard, sizeof guard, "SC_%s_H", cg_host_name(&g));
    for (char *c = guard; *c; c++)
        if (*c >= 'a' && *c <= 'z')
            *c = (char)(*c - 'a' + 'A');
    cg_printf(&g, "#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n"
                  "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", guard, guard);
    pr_signature(&g, "");
    cg_printf(&g, ";\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
    for (int i = 0; i < g.nnames; i++)
        free(g.names[i]);
    free(g.names);
    return out.s;
}
