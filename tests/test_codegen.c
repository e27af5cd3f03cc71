/*
 * test_codegen.c - the code generators on kernel IR built by hand (so that
 * they are tested apart from lowering).  Each case builds a pipeline with
 * the C API and a lower_program for it, generates C, OpenCL and CUDA,
 * checks pieces of the text, runs the C through the system compiler and
 * dlopen against the reference evaluator (bit-exact, NaN equal to NaN, as
 * exec_compare's exact mode), and compiles the CUDA with nvcc and the OpenCL C with
 * clang where those are installed (skipped, with a note, where not).
 * SC_CODEGEN_KEEP=1 keeps the generated files (they are kept on failure).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "codegen.h"
#include "ir.h"
#include "lower.h"

static sc_pipeline *P;
static char tmpdir[256];

/* ---- expressions ------------------------------------------------------------ */

static sc_expr *V(const char *n) { return sc_var(P, n); }
static sc_expr *I(int64_t v) { return sc_int(P, v); }
static sc_expr *Bin(sc_binop op, sc_expr *a, sc_expr *b) { return sc_binary(P, op, a, b); }
static sc_expr *Cast(sc_type t, sc_expr *a) { return sc_cast(P, t, a); }
static sc_expr *Math(sc_mathfn fn, sc_expr *a, sc_expr *b)
{
    sc_expr *args[2] = {a, b};
    return sc_math(P, fn, b ? 2 : 1, args);
}
static sc_expr *Call1(sc_func *f, sc_expr *x) { return sc_call(P, f, 1, &x); }
static sc_expr *Call2(sc_func *f, sc_expr *x, sc_expr *y)
{
    sc_expr *args[2] = {x, y};
    return sc_call(P, f, 2, args);
}

static sc_func *def(const char *name, int ndims, const char **vars, sc_expr *value)
{
    sc_func *f = sc_func_new(P, name);
    CHECK(f && sc_define(P, f, ndims, vars, value) == 0);
    return f;
}

/* ---- kernel IR, by hand ---------------------------------------------------------- */

static void *A(size_t n) { return ir_alloc(P->arena, n); }

static kstmt *st(kstmt_kind kind)
{
    kstmt *s = A(sizeof *s);
    s->kind = kind;
    return s;
}

static kstmt *seq(int n, ...)
{
    kstmt *s = st(KS_SEQ);
    va_list ap;
    va_start(ap, n);
    s->items = A(sizeof(kstmt *) * (size_t)n);
    for (int i = 0; i < n; i++)
        s->items[s->n++] = va_arg(ap, kstmt *);
    va_end(ap);
    return s;
}

static kstmt *loop(const char *var, sc_expr *min, int64_t extent, bool unroll, kstmt *body)
{
    kstmt *s = st(KS_FOR);
    s->var = var;
    s->min = min;
    s->extent = extent;
    s->unroll = unroll;
    s->body = body;
    return s;
}

static kstmt *guard(sc_expr *cond, kstmt *body)
{
    kstmt *s = st(KS_IF);
    s->cond = cond;
    s->body = body;
    return s;
}

static kstmt *let(const char *var, sc_expr *value)
{
    kstmt *s = st(KS_LET);
    s->var = var;
    s->value = value;
    return s;
}

static kstmt *store(lower_alloc *a, sc_expr *x, sc_expr *y, sc_expr *value)
{
    kstmt *s = st(KS_STORE);
    s->alloc = a;
    s->coords[0] = x;
    s->coords[1] = y;
    s->value = value;
    return s;
}

static lower_alloc *alloc(const sc_func *f, lower_mem mem, const char *name,
                          sc_expr *min0, int64_t ext0, sc_expr *min1, int64_t ext1)
{
    lower_alloc *a = A(sizeof *a);
    a->func = f;
    a->mem = mem;
    a->name = name;
    a->ndims = f->ndims;
    a->min[0] = min0;
    a->min[1] = min1;
    a->extent[0] = ext0;
    a->extent[1] = ext1;
    a->stride[0] = 1;
    a->stride[1] = ext0;
    a->count = f->ndims == 2 ? ext0 * ext1 : ext0;
    return a;
}

static lower_kernel *kernel(const char *name, int64_t nblocks, int nthreads, const char *comment)
{
    lower_kernel *k = A(sizeof *k);
    k->name = name;
    k->nblocks = nblocks;
    k->nthreads = nthreads;
    k->comment = comment;
    k->storage = A(sizeof(lower_alloc *) * (size_t)P->funcs.n);
    k->args = A(sizeof(lower_alloc *) * (size_t)P->funcs.n);
    k->params = A(sizeof(sc_param *) * (size_t)(P->params.n + 1));
    k->phases = A(sizeof(kstmt *) * 8);
    k->shared = A(sizeof(lower_alloc *) * 8);
    k->block_setup = seq(0);
    return k;
}

static void karg(lower_kernel *k, lower_alloc *a)
{
    k->args[k->nargs++] = a;
    k->storage[a->func->id] = a;
}

static lower_program *program(int nkernels, lower_kernel **ks, const char *schedule)
{
    lower_program *prog = A(sizeof *prog);
    prog->p = P;
    prog->nkernels = nkernels;
    prog->kernels = A(sizeof(lower_kernel *) * (size_t)nkernels);
    memcpy(prog->kernels, ks, sizeof(lower_kernel *) * (size_t)nkernels);
    prog->schedule_text = schedule;
    return prog;
}

/* ---- running ------------------------------------------------------------------- */

static bool contains(const char *text, const char *piece)
{
    bool ok = text && strstr(text, piece);
    if (!ok)
        fprintf(stderr, "  generated text lacks \"%s\"\n", piece);
    return ok;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Runs a shell command; on failure prints its log. */
static int shell(const char *log, const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[2400];
    snprintf(full, sizeof full, "%s > '%s' 2>&1", cmd, log);
    int rc = system(full);
    if (rc != 0) {
        fprintf(stderr, "  command failed: %s\n", cmd);
        snprintf(full, sizeof full, "head -c 4000 '%s' >&2", log);
        if (system(full) != 0)
            fprintf(stderr, "  (no log)\n");
    }
    return rc;
}

static const char *find_tool(const char *env, const char *fallback, const char *name)
{
    const char *e = getenv(env);
    if (e && *e)
        return e;
    if (fallback && access(fallback, X_OK) == 0)
        return fallback;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s > /dev/null 2>&1", name);
    return system(cmd) == 0 ? name : NULL;
}

/* Generates all three back ends into tmpdir/tag.{c,cl,cu}, compiles the
 * CUDA and OpenCL where possible, and returns the C back end's shared
 * object (NULL on failure).  texts[] receives the sources (caller frees). */
static void *build(const lower_program *prog, const char *tag, char **texts, bool gpu)
{
    static const char *const ext[] = { [CG_C] = "c", [CG_OPENCL] = "cl", [CG_CUDA] = "cu" };
    char path[3][400], so[400], log[400];
    for (int b = CG_C; b <= CG_CUDA; b++) {
        texts[b] = cg_generate(prog, (cg_backend)b);
        CHECK(texts[b] != NULL);
        snprintf(path[b], sizeof path[b], "%s/%s.%s", tmpdir, tag, ext[b]);
        write_file(path[b], texts[b] ? texts[b] : "");
    }
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, tag);
    const char *nvcc = gpu ? find_tool("NVCC", "/usr/local/cuda/bin/nvcc", "nvcc") : NULL;
    if (!gpu)
        ;                           /* the CUDA text is not meant to compile */
    else if (nvcc)
        CHECK(shell(log, "%s -arch=sm_80 %s -cubin -o '%s/%s.cubin' '%s'",
                    nvcc, cg_required_options(CG_CUDA), tmpdir, tag, path[CG_CUDA]) == 0);
    else
        fprintf(stderr, "  note: no nvcc, CUDA text of %s not compiled\n", tag);
    const char *clang = find_tool("CLANG", NULL, "clang");
    if (clang)
        CHECK(shell(log, "%s -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -Wall "
                    "-Wextra -Werror -fsyntax-only '%s'", clang, path[CG_OPENCL]) == 0);
    else
        fprintf(stderr, "  note: no clang, OpenCL text of %s not checked\n", tag);
    const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
    snprintf(so, sizeof so, "%s/%s.so", tmpdir, tag);
    if (shell(log, "%s -std=c11 -O2 -fopenmp %s -Wall -Wextra -Werror -shared -fPIC -o '%s' "
              "'%s' -lm", cc, cg_required_options(CG_C), so, path[CG_C]) != 0) {
        CHECK(!"the generated C compiles");
        return NULL;
    }
    /* never unloaded: OpenMP's pooled threads outlive the library */
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h)
        fprintf(stderr, "  dlopen: %s\n", dlerror());
    CHECK(h != NULL);
    return h;
}

/* Buffers by allocation, for the kernel arguments. */
static const lower_alloc *bound_alloc[64];
static void *bound_data[64];
static int nbound;

static void bind(const lower_alloc *a, void *data)
{
    bound_alloc[nbound] = a;
    bound_data[nbound++] = data;
}

/* Launches kernel k of the C shared object, ABI of rt.h. */
static void run_kernel(void *so, const lower_kernel *k)
{
    void (*fn)(int64_t, int32_t, void **) = NULL;
    void *sym = dlsym(so, k->name);
    CHECK(sym != NULL);
    if (!sym)
        return;
    memcpy(&fn, &sym, sizeof fn);
    void *ptr[64], *argv[64];
    int32_t ival[16];
    float fval[16];
    for (int i = 0; i < k->nargs; i++) {
        ptr[i] = NULL;
        for (int j = 0; j < nbound; j++)
            if (bound_alloc[j] == k->args[i])
                ptr[i] = bound_data[j];
        CHECK(ptr[i] != NULL);
        argv[i] = &ptr[i];
    }
    for (int i = 0; i < k->nparams; i++) {
        const sc_param *q = k->params[i];
        ival[i] = (int32_t)q->value;
        fval[i] = (float)q->value;
        argv[k->nargs + i] = q->type == SC_F32 ? (void *)&fval[i] : (void *)&ival[i];
    }
    fn(k->nblocks, k->nthreads, argv);
}

/* Element-wise comparison: bit-identical (f32 -0 differs from +0), NaN
 * equal to NaN.  Reports the first few differences. */
static int compare(const char *what, const sc_buffer *ref, const sc_buffer *got)
{
    int bad = 0, c[SC_MAX_DIMS] = {0};
    for (int64_t i = 0; i < sc_buffer_count(ref); i++) {
        int64_t r = i;
        for (int d = 0; d < ref->ndims; d++) {
            c[d] = (int)(r % ref->extent[d]);
            r /= ref->extent[d];
        }
        double x = sc_buffer_get(ref, c), y = sc_buffer_get(got, c);
        bool ok = (isnan(x) && isnan(y)) || (x == y && signbit(x) == signbit(y));
        if (!ok && bad++ < 3)
            fprintf(stderr, "  %s at (%d, %d): reference %.9g, generated C %.9g\n", what,
                    c[0], ref->ndims > 1 ? c[1] : 0, x, y);
    }
    return bad;
}

static sc_expr *Add(sc_expr *a, sc_expr *b) { return Bin(SC_ADD, a, b); }
static sc_expr *Sub(sc_expr *a, sc_expr *b) { return Bin(SC_SUB, a, b); }
static sc_expr *Mul(sc_expr *a, sc_expr *b) { return Bin(SC_MUL, a, b); }
static sc_expr *Div(sc_expr *a, sc_expr *b) { return Bin(SC_DIV, a, b); }
static sc_expr *Mod(sc_expr *a, sc_expr *b) { return Bin(SC_MOD, a, b); }
static sc_expr *Lt(sc_expr *a, sc_expr *b) { return Bin(SC_LT, a, b); }

static void free_texts(char **texts)
{
    for (int b = 0; b < 3; b++)
        free(texts[b]);
}

/* ---- two kernels: a shared-memory producer phase, then a pointwise op -------- */

enum { W = 70, H = 5 };

static void test_two_kernels(void)
{
    static const char *XY[] = {"x", "y"};
    int ext[2] = {W, H};
    P = sc_pipeline_new("cgtest");
    sc_func *in = sc_input(P, "in", SC_U8, 2, ext);
    sc_param *kp = sc_param_new(P, "k", SC_I32, -3);
    sc_expr *x = V("x"), *y = V("y");
    /* f(x, y) = i32(in(clamp(x, 0, W-1), y)) * 3 - 200; f is at block level of g */
    sc_func *f = def("f", 2, XY, Sub(Mul(Cast(SC_I32, Call2(in, sc_clamp(P, x, I(0), I(W - 1)), y)),
                                         I(3)), I(200)));
    sc_func *g = def("g", 2, XY, Add(Add(Call2(f, Sub(x, I(1)), y), Mul(Call2(f, x, y), I(2))),
                                     Call2(f, Add(x, I(1)), y)));
    /* out: u8 wrap-around and Euclidean division by 7 and by k = -3 */
    sc_expr *gv = Call2(g, x, y), *k = sc_param_ref(P, kp);
    sc_func *out = def("out", 2, XY, Add(Add(Cast(SC_U8, Div(gv, I(7))), Mul(Call2(in, x, y), I(3))),
                                         Sub(Cast(SC_U8, Mod(gv, k)), Cast(SC_U8, Div(gv, k)))));
    CHECK(sc_output(P, g, 2, ext) == 0 && sc_output(P, out, 2, ext) == 0);
    CHECK(sc_pipeline_finalize(P) == 0);

    lower_alloc *in_g = alloc(in, MEM_GLOBAL, "in_g", I(0), W, I(0), H);
    lower_alloc *g_g = alloc(g, MEM_GLOBAL, "g_g", I(0), W, I(0), H);
    lower_alloc *out_g = alloc(out, MEM_GLOBAL, "out_g", I(0), W, I(0), H);

    /* kernel 1: blocks of 32 x 1 points of g; f over [x0 - 1, x0 + 33) in shared */
    lower_kernel *k1 = kernel("g_s0", 3 * H, 32, "g: root [x=32x1 y=1x1]; f at block level");
    k1->block_setup = seq(3, let("g_x0", Mul(Mod(V("bid"), I(3)), I(32))),
                          let("g_y0", Div(V("bid"), I(3))), let("f_x0", Sub(V("g_x0"), I(1))));
    lower_alloc *f_s = alloc(f, MEM_SHARED, "f_s", V("f_x0"), 34, V("g_y0"), 1);
    k1->shared[k1->nshared++] = f_s;
    karg(k1, g_g);
    karg(k1, in_g);
    k1->storage[f->id] = f_s;
    k1->phases[k1->nphases++] =
        loop("f_i", I(0), 2, true,
             seq(2, let("f_xi", Add(V("tid"), Mul(V("f_i"), I(32)))),
                 guard(Lt(V("f_xi"), I(34)),
                       seq(3, let("x", Add(V("f_x0"), V("f_xi"))), let("y", V("g_y0")),
                           store(f_s, x, y, f->stages[0].value)))));
    k1->phases[k1->nphases++] =
        seq(3, let("x", Add(V("g_x0"), V("tid"))), let("y", V("g_y0")),
            guard(Lt(x, I(W)), store(g_g, x, y, g->stages[0].value)));

    /* kernel 2: out pointwise, 64 threads per block over the flattened points */
    lower_kernel *k2 = kernel("out_s0", (W * H + 63) / 64, 64, "out: root [x=64x1 y=1x1]");
    karg(k2, out_g);
    karg(k2, g_g);
    karg(k2, in_g);
    k2->params[k2->nparams++] = kp;
    k2->phases[k2->nphases++] =
        seq(2, let("i", Add(Mul(V("bid"), I(64)), V("tid"))),
            guard(Lt(V("i"), I(W * H)),
                  seq(3, let("x", Mod(V("i"), I(W))), let("y", Div(V("i"), I(W))),
                      store(out_g, x, y, out->stages[0].value))));

    lower_kernel *ks[2] = {k1, k2};
    lower_program *prog = program(2, ks, "schedule cgtest;\nf: block of g [x=32 y=1];\n"
                                          "g: root [x=32x1 y=1x1];\nout: root [x=64x1 y=1x1];");
    char *t[3];
    void *so = build(prog, "two_kernels", t, true);

    CHECK(contains(t[CG_C], "schedule cgtest;"));
    CHECK(contains(t[CG_C], "g: root [x=32x1 y=1x1]; f at block level"));
    CHECK(contains(t[CG_C], "void g_s0(int64_t sc_nblocks, int32_t sc_nthreads, void **sc_args)"));
    CHECK(contains(t[CG_C], "#pragma omp parallel for schedule(dynamic)"));
    CHECK(contains(t[CG_C], "int32_t f_s[34];"));
    CHECK(contains(t[CG_C], "const uint8_t *restrict in_g = (const uint8_t *)*(void **)sc_args[1];"));
    CHECK(contains(t[CG_C], "for (int32_t tid = 0; tid < sc_nthreads; tid++) {"));
    CHECK(contains(t[CG_C], "#pragma GCC unroll 2"));
    CHECK(contains(t[CG_C], "sc_div_i32("));
    CHECK(contains(t[CG_C], "sc_mod_i32("));
    CHECK(contains(t[CG_C], "((uint8_t)("));
    CHECK(contains(t[CG_C], "const int32_t y = i / 70;"));       /* plain where exact */
    CHECK(contains(t[CG_CUDA], "extern \"C\" __global__ void __launch_bounds__(32)"));
    CHECK(contains(t[CG_CUDA], "__shared__ int32_t f_s[34];"));
    CHECK(contains(t[CG_CUDA], "__syncthreads();"));
    CHECK(contains(t[CG_CUDA], "const int32_t bid = (int32_t)blockIdx.x;"));
    CHECK(contains(t[CG_CUDA], "const uint8_t *__restrict__ in_g"));
    CHECK(contains(t[CG_CUDA], "#pragma unroll"));
    CHECK(contains(t[CG_OPENCL], "__kernel __attribute__((reqd_work_group_size(32, 1, 1)))"));
    CHECK(contains(t[CG_OPENCL], "__local int f_s[34];"));
    CHECK(contains(t[CG_OPENCL], "barrier(CLK_LOCAL_MEM_FENCE);"));
    CHECK(contains(t[CG_OPENCL], "const int tid = (int)get_local_id(0);"));
    CHECK(contains(t[CG_OPENCL], "__global const uchar *restrict in_g"));

    sc_buffer *inb = sc_buffer_new(SC_U8, 2, NULL, ext);
    sc_buffer *gb = sc_buffer_new(SC_I32, 2, NULL, ext);
    sc_buffer *ob = sc_buffer_new(SC_U8, 2, NULL, ext);
    sc_buffer *ref[2] = {NULL, NULL};
    sc_buffer_fill_random(inb, 7);
    CHECK(sc_evaluate(P, &inb, 0, ref) == 0);
    if (so && ref[0] && ref[1]) {
        nbound = 0;
        bind(in_g, inb->data);
        bind(g_g, gb->data);
        bind(out_g, ob->data);
        run_kernel(so, k1);
        run_kernel(so, k2);
        CHECK(compare("g", ref[0], gb) == 0);
        CHECK(compare("out", ref[1], ob) == 0);
    }
    if (so)
        dlclose(so);
    for (int i = 0; i < 2; i++)
        sc_buffer_free(ref[i]);
    sc_buffer_free(inb);
    sc_buffer_free(gb);
    sc_buffer_free(ob);
    free_texts(t);
    sc_pipeline_free(P);
}

/* ---- arithmetic semantics: one pointwise kernel per operation and type ---------- */

enum { N = 300, NT = 64 };

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void type_lohi(sc_type t, int64_t *lo, int64_t *hi)
{
    int bits = sc_type_bits(t);
    *lo = sc_type_is_signed(t) ? -((int64_t)1 << (bits - 1)) : 0;
    *hi = sc_type_is_signed(t) ? ((int64_t)1 << (bits - 1)) - 1 : ((int64_t)1 << bits) - 1;
}

/* role 0: first operands, 1: second operands (small divisors often),
 * 2: shift amounts.  The first 169 points pair 13 special values. */
static sc_buffer *int_input(sc_type t, int role)
{
    int n = N;
    sc_buffer *b = sc_buffer_new(t, 1, NULL, &n);
    int64_t lo, hi;
    type_lohi(t, &lo, &hi);
    int64_t spec[13] = {0, 1, -1, 2, -2, 7, -7, 100, -100, lo, hi, lo + 1, hi - 1};
    for (int i = 0; i < N; i++) {
        int64_t v = lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
        if (role == 2 && i % 16)
            v = sc_type_is_signed(t) ? (int64_t)(rnd() % 81) - 40 : (int64_t)(rnd() % 41);
        else if (role < 2 && i < 169)
            v = spec[role ? i / 13 : i % 13];
        else if (role == 1 && i % 2)
            v = (int64_t)(rnd() % 21) - 10;
        sc_buffer_set(b, &i, (double)v);
    }
    return b;
}

static sc_buffer *float_input(int role)
{
    static const double spec[] = {
        0, -0.0, 1, -1, 0.5, -0.5, 1.5, 2.5, -2.5, 255.5, 256, -128.5, 127.9, 32767.5,
        65535.5, 65536, 2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0,
        4294967040.0, 4294967296.0, 1e10, -1e10, INFINITY, -INFINITY, NAN, 1e-30, 3.14159, -7.25,
    };
    int n = N, ns = (int)(sizeof spec / sizeof *spec);
    sc_buffer *b = sc_buffer_new(SC_F32, 1, NULL, &n);
    for (int i = 0; i < N; i++) {
        double u = (double)(rnd() % 2000001) / 1000.0 - 1000.0;   /* [-1000, 1000] */
        double v = i < ns ? spec[role ? (i * 7 + 3) % ns : i] : role ? u / 10 : u * (i % 3 ? 1 : 100);
        sc_buffer_set(b, &i, v);
    }
    return b;
}

static sc_func *outs[256];
static int nouts;

static void out1(const char *fmt, int a, sc_expr *value)
{
    static const char *X[] = {"x"};
    char name[64];
    int n = N;
    snprintf(name, sizeof name, fmt, a);
    sc_func *f = def(name, 1, X, value);
    CHECK(f && sc_output(P, f, 1, &n) == 0);
    if (f && nouts < 256)
        outs[nouts++] = f;
}

static void note_input(const sc_expr *e, void *user)
{
    lower_kernel *k = user;
    if (e->kind == E_CALL && k->storage[e->func->id] && k->storage[e->func->id]->mem == MEM_GLOBAL) {
        for (int i = 0; i < k->nargs; i++)
            if (k->args[i] == k->storage[e->func->id])
                return;
        k->args[k->nargs++] = k->storage[e->func->id];
    }
}

/* A pointwise kernel computing the 1-D Func f over [0, n) (variable x). */
static lower_kernel *pointwise(sc_func *f, int n, lower_alloc **global, const char *var)
{
    char *name = A(strlen(f->name) + 4);
    sprintf(name, "%s_s0", f->name);
    lower_kernel *k = kernel(name, (n + NT - 1) / NT, NT, "pointwise");
    lower_alloc *dst = global[f->id];
    for (int i = 0; i < P->funcs.n; i++)
        k->storage[i] = global[i];
    k->args[k->nargs++] = dst;
    ir_visit(f->stages[0].value, note_input, k);
    for (int i = 0; i < P->params.n; i++)
        k->params[k->nparams++] = P->params.items[i];
    k->phases[k->nphases++] =
        seq(2, let(var, Add(Mul(V("bid"), I(NT)), V("tid"))),
            guard(Lt(V(var), I(n)), store(dst, V(var), NULL, f->stages[0].value)));
    return k;
}

static void test_semantics(void)
{
    static const sc_type it[] = {SC_U8, SC_U16, SC_U32, SC_I8, SC_I16, SC_I32};
    static const sc_binop ops[] = {SC_ADD, SC_SUB, SC_MUL, SC_DIV, SC_MOD, SC_MIN, SC_MAX,
                                   SC_BITAND, SC_BITOR, SC_BITXOR};
    int n = N;
    sc_buffer *inbuf[32];
    int nin = 0;
    P = sc_pipeline_new("semantics");
    nouts = 0;
    sc_func *fa = sc_input(P, "fa", SC_F32, 1, &n), *fb = sc_input(P, "fb", SC_F32, 1, &n);
    inbuf[nin++] = float_input(0);
    inbuf[nin++] = float_input(1);
    sc_expr *x = V("x"), *F = Call1(fa, x), *G = Call1(fb, x);
    for (int ti = 0; ti < 6; ti++) {
        sc_type t = it[ti];
        char nm[3][16];
        for (int r = 0; r < 3; r++)
            snprintf(nm[r], sizeof nm[r], "%c_%s", "abs"[r], sc_type_name(t));
        sc_func *ia = sc_input(P, nm[0], t, 1, &n), *ib = sc_input(P, nm[1], t, 1, &n);
        sc_func *is = sc_input(P, nm[2], t, 1, &n);
        for (int r = 0; r < 3; r++)
            inbuf[nin++] = int_input(t, r);
        sc_expr *a = Call1(ia, x), *b = Call1(ib, x), *s = Call1(is, x);
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
            char name[32];
            snprintf(name, sizeof name, "%s_op%%d", sc_type_name(t));
            out1(name, (int)o, Bin(ops[o], a, b));
        }
        char pre[16];
        snprintf(pre, sizeof pre, "%s_", sc_type_name(t));
        char fmt[48];
#define OUT(suffix, e) (snprintf(fmt, sizeof fmt, "%s%s%%d", pre, suffix), out1(fmt, 0, (e)))
        OUT("shl", Bin(SC_SHL, a, s));
        OUT("shr", Bin(SC_SHR, a, s));
        OUT("neg", sc_unary(P, SC_NEG, a));
        OUT("not", sc_unary(P, SC_BITNOT, a));
        OUT("abs", Math(SC_ABS, a, NULL));
        OUT("f32", Cast(SC_F32, a));
        OUT("sel", sc_select(P, Bin(SC_OR, Lt(a, b), sc_unary(P, SC_NOT, Bin(SC_NE, a, s))), a, b));
        OUT("fromf", Cast(t, F));
        OUT("fromf_big", Cast(t, Mul(F, sc_float(P, 1e6))));
        OUT("minc", Bin(SC_MAX, Mul(a, sc_const(P, t, -1)), sc_const(P, t, (double)INT32_MIN)));
        /* by powers of two: a shift and a mask where a may be negative */
        OUT("div32", Div(a, sc_const(P, t, 32)));
        OUT("div2", Div(a, sc_const(P, t, 2)));
        OUT("mod8", Mod(a, sc_const(P, t, 8)));
        for (int u = 0; u < 6; u++)
            if (it[u] != t) {
                snprintf(fmt, sizeof fmt, "%sto_%s%%d", pre, sc_type_name(it[u]));
                out1(fmt, 0, Cast(it[u], a));
            }
#undef OUT
    }
    static const sc_binop fops[] = {SC_ADD, SC_SUB, SC_MUL, SC_DIV, SC_MOD, SC_MIN, SC_MAX};
    for (size_t o = 0; o < sizeof fops / sizeof *fops; o++)
        out1("f32_op%d", (int)o, Bin(fops[o], F, G));
    for (int m = SC_SQRT; m <= SC_ABS; m++)
        out1("f32_math%d", m, Math((sc_mathfn)m, F, m == SC_POW || m == SC_ATAN2 ? G : NULL));
    out1("f32_neg%d", 0, sc_unary(P, SC_NEG, F));
    out1("f32_sel%d", 0, sc_select(P, Bin(SC_LE, F, G), F, Add(G, sc_float(P, 0.1))));
    /* constants folded by the code generator (as the evaluator computes them) */
    sc_expr *k2 = sc_float(P, 2), *k3 = sc_float(P, 0.7);
    sc_expr *fc = Add(Mul(Math(SC_SQRT, k2, NULL), Math(SC_EXP, sc_float(P, 0.5), NULL)),
                      Mod(Math(SC_POW, sc_float(P, 1.5), sc_float(P, 2.5)), k3));
    fc = Add(fc, Add(Math(SC_ATAN2, sc_float(P, 1), sc_float(P, -2)), Math(SC_TANH, k3, NULL)));
    fc = Sub(fc, Add(Math(SC_ROUND, sc_float(P, 2.5), NULL), Math(SC_LOG, sc_float(P, 3), NULL)));
    out1("fold_f%d", 0, Sub(F, Mul(fc, Cast(SC_F32, Div(sc_const(P, SC_I32, -7), sc_const(P, SC_I32, 2))))));
    sc_expr *ia = Call1(sc_func_lookup(P, "a_i32"), x);
    sc_expr *ic = Add(Mul(Div(sc_const(P, SC_I32, -7), sc_const(P, SC_I32, 2)), I(3)),
                      Mod(sc_const(P, SC_I32, -7), sc_const(P, SC_I32, 3)));
    ic = Add(ic, sc_select(P, Lt(x, I(1000)), I(5), I(6)));
    ic = Add(ic, Cast(SC_I32, Math(SC_SQRT, sc_float(P, 1e10), NULL)));
    out1("fold_i%d", 0, Add(Sub(ia, ic), Mul(Mod(x, I(7)), sc_select(P, Lt(ia, I(0)), I(-1), I(1)))));
    /* a DAG whose tree has 2^18 leaves (the IR visits trees, not DAGs) */
    sc_expr *v = Cast(SC_F32, Call1(sc_func_lookup(P, "a_u8"), x));
    for (int i = 0; i < 18; i++)
        v = Add(Mul(v, sc_float(P, 0.5)), Mul(v, sc_float(P, 0.4375)));
    out1("deep%d", 0, v);
    CHECK(sc_error_count(P) == 0);
    for (int i = 0; i < sc_error_count(P) && i < 5; i++)
        fprintf(stderr, "  %s\n", sc_error_message(P, i));
    CHECK(sc_pipeline_finalize(P) == 0);

    lower_alloc **global = A(sizeof(lower_alloc *) * (size_t)P->funcs.n);
    for (int i = 0; i < P->funcs.n; i++) {
        sc_func *f = P->funcs.items[i];
        char *name = A(strlen(f->name) + 3);
        sprintf(name, "%s_g", f->name);
        global[i] = alloc(f, MEM_GLOBAL, name, I(0), N, NULL, 1);
    }
    lower_kernel **ks = A(sizeof(lower_kernel *) * (size_t)nouts);
    for (int i = 0; i < nouts; i++)
        ks[i] = pointwise(outs[i], N, global, "x");
    lower_program *prog = program(nouts, ks, "schedule semantics;");
    char *t[3];
    void *so = build(prog, "semantics", t, true);
    CHECK(contains(t[CG_C], "(-2147483647-1)"));
    CHECK(contains(t[CG_C], "sc_shl_u8("));
    CHECK(contains(t[CG_C], "sc_f32_to_i32("));
    /* one expression, no branches (generation 21), in every back end */
    for (int b = 0; b < 3; b++)
        CHECK(t[b] && contains(t[b], "sc_f32_to_i32(float x)\n{\n    return x != x ? ") && !contains(t[b], "if (x != x)"));
    CHECK(contains(t[CG_C], "sc_mod_f32("));
    CHECK(contains(t[CG_C], "((int32_t)((uint32_t)"));
    CHECK(contains(t[CG_OPENCL], "static inline char sc_div_i8(char a, char b)"));
    CHECK(contains(t[CG_C], "i16_div320_g[x] = ((int16_t)((a_i16_g[x]) >> 5));"));
    CHECK(contains(t[CG_OPENCL], "i32_mod80_g[x] = ((int)((a_i32_g[x]) & 7));"));
    CHECK(contains(t[CG_CUDA], "typedef unsigned char uint8_t;"));
    CHECK(t[CG_C] && strlen(t[CG_C]) < 400000);               /* shared subexpressions */

    sc_buffer **ref = calloc((size_t)nouts, sizeof *ref);
    CHECK(sc_evaluate(P, inbuf, 0, ref) == 0);
    if (so && ref[0]) {
        nbound = 0;
        for (int i = 0; i < nin; i++)
            bind(global[((sc_func *)P->inputs.items[i])->id], inbuf[i]->data);
        for (int i = 0; i < nouts; i++) {
            sc_buffer *got = sc_buffer_new(outs[i]->type, 1, NULL, &n);
            bind(global[outs[i]->id], got->data);
            run_kernel(so, ks[i]);
            CHECK(compare(outs[i]->name, ref[i], got) == 0);
            nbound--;
            sc_buffer_free(got);
        }
    }
    if (so)
        dlclose(so);
    for (int i = 0; i < nouts; i++)
        sc_buffer_free(ref[i]);
    free(ref);
    for (int i = 0; i < nin; i++)
        sc_buffer_free(inbuf[i]);
    free_texts(t);
    sc_pipeline_free(P);
}

/* ---- a 0-D Func: one element, in global memory and in shared memory ----------- */

enum { SN = 90 };

/* total() = 0; total() += in(r) over [0, SN); out(x) = in(x) * 2 - total().
 * Kernel 1 computes total at root (one block of one thread, a global
 * buffer of one element, stored with no coordinates); kernel 2 computes it
 * again at block level of out (a shared array of one element, written by
 * thread 0, then read by every thread after the barrier). */
static void test_scalar(void)
{
    static const char *X[] = {"x"};
    int ext[1] = {SN}, zero = 0;
    P = sc_pipeline_new("cgscalar");
    sc_func *in = sc_input(P, "in", SC_I32, 1, ext);
    sc_rdom *r = sc_rdom_new(P, "r", 1, &zero, ext);
    sc_func *total = sc_func_new(P, "total");
    CHECK(sc_define(P, total, 0, NULL, I(0)) == 0);
    CHECK(sc_update(P, total, 0, NULL, Add(sc_call(P, total, 0, NULL), Call1(in, sc_rvar(P, r, 0)))) == 0);
    sc_func *out = def("out", 1, X, Sub(Mul(Call1(in, V("x")), I(2)), sc_call(P, total, 0, NULL)));
    CHECK(sc_output(P, out, 1, ext) == 0 && sc_output(P, total, 0, NULL) == 0);
    CHECK(sc_pipeline_finalize(P) == 0);

    lower_alloc *in_g = alloc(in, MEM_GLOBAL, "in_g", I(0), SN, NULL, 0);
    lower_alloc *t_g = alloc(total, MEM_GLOBAL, "total_g", NULL, 1, NULL, 0);
    lower_alloc *out_g = alloc(out, MEM_GLOBAL, "out_g", I(0), SN, NULL, 0);
    sc_expr *tv = sc_call(P, total, 0, NULL);
    kstmt *sum = seq(2, store(t_g, NULL, NULL, I(0)),
                     loop("r_x", I(0), SN, false, store(t_g, NULL, NULL, Add(tv, Call1(in, V("r_x"))))));
    lower_kernel *k1 = kernel("total_root", 1, 1, "total: root [] []");
    karg(k1, t_g);
    karg(k1, in_g);
    k1->phases[k1->nphases++] = sum;

    lower_kernel *k2 = kernel("out_s0", (SN + 31) / 32, 32, "out: root [x=32x1]; total at block level");
    lower_alloc *t_s = alloc(total, MEM_SHARED, "total_s", NULL, 1, NULL, 0);
    k2->shared[k2->nshared++] = t_s;
    karg(k2, out_g);
    karg(k2, in_g);
    k2->storage[total->id] = t_s;
    k2->phases[k2->nphases++] =
        guard(Bin(SC_EQ, V("tid"), I(0)),
              seq(2, store(t_s, NULL, NULL, I(0)),
                  loop("r_x", I(0), SN, false, store(t_s, NULL, NULL, Add(tv, Call1(in, V("r_x")))))));
    k2->phases[k2->nphases++] =
        seq(2, let("x", Add(Mul(V("bid"), I(32)), V("tid"))),
            guard(Lt(V("x"), I(SN)), store(out_g, V("x"), NULL, out->stages[0].value)));

    lower_kernel *ks[2] = {k1, k2};
    lower_program *prog = program(2, ks, "schedule cgscalar;\nout: root [x=32x1];\ntotal: root [] [];");
    char *t[3];
    void *so = build(prog, "scalar", t, true);
    CHECK(contains(t[CG_C], "int32_t total_s[1];"));
    CHECK(contains(t[CG_CUDA], "__shared__ int32_t total_s[1];"));
    CHECK(contains(t[CG_OPENCL], "__local int total_s[1];"));
    CHECK(contains(t[CG_C], "total_g[0] = 0;"));

    sc_buffer *inb = sc_buffer_new(SC_I32, 1, NULL, ext);
    int one = 1;
    sc_buffer *tb = sc_buffer_new(SC_I32, 1, NULL, &one), *ob = sc_buffer_new(SC_I32, 1, NULL, ext);
    sc_buffer *ref[2] = {NULL, NULL};
    sc_buffer_fill_random(inb, 11);
    CHECK(sc_evaluate(P, &inb, 0, ref) == 0);
    if (so && ref[0] && ref[1]) {
        nbound = 0;
        bind(in_g, inb->data);
        bind(t_g, tb->data);
        bind(out_g, ob->data);
        run_kernel(so, k1);
        run_kernel(so, k2);
        CHECK(compare("total", ref[1], tb) == 0);
        CHECK(compare("out", ref[0], ob) == 0);
    }
    if (so)
        dlclose(so);
    for (int i = 0; i < 2; i++)
        sc_buffer_free(ref[i]);
    sc_buffer_free(inb);
    sc_buffer_free(tb);
    sc_buffer_free(ob);
    free_texts(t);
    sc_pipeline_free(P);
}

/* ---- names that are keywords in one of the languages ------------------------------ */

static void test_names(void)
{
    static const char *X[] = {"float"};
    int n = 100;
    P = sc_pipeline_new("names");
    sc_func *in = sc_input(P, "kernel", SC_U8, 1, &n);
    sc_param *q = sc_param_new(P, "int", SC_U8, 200);
    sc_func *f = def("local", 1, X, Add(Call1(in, V("float")), Cast(SC_U8, sc_param_ref(P, q))));
    CHECK(f && sc_output(P, f, 1, &n) == 0);
    CHECK(sc_pipeline_finalize(P) == 0);
    lower_alloc *global[2] = {alloc(in, MEM_GLOBAL, "kernel", I(0), n, NULL, 1),
                              alloc(f, MEM_GLOBAL, "local", I(0), n, NULL, 1)};
    CHECK(in->id == 0 && f->id == 1);
    lower_kernel *k = pointwise(f, n, global, "float");
    k->name = "sc_float";
    lower_program *prog = program(1, &k, NULL);
    char *t[3];
    void *so = build(prog, "names", t, true);
    CHECK(contains(t[CG_C], "void sc_float_(int64_t"));
    CHECK(contains(t[CG_C], "local_[float_] = "));
    CHECK(contains(t[CG_OPENCL], "__global const uchar *restrict kernel_"));
    CHECK(contains(t[CG_CUDA], "((uint8_t)int_)"));
    sc_buffer *inb = sc_buffer_new(SC_U8, 1, NULL, &n), *ob = sc_buffer_new(SC_U8, 1, NULL, &n);
    sc_buffer *ref = NULL;
    sc_buffer_fill_random(inb, 3);
    CHECK(sc_evaluate(P, &inb, 0, &ref) == 0);
    if (so && ref) {
        k->name = "sc_float_";
        nbound = 0;
        bind(global[0], inb->data);
        bind(global[1], ob->data);
        run_kernel(so, k);
        CHECK(compare("local", ref, ob) == 0);
    }
    if (so)
        dlclose(so);
    sc_buffer_free(ref);
    sc_buffer_free(inb);
    sc_buffer_free(ob);
    free_texts(t);
    sc_pipeline_free(P);
}

/* ---- a shared array too big for the C stack (and for CUDA's static shared) ---- */

static void test_big_shared(void)
{
    static const char *X[] = {"x"};
    enum { M = 20480, T = 64 };
    int n = M;
    P = sc_pipeline_new("big");
    sc_func *in = sc_input(P, "in", SC_U16, 1, &n);
    sc_func *f = def("f", 1, X, Mul(Cast(SC_I32, Call1(in, V("x"))), I(3)));
    sc_func *out = def("out", 1, X, Sub(Call1(f, V("x")), I(1)));
    CHECK(sc_output(P, out, 1, &n) == 0);
    CHECK(sc_pipeline_finalize(P) == 0);
    lower_alloc *in_g = alloc(in, MEM_GLOBAL, "in_g", I(0), M, NULL, 1);
    lower_alloc *out_g = alloc(out, MEM_GLOBAL, "out_g", I(0), M, NULL, 1);
    lower_alloc *f_s = alloc(f, MEM_SHARED, "f_s", I(0), M, NULL, 1);
    lower_kernel *k = kernel("out_s0", 1, T, "out: root; f at block level");
    karg(k, out_g);
    karg(k, in_g);
    k->storage[f->id] = f_s;
    k->shared[k->nshared++] = f_s;
    k->phases[k->nphases++] = loop("j", I(0), M / T, false,
        seq(2, let("x", Add(V("tid"), Mul(V("j"), I(T)))), store(f_s, V("x"), NULL, f->stages[0].value)));
    k->phases[k->nphases++] = loop("j", I(0), M / T, false,
        seq(2, let("x", Add(V("tid"), Mul(V("j"), I(T)))), store(out_g, V("x"), NULL, out->stages[0].value)));
    lower_program *prog = program(1, &k, NULL);
    char *t[3];
    void *so = build(prog, "big_shared", t, false);
    CHECK(contains(t[CG_C], "int32_t *f_s = (int32_t *)malloc(sizeof(int32_t) * 20480);"));
    CHECK(contains(t[CG_C], "#pragma omp for schedule(dynamic)"));
    CHECK(contains(t[CG_C], "free(f_s);"));
    CHECK(contains(t[CG_CUDA], "__shared__ int32_t f_s[20480];"));
    sc_buffer *inb = sc_buffer_new(SC_U16, 1, NULL, &n), *ob = sc_buffer_new(SC_I32, 1, NULL, &n);
    sc_buffer *ref = NULL;
    sc_buffer_fill_random(inb, 5);
    CHECK(sc_evaluate(P, &inb, 0, &ref) == 0);
    if (so && ref) {
        nbound = 0;
        bind(in_g, inb->data);
        bind(out_g, ob->data);
        run_kernel(so, k);
        CHECK(compare("out", ref, ob) == 0);
    }
    if (so)
        dlclose(so);
    sc_buffer_free(ref);
    sc_buffer_free(inb);
    sc_buffer_free(ob);
    free_texts(t);
    sc_pipeline_free(P);
}

static void test_backend_names(void)
{
    cg_backend b;
    CHECK(cg_backend_parse("opencl", &b) == 0 && b == CG_OPENCL);
    CHECK(cg_backend_parse("cuda", &b) == 0 && b == CG_CUDA);
    CHECK(cg_backend_parse("c", &b) == 0 && b == CG_C);
    CHECK(cg_backend_parse("metal", &b) == -1);
    CHECK(!strcmp(cg_backend_name(CG_OPENCL), "opencl"));
}

int main(void)
{
    const char *base = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/sc_codegen_XXXXXX", base);
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_backend_names);
    RUN(test_two_kernels);
    RUN(test_scalar);
    RUN(test_semantics);
    RUN(test_names);
    RUN(test_big_shared);
    char cmd[400];
    if (check_total_fail_ || getenv("SC_CODEGEN_KEEP")) {
        fprintf(stderr, "generated files kept in %s\n", tmpdir);
    } else {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    CHECK_EXIT();
}
