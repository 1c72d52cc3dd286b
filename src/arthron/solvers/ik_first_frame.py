"""The first frame of an inverse-kinematics trial, started from the model's default pose.

:class:`FirstFrameStarts` is a mixin of :class:`arthron.solvers.ik_levenberg_marquardt.LevenbergMarquardtIK`
(whose ``solve_frame``, ``_residual``, ``_present_markers``, ``lo``/``hi``, ``free`` and ``model``
it uses): the default pose can be far from the trial's first pose, and the iterations can end
in another local minimum of the marker objective, which every later frame (started from the
one before) then follows. :meth:`FirstFrameStarts.solve_first` detects the two cases seen on
real models (a solution outside the coordinates' ranges; marker errors implausible for a fit)
and solves again from a better start, keeping the solution with the lower objective.
"""
from __future__ import annotations

import numpy as np

__all__ = ["FirstFrameStarts", "IMPLAUSIBLE_RMS"]

#: The first frame is solved again from a root-first start when the RMS of its marker errors
#: exceeds this (m): 2.5 times the upper end of the RMS that OpenSim's IK guidance asks of a
#: fit (1–2 cm; OpenSim documentation, "Getting Started with Inverse Kinematics"). Beyond it
#: is a wrong local minimum or wrong data, and the retry costs a few more solves only then.
#: The largest error alone does not decide: the Gait2354 walk's first frame, a good fit with
#: an RMS of 18.7 mm, has a marker 58 mm off (all markers weighted 1).
IMPLAUSIBLE_RMS = 0.05


class FirstFrameStarts:
    """The first-frame solve of :class:`~arthron.solvers.ik_levenberg_marquardt.LevenbergMarquardtIK`
    (a mixin; see the module docstring)."""

    def solve_first(self, obs_all, x0, base, qref, solve):
        """The first frame of a trial, solved by ``solve`` (:meth:`solve_frame` or the class's
        ``solve_single``) from ``x0``, the model's default pose.

        A start that far from the motion can lead the iterations into another local minimum of
        the marker objective: on the MoBL-ARMS upper-limb model (Saul et al. 2015; six
        markers), to wrist deviation and flexion of −38° and 24°, outside their ranges, with
        1 mm of marker error where the motion's own pose has none (and the later frames, each
        started from the one before, stay there). So when the solution leaves the ``range`` of
        a coordinate that is not clamped, the frame is solved again from the default pose with
        every free coordinate held inside its range, and then released from that solution; the
        solution with the lower objective is kept (never a worse one than before).

        Before that, when the marker errors of the solution are implausible for a fit (an RMS
        above :data:`IMPLAUSIBLE_RMS`), the
        frame is solved again from a root-first start (:meth:`_root_first_start`) and the
        solution with the lower objective is kept. On bioscout's Full_Body_with_ball (53 bodies,
        31 markers) with a pose spanning 60 % of every coordinate's range, the default start
        stalls with the pelvis turned 0.55 rad away and arm coordinates at their bounds (marker
        RMS 0.15 m after 100 iterations, still 0.15 m after 300 more), where the root-first
        start fits the markers to rounding in 20 iterations. Same arguments and results as
        :meth:`solve_frame`.
        """
        a = solve(obs_all, x0, base, qref)
        a = self._retry_from_root(obs_all, x0, base, qref, solve, a)
        coords = list(self.model.coordinates.values())
        rlo = np.array([float(coords[i].range[0]) for i in self.free])
        rhi = np.array([float(coords[i].range[1]) for i in self.free])
        if np.all((a[0] >= rlo - 1e-9) & (a[0] <= rhi + 1e-9)):
            return a
        lo, hi = self.lo, self.hi
        try:
            self.lo, self.hi = np.maximum(lo, rlo), np.minimum(hi, rhi)
            xr, _, it_r, _ = self.solve_frame(obs_all, np.clip(x0, self.lo, self.hi), base, qref)
        finally:
            self.lo, self.hi = lo, hi
        b = solve(obs_all, xr, base, qref)
        best = b if self._objective(obs_all, b[0], base, qref) < self._objective(obs_all, a[0], base, qref) else a
        return best[0], best[1], a[2] + it_r + b[2], best[3]

    def _retry_from_root(self, obs_all, x0, base, qref, solve, a):
        """``a`` (a result of ``solve`` from ``x0``), or the solution from the root-first start
        when ``a``'s marker errors are implausible and that solution's objective is lower
        (iterations of both added)."""
        err = a[3][np.isfinite(a[3])]
        if not err.size or np.sqrt(np.mean(err ** 2)) <= IMPLAUSIBLE_RMS:
            return a
        xs = self._root_first_start(obs_all, x0, base, qref)
        if xs is None:
            return a
        b = solve(obs_all, xs, base, qref)
        its = a[2] + b[2]
        if self._objective(obs_all, b[0], base, qref) < self._objective(obs_all, a[0], base, qref):
            return b[0], b[1], its, b[3]
        return a[0], a[1], its, a[3]

    def _root_first_start(self, obs_all, x0, base, qref):
        """A start for the first frame that places the model's root first and then each level
        of the tree below it (segment-wise registration down the kinematic tree), or None.

        Levels come from which free coordinates move which tracked markers at ``x0`` (the
        Jacobian's sparsity): the root coordinates move every marker (a pelvis's six
        ground-joint coordinates), the root markers are those no other coordinate moves (the
        markers on the pelvis). The root coordinates are fitted to the root markers alone,
        every other coordinate held at ``x0``; then the next level is released (the remaining
        coordinates whose set of moved markers no other remaining coordinate's set strictly
        contains: hips, lumbar, shoulders ...) and fitted, with the levels above, to the
        markers that only released coordinates move; and so on down to the last level but
        one (the caller's full solve is the last). So no segment is dragged away to make up
        for a child still in its default pose. Each stage is a bounded Levenberg–Marquardt
        solve (:meth:`solve_frame`) from the stage before.

        Returns the free coordinates (nfree,), or None when the model has no such root (no
        coordinate moving every marker, or fewer than three markers moved by no other).
        Found on bioscout's Full_Body_with_ball (the root level suffices there) and on
        Gait2354 at poses spanning the coordinates' full ranges (the levels below are needed:
        68 mm from the default start and from the root level alone, exact from this start;
        ``tests/test_ik_first_frame.py``)."""
        rows, obs, sw = self._present_markers(obs_all)
        w = sw > 0
        if w.sum() < 3:
            return None
        r, J, _ = self._residual(np.clip(x0, self.lo, self.hi), base, obs, rows, sw, qref)
        nx = J.shape[1]
        moves = np.abs(J[:3 * len(rows)].reshape(len(rows), 3, nx)).sum(1)[w] > 0  # (nmw, nx)
        root = moves.all(0)
        if not root.any() or root.all():
            return None
        alone = ~moves[:, ~root].any(1)
        if alone.sum() < 3:
            return None
        wrows = rows[np.flatnonzero(w)]
        lo, hi = self.lo, self.hi
        x = np.clip(x0, lo, hi)
        freed = root
        try:
            while True:
                use = ~moves[:, ~freed].any(1)
                keep = np.zeros(len(obs_all), bool)
                keep[wrows[use]] = True
                self.lo, self.hi = np.where(freed, lo, x), np.where(freed, hi, x)
                x = self.solve_frame(np.where(keep[:, None], obs_all, np.nan), x, base, qref)[0]
                self.lo, self.hi = lo, hi
                rest = ~freed & moves.any(0)
                if not rest.any():
                    break
                # the next level: the remaining coordinates whose markers no other remaining
                # coordinate's markers strictly contain (the proximal joints of each branch)
                M = moves[:, rest]
                sub = (M[:, :, None] <= M[:, None, :]).all(0)      # sub[c, d]: M(c) ⊆ M(d)
                strict = sub & ~sub.T
                top = ~strict.any(1)
                nxt = np.zeros_like(freed)
                nxt[np.flatnonzero(rest)[top]] = True
                freed = freed | nxt
                if not (~freed & moves.any(0)).any():
                    break                       # the next stage is the whole problem
        finally:
            self.lo, self.hi = lo, hi
        return x

    def _objective(self, obs_all, x, base, qref) -> float:
        """The weighted marker and coordinate-task objective (with the constraint penalty where
        the constraint weight is finite) at the free coordinates ``x``."""
        rows, obs, sw = self._present_markers(obs_all)
        r = self._residual(x, base, obs, rows, sw, qref, jac=False)[0]
        return float(r @ r)
