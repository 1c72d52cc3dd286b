"""Process-wide choices that change where time goes, never the results.

``light_imports`` — the ``arthron`` command sets it: a command on a short trial then fits its
coordinate splines and runs OpenSim's low-pass IIR with arthron's numpy routes
(:mod:`arthron.models.natural_splines`,
:func:`arthron.solvers.filtering._all_pole`) instead of importing ``scipy.interpolate`` and
``scipy.signal`` (0.5–1 s of a command's start-up on this kind of machine). A library session
keeps it False and uses scipy's compiled routines (``make_interp_spline``, ``lfilter``), which
are faster per call once imported. Both routes give the same numbers (to 1e-12 relative,
tested).
"""
from __future__ import annotations

#: see the module docstring
light_imports: bool = False
