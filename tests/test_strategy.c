/*
 * test_strategy.c - the strategy table (strategy.h) and the runtime names
 * (rt.h) the command line lists: lookup by name, the joined name lists,
 * and every strategy making a schedule that passes sched_check and lowers,
 * seeded ones depending on the seed and the others not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps.h"
#include "check.h"
#include "lower.h"
#include "rt.h"
#include "strategy.h"

static void test_lookup(void)
{
    int n = space_strategy_count();
    CHECK(n >= 3);
    for (int i = 0; i < n; i++) {
        const space_strategy *s = space_strategy_at(i);
        CHECK(s && s->name && *s->name && s->summary && *s->summary && s->make);
        CHECK(space_strategy_by_name(s->name) == s);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(space_strategy_at(j)->name, s->name) != 0);
    }
    CHECK(space_strategy_at(-1) == NULL && space_strategy_at(n) == NULL);
    CHECK(space_strategy_by_name("best") == NULL && space_strategy_by_name(NULL) == NULL);
    CHECK(space_strategy_by_name("random")->seeded && !space_strategy_by_name("root")->seeded);
    CHECK(!space_strategy_by_name("baseline")->seeded);
}

static void test_names(void)
{
    char buf[256];
    /* the table's first three, as the command line's messages list them */
    CHECK(!strncmp(space_strategy_names(buf, sizeof buf, ", ", " or "), "root, baseline", 14));
    CHECK(strstr(buf, " or ") != NULL);
    CHECK(!strncmp(space_strategy_names(buf, sizeof buf, "|", "|"), "root|baseline|random", 20));
    char tiny[6];
    CHECK(strlen(space_strategy_names(tiny, sizeof tiny, ", ", ", ")) < sizeof tiny);
    CHECK(!strcmp(rt_ops_names(buf, sizeof buf, ", ", " or "), "cuda, opencl or c"));
    CHECK(!strcmp(rt_ops_names(buf, sizeof buf, "|", "|"), "cuda|opencl|c"));
    for (const char *n = strtok(buf, "|"); n; n = strtok(NULL, "|"))
        CHECK(rt_ops_by_name(n) != NULL && !strcmp(rt_ops_by_name(n)->name, n));
}

/* Every strategy on two apps: a schedule that fits the target and lowers;
 * the text of a seeded one changes with the seed, of the others not. */
static void test_make(void)
{
    static const char *const apps[] = { "unsharp", "harris" };
    char err[4096];
    target t;
    CHECK(target_by_name("a100", NULL, &t, err, sizeof err) == 0);
    space_opts o = { &t, false, false };
    for (size_t ai = 0; ai < sizeof apps / sizeof apps[0]; ai++) {
        app_case ac;
        if (app_load("apps", apps[ai], true, 1, &ac, err, sizeof err) != 0) {
            fprintf(stderr, "  %s: %s\n", apps[ai], err);
            CHECK(!"the app loads");
            continue;
        }
        for (int i = 0; i < space_strategy_count(); i++) {
            const space_strategy *st = space_strategy_at(i);
            /* oneshot needs weights (tests/test_beam.c), topk a device too
             * (tests/test_cli_topk.sh); topk without one is an error */
            if (!strcmp(st->name, "oneshot")) continue;
            if (!strcmp(st->name, "topk")) {
                ir_arena *a = ir_arena_new();
                CHECK(st->make(a, ac.p, ac.b, &o, NULL, 1, err, sizeof err) == NULL);
                CHECK(strstr(err, "give --device D") != NULL);
                ir_arena_free(a);
                continue;
            }
            ir_arena *a = ir_arena_new();
            char *text[3] = { NULL, NULL, NULL };
            static const uint64_t seeds[3] = { 1, 2, 3 };
            for (int k = 0; k < 3; k++) {
                sched_state *s = st->make(a, ac.p, ac.b, &o, NULL, seeds[k], err, sizeof err);
                if (!s) fprintf(stderr, "  %s/%s: %s\n", apps[ai], st->name, err);
                CHECK(s != NULL);
                if (!s) continue;
                CHECK(sched_check(ac.p, ac.b, s, &t, false, err, sizeof err) == 0);
                CHECK(lower_schedule(a, ac.p, ac.b, s, err, sizeof err) != NULL);
                text[k] = sched_to_text(ac.p, s);
            }
            bool all_same = text[0] && text[1] && text[2] && !strcmp(text[0], text[1]) && !strcmp(text[0], text[2]);
            if (st->seeded) CHECK(!all_same);
            else CHECK(all_same);
            for (int k = 0; k < 3; k++) free(text[k]);
            ir_arena_free(a);
        }
        app_free(&ac);
    }
}

int main(void)
{
    RUN(test_lookup);
    RUN(test_names);
    RUN(test_make);
    CHECK_EXIT();
}
