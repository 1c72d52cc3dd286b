"""The AnalyzeTool on a model with an ActivationCoordinateActuator and the other actuators that
OpenSim 4.6 records at control 0 (PathActuator, PointActuator and TorqueActuator with and
without their global flags), compared file by file with OpenSim 4.6 run in the test.

OpenSim applies an ActivationCoordinateActuator's force, activation × optimal force, in every
analysis (its activation is a state: the default on a coordinates file, the file's on a states
file): arthron's forward-dynamics accelerations left it out (7,458 deg/s² off on the elbow here;
the joint reactions with them), and its ForceReporter and Actuation files left these actuators
out."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import ARM26_TUT, needs_data, needs_opensim

ARM = ARM26_TUT / "InverseKinematics" / "arm26.osim"

_ACTUATORS = """
<PathActuator name="pa">{path}<optimal_force>100</optimal_force></PathActuator>
<ActivationCoordinateActuator name="aca"><coordinate>r_elbow_flex</coordinate><optimal_force>10</optimal_force>
  <default_activation>0.3</default_activation></ActivationCoordinateActuator>
<PointActuator name="ptg"><body>r_ulna_radius_hand</body><point>0.1 -0.2 0.05</point>
  <point_is_global>true</point_is_global><direction>1 0 0</direction><optimal_force>5</optimal_force></PointActuator>
<TorqueActuator name="tql"><bodyA>r_ulna_radius_hand</bodyA><bodyB>ground</bodyB>
  <torque_is_global>false</torque_is_global><axis>0 0.5 1</axis><optimal_force>3</optimal_force></TorqueActuator>
<TorqueActuator name="tqg"><bodyA>r_ulna_radius_hand</bodyA><bodyB>ground</bodyB>
  <torque_is_global>true</torque_is_global><axis>0.3 0 1</axis><optimal_force>3</optimal_force></TorqueActuator>
<PointActuator name="ptl"><body>r_ulna_radius_hand</body><point>0.1 -0.2 0.05</point>
  <point_is_global>false</point_is_global><direction>1 0 0</direction><optimal_force>5</optimal_force></PointActuator>
"""

_ANALYSES = """
<JointReaction name="JointReaction"><on>true</on><step_interval>1</step_interval><joint_names>all</joint_names>
  <apply_on_bodies>child</apply_on_bodies><express_in_frame>ground</express_in_frame></JointReaction>
<Kinematics name="Kinematics"><on>true</on><step_interval>1</step_interval><in_degrees>true</in_degrees>
  <coordinates>all</coordinates></Kinematics>
<ForceReporter name="ForceReporter"><on>true</on><step_interval>1</step_interval>
  <include_constraint_forces>false</include_constraint_forces></ForceReporter>
<StatesReporter name="StatesReporter"><on>true</on><step_interval>1</step_interval></StatesReporter>
<Actuation name="Actuation"><on>true</on><step_interval>1</step_interval><in_degrees>true</in_degrees></Actuation>
"""


def _model(tmp_path):
    """arm26 with the actuators above (the PathActuator on BRA's path) in its ForceSet."""
    src = ARM.read_text()
    bra = re.search(r'<(\w+) name="BRA">.*?</\1>', src, re.S).group(0)
    path = re.search(r"<GeometryPath.*?</GeometryPath>", bra, re.S).group(0)
    end = src.rindex("</objects>", 0, src.index("</ForceSet>"))
    p = tmp_path / "arm_actuators.osim"
    p.write_text(src[:end] + _ACTUATORS.format(path=path) + src[end:])
    return p


def _setup(tmp_path, model, inputs, results):
    from conftest import analyze_tool_setup
    return analyze_tool_setup(tmp_path / f"{results.name}.xml", "act", model, inputs, results, _ANALYSES, 0, 0.6)


def _compare(tmp_path, setup):
    import opensim as osim
    from oracle import _cwd, _quiet
    from arthron.cli import main
    from arthron.io.sto import read_sto
    _quiet(osim)
    with _cwd(tmp_path):
        osim.AnalyzeTool(str(setup)).run()
    with pytest.warns(Warning):
        assert main(["analyze", "--setup", str(setup), "--output-dir", str(tmp_path / "ours")]) == 0
    theirs = sorted((tmp_path / "osim").glob("*.sto"))
    assert len(theirs) == 9
    for f in theirs:
        a, b = read_sto(f), read_sto(tmp_path / "ours" / f.name)
        assert b.labels == a.labels, f.name
        assert {"pa", "aca", "ptg", "tql", "tqg", "ptl"} <= set(a.labels) or "Actuation" not in f.name
        # the files' 8 decimals; accelerations of 1e5 deg/s² to 1e-12 relative
        tol = 1e-8 + 1e-12 * np.abs(a.data).max()
        assert np.abs(a.data - b.data).max() < tol, (f.name, np.abs(a.data - b.data).max())
    return read_sto(tmp_path / "osim" / "act_Actuation_force.sto")


@needs_data
@needs_opensim
def test_actuators_on_a_coordinates_file_as_opensim(tmp_path):
    from arthron.io.sto import write_sto
    from arthron.tables import Table
    model = _model(tmp_path)
    t = np.linspace(0, 1, 101)
    q = np.column_stack([0.6 + 0.5 * np.sin(2 * np.pi * t), 1.0 + 0.6 * np.sin(2.6 * np.pi * t)])
    mot = tmp_path / "motion.mot"
    write_sto(mot, Table(name="m", time=t, labels=["r_shoulder_elev", "r_elbow_flex"], data=np.degrees(q),
                         in_degrees=True))
    setup = _setup(tmp_path, model, f"<coordinates_file>{mot}</coordinates_file>"
                   "<lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>",
                   tmp_path / "osim")
    force = _compare(tmp_path, setup)
    assert np.allclose(force.data[:, force.labels.index("aca")], 3.0)    # 0.3 × 10 N·m
    # a JointReaction given a forces file: OpenSim applies its ActivationCoordinateActuator
    # column as the actuator's force (arthron ignored the column: 18.7 N off)
    import opensim as osim
    from oracle import _cwd
    from arthron.io.sto import read_sto
    from arthron.tools.analyze_tool import run_analyze
    forces = tmp_path / "osim" / "act_ForceReporter_forces.sto"
    text = setup.read_text().replace('<JointReaction name="JointReaction"><on>true</on>',
                                     f'<JointReaction name="JointReaction"><on>true</on><forces_file>{forces}</forces_file>')
    with_forces = tmp_path / "with_forces.xml"
    with_forces.write_text(text.replace(f"<results_directory>{tmp_path / 'osim'}", f"<results_directory>{tmp_path / 'osim2'}"))
    with _cwd(tmp_path):
        osim.AnalyzeTool(str(with_forces)).run()
    run_analyze(with_forces, results_dir=tmp_path / "ours2")
    a, b = (read_sto(d / "act_JointReaction_ReactionLoads.sto") for d in (tmp_path / "osim2", tmp_path / "ours2"))
    assert a.labels == b.labels and np.abs(a.data - b.data).max() < 1e-8 + 1e-12 * np.abs(a.data).max()


@needs_data
@needs_opensim
def test_actuators_on_a_states_file_with_the_activation_as_opensim(tmp_path):
    from arthron.io.osim import read_osim
    from arthron.io.sto import write_sto
    from arthron.tables import Table
    model = _model(tmp_path)
    m = read_osim(model)
    t = np.linspace(0, 1, 51)
    labels, cols = [], []
    for i, c in enumerate(m.coordinates.values()):
        w = 2 * np.pi * (1 + 0.3 * i)
        labels += [f"/jointset/{c.joint}/{c.name}/value", f"/jointset/{c.joint}/{c.name}/speed"]
        cols += [0.6 + 0.4 * np.sin(w * t), 0.4 * w * np.cos(w * t)]
    labels.append("/forceset/aca/activation")
    cols.append(0.2 + 0.5 * t)
    states = tmp_path / "states.sto"
    write_sto(states, Table(name="states", time=t, labels=labels, data=np.column_stack(cols), in_degrees=False))
    setup = _setup(tmp_path, model, f"<states_file>{states}</states_file>", tmp_path / "osim")
    force = _compare(tmp_path, setup)
    k = force.labels.index("aca")
    assert np.allclose(force.data[:, k], 10 * (0.2 + 0.5 * force.time), atol=1e-8)   # the file's activation
