/*
 * test_host.c - the host entry point of generated C and CUDA code
 * (PIPELINE_run, declared in the header cg_generate_header writes), used as
 * a user would: the generated file is compiled on its own with the system
 * C compiler or nvcc, together with a caller that includes the header and
 * passes the reference inputs and the pipeline's parameter values; the
 * outputs are compared with the reference evaluator's, bit for bit.
 *
 * C runs here.  CUDA is compiled and linked with nvcc (host and device
 * code); where a GPU is present its outputs are checked too, elsewhere the
 * call must come back with a CUDA error code instead of crashing.
 *
 * Cases: every app with a random schedule (seed 1) and with root on C;
 * a pipeline with two outputs, one read by the other so that its buffer is
 * larger than its [0, extent), on C and CUDA; a 0-D output beside a
 * 1-element one (scalar_out), on C and CUDA; HOST_CUDA_APPS (default
 * harris,camera_pipe,iir_blur) on CUDA.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apps.h"
#include "check.h"
#include "exec.h"
#include "space.h"

static char tmpdir[256];


static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* A caller of NAME_run that takes the inputs and outputs as arrays of
 * pointers and passes the pipeline's parameters at their declared values,
 * as a user's program would. */
static char *caller_source(const sc_pipeline *p)
{
    size_t cap = 4096 + 64 * (size_t)(p->inputs.n + p->params.n + p->outputs.n);
    char *s = malloc(cap);
    if (!s) abort();
    int n = snprintf(s, cap, "#include \"%s.h\"\nint sc_test_call(void **in, void **out)\n{\n"
                             "    return %s_run(", p->name, p->name);
    const char *sep = "";
    for (int i = 0; i < p->inputs.n; i++, sep = ", ")
        n += snprintf(s + n, cap - (size_t)n, "%sin[%d]", sep, i);
    for (int i = 0; i < p->params.n; i++, sep = ", ")
        n += snprintf(s + n, cap - (size_t)n, "%s%.17g", sep, ((sc_param *)p->params.items[i])->value);
    for (int i = 0; i < p->outputs.n; i++, sep = ", ")
        n += snprintf(s + n, cap - (size_t)n, "%sout[%d]", sep, i);
    snprintf(s + n, cap - (size_t)n, ");\n}\n");
    return s;
}

/* Writes the generated source, its header and the caller into tmpdir and
 * builds a shared object with `build` (a command format taking the
 * directory, the source's extension and the library path); the library
 * path, or NULL with the compiler's output in log. */
static bool build_lib(const lower_program *prog, cg_backend be, const char *build, char *lib,
                      size_t liblen, char *log, size_t loglen)
{
    const char *name = prog->p->name, *ext = be == CG_CUDA ? "cu" : "c";
    char path[512], cmd[2048];
    char *src = cg_generate(prog, be), *hdr = cg_generate_header(prog), *call = caller_source(prog->p);
    snprintf(path, sizeof path, "%s/%s.%s", tmpdir, name, ext);
    bool ok = write_text(path, src) == 0;
    snprintf(path, sizeof path, "%s/%s.h", tmpdir, name);
    ok = ok && write_text(path, hdr) == 0;
    snprintf(path, sizeof path, "%s/caller.c", tmpdir);
    ok = ok && write_text(path, call) == 0;
    free(src); free(hdr); free(call);
    static int nlib;
    snprintf(lib, liblen, "%s/lib%s_%s_%d.so", tmpdir, name, ext, nlib++);
    snprintf(cmd, sizeof cmd, build, tmpdir, name, ext, lib);
    snprintf(path, sizeof path, "%s/build.log", tmpdir);
    strncat(cmd, " >", sizeof cmd - strlen(cmd) - 1);
    strncat(cmd, path, sizeof cmd - strlen(cmd) - 1);
    strncat(cmd, " 2>&1", sizeof cmd - strlen(cmd) - 1);
    if (ok && system(cmd) == 0) return true;
    log[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        size_t got = fread(log, 1, loglen - 1, f);
        log[got] = 0;
        fclose(f);
    }
    return false;
}

/* Loads the library, calls NAME_run on the case's inputs; its return code
 * in *rc and the outputs in out (NULL where the call failed to load). */
static bool call_lib(const char *lib, const app_case *ac, sc_buffer **out, int *rc, char *err,
                     size_t errlen)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) { snprintf(err, errlen, "dlopen: %s", dlerror()); return false; }
    int (*call)(void **, void **);
    void *sym = dlsym(h, "sc_test_call");
    if (!sym) { snprintf(err, errlen, "no sc_test_call in %s", lib); dlclose(h); return false; }
    memcpy(&call, &sym, sizeof sym);
    const sc_pipeline *p = ac->p;
    void **in = calloc((size_t)p->inputs.n + 1, sizeof *in), **o = calloc((size_t)p->outputs.n + 1, sizeof *o);
    if (!in || !o) abort();
    for (int i = 0; i < p->inputs.n; i++) in[i] = ac->in[i]->data;
    for (int i = 0; i < p->outputs.n; i++) {
        const sc_func *f = p->outputs.items[i];
        /* a 0-D output is one element, as the reference evaluator gives it */
        int zero[SC_MAX_DIMS] = {0}, one[SC_MAX_DIMS] = {1};
        out[i] = sc_buffer_new(f->type, f->ndims ? f->ndims : 1, zero, f->ndims ? f->out_extent : one);
        if (!out[i]) abort();
        /* a pattern the code must overwrite everywhere */
        memset(out[i]->data, 0x5a, (size_t)sc_buffer_count(out[i]) * sc_type_size(f->type));
        o[i] = out[i]->data;
    }
    *rc = call(in, o);
    dlclose(h);
    free(in);
    free(o);
    return true;
}

static void compare(const char *what, const app_case *ac, sc_buffer **out)
{
    exec_diff all = {0};
    exec_tol exact = exec_tolerance(CG_MATH_EXACT);
    bool ok = true;
    for (int i = 0; i < ac->p->outputs.n; i++) {
        exec_diff d;
        ok = ok && exec_compare(out[i], ac->ref[i], &exact, &d) == 0;
        exec_diff_add(&all, &d);
    }
    check_report(ok && all.mismatches == 0, "%s (%d output%s, bit-exact: %lld points differ, max difference %.3g)",
                 what, ac->p->outputs.n, ac->p->outputs.n == 1 ? "" : "s", (long long)all.mismatches, all.max_abs);
}

static void free_outputs(const app_case *ac, sc_buffer **out)
{
    for (int i = 0; i < ac->p->outputs.n; i++) sc_buffer_free(out[i]);
}

static const char c_build[] = "cc -std=c11 -O1 -fopenmp -ffp-contract=off -Wall -Wextra -Werror "
                              "-Wno-unused-function -shared -fPIC -I%1$s -o %4$s %1$s/%2$s.%3$s %1$s/caller.c -lm";
static const char cuda_build[] = "nvcc -O1 -arch=sm_80 --fmad=false --prec-div=true --prec-sqrt=true "
                                 "-shared -Xcompiler -fPIC -I%1$s -o %4$s %1$s/%2$s.%3$s %1$s/caller.c";

/* Generates, builds and calls one schedule's host entry point. */
static void check_host(const char *what, const app_case *ac, const lower_program *prog, cg_backend be,
                       bool gpu)
{
    char lib[512], log[8192], err[1024];
    int rc = -1;
    if (!build_lib(prog, be, be == CG_CUDA ? cuda_build : c_build, lib, sizeof lib, log, sizeof log)) {
        check_report(false, "%s: the generated code does not build:\n%s", what, log);
        return;
    }
    sc_buffer **out = calloc((size_t)ac->p->outputs.n + 1, sizeof *out);
    if (!out) abort();
    if (!call_lib(lib, ac, out, &rc, err, sizeof err)) {
        check_report(false, "%s: %s", what, err);
        free(out);
        return;
    }
    unlink(lib);
    if (be == CG_CUDA && !gpu)
        check_report(rc != 0, "%s (built and linked with nvcc; no GPU here: %s_run returned CUDA error %d)",
               what, prog->p->name, rc);
    else if (rc != 0)
        check_report(false, "%s: %s_run returned %d", what, prog->p->name, rc);
    else
        compare(what, ac, out);
    free_outputs(ac, out);
    free(out);
}

/* Two outputs; out2 reads out1 one to the right, so out1's buffer covers
 * x in [0, 60] while the user's array is [0, 60). */
static const char two_outputs[] =
    "pipeline two_out;\n"
    "input f32 in(64, 32);\n"
    "param f32 gain = 2.5;\n"
    "param i32 bias = -3;\n"
    "a(x, y) = in(x, y) * gain;\n"
    "out1(x, y) = a(x, y) + f32(bias);\n"
    "out2(x, y) = out1(x + 1, y) - out1(x, y);\n"
    "output out1(60, 32);\n"
    "output out2(60, 32);\n";

/* A 0-D output (a sum), read by a 0-D Func and by another output, and a
 * 1-element output beside them. */
static const char scalar_outputs[] =
    "pipeline scalar_out;\n"
    "input f32 in(300);\n"
    "rdom r(0, 300);\n"
    "total() = 0.0;\n"
    "total() += in(r) * in(r);\n"
    "scale() = 1.0 / sqrt(total() + 1.0);\n"
    "norm(x) = in(x) * scale();\n"
    "first(x) = norm(x) + total();\n"
    "output total();\n"
    "output norm(300);\n"
    "output first(1);\n";

static void run_case(const char *dir, const char *app, const target *t, bool all_cuda, bool gpu,
                     bool c_only)
{
    char err[4096], what[256];
    app_case ac;
    if (app_load(dir, app, true, 3, &ac, err, sizeof err) != 0) {
        check_report(false, "%s: %s", app, err);
        return;
    }
    for (int kind = 0; kind < 2; kind++) {
        ir_arena *arena = ir_arena_new();
        space_opts so = { t, false, false };
        sched_state *s = kind == 0 ? space_random(arena, ac.p, ac.b, &so, 1, err, sizeof err)
                                   : space_root(arena, ac.p, ac.b, t);
        lower_program *prog = s ? lower_schedule(arena, ac.p, ac.b, s, err, sizeof err) : NULL;
        const char *sname = kind == 0 ? "random1" : "root";
        if (!prog) {
            check_report(false, "%s/%s: %s", app, sname, err);
            ir_arena_free(arena);
            continue;
        }
        prog->schedule_text = "";
        snprintf(what, sizeof what, "%s/%s/c", app, sname);
        check_host(what, &ac, prog, CG_C, false);
        if (!c_only && (all_cuda || kind == 0)) {
            snprintf(what, sizeof what, "%s/%s/cuda", app, sname);
            check_host(what, &ac, prog, CG_CUDA, gpu);
        }
        ir_arena_free(arena);
    }
    app_free(&ac);
}

int main(void)
{
    char err[4096];
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sc_host_XXXXXX");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }
    target t;
    if (target_by_name("a100", NULL, &t, err, sizeof err) != 0) {
        check_report(false, "target a100: %s", err);
        return 1;
    }
    bool have_nvcc = system("command -v nvcc >/dev/null 2>&1") == 0;
    bool gpu = false;
    rt_device *cu = have_nvcc ? rt_cuda_ops.open(err, sizeof err) : NULL;
    if (cu) { gpu = rt_cuda_ops.can_run(cu); rt_cuda_ops.close(cu); }
    if (!have_nvcc) printf("PASS cuda host code (skipped: no nvcc on PATH)\n");

    /* the pipeline with two outputs, from a file of its own */
    char path[512];
    snprintf(path, sizeof path, "%s/two_out.pipe", tmpdir);
    if (write_text(path, two_outputs) != 0) check_report(false, "cannot write %s", path);
    run_case(tmpdir, "two_out", &t, true, gpu, !have_nvcc);
    snprintf(path, sizeof path, "%s/scalar_out.pipe", tmpdir);
    if (write_text(path, scalar_outputs) != 0) check_report(false, "cannot write %s", path);
    run_case(tmpdir, "scalar_out", &t, true, gpu, !have_nvcc);

    const char *cuda_apps = getenv("HOST_CUDA_APPS");
    if (!cuda_apps) cuda_apps = "harris,camera_pipe,iir_blur";
    char **names;
    int napps = apps_list("apps", &names, err, sizeof err);
    if (napps < 0) check_report(false, "%s", err);
    for (int i = 0; i < napps; i++)
        run_case("apps", names[i], &t, false, gpu, !have_nvcc || !apps_wanted(cuda_apps, names[i]));
    apps_free_names(names, napps);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmpdir);
    CHECK_EXIT();
}
