"""The frames-last inverse-dynamics core (arthron.multibody.frames_last) against the
frames-first reference (core="reference"): same kinematics and generalized forces to 1e-12
relative, on every registered joint type, on Gait2354 with loads in ground and body frames,
and on the Thoracoscapular model (Ellipsoid/Scapulothoracic joints)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import GAIT_REF_MODEL, TSM, needs_data
from test_conformance_joints import TYPES, _states, chain_model

from arthron.io.osim import read_osim
from arthron.multibody.frames_last import kinematics_frames_last
from arthron.multibody.inverse_dynamics import ExternalLoad, inverse_dynamics
from arthron.multibody.kinematics import compile_model, forward_kinematics


def _close(a, b, rtol=1e-12):
    scale = max(1.0, float(np.abs(b).max()))
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale)


def _loads(tree, T, rng):
    """A load on every body: ground force at a ground point, a body-frame force at a body
    point, a torque in another body's frame, and one force with no point (body origin)."""
    out = []
    for b, name in enumerate(tree.body_names):
        other = tree.body_names[(b + 1) % tree.nb]
        out.append(ExternalLoad(body=name, force=rng.normal(0, 50, (T, 3)),
                                point=rng.normal(0, 0.5, (T, 3)), torque=rng.normal(0, 5, (T, 3))))
        out.append(ExternalLoad(body=name, force=rng.normal(0, 20, (T, 3)), point=rng.normal(0, 0.1, (T, 3)),
                                torque=rng.normal(0, 2, (T, 3)), force_frame=other, point_frame=name))
        out.append(ExternalLoad(body=name, force=rng.normal(0, 10, (T, 3))))
    return out


def _check(tree, q, qd, qdd, loads):
    ref = forward_kinematics(tree, q, qd, qdd)
    fl = kinematics_frames_last(tree, q, qd, qdd)
    for k in ("R", "o", "w", "v", "al", "a"):
        _close(np.stack(getattr(fl, k), 0).transpose((-1, 0) + tuple(range(1, getattr(fl, k)[0].ndim))),
               getattr(ref, k))
    applied = np.random.default_rng(3).normal(0, 1, q.shape)
    tau_ref = inverse_dynamics(tree, q, qd, qdd, loads, applied=applied, core="reference")
    tau = inverse_dynamics(tree, q, qd, qdd, loads, applied=applied)
    assert tau.shape == q.shape and tau.flags.c_contiguous
    _close(tau, tau_ref)
    return tau


@pytest.mark.parametrize("jtype", TYPES)
def test_every_joint_type_equals_reference(jtype):
    tree = compile_model(chain_model(jtype))
    q, qd, qdd = _states(tree, T=5)
    _check(tree, q, qd, qdd, _loads(tree, 5, np.random.default_rng(0)))
    # one frame, and no loads
    _check(tree, q[:1], qd[:1], qdd[:1], [])


@needs_data
def test_gait2354_equals_reference():
    tree = compile_model(read_osim(GAIT_REF_MODEL))
    rng = np.random.default_rng(7)
    T = 40
    q = tree.default_q + rng.uniform(-0.5, 0.5, (T, tree.nq))
    qd, qdd = rng.normal(0, 2, (T, tree.nq)), rng.normal(0, 20, (T, tree.nq))
    tau = _check(tree, q, qd, qdd, _loads(tree, T, rng))
    assert np.abs(tau).max() > 10          # not a trivial case


@needs_data
def test_blocks_of_frames_give_the_same_numbers(monkeypatch):
    """Long trials are solved in blocks of FRAME_BLOCK frames (loads and applied forces sliced
    alike): same numbers as one pass."""
    from arthron.multibody import frames_last
    tree = compile_model(read_osim(GAIT_REF_MODEL))
    rng = np.random.default_rng(5)
    T = 23
    q = tree.default_q + rng.uniform(-0.5, 0.5, (T, tree.nq))
    qd, qdd = rng.normal(0, 2, (T, tree.nq)), rng.normal(0, 20, (T, tree.nq))
    loads, applied = _loads(tree, T, rng), rng.normal(0, 1, (T, tree.nq))
    one = inverse_dynamics(tree, q, qd, qdd, loads, applied=applied)
    monkeypatch.setattr(frames_last, "FRAME_BLOCK", 7)
    blocks = inverse_dynamics(tree, q, qd, qdd, loads, applied=applied)
    np.testing.assert_array_equal(blocks, one)


@needs_data
def test_thoracoscapular_ellipsoid_equals_reference():
    tree = compile_model(read_osim(TSM))
    assert any(nd.kind == "ellip" for nd in tree.nodes)
    rng = np.random.default_rng(11)
    T = 6
    q = tree.default_q + rng.uniform(-0.3, 0.3, (T, tree.nq))
    _check(tree, q, rng.normal(0, 1, (T, tree.nq)), rng.normal(0, 5, (T, tree.nq)), _loads(tree, T, rng))


def test_unknown_core_is_refused():
    tree = compile_model(chain_model("PinJoint"))
    q = np.zeros((1, tree.nq))
    with pytest.raises(ValueError, match="core"):
        inverse_dynamics(tree, q, q, q, core="fast")


@pytest.mark.parametrize("jtype", TYPES)
def test_velocity_map_transpose_equals_reference(jtype):
    from arthron.multibody.frames_last import velocity_map_transpose_frames_last
    from arthron.multibody.kinematics import apply_velocity_map_transpose
    tree = compile_model(chain_model(jtype))
    q, _, _ = _states(tree, T=4)
    rng = np.random.default_rng(2)
    F, M = rng.normal(0, 10, (4, tree.nb, 3)), rng.normal(0, 3, (4, tree.nb, 3))
    ref = apply_velocity_map_transpose(tree, forward_kinematics(tree, q), F, M)
    _close(velocity_map_transpose_frames_last(tree, kinematics_frames_last(tree, q), F, M), ref)


@pytest.mark.parametrize("jtype", TYPES)
def test_mass_matrix_from_frames_last_kinematics_equals_reference(jtype):
    from arthron.multibody.mass_matrix import mass_matrix
    tree = compile_model(chain_model(jtype))
    q, _, _ = _states(tree, T=4)
    _close(mass_matrix(tree, q), mass_matrix(tree, q, forward_kinematics(tree, q)))
