"""The Levenberg–Marquardt iterations of :mod:`arthron.solvers.inverse_kinematics`.

:class:`LevenbergMarquardtIK` is the solver half of :class:`~arthron.solvers.inverse_kinematics.InverseKinematics`
(which compiles the problem: stations, tasks, constraints, free coordinates): residuals and
Jacobians of OpenSim's IK objective, one frame at a time (:meth:`LevenbergMarquardtIK.solve_frame`)
or B frames at once (:meth:`LevenbergMarquardtIK.solve_block`), with model constraints as a
penalty or held exactly (KKT steps projected back onto the constraint manifold).

The iteration is a bounded Levenberg–Marquardt (Gauss–Newton with a damping that vanishes near
the optimum, projected active-set bounds, Marquardt's diagonal scaling; in blocks of frames with
the exact second-order term of the marker residuals near the optimum, i.e. Newton steps, where
Gauss–Newton alone converges only linearly, or the structured secant approximation of that term
of Dennis, Gay & Welsch 1981 where it is not available); it stops when the step falls below ``tol`` or the cost stops
decreasing, i.e. at the optimum rather than at an accuracy-limited iterate.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import SolverError
from ..multibody.point_kinematics import Hinges
from .ik_first_frame import FirstFrameStarts

__all__ = ["LevenbergMarquardtIK"]

#: :meth:`LevenbergMarquardtIK.solve_block` adds the second-order term of the Hessian (exact,
#: or its secant approximation) once a frame's last accepted step is shorter than this (rad or
#: m in every coordinate): near the optimum, where Gauss–Newton converges only linearly, not
#: on the long first steps of frames started far away (where the full Hessian may be
#: indefinite; measured on the Gait2354 walk: 1062 iterations with the exact term from the
#: start, 335 from this step length on, 601 without it)
SECANT_STEP = 0.05


def _lm_update(a, Xn, rn, Jn, Pn, Qn, extra_ok, X, r, J, P, Q, cost, lam, its, act, tol,
               tiny_stops=False):
    """One Levenberg–Marquardt acceptance over the active frames ``a`` (in place): a trial that
    does not increase the cost (and meets ``extra_ok``) is taken and λ shrinks; otherwise λ
    grows. A frame stops when its step or its cost decrease falls below tolerance, or λ explodes.
    With ``tiny_stops`` a trial step below tolerance is taken whatever the cost does (the frame
    is at the optimum: the cost then differs by rounding only, and taking the step makes the
    result independent of that rounding). Returns the accepted mask (over ``a``).
    """
    cn = np.einsum("bm,bm->b", rn, rn)
    ok = (cn <= cost[a] * (1 + 1e-15) + 1e-30) & extra_ok
    if tiny_stops:
        ok |= np.max(np.abs(Xn - X[a]), axis=1) < tol
    its[a] += 1
    acc = a[ok]
    if acc.size:
        new = (Xn, rn, Jn, Pn, Qn, cn) if ok.all() else (Xn[ok], rn[ok], Jn[ok], Pn[ok], Qn[ok], cn[ok])
        if acc.size == len(X):          # every frame (a and acc are sorted): whole-array copies
            acc = slice(None)
        dx = np.max(np.abs(new[0] - X[acc]), axis=1)
        dec = cost[acc] - new[5]
        for dst, src in zip((X, r, J, P, Q, cost), new):
            dst[acc] = src
        lam[acc] = np.maximum(lam[acc] * 0.1, 1e-12)
        conv = (dx < tol) | (dec <= 1e-16 * np.maximum(cost[acc], 1e-30))
        act[a[ok][conv]] = False
    rej = a[~ok]
    if rej.size:
        lam[rej] *= 10.0
        act[rej[lam[rej] > 1e20]] = False
    return ok


def _secant_update(S, s, y, ysh):
    """The structured secant update of Dennis, Gay & Welsch (1981, NL2SOL; Dennis & Schnabel
    1983, eq. 10.3.6), vectorized over rows: S (k, n, n) approximates the second-order part
    Σ r_i ∇²r_i of the Hessian of ½|r|² that Gauss–Newton leaves out, updated in place from
    the step s (k, n), the change of the gradient y = ∇f₊ − ∇f (k, n) and
    y# = (J₊ − J)ᵀ r₊ (k, n), after sizing S by min(1, |sᵀy#| / |sᵀSs|). Rows whose yᵀs is not
    positive are left as they are."""
    Ss = np.einsum("kij,kj->ki", S, s)
    sSs = np.einsum("ki,ki->k", s, Ss)
    tau = np.where(sSs > 0, np.minimum(1.0, np.abs(np.einsum("ki,ki->k", s, ysh))
                                       / np.where(sSs > 0, sSs, 1.0)), 1.0)
    S *= tau[:, None, None]
    Ss *= tau[:, None]
    ys = np.einsum("ki,ki->k", y, s)
    good = ys > 1e-14 * np.linalg.norm(y, axis=1) * np.linalg.norm(s, axis=1)
    if not good.any():
        return
    w = (ysh - Ss)[good]
    yg, sg, ysg = y[good], s[good], ys[good]
    ws = np.einsum("ki,ki->k", w, sg)
    S[good] += ((w[:, :, None] * yg[:, None, :] + yg[:, :, None] * w[:, None, :]) / ysg[:, None, None]
                - (ws / ysg ** 2)[:, None, None] * yg[:, :, None] * yg[:, None, :])


def _interpolated_starts(f, anchors, values):
    """Starts (len(f), n) at the frame indices ``f`` from the solutions ``values`` (A, n) of the
    frames ``anchors`` (A,) around them (increasing, none equal to an ``f``): the cubic
    (Lagrange) through the two anchors on each side, linear where one side has only one
    (the Gait2354 walk, blocks of 64 frames every third solved first: the frames between
    need 3–4 Newton iterations from the linear interpolation (22 of 48 take a fourth), 3 from
    the cubic (3 of 48); the optimum is the same)."""
    f = np.asarray(f)
    out = np.empty((len(f), values.shape[1]))
    for d in range(values.shape[1]):
        out[:, d] = np.interp(f, anchors, values[:, d])
    k = np.searchsorted(anchors, f) - 1               # anchors[k] < f < anchors[k + 1]
    inner = (k >= 1) & (k + 2 < len(anchors))
    if inner.any():
        idx = k[inner, None] + np.arange(-1, 3)        # the four anchors, (m, 4)
        a = anchors[idx].astype(float)
        x = f[inner].astype(float)[:, None]
        w = np.ones(idx.shape)
        for i in range(4):
            for j in range(4):
                if i != j:
                    w[:, i] *= (x[:, 0] - a[:, j]) / (a[:, i] - a[:, j])
        out[inner] = np.einsum("mi,mid->md", w, values[idx])
    return out


class LevenbergMarquardtIK(FirstFrameStarts):
    """Residuals, Jacobians and Levenberg–Marquardt solves of an IK problem.

    A mixin: the problem attributes come from the subclass
    (:class:`arthron.solvers.inverse_kinematics.InverseKinematics`): ``chain`` (a
    :class:`arthron.multibody.point_kinematics.StationKinematics` of the tracked markers),
    ``marker_weights``, ``ctask_idx``/``ctask_sw``, ``couplers``, ``cset``/``_cchain``, ``free``,
    ``dependent``, ``lo``/``hi``, ``exact``, ``constraint_weight``, ``nq``, ``model``.

    Shapes: x (nfree,) free coordinates; q (nq,); obs (nm, 3) m with NaN for a missing marker;
    batched variants take a leading frame axis B.
    """

    def _present_markers(self, obs_all):
        """Rows of the markers present in a frame (finite observations), their observations and
        the square roots of their normalized weights. Simbody's Markers goal is
        Σ w|e|² / (2 Σw) over the markers present in the frame; coordinate tasks add
        w (q − v)² / 2 each: both halves are scaled by 2 here."""
        rows = np.flatnonzero(np.all(np.isfinite(obs_all), axis=1))
        w = self.marker_weights[rows]
        wtot = float(np.sum(w[w > 0]))
        sw = np.sqrt(w / wtot) if wtot > 0 else np.zeros_like(w)
        return rows, obs_all[rows], sw

    def _expand(self, x, base):
        q = base.copy()
        q[self.free] = x
        if self.dependent:
            for d, i, f, s in self.couplers:
                if d in self.dependent:
                    q[d] = s * float(f.value(np.array([q[i]]))[0])
        return q

    def _dq_dx(self, q):
        """(nq, nfree) derivative of q with respect to the free variables."""
        M = np.zeros((self.nq, len(self.free)))
        M[self.free, np.arange(len(self.free))] = 1.0
        if self.dependent:
            pos = {c: k for k, c in enumerate(self.free)}
            for d, i, f, s in self.couplers:
                if d in self.dependent and i in pos:
                    M[d, pos[i]] = s * float(f.derivative(np.array([q[i]]), 1)[0])
        return M

    def _residual(self, x, base, obs, rows, sw_m, qref, jac=True):
        q = self._expand(x, base)
        P, Jm = self.chain.evaluate(q, rows, jac)
        rm = ((P - obs) * sw_m[:, None]).ravel()
        parts = [rm]
        if len(self.ctask_idx):
            parts.append(self.ctask_sw * (q[self.ctask_idx] - qref))
        pen = []
        if self.couplers and not self.dependent:
            sc = math.sqrt(self.constraint_weight)
            for d, i, f, s in self.couplers:
                pen.append(sc * (q[d] - s * float(f.value(np.array([q[i]]))[0])))
            parts.append(np.array(pen))
        soft = self.cset is not None and not self.exact
        if soft:
            sc = math.sqrt(self.constraint_weight)
            pc, pC = self._penalty(q[None])
            parts.append(sc * pc[0])
        r = np.concatenate(parts)
        self._last_P = P
        if not jac:
            return r, None, q
        nqf = self.nq
        Jq = [(Jm * sw_m[:, None, None]).reshape(-1, nqf)]
        if len(self.ctask_idx):
            Jc = np.zeros((len(self.ctask_idx), nqf))
            Jc[np.arange(len(self.ctask_idx)), self.ctask_idx] = self.ctask_sw
            Jq.append(Jc)
        if pen:
            sc = math.sqrt(self.constraint_weight)
            Jp = np.zeros((len(pen), nqf))
            for k, (d, i, f, s) in enumerate(self.couplers):
                Jp[k, d] = sc
                Jp[k, i] -= sc * s * float(f.derivative(np.array([q[i]]), 1)[0])
            Jq.append(Jp)
        if soft:
            Jq.append(math.sqrt(self.constraint_weight) * pC[0])
        Jq = np.vstack(Jq)
        if self.dependent:
            J = Jq @ self._dq_dx(q)
        else:
            J = Jq[:, self.free]
        return r, J, q

    def solve_frame(self, obs_all, x0, base, qref, tol=1e-6, max_iter=100):
        """Solve one frame.

        Parameters
        ----------
        obs_all : (nm, 3) observed positions of ``marker_names`` (m, NaN = missing)
        x0 : (nfree,) start; base : (nq,) full q holding the locked values
        qref : coordinate task targets

        Returns
        -------
        x (nfree,), q (nq,), iterations, marker errors (nm,) m (NaN where missing)
        """
        if self.exact:
            return self._solve_frame_exact(obs_all, x0, base, qref, tol, max_iter)
        rows, obs, sw = self._present_markers(obs_all)
        lo, hi = self.lo, self.hi
        x = np.clip(np.asarray(x0, float), lo, hi)
        r, J, q = self._residual(x, base, obs, rows, sw, qref)
        P = self._last_P
        cost = r @ r
        lam = 1e-6
        it = 0
        nx = len(x)
        err = np.full(len(obs_all), np.nan)
        if nx == 0:
            err[rows] = np.linalg.norm(P - obs, axis=1)
            return x, q, 0, err
        for it in range(1, max_iter + 1):
            g = J.T @ r
            H = J.T @ J
            at_lo = (x <= lo) & (g > 0)
            at_hi = (x >= hi) & (g < 0)
            act = at_lo | at_hi
            fr = ~act
            step = np.zeros(nx)
            diagH = np.maximum(np.diag(H), 1e-12)
            accepted = False
            for _ in range(30):
                Hf = H[np.ix_(fr, fr)] + lam * np.diag(diagH[fr])
                try:
                    step[fr] = -np.linalg.solve(Hf, g[fr])
                except np.linalg.LinAlgError:
                    lam *= 10.0
                    continue
                xn = np.clip(x + step, lo, hi)
                rn, Jn, qn = self._residual(xn, base, obs, rows, sw, qref)
                Pn = self._last_P
                cn = rn @ rn
                if cn <= cost * (1 + 1e-15) + 1e-30:
                    accepted = True
                    break
                lam *= 10.0
            if not accepted:
                break
            dx = xn - x
            x, r, J, q, P = xn, rn, Jn, qn, Pn
            dec = cost - cn
            cost = cn
            lam = max(lam * 0.1, 1e-12)
            if np.max(np.abs(dx)) < tol or dec <= 1e-16 * max(cost, 1e-30):
                break
        err[rows] = np.linalg.norm(P - obs, axis=1)
        return x, q, it, err

    def _penalty(self, Q):
        """Constraint errors (B, m) in Simbody's units (ConstantDistance: (|p|² − d²)/2) and
        their Jacobians (B, m, nq), for the finite-weight penalty."""
        c = self.cset.residuals(Q)
        C = self.cset.jacobian(Q)
        for r, d in self._dist_rows:
            e = c[:, r].copy()
            C[:, r, :] *= (e + d)[:, None]
            c[:, r] = e * (e + 2.0 * d) / 2.0
        return c, C

    # ------------------------------------------------ exact model constraints
    def _constraint(self, x, base, jac=True):
        """Constraint residuals c (m,) and their Jacobian (m, nfree) at the free variables x."""
        q = self._expand(x, base)
        if self._cchain is not None:
            P, J = self._cchain.evaluate(q, None, jac)
            c = (P[0::2] - P[1::2]).ravel()
            if not jac:
                return c, None
            Cq = (J[0::2] - J[1::2]).reshape(-1, self.nq)
        else:
            c = self.cset.residuals(q[None])[0]
            if not jac:
                return c, None
            Cq = self.cset.jacobian(q[None])[0]
        C = Cq @ self._dq_dx(q) if self.dependent else Cq[:, self.free]
        return c, C

    def _project(self, x, base, tol=1e-12, max_iter=30):
        """The point near x on the constraint manifold (minimum-norm Gauss-Newton steps, like
        :func:`arthron.multibody.constraints.assemble`). Returns (x, max |c|)."""
        lo, hi = self.lo, self.hi
        c, C = self._constraint(x, base)
        err = float(np.abs(c).max())
        for _ in range(max_iter):
            if err < tol:
                break
            dx = -np.linalg.lstsq(C, c, rcond=None)[0]
            a = 1.0
            for _ls in range(20):
                xn = np.clip(x + a * dx, lo, hi)
                cn, _ = self._constraint(xn, base, jac=False)
                en = float(np.abs(cn).max())
                if en < err or en < tol:
                    break
                a *= 0.5
            if en >= err and en >= tol:
                break
            x, c, err = xn, cn, en
            if err >= tol:
                _, C = self._constraint(x, base)
        return x, err

    def _solve_frame_exact(self, obs_all, x0, base, qref, tol=1e-6, max_iter=100):
        """:meth:`solve_frame` with the model constraints held exactly (``constraint_weight``
        infinite, as OpenSim's IK does): damped Gauss–Newton steps of the equality-constrained
        linearised problem (KKT system with the constraint Jacobian), each followed by a
        projection back onto the constraint manifold; a step is kept when the (feasible) cost
        decreases."""
        rows, obs, sw = self._present_markers(obs_all)
        lo, hi = self.lo, self.hi
        x, cerr = self._project(np.clip(np.asarray(x0, float), lo, hi), base)
        if cerr > 1e-9:
            raise SolverError(f"model '{self.model.name}': constraints cannot be satisfied at the "
                              f"start of the frame (max residual {cerr:.3g})", self.model.source)
        r, J, q = self._residual(x, base, obs, rows, sw, qref)
        P = self._last_P
        cost = r @ r
        nx = len(x)
        err = np.full(len(obs_all), np.nan)
        lam = 1e-6
        it = 0
        for it in range(1, max_iter + 1):
            c, C = self._constraint(x, base)
            g = J.T @ r
            H = J.T @ J
            m = C.shape[0]
            act = ((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0))
            fr = np.flatnonzero(~act)
            diagH = np.maximum(np.diag(H), 1e-12)
            accepted = False
            for _ in range(30):
                nf = len(fr)
                K = np.zeros((nf + m, nf + m))
                K[:nf, :nf] = H[np.ix_(fr, fr)] + lam * np.diag(diagH[fr])
                K[:nf, nf:] = C[:, fr].T
                K[nf:, :nf] = C[:, fr]
                rhs = np.concatenate([-g[fr], -c])
                sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
                step = np.zeros(nx)
                step[fr] = sol[:nf]
                if np.max(np.abs(step)) < tol:
                    break           # at the optimum: projection noise could only reject it
                xn, cerr = self._project(np.clip(x + step, lo, hi), base)
                if cerr <= 1e-9:
                    rn, Jn, qn = self._residual(xn, base, obs, rows, sw, qref)
                    cn = rn @ rn
                    if cn <= cost * (1 + 1e-15) + 1e-30:
                        accepted = True
                        break
                lam *= 10.0
            if not accepted:
                break
            dx = xn - x
            x, r, J, q, P = xn, rn, Jn, qn, self._last_P
            dec = cost - cn
            cost = cn
            lam = max(lam * 0.1, 1e-12)
            if np.max(np.abs(dx)) < tol or dec <= 1e-16 * max(cost, 1e-30):
                break
        if len(rows):
            err[rows] = np.linalg.norm(P - obs, axis=1)
        return x, q, it, err

    def _newton_available(self) -> bool:
        """Whether :meth:`solve_block` uses the exact second-order term of the marker residuals
        (:meth:`StationKinematics.second_order`): no penalty residuals (couplers, constraints),
        whose second derivatives it does not have, and no Ellipsoid mobilizer."""
        return not self.couplers and self.cset is None and self.chain.has_second_order

    def _residual_batch(self, X, base, obs0, sw, qref, second=False):
        """Stacked residuals (B, m) and Jacobians (B, m, nfree) for B frames (no eliminated
        coordinates). ``obs0`` has missing markers set to 0 and ``sw`` 0 for them. With
        ``second`` (see :meth:`_newton_available`; True, or a (B,) mask of the frames that
        need it, the others' rows left 0) also Σ rᵢ∇²rᵢ (B, nfree, nfree), the second-order
        term of the Hessian of ½|r|² (the coordinate tasks are linear)."""
        B = X.shape[0]
        Q = np.broadcast_to(base, (B, self.nq)).copy()
        Q[:, self.free] = X
        if not self.couplers and (self.cset is None or self.exact):
            # markers and coordinate tasks only: the weighted marker rows of the Jacobian come
            # from the station kinematics directly (only the entries a coordinate moves)
            n3, nc, nf = 3 * obs0.shape[1], len(self.ctask_idx), len(self.free)
            J = np.empty((B, n3 + nc, nf))
            want = second is not False
            res = self.chain.evaluate_weighted(Q, sw, self.free, J, hinges=want)
            P = res[0] if want else res
            r = np.empty((B, n3 + nc))
            r[:, :n3] = ((P - obs0) * sw[:, :, None]).reshape(B, n3)
            if nc:
                r[:, n3:] = self.ctask_sw * (Q[:, self.ctask_idx] - qref)
                Jc = np.zeros((nc, self.nq))
                Jc[np.arange(nc), self.ctask_idx] = self.ctask_sw
                J[:, n3:] = Jc[:, self.free]
            if not want:
                return r, J, P, Q
            return r, J, P, Q, self._second_rows(second, P, obs0, sw, res[1])
        if second is not False:
            P, Jm, h = self.chain.evaluate_batch(Q, hinges=True)
            r, J, P, Q = self._stack(B, Q, P, Jm, obs0, sw, qref)
            return r, J, P, Q, self._second_rows(second, P, obs0, sw, h)
        P, Jm = self.chain.evaluate_batch(Q)
        return self._stack(B, Q, P, Jm, obs0, sw, qref)

    def _second_rows(self, second, P, obs0, sw, h):
        """Σ rᵢ∇²rᵢ (B, nfree, nfree) of :meth:`_residual_batch` (``second`` True or a mask of
        the rows computed; the others 0) from the hinge columns ``h`` at the markers P."""
        R = (P - obs0) * (sw * sw)[:, :, None]
        if second is True:
            S = self.chain.second_order(P, R, h)
        else:
            m = np.flatnonzero(second)
            sub = Hinges(*(None if v is None else v[:, m] for v in (h.W, h.V, h.O, h.W2, h.V2)))
            S = np.zeros((len(P), self.nq, self.nq))
            S[m] = self.chain.second_order(P[m], R[m], sub)
        if len(self.free) < self.nq:
            S = S[:, self.free][:, :, self.free]
        return S

    def _stack(self, B, Q, P, Jm, obs0, sw, qref):
        """The residuals (B, m) and their Jacobians in the free coordinates (B, m, nfree) from
        the marker positions P and Jacobians Jm at the poses Q, with the penalty rows of
        couplers and constraints (:meth:`_residual_batch` stacks the other problems itself)."""
        parts = [((P - obs0) * sw[:, :, None]).reshape(B, -1)]
        nc = len(self.ctask_idx)
        if nc:
            parts.append(self.ctask_sw * (Q[:, self.ctask_idx] - qref))
            Jc = np.zeros((nc, self.nq))
            Jc[np.arange(nc), self.ctask_idx] = self.ctask_sw
        Js = [(Jm * sw[:, :, None, None]).reshape(B, -1, self.nq)]
        if nc:
            Js.append(np.broadcast_to(Jc, (B, nc, self.nq)))
        if self.couplers:
            sc = math.sqrt(self.constraint_weight)
            pen = np.empty((B, len(self.couplers)))
            Jp = np.zeros((B, len(self.couplers), self.nq))
            for k, (d, i, f, s) in enumerate(self.couplers):
                pen[:, k] = sc * (Q[:, d] - s * f.value(Q[:, i]))
                Jp[:, k, d] = sc
                Jp[:, k, i] -= sc * s * f.derivative(Q[:, i], 1)
            parts.append(pen)
            Js.append(Jp)
        if self.cset is not None and not self.exact:   # penalty
            sc = math.sqrt(self.constraint_weight)
            pc, pC = self._penalty(Q)
            parts.append(sc * pc)
            Js.append(sc * pC)
        r = np.concatenate(parts, axis=1)
        J = np.concatenate(Js, axis=1)[:, :, self.free]
        return r, J, P, Q

    def _constraint_batch(self, X, base, jac=True):
        """PointConstraint residuals (B, m) and Jacobians (B, m, nfree) at B frames."""
        B = X.shape[0]
        Q = np.broadcast_to(base, (B, self.nq)).copy()
        Q[:, self.free] = X
        if jac:
            P, J = self._cchain.evaluate_batch(Q)
            C = (J[:, 0::2] - J[:, 1::2]).reshape(B, -1, self.nq)[:, :, self.free]
        else:
            P = np.stack([self._cchain.evaluate(q, None, False)[0] for q in Q])
            C = None
        return (P[:, 0::2] - P[:, 1::2]).reshape(B, -1), C

    def _project_batch(self, X, base, tol=1e-12, max_iter=30):
        """:meth:`_project` for B frames at once. Returns (X, max |c| per frame)."""
        lo, hi = self.lo, self.hi
        c, C = self._constraint_batch(X, base)
        err = np.abs(c).max(axis=1)
        X = X.copy()
        for _ in range(max_iter):
            a = np.flatnonzero(err >= tol)
            if a.size == 0:
                break
            Ca, ca = C[a], c[a]
            CCt = Ca @ np.swapaxes(Ca, 1, 2)
            m = CCt.shape[-1]
            lam = np.linalg.solve(CCt + 1e-300 * np.eye(m), ca[..., None])[..., 0]
            dx = -np.einsum("bmi,bm->bi", Ca, lam)
            Xn = np.clip(X[a] + dx, lo, hi)
            cn, Cn = self._constraint_batch(Xn, base)
            en = np.abs(cn).max(axis=1)
            ok = (en < err[a]) | (en < tol)
            if not ok.any():
                break
            b = a[ok]
            X[b], c[b], C[b], err[b] = Xn[ok], cn[ok], Cn[ok], en[ok]
            if not ok.all():       # those that did not improve: stop them (sequential fallback)
                err[a[~ok]] = np.where(err[a[~ok]] < 1e-9, err[a[~ok]], np.inf)
                if np.all(err[a[~ok]] == np.inf):
                    break
        return X, err

    def _block_observations(self, obs):
        """Per-frame marker weights of OpenSim's objective (Σw|e|²/Σw over the markers present):
        returns valid (B, nm), √(w/Σw) (B, nm) and the observations with gaps zeroed."""
        valid = np.all(np.isfinite(obs), axis=2)
        w = np.where(valid, self.marker_weights[None, :], 0.0)
        wtot = w.sum(axis=1, keepdims=True)
        sw = np.sqrt(np.divide(w, wtot, out=np.zeros_like(w), where=wtot > 0))
        return valid, sw, np.where(valid[:, :, None], obs, 0.0)

    def solve_block_exact(self, obs, X0, base, qref, tol=1e-6, max_iter=100):
        """:meth:`solve_block` with PointConstraints held exactly (the steps of
        :meth:`_solve_frame_exact`, vectorized over the frames). Frames that reach a coordinate
        bound or whose projection fails are flagged not converged (re-solved one by one)."""
        B, nx = X0.shape
        valid, sw, obs0 = self._block_observations(obs)
        lo, hi = self.lo, self.hi
        X, cerr = self._project_batch(np.clip(X0, lo, hi), base)
        r, J, P, Q = self._residual_batch(X, base, obs0, sw, qref)
        cost = np.einsum("bm,bm->b", r, r)
        lam = np.full(B, 1e-6)
        its = np.zeros(B, int)
        act = cerr <= 1e-9
        failed = ~act
        eye = np.eye(nx)
        for _ in range(max_iter):
            a = np.flatnonzero(act)
            if a.size == 0:
                break
            c, C = self._constraint_batch(X[a], base)
            m = C.shape[1]
            Ja, ra = J[a], r[a]
            g = np.einsum("bmi,bm->bi", Ja, ra)
            H = np.swapaxes(Ja, 1, 2) @ Ja          # batched GEMM (einsum here is 4x slower)
            dH = np.maximum(np.einsum("bii->bi", H), 1e-12)
            K = np.zeros((a.size, nx + m, nx + m))
            K[:, :nx, :nx] = H + (lam[a][:, None] * dH)[:, :, None] * eye
            K[:, :nx, nx:] = np.swapaxes(C, 1, 2)
            K[:, nx:, :nx] = C
            rhs = np.concatenate([-g, -c], axis=1)
            try:
                step = np.linalg.solve(K, rhs[:, :, None])[:, :nx, 0]
            except np.linalg.LinAlgError:
                failed[a] = True
                act[a] = False
                break
            # a step below the tolerance: at the optimum (projection noise could only reject it)
            tiny = np.max(np.abs(step), axis=1) < tol
            if tiny.any():
                act[a[tiny]] = False
                a, step = a[~tiny], step[~tiny]
                if a.size == 0:
                    break
            Xn, en = self._project_batch(np.clip(X[a] + step, lo, hi), base)
            rn, Jn, Pn, Qn = self._residual_batch(Xn, base, obs0[a], sw[a], qref[a])
            _lm_update(a, Xn, rn, Jn, Pn, Qn, en <= 1e-9, X, r, J, P, Q, cost, lam, its, act, tol)
        err = np.where(valid, np.linalg.norm(P - obs0, axis=2), np.nan)
        on_bound = np.any((X <= lo) | (X >= hi), axis=1)
        self._block_converged = ~act & (lam <= 1e20) & ~failed & ~on_bound
        return X, Q, its, err

    def solve_block(self, obs, X0, base, qref, tol=1e-6, max_iter=100):
        """Solve B independent frames together (bounded LM, vectorized over the frames).

        The model Hessian of each frame is Gauss–Newton's JᵀJ plus the second-order term
        S = Σ rᵢ∇²rᵢ once the frame takes steps shorter than :data:`SECANT_STEP`: exact (Newton;
        :meth:`StationKinematics.second_order`) when :meth:`_newton_available`, otherwise the
        structured secant approximation of Dennis, Gay & Welsch 1981 (:func:`_secant_update`,
        built from those short accepted steps, dropped after a rejected one). Gauss–Newton
        alone converges only linearly here (by about 10× per iteration on a walking trial,
        whose marker residuals are not small); with S quadratically (the Gait2354 walk: 601
        iterations in blocks of 16 → 335). The acceptance test, the damping and the stopping
        rule are those of :meth:`solve_frame`, so the frames still stop at the optimum (step
        below ``tol``; with Newton steps a step below ``tol`` is taken whatever the cost does
        in its last digits).

        Parameters
        ----------
        obs : (B, nm, 3) m, NaN = missing; X0 : (B, nfree) starts; qref : (B, ntasks)

        Returns
        -------
        X (B, nfree), Q (B, nq), iterations (B,), marker errors (B, nm)
        """
        B, nx = X0.shape
        valid, sw, obs0 = self._block_observations(obs)
        lo, hi = self.lo, self.hi
        bounded = bool(np.any(np.isfinite(lo)) or np.any(np.isfinite(hi)))
        X = np.clip(X0, lo, hi)
        newton = self._newton_available()
        # (with Newton steps the start's second-order term is never used: a frame uses it only
        # after an accepted step shorter than SECANT_STEP, computed at that step's end)
        r, J, P, Q = self._residual_batch(X, base, obs0, sw, qref)
        S = np.zeros((B, nx, nx))
        near = np.zeros(B, bool)     # Newton's term only once a frame takes short steps
        placed = np.ones(B, bool)    # P holds the markers at X (not after a last tiny step)
        cost = np.einsum("bm,bm->b", r, r)
        lam = np.full(B, 1e-6)
        its = np.zeros(B, int)
        act = np.ones(B, bool)
        eye = np.eye(nx)
        diag = np.arange(nx)
        for _ in range(max_iter):
            a = np.flatnonzero(act)
            if a.size == 0:
                break
            # (the secant update below needs this iteration's J after _lm_update replaced it)
            Ja, ra = (J, r) if newton and a.size == B else (J[a], r[a])
            g = np.einsum("bmi,bm->bi", Ja, ra)
            A = np.swapaxes(Ja, 1, 2) @ Ja          # batched GEMM (einsum here is 4x slower)
            dH = np.maximum(A[:, diag, diag], 1e-12)
            A += S[a] if not newton else S[a] * near[a][:, None, None]
            A[:, diag, diag] += lam[a][:, None] * dH
            g0, X0a = g, X[a]
            if bounded:
                fixed = ((X[a] <= lo) & (g > 0)) | ((X[a] >= hi) & (g < 0))
                if fixed.any():
                    fr = ~fixed
                    A = A * (fr[:, :, None] & fr[:, None, :]) + fixed[:, :, None] * eye
                    g = np.where(fixed, 0.0, g)
            try:
                step = -np.linalg.solve(A, g[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:
                lam[a] *= 10.0
                continue
            Xn = np.clip(X[a] + step, lo, hi)
            if newton:
                # a step below the tolerance is taken whatever the cost does and ends the frame
                # (_lm_update's tiny_stops): taken here without evaluating the residuals and
                # Jacobians there; the frame's markers are placed once, after the loop
                dx = np.max(np.abs(Xn - X0a), axis=1)
                tiny = dx < tol
                if tiny.any():
                    t = a[tiny]
                    X[t] = Xn[tiny]
                    Q[t[:, None], self.free] = Xn[tiny]
                    its[t] += 1
                    lam[t] = np.maximum(lam[t] * 0.1, 1e-12)
                    act[t] = False
                    placed[t] = False
                    keep = ~tiny
                    a, Xn, dx = a[keep], Xn[keep], dx[keep]
                    if a.size == 0:
                        continue
                short = dx < SECANT_STEP
                second = True if short.all() else (short if short.any() else False)
                rn, Jn, Pn, Qn, *Sn = self._residual_batch(Xn, base, obs0[a], sw[a], qref[a], second)
                ok = _lm_update(a, Xn, rn, Jn, Pn, Qn, True, X, r, J, P, Q, cost, lam, its, act,
                                tol, tiny_stops=True)
                near[a] = ok & short
                if Sn:
                    S[a[near[a]]] = Sn[0][near[a]]
                continue
            rn, Jn, Pn, Qn = self._residual_batch(Xn, base, obs0[a], sw[a], qref[a])
            ok = _lm_update(a, Xn, rn, Jn, Pn, Qn, True, X, r, J, P, Q, cost, lam, its, act, tol)
            # the structured secant term: restarted after a rejected step, updated from short
            # accepted ones
            S[a[~ok]] = 0.0
            st = Xn - X0a
            near = ok & (np.max(np.abs(st), axis=1) < SECANT_STEP)
            if near.any():
                gn = np.einsum("bmi,bm->bi", Jn[near], rn[near])
                Sa = S[a[near]]
                _secant_update(Sa, st[near], gn - g0[near],
                               gn - np.einsum("bmi,bm->bi", Ja[near], rn[near]))
                S[a[near]] = Sa
        if not placed.all():
            P[~placed] = self.chain.positions_batch(Q[~placed])
        err = np.where(valid, np.linalg.norm(P - obs0, axis=2), np.nan)
        self._block_converged = ~act & (lam <= 1e20)
        return X, Q, its, err
