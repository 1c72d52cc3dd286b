"""Forward dynamics: accelerations from the equations of motion, with model constraints if any.

``M(q) q̈ = Q + Dᵀh − DᵀMγ (+ Gᵀμ, G q̈ + Ġq̇ = 0)`` (Blajer & Czaplicki 2005, Eq. 2.9; G of
:class:`arthron.multibody.constraints.ConstraintSet`). Without model constraints the mass matrix
comes from the composite-rigid-body algorithm in node-column space
(:func:`arthron.multibody.mass_matrix.node_mass_matrix`) and is factored by a Cholesky
vectorized over the frames (frames last: each step a vector operation over T); with
constraints the augmented system ``[M −Gᵀ; G 0]`` is solved frame by frame (batched LAPACK).
"""
from __future__ import annotations

import numpy as np

from .constrained_dynamics import constraint_bias, independent_rows
from .frames_last import inverse_dynamics_frames_last, kinematics_frames_last
from .kinematics import Tree, forward_kinematics
from .mass_matrix import mass_matrix, node_mass_matrix

__all__ = ["forward_accelerations"]


def forward_accelerations(tree: Tree, q, qd, generalized=None, loads=(), locked=None,
                          constraints=None, return_multipliers=False):
    """q̈ from the equations of motion (Blajer & Czaplicki 2005, Eq. 2.9), with model constraints if given.

    ``D̄ᵀMD̄ q̈ = Q + Dᵀh − DᵀMγ + Gᵀμ``, ``G q̈ + Ġq̇ = 0`` (G = ∂c/∂q of
    :class:`arthron.multibody.constraints.ConstraintSet`). This is what OpenSim's JointReaction
    uses: it realizes accelerations with the actuator forces of ``forces_file`` applied.

    Without model constraints the mass matrix comes from the composite-rigid-body algorithm
    (:func:`mass_matrix`, frames last) and is factored by a Cholesky vectorized over the frames;
    the bias ``Dᵀ(Mγ − h)`` is one inverse-dynamics pass at q̈ = 0 (subtree sums). With
    constraints the augmented system ``[M −Gᵀ; G 0]`` is solved frame by frame (batched LAPACK).

    Parameters
    ----------
    q, qd : (T, nq); generalized : (T, nq) or None, mobility forces (CoordinateActuators), N·m or N
    loads : ExternalLoad list (body forces: external loads, muscles along paths)
    locked : (nq,) bool or None, coordinates held at zero acceleration (OpenSim's locked ones)
    constraints : ConstraintSet or None (its rows may be redundant where locked coordinates close
        a loop: the multipliers are then the minimum-norm ones over the rows and the locks,
        :func:`~arthron.multibody.constrained_dynamics.redundant_rows`)
    return_multipliers : also return μ (T, m) (see :func:`~arthron.multibody.constrained_dynamics.constraint_loads`)

    Returns
    -------
    (T, nq) accelerations (rad/s², m/s²) [, μ].
    """
    q = np.atleast_2d(np.asarray(q, float))
    qd = np.atleast_2d(np.asarray(qd, float))
    T, nq = q.shape
    bias = inverse_dynamics_frames_last(tree, q, qd, np.zeros_like(q), loads)         # Dᵀ(Mγ − h)
    kin = kinematics_frames_last(tree, q)                                              # poses
    rhs = -bias if generalized is None else np.asarray(generalized, float) - bias
    free = np.ones(nq, bool) if locked is None else ~np.asarray(locked, bool)
    fi = np.flatnonzero(free)
    qdd = np.zeros((T, nq))
    m = 0 if constraints is None else constraints.size
    lay = tree.hinges
    if m == 0 and np.all(lay.primary[fi] >= 0):
        # CRBA in node-column space, frames last; coordinates acting in several nodes (knee
        # translations as functions of the angle) have their columns summed into the first;
        # Cholesky over the frames.
        Mk = node_mass_matrix(tree, kin, T, lower=lay.identity)
        for a, a0 in lay.dups:
            Mk[a0] += Mk[a]
        for a, a0 in lay.dups:
            Mk[:, a0] += Mk[:, a]
        cf = np.sort(lay.primary[fi])               # free coordinates' columns, parents first
        x = _solve_spd_tl(Mk[cf[:, None], cf[None, :]], np.ascontiguousarray(rhs[:, lay.perm[cf]].T))
        if x is not None:
            qdd[:, lay.perm[cf]] = x.T
            return (qdd, np.zeros((T, 0))) if return_multipliers else qdd
    Mb = mass_matrix(tree, q, kin)                                                      # CRBA
    if m == 0:
        qdd[:, fi] = np.linalg.solve(Mb[:, fi][:, :, fi], rhs[:, fi, None])[..., 0]
        mu = np.zeros((T, 0))
    else:
        Gq = constraints.jacobian(q)                 # (T, m, nq); the free columns solved
        G = Gq[:, :, fi]
        b = constraint_bias(tree, q, qd, constraints, forward_kinematics(tree, q, qd, np.zeros_like(q)))
        nf = fi.size
        W, drop, G, b = independent_rows(G, b)  # independent combinations of the rows; the others' μ 0
        K = np.zeros((T, nf + m, nf + m))
        K[:, :nf, :nf] = Mb[:, fi][:, :, fi]
        K[:, :nf, nf:] = -np.swapaxes(G, 1, 2)
        K[:, nf:, :nf] = G
        if W is not None:
            K[:, nf:, nf:] = drop[:, :, None] * np.eye(m)
        sol = np.linalg.solve(K, np.concatenate([rhs[:, fi], -b], -1)[..., None])[..., 0]
        qdd[:, fi] = sol[:, :nf]
        mu = sol[:, nf:]
        if W is not None:
            # redundant rows: the constraint forces M q̈ − Q are shared among the constraints
            # and the locks (OpenSim's locked coordinates are Simbody constraints) by the
            # minimum-norm multipliers, as Simbody's least-squares solve shares them
            lk = np.flatnonzero(~free)
            A = np.concatenate([np.swapaxes(Gq, 1, 2),
                                np.broadcast_to(np.eye(nq)[:, lk], (T, nq, lk.size))], 2)
            fc = np.einsum("tij,tj->ti", Mb, qdd) - rhs
            mu = np.einsum("tij,tj->ti", np.linalg.pinv(A, rcond=1e-10), fc)[:, :m]
    return (qdd, mu) if return_multipliers else qdd


def _solve_spd_tl(A, b):
    """x with A x = b for symmetric positive definite A (n, n, T) (lower triangle read),
    b (n, T), frames last: Cholesky and two substitutions, each step a vector operation over
    the frames. Returns None when a pivot is not positive (singular or indefinite A)."""
    n, T = b.shape
    L = np.zeros_like(A)
    for j in range(n):
        d = A[j, j] - np.einsum("kt,kt->t", L[j, :j], L[j, :j]) if j else A[j, j].copy()
        if not np.all(d > 0):
            return None
        L[j, j] = np.sqrt(d)
        if j + 1 < n:
            r = A[j + 1:, j] - np.einsum("ikt,kt->it", L[j + 1:, :j], L[j, :j]) if j else A[j + 1:, j]
            L[j + 1:, j] = r / L[j, j]
    y = np.empty_like(b)
    for i in range(n):
        y[i] = (b[i] - np.einsum("kt,kt->t", L[i, :i], y[:i])) / L[i, i]
    x = np.empty_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - np.einsum("kt,kt->t", L[i + 1:, i], x[i + 1:])) / L[i, i]
    return x
