/*
 * nest_print.c - the text form of a loop-nest model (nest_print, nest.h):
 * its kernels, and per Func its storage and per stage its loops,
 * realizations, points and accesses.
 */
#include <stdio.h>
#include <stdlib.h>
#include "ir.h"
#include "nest.h"

static const sc_func *func_at(const sc_pipeline *p, int id) { return p->funcs.items[id]; }

static void print_ext(FILE *out, int n, const int64_t *e) {
    for (int i = 0; i < n; i++) fprintf(out, "%s%lld", i ? "x" : "", (long long)e[i]);
}

void nest_print(FILE *out, const sc_pipeline *p, const nest *n) {
    fprintf(out, "# loop nest of %s: %d kernel%s, %d Func%s modelled\n", p->name, n->nkernels,
            n->nkernels == 1 ? "" : "s", n->nmodelled, n->nmodelled == 1 ? "" : "s");
    for (int k = 0; k < n->nkernels; k++) {
        const nest_kernel *kn = n->kernels[k];
        fprintf(out, "kernel %d %s.%d: %lld blocks x %d threads, shared %lld B (%d), registers %lld (%d), staged %lld (%d)\n",
                k, kn->root->name, kn->stage, (long long)kn->nblocks, kn->nthreads, (long long)kn->shared_bytes,
                kn->nshared, (long long)kn->register_elems, kn->nregister, (long long)kn->staged_elems, kn->nstaged);
    }
    for (int i = 0; i < n->nfuncs; i++) {
        const nest_func *f = n->funcs[i];
        if (!f) continue;
        fprintf(out, "%s: %s", f->func->name, f->loc == SCHED_ROOT ? "root" : f->loc == SCHED_BLOCK ? "block" : "thread");
        if (f->at >= 0) fprintf(out, " of %s.%d", func_at(p, f->at)->name, f->at_stage);
        fprintf(out, ", %s ", nest_mem_name(f->mem));
        print_ext(out, f->ndims, f->extent);
        fprintf(out, " = %lld B\n", (long long)f->bytes);
        for (int st = 0; st < f->nstages; st++) {
            const nest_stage *r = f->stages[st];
            if (!r) continue;
            int kid = 0;
            while (kid < n->nkernels && n->kernels[kid] != r->kernel) kid++;
            fprintf(out, "  stage %d (kernel %d): extent ", st, kid);
            print_ext(out, r->npure, r->extent);
            fprintf(out, ", blocks ");
            print_ext(out, r->npure, r->blocks);
            fprintf(out, ", threads ");
            for (int k = 0; k < r->npure; k++) fprintf(out, "%s%d", k ? "x" : "", r->threads[k]);
            fprintf(out, ", serial ");
            print_ext(out, r->npure, r->serial);
            if (r->cyclic) fprintf(out, " (cyclic along the first)");
            if (r->nred) { fprintf(out, ", reduction "); print_ext(out, r->nred, r->red); }
            fprintf(out, "; realizations %lld, points %lld per realization, %lld in all\n",
                    (long long)r->realizations, (long long)r->points_per_realization, (long long)r->points_total);
            for (int a = 0; a < r->naccess; a++) {
                const nest_access *ac = &r->access[a];
                char *txt = ir_expr_to_string(ac->call);
                fprintf(out, "    %s %s%s: thread %lld B, block %lld B, realization %lld B; stride",
                        txt, nest_mem_name(ac->mem), ac->staged ? " staged" : "", (long long)ac->bytes_thread,
                        (long long)ac->bytes_block, (long long)ac->bytes_realization);
                free(txt);
                for (int k = 0; k < r->npure; k++) fprintf(out, " %g", ac->stride_serial[k]);
                fprintf(out, "\n");
            }
        }
    }
}
