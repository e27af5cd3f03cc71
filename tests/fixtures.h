/*
 * fixtures.h - what several tests/test_*.c set up the same way: a target
 * by name, and a pipeline parsed from text with its bounds and an arena
 * for schedules.  Include after check.h and the stagecraft headers.
 */
#ifndef SC_FIXTURES_H
#define SC_FIXTURES_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bounds.h"
#include "ir.h"
#include "stagecraft.h"
#include "target.h"

/* targets/NAME.target; a test cannot go on without it, so it exits. */
static inline target fixture_target(const char *name) {
    target t;
    char err[512];
    if (target_by_name(name, NULL, &t, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return t;
}

typedef struct {
    sc_pipeline *p;
    bounds_result *b;
    ir_arena *a;
} fixture;

/* Parses text as the file t.pipe (a pipeline that does not name itself is
 * "t"), printing its errors and failing a CHECK on any; infers bounds and
 * makes an arena.  Free with fixture_unload. */
static inline fixture fixture_load(const char *text) {
    fixture fx = { sc_parse_string("t.pipe", text, strlen(text), NULL), NULL, ir_arena_new() };
    for (int i = 0; i < sc_error_count(fx.p); i++) fprintf(stderr, "  %s\n", sc_error_message(fx.p, i));
    CHECK(sc_error_count(fx.p) == 0);
    fx.b = bounds_infer(fx.p);
    CHECK(fx.b != NULL);
    return fx;
}

static inline void fixture_unload(fixture *fx) {
    bounds_free(fx->b);
    ir_arena_free(fx->a);
    sc_pipeline_free(fx->p);
}
#endif
