"""Inverse dynamics against OpenSim 4.6's InverseDynamicsTool outputs."""
from __future__ import annotations

import numpy as np
import pytest

import oracle
from conftest import (ARM26, ARM26_TUT, GAIT_PIPE, GAIT_REF_MODEL, REF, TSM, TSM_ID, needs_data,
                      needs_opensim, thoracoscapular_motion)
from arthron.errors import DataFileError
from arthron.io.osim import read_osim
from arthron.io.setup import read_external_loads
from arthron.io.sto import Table, read_sto, write_sto
from arthron.multibody.kinematics import compile_model, velocity_map, forward_kinematics
from arthron.solvers.inverse_dynamics import inverse_dynamics, run_inverse_dynamics

ARM_IK = ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"


def _compare(res, ref_path, atol):
    ref = read_sto(ref_path)
    assert len(res.time) == len(ref.time)
    np.testing.assert_allclose(res.time, ref.time, atol=1e-7)  # reference prints 8 decimals
    worst = {}
    for lab in ref.labels:
        worst[lab] = float(np.abs(res.column(lab) - ref.column(lab)).max())
    assert max(worst.values()) <= atol, worst
    return worst


@needs_data
@pytest.mark.parametrize("lowpass,ref", [(6.0, "ID_filtered"), (None, "ID_unfiltered")])
def test_arm26_elbow_flexion_equals_opensim(lowpass, ref):
    res = run_inverse_dynamics(read_osim(ARM26), read_sto(ARM_IK), lowpass_hz=lowpass, time_range=(0, 1))
    # the references print 8 decimals; arthron measures ~5e-9 N·m
    _compare(res, REF / "task1_arm26" / ref / "arm26_InverseDynamics.sto", atol=1e-6)
    # and the stored OpenSim tutorial output (same numbers, older OpenSim)
    sub = "FilteredResults" if lowpass else "UnfilteredResults"
    _compare(res, ARM26_TUT / "OutputReference" / "InverseDynamics" / sub / "arm26_InverseDynamics.sto", atol=1e-3)


@needs_data
def test_gait2354_walk_with_grf_equals_opensim():
    model = read_osim(GAIT_REF_MODEL)
    motion = read_sto(GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot")
    ext = read_external_loads(GAIT_PIPE / "subject01_walk1_grf.xml")
    res = run_inverse_dynamics(model, motion, external_loads=ext, lowpass_hz=6.0, time_range=(0.4, 1.6))
    # OpenSim 4.6 on the same inputs (variant C): arthron measures < 1e-6 N, N·m
    _compare(res, REF / "task2_gait2354" / "ResultsID_C_refModel_refIK" / "inverse_dynamics.sto", atol=1e-4)
    # the acceptance: the stored pipeline output, 1e-2 N and N·m
    _compare(res, GAIT_PIPE / "OutputReference" / "ResultsInverseDynamics" / "inverse_dynamics.sto", atol=1e-2)
    # OpenSim 4.6's column order (Simbody mobility order)
    ref = read_sto(REF / "task2_gait2354" / "ResultsID_C_refModel_refIK" / "inverse_dynamics.sto")
    assert res.labels == ref.labels


@needs_data
@needs_opensim
def test_thoracoscapular_static_case_equals_opensim(tmp_path):
    """opensim-core's ID regression case: static pose, ScapulothoracicJoint, locked thorax."""
    mot = TSM_ID / "ThorascapularShoulderModel_static.mot"
    labels, t, data = oracle.run_id_tool(TSM, mot, tmp_path, (0.01, 0.06))
    res = run_inverse_dynamics(read_osim(TSM), read_sto(mot), time_range=(0.01, 0.06))
    np.testing.assert_allclose(res.time, t, atol=1e-12)
    for k, lab in enumerate(labels):
        np.testing.assert_allclose(res.column(lab), data[:, k], atol=1e-8, rtol=1e-10, err_msg=lab)


@needs_data
def test_minimal_form_equals_explicit_dynamics_matrices():
    """τ = Dᵀ(M(Dq̈+γ) − h) with dense D and M equals the subtree-sum evaluation."""
    model = read_osim(GAIT_REF_MODEL)
    tree = compile_model(model)
    rng = np.random.default_rng(4)
    T = 5
    q = tree.default_q + rng.normal(0, 0.2, (T, tree.nq))
    qd, qdd = rng.normal(0, 1, (T, tree.nq)), rng.normal(0, 2, (T, tree.nq))
    tau = inverse_dynamics(tree, q, qd, qdd)
    kin0 = forward_kinematics(tree, q, qd, np.zeros_like(qdd))
    D = velocity_map(tree, q, kin0)                                  # (T, nb, 6, nq)
    R = kin0.R[:, tree.body_node]
    rc = np.einsum("tbij,bj->tbi", R, tree.com)
    w, al0 = kin0.w[:, tree.body_node], kin0.al[:, tree.body_node]
    gam_v = kin0.a[:, tree.body_node] + np.cross(al0, rc) + np.cross(w, np.cross(w, rc))
    gamma = np.concatenate([gam_v, al0], -1)                         # γ (T, nb, 6)
    IG = R @ tree.inertia[None] @ np.swapaxes(R, -1, -2)
    a = np.einsum("tbik,tk->tbi", D, qdd) + gamma
    Ma = np.concatenate([tree.mass[None, :, None] * a[..., :3], np.einsum("tbij,tbj->tbi", IG, a[..., 3:])], -1)
    h = np.concatenate([np.broadcast_to(tree.mass[None, :, None] * tree.gravity, (T, tree.nb, 3)),
                        -np.cross(w, np.einsum("tbij,tbj->tbi", IG, w))], -1)
    ref = np.einsum("tbik,tbi->tk", D, Ma - h)
    np.testing.assert_allclose(tau, ref, atol=1e-9)


@needs_data
def test_motion_columns_not_matching_model_is_a_clear_error(tmp_path):
    mot = read_sto(GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot")
    bad = tmp_path / "walk_wrong_model.mot"
    write_sto(bad, mot)
    with pytest.raises(DataFileError, match=r"walk_wrong_model\.mot.*missing coordinate.*r_shoulder_elev"):
        run_inverse_dynamics(read_osim(ARM26), read_sto(bad))


def test_time_not_increasing_is_a_clear_error(tmp_path):
    p = tmp_path / "q.mot"
    p.write_text("q\nversion=1\nnRows=3\nnColumns=2\ninDegrees=no\nendheader\ntime\ta\n0\t1\n0.2\t1\n0.1\t1\n")
    with pytest.raises(DataFileError, match=r"q\.mot.*line"):
        read_sto(p)


@needs_data
@needs_opensim
def test_thoracoscapular_moving_trial_equals_opensim(tmp_path):
    """A synthesized 1-s motion of every coordinate: the Ellipsoid mobilizer's speeds are
    angular velocities in OpenSim, and the tool reads the spline derivatives as those speeds."""
    model = read_osim(TSM)
    mot = thoracoscapular_motion(tmp_path / "tsm_motion.mot")
    labels, to, dat = oracle.run_id_tool(TSM, mot, tmp_path, (0.1, 0.9), lowpass=6.0)
    res = run_inverse_dynamics(model, read_sto(mot), lowpass_hz=6.0, time_range=(0.1, 0.9))
    np.testing.assert_allclose(res.time, to, atol=1e-12)
    for k, lab in enumerate(labels):
        np.testing.assert_allclose(res.column(lab), dat[:, k], atol=1e-6, rtol=1e-8, err_msg=lab)


def _strip(path, out, types):
    from lxml import etree
    tree = etree.parse(str(path))
    for e in list(tree.getroot().iter()):
        if isinstance(e.tag, str) and e.tag in types:
            e.getparent().remove(e)
    tree.write(str(out))
    return out


@needs_data
@needs_opensim
def test_lenhart_passive_elements_applied_like_opensim(tmp_path):
    """76 Blankevoort ligaments and 12 SpringGeneralizedForces act in OpenSim's ID (muscles
    excluded); arthron applies them the same way. The plugin contact forces are removed for
    both (plain OpenSim cannot load them)."""
    from conftest import LENHART
    src = _strip(LENHART, tmp_path / "lenhart_no_plugins.osim",
                 ("Smith2018ArticularContactForce", "Smith2018ContactMesh"))
    model = read_osim(src)
    t = np.linspace(0, 1, 61)
    names = list(model.coordinates)
    q = np.tile([c.default_value for c in model.coordinates.values()], (t.size, 1))
    k = names.index("knee_flex_r")
    q[:, k] = np.deg2rad(5 + 40 * (0.5 - 0.5 * np.cos(2 * np.pi * t)))   # flexion sweep
    q[:, names.index("knee_tx_r")] += 0.002 * np.sin(2 * np.pi * t)     # some drawer
    mot = tmp_path / "knee.mot"
    write_sto(mot, Table(name="knee", time=t, labels=names, data=q, in_degrees=False))
    labels, to, dat = oracle.run_id_tool(src, mot, tmp_path, (0.1, 0.9), lowpass=-1)
    res = run_inverse_dynamics(model, read_sto(mot), time_range=(0.1, 0.9))
    np.testing.assert_allclose(res.time, to, atol=1e-12)
    for j, lab in enumerate(labels):
        np.testing.assert_allclose(res.column(lab), dat[:, j], atol=1e-6, rtol=1e-8, err_msg=lab)
    # the ligaments matter: without them the knee residuals change by newtons
    # (by class name, which OpenSim 4.6 does not read: arthron excludes them and says so)
    from arthron.errors import ArthronWarning
    with pytest.warns(ArthronWarning, match="'Blankevoort1991Ligament' excluded here but not by OpenSim"):
        bare = run_inverse_dynamics(model, read_sto(mot), time_range=(0.1, 0.9),
                                    forces_to_exclude=("Muscles", "Blankevoort1991Ligament"))
    lig_effect = np.abs(bare.column("knee_tx_r_force") - res.column("knee_tx_r_force")).max()
    assert lig_effect > 1.0


@needs_data
@needs_opensim
def test_coordinate_limit_and_spring_forces_like_opensim(tmp_path):
    """CoordinateLimitForce (degrees, quintic transitions, damping) and SpringGeneralizedForce
    added to the pendulum: arthron's ID residual equals OpenSim's."""
    pend = REF / "task6_pendulum" / "pendulum_off0.osim"
    text = pend.read_text()
    coord = read_osim(pend).joints[next(iter(read_osim(pend).joints))].coordinates[0].name
    extra = f"""
        <CoordinateLimitForce name="limit">
            <coordinate>{coord}</coordinate>
            <upper_stiffness>2.5</upper_stiffness><upper_limit>20</upper_limit>
            <lower_stiffness>4</lower_stiffness><lower_limit>-15</lower_limit>
            <damping>0.05</damping><transition>8</transition>
        </CoordinateLimitForce>
        <SpringGeneralizedForce name="spring">
            <coordinate>{coord}</coordinate>
            <stiffness>3</stiffness><rest_length>0.2</rest_length><viscosity>0.4</viscosity>
        </SpringGeneralizedForce>"""
    i = text.index("<ForceSet")
    j = text.index("<objects>", i) + len("<objects>")
    model_path = tmp_path / "pendulum_forces.osim"
    model_path.write_text(text[:j] + extra + text[j:])
    t = np.linspace(0, 2, 201)
    mot = tmp_path / "swing.mot"
    write_sto(mot, Table(name="swing", time=t, labels=[coord], data=np.deg2rad(40 * np.sin(2 * np.pi * t))[:, None],
                         in_degrees=False))
    labels, to, dat = oracle.run_id_tool(model_path, mot, tmp_path, (0.1, 1.9))
    res = run_inverse_dynamics(read_osim(model_path), read_sto(mot), time_range=(0.1, 1.9))
    np.testing.assert_allclose(res.column(labels[0]), dat[:, 0], atol=1e-7, rtol=1e-9)
    bare = run_inverse_dynamics(read_osim(pend), read_sto(mot), time_range=(0.1, 1.9))
    assert np.abs(bare.column(labels[0]) - res.column(labels[0])).max() > 0.5   # forces really act
