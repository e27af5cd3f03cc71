/*
 * feat_print.c - features as a table or as JSON (features.h).
 */
#include <math.h>
#include <stdio.h>
#include "features.h"

static const char *loc_name(sched_loc l) {
    switch (l) {
    case SCHED_ROOT: return "root";
    case SCHED_BLOCK: return "block";
    case SCHED_THREAD: return "thread";
    case SCHED_INLINE: return "inline";
    default: return "undecided";
    }
}

static const sc_func *func_at(const sc_pipeline *p, int id) { return (const sc_func *)p->funcs.items[id]; }

/* The shortest %g form that reads back as the same double (values are
 * finite by construction; a non-finite one prints as null in JSON). */
static void number(FILE *out, double v, bool json) {
    if (!isfinite(v)) {
        fputs(json ? "null" : "nan", out);
        return;
    }
    char buf[40];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        double back;
        if (sscanf(buf, "%lf", &back) == 1 && back == v) break;
    }
    fputs(buf, out);
}

void feat_print_table(FILE *out, const sc_pipeline *p, const feat_result *r) {
    fprintf(out, "func\tstage\tloc");
    for (int i = 0; i < FEAT_COUNT; i++) fprintf(out, "\t%s", feat_name(i));
    fputc('\n', out);
    for (int k = 0; k < r->n; k++) {
        const feat_row *row = &r->rows[k];
        fprintf(out, "%s\t%d\t%s", func_at(p, row->func)->name, row->stage, loc_name(row->loc));
        for (int i = 0; i < FEAT_COUNT; i++) {
            fputc('\t', out);
            number(out, row->v[i], false);
        }
        fputc('\n', out);
    }
}

/* A JSON string (names are identifiers, but a quote or a control
 * character must never break the document). */
static void string(FILE *out, const char *s) {
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(out, "\\%c", ch);
        else if (ch < 0x20) fprintf(out, "\\u%04x", ch);
        else fputc(ch, out);
    }
    fputc('"', out);
}

void feat_print_json(FILE *out, const sc_pipeline *p, const target *t, const feat_result *r) {
    fputs("{\"pipeline\": ", out);
    string(out, p->name);
    fputs(", \"target\": ", out);
    string(out, t->name);
    fputs(", \"stages\": [", out);
    for (int k = 0; k < r->n; k++) {
        const feat_row *row = &r->rows[k];
        fprintf(out, "%s\n  {\"func\": ", k ? "," : "");
        string(out, func_at(p, row->func)->name);
        fprintf(out, ", \"stage\": %d, \"loc\": \"%s\", \"features\": {", row->stage, loc_name(row->loc));
        for (int i = 0; i < FEAT_COUNT; i++) {
            fprintf(out, "%s\"%s\": ", i ? ", " : "", feat_name(i));
            number(out, row->v[i], true);
        }
        fputs("}}", out);
    }
    fputs("\n]}\n", out);
}
