/*
 * cmd_floor.c - `stagecraft floor [FILE.pipe...]`: the device's copy
 * bandwidth and arithmetic rate, and each pipeline's traffic floor,
 * arithmetic intensity and class (floor.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apps.h"
#include "floor.h"
#include "tools.h"

static void floor_help(void) {
    printf("usage: stagecraft floor [FILE.pipe...] [options]\n\n"
           "Measures the device's copy bandwidth (a copy pipeline, bytes read + written)\n"
           "and arithmetic rate (a compute-bound pipeline), both through stagecraft's\n"
           "own code with the baseline schedule, and prints for each pipeline (every\n"
           "app of --apps DIR when none is given) its traffic floor (every input's\n"
           "required region read once, every output written once), its operations,\n"
           "its arithmetic intensity (operations per byte of the floor), whether it\n"
           "is memory-bound (intensity below the device's balance) and its time at\n"
           "the copy bandwidth (docs/benchmarks.md, \"Traffic floors\").\n\n"
           "options:\n"
           "  --device D      opencl (default) or c\n"
           "  --math M        fast (default) or exact: the code measured\n"
           "  --copy-mib N    the copy's size each way (default 64)\n"
           "  --balance B     operations per byte to classify with; nothing is measured\n"
           "  --apps DIR      the apps' directory (default apps)\n"
           "  --small         the pipelines' small sizes\n");
}

/* One row of the table; -1 when the pipeline does not parse or bound. */
static int floor_row(const char *path, const char *name, bool small, double balance, double gbs) {
    sc_parse_options po = { .small = small };
    sc_pipeline *p = sc_parse_file(path, &po);
    bounds_result *b = sc_error_count(p) ? NULL : bounds_infer(p);
    if (!b) {
        for (int i = 0; i < sc_error_count(p); i++) fprintf(stderr, "%s\n", sc_error_message(p, i));
        sc_pipeline_free(p);
        return -1;
    }
    int64_t read = floor_read_bytes(p, b), all = floor_traffic_bytes(p, b);
    printf("%-26s %10.2f %10.2f %10.2f %10.3f %9.2f  %-7s", name, (double)read / 1e6, (double)(all - read) / 1e6,
           (double)all / 1e6, floor_ops(p, b) / 1e9, floor_intensity(p, b),
           floor_is_memory_bound(p, b, balance) ? "memory" : "compute");
    if (gbs > 0) printf(" %9.3f", floor_time_ms(p, b, gbs));
    printf("\n");
    bounds_free(b);
    sc_pipeline_free(p);
    return 0;
}

int tool_floor(int argc, char **argv) {
    const char *devname = "opencl", *dir = "apps", *cmd = "floor";
    const char **files = calloc((size_t)argc, sizeof *files);
    int nfiles = 0;
    long long mib = 64;
    double balance = -1;
    bool small = false;
    cg_math math = CG_MATH_FAST;
    int rc = TOOL_OK;
    for (int i = 1; i < argc && rc == TOOL_OK; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { floor_help(); free(files); return TOOL_OK; }
        if (!strcmp(a, "--small")) { small = true; continue; }
        if (a[0] != '-') { files[nfiles++] = a; continue; }
        if (i + 1 >= argc) { rc = tool_usage_error(cmd, "option %s needs a value", a); break; }
        const char *v = argv[++i];
        char *end;
        if (!strcmp(a, "--device")) devname = v;
        else if (!strcmp(a, "--apps")) dir = v;
        else if (!strcmp(a, "--math")) {
            if (cg_math_parse(v, &math) != 0) rc = tool_usage_error(cmd, "--math: '%s' is not one of fast, exact", v);
        } else if (!strcmp(a, "--copy-mib")) {
            if (!tool_parse_int(v, 1, 4096, &mib)) rc = tool_usage_error(cmd, "--copy-mib: expected 1 to 4096, got '%s'", v);
        } else if (!strcmp(a, "--balance")) {
            balance = strtod(v, &end);
            if (*end || !(balance > 0)) rc = tool_usage_error(cmd, "--balance: expected a positive number, got '%s'", v);
        } else rc = tool_usage_error(cmd, "unknown option '%s'", a);
    }
    if (rc != TOOL_OK) { free(files); return rc; }

    double gbs = -1;
    if (balance < 0) {
        measure_device d;
        target t;
        char desc[1024], key[512], err[1024];
        if (!measure_device_by_name(devname, math, &d)) {
            free(files);
            return tool_usage_error(cmd, "--device: '%s' is not one of opencl, c", devname);
        }
        if (measure_find_target(devname, &t, desc, sizeof desc, key, sizeof key, err, sizeof err) != 0) {
            fprintf(stderr, "stagecraft floor: %s: %s\n", devname, err);
            free(files);
            return TOOL_INPUT;
        }
        d.cpu = t.cpu;
        printf("device: %s: %s (%s math)\n", devname, desc, cg_math_name(math));
        measure_limits lim = { 60000, 60000 };
        measure_outcome o;
        char which[128];
        gbs = floor_copy_bandwidth(&d, &t, mib << 20, lim, &o, which, sizeof which);
        if (gbs > 0) printf("copy: %lld MiB each way in %.3f ms: %.2f GB/s (read + write; the fastest copy schedule: %s)\n",
                            mib, o.ms, gbs, which);
        double gops = floor_peak_ops(&d, &t, 512 * 512, lim, &o, which, sizeof which);
        if (gops > 0) printf("arithmetic: %.3f ms: %.2f Gop/s (the fastest schedule: %s)\n", o.ms, gops, which);
        if (!(gbs > 0) || !(gops > 0)) {
            fprintf(stderr, "stagecraft floor: the device measurement failed: %s\n", o.msg);
            free(files);
            return TOOL_INPUT;
        }
        balance = gops / gbs;
        printf("balance: %.2f operations per byte\n", balance);
    } else {
        printf("balance: %.2f operations per byte (given)\n", balance);
    }
    printf("\n%-26s %10s %10s %10s %10s %9s  %-7s%s\n", "pipeline", "read_MB", "write_MB", "floor_MB", "Gop",
           "op/byte", "bound", gbs > 0 ? "  floor_ms" : "");
    char err[1024], path[4096];
    if (nfiles) {
        for (int i = 0; i < nfiles; i++) {
            const char *base = strrchr(files[i], '/');
            char name[256];
            snprintf(name, sizeof name, "%s", base ? base + 1 : files[i]);
            char *dot = strstr(name, ".pipe");
            if (dot) *dot = 0;
            if (floor_row(files[i], name, small, balance, gbs) != 0) rc = TOOL_INPUT;
        }
    } else {
        char **names;
        int n = apps_list(dir, &names, err, sizeof err);
        if (n < 0) {
            fprintf(stderr, "stagecraft floor: %s\n", err);
            rc = TOOL_INPUT;
        }
        for (int i = 0; i < n; i++) {
            snprintf(path, sizeof path, "%s/%s.pipe", dir, names[i]);
            if (floor_row(path, names[i], small, balance, gbs) != 0) rc = TOOL_INPUT;
        }
        if (n >= 0) apps_free_names(names, n);
    }
    free(files);
    return rc;
}
