/*
 * scmath.h - f32 transcendental functions with one definition for the
 * reference evaluator, compile-time folding and every back end: computed in
 * double and rounded once to f32.  Single-precision libraries differ by an
 * ulp or two (glibc, PoCL, CUDA), which flips integer outputs derived from
 * them; the double result rounded to f32 is the same everywhere.  The code
 * generators print the same definitions into the generated code.
 */
#ifndef SC_SCMATH_H
#define SC_SCMATH_H
#include <math.h>
static inline float sc_expf(float x) { return (float)exp((double)x); }
static inline float sc_logf(float x) { return (float)log((double)x); }
static inline float sc_sinf(float x) { return (float)sin((double)x); }
static inline float sc_cosf(float x) { return (float)cos((double)x); }
static inline float sc_tanhf(float x) { return (float)tanh((double)x); }
static inline float sc_powf(float x, float y) { return (float)pow((double)x, (double)y); }
static inline float sc_atan2f(float y, float x) { return (float)atan2((double)y, (double)x); }
#endif
