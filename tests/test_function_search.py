"""SimmSpline's interval search: the searchsorted fast path picks OpenSim's interval."""
from __future__ import annotations

import numpy as np


def _binary_search(knots, a):
    """OpenSim's SIMM-style binary search, pass by pass (the reference the fast path keeps)."""
    from arthron.models.functions import _simm_binary_search
    return _simm_binary_search(knots, np.clip(a, knots[0], knots[-1]))


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
