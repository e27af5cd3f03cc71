/*
 * sched.c - schedule states: building and copying them, hashing them to a
 * depth, checking them against the pipeline's rules and a target's limits,
 * and their text forms (the schedule text, and the equivalent Halide
 * schedule).  See sched.h for the schedule space and docs/schedule.md for
 * the text form and the limits.
 */
#include <assert.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "legal.h"
#include "sched.h"

static const sc_func *func_at(const sc_pipeline *p, int id) {
    return (const sc_func *)p->funcs.items[id];
}

static int pure_dims(const sc_func *f, int st, int *dims) { return legal_pure_dims(f, st, dims); }

/* The i-th Func from the outputs to the inputs (reverse topological
 * order); creation order if the pipeline is not finalized. */
static const sc_func *from_outputs(const sc_pipeline *p, int i) {
    if (p->order.n == p->funcs.n) return ir_order_at(p, p->order.n - 1 - i);
    return func_at(p, i);
}

static bool is_fused(const sched_func *sf) {
    return sf && (sf->loc == SCHED_BLOCK || sf->loc == SCHED_THREAD);
}

/* ---- a growing string ---------------------------------------------------- */

typedef struct { char *s; size_t n, cap; } sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert(need >= 0);
    if (b->n + (size_t)need + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->n + (size_t)need + 1 > cap) cap *= 2;
        b->s = realloc(b->s, cap);
        if (!b->s) abort();
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

static char *sb_take(sbuf *b) {
    if (!b->s) sb_printf(b, "%s", "");
    return b->s;
}

/* ---- states -------------------------------------------------------------- */

sched_func *sched_func_new(ir_arena *a, sched_loc loc, int at, int nstages) {
    sched_func *sf = ir_alloc(a, sizeof *sf);
    sf->loc = loc;
    sf->at = at;
    sf->nstages = nstages;
    if (loc == SCHED_ROOT || loc == SCHED_BLOCK)
        sf->tile = ir_alloc(a, sizeof(sched_tile) * (size_t)(nstages > 0 ? nstages : 1));
    return sf;
}

sched_func *sched_func_copy(ir_arena *a, const sched_func *sf) {
    sched_func *c = ir_alloc(a, sizeof *c);
    *c = *sf;
    if (sf->tile) {
        c->tile = ir_alloc(a, sizeof(sched_tile) * (size_t)(sf->nstages > 0 ? sf->nstages : 1));
        memcpy(c->tile, sf->tile, sizeof(sched_tile) * (size_t)sf->nstages);
    }
    return c;
}

sched_state *sched_state_new(ir_arena *a, const sc_pipeline *p) {
    sched_state *s = ir_alloc(a, sizeof *s);
    s->nfuncs = p->funcs.n;
    s->f = ir_alloc(a, sizeof(sched_func *) * (size_t)(s->nfuncs ? s->nfuncs : 1));
    return s;
}

sched_state *sched_state_copy(ir_arena *a, const sched_state *s) {
    sched_state *c = ir_alloc(a, sizeof *c);
    c->nfuncs = s->nfuncs;
    c->f = ir_alloc(a, sizeof(sched_func *) * (size_t)(c->nfuncs ? c->nfuncs : 1));
    if (c->nfuncs) memcpy(c->f, s->f, sizeof(sched_func *) * (size_t)c->nfuncs);
    return c;
}

bool sched_complete(const sc_pipeline *p, const sched_state *s) {
    if (s->nfuncs != p->funcs.n) return false;
    for (int i = 0; i < p->funcs.n; i++)
        if (func_at(p, i)->kind == FUNC_DEFINED &&
            (!s->f[i] || s->f[i]->loc == SCHED_UNDECIDED || s->f[i]->pending > 0))
            return false;
    return true;
}

/* ---- hash ------------------------------------------------------------------- */

/* FNV-1a, 64 bits, over the 8 bytes of each value.  A zero byte only
 * multiplies by the prime, so a value below 256 (most of them: tags,
 * ids, tile sizes) takes one step and the prime to the 8th: the same
 * hash, 8 times fewer multiplications. */
static uint64_t fnv(uint64_t h, int64_t v) {
    const uint64_t prime = 0x100000001b3ull;
    const uint64_t prime8 = 0x1efac7090aef4a21ull;   /* prime^8 mod 2^64 */
    uint64_t u = (uint64_t)v;
    if (u < 256) return (h ^ u) * prime8;
    for (int i = 0; i < 8; i++) {
        h ^= (u >> (8 * i)) & 0xff;
        h *= prime;
    }
    return h;
}

/* Per Func, in id order (inputs and undecided Funcs alike hash a tag):
 *   depth 0: root / inline / fused / undecided.  Inline is a decision like
 *            root, so two states that inline different Funcs differ; which
 *            level a fused Func sits at, and where, is left to depth 1-2.
 *   depth 1: a BLOCK Func also hashes "block" and its consumer.
 *   depth 2: a THREAD Func also hashes "thread" and its consumer.
 *   depth 3+: the tilings: ROOT threads and serial sizes, BLOCK threads,
 *            per stage.  (Deeper depths add nothing more.) */
uint64_t sched_hash(const sched_state *s, int depth) {
    enum { T_UNDECIDED, T_ROOT, T_INLINE, T_FUSED, T_BLOCK, T_THREAD };
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, s->nfuncs);
    for (int i = 0; i < s->nfuncs; i++) {
        const sched_func *sf = s->f[i];
        sched_loc loc = sf ? sf->loc : SCHED_UNDECIDED;
        int tag = loc == SCHED_ROOT ? T_ROOT : loc == SCHED_INLINE ? T_INLINE
                : is_fused(sf) ? T_FUSED : T_UNDECIDED;
        if (depth >= 1 && loc == SCHED_BLOCK) tag = T_BLOCK;
        if (depth >= 2 && loc == SCHED_THREAD) tag = T_THREAD;
        h = fnv(h, tag);
        if (tag == T_BLOCK || tag == T_THREAD) h = fnv(h, sf->at);
        if (depth >= 3 && (loc == SCHED_ROOT || loc == SCHED_BLOCK)) {
            int ns = sf->tile ? sf->nstages - sf->pending : 0;
            h = fnv(h, ns);
            for (int st = 0; st < ns; st++) {
                const sched_tile *t = &sf->tile[st];
                int np = t->npure < SC_MAX_DIMS ? t->npure : SC_MAX_DIMS;
                h = fnv(h, np);
                for (int k = 0; k < np; k++) {
                    h = fnv(h, t->threads[k]);
                    if (loc == SCHED_ROOT) h = fnv(h, t->serial[k]);
                }
            }
        }
    }
    return h;
}

/* ---- check ------------------------------------------------------------------ */

/* "blur_x" for a single-stage Func, "hist stage 1" otherwise. */
static const char *stage_name(const sc_func *f, int st, char *buf, size_t len) {
    if (f->nstages == 1) snprintf(buf, len, "%s", f->name);
    else snprintf(buf, len, "%s stage %d", f->name, st);
    return buf;
}

const char *sched_loc_name(sched_loc l) {
    switch (l) {
    case SCHED_UNDECIDED: return "undecided";
    case SCHED_INLINE: return "inline";
    case SCHED_ROOT: return "root";
    case SCHED_BLOCK: return "block";
    case SCHED_THREAD: return "thread";
    }
    return "?";
}

int sched_check(const sc_pipeline *p, const bounds_result *b, const sched_state *s,
                const target *t, bool warp_multiple, char *err, size_t errlen) {
    char local[512];
    if (!err || !errlen) {
        err = local;
        errlen = sizeof local;
    }
    err[0] = 0;
    if (s->nfuncs != p->funcs.n) {
        snprintf(err, errlen, "the schedule is for a pipeline of %d Funcs, not %d", s->nfuncs, p->funcs.n);
        return -1;
    }
    if (p->order.n != p->funcs.n) {
        snprintf(err, errlen, "pipeline %s is not finalized", p->name);
        return -1;
    }
    if (!b || t->warp_size < 1) {
        snprintf(err, errlen, "%s", !b ? "no bounds to check the schedule against" : "the target has no warp size");
        return -1;
    }
    for (int i = p->order.n - 1; i >= 0; i--) {
        const sc_func *f = ir_order_at(p, i);
        const sched_func *sf = f->kind == FUNC_DEFINED ? s->f[f->id] : NULL;
        if (f->kind == FUNC_DEFINED && (!sf || sf->loc == SCHED_UNDECIDED || sf->pending > 0)) {
            snprintf(err, errlen, "%s: not scheduled (the state is partial)", f->name);
            return -1;
        }
    }
    legal_ctx *x = legal_new(p, b, t, warp_multiple);
    int rc = legal_fits(x, s, err, errlen);
    legal_free(x);
    return rc;
}

/* ---- text form -------------------------------------------------------------- */

char *sched_to_text(const sc_pipeline *p, const sched_state *s) {
    sbuf b = {0};
    sb_printf(&b, "schedule %s;\n", p->name);
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = from_outputs(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        const sched_func *sf = f->id < s->nfuncs ? s->f[f->id] : NULL;
        if (!sf || sf->loc == SCHED_UNDECIDED) {
            sb_printf(&b, "# %s: undecided\n", f->name);
            continue;
        }
        sb_printf(&b, "%s: %s", f->name, sched_loc_name(sf->loc));
        if (is_fused(sf))
            sb_printf(&b, " of %s", sf->at >= 0 && sf->at < p->funcs.n ? func_at(p, sf->at)->name : "?");
        if (sf->loc == SCHED_ROOT || sf->loc == SCHED_BLOCK)
            for (int st = 0; sf->tile && st < sf->nstages; st++) {
                const sched_tile *t = &sf->tile[st];
                int dims[SC_MAX_DIMS], np = st < f->nstages ? pure_dims(f, st, dims) : 0;
                sb_printf(&b, " [");
                for (int k = 0; k < t->npure && k < SC_MAX_DIMS; k++) {
                    sb_printf(&b, "%s%s=%d", k ? " " : "", k < np ? f->vars[dims[k]] : "?", t->threads[k]);
                    if (sf->loc == SCHED_ROOT) sb_printf(&b, "x%d", t->serial[k]);
                }
                sb_printf(&b, "]");
            }
        sb_printf(&b, ";\n");
    }
    return sb_take(&b);
}

/* ---- parsing ------------------------------------------------------------------- */

/* The grammar (docs/schedule.md):
 *   schedule := 'schedule' NAME ';' entry*
 *   entry    := FUNC ':' ( 'inline' | 'root' tiles | 'block' 'of' FUNC tiles
 *                        | 'thread' 'of' FUNC ) ';'
 *   tiles    := ( '[' ( VAR '=' INT ( 'x' INT )? )* ']' )*     one per stage
 * '#' starts a comment to the end of the line. */
typedef struct {
    const sc_pipeline *p;
    const char *file, *text;
    size_t pos;
    int line, col;
    char *err;
    size_t errlen;
    bool failed;
} scan;

typedef enum { TK_EOF, TK_IDENT, TK_NUM, TK_PUNCT } tok_kind;

typedef struct {
    tok_kind kind;
    size_t start, len;
    int line, col;
} token;

static void skip_space(scan *s) {
    for (;;) {
        char ch = s->text[s->pos];
        if (ch == '\n') {
            s->line++;
            s->col = 1;
            s->pos++;
        } else if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v') {
            s->pos++;
            s->col++;
        } else if (ch == '#') {
            while (s->text[s->pos] && s->text[s->pos] != '\n') {
                s->pos++;
                s->col++;
            }
        } else {
            return;
        }
    }
}

static bool ident_start(char ch) { return isalpha((unsigned char)ch) || ch == '_'; }
static bool ident_char(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

/* The next token, without consuming it.  A number is its digits and any
 * letters glued to them ("32x2" is handled by the tile reader). */
static token peek(scan *s) {
    skip_space(s);
    token t = { TK_EOF, s->pos, 0, s->line, s->col };
    const char *c = s->text + s->pos;
    if (!*c) return t;
    if (ident_start(*c)) {
        t.kind = TK_IDENT;
        while (ident_char(c[t.len])) t.len++;
    } else if (isdigit((unsigned char)*c)) {
        t.kind = TK_NUM;
        while (isdigit((unsigned char)c[t.len])) t.len++;
    } else {
        t.kind = TK_PUNCT;
        t.len = 1;
    }
    return t;
}

static void advance(scan *s, const token *t) {
    s->pos = t->start + t->len;
    s->col = t->col + (int)t->len;
}

static bool tok_is(const scan *s, const token *t, const char *word) {
    return t->len == strlen(word) && !memcmp(s->text + t->start, word, t->len);
}

/* What a token looks like in a message: 'foo', or "the end of the text". */
static const char *tok_desc(const scan *s, const token *t, char *buf, size_t len) {
    if (t->kind == TK_EOF) return "the end of the text";
    size_t n = t->len;
    /* show a little of what follows a number or punctuation, up to a space */
    if (t->kind != TK_IDENT)
        while (s->text[t->start + n] && !isspace((unsigned char)s->text[t->start + n]) && n < 24 &&
               (t->kind == TK_NUM ? ident_char(s->text[t->start + n]) : false))
            n++;
    if (n > 40) n = 40;
    unsigned char ch = (unsigned char)s->text[t->start];
    if (t->kind == TK_PUNCT && (ch < 32 || ch >= 127)) snprintf(buf, len, "byte 0x%02x", ch);
    else snprintf(buf, len, "'%.*s'", (int)n, s->text + t->start);
    return buf;
}

static void perr(scan *s, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void perr(scan *s, int line, int col, const char *fmt, ...) {
    if (s->failed) return;
    s->failed = true;
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (s->err && s->errlen) snprintf(s->err, s->errlen, "%s:%d:%d: %s", s->file, line, col, msg);
}

/* Consumes one punctuation character or reports what was expected. */
static bool expect(scan *s, char ch, const char *where) {
    token t = peek(s);
    if (t.kind == TK_PUNCT && s->text[t.start] == ch) {
        advance(s, &t);
        return true;
    }
    char d[64];
    perr(s, t.line, t.col, "expected '%c' %s, got %s", ch, where, tok_desc(s, &t, d, sizeof d));
    return false;
}

/* An identifier into buf (truncated copies never match a Func). */
static bool ident(scan *s, token *t, char *buf, size_t len, const char *what) {
    *t = peek(s);
    if (t->kind != TK_IDENT) {
        char d[64];
        perr(s, t->line, t->col, "expected %s, got %s", what, tok_desc(s, t, d, sizeof d));
        return false;
    }
    size_t n = t->len < len - 1 ? t->len : len - 1;
    memcpy(buf, s->text + t->start, n);
    buf[n] = 0;
    advance(s, t);
    return true;
}

/* A positive integer (at most 2^30). */
static bool number(scan *s, int *out, const char *what) {
    token t = peek(s);
    char d[64];
    if (t.kind == TK_PUNCT && s->text[t.start] == '-') {
        perr(s, t.line, t.col, "expected a positive integer for %s, got a negative number", what);
        return false;
    }
    if (t.kind != TK_NUM) {
        perr(s, t.line, t.col, "expected a positive integer for %s, got %s", what, tok_desc(s, &t, d, sizeof d));
        return false;
    }
    if (ident_char(s->text[t.start + t.len]) && s->text[t.start + t.len] != 'x') {
        perr(s, t.line, t.col, "bad number %s for %s (expected digits only)", tok_desc(s, &t, d, sizeof d), what);
        return false;
    }
    long long v = 0;
    for (size_t i = 0; i < t.len; i++) {
        v = v * 10 + (s->text[t.start + i] - '0');
        if (v > (1 << 30)) {
            perr(s, t.line, t.col, "number too large for %s (at most %d)", what, 1 << 30);
            return false;
        }
    }
    if (v < 1) {
        perr(s, t.line, t.col, "expected a positive integer for %s, got 0", what);
        return false;
    }
    advance(s, &t);
    *out = (int)v;
    return true;
}

/* A defined Func by name, or an error naming what it is instead. */
static const sc_func *lookup_func(scan *s, const token *t, const char *name, const char *role) {
    const sc_func *f = sc_func_lookup(s->p, name);
    if (!f) {
        perr(s, t->line, t->col, "unknown %s '%s' (pipeline %s has no such Func)", role, name, s->p->name);
        return NULL;
    }
    if (f->kind != FUNC_DEFINED) {
        perr(s, t->line, t->col, "%s '%s' is an input, not a Func (inputs are not scheduled)", role, name);
        return NULL;
    }
    return f;
}

static const char *ordinal(int k, char *buf, size_t len) {
    const char *suf = (k % 100 >= 11 && k % 100 <= 13) ? "th" : k % 10 == 1 ? "st" : k % 10 == 2 ? "nd"
                    : k % 10 == 3 ? "rd" : "th";
    snprintf(buf, len, "%d%s", k, suf);
    return buf;
}

/* One [...] per stage: `var=TxS` (root) or `var=T` (block) per pure loop. */
static bool parse_tiles(scan *s, const sc_func *f, sched_func *sf) {
    bool root = sf->loc == SCHED_ROOT;
    sf->nstages = f->nstages;
    for (int st = 0; st < f->nstages; st++) {
        char where[400], nm[200];
        stage_name(f, st, nm, sizeof nm);
        snprintf(where, sizeof where, "to open the tiling of %s (one [...] per stage; %d in all)", nm, f->nstages);
        if (!expect(s, '[', where)) return false;
        sched_tile *t = &sf->tile[st];
        int dims[SC_MAX_DIMS], np = pure_dims(f, st, dims);
        t->npure = np;
        char list[160] = "";
        for (int k = 0; k < np; k++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", k ? " " : "", f->vars[dims[k]]);
        }
        for (int k = 0; k < np; k++) {
            token v;
            char name[128], ord[16], what[1024];
            snprintf(what, sizeof what, "'%s', the %s of the pure loops of %s (%s)", f->vars[dims[k]],
                     ordinal(k + 1, ord, sizeof ord), nm, list);
            if (!ident(s, &v, name, sizeof name, what)) return false;
            if (strcmp(name, f->vars[dims[k]])) {
                char d[64];
                perr(s, v.line, v.col, "expected %s, got %s", what, tok_desc(s, &v, d, sizeof d));
                return false;
            }
            char eqw[160];
            snprintf(eqw, sizeof eqw, "after loop %s", name);
            if (!expect(s, '=', eqw)) return false;
            char tw[512];
            snprintf(tw, sizeof tw, "the threads of loop %s of %s", name, nm);
            if (!number(s, &t->threads[k], tw)) return false;
            t->serial[k] = 1;
            if (!root && s->text[s->pos] == 'x') {
                perr(s, s->line, s->col, "block-level tiles give threads only (%s=%d), not threads x serial",
                     name, t->threads[k]);
                return false;
            }
            if (root) {
                /* `x` glued to the number or spaced out */
                skip_space(s);
                if (s->text[s->pos] != 'x') {
                    token q = peek(s);
                    char d[64];
                    perr(s, q.line, q.col, "expected 'x' and the serial size after %s=%d (root tiles are "
                         "threads x serial), got %s", name, t->threads[k], tok_desc(s, &q, d, sizeof d));
                    return false;
                }
                s->pos++;
                s->col++;
                snprintf(tw, sizeof tw, "the serial size of loop %s of %s", name, nm);
                if (!number(s, &t->serial[k], tw)) return false;
            }
        }
        token c = peek(s);
        if (!(c.kind == TK_PUNCT && s->text[c.start] == ']')) {
            char d[64];
            perr(s, c.line, c.col, "%s has %d pure loop%s (%s%s); expected ']', got %s", nm, np,
                 np == 1 ? "" : "s", list, np ? "" : "none", tok_desc(s, &c, d, sizeof d));
            return false;
        }
        advance(s, &c);
    }
    return true;
}

sched_state *sched_parse(ir_arena *a, const sc_pipeline *p, const char *filename,
                         const char *text, char *err, size_t errlen) {
    scan s = { p, filename ? filename : "<schedule>", text ? text : "", 0, 1, 1, err, errlen, false };
    if (err && errlen) err[0] = 0;
    int n = p->funcs.n;
    sched_state *st = sched_state_new(a, p);
    int *seen_line = calloc((size_t)n + 1, sizeof(int)), *seen_col = calloc((size_t)n + 1, sizeof(int));
    if (!seen_line || !seen_col) abort();
    token t;
    char name[128], d[64];

    t = peek(&s);
    if (!tok_is(&s, &t, "schedule")) {
        perr(&s, t.line, t.col, "expected 'schedule %s;' at the start, got %s", p->name, tok_desc(&s, &t, d, sizeof d));
        goto out;
    }
    advance(&s, &t);
    if (!ident(&s, &t, name, sizeof name, "the pipeline's name after 'schedule'")) goto out;
    if (strcmp(name, p->name)) {
        perr(&s, t.line, t.col, "this schedule is for pipeline '%s', not '%s'", name, p->name);
        goto out;
    }
    if (!expect(&s, ';', "after the pipeline's name")) goto out;

    for (;;) {
        t = peek(&s);
        if (t.kind == TK_EOF) break;
        if (t.kind != TK_IDENT) {
            perr(&s, t.line, t.col, "expected a Func name or the end of the schedule, got %s",
                 tok_desc(&s, &t, d, sizeof d));
            goto out;
        }
        token ft;
        if (!ident(&s, &ft, name, sizeof name, "a Func name")) goto out;
        const sc_func *f = lookup_func(&s, &ft, name, "Func");
        if (!f) goto out;
        if (seen_line[f->id]) {
            perr(&s, ft.line, ft.col, "%s is listed twice (first at line %d, column %d)", f->name,
                 seen_line[f->id], seen_col[f->id]);
            goto out;
        }
        seen_line[f->id] = ft.line;
        seen_col[f->id] = ft.col;
        char where[200];
        snprintf(where, sizeof where, "after the Func name %s", f->name);
        if (!expect(&s, ':', where)) goto out;
        token kt;
        snprintf(where, sizeof where, "inline, root, block or thread after '%s:'", f->name);
        if (!ident(&s, &kt, name, sizeof name, where)) goto out;
        sched_func *sf = ir_alloc(a, sizeof *sf);
        sf->at = -1;
        if (tok_is(&s, &kt, "inline")) sf->loc = SCHED_INLINE;
        else if (tok_is(&s, &kt, "root")) sf->loc = SCHED_ROOT;
        else if (tok_is(&s, &kt, "block")) sf->loc = SCHED_BLOCK;
        else if (tok_is(&s, &kt, "thread")) sf->loc = SCHED_THREAD;
        else {
            perr(&s, kt.line, kt.col, "expected %s, got %s", where, tok_desc(&s, &kt, d, sizeof d));
            goto out;
        }
        if (is_fused(sf)) {
            token ot, ct;
            snprintf(where, sizeof where, "'of' and the consumer after '%s: %s'", f->name, sched_loc_name(sf->loc));
            if (!ident(&s, &ot, name, sizeof name, where)) goto out;
            if (!tok_is(&s, &ot, "of")) {
                perr(&s, ot.line, ot.col, "expected %s, got %s", where, tok_desc(&s, &ot, d, sizeof d));
                goto out;
            }
            if (!ident(&s, &ct, name, sizeof name, "the consumer's name after 'of'")) goto out;
            const sc_func *cf = lookup_func(&s, &ct, name, "consumer");
            if (!cf) goto out;
            sf->at = cf->id;
        }
        if (sf->loc == SCHED_ROOT || sf->loc == SCHED_BLOCK) {
            sf->tile = ir_alloc(a, sizeof(sched_tile) * (size_t)(f->nstages ? f->nstages : 1));
            if (!parse_tiles(&s, f, sf)) goto out;
            if (f->nstages == 1) snprintf(where, sizeof where, "after the tiling of %s (it has 1 stage)", f->name);
            else snprintf(where, sizeof where, "after the %d tilings of %s (one per stage)", f->nstages, f->name);
        } else {
            snprintf(where, sizeof where, "after '%s' (%s Funcs are not tiled)", sched_loc_name(sf->loc),
                     sf->loc == SCHED_INLINE ? "inline" : "thread-level");
        }
        if (!expect(&s, ';', where)) goto out;
        st->f[f->id] = sf;
    }
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = from_outputs(p, i);
        if (f->kind == FUNC_DEFINED && !seen_line[f->id]) {
            t = peek(&s);
            perr(&s, t.line, t.col, "missing Func %s (every Func of pipeline %s must be scheduled)", f->name,
                 p->name);
            goto out;
        }
    }
out:
    free(seen_line);
    free(seen_col);
    return s.failed ? NULL : st;
}

/* ---- Halide ------------------------------------------------------------------ */

/* The Halide form, one statement per stage:
 *   root:   per stage, f.compute_root() / f.update(i), then
 *           .split(x, x_o, x_i, T*S, TailStrategy::GuardWithIf).split(x_i, x_t, x_s, S) ...
 *           .reorder(<rvars>, x_s.., x_t.., x_o..) (x_s.. first where the stage
 *           accumulates in place over more than one point a thread, as lowering)
 *           [.fuse(z_o, w_o, z_w_o) ... when more than 3 pure loops]
 *           .gpu_blocks(x_o, ...).gpu_threads(x_t, ...).unroll(x_s) (S > 1)
 *   block:  f.compute_at(C, <C's innermost block var>) per stage
 *           .split(x, x_s, x_t, T, TailStrategy::GuardWithIf) ... .reorder(<rvars>, x_s.., x_t..).gpu_threads(x_t, ...)
 *   thread: f.compute_at(C, <C's innermost thread var>);
 *   inline: a comment.
 * Halide spreads a block-level Func's points over the threads with a
 * stride (x = x_s * T + x_t) where stagecraft gives each thread
 * consecutive points; the decisions (where, how many threads) are the same. */

typedef struct {
    sbuf vars;                  /* names declared so far, " a b c " */
    sbuf body;
} hal;

static void declare(hal *h, const char *name) {
    char key[200];
    snprintf(key, sizeof key, " %s ", name);
    if (h->vars.s && strstr(h->vars.s, key)) return;
    if (!h->vars.s) sb_printf(&h->vars, " ");
    sb_printf(&h->vars, "%s ", name);
}

/* The handle of a stage: "f" or "f.update(0)". */
static void stage_handle(char *buf, size_t len, const sc_func *f, int st) {
    if (st == 0) snprintf(buf, len, "%s", f->name);
    else snprintf(buf, len, "%s.update(%d)", f->name, st - 1);
}

/* Name of a (possibly fused) group of per-loop vars: loops k0.. of f. */
static void group_name(char *buf, size_t len, const sc_func *f, const int *dims, int from, int to,
                       const char *suffix) {
    buf[0] = 0;
    for (int k = from; k < to; k++) {
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s_", f->vars[dims[k]]);
    }
    size_t l = strlen(buf);
    snprintf(buf + l, len - l, "%s", suffix);
}

/* The loop level "at C": innermost block var (BLOCK) or thread var
 * (THREAD) of the stage of C that consumes the Func, or the outermost
 * level of C when C is itself fused (its loops are thread or serial
 * loops computed once per block or per thread). */
static void loop_level(char *buf, size_t len, const sc_pipeline *p, const sched_state *s, int at,
                       int stage, bool block) {
    const sc_func *c = func_at(p, at);
    const sched_func *cf = s->f[at];
    int dims[SC_MAX_DIMS], np = stage >= 0 && stage < c->nstages ? pure_dims(c, stage, dims) : 0;
    char var[200];
    if (cf && cf->loc == SCHED_ROOT && np > 0) snprintf(var, sizeof var, "%s_%s", c->vars[dims[0]], block ? "o" : "t");
    else if (cf && cf->loc == SCHED_BLOCK && !block && np > 0) snprintf(var, sizeof var, "%s_t", c->vars[dims[0]]);
    else snprintf(var, sizeof var, "Var::outermost()");
    if (stage > 0) snprintf(buf, len, "LoopLevel(%s, %s, %d)", c->name, var, stage);
    else snprintf(buf, len, "%s, %s", c->name, var);
}

/* The serial loops of a stage, innermost first, for .reorder: the
 * reduction variables, then the serial pure loops, or the other way round
 * (outer) where lowering runs the reduction around the tile. */
static void reorder_serial(sbuf *b, const sc_func *f, int st, const int *dims, int np, bool outer) {
    const ir_stage *stg = &f->stages[st];
    for (int pass = 0; pass < 2; pass++) {
        if (pass == (outer ? 1 : 0) && stg->rdom)
            for (int d = 0; d < stg->rdom->ndims; d++) sb_printf(b, "%s.%c, ", stg->rdom->name, "xyzw"[d]);
        if (pass == (outer ? 0 : 1))
            for (int k = 0; k < np; k++) sb_printf(b, "%s_s, ", f->vars[dims[k]]);
    }
}

static void halide_root_stage(hal *h, const sc_func *f, int st, const sched_tile *t) {
    char hd[200];
    stage_handle(hd, sizeof hd, f, st);
    int dims[SC_MAX_DIMS], np = pure_dims(f, st, dims);
    if (t->npure < np) np = t->npure;
    sbuf *b = &h->body;
    sb_printf(b, "%s%s", hd, st == 0 ? ".compute_root()" : "");
    if (np == 0) {
        sb_printf(b, ".gpu_single_thread();\n");
        return;
    }
    for (int k = 0; k < np; k++) {
        const char *v = f->vars[dims[k]];
        sb_printf(b, "\n    .split(%s, %s_o, %s_i, %d, TailStrategy::GuardWithIf).split(%s_i, %s_t, %s_s, %d)", v,
                  v, v, t->threads[k] * t->serial[k], v, v, v, t->serial[k]);
        const char *suf[4] = { "o", "i", "t", "s" };
        for (int q = 0; q < 4; q++) {
            char nm[200];
            snprintf(nm, sizeof nm, "%s_%s", v, suf[q]);
            declare(h, nm);
        }
    }
    sb_printf(b, "\n    .reorder(");
    /* as nest_reduction_around_tile: more than one point a thread */
    int64_t pts = 1;
    for (int k = 0; k < np; k++) pts *= t->serial[k];
    reorder_serial(b, f, st, dims, np, pts > 1 && ir_stage_reduction_around(f, st));
    for (int k = 0; k < np; k++) sb_printf(b, "%s_t, ", f->vars[dims[k]]);
    for (int k = 0; k < np; k++) sb_printf(b, "%s_o%s", f->vars[dims[k]], k + 1 < np ? ", " : ")");
    /* at most 3 GPU dimensions: the 3rd and outer loops are fused */
    const char *lv[2] = { "o", "t" };
    char fused[2][200];
    for (int q = 0; q < 2; q++) {
        snprintf(fused[q], sizeof fused[q], "%s_%s", np > 2 ? f->vars[dims[2]] : "", lv[q]);
        for (int k = 3; k < np; k++) {
            char next[200];
            group_name(next, sizeof next, f, dims, 2, k + 1, lv[q]);
            sb_printf(b, "\n    .fuse(%s, %s_%s, %s)", fused[q], f->vars[dims[k]], lv[q], next);
            declare(h, next);
            memcpy(fused[q], next, sizeof next);
        }
    }
    for (int q = 0; q < 2; q++) {
        sb_printf(b, "\n    .%s(", q == 0 ? "gpu_blocks" : "gpu_threads");
        for (int k = 0; k < np && k < 3; k++) {
            if (k == 2) sb_printf(b, ", %s", fused[q]);
            else sb_printf(b, "%s%s_%s", k ? ", " : "", f->vars[dims[k]], lv[q]);
        }
        sb_printf(b, ")");
    }
    for (int k = 0; k < np; k++)
        if (t->serial[k] > 1) sb_printf(b, ".unroll(%s_s)", f->vars[dims[k]]);
    sb_printf(b, ";\n");
}

static void halide_block_stage(hal *h, const sc_func *f, int st, const sched_tile *t, const char *level) {
    char hd[200];
    stage_handle(hd, sizeof hd, f, st);
    int dims[SC_MAX_DIMS], np = pure_dims(f, st, dims);
    if (t->npure < np) np = t->npure;
    sbuf *b = &h->body;
    if (st == 0) sb_printf(b, "%s.compute_at(%s)", hd, level);
    else sb_printf(b, "%s", hd);
    if (np == 0) {
        sb_printf(b, ";\n");
        return;
    }
    for (int k = 0; k < np; k++) {
        const char *v = f->vars[dims[k]];
        sb_printf(b, "\n    .split(%s, %s_s, %s_t, %d, TailStrategy::GuardWithIf)", v, v, v, t->threads[k]);
        char nm[200];
        snprintf(nm, sizeof nm, "%s_s", v);
        declare(h, nm);
        snprintf(nm, sizeof nm, "%s_t", v);
        declare(h, nm);
    }
    sb_printf(b, "\n    .reorder(");
    /* a thread computes ceil(footprint / threads) points of each loop,
     * which this form does not know: the reduction around them where
     * lowering puts it for more than one */
    reorder_serial(b, f, st, dims, np, ir_stage_reduction_around(f, st));
    for (int k = 0; k < np; k++) sb_printf(b, "%s_t%s", f->vars[dims[k]], k + 1 < np ? ", " : ")");
    char fused[200];
    snprintf(fused, sizeof fused, "%s_t", np > 2 ? f->vars[dims[2]] : "");
    for (int k = 3; k < np; k++) {
        char next[200];
        group_name(next, sizeof next, f, dims, 2, k + 1, "t");
        sb_printf(b, "\n    .fuse(%s, %s_t, %s)", fused, f->vars[dims[k]], next);
        declare(h, next);
        memcpy(fused, next, sizeof next);
    }
    sb_printf(b, "\n    .gpu_threads(");
    for (int k = 0; k < np && k < 3; k++) {
        if (k == 2) sb_printf(b, ", %s", fused);
        else sb_printf(b, "%s%s_t", k ? ", " : "", f->vars[dims[k]]);
    }
    sb_printf(b, ");\n");
}

char *sched_to_halide(const sc_pipeline *p, const sched_state *s) {
    hal h = { {0}, {0} };
    int n = p->funcs.n;
    legal_ctx *x = legal_new(p, NULL, NULL, false);
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = from_outputs(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        const sched_func *sf = f->id < s->nfuncs ? s->f[f->id] : NULL;
        sbuf *b = &h.body;
        if (!sf || sf->loc == SCHED_UNDECIDED) {
            sb_printf(b, "// %s: undecided\n", f->name);
            continue;
        }
        switch (sf->loc) {
        case SCHED_INLINE:
            sb_printf(b, "// %s: inline\n", f->name);
            break;
        case SCHED_ROOT:
            for (int st = 0; sf->tile && st < f->nstages && st < sf->nstages; st++)
                halide_root_stage(&h, f, st, &sf->tile[st]);
            break;
        case SCHED_BLOCK:
        case SCHED_THREAD: {
            if (sf->at < 0 || sf->at >= n) {
                sb_printf(b, "// %s: fused into an unknown Func\n", f->name);
                break;
            }
            int stage = legal_stage_at(x, s, f->id);
            if (stage < 0) stage = 0;
            char level[300];
            loop_level(level, sizeof level, p, s, sf->at, stage, sf->loc == SCHED_BLOCK);
            if (sf->loc == SCHED_THREAD) {
                sb_printf(b, "%s.compute_at(%s);\n", f->name, level);
                break;
            }
            for (int st = 0; sf->tile && st < f->nstages && st < sf->nstages; st++)
                halide_block_stage(&h, f, st, &sf->tile[st], level);
            break;
        }
        default:
            break;
        }
    }
    legal_free(x);
    sbuf out = {0};
    sb_printf(&out, "// Halide schedule for pipeline %s (generated by stagecraft)\n", p->name);
    if (h.vars.s) {
        sb_printf(&out, "Var");
        const char *c = h.vars.s;
        bool first = true;
        while (*c) {
            while (*c == ' ') c++;
            if (!*c) break;
            size_t l = strcspn(c, " ");
            sb_printf(&out, "%s %.*s(\"%.*s\")", first ? "" : ",", (int)l, c, (int)l, c);
            first = false;
            c += l;
        }
        sb_printf(&out, ";\n");
    }
    sb_printf(&out, "%s", h.body.s ? h.body.s : "");
    free(h.vars.s);
    free(h.body.s);
    return sb_take(&out);
}
