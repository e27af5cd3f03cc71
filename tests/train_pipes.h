/*
 * train_pipes.h - the small pipelines the cost model's tests featurize and
 * train on (tests/test_nn.c, tests/test_train_store.c).
 */
#ifndef SC_TRAIN_PIPES_H
#define SC_TRAIN_PIPES_H

static const char *PIPES[] = {
    "pipeline stencil;\n"
    "input f32 in(130, 66);\n"
    "f(x, y) = in(x, y) * 2.0;\n"
    "out(x, y) = f(x, y) + f(x + 1, y) + f(x + 2, y) + f(x, y + 1) + f(x + 2, y + 2);\n"
    "output out(128, 64);\n",
    "pipeline chain;\n"
    "input f32 in(256, 64);\n"
    "a(x, y) = in(x, y) * 3.0 + 1.0;\n"
    "b(x, y) = a(x, y) * a(x, y);\n"
    "out(x, y) = b(x, y) - a(x, y);\n"
    "output out(256, 64);\n",
    "pipeline blur;\n"
    "input f32 in(68, 132);\n"
    "h(x, y) = in(x, y) + in(x + 1, y) + in(x + 2, y) + in(x + 3, y) + in(x + 4, y);\n"
    "out(x, y) = h(x, y) + h(x, y + 1) + h(x, y + 2) + h(x, y + 3) + h(x, y + 4);\n"
    "output out(64, 128);\n",
};
#define NPIPES ((int)(sizeof PIPES / sizeof PIPES[0]))

#endif
