/*
 * apps.c - the bundled apps as test and benchmark cases (see apps.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apps.h"
#include "measure.h"

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int apps_list(const char *dir, char ***names, char *err, size_t errlen) {
    *names = NULL;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: cannot read the app directory (%s)", dir, strerror(errno));
        return -1;
    }
    int n = 0, cap = 0;
    char **out = NULL;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len <= 5 || strcmp(e->d_name + len - 5, ".pipe")) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            out = realloc(out, (size_t)cap * sizeof *out);
            if (!out) abort();
        }
        out[n++] = strndup(e->d_name, len - 5);
    }
    closedir(d);
    if (n) qsort(out, (size_t)n, sizeof *out, compare_names);
    *names = out;
    return n;
}

void apps_free_names(char **names, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

bool apps_wanted(const char *list, const char *name) {
    if (!list) return true;
    size_t n = strlen(name);
    for (const char *c = list; c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL)
        if (!strncmp(c, name, n) && (c[n] == ',' || c[n] == 0)) return true;
    return false;
}

int app_load(const char *dir, const char *name, bool small, uint64_t seed, app_case *c,
             char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.pipe", dir, name);
    sc_parse_options po = { small, 0, NULL, NULL };
    c->p = sc_parse_file(path, &po);
    if (sc_error_count(c->p)) {
        snprintf(err, errlen, "%s", sc_error_message(c->p, 0));
        app_free(c);
        return -1;
    }
    c->b = bounds_infer(c->p);
    char why[512];
    if (!c->b || measure_buffers_new(c->p, seed, &c->in, &c->ref, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", path, c->b ? why : sc_error_count(c->p) ? sc_error_message(c->p, 0)
                                                                               : "bounds inference failed");
        app_free(c);
        return -1;
    }
    for (int i = 0; i < c->p->funcs.n; i++) c->stages += ((sc_func *)c->p->funcs.items[i])->nstages;
    return 0;
}

void app_free(app_case *c) {
    if (c->p) measure_buffers_free(c->p, c->in, c->ref);
    if (c->b) bounds_free(c->b);
    if (c->p) sc_pipeline_free(c->p);
    memset(c, 0, sizeof *c);
}
