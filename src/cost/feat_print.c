/*
 * feat_print.c - the features' names, kinds, units and docs, and features
 * as a table or as JSON (features.h).
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "features.h"

/* ---- the schema -------------------------------------------------------------- */

typedef struct { const char *name; feat_kind kind; const char *unit, *doc; } feat_info;

static const feat_info list_info[FEAT_LIST_COUNT] = {
#define FEAT_INFO_(name, kind, unit, doc) { #name, kind, unit, doc },
    FEAT_LIST(FEAT_INFO_)
#undef FEAT_INFO_
};

/* "op_" KIND "_" TYPE, made on first use from analysis.h's names. */
static char hist_names[FEAT_HIST_COUNT][40];
static bool hist_ready;

static void make_hist_names(void) {
    if (hist_ready) return;
    for (int k = 0; k < OPS_KIND_COUNT; k++)
        for (int t = 0; t < SC_TYPE_COUNT; t++)
            snprintf(hist_names[FEAT_OP(k, t)], sizeof hist_names[0], "op_%s_%s",
                     ops_kind_name((ops_kind)k), sc_type_name((sc_type)t));
    hist_ready = true;
}

const char *feat_name(int i) {
    assert(i >= 0 && i < FEAT_COUNT);
    if (i < FEAT_HIST_COUNT) {
        make_hist_names();
        return hist_names[i];
    }
    return list_info[i - FEAT_HIST_COUNT].name;
}

feat_kind feat_kind_of(int i) {
    assert(i >= 0 && i < FEAT_COUNT);
    return i < FEAT_HIST_COUNT ? FEAT_ALGO : list_info[i - FEAT_HIST_COUNT].kind;
}

const char *feat_unit(int i) {
    assert(i >= 0 && i < FEAT_COUNT);
    return i < FEAT_HIST_COUNT ? "ops" : list_info[i - FEAT_HIST_COUNT].unit;
}

const char *feat_doc(int i) {
    assert(i >= 0 && i < FEAT_COUNT);
    return i < FEAT_HIST_COUNT ? "operations of this kind and type per point (Adams et al. 2019)"
                               : list_info[i - FEAT_HIST_COUNT].doc;
}

int feat_index(const char *name) {
    for (int i = 0; i < FEAT_COUNT; i++)
        if (!strcmp(feat_name(i), name)) return i;
    return -1;
}

/* ---- printing ---------------------------------------------------------------- */

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
