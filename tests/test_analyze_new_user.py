"""A new user's AnalyzeTool setups against OpenSim 4.6 run in the test.

Setups written as OpenSim's GUI / Python API writes them (``opensim.AnalyzeTool()`` with the
analyses appended, every property at its default, ``printToXML``) on states files of OpenSim's
forward simulations (arm26's Thelen muscles, gait10dof18musc's Millard muscles) and on a
coordinates file (arm26's IK motion). Each file arthron writes is compared with OpenSim's: same
names, same labels in the same order, same times, values to OpenSim's 8 decimals (5e-9 of
rounding, plus 1e-10 of the column's largest value).
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from arthron.io.sto import read_sto
from arthron.tools.analyze_tool import run_analyze

from conftest import ARM26, DATA, REF, needs_data, needs_opensim
from test_analyze_states_file import GAIT10, _forward, _relabel, _run_opensim

IK = REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"

pytestmark = [needs_data, needs_opensim]


def _gui_setup(path: Path, name, model, analyses, *, states=None, coordinates=None, t0=0.0, t1=1.0):
    """A setup as OpenSim 4.6's AnalyzeTool prints it, results in ``osim_<name>``."""
    import opensim
    tool = opensim.AnalyzeTool()
    tool.setName(name)
    tool.setModelFilename(str(model))
    if states is not None:
        tool.setStatesFileName(str(states))
    if coordinates is not None:
        tool.setCoordinatesFileName(str(coordinates))
    tool.setInitialTime(t0)
    tool.setFinalTime(t1)
    tool.setResultsDir(f"osim_{name}")
    for a in analyses:
        tool.getAnalysisSet().cloneAndAppend(a)
    tool.printToXML(str(path))
    return path


def _same_files(setup: Path, written) -> None:
    """Every file OpenSim writes for ``setup`` (in ``osim_<name>``) equals arthron's."""
    ref = setup.parent / f"osim_{setup.stem}"
    theirs = sorted(p.name for p in ref.iterdir())
    assert sorted(Path(p).name for p in written) == theirs
    for f in written:
        a, o = read_sto(f), read_sto(ref / Path(f).name)
        assert a.labels == o.labels, f
        np.testing.assert_allclose(a.time, o.time, atol=5e-9, err_msg=str(f))
        tol = 5e-9 + 1e-10 * np.nanmax(np.abs(o.data), axis=0)
        assert (np.abs(a.data - o.data) <= tol).all(), f


@pytest.fixture(scope="module")
def states(tmp_path_factory):
    import opensim
    opensim.Logger.setLevelString("error")
    d = tmp_path_factory.mktemp("new_user")
    return d, _forward(ARM26, d / "arm_states.sto", 0.1, 1e-5), _forward(GAIT10, d / "gait_states.sto", 0.02, 1e-5)


def _run_both(setup: Path):
    _run_opensim(setup)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_analyze(setup, results_dir=setup.parent / f"arthron_{setup.stem}")


@pytest.mark.parametrize("case", ["arm", "arm_missing", "gait_missing", "arm_step"])
def test_states_reporter_on_states_file(states, case):
    """OpenSim's StatesReporter (a GUI default analysis) on a states file: the model's states
    in model order, the file's values, the states the file lacks at their defaults (arm26's
    Thelen activations, gait10dof18musc's Millard fiber lengths); it was skipped with a
    warning."""
    import opensim
    d, arm, gait = states
    model, sto = (GAIT10, gait) if case.startswith("gait") else (ARM26, arm)
    if case == "arm_missing":
        sto = _relabel(arm, d / "arm_noact.sto", drop=("activation", "elbow_flex/speed"))
    if case == "gait_missing":
        sto = _relabel(gait, d / "gait_nofib.sto", drop=("fiber_length", "pelvis_tx/value"))
    rep = opensim.StatesReporter()
    rep.setName("StatesReporter")
    rep.setStepInterval(3 if case == "arm_step" else 1)
    kin = opensim.Kinematics()
    setup = _gui_setup(d / f"{case}.xml", case, model, [rep, kin], states=sto, t0=0.0, t1=1.0)
    written = _run_both(setup)
    _same_files(setup, written)
    assert any(Path(p).name == f"{case}_StatesReporter_states.sto" for p in written)


def test_states_reporter_on_coordinates_file(tmp_path):
    """On a coordinates file: q and u of the AnalyzeTool's splines, muscles at their default
    states (no equilibrium), as OpenSim's StatesReporter writes them."""
    import opensim
    opensim.Logger.setLevelString("error")
    rep = opensim.StatesReporter()
    rep.setName("StatesReporter")
    setup = _gui_setup(tmp_path / "coords.xml", "coords", ARM26, [rep], coordinates=IK, t0=0.2, t1=0.6)
    written = _run_both(setup)
    _same_files(setup, written)


@pytest.mark.parametrize("tag, text", [("muscle_list", "TRIlong FOO"),
                                       ("moment_arm_coordinate_list", "r_elbow_flex knee")])
def test_muscle_analysis_unknown_name(states, tag, text):
    """A MuscleAnalysis naming a muscle or coordinate the model lacks (a typo): OpenSim 4.6
    leaves the name out without a word (measured: its files lack the column or the file); arthron
    refuses, naming the setup, its line, the element and the name, as for the kinematics
    analyses' ``<coordinates>`` and ``<bodies>`` (which OpenSim refuses too)."""
    import opensim
    from arthron.errors import DataFileError
    d, arm, _ = states
    ma = opensim.MuscleAnalysis()
    ma.setName("MuscleAnalysis")
    setup = _gui_setup(d / f"typo_{tag}.xml", f"typo_{tag}", ARM26, [ma], states=arm)
    xml = setup.read_text()
    old = f"<{tag}> all</{tag}>"
    assert old in xml
    setup.write_text(xml.replace(old, f"<{tag}>{text}</{tag}>"))
    _run_opensim(setup)
    ref = setup.parent / f"osim_{setup.stem}"
    if tag == "muscle_list":
        assert read_sto(ref / f"{setup.stem}_MuscleAnalysis_Length.sto").labels == ["TRIlong"]
    else:
        assert not list(ref.glob("*MomentArm_knee*"))
    bad = text.split()[1]
    line = next(k for k, x in enumerate(setup.read_text().splitlines(), 1) if f"<{tag}>" in x)
    with pytest.raises(DataFileError) as e:
        run_analyze(setup, results_dir=d / f"arthron_typo_{tag}")
    msg = str(e.value)
    assert str(setup) in msg and f"line {line}" in msg and f"<{tag}>" in msg and repr(bad) in msg
    assert "muscle" in msg if tag == "muscle_list" else "coordinate" in msg


def test_actuation_gait2354_walk_with_cmc_actuators(tmp_path):
    """OpenSim's Actuation analysis (in the Gait2354 pipeline's Analyze setup; was skipped with
    a warning) on the walk's IK motion with its ground reactions and the pipeline's CMC
    actuators (PointActuators FX/FY/FZ, TorqueActuators MX/MY/MZ, CoordinateActuator reserves)
    appended: 54 muscles' forces at their default states, lengthening speeds, powers, the
    actuators' speeds (|v| of the point, (ω_A − ω_B)·axis, u), step_interval 10, 6 Hz filter:
    every column of the three files equal to OpenSim 4.6's 8 decimals."""
    import opensim
    from conftest import GAIT_PIPE, GAIT_REF_MODEL
    opensim.Logger.setLevelString("error")
    # the pipeline's actuators without their <defaults> block (every actuator sets its
    # optimal_force): OpenSim would otherwise make its CoordinateActuator default
    # optimal_force 1000 for the rest of the process (other tests read 3.x files with OpenSim)
    text = (GAIT_PIPE / "gait2354_CMC_Actuators.xml").read_text()
    acts = tmp_path / "gait2354_CMC_Actuators.xml"
    acts.write_text(re.sub(r"<defaults>.*?</defaults>", "<defaults/>", text, flags=re.S))
    assert "<optimal_force>1000" not in acts.read_text().split("<objects>")[0]
    act = opensim.Actuation()
    act.setName("Actuation")
    act.setStepInterval(10)
    kin = opensim.Kinematics()

    def extra(tool):
        tool.setExternalLoadsFileName(str(GAIT_PIPE / "subject01_walk1_grf.xml"))
        tool.setLowpassCutoffFrequency(6)
        tool.setReplaceForceSet(False)
        fs = opensim.ArrayStr()
        fs.append(str(acts))
        tool.setForceSetFiles(fs)

    setup = _gui_setup(tmp_path / "walk.xml", "walk", GAIT_REF_MODEL, [act, kin],
                       coordinates=GAIT_PIPE / "subject01_walk1_ik.mot", t0=0.6, t1=1.0)
    tool = opensim.AnalyzeTool(str(setup), False)
    extra(tool)
    tool.printToXML(str(setup))
    assert str(acts) in setup.read_text()
    written = _run_both(setup)
    _same_files(setup, written)
    speed = read_sto(next(p for p in written if str(p).endswith("_Actuation_speed.sto")))
    assert {"FX", "MX", "knee_angle_r_reserve"} <= set(speed.labels)
    assert np.abs(speed.data[:, speed.labels.index("FX")]).max() > 0.1


def test_actuation_on_states_file(states):
    """Actuation on arm26's forward simulation: the muscles' forces at the file's states, their
    lengthening speeds and −force × speed, equal to OpenSim 4.6's 8 decimals."""
    import opensim
    d, arm, _ = states
    act = opensim.Actuation()
    act.setName("Actuation")
    setup = _gui_setup(d / "act_states.xml", "act_states", ARM26, [act], states=arm)
    _same_files(setup, _run_both(setup))


def test_step_interval_zero_records_every_step(states):
    """``<step_interval>0</step_interval>`` (a hand-edited setup): OpenSim 4.6 clamps it to 1
    (``Analysis::setStepInterval``) and records every step; arthron refused the setup. Now it
    writes the same files as OpenSim, with a warning."""
    import opensim
    from arthron.errors import ArthronWarning
    d, arm, _ = states
    kin = opensim.Kinematics()
    setup = _gui_setup(d / "step0.xml", "step0", ARM26, [kin], states=arm, t0=0.0, t1=1.0)
    setup.write_text(re.sub(r"<step_interval>\s*1\s*</step_interval>", "<step_interval>0</step_interval>",
                            setup.read_text()))
    assert "<step_interval>0</step_interval>" in setup.read_text()
    _run_opensim(setup)
    with pytest.warns(ArthronWarning, match="step_interval 0 is below 1"):
        written = run_analyze(setup, results_dir=d / "arthron_step0")
    _same_files(setup, written)
    assert len(read_sto(written[0]).time) == len(read_sto(arm).time)
