/*
 * apps.h - the bundled apps (apps/NAME.pipe) as test and benchmark cases:
 * listing them, and loading one at its small or paper size with seeded
 * random inputs and the reference evaluator's outputs.
 */
#ifndef SC_APPS_H
#define SC_APPS_H

#include "bounds.h"

typedef struct {
    char name[128];
    sc_pipeline *p;
    bounds_result *b;
    sc_buffer **in;               /* one per input, in declaration order */
    sc_buffer **ref;              /* one per output: the reference outputs */
    int stages;                   /* definitions over all Funcs */
} app_case;

/* The names (without .pipe) of dir's .pipe files, sorted; the count, or -1
 * with err when dir cannot be read.  Free with apps_free_names. */
int apps_list(const char *dir, char ***names, char *err, size_t errlen);
void apps_free_names(char **names, int n);

/* Whether name is in a comma-separated list (NULL: every name is). */
bool apps_wanted(const char *list, const char *name);

/* Parses dir/name.pipe (small sizes when small), fills every input with
 * the same seeded pattern sc_evaluate uses for `seed`, and computes the
 * reference outputs.  0, or -1 with err (nothing to free then). */
int app_load(const char *dir, const char *name, bool small, uint64_t seed, app_case *c,
             char *err, size_t errlen);
void app_free(app_case *c);

#endif
