#!/usr/bin/env python3
# Coefficients of the polynomials by pieces in src/truncnorm.c (tn_tail)
# that give the moments of N(mu, sd^2) truncated to [0, inf) for
# a = -mu / sd >= 3:
#   U(a) = a (lambda(a) - a)                   (E = sd U / a)
#   V(a) = a^2 (1 - lambda(a) (lambda(a) - a))  (Var = sd^2 V / a^2)
# with lambda(a) = phi(a) / Q(a) the normal hazard, computed here with
# 50-digit arithmetic (mpmath's erfc; Laplace's continued fraction for
# a > 100). Both tend to 1 as a -> inf and are
# smooth in s = 3 / a in (0, 1]. On each of the PIECES pieces
# [p / PIECES, (p + 1) / PIECES) of s, the polynomial of degree DEG in
# t = 2 PIECES s - (2 p + 1) in [-1, 1] interpolates at the DEG + 1
# Chebyshev nodes; it is converted to monomial coefficients.
#
#   python3 tools/tail-moments-coefs.py          prints the C tables (needs mpmath)
#   python3 tools/tail-moments-coefs.py check    also the largest relative
#       error of their double-precision evaluation (Estrin's scheme, as in
#       the C code) at 20000 points of s, against 50-digit values
import sys
import random
import mpmath as mp

mp.mp.dps = 50
PIECES, DEG = 8, 11


def uv(s):
    s = mp.mpf(s)
    if s == 0:
        return mp.mpf(1), mp.mpf(1)
    a = 3 / s
    if a > 100:
        # Laplace's continued fraction t_{k-1} = a + k / t_k:
        # lambda = a + 1 / t_1, and 1 - lambda (lambda - a) =
        # (a + 4 / t_2 - 3 / t_3) / (t_1^2 t_2), without cancellation
        t = a
        for k in range(400, 3, -1):
            t = a + k / t
        t3 = t
        t2 = a + 3 / t3
        t1 = a + 2 / t2
        return a / t1, a * a * (a + 4 / t2 - 3 / t3) / (t1 * t1 * t2)
    else:
        lam = mp.sqrt(2 / mp.pi) / (mp.exp(a * a / 2) * mp.erfc(a / mp.sqrt(2)))
        u = lam - a
    return a * u, a * a * (1 - lam * u)


def piece(p, idx):
    n = DEG + 1
    nodes = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / n) for j in range(n)]
    f = [uv((p + (t + 1) / 2) / PIECES)[idx] for t in nodes]
    c = [2 * mp.fsum(f[j] * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / n)
                     for j in range(n)) / n for k in range(n)]
    c[0] /= 2
    # sum_k c_k T_k(t) in monomials: T_0 = 1, T_1 = t, T_k = 2 t T_{k-1} - T_{k-2}
    mono = [mp.mpf(0)] * n
    tm2, tm1 = [mp.mpf(1)] + [mp.mpf(0)] * (n - 1), [mp.mpf(0), mp.mpf(1)] + [mp.mpf(0)] * (n - 2)
    for k in range(n):
        if k == 0:
            tk = tm2
        elif k == 1:
            tk = tm1
        else:
            tk = [2 * (tm1[i - 1] if i > 0 else 0) - tm2[i] for i in range(n)]
            tm2, tm1 = tm1, tk
        for i in range(n):
            mono[i] += c[k] * tk[i]
    return [float(m) for m in mono]


def estrin(m, t):
    # the C code's order (tail_poly in src/truncnorm.c)
    t2 = t * t
    t4 = t2 * t2
    q = [m[2 * i] + m[2 * i + 1] * t for i in range(6)]
    r0, r1, r2 = q[0] + q[1] * t2, q[2] + q[3] * t2, q[4] + q[5] * t2
    return (r0 + r1 * t4) + r2 * (t4 * t4)


tabs = [[piece(p, idx) for p in range(PIECES)] for idx in (0, 1)]
for name, tab in zip(("tail_u", "tail_v"), tabs):
    print("static const double %s[%d][%d] = {" % (name, PIECES, DEG + 1))
    rows = ["    {" + ", ".join(repr(x) for x in row) + "}" for row in tab]
    print(",\n".join(rows))
    print("};")
if len(sys.argv) > 1 and sys.argv[1] == "check":
    random.seed(1)
    pts = [random.random() for _ in range(20000)] + [1.0, 1e-300, 0.5, 0.125]
    worst = [0.0, 0.0]
    for s in pts:
        a = 3.0 / s
        s2 = 3.0 * (1.0 / a)
        p = min(int(s2 * PIECES), PIECES - 1)
        t = s2 * (2 * PIECES) - (2 * p + 1)
        ref = uv(mp.mpf(3) / mp.mpf(a))
        for idx in (0, 1):
            got = estrin(tabs[idx][p], t)
            worst[idx] = max(worst[idx], float(abs(got - ref[idx]) / ref[idx]))
    print("/* largest relative error: U %.2e, V %.2e */" % tuple(worst))
