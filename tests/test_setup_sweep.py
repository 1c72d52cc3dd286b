"""OpenSim's own setup files, run through the CLI as a new user runs them (benchmarks/sweep_setups.py
sweeps them all): every output redirected away from the setup (``-o``, ``--output-dir``), files
kept in other folders found with ``--search-dir``, and one clear line for what arthron does not run.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import ARM26_TUT, DATA, GAIT_PIPE, REF, needs_data, needs_opensim

from arthron.cli import main

TUT = ARM26_TUT / "OutputReference"
TUT_IK = TUT / "InverseKinematics" / "arm26_Setup_InverseKinematics.xml"
TUT_ID = TUT / "InverseDynamics" / "arm26_Setup_InverseDynamics.xml"
COMMANDS = ("ik", "id", "scale", "analyze", "so", "jr", "paths")


def _one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("arthron: error:")]
    assert len(lines) == 1, err
    return lines[0]


def _opensim_run(tool_cls, setup, tmp_path, files, **outputs):
    """Run an OpenSim 4.6 tool on a copy of ``setup`` in ``tmp_path`` (cwd too) whose inputs
    ``files`` (tag -> absolute path) and outputs (tag -> text) are replaced."""
    import opensim as osim
    from lxml import etree
    osim.Logger.setLevelString("error")
    try:
        osim.Logger.removeFileSink()
    except Exception:
        pass
    tree = etree.parse(str(setup))
    for el in tree.getroot().iter():
        if isinstance(el.tag, str) and el.tag in files:
            el.text = str(files[el.tag])
        elif isinstance(el.tag, str) and el.tag in outputs:
            el.text = str(outputs[el.tag])
        elif el.tag == "results_directory":
            el.text = str(tmp_path)
    copy = tmp_path / ("opensim_" + setup.name)
    tree.write(str(copy))
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        getattr(osim, tool_cls)(str(copy)).run()
    finally:
        os.chdir(old)


# ------------------------------------------------------------- tools arthron does not run
UNSUPPORTED = [(GAIT_PIPE / f"subject01_Setup_{n}.xml", tag) for n, tag in
               (("CMC", "CMCTool"), ("RRA", "RRATool"), ("Forward", "ForwardTool"))]


@needs_data
@pytest.mark.parametrize("setup,tag", UNSUPPORTED, ids=[t for _, t in UNSUPPORTED])
@pytest.mark.parametrize("command", COMMANDS)
def test_unsupported_tool_is_one_line_naming_it(setup, tag, command, tmp_path, capsys):
    if not setup.exists():
        pytest.skip(f"{setup} is absent")
    out = ["--output-dir" if command in ("scale", "analyze") else "-o", str(tmp_path / "x")]
    assert main([command, "--setup", str(setup), *out]) == 2
    line = _one_line(capsys)
    assert str(setup) in line and f"<{tag}>" in line and "not supported" in line
    assert not (tmp_path / "x").exists()


@needs_data
@pytest.mark.parametrize("name", ["Analyze", "AnalyzeTest", "Analyze_Reactions"])
@pytest.mark.parametrize("command", ["analyze", "jr", "paths"])
def test_analyze_from_states_file_is_one_line_naming_the_element(name, command, tmp_path, capsys):
    setup = GAIT_PIPE / f"subject01_Setup_{name}.xml"
    if not setup.exists():
        pytest.skip(f"{setup} is absent")
    out = ["--output-dir" if command == "analyze" else "-o", str(tmp_path / "x")]
    assert main([command, "--setup", str(setup), *out]) == 2
    line = _one_line(capsys)
    assert str(setup) in line and "<states_file>" in line and "line " in line
    assert "not supported" in line and "<coordinates_file>" in line


@needs_data
def test_another_tools_setup_names_the_command_that_runs_it(tmp_path, capsys):
    assert main(["id", "--setup", str(GAIT_PIPE / "subject01_Setup_IK.xml"), "-o", str(tmp_path / "x.sto")]) == 2
    assert "InverseKinematicsTool" in (line := _one_line(capsys)) and "arthron ik --setup" in line
    assert main(["ik", "--setup", str(GAIT_PIPE / "subject01_Setup_Scale.xml"), "-o", str(tmp_path / "x.mot")]) == 2
    assert "arthron scale --setup" in _one_line(capsys)


TEMPLATES = sorted((REF / "task1_arm26" / "setups").glob("*.xml")) if REF.is_dir() else []


@needs_data
@pytest.mark.parametrize("setup", TEMPLATES[:3], ids=[p.name for p in TEMPLATES[:3]])
def test_setup_that_is_not_xml_is_one_line_with_its_line(setup, tmp_path, capsys):
    """The reference's setup templates hold ``<workdir>`` placeholders: not XML, for OpenSim too."""
    command = {"ik": "ik", "id": "id", "jr": "jr", "so": "so"}[setup.name.split("_")[0]]
    assert main([command, "--setup", str(setup), "-o", str(tmp_path / "x")]) == 2
    line = _one_line(capsys)
    assert str(setup) in line and "line 5" in line and "malformed XML" in line


# ------------------------------------------------------------------- options with --setup
@needs_data
@pytest.mark.parametrize("args", [["ik", "--setup", str(TUT_IK), "--time-range", "0", "1"],
                                  ["id", "--setup", str(TUT_ID), "--lowpass", "6"],
                                  ["id", "--setup", str(TUT_ID), "model.osim"],
                                  ["scale", "--setup", str(GAIT_PIPE / "subject01_Setup_Scale.xml"),
                                   "-o", "x.osim"]])
def test_options_the_setup_gives_are_refused_not_ignored(args, capsys):
    assert main(args) == 2
    line = _one_line(capsys)
    assert "does not go with --setup" in line


def test_search_dir_without_setup_is_refused(tmp_path, capsys):
    assert main(["id", "m.osim", "q.mot", "--search-dir", str(tmp_path), "-o", str(tmp_path / "x.sto")]) == 2
    assert "--search-dir goes with --setup" in _one_line(capsys)


# ------------------------------------------------------ tutorial setups with --search-dir
@needs_data
def test_tutorial_setup_needs_search_dir_and_says_which_file(tmp_path, capsys):
    """The tutorial's ID setup names arm26.osim and the IK motion, kept one folder up and in a
    sibling folder: without --search-dir one line names the missing file."""
    assert main(["id", "--setup", str(TUT_ID), "-o", str(tmp_path / "id.sto")]) == 2
    line = _one_line(capsys)
    assert "<model_file>" in line and "arm26.osim" in line and "does not exist" in line


@needs_data
@needs_opensim
def test_tutorial_id_setup_with_search_dir_matches_opensim(tmp_path, capsys):
    from arthron.io.sto import read_sto
    out = tmp_path / "a" / "arm26_InverseDynamics.sto"
    assert main(["id", "--setup", str(TUT_ID), "--search-dir", str(TUT),
                 "--search-dir", str(TUT / "InverseKinematics"), "-o", str(out)]) == 0
    assert out.exists() and sorted(p.name for p in (tmp_path / "a").iterdir()) == [out.name]
    o = tmp_path / "o"
    o.mkdir()
    _opensim_run("InverseDynamicsTool", TUT_ID, o,
                 {"model_file": TUT / "arm26.osim",
                  "coordinates_file": TUT / "InverseKinematics" / "arm26_InverseKinematics.mot"})
    A, O = read_sto(out), read_sto(o / "arm26_InverseDynamics.sto")
    assert A.labels == O.labels and np.abs(A.time - O.time).max() < 1e-9
    scale = np.abs(O.data).max(axis=0)
    assert np.all(np.abs(A.data - O.data).max(axis=0) <= 1e-6 * np.maximum(scale, 1e-3))


@needs_data
@needs_opensim
def test_tutorial_ik_setup_with_o_writes_every_output_beside_it(tmp_path):
    """``ik --setup -o``: the marker errors go beside the motion, not into the setup's
    results_directory (here the setup's own folder in the shared data); the IK objective
    (summed squared marker error, each frame) is never above OpenSim 4.6's."""
    from arthron.io.sto import read_sto
    from arthron.errors import ArthronWarning
    out = tmp_path / "a" / "arm.mot"
    before = {p: p.stat().st_mtime_ns for p in TUT_IK.parent.iterdir()}
    # the trial beside this setup is 0.8 m off the model (OpenSim's errors are as large, silently)
    with pytest.warns(ArthronWarning, match="IK marker errors of metres"):
        assert main(["ik", "--setup", str(TUT_IK), "--search-dir", str(TUT), "-o", str(out)]) == 0
    assert {p: p.stat().st_mtime_ns for p in TUT_IK.parent.iterdir()} == before
    errs = tmp_path / "a" / "arm26_ik_marker_errors.sto"
    assert out.exists() and errs.exists()
    o = tmp_path / "o"
    o.mkdir()
    _opensim_run("InverseKinematicsTool", TUT_IK, o,
                 {"model_file": TUT / "arm26.osim", "marker_file": TUT_IK.parent / "arm26_elbow_flex.trc"},
                 output_motion_file=o / "arm.mot")
    A, O = read_sto(errs), read_sto(o / "arm26_ik_marker_errors.sto")
    fa = A.data[:, A.labels.index("total_squared_error")]
    fo = O.data[:, O.labels.index("total_squared_error")]
    assert len(fa) == len(fo) and np.all(fa <= fo * (1 + 1e-6) + 1e-12)


@needs_data
@needs_opensim
def test_convert_check_of_a_model_with_plugin_components_passes_and_says_why(tmp_path, capsys):
    """lenhart2015 holds two Smith2018ArticularContactForce (an opensim-jam plugin): OpenSim 4.6
    refuses the original as well as the converted file, so the check reports that instead of
    failing; with --exclude the rest loads in OpenSim."""
    from conftest import LENHART
    if not LENHART.exists():
        pytest.skip(f"{LENHART} is absent")
    assert main(["convert", str(LENHART), str(tmp_path / "l.osim"), "--check"]) == 0
    out = capsys.readouterr().out
    assert "plugin class Smith2018ArticularContactForce" in out and "check passed" in out
    # the next plugin class is named once the first is left out
    assert main(["convert", str(LENHART), str(tmp_path / "k.osim"), "--check",
                 "--exclude", "Smith2018ArticularContactForce"]) == 0
    out = capsys.readouterr().out
    assert "--exclude Smith2018ContactMesh" in out and "MISMATCH" not in out
    assert main(["convert", str(LENHART), str(tmp_path / "m.osim"), "--check",
                 "--exclude", "Smith2018ArticularContactForce", "--exclude", "Smith2018ContactMesh"]) == 0
    out = capsys.readouterr().out
    assert "OpenSim 4: loaded" in out and "check passed" in out


@needs_data
@needs_opensim
def test_analysis_names_name_the_files_as_in_opensim(tmp_path):
    """OpenSim names an analysis' files ``<tool name>_<analysis name>_...`` (the name attribute,
    even empty): the tutorial's StaticOptimization setup with its analyses renamed and a
    MuscleAnalysis and a JointReaction added; arthron writes the same names, equal numbers."""
    from lxml import etree
    from arthron.errors import ArthronWarning
    from arthron.io.sto import read_sto
    src = TUT / "StaticOptimization" / "arm26_Setup_StaticOptimization.xml"
    tree = etree.parse(str(src))
    root = tree.getroot()
    for tag, val in (("model_file", TUT / "arm26.osim"), ("final_time", "0.1"),
                     ("coordinates_file", TUT / "InverseKinematics" / "arm26_InverseKinematics.mot"),
                     ("results_directory", tmp_path / "o")):
        root.find(f".//{tag}").text = str(val)
    so = root.find(".//StaticOptimization")
    so.set("name", "so1")
    so.addnext(etree.fromstring(
        '<MuscleAnalysis name="ma"><on>true</on><muscle_list>all</muscle_list>'
        "<moment_arm_coordinate_list>r_elbow_flex</moment_arm_coordinate_list>"
        "<compute_moments>true</compute_moments></MuscleAnalysis>"))
    so.addnext(etree.fromstring('<JointReaction name=""><on>true</on><joint_names>r_elbow</joint_names>'
                                "</JointReaction>"))
    setup = tmp_path / "setup.xml"
    tree.write(str(setup))
    (tmp_path / "o").mkdir()
    _opensim_run("AnalyzeTool", setup, tmp_path / "o", {})
    with pytest.warns(ArthronWarning, match="without <forces_file>"):
        assert main(["analyze", "--setup", str(setup), "--output-dir", str(tmp_path / "a")]) == 0
    mine = sorted(p.name for p in (tmp_path / "a").iterdir())
    from arthron.solvers.muscle_fibers import MUSCLE_ANALYSIS_FILES   # (OpenSim's other MuscleAnalysis files)
    assert mine == sorted(["arm26__ReactionLoads.sto", "arm26_ma_Length.sto", "arm26_ma_MomentArm_r_elbow_flex.sto",
                           "arm26_so1_activation.sto", "arm26_so1_controls.xml", "arm26_so1_force.sto"]
                          + [f"arm26_ma_{k}.sto" for k in (*MUSCLE_ANALYSIS_FILES, "Moment_r_elbow_flex")])
    for name in mine:
        assert (tmp_path / "o" / name).exists(), name
    for name in ("arm26_ma_Length.sto", "arm26_ma_MomentArm_r_elbow_flex.sto"):
        A, O = read_sto(tmp_path / "a" / name), read_sto(tmp_path / "o" / name)
        assert A.labels == O.labels and np.abs(A.data - O.data).max() < 1e-7
