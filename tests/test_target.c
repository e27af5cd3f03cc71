#include <math.h>
/*
 * test_target.c - target files: the four shipped targets load with their
 * published numbers, broken files give FILE:LINE errors, a printed target
 * reads back the same, and `host-opencl` comes from the OpenCL device (or
 * says there is none).
 *
 * Run from the repository root: the shipped targets are in targets/.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rt.h"
#include "target.h"

static char tmpdir[64];

/* Writes text to tmpdir/NAME and returns the path (static buffer). */
static const char *write_file(const char *name, const char *text) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    if (!f) return path;
    fputs(text, f);
    fclose(f);
    return path;
}

static const char *GOOD =
    "# a made-up GPU\n"
    "sm_count = 10\n"
    "warp_size = 32   # lanes\n"
    "max_threads_per_block = 1024\n"
    "max_threads_per_sm = 2048\n"
    "\n"
    "shared_mem_per_block = 49152\n"
    "shared_mem_per_sm = 65536\n"
    "registers_per_sm = 65536\n"
    "registers_per_thread = 255\n"
    "max_blocks_per_sm = 16\n"
    "mem_bandwidth_gbs = 123.5\n"
    "peak_gflops = 4567.25\n"
    "l2_bytes = 1048576\n"
    "cuda_arch = sm_61\n"
    "reg_alloc_unit = 256\n"
    "warp_alloc_granularity = 4\n"
    "shared_mem_alloc_unit = 128\n"
    "shared_mem_reserved_per_block = 0\n";

/* GOOD with one line replaced (by its key) or removed (repl NULL). */
static const char *variant(const char *key, const char *repl) {
    static char buf[2048];
    buf[0] = 0;
    const char *s = GOOD;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = (size_t)(e - s) + 1;
        if (!strncmp(s, key, strlen(key)) && s[strlen(key)] == ' ') {
            if (repl) {
                strcat(buf, repl);
                strcat(buf, "\n");
            }
        } else {
            strncat(buf, s, n);
        }
        s = e + 1;
    }
    return buf;
}

/* Loads text as NAME, expecting an error equal to "PATH" + suffix. */
static bool load_fails(const char *name, const char *text, const char *suffix) {
    const char *path = write_file(name, text);
    char want[512], err[512] = "";
    snprintf(want, sizeof want, "%s%s", path, suffix);
    target t;
    int rc = target_load(path, &t, err, sizeof err);
    bool ok = rc == -1 && !strncmp(err, want, strlen(want));
    if (!ok) fprintf(stderr, "  want '%s...', got '%s'\n", want, rc ? err : "(loaded)");
    return ok;
}

static void test_load_good(void) {
    target t;
    char err[512] = "";
    const char *path = write_file("gpu1.target", GOOD);
    CHECK(target_load(path, &t, err, sizeof err) == 0);
    if (err[0]) fprintf(stderr, "  %s\n", err);
    CHECK(!strcmp(t.name, "gpu1"));      /* defaults to the base name */
    CHECK(t.sm_count == 10 && t.warp_size == 32 && t.max_threads_per_block == 1024);
    CHECK(t.max_threads_per_sm == 2048 && t.shared_mem_per_block == 49152 && t.shared_mem_per_sm == 65536);
    CHECK(t.registers_per_sm == 65536 && t.registers_per_thread == 255 && t.max_blocks_per_sm == 16);
    CHECK(t.mem_bandwidth_gbs == 123.5 && t.peak_gflops == 4567.25 && t.l2_bytes == 1048576);
    CHECK(!strcmp(t.cuda_arch, "sm_61"));
    /* a name may be given; cuda_arch may be empty */
    char text[2048];
    snprintf(text, sizeof text, "name = mygpu\n%s", variant("cuda_arch", "cuda_arch ="));
    path = write_file("gpu2.target", text);
    CHECK(target_load(path, &t, err, sizeof err) == 0);
    CHECK(!strcmp(t.name, "mygpu") && t.cuda_arch[0] == 0);
}

static void test_load_errors(void) {
    CHECK(load_fails("e1.target", variant("sm_count", "sm_count = x"),
                     ":2: expected a positive integer for sm_count, got 'x'"));
    CHECK(load_fails("e2.target", variant("sm_count", "sm_count = -3"),
                     ":2: expected a positive integer for sm_count, got '-3'"));
    CHECK(load_fails("e3.target", variant("sm_count", "sm_count = 0"), ":2: expected a positive integer"));
    CHECK(load_fails("e4.target", variant("sm_count", "sm_count = 12abc"), ":2: expected a positive integer"));
    CHECK(load_fails("e5.target", variant("sm_count", "sm_count = 99999999999"), ":2: expected a positive integer"));
    CHECK(load_fails("e6.target", variant("peak_gflops", "peak_gflops = fast"),
                     ":13: expected a positive number for peak_gflops, got 'fast'"));
    CHECK(load_fails("e7.target", variant("sm_count", "foo = 3"),
                     ":2: unknown key 'foo' (expected one of name sm_count warp_size"));
    CHECK(load_fails("e8.target", variant("sm_count", "sm_count 80"), ":2: expected 'key = value', got 'sm_count 80'"));
    CHECK(load_fails("e9.target", variant("warp_size", NULL), ": missing key warp_size"));
    char text[2048];
    snprintf(text, sizeof text, "%swarp_size = 64\n", GOOD);
    CHECK(load_fails("e10.target", text, ":20: duplicate key warp_size (first set on line 3)"));
    CHECK(load_fails("e11.target", variant("cuda_arch", "cuda_arch = sm 80"), ":15: expected a word"));
    CHECK(load_fails("e12.target", variant("max_threads_per_sm", "max_threads_per_sm = 512"),
                     ": max_threads_per_block (1024) is larger than max_threads_per_sm (512)"));
    CHECK(load_fails("e13.target", variant("shared_mem_per_sm", "shared_mem_per_sm = 1024"),
                     ": shared_mem_per_block (49152) is larger than shared_mem_per_sm (1024)"));
    CHECK(load_fails("e14.target", variant("reg_alloc_unit", NULL), ": missing key reg_alloc_unit"));
    CHECK(load_fails("e15.target", variant("shared_mem_reserved_per_block", "shared_mem_reserved_per_block = -1"),
                     ":19: expected a non-negative integer for shared_mem_reserved_per_block, got '-1'"));
    CHECK(load_fails("e16.target", variant("warp_alloc_granularity", "warp_alloc_granularity = 0"),
                     ":17: expected a positive integer for warp_alloc_granularity, got '0'"));
    target t;
    char err[512];
    CHECK(target_load("/nonexistent/x.target", &t, err, sizeof err) == -1);
    CHECK(!strncmp(err, "/nonexistent/x.target: cannot open", 34));
}

static void test_print_round_trip(void) {
    target t, u;
    char err[512], buf[2048];
    CHECK(target_load(write_file("rt.target", GOOD), &t, err, sizeof err) == 0);
    t.peak_gflops = 19491.84;
    t.mem_bandwidth_gbs = 1.0 / 3.0;
    target_print(&t, buf, sizeof buf);
    CHECK(strstr(buf, "name = rt\n") != NULL);
    CHECK(strstr(buf, "peak_gflops = 19491.84\n") != NULL);
    CHECK(target_load(write_file("rt2.target", buf), &u, err, sizeof err) == 0);
    CHECK(!strcmp(u.name, "rt"));        /* the printed name wins over the file name */
    CHECK(u.mem_bandwidth_gbs == t.mem_bandwidth_gbs && u.peak_gflops == t.peak_gflops);
    CHECK(!memcmp(&u.sm_count, &t.sm_count, offsetof(target, cuda_arch) - offsetof(target, sm_count)));
    /* from text (how the sample store keeps a device's target) */
    target v;
    CHECK(target_parse("stored", buf, &v, err, sizeof err) == 0);
    CHECK(!memcmp(&u, &v, sizeof u));
    CHECK(target_parse("stored", "name = x\nsm_count = 0\n", &v, err, sizeof err) == -1);
    CHECK(!strncmp(err, "stored:", 7));
    /* a short buffer is cut, not overrun */
    char small[20];
    memset(small, 'z', sizeof small);
    target_print(&t, small, 10);
    CHECK(strlen(small) == 9 && small[10] == 'z');
}

static void test_shipped(void) {
    struct { const char *name; int sms, threads_sm, blocks_sm, smem_sm; const char *arch; } want[] = {
        { "v100", 80, 2048, 32, 98304, "sm_70" },
        { "a100", 108, 2048, 32, 167936, "sm_80" },
        { "h100", 132, 2048, 32, 233472, "sm_90" },
        { "rtx2080ti", 68, 1024, 16, 65536, "sm_75" },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        target t;
        char err[512] = "";
        int rc = target_by_name(want[i].name, NULL, &t, err, sizeof err);
        if (rc) fprintf(stderr, "  %s: %s\n", want[i].name, err);
        CHECK(rc == 0);
        if (rc) continue;
        CHECK(!strcmp(t.name, want[i].name));
        CHECK(t.sm_count == want[i].sms);
        CHECK(t.warp_size == 32 && t.max_threads_per_block == 1024);
        CHECK(t.max_threads_per_sm == want[i].threads_sm && t.max_blocks_per_sm == want[i].blocks_sm);
        CHECK(t.shared_mem_per_block == 49152 && t.shared_mem_per_sm == want[i].smem_sm);
        CHECK(t.registers_per_sm == 65536 && t.registers_per_thread == 255);
        CHECK(t.mem_bandwidth_gbs > 500 && t.peak_gflops > 10000 && t.l2_bytes >= 5 << 20);
        CHECK(!strcmp(t.cuda_arch, want[i].arch));
    }
    target t;
    char err[512];
    CHECK(target_by_name("gtx480", NULL, &t, err, sizeof err) == -1);
    CHECK(strstr(err, "unknown target 'gtx480'") && strstr(err, "a100 h100 rtx2080ti v100 host-opencl"));
    CHECK(target_by_name("../etc/passwd", NULL, &t, err, sizeof err) == -1);
    CHECK(strstr(err, "invalid target name") != NULL);
    /* by name from another directory */
    write_file("mine.target", GOOD);
    CHECK(target_by_name("mine", tmpdir, &t, err, sizeof err) == 0 && !strcmp(t.name, "mine"));
}

/* host-opencl: filled from the device where there is one (PoCL here). */
static void test_host_opencl(void) {
    target t;
    char err[512] = "";
    int rc = target_by_name("host-opencl", NULL, &t, err, sizeof err);
    if (rc) {
        printf("  (no OpenCL device: %s)\n", err);
        CHECK(!strncmp(err, "host-opencl: ", 13));
        return;
    }
    CHECK(!strcmp(t.name, "host-opencl"));
    CHECK(t.sm_count >= 1 && t.warp_size >= 1 && t.max_threads_per_block >= t.warp_size);
    CHECK(t.max_threads_per_sm >= t.max_threads_per_block && t.shared_mem_per_block >= 1);
    CHECK(t.shared_mem_per_sm >= t.shared_mem_per_block && t.registers_per_thread <= t.registers_per_sm);
    CHECK(t.mem_bandwidth_gbs > 0 && t.peak_gflops > 0 && t.l2_bytes > 0 && t.max_blocks_per_sm >= 1);
    /* and it prints as a loadable file */
    char buf[2048], err2[512];
    target_print(&t, buf, sizeof buf);
    target u;
    CHECK(target_load(write_file("host.target", buf), &u, err2, sizeof err2) == 0);
    CHECK(!strcmp(u.name, "host-opencl") && u.sm_count == t.sm_count);
}

/* host-cuda from an H100 SXM's attributes as its driver reports them
 * (132 SMs, 1980 MHz, HBM3 at 2619 MHz on 5120 bits): the rates are the
 * datasheet's, the limits the driver's; then the fallbacks and refusals. */
static void test_from_cuda(void) {
    rt_cuda_limits l = { "NVIDIA H100 80GB HBM3", 9, 0, 132, 32, 1024, 2048, 32, 49152, 233472, 1024,
                         65536, 52428800, 1980000, 2619000, 5120 };
    target t;
    char err[512] = "";
    CHECK(target_from_cuda(&l, &t, err, sizeof err) == 0);
    CHECK(!strcmp(t.name, "host-cuda") && !strcmp(t.cuda_arch, "sm_90"));
    CHECK(t.sm_count == 132 && t.max_threads_per_sm == 2048 && t.max_blocks_per_sm == 32);
    CHECK(t.shared_mem_per_block == 49152 && t.shared_mem_per_sm == 233472 && t.shared_mem_reserved_per_block == 1024);
    CHECK(fabs(t.mem_bandwidth_gbs - 3352.3) < 0.1);              /* datasheet: 3350 */
    CHECK(fabs(t.peak_gflops - 66908.2) < 0.1);                    /* datasheet: 67000 */
    target h;
    CHECK(target_by_name("h100", NULL, &h, err, sizeof err) == 0);
    CHECK(h.sm_count == t.sm_count && h.registers_per_sm == t.registers_per_sm && h.l2_bytes == t.l2_bytes);
    /* prints as a loadable file */
    char buf[2048];
    target_print(&t, buf, sizeof buf);
    target u;
    CHECK(target_load(write_file("cuda.target", buf), &u, err, sizeof err) == 0 && !strcmp(u.cuda_arch, "sm_90"));
    /* an A100 has 64 FP32 lanes per SM; no clocks: the nominal rates */
    rt_cuda_limits a = { "NVIDIA A100", 8, 0, 108, 32, 1024, 2048, 32, 49152, 167936, 1024, 65536, 41943040, 0, 0, 0 };
    CHECK(target_from_cuda(&a, &t, err, sizeof err) == 0 && !strcmp(t.cuda_arch, "sm_80"));
    CHECK(fabs(t.peak_gflops - 108 * 64 * 2 * 1.5) < 1e-6 && t.mem_bandwidth_gbs == 1000);
    /* no SMs, or a block larger than an SM: refused, and said why */
    rt_cuda_limits bad = l;
    bad.sm_count = 0;
    CHECK(target_from_cuda(&bad, &t, err, sizeof err) != 0 && strstr(err, "host-cuda: ") && strstr(err, "no SMs"));
    bad = l;
    bad.shared_per_sm = 1024;
    CHECK(target_from_cuda(&bad, &t, err, sizeof err) != 0 && strstr(err, "shared_mem_per_block (49152) is larger"));
    /* without a GPU, host-cuda says so */
    rt_device *d = rt_cuda_ops.open(err, sizeof err);
    bool gpu = d && rt_cuda_ops.can_run(d);
    if (d) rt_cuda_ops.close(d);
    if (!gpu) CHECK(target_by_name("host-cuda", NULL, &t, err, sizeof err) != 0 && strstr(err, "host-cuda: "));
    else CHECK(target_by_name("host-cuda", NULL, &t, err, sizeof err) == 0 && t.cuda_arch[0]);
}

/* kind: gpu when absent, cpu or gpu when given, anything else refused;
 * a host-opencl text written before the key existed is a CPU exactly
 * when it has the CPU's one block per SM and allocation units of 1. */
static void test_kind(void) {
    target t;
    char err[512] = "", text[2048], buf[2048];
    CHECK(target_load(write_file("k1.target", GOOD), &t, err, sizeof err) == 0 && !t.cpu);
    snprintf(text, sizeof text, "%skind = cpu\n", GOOD);
    CHECK(target_load(write_file("k2.target", text), &t, err, sizeof err) == 0 && t.cpu);
    target_print(&t, buf, sizeof buf);
    CHECK(strstr(buf, "kind = cpu\n") != NULL);
    target u;
    CHECK(target_parse("stored", buf, &u, err, sizeof err) == 0 && u.cpu && !memcmp(&t, &u, sizeof t));
    snprintf(text, sizeof text, "%skind = gpu\n", GOOD);
    CHECK(target_load(write_file("k3.target", text), &t, err, sizeof err) == 0 && !t.cpu);
    snprintf(text, sizeof text, "%skind = tpu\n", GOOD);
    CHECK(load_fails("k4.target", text, ":20: expected gpu or cpu for kind, got 'tpu'"));
    snprintf(text, sizeof text, "%skind = cpu\nkind = gpu\n", GOOD);
    CHECK(load_fails("k5.target", text, ":21: duplicate key kind (first set on line 20)"));
    /* the legacy inference: a CPU's host-opencl text without `kind` */
    static const char *OLD_CPU =
        "name = host-opencl\nsm_count = 2\nwarp_size = 8\nmax_threads_per_block = 4096\n"
        "max_threads_per_sm = 4096\nshared_mem_per_block = 2097152\nshared_mem_per_sm = 2097152\n"
        "registers_per_sm = 65536\nregisters_per_thread = 255\nmax_blocks_per_sm = 1\n"
        "mem_bandwidth_gbs = 50\npeak_gflops = 166.4\nl2_bytes = 503316480\ncuda_arch =\n"
        "reg_alloc_unit = 1\nwarp_alloc_granularity = 1\nshared_mem_alloc_unit = 1\n"
        "shared_mem_reserved_per_block = 0\n";
    CHECK(target_parse("stored", OLD_CPU, &t, err, sizeof err) == 0 && t.cpu);
    snprintf(text, sizeof text, "%skind = gpu\n", OLD_CPU);
    CHECK(target_parse("stored", text, &t, err, sizeof err) == 0 && !t.cpu);
    /* the same limits under another name are a GPU file's */
    snprintf(text, sizeof text, "%s", OLD_CPU + strlen("name = host-opencl\n"));
    CHECK(target_parse("stored", text, &t, err, sizeof err) == 0 && !t.cpu);
    /* host-opencl on PoCL's CPU device says cpu */
    if (target_by_name("host-opencl", NULL, &t, err, sizeof err) == 0 && t.max_blocks_per_sm == 1)
        CHECK(t.cpu);
}

/* max_threads_per_dim: optional, three positive limits, printed only
 * where set; the work-group a root stage's threads make, and the first
 * dimension over the limits. */
static void test_dims(void) {
    target t, u;
    char err[512] = "", text[2048], buf[2048];
    CHECK(target_load(write_file("d1.target", GOOD), &t, err, sizeof err) == 0);
    CHECK(!t.max_threads_per_dim[0] && !t.max_threads_per_dim[1] && !t.max_threads_per_dim[2]);
    target_print(&t, buf, sizeof buf);
    CHECK(!strstr(buf, "max_threads_per_dim"));
    snprintf(text, sizeof text, "%smax_threads_per_dim = 1024,1024,64\n", GOOD);
    CHECK(target_load(write_file("d2.target", text), &t, err, sizeof err) == 0);
    CHECK(t.max_threads_per_dim[0] == 1024 && t.max_threads_per_dim[1] == 1024 && t.max_threads_per_dim[2] == 64);
    target_print(&t, buf, sizeof buf);
    CHECK(strstr(buf, "max_threads_per_dim = 1024,1024,64\n") != NULL);
    CHECK(target_parse("stored", buf, &u, err, sizeof err) == 0 && !memcmp(&t, &u, sizeof t));
    const char *bad[] = { "1024,1024", "1024,0,64", "a,b,c", "1,2,3,4", "1024, 1024, 64", "1,2,99999999999", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[200];
        snprintf(text, sizeof text, "%smax_threads_per_dim = %s\n", GOOD, bad[i]);
        snprintf(want, sizeof want, ":20: expected three positive integers X,Y,Z for max_threads_per_dim, got '%s'",
                 bad[i]);
        CHECK(load_fails("d3.target", text, want));
    }
    /* the work-group: the first two threaded loops, then the rest merged */
    int64_t d[3];
    CHECK(!target_group_dims((const int[]){ 32, 1, 8 }, 3, d) && d[0] == 32 && d[1] == 8 && d[2] == 1);
    CHECK(!target_group_dims((const int[]){ 1, 1 }, 2, d) && d[0] == 1 && d[1] == 1 && d[2] == 1);
    CHECK(!target_group_dims((const int[]){ 4, 2, 8 }, 3, d) && d[0] == 4 && d[1] == 2 && d[2] == 8);
    CHECK(target_group_dims((const int[]){ 32, 4, 8, 1, 4 }, 5, d) && d[0] == 32 && d[1] == 4 && d[2] == 32);
    CHECK(target_dim_over(&t, (const int64_t[]){ 1024, 1, 64 }) == -1);
    CHECK(target_dim_over(&t, (const int64_t[]){ 16, 2, 128 }) == 2);
    CHECK(target_dim_over(&t, (const int64_t[]){ 2048, 2, 128 }) == 0);
    CHECK(target_load(write_file("d4.target", GOOD), &t, err, sizeof err) == 0);
    CHECK(target_dim_over(&t, (const int64_t[]){ 1, 1, 100000 }) == -1);
    /* host-opencl: the device's own limits, printed and read back */
    if (target_by_name("host-opencl", NULL, &t, err, sizeof err) == 0) {
        for (int i = 0; i < 3; i++) CHECK(t.max_threads_per_dim[i] >= 1);
        target_print(&t, buf, sizeof buf);
        CHECK(strstr(buf, "max_threads_per_dim = ") != NULL);
        CHECK(target_parse("stored", buf, &u, err, sizeof err) == 0 && !memcmp(u.max_threads_per_dim,
              t.max_threads_per_dim, sizeof t.max_threads_per_dim));
    }
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sc_target_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_load_good);
    RUN(test_load_errors);
    RUN(test_print_round_trip);
    RUN(test_shipped);
    RUN(test_host_opencl);
    RUN(test_from_cuda);
    RUN(test_kind);
    RUN(test_dims);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    CHECK_EXIT();
}
