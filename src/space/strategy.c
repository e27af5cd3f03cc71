/*
 * strategy.c - the table of schedule strategies (strategy.h).
 */
#include <stdio.h>
#include <string.h>

#include "strategy.h"

static sched_state *make_root(ir_arena *a, sc_pipeline *p, const bounds_result *b, const space_opts *o,
                              uint64_t seed, char *err, size_t errlen)
{
    (void)seed;
    sched_state *s = space_root(a, p, b, o->t);
    if (!s) snprintf(err, errlen, "the root strategy found no schedule for %s", p->name);
    return s;
}

static sched_state *make_baseline(ir_arena *a, sc_pipeline *p, const bounds_result *b, const space_opts *o,
                                  uint64_t seed, char *err, size_t errlen)
{
    (void)seed;
    sched_state *s = space_baseline(a, p, b, o->t);
    if (!s) snprintf(err, errlen, "the baseline strategy found no schedule for %s", p->name);
    return s;
}

static sched_state *make_random(ir_arena *a, sc_pipeline *p, const bounds_result *b, const space_opts *o,
                                uint64_t seed, char *err, size_t errlen)
{
    return space_random(a, p, b, o, seed, err, errlen);
}

static const space_strategy strategies[] = {
    { "root", "every Func at root (boundary wrappers inlined), 1-D tiles", false, make_root },
    { "baseline", "point-wise Funcs inlined, the rest at root, 64-thread tiles (Li 2018)", false,
      make_baseline },
    { "random", "a random walk through the schedule space", true, make_random },
};

enum { NSTRATEGIES = sizeof strategies / sizeof strategies[0] };

const space_strategy *space_strategy_by_name(const char *name)
{
    for (int i = 0; name && i < NSTRATEGIES; i++)
        if (!strcmp(strategies[i].name, name))
            return &strategies[i];
    return NULL;
}

int space_strategy_count(void)
{
    return NSTRATEGIES;
}

const space_strategy *space_strategy_at(int i)
{
    return i >= 0 && i < NSTRATEGIES ? &strategies[i] : NULL;
}

const char *space_strategy_names(char *buf, size_t len, const char *sep, const char *last)
{
    size_t n = 0;
    if (len)
        buf[0] = 0;
    for (int i = 0; i < NSTRATEGIES && n < len; i++) {
        const char *join = i == 0 ? "" : i == NSTRATEGIES - 1 ? last : sep;
        int w = snprintf(buf + n, len - n, "%s%s", join, strategies[i].name);
        if (w < 0)
            break;
        n += (size_t)w;
    }
    return buf;
}
