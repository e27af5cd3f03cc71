/*
 * cmd_samples.c - `stagecraft samples --db F stats|export FILE|import FILE`:
 * the sample store's counts, and its exchange file (store.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "store.h"
#include "tools.h"

static void samples_help(void) {
    printf("usage: stagecraft samples --db F stats\n"
           "       stagecraft samples --db F export FILE[.xz]\n"
           "       stagecraft samples --db F import FILE[.xz]\n\n"
           "The sample store (an SQLite database of measured schedules, the cost model's\n"
           "training data):\n"
           "  stats    counts: samples (the line 'N samples'), failures, pipelines,\n"
           "           schedules, per device and per pipeline source\n"
           "  export   writes every device, pipeline, sample and failure as sorted text,\n"
           "           one record per line (xz-compressed when FILE ends in .xz)\n"
           "  import   adds the records of such a file that the database lacks (all or\n"
           "           nothing); creates the database if it does not exist\n");
}

int tool_samples(int argc, char **argv) {
    const char *db = NULL, *verb = NULL, *file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { samples_help(); return TOOL_OK; }
        if (!strcmp(a, "--db") || !strncmp(a, "--db=", 5)) {
            db = a[4] == '=' ? a + 5 : i + 1 < argc ? argv[++i] : NULL;
            if (!db || !*db) return tool_usage_error("samples", "--db needs a database file");
        } else if (a[0] == '-' && a[1]) {
            return tool_usage_error("samples", "unknown option '%s'", a);
        } else if (!verb) {
            verb = a;
        } else if (!file) {
            file = a;
        } else {
            return tool_usage_error("samples", "unexpected argument '%s'", a);
        }
    }
    if (!db) return tool_usage_error("samples", "--db F is required");
    if (!verb) return tool_usage_error("samples", "expected stats, export FILE or import FILE");
    bool stats = !strcmp(verb, "stats"), exp = !strcmp(verb, "export"), imp = !strcmp(verb, "import");
    if (!stats && !exp && !imp)
        return tool_usage_error("samples", "'%s' is not one of stats, export, import", verb);
    if (stats && file) return tool_usage_error("samples", "stats takes no file (got '%s')", file);
    if (!stats && !file) return tool_usage_error("samples", "%s needs a FILE", verb);
    char err[2048];
    store *st = store_open(db, imp ? STORE_WRITE : STORE_READ, err, sizeof err);
    if (!st) {
        fprintf(stderr, "stagecraft samples: %s\n", err);
        return TOOL_INPUT;
    }
    int rc = 0;
    int64_t n = 0;
    if (stats) rc = store_print_stats(st, stdout, err, sizeof err);
    else if (exp) rc = store_export(st, file, &n, err, sizeof err);
    else rc = store_import(st, file, &n, err, sizeof err);
    if (rc == 0 && exp) printf("wrote %s: %" PRId64 " samples and failures\n", file, n);
    if (rc == 0 && imp) printf("imported %s into %s: %" PRId64 " samples and failures added\n", file, db, n);
    if (rc) fprintf(stderr, "stagecraft samples: %s%s\n", err, imp ? " (nothing was imported)" : "");
    store_close(st);
    return rc ? TOOL_INPUT : TOOL_OK;
}
