/*
 * blur.c - building a pipeline in C through include/stagecraft.h.
 *
 * The same pipeline as this .pipe text:
 *
 *   input u8 in(W, H);
 *   clamped = repeat_edge(in);
 *   blur_x(x, y) = u16(clamped(x - 1, y)) + clamped(x, y) + clamped(x + 1, y);
 *   blur_y(x, y) = u8((blur_x(x, y - 1) + blur_x(x, y) + blur_x(x, y + 1)) / 9);
 *   output blur_y(W, H);
 *
 * It builds it, prints its IR text, runs it with the reference evaluator on
 * seeded random data and checks a few points against a direct computation.
 */
#include <stdio.h>
#include <stdlib.h>
#include "stagecraft.h"

enum { W = 640, H = 480 };

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

int main(void) {
    sc_pipeline *p = sc_pipeline_new("blur");
    int size[2] = { W, H };
    sc_func *in = sc_input(p, "in", SC_U8, 2, size);
    sc_func *clamped = sc_repeat_edge(p, "clamped", in, NULL);

    sc_expr *x = sc_var(p, "x"), *y = sc_var(p, "y");
    const char *xy[2] = { "x", "y" };
    sc_expr *tap[3];
    for (int i = 0; i < 3; i++) {
        sc_expr *args[2] = { sc_binary(p, SC_ADD, x, sc_int(p, i - 1)), y };
        tap[i] = sc_cast(p, SC_U16, sc_call(p, clamped, 2, args));
    }
    sc_func *blur_x = sc_func_new(p, "blur_x");
    sc_define(p, blur_x, 2, xy,
              sc_binary(p, SC_ADD, sc_binary(p, SC_ADD, tap[0], tap[1]), tap[2]));

    sc_expr *sum = NULL;
    for (int i = 0; i < 3; i++) {
        sc_expr *args[2] = { x, sc_binary(p, SC_ADD, y, sc_int(p, i - 1)) };
        sc_expr *t = sc_call(p, blur_x, 2, args);
        sum = sum ? sc_binary(p, SC_ADD, sum, t) : t;
    }
    sc_func *blur_y = sc_func_new(p, "blur_y");
    sc_define(p, blur_y, 2, xy, sc_cast(p, SC_U8, sc_binary(p, SC_DIV, sum, sc_int(p, 9))));
    sc_output(p, blur_y, 2, size);

    if (sc_pipeline_finalize(p) != 0) {
        for (int i = 0; i < sc_error_count(p); i++) fprintf(stderr, "%s\n", sc_error_message(p, i));
        sc_pipeline_free(p);
        return 1;
    }
    char *text = sc_pipeline_to_text(p);
    fputs(text, stdout);
    free(text);

    int zero[2] = { 0, 0 };
    sc_buffer *input = sc_buffer_new(SC_U8, 2, zero, size);
    sc_buffer_fill_random(input, 7);
    sc_buffer *out = NULL;
    if (sc_evaluate(p, &input, 7, &out) != 0) {
        for (int i = 0; i < sc_error_count(p); i++) fprintf(stderr, "%s\n", sc_error_message(p, i));
        return 1;
    }
    int bad = 0;
    const int probes[][2] = { {0, 0}, {W - 1, H - 1}, {W / 2, H / 3}, {1, H - 1}, {W - 1, 0} };
    for (size_t k = 0; k < sizeof probes / sizeof probes[0]; k++) {
        int px = probes[k][0], py = probes[k][1], s = 0;
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) {
                int c[2] = { clampi(px + dx, 0, W - 1), clampi(py + dy, 0, H - 1) };
                s += (int)sc_buffer_get(input, c);
            }
        int c[2] = { px, py };
        int got = (int)sc_buffer_get(out, c);
        printf("blur_y(%d, %d) = %d (direct: %d)\n", px, py, got, s / 9);
        bad += got != s / 9;
    }
    sc_buffer_free(input);
    sc_buffer_free(out);
    sc_pipeline_free(p);
    printf("%s\n", bad ? "MISMATCH" : "all probes match");
    return bad ? 1 : 0;
}
