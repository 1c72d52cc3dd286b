"""``forces_to_exclude`` read as OpenSim 4.6's InverseDynamicsTool reads it
(``DynamicsTool::disableModelForces``): the keywords All, Actuators, Muscles in any letter
case, ForceSet group names (Gait2354 has 28 groups: R_hip_flex ...), force names. Where OpenSim
4.6 excludes nothing (a force's name on a model that has groups, a class name) arthron excludes
the forces named and warns that its result differs from OpenSim's.

Measured with OpenSim 4.6 on the Gait2354 walk (0.6–0.7 s): excluding ``muscles``
equals ``Muscles``; excluding the group R_hip_flex changes the generalized forces by up to
1697 N·m from excluding nothing; excluding its eight members by name changes nothing
(the model has groups). On arm26 (no groups) excluding ``TRIlong`` by name works, and
``Thelen2003Muscle`` excludes nothing."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import ARM26, GAIT_PIPE, GAIT_REF_MODEL, REF, needs_data, needs_opensim

WALK = GAIT_PIPE / "subject01_walk1_ik.mot"
ARM_IK = REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"
R_HIP_FLEX = "glut_med1_r grac_r iliacus_r pect_r psoas_r rect_fem_r sar_r tfl_r".split()


def _ours(model, motion, exclude, time_range):
    from arthron.errors import ArthronWarning
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.solvers.inverse_dynamics import run_inverse_dynamics
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ArthronWarning)
        res = run_inverse_dynamics(read_osim(model), read_sto(motion), time_range=time_range,
                                   forces_to_exclude=tuple(exclude))
    return res, [str(w.message) for w in caught if issubclass(w.category, ArthronWarning)
                 and "forces_to_exclude" in str(w.message)]


def _theirs(model, motion, exclude, time_range, tmp_path):
    import oracle
    out = tmp_path / ("os_" + "_".join(exclude or ["none"]))
    out.mkdir(exist_ok=True)
    labels, t, data = oracle.run_id_tool(model, motion, out, time_range, exclude=tuple(exclude))
    return labels, data


def _diff(res, labels, data):
    return max(np.abs(res.column(c) - data[:, j]).max() for j, c in enumerate(labels))


@needs_data
def test_force_groups_read_and_written():
    from arthron.io.osim import read_osim
    from arthron.io.osim_write import model_to_xml
    m = read_osim(GAIT_REF_MODEL)
    assert len(m.force_groups) == 28 and m.force_groups["R_hip_flex"] == tuple(R_HIP_FLEX)
    from lxml import etree
    assert b'ObjectGroup name="R_hip_flex"' in etree.tostring(model_to_xml(m))


@needs_data
def test_keywords_groups_and_names_resolve_as_opensim():
    from arthron.io.osim import read_osim
    from arthron.multibody.force_exclusion import forces_to_exclude
    m = read_osim(GAIT_REF_MODEL)
    muscles = set(m.muscles)
    assert forces_to_exclude(m, ["muscles"])[0] == forces_to_exclude(m, ["MUSCLES"])[0] == muscles
    assert forces_to_exclude(m, ["all"])[0] == set(m.forces)
    assert forces_to_exclude(m, ["R_hip_flex"]) == (set(R_HIP_FLEX), [], [])
    assert forces_to_exclude(m, ["psoas_r", "nope"]) == ({"psoas_r"}, ["nope"], ["psoas_r"])
    a = read_osim(ARM26)
    assert forces_to_exclude(a, ["TRIlong"]) == ({"TRIlong"}, [], [])
    assert forces_to_exclude(a, ["Thelen2003Muscle"]) == (set(a.muscles), [], ["Thelen2003Muscle"])


@needs_data
@needs_opensim
def test_inverse_dynamics_exclusions_match_opensim(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                     # opensim.log goes here
    tr = (0.6, 0.65)
    none_l, none_d = _theirs(GAIT_REF_MODEL, WALK, [], tr, tmp_path)
    for exclude in (["muscles"], ["R_hip_flex"]):
        labels, data = _theirs(GAIT_REF_MODEL, WALK, exclude, tr, tmp_path)
        res, warned = _ours(GAIT_REF_MODEL, WALK, exclude, tr)
        assert _diff(res, labels, data) < 1e-6 and not warned, (exclude, warned)
        # each changes the result (muscles not excluded pull at their default states)
        assert np.abs(data - none_d).max() > 100.0
    # a force's own name on a model with groups (iliacus_r: 12 N·m at its default state):
    # OpenSim 4.6 excludes nothing; arthron excludes it and says that OpenSim would not
    labels, data = _theirs(GAIT_REF_MODEL, WALK, ["iliacus_r"], tr, tmp_path)
    assert np.abs(data - none_d).max() == 0.0
    res, warned = _ours(GAIT_REF_MODEL, WALK, ["iliacus_r"], tr)
    assert _diff(res, labels, data) > 1.0 and len(warned) == 1 and "'iliacus_r'" in warned[0]
    # no groups (arm26): a name excludes its force in both; a class name only in arthron
    arm = (0.0, 0.2)
    for exclude in (["TRIlong"], ["actuators"]):
        labels, data = _theirs(ARM26, ARM_IK, exclude, arm, tmp_path)
        res, warned = _ours(ARM26, ARM_IK, exclude, arm)
        assert _diff(res, labels, data) < 1e-6 and not warned, (exclude, warned)
    labels, data = _theirs(ARM26, ARM_IK, ["Thelen2003Muscle"], arm, tmp_path)
    res, warned = _ours(ARM26, ARM_IK, ["Thelen2003Muscle"], arm)
    mus, _ = _ours(ARM26, ARM_IK, ["Muscles"], arm)
    assert len(warned) == 1 and "class names" in warned[0]
    assert np.abs(res.generalized_forces - mus.generalized_forces).max() == 0.0
    assert _diff(res, labels, data) > 1.0


@pytest.mark.parametrize("name", ["Muscles", "muscles", "ALL", "Actuators"])
def test_keywords_any_case_on_a_model_without_forces(name):
    from arthron.models.model import Model
    from arthron.multibody.force_exclusion import forces_to_exclude
    assert forces_to_exclude(Model(), [name]) == (set(), [], [])
