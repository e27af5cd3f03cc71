/*
 * lex.c - the .pipe tokenizer.  Comments are '#' or '//' to end of line.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "lex.h"

static const char *kind_names[] = {
    "end of file", "name", "integer", "number", "string",
    "'('", "')'", "'['", "']'", "'{'", "'}'", "','", "';'", "'.'", "'..'", "'='",
    "'+='", "'-='", "'*='", "'/='", "'+'", "'-'", "'*'", "'/'", "'%'",
    "'<'", "'<='", "'>'", "'>='", "'=='", "'!='",
    "'&&'", "'||'", "'!'", "'&'", "'|'", "'^'", "'~'", "'<<'", "'>>'",
    "invalid character"
};

const char *lex_kind_name(tok_kind k) { return kind_names[k]; }

static void push(tok_array *t, int *cap, token tk) {
    if (t->n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        t->toks = realloc(t->toks, sizeof(token) * (size_t)*cap);
        if (!t->toks) abort();
    }
    t->toks[t->n++] = tk;
}

tok_array lex_tokenize(const char *text, size_t len) {
    static const struct { const char *s; tok_kind k; } ops[] = {
        {"..", T_DOTDOT}, {"+=", T_PLUSEQ}, {"-=", T_MINUSEQ}, {"*=", T_STAREQ},
        {"/=", T_SLASHEQ}, {"<=", T_LE}, {">=", T_GE}, {"==", T_EQ}, {"!=", T_NE},
        {"&&", T_ANDAND}, {"||", T_OROR}, {"<<", T_SHL}, {">>", T_SHR},
        {"(", T_LPAREN}, {")", T_RPAREN}, {"[", T_LBRACK}, {"]", T_RBRACK},
        {"{", T_LBRACE}, {"}", T_RBRACE}, {",", T_COMMA}, {";", T_SEMI},
        {".", T_DOT}, {"=", T_ASSIGN}, {"+", T_PLUS}, {"-", T_MINUS},
        {"*", T_STAR}, {"/", T_SLASH}, {"%", T_PERCENT}, {"<", T_LT},
        {">", T_GT}, {"!", T_BANG}, {"&", T_AMP}, {"|", T_PIPE},
        {"^", T_CARET}, {"~", T_TILDE},
    };
    tok_array t = {0};
    int cap = 0, line = 1;
    const char *line_start = text, *s = text, *end = text + len;
    while (s < end) {
        if (*s == '\n') { line++; s++; line_start = s; continue; }
        if (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\f' || *s == '\v') { s++; continue; }
        if (*s == '#' || (*s == '/' && s + 1 < end && s[1] == '/')) {
            while (s < end && *s != '\n') s++;
            continue;
        }
        token tk = {0};
        tk.line = line;
        tk.col = (int)(s - line_start) + 1;
        tk.start = s;
        unsigned char c = (unsigned char)*s;
        if (isalpha(c) || c == '_') {
            while (s < end && (isalnum((unsigned char)*s) || *s == '_')) s++;
            tk.kind = T_IDENT;
        } else if (isdigit(c) || (c == '.' && s + 1 < end && isdigit((unsigned char)s[1]))) {
            const char *q = s;
            bool is_float = false;
            while (q < end && isdigit((unsigned char)*q)) q++;
            if (q < end && *q == '.' && !(q + 1 < end && q[1] == '.')) {
                is_float = true;
                q++;
                while (q < end && isdigit((unsigned char)*q)) q++;
            }
            if (q < end && (*q == 'e' || *q == 'E')) {
                const char *r = q + 1;
                if (r < end && (*r == '+' || *r == '-')) r++;
                if (r < end && isdigit((unsigned char)*r)) {
                    is_float = true;
                    q = r;
                    while (q < end && isdigit((unsigned char)*q)) q++;
                }
            }
            char buf[128];
            size_t n = (size_t)(q - s) < sizeof buf - 1 ? (size_t)(q - s) : sizeof buf - 1;
            memcpy(buf, s, n);
            buf[n] = 0;
            if (is_float) {
                tk.kind = T_FLOAT;
                tk.fval = strtod(buf, NULL);
                if (q < end && (*q == 'f' || *q == 'F')) q++;
            } else {
                tk.kind = T_INT;
                uint64_t v = 0;
                for (const char *d = s; d < q; d++) {
                    unsigned digit = (unsigned)(*d - '0');
                    if (v > (UINT64_MAX - digit) / 10) { tk.overflow = 1; v = UINT64_MAX; break; }
                    v = v * 10 + digit;
                }
                tk.ival = v;
            }
            s = q;
        } else if (c == '"') {
            s++;
            while (s < end && *s != '"' && *s != '\n') s++;
            if (s < end && *s == '"') { s++; tk.kind = T_STRING; }
            else tk.kind = T_BAD;
        } else {
            tk.kind = T_BAD;
            for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
                size_t n = strlen(ops[i].s);
                if ((size_t)(end - s) >= n && !memcmp(s, ops[i].s, n)) {
                    tk.kind = ops[i].k;
                    s += n;
                    break;
                }
            }
            if (tk.kind == T_BAD) {
                s++;
                t.nbad++;
            }
        }
        tk.len = (int)(s - tk.start);
        push(&t, &cap, tk);
    }
    token eof = {0};
    eof.kind = T_EOF;
    eof.line = line;
    eof.col = (int)(s - line_start) + 1;
    eof.start = s;
    push(&t, &cap, eof);
    return t;
}

void lex_free(tok_array *t) {
    free(t->toks);
    t->toks = NULL;
    t->n = 0;
}
