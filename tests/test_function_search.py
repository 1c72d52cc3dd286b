"""SimmSpline's interval search: the searchsorted fast path picks OpenSim's interval."""
from __future__ import annotations

import numpy as np


def _binary_search(knots, a):
    """OpenSim's SIMM-style binary search, pass by pass (the reference the fast path keeps)."""
    n = len(knots)
    a = np.clip(a, knots[0], knots[-1])
    i = np.zeros(a.shape, dtype=np.intp)
    j = np.full(a.shape, n, dtype=np.intp)
    k = np.zeros(a.shape, dtype=np.intp)
    active = np.ones(a.shape, dtype=bool)
    for _ in range(4 * max(n, 2).bit_length() + 8):
        if not active.any():
            break
        kk = (i + j) // 2
        kk1 = np.minimum(kk + 1, n - 1)
        lt = a < knots[kk]
        gt = ~lt & (a > knots[kk1])
        j = np.where(active & lt, kk, j)
        i = np.where(active & gt, kk, i)
        done = active & ~lt & ~gt
        k = np.where(done, kk, k)
        active &= ~done
    return np.minimum(k, max(n - 2, 0))


def test_interval_search_equals_binary_search():
    """Points between knots, on knots (interior, repeated, ends), outside: same index."""
    from arthron.models.functions import _opensim_search
    rng = np.random.default_rng(7)
    for n in range(1, 30):
        kn = np.sort(rng.normal(size=n))
        if n > 4:
            kn[3] = kn[2]                      # a repeated knot
        a = np.concatenate([3 * rng.normal(size=100), kn, kn + 1e-15, kn - 1e-15,
                            rng.choice(kn, 10)])
        for pts in (a, kn, a[:1], a[n:n + 1]):
            np.testing.assert_array_equal(_opensim_search(kn, pts), _binary_search(kn, pts))
