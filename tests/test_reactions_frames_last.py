"""Joint reactions (E-matrix, Blajer & Czaplicki 2005 Eq. 2.10) on the frames-last kinematics
equal the frames-first reference (``joint_loads(..., core="reference")``) to 1e-12 relative:
every joint type, and Gait2354 with loads on every body."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import GAIT_REF_MODEL, needs_data
from test_conformance_joints import TYPES, _states, chain_model
from test_frames_last import _close, _loads

from arthron.io.osim import read_osim
from arthron.multibody.kinematics import compile_model
from arthron.solvers.reactions import joint_loads, reaction_columns


def _check(model, tree, q, qd, qdd, loads):
    ref = joint_loads(model, tree, q, qd, qdd, loads, core="reference")
    fl = joint_loads(model, tree, q, qd, qdd, loads)
    assert fl.names == ref.names
    for k in ("Lambda", "centre", "R_M", "parent_origin"):
        _close(getattr(fl, k), getattr(ref, k))
    for on, frame in (("child", "ground"), ("parent", "child")):
        _close(reaction_columns(model, tree, fl, on, frame)[1], reaction_columns(model, tree, ref, on, frame)[1])
    for k in range(len(fl.names)):        # the motion subspace (hinge data computed on demand)
        g = fl.generalized_forces(k)
        if g.size:                          # a WeldJoint has none
            _close(g, ref.generalized_forces(k))
        _close(fl.constraint_reaction(k), ref.constraint_reaction(k))
    return ref


@pytest.mark.parametrize("jtype", TYPES)
def test_every_joint_type_equals_reference(jtype):
    model = chain_model(jtype)
    tree = compile_model(model)
    q, qd, qdd = _states(tree, T=5)
    _check(model, tree, q, qd, qdd, _loads(tree, 5, np.random.default_rng(0)))
    _check(model, tree, q[:1], qd[:1], qdd[:1], [])


@needs_data
def test_gait2354_equals_reference():
    model = read_osim(GAIT_REF_MODEL)
    tree = compile_model(model)
    rng = np.random.default_rng(11)
    T = 30
    q = tree.default_q + rng.uniform(-0.5, 0.5, (T, tree.nq))
    qd, qdd = rng.normal(0, 2, (T, tree.nq)), rng.normal(0, 20, (T, tree.nq))
    ref = _check(model, tree, q, qd, qdd, _loads(tree, T, rng))
    assert np.abs(ref.Lambda).max() > 10          # not a trivial case


def test_unknown_core_is_refused():
    model = chain_model(TYPES[0])
    tree = compile_model(model)
    q, qd, qdd = _states(tree, T=2)
    with pytest.raises(ValueError, match="core"):
        joint_loads(model, tree, q, qd, qdd, core="numba")
