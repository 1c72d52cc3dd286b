"""The abduction study on the built-in shoulder–elbow model (Sarshari et al. 2021, Fig. 5):
kinematics from the de Groot & Brand (2001) rhythm with the ribcage constraints held, IK
reconstruction of its landmarks, load sharing with the constraint multipliers and the stability
cone, the glenohumeral reaction checked by Newton's law on the arm, moment arms by two methods,
the parameter study's directions, and the CLI.

Few frames everywhere (the full 131-frame runs are in benchmarks/bench_shoulder_study.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from arthron.cli import main
from arthron.multibody.constraints import compile_constraints
from arthron.multibody.kinematics import compile_model, forward_kinematics, marker_positions
from arthron.solvers.shoulder_kinematics import (DEGROOT_BRAND_2001, abduction_targets, degroot_brand_2001,
                                                  euler_angles, euler_matrix)
from arthron.solvers.shoulder_forces import moment_arm_check
from arthron.solvers.shoulder_study import PARAMETER_STUDY, scale_subject
from arthron.tools.shoulder_study_tool import default_model, run_study

EL = np.array([20.0, 40.0, 60.0, 85.0, 100.0, 115.0, 130.0, 150.0])


@pytest.fixture(scope="module")
def generic():
    model, spec = default_model()
    return model, spec


@pytest.fixture(scope="module")
def study(generic, tmp_path_factory):
    model, spec = generic
    out = tmp_path_factory.mktemp("study")
    return out, run_study(out, parameter_study=True, elevation_deg=EL, model=model, spec=spec)


@pytest.fixture(scope="module")
def run(study):
    """The generic subject's abduction (run_abduction through the study)."""
    return study[1]["results"]["generic"][1]


def test_regression_and_euler_conventions():
    # de Groot & Brand (2001) written out at Hy = 30°, Hz = 90°
    C, S = degroot_brand_2001(30.0, 90.0)
    assert S[0, 1] == pytest.approx(3.095 - 0.079 * 30 + 0.396 * 90 + 0.414 * 10.669)
    assert C[0, 0] == pytest.approx(-4.983 + 0.120 * 30 - 0.242 * 90 + 0.851 * -28.573)
    assert set(DEGROOT_BRAND_2001) == {"Cy", "Cz", "Sy", "Sz", "Sx"}
    rng = np.random.default_rng(3)
    a = np.column_stack([rng.uniform(-170, 170, 20), rng.uniform(-80, 80, 20), rng.uniform(-170, 170, 20)])
    np.testing.assert_allclose(euler_angles("YZX", euler_matrix("YZX", a)), a, atol=1e-9)
    b = a.copy()
    b[:, 1] = rng.uniform(5, 175, 20)
    np.testing.assert_allclose(euler_angles("YZY", euler_matrix("YZY", b)), b, atol=1e-9)
    # humerus "no axial rotation": at elevation 0 the frame is the thorax's
    R, _ = abduction_targets(np.array([1e-9]), 30.0)
    np.testing.assert_allclose(R["humerus"][0], np.eye(3), atol=1e-9)


def test_abduction_holds_the_constraints_and_follows_the_rhythm(run):
    k = run.kinematics
    assert k.constraint_residual.max() <= 1e-9
    assert k.velocity_residual.max() <= 1e-9 and k.acceleration_residual.max() <= 1e-6
    # the humerus has its own 3 rotations: it reaches the target; clavicle and scapula are held
    # back by the ribcage constraints (within 15° of the regression on this model)
    assert k.target_error_deg[:, 2].max() < 1e-3
    assert k.target_error_deg[:, :2].max() < 15.0
    np.testing.assert_allclose(k.angles["humerus"][:, 1], EL, atol=1e-3)
    # landmark distances across rigid joints are constant (SC–AC on the clavicle, GH–AC on the scapula)
    tree = compile_model(run.model)
    _, P = marker_positions(tree, k.q, ["SC", "AC", "GH"])
    for a, b in ((0, 1), (2, 1)):
        d = np.linalg.norm(P[:, a] - P[:, b], axis=1)
        assert np.ptp(d) < 1e-12


def test_landmark_trial_reconstructs_the_motion_by_ik(run):
    from arthron.solvers.inverse_kinematics import solve_ik
    from arthron.tables import MarkerTrial
    k = run.kinematics
    tree = compile_model(run.model)
    names, P = marker_positions(tree, k.q)
    trial = MarkerTrial(frames=np.arange(1, len(k.time) + 1), time=k.time, labels=names, positions=P,
                        data_rate=100.0, camera_rate=100.0, orig_data_rate=100.0, orig_start_frame=1,
                        orig_num_frames=len(k.time), units="m")
    res = solve_ik(run.model, trial, q0=tree.default_q)
    assert res.max.max() < 1e-6                                   # m, marker errors
    # the landmarks fix the scapula, humerus and forearm poses (the coordinates themselves may
    # differ: GH's Y–Z–Y angles have two solutions, and the clavicle's axial rotation, which no
    # landmark sees, trades against the AC angles)
    k1, k2 = forward_kinematics(tree, res.q), forward_kinematics(tree, k.q)
    for b in ("scapula", "humerus", "ulna", "radius"):
        n = tree.body_node[tree.body_names.index(b)]
        np.testing.assert_allclose(k1.R[:, n], k2.R[:, n], atol=1e-5)
    cs = compile_constraints(run.model, tree)
    assert np.abs(cs.residuals(res.q)).max() <= 1e-9


def test_glenoid_inclination_rotates_the_cone_as_eq16(generic):
    """Sarshari et al. 2021, Eqs. 15–16 read literally: the glenoid centre GC is rotated by
    Δα_GI = α_GI − 7° about ŷ_s = (SN − AI) × (SN − TS) through the scapula frame's origin SN
    (the spinoglenoid notch, on the scapular neck medial of GC; DAS4 has no SN landmark), and the
    cone is built from the rotated GC (axis GC → GH). ``glenoid_cone`` rotates the axis itself by
    Δα_GI about ŷ_s: the same direction for any centre medial of GC along the axis, and the same
    angle within 1° when that centre lies as far medial of GC as GH lies lateral (19 mm); the
    literal tilt for −7° is 7.1°, 13.2°, 17.0° for a centre 10, 19, 25 mm medial (17.4° about
    AA, which stands for SN in ŷ_s)."""
    import math
    from arthron.models.shoulder_elbow import shoulder_elbow_info
    from arthron.solvers.shoulder_study import Subject, glenoid_cone
    model, spec = generic
    info = shoulder_elbow_info()
    gc, gh = np.asarray(info.glenoid_center), np.asarray(info.glenohumeral_center)
    ys = np.asarray(info.scapular_plane_normal)
    a0 = np.asarray(spec.cone_axis)

    def rod(u, a):                                    # Eq. 16
        K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
        return np.outer(u, u) + math.cos(a) * (np.eye(3) - np.outer(u, u)) + math.sin(a) * K

    def ang(u, v):
        return math.degrees(math.acos(np.clip(u @ v / np.linalg.norm(u) / np.linalg.norm(v), -1, 1)))
    for incl in (-7.0, 15.0):
        ours = np.asarray(glenoid_cone(model, spec, Subject(inclination_deg=incl)).axis)
        d = math.radians(incl - 7.0)
        assert ang(ours, a0) == pytest.approx(abs(incl - 7.0), abs=0.05)   # the axis is 2.7° off the plane
        tilt = []
        for r_mm in (5.0, 10.0, 19.0, 25.0, 60.0):
            sn = gc - r_mm / 1000 * a0
            gc_new = sn + rod(ys, d) @ (gc - sn)
            lit = (gh - gc_new) / np.linalg.norm(gh - gc_new)
            assert (lit - a0) @ (ours - a0) > 0          # tilted the same way (unit vectors)
            tilt.append(ang(lit, a0))
        assert np.all(np.diff(tilt) > 0)                 # more the farther the centre
        assert tilt[2] == pytest.approx(abs(incl - 7.0), abs=1.0)   # centre as far as GH: Δα_GI


def test_load_sharing_meets_the_equations_the_cone_and_newton(run):
    f = run.forces
    assert f.feasible.all()
    assert f.residual.max() < 1e-6                                # N·m
    assert (f.multipliers >= -1e-9).all()                         # the ribcage pushes
    assert (f.cone_ratio <= 1.0 + 1e-6).all()
    assert (f.forces >= -1e-9).all()
    fmax = np.array([run.model.forces[m].max_isometric_force for m in f.muscles])
    assert (f.forces <= fmax * (1 + 1e-9)).all()
    # the reaction (Newton on the humerus-forearm subtree) equals the E-matrix reaction of the
    # joint-reaction solver (Blajer & Czaplicki 2005) at the solved forces
    from arthron.solvers.load_sharing_cone import reaction_map
    from arthron.solvers.shoulder_forces import abduction_problem
    model, k = run.model, run.kinematics
    tree = compile_model(model)
    prob = abduction_problem(model, k.q, k.qd, k.qdd, k.time, k.coordinates, muscles=f.muscles, tree=tree)
    C, d = reaction_map(model, prob, run.cone.joint, tree)
    fmax = prob.force_per_control[0, :len(f.muscles)]
    x = np.hstack([f.forces / fmax, f.multipliers])
    expected = np.einsum("tin,tn->ti", C, x) + d
    np.testing.assert_allclose(f.extra["reaction_ground"], expected, atol=1e-9 * (1 + np.abs(expected).max()))
    np.testing.assert_allclose(f.reaction_magnitude, np.linalg.norm(expected, axis=1), rtol=1e-9)


def test_the_optimum_without_the_cone_is_reported(run):
    """``extra`` carries the reaction of the optimum without the cone: the solution itself where
    the cone is inactive, outside the cone where it is active (the cone bent it)."""
    f = run.forces
    F0 = f.extra["reaction_magnitude_without_cone"]
    a0 = f.extra["cone_angle_without_cone_deg"]
    off = ~f.extra["cone_off_outside"]
    assert off.any() and f.cone_active.any()
    np.testing.assert_allclose(F0[off], f.reaction_magnitude[off], rtol=1e-9)
    np.testing.assert_allclose(a0[off], f.cone_angle_deg[off], atol=1e-9)
    on = f.cone_active
    assert (a0[on] > f.cone_angle_deg[on]).all()
    # the reaction without the cone leaves it by less than 1° on this model (31.4° half-angle):
    # why glenoid inclination hardly changes the force here (README, issue 12)
    assert (a0[on] < run.cone.half_angles_deg[1] + 1.0).all()


def test_humeral_rotation_of_the_abduction(generic):
    """The humerus's axial rotation (not given by de Groot & Brand 2001 nor by Sarshari et al.
    2021): Y–Z–Y angles (Hy, Hz, −Hy − ρ); ρ > 0 is external rotation, which turns the medial
    epicondyle forwards when the arm is raised."""
    from arthron.solvers.shoulder_kinematics import solve_abduction
    from arthron.errors import OptionError
    model, spec = generic
    _, ang = abduction_targets(np.array([30.0, 90.0]), 30.0, humeral_rotation_deg=20.0)
    np.testing.assert_allclose(ang["humerus"], [[30, 30, -50], [30, 90, -50]])
    tree = compile_model(model)
    _, P0 = marker_positions(tree, tree.default_q[None], ["IJ", "C7"])
    fwd = P0[0, 0] - P0[0, 1]                         # IJ − C7, made horizontal (model y is up)
    fwd[1] = 0.0
    el = np.array([20.0, 50.0, 90.0, 120.0])
    ahead = {}
    for rho in (0.0, 20.0):
        k = solve_abduction(model, spec.coordinates, elevation_deg=el, humeral_rotation_deg=rho, tree=tree)
        assert k.target_error_deg[:, 2].max() < 1e-3 and k.constraint_residual.max() <= 1e-9
        np.testing.assert_allclose(k.angles["humerus"][:, 2], -30.0 - rho, atol=1e-3)
        _, P = marker_positions(tree, k.q, ["EL", "EM"])
        e = P[:, 1] - P[:, 0]
        ahead[rho] = (e / np.linalg.norm(e, axis=1)[:, None]) @ (fwd / np.linalg.norm(fwd))
    assert (ahead[20.0] > ahead[0.0] + 0.1).all()
    with pytest.raises(OptionError, match="humeral rotation"):
        solve_abduction(model, spec.coordinates, elevation_deg=el, humeral_rotation_deg=120.0, tree=tree)


def test_elevation_moment_arms_are_the_moments_of_the_path_forces(run):
    """``elevation_moment_arms`` (J⁻ᵀ of the glenohumeral generalized forces) against the
    moment about GH of the forces each path applies at its nodes on the humerus, ulna and
    radius (OpenSim's equivalent point forces, :func:`path_body_forces`), projected on the
    elevation axis: equal to 1e-7 m (J exact, from the velocity map)."""
    from arthron.multibody.paths import compile_paths, path_body_forces
    from arthron.solvers.shoulder_forces import elevation_moment_arms
    model, k = run.model, run.kinematics
    muscles = [m for m in model.forces if m.startswith(("delt_scap_", "supra_", "infra_", "subscap_", "bic_l",
                                                    "ter_maj_", "tric_long_"))]
    assert len(muscles) > 30
    q = k.q[[1, 3, 5]]
    mom, arm = elevation_moment_arms(model, q, muscles)
    tree = compile_model(model)
    ps = compile_paths(model, tree, forces=muscles)
    loads = path_body_forces(ps, tree, q, np.ones((len(q), len(muscles))))
    distal = [tree.body_names.index(b) for b in ("humerus", "ulna", "radius")]
    _, P = marker_positions(tree, q, ["GH", "EL"])
    n = np.cross(P[:, 1] - P[:, 0], [0.0, 1.0, 0.0])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    for i, (body, pts, f) in enumerate(loads.points):
        on = np.isin(body, distal)[..., None]
        m = (np.cross(pts - P[:, None, 0], f) * on).sum(axis=1)
        np.testing.assert_allclose(mom[:, i], m, atol=1e-7)
        np.testing.assert_allclose(arm[:, i], np.einsum("ti,ti->t", m, n), atol=1e-7)
    # the deltoid's acromial part raises the arm, teres major lowers it
    acro = [i for i, m in enumerate(muscles) if m.startswith("delt_scap_") and int(m.rsplit("_", 1)[1]) >= 4]
    ter = [i for i, m in enumerate(muscles) if m.startswith("ter_maj_")]
    assert arm[:, acro].mean() > 0.01 and arm[:, ter].max() < 0


def _wrap_class(model, muscle):
    kinds = {w.name: type(w).__name__ for b in model.bodies.values() for w in b.wrap_objects}
    ws = {kinds[pw.wrap_object] for pw in model.forces[muscle].path.wraps}
    if "WrapTorus" in ws:
        return "torus"
    if "WrapEllipsoid" in ws:
        return "ellipsoid"
    return "sphere/cylinder" if ws else "none"


def test_moment_arms_by_two_methods_agree(run):
    k = run.kinematics
    muscles = [n for n, f in run.model.forces.items() if f.is_muscle]
    g, e = moment_arm_check(run.model, k.q[[1, 5]], list(k.coordinates), muscles=muscles)
    d = np.abs(g - e)
    cls = np.array([_wrap_class(run.model, m) for m in muscles])
    assert np.abs(g).max() > 0.05
    # straight paths and via points: the same derivative (central differences with h = 1e-6 rad:
    # truncation ~h^2 times the third derivative, rounding ~1e-16 l / h, both < 1e-9 m)
    assert d[:, cls == "none"].max() < 1e-9
    # spheres and cylinders: OpenSim's wrap paths are length-stationary to its tolerance;
    # 0.1 mm is 1 % of the smallest moment arms that matter (1 cm)
    assert d[:, cls == "sphere/cylinder"].max() < 1e-4
    # ellipsoid (the thorax under serratus anterior): OpenSim's ellipsoid wrap is not a geodesic,
    # so the force direction at the tangent points is not the length gradient: within 2 mm
    assert d[:, cls == "ellipsoid"].max() < 2e-3


def test_torus_moment_arms_are_opensims_by_both_methods(run, tmp_path, monkeypatch):
    """Over DAS4's wrist tori (FCR, FCU, ECRL, ECRB, ECU) the two methods disagree by centimetres
    (FCU about EL_x: -1.4 cm geometric, -6.0 cm excursion) because OpenSim's torus wrap is not
    length-stationary. The gap is OpenSim 4.6's own: on the exported model the geometric moment
    arms equal ``Muscle.computeMomentArm`` (1e-9 m), the lengths equal ``getLength`` at q ± h
    (1e-9 m; OpenSim's torus ring search replayed step by step), and
    OpenSim's own ``computeMomentArm`` and ``-dl/dq`` differ by the same centimetres."""
    import warnings
    osim = pytest.importorskip("opensim")
    from arthron.multibody.kinematics import compile_model
    from arthron.multibody.paths import compile_paths, path_lengths
    from arthron.tools.shoulder_elbow_tool import export_shoulder_elbow
    monkeypatch.chdir(tmp_path)                       # opensim.log goes here
    k, model = run.kinematics, run.model
    muscles = [n for n, f in model.forces.items() if f.is_muscle and _wrap_class(model, n) == "torus"]
    assert len(muscles) == 5
    coords = ["EL_x", "PS_y"]
    h = 1e-4
    g, e = moment_arm_check(model, k.q[:1], coords, muscles=muscles, h=h)
    assert np.abs(g - e).max() > 0.02
    tree = compile_model(model)
    ps = compile_paths(model, tree, forces=muscles)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export_shoulder_elbow(model, tmp_path / "se.osim")
    om = osim.Model(str(tmp_path / "se.osim"))
    s = om.initSystem()
    cs = om.getCoordinateSet()
    for c, v in zip(k.coordinates, k.q[0]):
        cs.get(c).setValue(s, float(v), False)
    om.realizePosition(s)
    gap_opensim = 0.0
    for j, c in enumerate(coords):
        co, jc = cs.get(c), list(k.coordinates).index(c)
        v = co.getValue(s)
        ma = np.array([om.getMuscles().get(n).computeMomentArm(s, co) for n in muscles])
        assert np.abs(g[0, :, j] - ma).max() < 1e-9
        lengths = {}
        for step in (h, -h):
            co.setValue(s, v + step, False)
            om.realizePosition(s)
            q = k.q[:1].copy()
            q[0, jc] += step
            lengths[step] = np.array([om.getMuscles().get(n).getLength(s) for n in muscles])
            assert np.abs(path_lengths(ps, tree, q)[0] - lengths[step]).max() < 1e-9
        co.setValue(s, v, False)
        om.realizePosition(s)
        gap_opensim = max(gap_opensim, np.abs(ma + (lengths[h] - lengths[-h]) / (2 * h)).max())
    assert gap_opensim > 0.02


def test_scaling_checks_of_sarshari_2021(generic):
    model, spec = generic
    mm, _, male = scale_subject(model, spec, spec.generic)
    fm, _, female = scale_subject(model, spec, replace(spec.generic, gender="f"))
    assert male["r_m"] == pytest.approx(0.7767, abs=5e-5)
    assert female["r_m"] == pytest.approx(0.6736, abs=5e-5)
    assert male["arm_mass"] == pytest.approx(3.51, abs=0.01)
    assert female["arm_mass"] == pytest.approx(2.99, abs=0.01)
    # the female subject's humerus mass centre is Dumas et al. 2007's female one: (-7.3, -45.4,
    # -2.8) against (1.7, -45.2, -2.6) % of GH-EJC (0.2885 m) in the male
    dc = fm.bodies["humerus"].mass_center - mm.bodies["humerus"].mass_center
    assert np.linalg.norm(dc) == pytest.approx(np.linalg.norm([9.0, 0.2, 0.2]) / 100 * 0.2885, rel=1e-3)
    assert set(female["mass_centers"]) == {"humerus", "ulna", "radius"}
    # the generic subject keeps the generic ellipsoids (Eq. 14 reproduces their dilation)
    for c in model.constraints:
        d = male["dilation"][c.name]
        np.testing.assert_allclose(np.asarray(c.properties["base_radii"]) + d, c.properties["radii"], atol=1e-9)
    tall, _, rep = scale_subject(model, spec, replace(spec.generic, height=1.95))
    tree = compile_model(tall)
    assert np.abs(compile_constraints(tall, tree).residuals(tree.default_q)).max() < 1e-9


def test_parameter_study_directions(study):
    out, r = study
    res = {k: v[1] for k, v in r["results"].items()}
    F = {k: v.forces.reaction_magnitude for k, v in res.items()}
    s = {k: v.summary for k, v in res.items()}
    # rise from 20° to a peak between 100° and 130°, then fall
    assert 95.0 <= s["generic"]["peak_deg"] <= 130.0
    assert F["generic"][0] < 0.5 * s["generic"]["peak"] and F["generic"][-1] < 0.7 * s["generic"]["peak"]
    # female lower than male throughout
    assert (F["female"] < F["generic"]).all()
    # weight: the largest effect; 60 kg about a third lower at the peak, 100 kg about a sixth higher
    ch = {k: abs(s[k]["peak"] / s["generic"]["peak"] - 1) for k in s if k != "generic"}
    assert max(ch, key=ch.get) == "mass_60"
    assert -0.40 < s["mass_60"]["peak"] / s["generic"]["peak"] - 1 < -0.20
    assert 0.10 < s["mass_100"]["peak"] / s["generic"]["peak"] - 1 < 0.25
    # the same % of body weight at 90° for the three weights
    bw = [s[k]["percent_bw_90"] for k in ("generic", "mass_60", "mass_100")]
    assert np.ptp(bw) < 0.05 * np.mean(bw)
    # height: almost no effect
    for k in ("height_160", "height_195"):           # 1.60 m: +4 % near the peak on this model
        assert abs(s[k]["peak"] / s["generic"]["peak"] - 1) < 0.06
        assert np.abs(F[k][EL <= 90] / F["generic"][EL <= 90] - 1).max() < 0.05
    # rotator cuff -50 %: little change below 60°
    low = EL <= 60
    assert np.abs(F["rc_pcsa_50"][low] / F["generic"][low] - 1).max() < 0.10
    # the table and the figure
    csv = (out / "parameter_study.csv").read_text().splitlines()
    assert csv[0].startswith("variant,label,F20_N,F60_N,F90_N,F120_N,peak_N")
    assert len(csv) == 1 + len(PARAMETER_STUDY)
    assert "276" in csv[1] and "422" in csv[1] and "585" in csv[1]
    assert (out / "parameter_study.png").stat().st_size > 10000


@pytest.mark.xfail(strict=True, reason="open model: the optimum without the cone already points 29-32° "
                                       "inferior of the axis from 20° to 70° (31.4° half-angle), and meeting the cone "
                                       "LOWERS the reaction (by <= 0.4 %; <= 1.5 % with the humerus 20° externally "
                                       "rotated), because the muscles that centre it (infraspinatus, subscapularis, "
                                       "biceps long head) abduct (12-17, 4-8, 21 mm) and replace acromial deltoid "
                                       "force: relaxing the cone by -7° cannot lower the force (0.0 to +0.4 %, not "
                                       "the about -10 % of Sarshari et al. 2021); only a 10° x 10° cone makes it "
                                       "cost force (-7°: -4 to -5 %)")
def test_lower_inclination_lowers_the_early_force(study):
    _, r = study
    F = {k: v[1].forces.reaction_magnitude for k, v in r["results"].items()}
    low = EL <= 60
    assert (F["inclination_-7"][low] < 0.97 * F["generic"][low]).all()


@pytest.mark.xfail(strict=True, reason="open model: 48 % of body weight at 90°, not the about 70 % of Sarshari "
                                       "et al. 2021: arm 3.51 kg with Dumas et al. 2007's mass centres, 0.263 m "
                                       "from GH (9.0 N·m), elevators' moment arms about 2 cm give 45 N per N·m "
                                       "(OpenSim 4.6 agrees on the same model); the paper's 72-87 N per N·m needs "
                                       "more co-contraction or shorter levers")
def test_about_seventy_percent_body_weight_at_ninety(study):
    _, r = study
    assert 60.0 < r["results"]["generic"][1].summary["percent_bw_90"] < 80.0


@pytest.mark.xfail(strict=True, reason="open model: halving the rotator cuff lowers the reaction (-2 to -8 % "
                                       "below 60°, peak 401 against 411 N), not the rise to 682 N at 130° of "
                                       "Sarshari et al. 2021: after 72° the cone is inactive (reaction 9-28° from "
                                       "its axis) and the cuff's share goes to the acromial deltoid, as good an "
                                       "abductor (19-23 mm) as supraspinatus (21-24 mm) and better than "
                                       "infraspinatus (12-17 mm), so less total force carries the arm; no cone "
                                       "from 10° x 10° to 18.8° x 31.4° nor a humeral rotation of -20° to +40° "
                                       "makes it rise; with the elbow flexed 90° (not the default: the paper does "
                                       "not give the elbow's posture) it rises by up to 7.5 % after 100°")
def test_weaker_rotator_cuff_raises_the_late_peak(study):
    _, r = study
    s = {k: v[1].summary for k, v in r["results"].items()}
    assert s["rc_pcsa_50"]["peak"] > 1.05 * s["generic"]["peak"]


def test_cli_demo_and_bad_arguments(tmp_path, capsys, generic):
    out = tmp_path / "demo"
    assert main(["demo", "--step", "26", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "peak" in text and "Sarshari et al. 2021" in text and "outputs written to" in text
    names = {p.name for p in out.iterdir()}
    assert {"generic.osim", "generic_abduction.mot", "generic_abduction_markers.trc",
            "generic_abduction_InverseDynamics.sto", "generic_abduction_StaticOptimization_force.sto",
            "generic_abduction_JointReaction_ReactionLoads.sto", "generic_gh_reaction.png",
            "generic_model.png"} <= names
    from arthron.io.sto import read_sto
    t = read_sto(out / "generic_abduction_JointReaction_ReactionLoads.sto")
    gh = generic[1].glenohumeral_joint
    assert t.labels[:3] == [f"{gh}_on_humerus_in_scapula_f{c}" for c in "xyz"]
    assert t.labels[3:5] == [f"{gh}_magnitude", f"{gh}_cone_angle"]
    for argv, word in ((["study", "--height", "0"], "height"), (["study", "--gender", "x"], "gender"),
                       (["study", "--inclination", "90"], "inclination"), (["demo", "--mass", "-3"], "mass")):
        assert main(argv + ["-o", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("arthron: error:") and word in err[0]
        assert not (tmp_path / "bad").exists()


def test_cli_humeral_rotation(tmp_path, capsys):
    """``--humeral-rotation`` turns the humerus about its long axis during the abduction (the
    study's kinematics; the force changes by a few per cent)."""
    from arthron.io.sto import read_sto
    F = {}
    for rho in ("0", "20"):
        out = tmp_path / rho
        assert main(["study", "--humeral-rotation", rho, "--step", "26", "-o", str(out)]) == 0
        assert "Sarshari et al. 2021" in capsys.readouterr().out
        t = read_sto(out / "generic_abduction_JointReaction_ReactionLoads.sto")
        F[rho] = t.data[:, t.labels.index("gh3_magnitude")]
        assert not (out / "generic_model.png").exists()
    assert 0.005 < np.abs(F["20"] / F["0"] - 1).max() < 0.1


def test_cli_elbow_flexion(tmp_path, capsys):
    """``--elbow-flexion`` holds the built-in model's EL_x during the abduction (the paper does
    not give the elbow's posture; the forearm then points forwards and loads the arm less)."""
    from arthron.io.sto import read_sto
    out = tmp_path / "ef"
    assert main(["study", "--elbow-flexion", "90", "--step", "26", "-o", str(out)]) == 0
    capsys.readouterr()
    mot = read_sto(out / "generic_abduction.mot")
    el = mot.data[:, mot.labels.index("EL_x")]
    np.testing.assert_allclose(el, 90.0 if mot.in_degrees else np.pi / 2, rtol=1e-9)
    t = read_sto(out / "generic_abduction_JointReaction_ReactionLoads.sto")
    f90 = t.data[:, t.labels.index("gh3_magnitude")]
    assert np.all(np.isfinite(f90)) and f90.max() < 360.0       # extended: 411 N peak


def test_study_without_matplotlib_writes_the_rest(tmp_path, generic, monkeypatch):
    # `pip install -e .` (no extra `plot`): the figures are skipped with a note, nothing fails
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    model, spec = generic
    r = run_study(tmp_path, model=model, spec=spec, elevation_deg=np.array([20.0, 60.0, 100.0, 150.0]),
                  picture=True)
    assert r["notes"] and "matplotlib" in r["notes"][0]
    names = {p.name for p in tmp_path.iterdir()}
    assert "generic_abduction_JointReaction_ReactionLoads.sto" in names
    assert not any(n.endswith(".png") for n in names)
