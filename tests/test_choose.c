/*
 * test_choose.c - the choice after compiling (src/driver/choose.h).
 *
 * The spill filter of Anderson et al. 2021 §8.1 on schedules of
 * lens_blur (paper size) for an A100, compiled here with NVRTC: ptxas
 * reports that a, b and d spill (b the least) and c spills nothing
 * (tests/data/spills/: one-shot samples of lens_blur, with the tile of
 * push_down_1_dx set so that they still spill: in b and d once
 * accumulating updates ran their reductions around the serial tile, which
 * ended the spills of their blurred.update(0); in a, b and d again for code
 * generation 4, whose interior copy of the kernel's body changed the
 * spills: a and d now take b's former tile, which spills 12 bytes, and b
 * takes theirs, 4; and for code generation 14, whose squares of a * a
 * ended those spills: a, b and d now run push_down_1_dx in blocks of
 * 1,024 threads, 64 registers each, and spill 84, 16 and 884 bytes).
 * The filter takes the best predicted that spills nothing; when all of
 * them spill, the best predicted within 50% of the least spilling.
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "choose.h"
#include "driver.h"

static driver_state d;
static target a100;
static sched_state *sch[4];             /* a, b, c, d */
static int spills[4];

static void load(void) {
    sc_parse_options po = { 0, 0, NULL, NULL };
    CHECK(driver_load(&d, "apps/lens_blur.pipe", &po, stderr) == 0);
    char err[2048];
    CHECK(target_by_name("a100", "targets", &a100, err, sizeof err) == 0);
    for (int i = 0; i < 4; i++) {
        char path[128];
        snprintf(path, sizeof path, "tests/data/spills/lens_blur_%c.sched", 'a' + i);
        char *text = driver_read_text(path, err, sizeof err);
        CHECK(text != NULL);
        sch[i] = text ? sched_parse(d.arena, d.p, path, text, err, sizeof err) : NULL;
        if (!sch[i]) fprintf(stderr, "%s\n", err);
        CHECK(sch[i] != NULL);
        free(text);
    }
}

static void test_spills_reported(void) {
    char err[4096];
    for (int i = 0; i < 4; i++) {
        int regs = 0;
        spills[i] = sch[i] ? choose_cuda_spills(d.p, d.b, sch[i], "sm_80", CG_MATH_FAST, &regs, err, sizeof err) : -1;
        if (spills[i] < 0) fprintf(stderr, "%c: %s\n", 'a' + i, err);
        CHECK(spills[i] >= 0 && regs > 0);
    }
    CHECK(spills[0] > 0 && spills[1] > 0 && spills[3] > 0 && spills[2] == 0);
    CHECK(spills[1] < spills[0] && spills[1] < spills[3]);
    /* the least spilling is b; a and d are beyond 1.5x of it (the cases below rely on it) */
    CHECK(spills[0] > 1.5 * spills[1] && spills[3] > 1.5 * spills[1]);
}

/* The filter over the schedules of `order` (best predicted first): the
 * index it picks, and which it keeps. */
static int filter(const int *order, int n, bool *keep, int k) {
    search_sample batch[4];
    for (int i = 0; i < n; i++) batch[i] = (search_sample){ sch[order[i]], 1.0 + i, NULL, i, 1.0 + i };
    choose_ctx c = { &a100, CG_MATH_FAST, k, NULL, 1, 0, NULL };
    char err[1024];
    return choose_spill_filter(&c, d.p, d.b, batch, n, keep, err, sizeof err);
}

static void test_filter(void) {
    bool keep[4];
    /* a spilling schedule predicted best gives way to the first clean one */
    int o1[] = { 0, 1, 2 };
    CHECK(filter(o1, 3, keep, 0) == 2);
    CHECK(!keep[0] && !keep[1] && keep[2]);
    /* the clean one first: chosen, and nothing after it is compiled */
    int o2[] = { 2, 0 };
    CHECK(filter(o2, 2, keep, 0) == 0);
    CHECK(keep[0] && !keep[1]);
    /* every one spills: the best predicted within 50% of the least (b) */
    int o3[] = { 0, 3, 1 };
    CHECK(filter(o3, 3, keep, 0) == 2);
    CHECK(!keep[0] && !keep[1] && keep[2]);
    /* top-K asks for up to K clean ones: all are compiled here, c kept */
    int o5[] = { 0, 2, 1, 3 };
    CHECK(filter(o5, 4, keep, 2) == 1);
    CHECK(!keep[0] && keep[1] && !keep[2] && !keep[3]);
}

int main(void) {
    load();
    RUN(test_spills_reported);
    RUN(test_filter);
    driver_free(&d);
    CHECK_EXIT();
}
