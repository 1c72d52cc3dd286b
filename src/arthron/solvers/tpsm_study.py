"""The TPSM's accuracy study and its embedded default (Eq. 16 of the thin-plate spline ligament
model paper): an adaptive reference integral of the ligament wrench, the force/moment
errors of the discretized models against it, and a synthetic, anatomically plausible ACL built
without input files (``arthron ligament --demo``, ``benchmarks/bench_tpsm.py``).

The ligament model itself is :mod:`arthron.solvers.ligament`.
"""
from __future__ import annotations

import time

import numpy as np

from ..errors import SolverError
from ..geometry.insertion import insertion_from_points, register_reference, resample_contour
from ..geometry.quadrature import triangle_rule
from ..geometry.tps import fit_tps
from .ligament import QUADRATIC, Law, TPSMLigament, Wrench, as_poses, rot_z

__all__ = ["reference_wrench", "force_error", "convergence_study", "synthetic_acl",
           "synthetic_flexion", "SYNTH_FEMUR_ORIGIN"]

# ----------------------------------------------------------------------------------------------
# adaptive reference (the benchmark of Eq. 16)
# ----------------------------------------------------------------------------------------------
def reference_wrench(lig: TPSMLigament, R=None, t=None, pole=None, *, rtol: float = 1e-7,
                     max_level: int = 16, start_triangles: int = 64, return_info: bool = False):
    """Adaptive integration of Eq. 8 over Σ_tp (the benchmark that replaces Matlab's integral2).

    The contour is triangulated, each triangle integrated by the 7-point degree-5 rule and by the
    same rule on its 4 midpoint children; triangles whose difference exceeds their share
    (area-proportional) of ``rtol`` × |F| (moments: × max(|M|, |F| √area)) are split, the others contribute the children's
    sum. The slack/taut boundary (a kink in the integrand) is resolved by the refinement.
    Vectorized over poses (the error test takes the worst pose). Cross-checked against
    ``scipy.integrate.dblquad`` in the tests.

    Returns Wrench (and a dict with the number of evaluations and triangles if ``return_info``).
    """
    if R is None:
        if lig.default_pose is None:
            raise SolverError(f"{lig.name}: no pose given and no default pose")
        R, t = lig.default_pose
    R, t, single = as_poses(R, t)
    rule = triangle_rule(7)
    mesh = lig.triangulate(max(start_triangles, lig.tibial.contour.shape[0]))
    tris = mesh.vertices[mesh.triangles]  # (K, 3, 2)
    area_total = mesh.area

    def integrate(tr):
        pts = np.einsum("gj,kjd->kgd", rule.barycentric, tr).reshape(-1, 2)
        vals = lig.integrand(pts, R, t, pole).reshape(R.shape[0], tr.shape[0], rule.npoints, 6)
        e1, e2 = tr[:, 1] - tr[:, 0], tr[:, 2] - tr[:, 0]
        A = 0.5 * np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])
        return np.einsum("tkgc,g,k->tkc", vals, rule.weights, A), A

    def children(tr):
        a, b, c = tr[:, 0], tr[:, 1], tr[:, 2]
        ab, bc, ca = (a + b) / 2, (b + c) / 2, (c + a) / 2
        return np.concatenate([np.stack(x, axis=1) for x in
                               ([a, ab, ca], [ab, b, bc], [ca, bc, c], [ab, bc, ca])])

    parent, _ = integrate(tris)
    est = parent.sum(axis=1)  # (T, 6)
    scale = np.maximum(np.linalg.norm(est[:, :3], axis=1), 1e-300)[:, None]
    # moments can cancel (symmetric insertions): measure them against |F| × insertion size too
    mscale = np.maximum(np.linalg.norm(est[:, 3:], axis=1), scale[:, 0] * np.sqrt(area_total))[:, None]
    total = np.zeros_like(est)
    nevals = tris.shape[0] * rule.npoints
    level = 0
    while tris.shape[0]:
        ch = children(tris)
        K = tris.shape[0]
        cv, A = integrate(ch)
        nevals += ch.shape[0] * rule.npoints
        csum = cv.reshape(cv.shape[0], 4, K, 6).sum(axis=1)
        err = np.abs(csum - parent)
        rel = np.maximum(err[..., :3].max(-1) / scale, err[..., 3:].max(-1) / mscale).max(axis=0)  # (K,)
        Ak = A.reshape(4, K).sum(axis=0)
        ok = rel <= rtol * Ak / area_total
        level += 1
        if level >= max_level:
            ok[:] = True
        total += csum[:, ok].sum(axis=1)
        bad = ~ok
        if not bad.any():
            break
        idx = np.nonzero(bad)[0]
        tris = ch.reshape(4, K, 3, 2)[:, idx].reshape(-1, 3, 2)
        parent = cv.reshape(cv.shape[0], 4, K, 6)[:, :, idx].reshape(cv.shape[0], -1, 6)
    pole_arr = np.zeros(3) if pole is None else np.asarray(pole, float)
    w = Wrench(total[0, :3], total[0, 3:], pole_arr) if single else Wrench(total[:, :3], total[:, 3:], pole_arr)
    if return_info:
        return w, {"evaluations": nevals, "levels": level}
    return w


def force_error(model: Wrench, ref: Wrench) -> tuple:
    """the TPSM paper Eq. 16: (e_F, e_M) = 100 |‖·‖_model - ‖·‖_ref| / ‖·‖_ref, in percent."""
    eF = 100.0 * np.abs(model.force_magnitude - ref.force_magnitude) / ref.force_magnitude
    eM = 100.0 * np.abs(model.moment_magnitude - ref.moment_magnitude) / ref.moment_magnitude
    return eF, eM


def convergence_study(lig: TPSMLigament, n_triangles, methods=("MBM", "TPSM-1", "TPSM-3", "TPSM-4"),
                      R=None, t=None, ref: Wrench | None = None, timing_repeats: int = 0):
    """Force/moment errors (Eq. 16) vs the adaptive reference for each method and mesh.

    Returns dict with "n_triangles", "reference" and per method arrays "eF", "eM", "n_fibres",
    and (if timing_repeats > 0) "us" (µs per single-pose wrench, best of repeats).
    """
    if R is None:
        R, t = lig.default_pose
    ref = ref or reference_wrench(lig, R, t)
    out = {"n_triangles": list(n_triangles), "reference": ref}
    meshes = {n: lig.triangulate(n) for n in n_triangles}
    for m in methods:
        eF, eM, nf, us = [], [], [], []
        for n in n_triangles:
            fib = lig.model(m, n, meshes[n])
            w = fib.wrench(R, t)
            a, b = force_error(w, ref)
            eF.append(float(a))
            eM.append(float(b))
            nf.append(fib.n)
            if timing_repeats:
                best = np.inf
                for _ in range(timing_repeats):
                    t0 = time.perf_counter()
                    fib.wrench(R, t)
                    best = min(best, time.perf_counter() - t0)
                us.append(best * 1e6)
        out[m] = {"eF": np.array(eF), "eM": np.array(eM), "n_fibres": np.array(nf)}
        if timing_repeats:
            out[m]["us"] = np.array(us)
    return out


# ----------------------------------------------------------------------------------------------
# the embedded default: a synthetic, anatomically plausible ACL
# ----------------------------------------------------------------------------------------------
_MM = 1e-3
# tibia frame (right knee, OpenSim convention): x anterior, y superior, z lateral; origin at the
# centre of the tibial plateau. Femur frame at full extension: parallel, origin on the flexion
# axis (transepicondylar, along z) 22 mm above and 4 mm behind the tibial origin.
SYNTH_FEMUR_ORIGIN = np.array([-4.0, 22.0, 0.0]) * _MM


def _frame(normal, e1_hint):
    n = np.asarray(normal, float)
    n = n / np.linalg.norm(n)
    e1 = np.asarray(e1_hint, float)
    e1 = e1 - np.dot(e1, n) * n
    e1 /= np.linalg.norm(e1)
    return np.vstack([e1, np.cross(n, e1), n])


def _oval(a, b, n, skew=0.0, taper=0.0, phase=0.0):
    th = np.linspace(0, 2 * np.pi, n, endpoint=False) + phase
    x = a * np.cos(th) * (1.0 + skew * np.sin(th))
    y = b * np.sin(th) * (1.0 - taper * np.cos(th))
    return np.column_stack([x, y])


def _synthetic_side(centre, normal, e1_hint, contour_mm, height_mm, seed):
    """Point cloud (tibia/femur frame, m) of a curved footprint and its 3-D contour."""
    ax = _frame(normal, e1_hint)
    rng = np.random.default_rng(seed)
    lo, hi = contour_mm.min(0) - 2.5, contour_mm.max(0) + 2.5
    gx, gy = np.meshgrid(np.arange(lo[0], hi[0] + 1e-9, 2.0), np.arange(lo[1], hi[1] + 1e-9, 2.0))
    xy = np.column_stack([gx.ravel(), gy.ravel()]) + rng.uniform(-0.4, 0.4, (gx.size, 2))
    cloud = centre + (xy[:, :1] * ax[0] + xy[:, 1:] * ax[1] + height_mm(xy)[:, None] * ax[2]) * _MM
    cont = centre + (contour_mm[:, :1] * ax[0] + contour_mm[:, 1:] * ax[1]
                     + height_mm(contour_mm)[:, None] * ax[2]) * _MM
    return cloud, cont, ax


def synthetic_acl(l0: float = 0.027, c: float = 100e6, law: Law = QUADRATIC, *,
                  n_contour_landmarks: int = 12, contour_lambda: float = 0.1 * _MM**2) -> TPSMLigament:
    """A synthetic but anatomically plausible right-knee ACL built from scratch (no input files).

    Subject data: tibial footprint 18 × 11 mm (area ≈ 150 mm²) on a gently curved intercondylar
    surface, femoral footprint 16 × 9 mm (≈ 110 mm²) on the lateral condyle's notch wall, both
    as point clouds with digitized 16-point contours; literature-like reference data: elliptic
    contours with four bundle centroids (two anteromedial, two posterolateral). The model follows
    the TPSM paper step by step: best-fit planes and frames, TPS registration φ_t, φ_f of the reference
    contours (λ = 0), mapped centroids, insertion-to-insertion map φ from the centroids (λ = 0)
    plus ``n_contour_landmarks`` contour landmarks (λ = ``contour_lambda``: the paper's 0.1 mm²),
    TPS height fields Γ (λ = 0). At full extension (the default pose) fibres are 17-41 mm long
    (median 28 mm; anteromedial fibres longer), so l0 = 27 mm leaves the ligament partially
    slack (54 % of the insertion taut) and l0 = 10 mm fully taut (the paper's two cases). c: stiffness per unit area (Pa, paper: 100 MPa).
    """
    # --- subject tibial insertion (tibia frame) ------------------------------------------------
    ct = np.array([9.0, 1.0, -2.5]) * _MM
    cont_t = _oval(9.0, 5.6, 16, skew=0.07, taper=0.10)
    cloud_t, c3_t, _ = _synthetic_side(
        ct, [0.12, 1.0, 0.05], [1.0, 0.0, 0.0], cont_t,
        lambda xy: -(xy[:, 0] ** 2) / (2 * 45.0) + (xy[:, 1] ** 2) / (2 * 30.0) + 0.25 * np.sin(xy[:, 0] / 3.0), 0)
    tib = insertion_from_points(cloud_t, c3_t, name="ACL tibial insertion", normal_hint=[0, 1, 0],
                                e1_hint=[1, 0, 0], contour_mode="polygon")
    # --- subject femoral insertion (femur frame) -----------------------------------------------
    cf = np.array([-3.0, 0.5, 5.5]) * _MM  # ≈ (-7, 22.5, 5.5) mm in the tibia frame at extension
    cont_f = _oval(8.0, 4.6, 16, skew=-0.06, taper=0.08, phase=0.1)
    cloud_f, c3_f, _ = _synthetic_side(
        cf, [0.05, -0.25, -1.0], [-0.35, 1.0, 0.0], cont_f,
        lambda xy: (xy[:, 0] ** 2) / (2 * 35.0) + (xy[:, 1] ** 2) / (2 * 50.0), 1)
    fem = insertion_from_points(cloud_f, c3_f, name="ACL femoral insertion", normal_hint=[0, 0, -1],
                                e1_hint=[-0.35, 1.0, 0.0], contour_mode="polygon")
    # --- literature-like reference data (S_rt, S_rf, mm) ----------------------------------------
    ref_t = _oval(9.5, 5.0, 40)
    ref_f = _oval(8.5, 4.2, 40)
    cen_t = np.array([[5.0, 1.2], [1.8, 2.2], [-1.8, -1.6], [-5.2, -0.8]])  # AM1, AM2, PL1, PL2
    cen_f = np.array([[4.6, 0.6], [1.6, 2.0], [-1.6, -1.8], [-4.8, -0.4]])
    tc_mm = tib.contour / _MM
    fc_mm = fem.contour / _MM
    _, Ct = register_reference(ref_t, cen_t, tc_mm, ref_start=[10, 0], subject_start=[20, 0])
    _, Cf = register_reference(ref_f, cen_f, fc_mm, ref_start=[10, 0], subject_start=[20, 0])
    Kt = resample_contour(tib.contour, n_contour_landmarks, [1.0, 0.0])
    Kf = resample_contour(fem.contour, n_contour_landmarks, [1.0, 0.0])
    lam = np.r_[np.zeros(len(Ct)), np.full(n_contour_landmarks, contour_lambda)]
    phi = fit_tps(np.vstack([Ct * _MM, Kt]), np.vstack([Cf * _MM, Kf]), lam,
                  what="ACL insertion-to-insertion map φ")
    return TPSMLigament(tib, fem, phi, c, l0, law, "ACL (synthetic)",
                        (np.eye(3), SYNTH_FEMUR_ORIGIN.copy()),
                        {"tibial_centroids": Ct * _MM, "femoral_centroids": Cf * _MM,
                         "tibial_contour_landmarks": Kt, "femoral_contour_landmarks": Kf})


def synthetic_flexion(angles_deg):
    """Poses (R (T,3,3), t (T,3)) of the synthetic femur in the tibia frame for knee flexion
    angles (degrees): rotation about the femur's z axis (flexion axis) through its origin."""
    th = np.deg2rad(np.atleast_1d(np.asarray(angles_deg, float)))
    return rot_z(-th), np.broadcast_to(SYNTH_FEMUR_ORIGIN, (th.size, 3)).copy()

