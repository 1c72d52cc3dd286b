"""The built-in shoulder–elbow model (Sarshari et al. 2021 structure, DAS4 numbers): shipped
tables equal what scripts/derive_shoulder_elbow.py derives from DAS4; the built model's
kinematics (constant SC–AC and GH–AC distances, elbow frames of Eqs. 1–4 rebuilt from the
landmarks, ribcage constraints at rest, Eq. 14 dilations), its inverse dynamics against OpenSim
4.6 on the exported file, the export (masses, landmark positions, ribcage ellipsoids, constraint
round trip), the arm masses of the paper with scale_anthropometric, the upper limb's mass
centres of Dumas et al. 2007 rebuilt from the landmarks (generic and scaled), bad arguments."""
from __future__ import annotations

import csv
import importlib.util
import io
import json
import math
import warnings

import numpy as np
import pytest

import oracle
from conftest import DATA, ROOT, needs_data, needs_opensim
from arthron.errors import ArthronWarning, OptionError
from arthron.io.osim import read_osim, write_osim
from arthron.models.shoulder_elbow import (COORDINATES, DATA_DIR, MESH_DIR, RIBCAGE_CONSTRAINTS,
                                           build_shoulder_elbow_model, load_tables,
                                           shoulder_elbow_info)
from arthron.multibody.constrained_dynamics import motion_constraint_multipliers
from arthron.multibody.constraints import assemble, compile_constraints
from arthron.multibody.forward_dynamics import forward_accelerations
from arthron.multibody.inverse_dynamics import inverse_dynamics
from arthron.multibody.kinematics import compile_model, forward_kinematics, marker_positions
from arthron.solvers.scaling import ellipsoid_dilation, scale_anthropometric

DAS4 = DATA / "arm-model" / "das4_v4.osim"


@pytest.fixture(scope="module")
def se():
    m = build_shoulder_elbow_model()
    tree = compile_model(m)
    return m, tree, compile_constraints(m, tree)


def _poses(tree, n=12, seed=0, spread=0.5):
    rng = np.random.default_rng(seed)
    return tree.default_q + rng.uniform(-spread, spread, (n, tree.nq))


def _markers(tree, q):
    names, P = marker_positions(tree, q)
    return {k: P[:, i] for i, k in enumerate(names)}


# ----------------------------------------------------------------------------- tables
def _load_script():
    spec = importlib.util.spec_from_file_location("derive_shoulder_elbow",
                                                  ROOT / "scripts" / "derive_shoulder_elbow.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _close(a, b, path="model.json"):
    """Equal JSON values, numbers to 1e-9 (BLAS builds may differ in the last bits)."""
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert abs(float(a) - float(b)) <= 1e-9, f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _csv_rows(data: bytes):
    return list(csv.DictReader(io.StringIO(data.decode())))


@needs_data
def test_shipped_tables_equal_what_the_script_derives_from_das4():
    derived = _load_script().derive(DAS4)
    shipped = {p.relative_to(DATA_DIR).as_posix(): p.read_bytes()
               for p in DATA_DIR.rglob("*") if p.is_file()}
    assert set(derived) == set(shipped)
    _close(json.loads(derived["model.json"]), json.loads(shipped["model.json"]))
    for name in ("strings.csv", "path_points.csv"):
        a, b = _csv_rows(derived[name]), _csv_rows(shipped[name])
        assert len(a) == len(b) and [r.keys() for r in a] == [r.keys() for r in b]
        for ra, rb in zip(a, b):
            for k in ra:
                try:
                    assert abs(float(ra[k]) - float(rb[k])) <= 1e-9, (name, ra, rb)
                except ValueError:
                    assert ra[k] == rb[k], (name, k)
    for name in ("LICENSE-DAS4.txt", "SOURCES.md"):
        assert derived[name] == shipped[name]
    for name in (n for n in derived if n.startswith("meshes/")):   # decimation: VTK-version tolerant
        va = np.array([ln.split()[1:] for ln in derived[name].decode().splitlines() if ln.startswith("v ")], float)
        vb = np.array([ln.split()[1:] for ln in shipped[name].decode().splitlines() if ln.startswith("v ")], float)
        assert abs(len(va) - len(vb)) <= 0.05 * len(vb)
        np.testing.assert_allclose(va.min(0), vb.min(0), atol=2e-3)
        np.testing.assert_allclose(va.max(0), vb.max(0), atol=2e-3)


def test_package_data_is_small_and_says_where_it_comes_from():
    files = [p for p in DATA_DIR.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 500_000
    lic = (DATA_DIR / "LICENSE-DAS4.txt").read_text()
    assert "MIT License" in lic and "Aberdeen" in lic
    src = (DATA_DIR / "SOURCES.md").read_text()
    assert "Chadwick" in src and "1947" in src and "Sarshari" in src
    T = load_tables()["model"]
    for sec in ("bodies", "landmarks"):
        for k, v in T[sec].items():
            assert v["source"], (sec, k)
    for j in T["joints"]:
        assert j["source"]
    for g in T["groups"]:
        assert g["pcsa_source"]
    assert {p.name for p in MESH_DIR.iterdir()} >= {"scapula.obj", "humerus.obj", "thorax_ribs.obj"}


# ----------------------------------------------------------------------------- structure
def test_built_model_has_the_papers_structure(se):
    m, tree, cs = se
    assert tuple(m.coordinates) == COORDINATES
    assert [b for b in m.bodies if m.bodies[b].mass > 0] == ["thorax", "clavicle", "scapula",
                                                             "humerus", "ulna", "radius"]
    assert m.joints["ground_thorax"].type == "WeldJoint"
    assert [c.name for c in m.constraints] == list(RIBCAGE_CONSTRAINTS)
    assert cs.size == 2
    info = shoulder_elbow_info()
    assert len(info.muscle_groups) == 42 and len(m.muscles) == sum(map(len, info.muscle_groups.values()))
    assert len(shoulder_elbow_info(subclavius=False).muscle_groups) == 41
    assert "subclavius" not in build_shoulder_elbow_model(subclavius=False).forces
    assert {"IJ", "C7", "T8", "PX", "SC", "AC", "AA", "TS", "AI", "GH", "EL", "EM", "US",
            "RS"} <= set(m.markers)
    # PCSA: rotator cuff from the paper; f_max = σ PCSA per group
    assert info.pcsa_cm2["supraspinatus"] == 20.84 and info.pcsa_cm2["teres_minor"] == 6.80
    for g, strings in info.muscle_groups.items():
        fmax = sum(m.forces[s].max_isometric_force for s in strings)
        assert fmax == pytest.approx(33.0 * info.pcsa_cm2[g], rel=1e-9)
    # hand added to the radius: DAS4 radius 0.5464 kg + hand 0.5821 kg
    assert m.bodies["radius"].mass == pytest.approx(0.5464 + 0.58210, abs=1e-4)
    assert np.all(np.linalg.eigvalsh(m.bodies["radius"].inertia) > 0)
    assert info.generic_height == 1.86 and info.generic_mass == 85.5
    assert info.generic_glenoid_inclination_deg == 7.0 and info.glenohumeral_joint == "gh3"
    assert m.joints["gh3"].child_frame.startswith("/jointset/gh3/humerus")


def test_ribcage_constraints_hold_at_rest_and_dilations_solve_eq14(se):
    m, tree, cs = se
    q = tree.default_q[None]
    assert np.abs(cs.residuals(q)).max() < 1e-12
    info = shoulder_elbow_info()
    M = _markers(tree, q)
    c = np.array(info.ribcage_center)
    for pt, name in (("TS", "TS_on_ribcage"), ("AI", "AI_on_ribcage")):
        delta = ellipsoid_dilation(info.ribcage_base_radii, M[pt][0] - c)
        assert delta == pytest.approx(info.ribcage_dilation[pt], abs=1e-12)
        con = next(k for k in m.constraints if k.name == name)
        np.testing.assert_allclose(con.properties["radii"], np.array(info.ribcage_base_radii) + delta,
                                   atol=1e-12)
    # assembly from random poses holds both to 1e-12
    Q = assemble(m, tree, _poses(tree, 6, seed=4, spread=0.3), constraints=cs)
    assert np.abs(cs.residuals(Q)).max() < 1e-12


def test_sc_ac_and_gh_ac_distances_are_constant_over_random_poses(se):
    m, tree, _ = se
    M = _markers(tree, _poses(tree, 40, seed=1, spread=0.8))
    d_sc_ac = np.linalg.norm(M["SC"] - M["AC"], axis=1)
    d_gh_ac = np.linalg.norm(M["GH"] - M["AC"], axis=1)
    assert np.ptp(d_sc_ac) < 1e-12 and np.ptp(d_gh_ac) < 1e-12
    assert d_sc_ac[0] == pytest.approx(0.1568, abs=5e-4)
    assert d_gh_ac[0] == pytest.approx(0.0466, abs=5e-4)


def test_elbow_frames_follow_eqs_1_to_4_rebuilt_from_the_landmarks(se):
    """Ulna frame (Eq. 1) from EL, EM, HU, US and radius frame (Eq. 2, CP for EL) from CP, US,
    RS, rebuilt in ground at random poses, equal ᵗR_h ʰR_u,f R_x(EL_x) and ᵗR_u ᵘR_r,f R_z(PS_y)
    (Eq. 3) with the fixed alignments of the reference pose."""
    m, tree, _ = se
    q0 = tree.default_q.copy()
    q0[tree.coordinate_index("EL_x")] = q0[tree.coordinate_index("PS_y")] = 0.0
    Q = np.vstack([q0, _poses(tree, 10, seed=2, spread=0.9)])
    kin = forward_kinematics(tree, Q)
    M = _markers(tree, Q)

    def unit(v):
        return v / np.linalg.norm(v, axis=-1, keepdims=True)

    xu = unit(M["EL"] - M["HU"])
    yu = unit(np.cross(M["US"] - M["EL"], M["EM"] - M["EL"]))
    Ru = np.stack([xu, yu, np.cross(xu, yu)], -1)
    zr = unit(M["CP"] - M["US"])
    yr = unit(np.cross(M["CP"] - M["RS"], M["RS"] - M["US"]))
    Rr = np.stack([np.cross(yr, zr), yr, zr], -1)
    Rh = kin.R[:, tree.body_node[tree.body_index("humerus")]]
    Rf_u = Rh[0].T @ Ru[0]
    Rf_r = Ru[0].T @ Rr[0]
    for k in range(len(Q)):
        a = Q[k, tree.coordinate_index("EL_x")]
        b = Q[k, tree.coordinate_index("PS_y")]
        Rx = np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])
        Rz = np.array([[math.cos(b), -math.sin(b), 0], [math.sin(b), math.cos(b), 0], [0, 0, 1]])
        np.testing.assert_allclose(Ru[k], Rh[k] @ Rf_u @ Rx, atol=1e-12)
        np.testing.assert_allclose(Rr[k], Ru[k] @ Rf_r @ Rz, atol=1e-12)
        # origins: HU and CP fixed on their hinge axes
    # the pronation axis CP→US is DAS4's (fixed in the ulna)
    ulna = tree.body_node[tree.body_index("ulna")]
    axis_u = np.einsum("tji,tj->ti", kin.R[:, ulna], zr)
    np.testing.assert_allclose(axis_u, np.broadcast_to(axis_u[0], axis_u.shape), atol=1e-12)


# ----------------------------------------------------------------------------- dynamics
def test_constraint_multipliers_of_the_built_model_are_recovered_from_its_motion(se):
    """Forward dynamics with the ribcage constraints and random joint torques; the
    multipliers from that motion's accelerations leave no residual and equal the solver's."""
    m, tree, cs = se
    q = assemble(m, tree, _poses(tree, 4, seed=3, spread=0.2), constraints=cs)
    rng = np.random.default_rng(5)
    G = cs.jacobian(q)
    qd = rng.normal(scale=0.5, size=q.shape)
    qd -= np.einsum("tmk,tm->tk", G, np.linalg.solve(G @ np.swapaxes(G, 1, 2),
                                                     np.einsum("tmk,tk->tm", G, qd)[..., None])[..., 0])
    tau = rng.normal(scale=2.0, size=q.shape)
    qdd, mu = forward_accelerations(tree, q, qd, generalized=tau, constraints=cs,
                                    return_multipliers=True)
    mu2, r = motion_constraint_multipliers(tree, q, qd, qdd, cs, generalized=tau)
    np.testing.assert_allclose(mu2, mu, rtol=1e-8, atol=1e-8)
    assert np.abs(r).max() < 1e-8


@needs_opensim
def test_inverse_dynamics_equals_opensim_on_the_exported_model(se, tmp_path):
    """arthron's generalized forces (gravity, inertia; no constraints in OpenSim's ID) equal
    OpenSim 4.6's InverseDynamicsSolver on the exported .osim at random states."""
    import opensim as osim
    m, tree, _ = se
    path = tmp_path / "se.osim"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ArthronWarning)
        write_osim(path, m)
    with oracle._cwd(tmp_path):
        om, s = oracle.load(path)
    cset = om.getCoordinateSet()
    idx = [0] * tree.nq                      # u index -> arthron coordinate index
    for n in tree.coordinate_names:
        s.setU(osim.Vector(tree.nq, 0.0))
        cset.get(n).setSpeedValue(s, 1.0)
        idx[int(np.argmax(oracle.vec(s.getU(), tree.nq)))] = tree.coordinate_index(n)
    order = [tree.coordinate_names[i] for i in idx]
    rng = np.random.default_rng(6)
    Q = _poses(tree, 4, seed=7, spread=0.6)
    QD = rng.normal(size=Q.shape)
    QDD = rng.normal(scale=3.0, size=Q.shape)
    ours = inverse_dynamics(tree, Q, QD, QDD)
    fs = om.getForceSet()
    for i in range(fs.getSize()):            # muscles excluded, as in OpenSim's ID tool setups
        fs.get(i).setAppliesForce(s, False)
    ids = osim.InverseDynamicsSolver(om)
    for k in range(len(Q)):
        s.setQ(osim.Vector(Q[k, idx].tolist()))
        s.setU(osim.Vector(QD[k, idx].tolist()))
        om.realizeVelocity(s)
        ref = oracle.vec(ids.solve(s, osim.Vector(QDD[k, idx].tolist())), len(order))
        np.testing.assert_allclose(ours[k, idx], ref, atol=1e-9)     # measured: 1e-14 N·m


# ----------------------------------------------------------------------------- export
def _export_compare(model, tmp_path, name):
    import opensim as osim  # noqa: F401
    path = tmp_path / f"{name}.osim"
    with pytest.warns(ArthronWarning, match="point-on-ellipsoid"):
        write_osim(path, model)
    with oracle._cwd(tmp_path):
        om, s = oracle.load(path)
    tree = compile_model(model)
    bt = oracle.body_table(om)
    for b in model.bodies.values():
        assert bt[b.name][0] == pytest.approx(b.mass, abs=1e-12)
    names = [n for n in model.markers]
    Q = _poses(tree, 3, seed=8)
    _, P = marker_positions(tree, Q, names)
    for k in range(len(Q)):
        oracle.set_coordinates(om, s, dict(zip(tree.coordinate_names, Q[k])))
        ref = oracle.marker_positions(om, s)
        err = max(np.abs(ref[n] - P[k, i]).max() for i, n in enumerate(names))
        assert err < 1e-9
    # the ribcage ellipsoids are present on the thorax as (inactive) wrap ellipsoids
    ws = om.getBodySet().get("thorax").getWrapObjectSet()
    got = {ws.get(i).getName() for i in range(ws.getSize())}
    assert {"ribcage_TS", "ribcage_AI"} <= got
    # arthron reads the constraints back
    back = read_osim(path)
    assert [c.name for c in back.constraints] == list(RIBCAGE_CONSTRAINTS)
    for c0, c1 in zip(model.constraints, back.constraints):
        assert c1.type == "PointOnEllipsoidConstraint"
        for k, v in c0.properties.items():
            if isinstance(v, str):
                assert c1.properties[k] == v
            else:
                np.testing.assert_allclose(c1.properties[k], v, atol=1e-15)
    tb = compile_model(back)
    cb, c0 = compile_constraints(back, tb), compile_constraints(model, tree)
    np.testing.assert_allclose(cb.residuals(Q), c0.residuals(Q), atol=1e-14)
    return om


@needs_opensim
def test_export_of_the_generic_and_a_scaled_model_loads_in_opensim_with_equal_masses_and_landmarks(se, tmp_path):
    m, _, _ = se
    _export_compare(m, tmp_path, "generic")
    info = shoulder_elbow_info()
    scaled, rep = scale_anthropometric(
        m, 62.0, 1.62, "female", generic_mass=info.generic_mass, generic_height=info.generic_height,
        generic_gender="male", shoulder_width=0.31, generic_shoulder_width=info.generic_shoulder_width,
        segment_map=info.segment_map)
    assert rep["ribcage"]["TS_on_ribcage"]["delta"] != pytest.approx(info.ribcage_dilation["TS"])
    _export_compare(scaled, tmp_path, "scaled")


# ----------------------------------------------------------------------------- scaling
def test_arm_masses_of_the_paper_with_scale_anthropometric(se):
    """3.51 kg (male) and 2.99 kg (female) at 85.5 kg; r_m 0.7767 and 0.6736 (Eq. 17)."""
    m, _, _ = se
    info = shoulder_elbow_info()
    kw = dict(generic_mass=info.generic_mass, generic_height=info.generic_height,
              generic_gender=info.generic_gender, segment_map=info.segment_map)
    arm = {}
    for g in ("male", "female"):
        s, rep = scale_anthropometric(m, 85.5, 1.86, g, **kw)
        arm[g] = sum(s.bodies[b].mass for b in ("humerus", "ulna", "radius"))
        assert rep["r_m"] == pytest.approx({"male": 0.7767, "female": 0.6736}[g], abs=5e-5)
        # the generic ellipsoids are kept for the generic geometry (Eq. 14 gives δ back)
        assert rep["ribcage"]["TS_on_ribcage"]["delta"] == pytest.approx(info.ribcage_dilation["TS"], abs=1e-12)
    assert arm["male"] == pytest.approx(3.51, abs=0.005)
    assert arm["female"] == pytest.approx(2.99, abs=0.005)
    s100, _ = scale_anthropometric(m, 100.0, 1.86, "male", **kw)
    arm100 = sum(s100.bodies[b].mass for b in ("humerus", "ulna", "radius"))
    assert (arm100 / arm["male"] - 1) / 14.5 == pytest.approx(0.0117, abs=2e-4)


def test_scaled_model_dilates_the_ellipsoids_through_the_scaled_landmarks(se):
    m, tree, _ = se
    info = shoulder_elbow_info()
    s, rep = scale_anthropometric(m, 100.0, 1.95, "male", generic_mass=85.5, generic_height=1.86,
                                  shoulder_width=0.38, generic_shoulder_width=info.generic_shoulder_width,
                                  segment_map=info.segment_map)
    S = rep["S"]
    for name in RIBCAGE_CONSTRAINTS:
        c = next(k for k in s.constraints if k.name == name)
        p = c.properties
        x = (np.asarray(p["reference_point"]) - np.asarray(p["center"])) / np.asarray(p["radii"])
        assert np.sum(x ** 2) == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(p["center"], S * np.array(info.ribcage_center), atol=1e-15)
        np.testing.assert_allclose(np.asarray(p["radii"]) - p["base_radii"], rep["ribcage"][name]["delta"], atol=1e-15)
    ts = compile_model(s)
    q = assemble(s, ts, ts.default_q[None])
    assert np.abs(compile_constraints(s, ts).residuals(q)).max() < 1e-12


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("kw", [{"subclavius": "yes"}, {"muscles": 1}, {"meshes": None}, {"name": ""}])
def test_bad_builder_arguments_are_clear_errors(kw):
    with pytest.raises(OptionError, match=next(iter(kw)) if kw != {"name": ""} else "name"):
        build_shoulder_elbow_model(**kw)
    with pytest.raises(OptionError):
        shoulder_elbow_info(subclavius="no")


def test_inverse_dynamics_equals_lagranges_equations_by_finite_differences_of_the_energy(se):
    """An independent formulation (Sarshari et al. 2021 Eqs. 8–11 without muscles and
    constraints): the mass matrix from the kinetic energy, M = Σ m J_cᵀJ_c + J_ωᵀ I J_ω with
    J_c, J_ω by central differences of the body poses; τ = M q̈ + Ṁq̇ − ½ ∂(q̇ᵀMq̇)/∂q + ∂V/∂q,
    the q-derivatives by central differences of M and V."""
    m, tree, _ = se
    bodies = [b for b in m.bodies.values() if b.mass > 0 and b.name != "thorax"]
    nodes = [tree.body_node[tree.body_index(b.name)] for b in bodies]
    g = np.asarray(m.gravity, float)

    def poses(q):
        kin = forward_kinematics(tree, np.atleast_2d(q))
        R = kin.R[:, nodes]
        c = kin.o[:, nodes] + np.einsum("tbij,bj->tbi", R, np.array([b.mass_center for b in bodies]))
        return R, c

    def mass_matrix(q, h=1e-6):
        n = len(q)
        Qs = np.vstack([q + h * e for e in np.eye(n)] + [q - h * e for e in np.eye(n)])
        R, c = poses(Qs)
        Rp, Rm, cp, cm = R[:n], R[n:], c[:n], c[n:]
        R0, _ = poses(q)
        Jc = (cp - cm) / (2 * h)                                # (n, B, 3)
        dR = (Rp - Rm) / (2 * h)                                # (n, B, 3, 3)
        W = np.einsum("nbij,bkj->nbik", dR, R0[0])              # dR Rᵀ = [ω]×
        Jw = np.stack([W[..., 2, 1], W[..., 0, 2], W[..., 1, 0]], -1)   # (n, B, 3)
        M = np.zeros((n, n))
        for k, b in enumerate(bodies):
            Iw = R0[0, k] @ np.asarray(b.inertia, float) @ R0[0, k].T
            M += b.mass * Jc[:, k] @ Jc[:, k].T + Jw[:, k] @ Iw @ Jw[:, k].T
        return M

    def potential(q):
        _, c = poses(q)
        return -sum(b.mass * c[:, k] @ g for k, b in enumerate(bodies))

    rng = np.random.default_rng(11)
    for q in _poses(tree, 2, seed=12, spread=0.4):
        qd = rng.normal(size=tree.nq)
        qdd = rng.normal(scale=2.0, size=tree.nq)
        M = mass_matrix(q)
        e = 1e-4
        Mdot_qd = (mass_matrix(q + e * qd) @ qd - mass_matrix(q - e * qd) @ qd) / (2 * e)
        dT = np.array([(qd @ mass_matrix(q + e * ek) @ qd - qd @ mass_matrix(q - e * ek) @ qd) / (2 * e)
                       for ek in np.eye(tree.nq)])
        dV = np.array([(potential(q + 1e-6 * ek) - potential(q - 1e-6 * ek))[0] / 2e-6
                       for ek in np.eye(tree.nq)])
        tau_lagrange = M @ qdd + Mdot_qd - 0.5 * dT + dV
        tau = inverse_dynamics(tree, q[None], qd[None], qdd[None])[0]
        # measured: 2e-6 N·m of |τ| ≈ 8 N·m (the finite differences' error)
        np.testing.assert_allclose(tau, tau_lagrange, atol=1e-6 * max(1.0, np.abs(tau).max()))


def test_load_sharing_sees_the_ribcage_multipliers_and_the_cone_checks_their_bodies(se):
    """Static load sharing on a short elevation holds the equations of motion with the two
    ribcage multipliers; the reaction maps of the AC joint (scapula in its subtree, where TS and
    AI are held) and of gh3 equal the E-matrix reactions with every solved load applied."""
    from arthron.multibody.constrained_dynamics import constraint_loads
    from arthron.multibody.constraints import compile_constraints
    from arthron.solvers.actuators import actuator_forces
    from arthron.solvers.load_sharing import build_problem, solve_problem, stress_weights
    from arthron.solvers.reactions import joint_loads
    from arthron.solvers.load_sharing_cone import reaction_map
    from arthron.tables import Table
    m, tree, _ = se
    info = shoulder_elbow_info()
    names = list(m.coordinates)
    T = 8
    Q = np.repeat(tree.default_q[None], T, 0)
    Q[:, names.index("GH_z")] -= np.linspace(0.2, 0.6, T)
    motion = Table(name="elevation", time=np.linspace(0.0, 0.7, T), labels=names, data=Q,
                   in_degrees=False)
    prob = build_problem(m, motion, use_muscle_physiology=False)
    res = solve_problem(prob, weights=stress_weights(prob, pcsa=info.string_pcsa_cm2))
    assert res.multipliers.shape == (T, 2) and np.all(res.feasible)
    assert np.abs(res.residual).max() < 1e-6
    # the AC joint has the scapula, where TS and AI are held, in its child subtree: the
    # eliminated ribcage multipliers fold into the reaction map, which must equal the E-matrix
    # reaction with the paths' loads and the ribcage constraint forces of the solution applied
    forces = Table(name="f", time=prob.time, labels=list(prob.names), data=res.forces, in_degrees=False)
    _, loads = actuator_forces(m, tree, forces, prob.time, q=prob.q)
    cl, _ = constraint_loads(tree, prob.q, compile_constraints(m, tree), res.multipliers)
    for joint in ("ac", info.glenohumeral_joint):
        C, d = reaction_map(m, prob, joint, tree)
        F = np.einsum("tin,tn->ti", C, res.activations) + d
        f, _ = joint_loads(m, tree, prob.q, prob.qd, prob.qdd, loads + cl, joints=[joint]).on_child_in_ground(0)
        assert np.abs(F - f).max() < 1e-9 * np.abs(f).max()


def test_export_folder_has_the_meshes_opensim_finds(se, tmp_path):
    from arthron.tools.shoulder_elbow_tool import export_shoulder_elbow
    m, _, _ = se
    with pytest.warns(ArthronWarning, match="point-on-ellipsoid"):
        written = export_shoulder_elbow(m, tmp_path / "out" / "model.osim")
    assert written[0] == tmp_path / "out" / "model.osim"
    names = {p.name for p in written[1:]}
    assert names == {g.mesh_file for b in m.bodies.values() for g in b.geometry}
    for p in written[1:]:
        assert p.parent.name == "Geometry" and p.read_bytes() == (MESH_DIR / p.name).read_bytes()


# ----------------------------------------------------------------------------- mass centres
#: Dumas, Chèze & Verriest 2007 (as HuMoD, Wojtusch & von Stryk 2015, implements them): mass %
#: and mass centre in % of segment length, right side, ISB axes (X anterior, Y proximal, Z right)
DUMAS = {"male": {"arm": (2.4, (1.7, -45.2, -2.6)), "forearm": (1.7, (1.0, -41.7, 1.4)),
                  "hand": (0.6, (3.5, -35.7, 3.2))},
         "female": {"arm": (2.2, (-7.3, -45.4, -2.8)), "forearm": (1.3, (2.1, -41.1, 1.9)),
                    "hand": (0.5, (3.3, -32.7, 2.1))}}


def _check_dumas_mass_centres(m, gender, height):
    """Rebuild the ISB frames from the landmarks (X ⟂ the landmarks' plane, its sign from the
    thorax's forward direction IJ − C7; Z = X × Y must then point right, towards AC) and check
    the humerus's and the forearm bodies' combined mass centres against Dumas's percentages."""
    tree = compile_model(m)
    q = tree.default_q[None]
    kin = forward_kinematics(tree, q)
    P = {k: v[0] for k, v in _markers(tree, q).items()}
    fwd, right = P["IJ"] - P["C7"], P["AC"] - P["IJ"]

    def frame(o, top, bottom, a, b):
        y = (top - bottom) / np.linalg.norm(top - bottom)
        x = np.cross(a - o, b - o)
        x = x / np.linalg.norm(x) * np.sign(x @ fwd)
        z = np.cross(x, y)
        assert z @ right > 0 and abs(x @ y) < 1e-12
        return np.column_stack([x, y, z])
    ejc, wjc = 0.5 * (P["EL"] + P["EM"]), 0.5 * (P["US"] + P["RS"])
    Ra = frame(P["GH"], P["GH"], ejc, P["EL"], P["EM"])
    Rf = frame(ejc, ejc, wjc, P["US"], P["RS"])

    def com(bodies):
        c = sum(m.bodies[b].mass * (kin.R[0, tree.body_node[tree.body_index(b)]] @ m.bodies[b].mass_center
                                    + kin.o[0, tree.body_node[tree.body_index(b)]]) for b in bodies)
        return c / sum(m.bodies[b].mass for b in bodies)
    d = DUMAS[gender]
    La, Lf, Lh = np.linalg.norm(P["GH"] - ejc), np.linalg.norm(ejc - wjc), 0.108 * height
    np.testing.assert_allclose(Ra.T @ (com(["humerus"]) - P["GH"]) / La * 100, d["arm"][1], atol=1e-7)
    cf = ejc + Rf @ np.array(d["forearm"][1]) / 100 * Lf
    ch = wjc + Rf @ np.array(d["hand"][1]) / 100 * Lh
    want = (d["forearm"][0] * cf + d["hand"][0] * ch) / (d["forearm"][0] + d["hand"][0])
    np.testing.assert_allclose(com(["ulna", "radius"]), want, atol=1e-9)
    return La


def test_mass_centres_are_dumas_2007_from_the_landmarks(se):
    """Generic (male 1.86 m): the humerus's mass centre 45.2 % of GH–EJC from GH (DAS4: 27 %),
    the ulna + radius (with the hand) at the forearm and hand's; the female subject, and an
    anisotropically scaled one, get the female values from their own scaled landmarks; the
    bodies keep their masses (3.51 / 2.99 kg checks elsewhere) and DAS4's shares."""
    m, _, _ = se
    info = shoulder_elbow_info()
    T = load_tables()["model"]
    assert np.linalg.norm(T["bodies"]["humerus"]["das4_mass_center"]) == pytest.approx(0.0778, abs=1e-3)
    assert "Dumas" in T["bodies"]["humerus"]["mass_center_source"]
    La = _check_dumas_mass_centres(m, "male", 1.86)
    assert La == pytest.approx(0.2885, abs=1e-4)
    assert np.linalg.norm(m.bodies["humerus"].mass_center) == pytest.approx(0.452 * La, rel=0.01)
    kw = dict(generic_mass=info.generic_mass, generic_height=info.generic_height,
              generic_gender=info.generic_gender, segment_map=info.segment_map,
              mass_centers=info.mass_center_map)
    same, rep = scale_anthropometric(m, 85.5, 1.86, "male", **kw)
    for b in info.mass_center_map:       # one code path: the generic subject gets the shipped values
        np.testing.assert_allclose(same.bodies[b].mass_center, m.bodies[b].mass_center, atol=1e-9)
    fem, rep = scale_anthropometric(m, 62.0, 1.62, "female", shoulder_width=0.31,
                                    generic_shoulder_width=info.generic_shoulder_width, **kw)
    assert set(rep["mass_centers"]) == {"humerus", "ulna", "radius"}
    _check_dumas_mass_centres(fem, "female", 1.62)
    ratio = fem.bodies["ulna"].mass / fem.bodies["radius"].mass
    assert ratio == pytest.approx(m.bodies["ulna"].mass / m.bodies["radius"].mass, rel=1e-12)


def test_dumas_mass_centres_bad_input_is_a_clear_error(se):
    from arthron.errors import DataFileError, ModelFileError
    from arthron.solvers.dumas2007 import dumas_mass_centers
    m, _, _ = se
    with pytest.raises(ModelFileError, match="RS"):
        dumas_mass_centers(m, "male", {"humerus": ("arm",)}, hand_length=0.2, landmarks={"RS": "nowhere"})
    with pytest.raises(DataFileError, match="leg"):
        dumas_mass_centers(m, "male", {"humerus": ("leg",)}, hand_length=0.2)
    with pytest.raises(ModelFileError, match="femur"):
        dumas_mass_centers(m, "male", {"femur": ("arm",)}, hand_length=0.2)
    with pytest.raises(DataFileError, match="gender"):
        dumas_mass_centers(m, "x", {"humerus": ("arm",)}, hand_length=0.2)
    with pytest.raises(DataFileError, match="hand length"):
        dumas_mass_centers(m, "f", {"humerus": ("arm",)}, hand_length=0.0)
