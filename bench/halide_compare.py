#!/usr/bin/env python3
"""halide_compare.py - a few of the bundled apps scheduled by Halide's own GPU
autoschedulers (Anderson2021 and Li2018, the plug-ins shipped in the `halide`
wheel) for an OpenCL target, run and timed on the same OpenCL device as
stagecraft's benchmarks (PoCL here), to set beside bench_autosched's modes.

    python3 -m venv /tmp/hvenv && /tmp/hvenv/bin/pip install halide numpy
    /tmp/hvenv/bin/python bench/halide_compare.py [--tsv modes.tsv] [--apps a,b]
        [--schedulers anderson2021,li2018] [--parallelism N] [--small]
        [--print-schedules]

Optional: nothing in `make test` needs Halide.  Each app below is the
algorithm of apps/NAME.pipe written with Halide's Python API (same types,
boundary conditions, constants and sizes; the comments name what differs).

For each app and autoscheduler: the pipeline is scheduled (estimates: the
inputs' and outputs' paper sizes), JIT-compiled for host-opencl, run once
(the warm-up, which also compiles the OpenCL kernels), and its output
compared with the same algorithm run by Halide on the CPU with no schedule
(integers exactly, f32 within 1e-4 of the output's largest magnitude); a
wrong result is not timed.  Timing is stagecraft's (src/driver/measure.c,
after Sioutas et al. 2020 5): one run estimates the time, then 3 samples,
each the mean of 10 back-to-back runs (3 past 20 ms, 1 past 200 ms; none
past a second), and the least of the estimate and the samples is the time.
Inputs stay on the device between runs and outputs are not copied back, as
in stagecraft's timing; unlike it, Halide allocates the intermediate device
buffers inside every run.

Rows `app<TAB>halide-anderson2021<TAB>ms<TAB>-` are appended to --tsv (the
modes.tsv of bench_autosched; its header is written if the file is new; the
speed-up is `-`: bench/plot_autosched.sh divides the app's baseline by the
time).  A scheduler that is missing, fails or gives a wrong result is
reported on stdout and no row is written; the script goes on with the next.
"""

import argparse
import os
import sys
import time
import traceback
import warnings

try:
    import halide as hl
    import numpy as np
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.exit("halide_compare.py: needs the halide and numpy packages (%s); "
             "python3 -m venv /tmp/hvenv && /tmp/hvenv/bin/pip install halide numpy" % e)

# The apps' float constants are f32 in the .pipe files too: Halide's warning
# that a Python float becomes an f32 says nothing here.
warnings.filterwarnings("ignore", message="The floating-point value")

SCHEDULERS = {"anderson2021": "Anderson2021", "li2018": "Li2018"}


# ---- the apps: each builder returns (inputs, output, out_sizes) -----------------
# inputs: list of (ImageParam, sizes); sizes in Halide's order (dim 0 first).

def box_blur(small):
    W, H = (64, 48) if small else (1536, 2560)
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(16), 2, "in")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    blur_x, out = hl.Func("blur_x"), hl.Func("out")
    blur_x[x, y] = hl.u16((hl.u32(clamped[x - 1, y]) + clamped[x, y] + clamped[x + 1, y]) / 3)
    out[x, y] = hl.u16((hl.u32(blur_x[x, y - 1]) + blur_x[x, y] + blur_x[x, y + 1]) / 3)
    return [(inp, [W, H])], out, [W, H]


def unsharp(small):
    W, H = (64, 48) if small else (1536, 2560)
    sigma, pi = 1.5, 3.14159265358979
    x, y, c, i = hl.Var("x"), hl.Var("y"), hl.Var("c"), hl.Var("i")
    inp = hl.ImageParam(hl.Float(32), 3, "in")
    kernel = hl.Func("kernel")
    kernel[i] = hl.exp(-hl.f32(i * i) / (2 * sigma * sigma)) / (hl.sqrt(hl.f32(2 * pi)) * sigma)
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    gray, blur_y, blur_x = hl.Func("gray"), hl.Func("blur_y"), hl.Func("blur_x")
    sharpen, ratio, out = hl.Func("sharpen"), hl.Func("ratio"), hl.Func("out")
    gray[x, y] = 0.299 * clamped[x, y, 0] + 0.587 * clamped[x, y, 1] + 0.114 * clamped[x, y, 2]
    blur_y[x, y] = (kernel[0] * gray[x, y]
                    + kernel[1] * (gray[x, y - 1] + gray[x, y + 1])
                    + kernel[2] * (gray[x, y - 2] + gray[x, y + 2])
                    + kernel[3] * (gray[x, y - 3] + gray[x, y + 3]))
    blur_x[x, y] = (kernel[0] * blur_y[x, y]
                    + kernel[1] * (blur_y[x - 1, y] + blur_y[x + 1, y])
                    + kernel[2] * (blur_y[x - 2, y] + blur_y[x + 2, y])
                    + kernel[3] * (blur_y[x - 3, y] + blur_y[x + 3, y]))
    sharpen[x, y] = 2 * gray[x, y] - blur_x[x, y]
    ratio[x, y] = sharpen[x, y] / gray[x, y]
    out[x, y, c] = ratio[x, y] * inp[x, y, c]
    return [(inp, [W, H, 3])], out, [W, H, 3]


def harris(small):
    W, H = (64, 48) if small else (1536, 2560)
    k = hl.f32(0.04)
    w1, w2 = hl.f32(1.0 / 12), hl.f32(2.0 / 12)      # the Sobel taps, as f32 as in the .pipe
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.Float(32), 3, "in")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    gray, Ix, Iy = hl.Func("gray"), hl.Func("Ix"), hl.Func("Iy")
    gray[x, y] = 0.299 * clamped[x, y, 0] + 0.587 * clamped[x, y, 1] + 0.114 * clamped[x, y, 2]
    Iy[x, y] = (gray[x - 1, y - 1] * -w1 + gray[x - 1, y + 1] * w1
                + gray[x, y - 1] * -w2 + gray[x, y + 1] * w2
                + gray[x + 1, y - 1] * -w1 + gray[x + 1, y + 1] * w1)
    Ix[x, y] = (gray[x - 1, y - 1] * -w1 + gray[x + 1, y - 1] * w1
                + gray[x - 1, y] * -w2 + gray[x + 1, y] * w2
                + gray[x - 1, y + 1] * -w1 + gray[x + 1, y + 1] * w1)
    Ixx, Iyy, Ixy = hl.Func("Ixx"), hl.Func("Iyy"), hl.Func("Ixy")
    Ixx[x, y] = Ix[x, y] * Ix[x, y]
    Iyy[x, y] = Iy[x, y] * Iy[x, y]
    Ixy[x, y] = Ix[x, y] * Iy[x, y]

    def box3x3(f, name):
        b = hl.Func(name)
        b[x, y] = (f[x - 1, y - 1] + f[x, y - 1] + f[x + 1, y - 1]
                   + f[x - 1, y] + f[x, y] + f[x + 1, y]
                   + f[x - 1, y + 1] + f[x, y + 1] + f[x + 1, y + 1])
        return b

    Sxx, Syy, Sxy = box3x3(Ixx, "Sxx"), box3x3(Iyy, "Syy"), box3x3(Ixy, "Sxy")
    det, trace, out = hl.Func("det"), hl.Func("trace"), hl.Func("out")
    det[x, y] = Sxx[x, y] * Syy[x, y] - Sxy[x, y] * Sxy[x, y]
    trace[x, y] = Sxx[x, y] + Syy[x, y]
    out[x, y] = det[x, y] - k * trace[x, y] * trace[x, y]
    return [(inp, [W, H, 4])], out, [W, H]


def sgemm(small):
    # alpha and beta are the .pipe's parameter values, as constants
    N = 32 if small else 1024
    i, j, k = hl.Var("i"), hl.Var("j"), hl.Var("k")
    A = hl.ImageParam(hl.Float(32), 2, "A")
    B = hl.ImageParam(hl.Float(32), 2, "B")
    C = hl.ImageParam(hl.Float(32), 2, "C")
    r = hl.RDom([(0, N)], "r")
    a, b, prod, out = hl.Func("a"), hl.Func("b"), hl.Func("prod"), hl.Func("out")
    a[i, k] = A[i, k]
    b[k, j] = B[k, j]
    prod[i, j] = hl.f32(0)
    prod[i, j] += a[i, r.x] * b[r.x, j]
    out[i, j] = 1.5 * prod[i, j] + 0.5 * C[i, j]
    return [(A, [N, N]), (B, [N, N]), (C, [N, N])], out, [N, N]


def conv_layer(small):
    N, CI, CO, W, H = (1, 8, 8, 12, 10) if small else (5, 128, 128, 100, 80)
    c, x, y, n, dx, dy, ci = (hl.Var(v) for v in ("c", "x", "y", "n", "dx", "dy", "ci"))
    act = hl.ImageParam(hl.Float(32), 4, "act")
    filt_in = hl.ImageParam(hl.Float(32), 4, "filter")
    bias = hl.ImageParam(hl.Float(32), 1, "bias")
    r = hl.RDom([(0, CI), (0, 3), (0, 3)], "r")
    in_s, filt, conv, relu = hl.Func("in_s"), hl.Func("filt"), hl.Func("conv"), hl.Func("relu")
    in_s[ci, x, y, n] = act[ci, x, y, n]
    filt[c, dx, dy, ci] = filt_in[c, dx, dy, ci]
    conv[c, x, y, n] = bias[c]
    conv[c, x, y, n] += filt[c, r.y, r.z, r.x] * in_s[r.x, x + r.y, y + r.z, n]
    relu[c, x, y, n] = hl.max(conv[c, x, y, n], 0.0)
    return [(act, [CI, W + 2, H + 2, N]), (filt_in, [CO, 3, 3, CI]), (bias, [CO])], relu, [CO, W, H, N]


APPS = {"box_blur": box_blur, "unsharp": unsharp, "harris": harris, "sgemm": sgemm,
        "conv_layer": conv_layer}


# ---- running -----------------------------------------------------------------------

def random_input(param, sizes, rng):
    """Data for an input as stagecraft fills it: integers over their whole range,
    f32 in [0, 1)."""
    shape = list(reversed(sizes))      # numpy's order: last Halide dim first
    t = param.type()
    if t.is_float():
        a = rng.random(shape, dtype=np.float32)
    else:
        a = rng.integers(0, 1 << t.bits(), size=shape, dtype=np.uint64).astype("uint%d" % t.bits())
    return hl.Buffer(a)


def out_buffer(out, sizes):
    return hl.Buffer(out.type(), sizes)


def build(app, small, data):
    inputs, out, sizes = APPS[app](small)
    for (param, psizes), buf in zip(inputs, data):
        param.set_estimates([(0, s) for s in psizes])
        param.set(buf)
    out.set_estimates([(0, s) for s in sizes])
    return out, sizes


def run_ms(p, target, ob, runs):
    t0 = time.perf_counter()
    for _ in range(runs):
        p.realize(ob, target)
    ob.device_sync()
    return (time.perf_counter() - t0) * 1e3 / runs


def runs_for(est):
    return 1 if est > 200 else 3 if est > 20 else 10


def time_pipeline(p, target, ob):
    """stagecraft's rule (measure.c): an estimate, then 3 samples of the mean of
    runs_for(estimate) runs unless the estimate passes a second; the least."""
    est = run_ms(p, target, ob, 1)
    samples = [est]
    if est <= 1000:
        samples += [run_ms(p, target, ob, runs_for(est)) for _ in range(3)]
    return min(samples), samples


def compare(got, ref):
    """'' if got matches ref, else why not."""
    g, r = np.asarray(got), np.asarray(ref)
    if g.dtype.kind == "f":
        scale = max(float(np.max(np.abs(r))), 1e-30)
        d = float(np.max(np.abs(g.astype(np.float64) - r.astype(np.float64))))
        return "" if d <= 1e-4 * scale else "max difference %g of a largest magnitude %g" % (d, scale)
    bad = int(np.count_nonzero(g != r))
    return "" if bad == 0 else "%d of %d points differ" % (bad, g.size)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--apps", default=",".join(APPS), help="comma-separated (default: %(default)s)")
    ap.add_argument("--schedulers", default="anderson2021,li2018")
    ap.add_argument("--tsv", help="append rows to this modes.tsv")
    ap.add_argument("--parallelism", type=int, default=os.cpu_count() or 1,
                    help="the autoschedulers' parallelism: the device's compute units "
                         "(default: the CPU count, PoCL's compute units)")
    ap.add_argument("--small", action="store_true", help="the apps' small sizes")
    ap.add_argument("--print-schedules", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    o = ap.parse_args()

    libdir = os.path.join(os.path.dirname(hl.__file__), "lib64")
    loaded = {}
    for s in o.schedulers.split(","):
        if s not in SCHEDULERS:
            sys.exit("halide_compare.py: unknown scheduler '%s' (expected %s)" % (s, ", ".join(SCHEDULERS)))
        path = os.path.join(libdir, "libautoschedule_%s.so" % s)
        try:
            hl.load_plugin(path)
            loaded[s] = True
        except Exception as e:     # a wheel without the plug-in
            print("%s: plug-in not loaded (%s): skipped" % (s, str(e).strip().splitlines()[-1]))
            loaded[s] = False

    target = hl.get_host_target().with_feature(hl.TargetFeature.OpenCL)
    host = hl.get_host_target()
    try:
        from importlib.metadata import version
        hversion = version("halide")
    except Exception:
        hversion = "?"
    print("halide %s; target %s; parallelism %d; sizes %s"
          % (hversion, target, o.parallelism, "small" if o.small else "paper"))
    rows = []
    for app in o.apps.split(","):
        if app not in APPS:
            print("%s: not written in Halide here (have %s)" % (app, ", ".join(APPS)))
            continue
        rng = np.random.default_rng(o.seed)
        inputs, _, _ = APPS[app](o.small)
        data = [random_input(param, sizes, rng) for param, sizes in inputs]
        # the reference: the same algorithm with no schedule, on the CPU
        t0 = time.perf_counter()
        out, sizes = build(app, o.small, data)
        ref = out_buffer(out, sizes)
        hl.Pipeline(out).realize(ref, host)
        print("%s: reference on the CPU in %.1f s" % (app, time.perf_counter() - t0))
        for s in o.schedulers.split(","):
            if not loaded[s]:
                print("%-12s %-22s skipped: no plug-in" % (app, "halide-" + s))
                continue
            mode = "halide-" + s
            try:
                out, sizes = build(app, o.small, data)
                p = hl.Pipeline(out)
                t0 = time.perf_counter()
                res = p.apply_autoscheduler(target, hl.AutoschedulerParams(
                    SCHEDULERS[s], {"parallelism": str(o.parallelism)}))
                t_sched = time.perf_counter() - t0
                if o.print_schedules:
                    print(res.schedule_source)
                t0 = time.perf_counter()
                p.compile_jit(target)
                ob = out_buffer(out, sizes)
                p.realize(ob, target)           # the warm-up: OpenCL compiles here
                ob.device_sync()
                t_first = time.perf_counter() - t0
                ob.copy_to_host()
                why = compare(ob, ref)
                if why:
                    print("%-12s %-22s WRONG: %s" % (app, mode, why))
                    continue
                ms, samples = time_pipeline(p, target, ob)
            except Exception as e:
                msg = str(e).strip().splitlines()
                print("%-12s %-22s failed: %s" % (app, mode, msg[-1] if msg else type(e).__name__))
                if os.environ.get("HALIDE_COMPARE_TRACE"):
                    traceback.print_exc()
                continue
            print("%-12s %-22s %10.3f ms  (schedule %.1f s, compile + first run %.1f s; samples %s)"
                  % (app, mode, ms, t_sched, t_first, " ".join("%.3f" % v for v in samples)))
            rows.append((app, mode, ms))
            sys.stdout.flush()
    if o.tsv and rows:
        new = not os.path.exists(o.tsv) or os.path.getsize(o.tsv) == 0
        with open(o.tsv, "a") as f:
            if new:
                f.write("app\tmode\tms\tspeedup\n")
            for app, mode, ms in rows:
                f.write("%s\t%s\t%.3f\t-\n" % (app, mode, ms))
        print("appended %d rows to %s" % (len(rows), o.tsv))


if __name__ == "__main__":
    main()
