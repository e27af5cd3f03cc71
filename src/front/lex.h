/*
 * lex.h - tokens of the .pipe language.
 *
 * The whole file is tokenized up front into an array, so that template
 * bodies and compile-time loops can be parsed again from their token range.
 */
#ifndef SC_LEX_H
#define SC_LEX_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    T_EOF, T_IDENT, T_INT, T_FLOAT, T_STRING,
    T_LPAREN, T_RPAREN, T_LBRACK, T_RBRACK, T_LBRACE, T_RBRACE,
    T_COMMA, T_SEMI, T_DOT, T_DOTDOT, T_ASSIGN,
    T_PLUSEQ, T_MINUSEQ, T_STAREQ, T_SLASHEQ,
    T_PLUS, T_MINUS, T_STAR, T_SLASH, T_PERCENT,
    T_LT, T_LE, T_GT, T_GE, T_EQ, T_NE,
    T_ANDAND, T_OROR, T_BANG, T_AMP, T_PIPE, T_CARET, T_TILDE, T_SHL, T_SHR,
    T_BAD
} tok_kind;

typedef struct {
    tok_kind kind;
    int line, col;
    const char *start;      /* into the source text */
    int len;
    uint64_t ival;          /* T_INT (saturated at UINT64_MAX) */
    double fval;            /* T_FLOAT */
    int overflow;           /* T_INT too large for 64 bits */
} token;

typedef struct {
    token *toks;
    int n;
    int nbad;               /* T_BAD tokens produced */
} tok_array;

/* Tokenizes text; never fails (bad bytes become T_BAD tokens). */
tok_array lex_tokenize(const char *text, size_t len);
void lex_free(tok_array *t);
const char *lex_kind_name(tok_kind k);

#endif
