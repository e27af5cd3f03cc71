/*
 * test_floor.c - traffic floors, arithmetic counts and the memory-bound
 * rule of floor.h, on small pipelines whose figures are worked out by
 * hand beside each check; and the device measurements on PoCL at a small
 * size (a positive, finite figure: no timed thresholds).
 */
#include <math.h>
#include <string.h>
#include "check.h"
#include "floor.h"

/* Parses and bounds text; NULL (and the errors printed) if either fails. */
static sc_pipeline *parse(const char *text, bounds_result **b) {
    sc_pipeline *p = sc_parse_string("test.pipe", text, strlen(text), NULL);
    *b = NULL;
    for (int i = 0; i < sc_error_count(p); i++) fprintf(stderr, "  unexpected: %s\n", sc_error_message(p, i));
    if (!sc_error_count(p)) *b = bounds_infer(p);
    if (!*b) {
        sc_pipeline_free(p);
        return NULL;
    }
    return p;
}

/* in and out 100 x 80 f32: 32,000 bytes each way; no arithmetic. */
static void test_floor_copy(void) {
    bounds_result *b;
    sc_pipeline *p = parse("input f32 in(100, 80);\nout(x, y) = in(x, y);\noutput out(100, 80);\n", &b);
    CHECK(p != NULL);
    if (!p) return;
    CHECK(floor_read_bytes(p, b) == 32000);
    CHECK(floor_traffic_bytes(p, b) == 64000);
    CHECK(floor_ops(p, b) == 0);
    CHECK(floor_intensity(p, b) == 0);
    CHECK(floor_is_memory_bound(p, b, FLOOR_BALANCE_POCL));
    CHECK(floor_is_memory_bound(p, b, 0.01));
    /* 64,000 bytes at 1 GB/s: 64 us */
    CHECK(fabs(floor_time_ms(p, b, 1.0) - 0.064) < 1e-12);
    bounds_free(b);
    sc_pipeline_free(p);
}

/* Only the region the output needs counts, not the declared input: out
 * 50 x 40 reads in(x + 2, y) and in(x, y + 1), so x in [0, 51] and y in
 * [0, 40]: 52 * 41 * 4 = 8,528 bytes read, 50 * 40 * 4 = 8,000 written;
 * one add per point, 2,000 in all. */
static void test_floor_subregion(void) {
    bounds_result *b;
    sc_pipeline *p = parse("input f32 in(100, 80);\nout(x, y) = in(x + 2, y) + in(x, y + 1);\n"
                           "output out(50, 40);\n", &b);
    CHECK(p != NULL);
    if (!p) return;
    CHECK(floor_read_bytes(p, b) == 8528);
    CHECK(floor_traffic_bytes(p, b) == 16528);
    CHECK(floor_ops(p, b) == 2000);
    bounds_free(b);
    sc_pipeline_free(p);
}

/* A 3x3 box blur with a halo: the input 66 x 50 u16 is read whole by an
 * output of 64 x 48 (6,600 bytes), which is written once (6,144 bytes);
 * the intermediate blur_x counts no traffic.  blur_x runs over 64 x 50
 * points with 2 adds and a divide each (casts count nothing): 9,600; out
 * over 64 x 48 with 3: 9,216; 18,816 in all. */
static void test_floor_blur_halo(void) {
    bounds_result *b;
    sc_pipeline *p = parse(
        "input u16 in(66, 50);\n"
        "blur_x(x, y) = u16((u32(in(x, y)) + in(x + 1, y) + in(x + 2, y)) / 3);\n"
        "out(x, y) = u16((u32(blur_x(x, y)) + blur_x(x, y + 1) + blur_x(x, y + 2)) / 3);\n"
        "output out(64, 48);\n", &b);
    CHECK(p != NULL);
    if (!p) return;
    CHECK(floor_read_bytes(p, b) == 66 * 50 * 2);
    CHECK(floor_traffic_bytes(p, b) == 66 * 50 * 2 + 64 * 48 * 2);
    CHECK(floor_ops(p, b) == 64 * 50 * 3 + 64 * 48 * 3);
    bounds_free(b);
    sc_pipeline_free(p);
}

/* The same blur with the edges repeated: the clamps are in coordinates
 * (address arithmetic, no operations) and keep the reads inside the
 * 64 x 48 input, read once: 6,144 bytes each way. */
static void test_floor_blur_repeat_edge(void) {
    bounds_result *b;
    sc_pipeline *p = parse(
        "input u16 in(64, 48);\n"
        "clamped = repeat_edge(in);\n"
        "blur_x(x, y) = u16((u32(clamped(x - 1, y)) + clamped(x, y) + clamped(x + 1, y)) / 3);\n"
        "out(x, y) = u16((u32(blur_x(x, y - 1)) + blur_x(x, y) + blur_x(x, y + 1)) / 3);\n"
        "output out(64, 48);\n", &b);
    CHECK(p != NULL);
    if (!p) return;
    CHECK(floor_traffic_bytes(p, b) == 2 * 6144);
    CHECK(floor_ops(p, b) == 64 * 50 * 3 + 64 * 48 * 3);
    bounds_free(b);
    sc_pipeline_free(p);
}

/* Three inputs and two outputs of different types.  gain(x) is read at
 * x in [0, 9] only (10 of its 20 f32: 40 bytes); img u8 10 x 6 whole
 * (60 bytes); lut u8 256 at data-dependent coordinates img(x, y), the
 * whole range of u8 (256 bytes).  Outputs: o1 10 x 6 f32 (240 bytes),
 * o2 10 x 6 u8 (60 bytes).  Operations: o1 a multiply per point, o2
 * none: 60. */
static void test_floor_multi_input(void) {
    bounds_result *b;
    sc_pipeline *p = parse(
        "input f32 gain(20);\ninput u8 img(10, 6);\ninput u8 lut(256);\n"
        "o1(x, y) = gain(x) * f32(img(x, y));\n"
        "o2(x, y) = lut(img(x, y));\n"
        "output o1(10, 6);\noutput o2(10, 6);\n", &b);
    CHECK(p != NULL);
    if (!p) return;
    CHECK(floor_read_bytes(p, b) == 40 + 60 + 256);
    CHECK(floor_traffic_bytes(p, b) == 40 + 60 + 256 + 240 + 60);
    CHECK(floor_ops(p, b) == 60);
    bounds_free(b);
    sc_pipeline_free(p);
}

/* sgemm at its paper size (1024): three 4 MiB inputs read, one written:
 * 16 MiB; 2 operations per multiply-add over 1024^3 points and 3 per
 * point of out: 2,150,629,376, an intensity of 128 operations per byte,
 * compute-bound on PoCL (and on every GPU target) where the copy is not.
 * Only parsed and bounded: nothing is evaluated. */
static void test_floor_classify(void) {
    sc_parse_options po = {0};
    sc_pipeline *p = sc_parse_file("apps/sgemm.pipe", &po);
    CHECK(sc_error_count(p) == 0);
    bounds_result *b = sc_error_count(p) ? NULL : bounds_infer(p);
    CHECK(b != NULL);
    if (b) {
        CHECK(floor_traffic_bytes(p, b) == 16 << 20);
        CHECK(floor_ops(p, b) == 2.0 * 1024 * 1024 * 1024 + 3.0 * 1024 * 1024);
        CHECK(fabs(floor_intensity(p, b) - 2150629376.0 / (16 << 20)) < 1e-9);
        CHECK(!floor_is_memory_bound(p, b, FLOOR_BALANCE_POCL));
        CHECK(!floor_is_memory_bound(p, b, 20));
    }
    bounds_free(b);
    sc_pipeline_free(p);
}

/* The device measurements run and give a positive, finite figure (a
 * quarter of a MiB each way; 32 rows of the compute pipeline). */
static void test_floor_measure_pocl(void) {
    measure_device d;
    CHECK(measure_device_by_name("opencl", CG_MATH_FAST, &d));
    target t;
    char desc[1024], key[512], err[1024];
    int rc = measure_find_target("opencl", &t, desc, sizeof desc, key, sizeof key, err, sizeof err);
    CHECK(rc == 0);
    if (rc != 0) { fprintf(stderr, "%s\n", err); return; }
    measure_limits lim = { 60000, 60000 };
    measure_outcome o;
    char which[128] = "";
    double gbs = floor_copy_bandwidth(&d, &t, 256 << 10, lim, &o, which, sizeof which);
    if (!(gbs > 0)) fprintf(stderr, "copy: %s\n", o.msg);
    CHECK(gbs > 0 && isfinite(gbs));
    CHECK(!strcmp(which, "baseline") || !strncmp(which, "root [x=", 8));
    printf("# copy bandwidth, 256 KiB each way: %.2f GB/s (%.3f ms, %s)\n", gbs, o.ms, which);
    /* blocks of at most 64 threads: only the 64-thread tilings (and the
     * baseline) are legal, and one of them is the fastest */
    target small = t;
    small.max_threads_per_block = 64;
    if (small.warp_size > 64) small.warp_size = 64;
    gbs = floor_copy_bandwidth(&d, &small, 256 << 10, lim, &o, which, sizeof which);
    CHECK(gbs > 0);
    CHECK(!strcmp(which, "baseline") || !strncmp(which, "root [x=64x", 11));
    printf("# with 64 threads a block: %.2f GB/s (%s)\n", gbs, which);
    double gops = floor_peak_ops(&d, &t, 512 * 32, lim, &o, which, sizeof which);
    if (!(gops > 0)) fprintf(stderr, "peak: %s\n", o.msg);
    CHECK(gops > 0 && isfinite(gops));
    printf("# arithmetic rate, 512 x 32 points: %.2f Gop/s (%.3f ms, %s)\n", gops, o.ms, which);
}

int main(void) {
    RUN(test_floor_copy);
    RUN(test_floor_subregion);
    RUN(test_floor_blur_halo);
    RUN(test_floor_blur_repeat_edge);
    RUN(test_floor_multi_input);
    RUN(test_floor_classify);
    RUN(test_floor_measure_pocl);
    CHECK_EXIT();
}
