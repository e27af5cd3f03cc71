/*
 * target.c - reading, naming and printing GPU targets (target.h).
 *
 * A target file is `key = value` lines; '#' starts a comment that runs to
 * the end of the line.  Every key of the table below is required except
 * `name`, which defaults to the file's base name (a100.target -> "a100"),
 * and `kind` (gpu or cpu; target.h says what it is when absent).
 * Integer keys take positive decimal integers (shared_mem_reserved_per_block
 * may be 0), the two rates positive
 * numbers, cuda_arch a word such as sm_80 (empty for a GPU that is not a
 * CUDA GPU).  Errors name FILE:LINE and what was expected; nothing here
 * exits.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rt.h"
#include "target.h"

typedef enum { K_STR, K_INT, K_INT0, K_DBL, K_KIND, K_DIMS } key_type;

typedef struct {
    const char *key;
    key_type type;
    size_t offset;
    size_t size;        /* K_STR: buffer size */
    bool optional;      /* `name`, `max_threads_per_dim` and `kind` */
} key_info;

#define KS(k) { #k, K_STR, offsetof(target, k), sizeof(((target *)0)->k), false }
#define KI(k) { #k, K_INT, offsetof(target, k), sizeof(int), false }
#define KZ(k) { #k, K_INT0, offsetof(target, k), sizeof(int), false }
#define KD(k) { #k, K_DBL, offsetof(target, k), sizeof(double), false }

/* In the order target_print writes them. */
static const key_info keys[] = {
    { "name", K_STR, offsetof(target, name), sizeof(((target *)0)->name), true },
    KI(sm_count), KI(warp_size), KI(max_threads_per_block), KI(max_threads_per_sm),
    KI(shared_mem_per_block), KI(shared_mem_per_sm), KI(registers_per_sm),
    KI(registers_per_thread), KI(max_blocks_per_sm), KD(mem_bandwidth_gbs),
    KD(peak_gflops), KI(l2_bytes), KS(cuda_arch), KI(reg_alloc_unit),
    KI(warp_alloc_granularity), KI(shared_mem_alloc_unit), KZ(shared_mem_reserved_per_block),
    { "max_threads_per_dim", K_DIMS, offsetof(target, max_threads_per_dim), sizeof(int[3]), true },
    { "kind", K_KIND, offsetof(target, cpu), sizeof(bool), true },
};
#define NKEYS ((int)(sizeof keys / sizeof keys[0]))
#define KEY_KIND (NKEYS - 1)   /* `kind` is last */

static void key_list(char *buf, size_t len) {
    buf[0] = 0;
    for (int i = 0; i < NKEYS; i++) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, "%s%s", i ? " " : "", keys[i].key);
    }
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
    return s;
}

/* A word: letters, digits, '_', '-', '.'; the empty word is allowed. */
static bool is_word(const char *s) {
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.') return false;
    return true;
}

/* The value of one key into t; 0, or -1 with err (no FILE:LINE prefix). */
static int set_value(const key_info *k, const char *v, target *t, char *err, size_t errlen) {
    char *p = (char *)t + k->offset;
    if (k->type == K_KIND) {
        if (strcmp(v, "gpu") && strcmp(v, "cpu")) {
            snprintf(err, errlen, "expected gpu or cpu for kind, got '%s'", v);
            return -1;
        }
        *(bool *)(void *)p = !strcmp(v, "cpu");
        return 0;
    }
    if (k->type == K_DIMS) {
        int d[3];
        const char *q = v;
        for (int i = 0; i < 3; i++) {
            char *end;
            errno = 0;
            long long x = isdigit((unsigned char)*q) ? strtoll(q, &end, 10) : 0;
            if (!isdigit((unsigned char)*q) || errno || x < 1 || x > INT_MAX || *end != (i < 2 ? ',' : 0)) {
                snprintf(err, errlen, "expected three positive integers X,Y,Z for %s, got '%s'", k->key, v);
                return -1;
            }
            d[i] = (int)x;
            q = end + 1;
        }
        memcpy(p, d, sizeof d);
        return 0;
    }
    if (k->type == K_STR) {
        if (strlen(v) >= k->size || !is_word(v)) {
            snprintf(err, errlen, "expected a word of at most %zu letters, digits, '_', '-' or '.' for %s, got '%s'",
                     k->size - 1, k->key, v);
            return -1;
        }
        if (!strcmp(k->key, "name") && !*v) {
            snprintf(err, errlen, "expected a name for name, got nothing");
            return -1;
        }
        memcpy(p, v, strlen(v) + 1);
        return 0;
    }
    char *end;
    errno = 0;
    if (k->type == K_INT || k->type == K_INT0) {
        long long x = isdigit((unsigned char)*v) ? strtoll(v, &end, 10) : 0;
        long long lo = k->type == K_INT ? 1 : 0;
        if (!isdigit((unsigned char)*v) || *end || errno || x < lo || x > INT_MAX) {
            snprintf(err, errlen, "expected a %s integer for %s, got '%s'",
                     lo ? "positive" : "non-negative", k->key, v);
            return -1;
        }
        int xi = (int)x;
        memcpy(p, &xi, sizeof xi);
        return 0;
    }
    double x = (isdigit((unsigned char)*v) || *v == '.') ? strtod(v, &end) : 0;
    if (!(isdigit((unsigned char)*v) || *v == '.') || *end || errno || !(x > 0) || !isfinite(x)) {
        snprintf(err, errlen, "expected a positive number for %s, got '%s'", k->key, v);
        return -1;
    }
    memcpy(p, &x, sizeof x);
    return 0;
}

/* Limits that must hold between keys, so a target never says that a
 * block may hold more than an SM. */
static int consistent(const target *t, char *err, size_t errlen) {
#define LE(a, b) if (t->a > t->b) { \
        snprintf(err, errlen, "%s (%d) is larger than %s (%d)", #a, t->a, #b, t->b); return -1; }
    LE(warp_size, max_threads_per_block)
    LE(max_threads_per_block, max_threads_per_sm)
    LE(shared_mem_per_block, shared_mem_per_sm)
    LE(registers_per_thread, registers_per_sm)
    LE(reg_alloc_unit, registers_per_sm)
    LE(shared_mem_reserved_per_block, shared_mem_per_sm)
#undef LE
    return 0;
}

bool target_group_dims(const int *threads, int n, int64_t dims[3]) {
    int j = 0;
    bool merged = false;
    dims[0] = dims[1] = dims[2] = 1;
    for (int k = 0; k < n; k++) {
        if (threads[k] <= 1) continue;
        merged |= j == 3;
        dims[j < 3 ? j++ : 2] *= threads[k];
    }
    return merged;
}

int target_dim_over(const target *t, const int64_t dims[3]) {
    for (int i = 0; i < 3; i++)
        if (t->max_threads_per_dim[i] > 0 && dims[i] > t->max_threads_per_dim[i]) return i;
    return -1;
}

/* The file's base name without ".target". */
static void base_name(const char *path, char *out, size_t len) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 7 && !strcmp(b + n - 7, ".target")) n -= 7;
    if (n >= len) n = len - 1;
    memcpy(out, b, n);
    out[n] = 0;
}

/* Reads target lines from f (closed here); path names it in messages. */
static int read_target(FILE *f, const char *path, target *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    int set_on[NKEYS] = {0};   /* line where each key was set, 0 = not yet */
    char line[1024];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f)) {
            snprintf(err, errlen, "%s:%d: line too long (at most %zu characters)", path, lineno,
                     sizeof line - 2);
            rc = -1;
            break;
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *s = trim(line);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected 'key = value', got '%s'", path, lineno, s);
            rc = -1;
            break;
        }
        *eq = 0;
        char *key = trim(s), *val = trim(eq + 1);
        int k = -1;
        for (int i = 0; i < NKEYS; i++) if (!strcmp(keys[i].key, key)) k = i;
        if (k < 0) {
            char list[512];
            key_list(list, sizeof list);
            snprintf(err, errlen, "%s:%d: unknown key '%s' (expected one of %s)", path, lineno, key, list);
            rc = -1;
            break;
        }
        if (set_on[k]) {
            snprintf(err, errlen, "%s:%d: duplicate key %s (first set on line %d)", path, lineno, key,
                     set_on[k]);
            rc = -1;
            break;
        }
        char msg[400];
        if (set_value(&keys[k], val, t, msg, sizeof msg) < 0) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
            rc = -1;
            break;
        }
        set_on[k] = lineno;
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        rc = -1;
    }
    fclose(f);
    if (rc) return rc;
    for (int i = 0; i < NKEYS; i++)
        if (!set_on[i] && !keys[i].optional) {
            snprintf(err, errlen, "%s: missing key %s", path, keys[i].key);
            return -1;
        }
    if (!set_on[0]) base_name(path, t->name, sizeof t->name);
    /* a host-opencl text from before `kind`: fill_from_opencl gave CPUs
     * (and only them) one block per SM and allocation units of 1 */
    if (!set_on[KEY_KIND])
        t->cpu = !strcmp(t->name, "host-opencl") && t->max_blocks_per_sm == 1 && t->reg_alloc_unit == 1 &&
                 t->warp_alloc_granularity == 1 && t->shared_mem_alloc_unit == 1;
    char msg[300];
    if (consistent(t, msg, sizeof msg) < 0) {
        snprintf(err, errlen, "%s: %s", path, msg);
        return -1;
    }
    return 0;
}

int target_load(const char *path, target *t, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    return read_target(f, path, t, err, errlen);
}

int target_parse(const char *what, const char *text, target *t, char *err, size_t errlen) {
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read the target text: %s", what, strerror(errno));
        return -1;
    }
    return read_target(f, what, t, err, errlen);
}

/* ---- host-opencl ---------------------------------------------------------- */

static int clamp_int(int64_t v, int fallback) {
    if (v <= 0) return fallback;
    return v > INT_MAX ? INT_MAX : (int)v;
}

/* Fills a target from what the OpenCL device reports.  OpenCL does not
 * report threads or registers per compute unit, blocks per compute unit,
 * bandwidth or FLOP/s; those are estimates, documented in
 * docs/schedule.md: a GPU gets NVIDIA-like per-SM limits (2 work-groups of
 * the maximum size, 65536 registers of which 255 per thread, 32
 * work-groups; registers in units of 256 per warp over 4 warp schedulers,
 * shared memory in units of 128 bytes), a CPU one work-group per compute
 * unit at a time (as PoCL's
 * pthread device runs them); peak FLOP/s = compute units x clock x 2 (FMA)
 * x lanes (64 per GPU compute unit, the float vector width on a CPU); the
 * bandwidth is a nominal 500 GB/s for a GPU and 50 GB/s for a CPU. */
static void fill_from_opencl(const rt_device_limits *l, target *t) {
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "host-opencl");
    t->sm_count = clamp_int(l->compute_units, 1);
    t->max_threads_per_block = clamp_int(l->max_work_group_size, 1);
    t->warp_size = clamp_int(l->simd_width, 32);
    if (t->warp_size > t->max_threads_per_block) t->warp_size = t->max_threads_per_block;
    t->max_threads_per_sm = l->is_gpu ? clamp_int(2 * (int64_t)t->max_threads_per_block, 1)
                                      : t->max_threads_per_block;
    t->shared_mem_per_block = clamp_int(l->local_mem_bytes, 16384);
    t->shared_mem_per_sm = t->shared_mem_per_block;
    t->registers_per_sm = 65536;
    t->registers_per_thread = 255;
    t->max_blocks_per_sm = l->is_gpu ? 32 : 1;
    t->reg_alloc_unit = l->is_gpu ? 256 : 1;
    t->warp_alloc_granularity = l->is_gpu ? 4 : 1;
    t->shared_mem_alloc_unit = l->is_gpu ? 128 : 1;
    t->shared_mem_reserved_per_block = 0;
    int lanes = l->is_gpu ? 64 : clamp_int(l->preferred_vector_width_float, 1);
    double ghz = l->max_clock_mhz > 0 ? l->max_clock_mhz / 1000.0 : 1.0;
    t->peak_gflops = t->sm_count * ghz * 2.0 * lanes;
    t->mem_bandwidth_gbs = l->is_gpu ? 500 : 50;
    t->l2_bytes = clamp_int(l->global_cache_bytes, 1 << 20);
    t->cuda_arch[0] = 0;
    t->cpu = !l->is_gpu;
    /* a dimension not reported is limited by the work-group's size alone */
    for (int i = 0; i < 3; i++) t->max_threads_per_dim[i] = clamp_int(l->max_work_item_sizes[i], t->max_threads_per_block);
}

static int host_opencl(target *t, char *err, size_t errlen) {
    char msg[512] = "";
    rt_device *d = rt_opencl_ops.open(msg, sizeof msg);
    if (!d) {
        snprintf(err, errlen, "host-opencl: no OpenCL device (%s)", msg[0] ? msg : "none found");
        return -1;
    }
    rt_device_limits l;
    int rc = rt_opencl_query(d, &l);
    rt_opencl_ops.close(d);
    if (rc < 0) {
        snprintf(err, errlen, "host-opencl: the OpenCL device could not be queried");
        return -1;
    }
    fill_from_opencl(&l, t);
    return 0;
}

/* ---- host-cuda ------------------------------------------------------------ */

/* FP32 lanes per SM: 64 on compute capability 6.0, 7.x and 8.0 (P100,
 * V100, T4, A100), 128 on the others from 6.1 on (CUDA C++ Programming
 * Guide, "Arithmetic Instructions" throughput table). */
static int cuda_fp32_lanes(int major, int minor) {
    if (major == 7 || (major == 6 && minor == 0) || (major == 8 && minor == 0)) return 64;
    return 128;
}

/* Nominal rates for a driver that no longer reports the clocks. */
enum { CUDA_NOMINAL_CLOCK_KHZ = 1500000, CUDA_NOMINAL_BANDWIDTH_GBS = 1000 };

/* Every limit is the driver's; what it does not report is the CUDA
 * occupancy calculator's rule for compute capability 8.0 and later
 * (registers in units of 256 per warp over 4 schedulers, shared memory in
 * units of 128 bytes, 255 registers per thread); peak FLOP/s = SMs x FP32
 * lanes x 2 (FMA) x the clock; bandwidth = 2 (double data rate) x the
 * memory clock x the bus width; without clocks, the nominal rates above. */
int target_from_cuda(const struct rt_cuda_limits *l, target *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "host-cuda");
    if (l->cc_major <= 0 || l->sm_count <= 0) {
        snprintf(err, errlen, "host-cuda: the GPU reports no compute capability or no SMs");
        return -1;
    }
    t->sm_count = l->sm_count;
    t->warp_size = l->warp_size > 0 ? l->warp_size : 32;
    t->max_threads_per_block = l->max_threads_per_block > 0 ? l->max_threads_per_block : 1024;
    t->max_threads_per_sm = l->max_threads_per_sm > 0 ? l->max_threads_per_sm : 2 * t->max_threads_per_block;
    t->shared_mem_per_block = l->shared_per_block > 0 ? l->shared_per_block : 49152;
    t->shared_mem_per_sm = l->shared_per_sm > 0 ? l->shared_per_sm : t->shared_mem_per_block;
    t->registers_per_sm = l->registers_per_sm > 0 ? l->registers_per_sm : 65536;
    t->registers_per_thread = 255;
    t->max_blocks_per_sm = l->max_blocks_per_sm > 0 ? l->max_blocks_per_sm : 16;
    t->l2_bytes = l->l2_bytes > 0 ? l->l2_bytes : 1 << 20;
    t->reg_alloc_unit = 256;
    t->warp_alloc_granularity = 4;
    t->shared_mem_alloc_unit = 128;
    t->shared_mem_reserved_per_block = l->shared_reserved_per_block > 0 ? l->shared_reserved_per_block : 0;
    double clock_ghz = (l->clock_khz > 0 ? l->clock_khz : CUDA_NOMINAL_CLOCK_KHZ) * 1e-6;
    t->peak_gflops = t->sm_count * cuda_fp32_lanes(l->cc_major, l->cc_minor) * 2.0 * clock_ghz;
    t->mem_bandwidth_gbs = l->mem_clock_khz > 0 && l->bus_width_bits > 0
                               ? 2.0 * l->mem_clock_khz * 1e3 * (l->bus_width_bits / 8.0) * 1e-9
                               : CUDA_NOMINAL_BANDWIDTH_GBS;
    snprintf(t->cuda_arch, sizeof t->cuda_arch, "sm_%d%d", l->cc_major, l->cc_minor);
    if (consistent(t, err, errlen) != 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "host-cuda: %s", why);
        return -1;
    }
    return 0;
}

static int host_cuda(target *t, char *err, size_t errlen) {
    char msg[512] = "";
    rt_device *d = rt_cuda_ops.open(msg, sizeof msg);
    if (!d) {
        snprintf(err, errlen, "host-cuda: no CUDA (%s)", msg[0] ? msg : "NVRTC not found");
        return -1;
    }
    rt_cuda_limits l;
    int rc = rt_cuda_query(d, &l);
    if (rc < 0) snprintf(err, errlen, "host-cuda: no CUDA GPU to query (%s)", rt_cuda_ops.describe(d));
    rt_cuda_ops.close(d);
    return rc < 0 ? -1 : target_from_cuda(&l, t, err, errlen);
}

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

/* The shipped target names under dir, space-separated. */
static void list_targets(const char *dir, char *buf, size_t len) {
    buf[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char names[64][64];
    int n = 0;
    while ((e = readdir(d)) && n < 64) {
        size_t l = strlen(e->d_name);
        if (l > 7 && l - 7 < 64 && !strcmp(e->d_name + l - 7, ".target")) {
            memcpy(names[n], e->d_name, l - 7);
            names[n++][l - 7] = 0;
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_name);
    for (int i = 0; i < n; i++) {
        size_t l = strlen(buf), m = strlen(names[i]);
        if (l + m + 2 > len) break;
        memcpy(buf + l, names[i], m);
        buf[l + m] = ' ';
        buf[l + m + 1] = 0;
    }
}

/* Where the shipped targets are when the caller names no folder:
 * $STAGECRAFT_TARGETS, else ./targets if it exists, else the targets/
 * folder beside the folder of the running program (build/stagecraft ->
 * targets/), so that the command works from any directory. */
static const char *default_dir(char *buf, size_t len) {
    const char *env = getenv("STAGECRAFT_TARGETS");
    if (env && *env) return env;
    DIR *here = opendir("targets");
    if (here) { closedir(here); return "targets"; }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return "targets";
    exe[n] = 0;
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash) return "targets";
        *slash = 0;
    }
    snprintf(buf, len, "%s/targets", exe);
    DIR *there = opendir(buf);
    if (!there) return "targets";
    closedir(there);
    return buf;
}

int target_by_name(const char *name, const char *dir, target *t, char *err, size_t errlen) {
    if (!name || !*name) {
        snprintf(err, errlen, "expected a target name");
        return -1;
    }
    if (!strcmp(name, "host-opencl")) return host_opencl(t, err, errlen);
    if (!strcmp(name, "host-cuda")) return host_cuda(t, err, errlen);
    char dirbuf[PATH_MAX + 16];
    if (!dir) dir = default_dir(dirbuf, sizeof dirbuf);
    if (!is_word(name) || name[0] == '.') {
        snprintf(err, errlen, "invalid target name '%s' (expected letters, digits, '_', '-' or '.')", name);
        return -1;
    }
    char path[PATH_MAX + 512];
    snprintf(path, sizeof path, "%s/%s.target", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        char list[1024];
        list_targets(dir, list, sizeof list);
        snprintf(err, errlen, "unknown target '%s' (no file %s; known: %shost-opencl host-cuda)", name, path, list);
        return -1;
    }
    fclose(f);
    return target_load(path, t, err, errlen);
}

void target_print(const target *t, char *buf, size_t len) {
    if (!len) return;
    buf[0] = 0;
    for (int i = 0; i < NKEYS; i++) {
        const key_info *k = &keys[i];
        const char *p = (const char *)t + k->offset;
        size_t n = strlen(buf);
        if (n + 1 >= len) return;
        switch (k->type) {
        case K_STR: snprintf(buf + n, len - n, "%s =%s%s\n", k->key, *p ? " " : "", p); break;
        case K_INT:
        case K_INT0: {
            int v;
            memcpy(&v, p, sizeof v);
            snprintf(buf + n, len - n, "%s = %d\n", k->key, v);
            break;
        }
        case K_KIND: snprintf(buf + n, len - n, "%s = %s\n", k->key, t->cpu ? "cpu" : "gpu"); break;
        case K_DIMS: {
            const int *d = t->max_threads_per_dim;
            if (d[0] || d[1] || d[2]) snprintf(buf + n, len - n, "%s = %d,%d,%d\n", k->key, d[0], d[1], d[2]);
            break;
        }
        case K_DBL: {
            double v;
            memcpy(&v, p, sizeof v);
            /* the shortest form that reads back as the same double */
            char num[40];
            for (int prec = 6; prec <= 17; prec++) {
                snprintf(num, sizeof num, "%.*g", prec, v);
                if (strtod(num, NULL) == v) break;
            }
            snprintf(buf + n, len - n, "%s = %s\n", k->key, num);
            break;
        }
        }
    }
}
