"""What a new user ran into on a fresh install, following the README and ``--help``: each test
failed before its fix."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from arthron import cli
from arthron.cli import main
from conftest import GAIT2354_SUBJECT, GAIT_PIPE, LENHART, needs_data, needs_opensim

SRC = Path(__file__).resolve().parents[1] / "src"


@needs_data
def test_ligament_output_into_a_folder_that_does_not_exist(tmp_path, capsys, monkeypatch):
    """`-o` into a missing folder creates it, as for every other command (it stopped with
    'output folder does not exist' after the computation)."""
    mesh = LENHART.parent / "Geometry" / "lenhart2015-R-tibia-bone.stl"
    out = tmp_path / "new" / "sub" / "acl.sto"
    assert main(["ligament", str(LENHART), "--ligament", "ACL", "--mesh", str(mesh),
                 "--triangles", "15", "-o", str(out)]) == 0
    assert out.is_file() and f"wrote {out}" in capsys.readouterr().out
    # a file where the folder goes: one line naming it, before any computation
    (tmp_path / "afile").write_text("x")
    from arthron.tools import ligament_tool

    def computed(*a, **k):
        raise AssertionError("the ligament was computed before the output was checked")
    monkeypatch.setattr(ligament_tool, "strands_from_model", computed)
    assert main(["ligament", str(LENHART), "--ligament", "ACL", "--triangles", "15",
                 "-o", str(tmp_path / "afile" / "acl.sto")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("arthron: error:") and "is a file" in err and err.count("\n") == 1


@pytest.mark.parametrize("command", ["id", "ik", "jr", "so", "paths", "scale", "ligament"])
def test_missing_arguments_are_a_usage_error_with_exit_2(command, capsys):
    """`arthron id` without its files says what to give, in one line, with exit status 2 (as
    argparse's usage errors and bad input); it ended with status 1."""
    assert main([command]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"arthron {command}") and "give" in err and err.count("\n") == 1


def test_a_mistyped_option_is_answered_with_the_closest_one(capsys, monkeypatch):
    monkeypatch.setattr(cli, "_PARSER", None)
    with pytest.raises(SystemExit) as e:
        main(["demo", "--stp", "5"])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert "unrecognized arguments: --stp 5 (did you mean --step? 'arthron demo --help' lists its options)" in err
    with pytest.raises(SystemExit):
        main(["id", "m.osim", "q.mot", "--external-laods=x.xml"])
    assert "did you mean --external-loads?" in capsys.readouterr().err
    with pytest.raises(SystemExit):                 # nothing close: no guess
        main(["id", "--no-such-option"])
    assert "did you mean" not in capsys.readouterr().err


def test_show_frames_counted_from_the_end_first(tmp_path, monkeypatch, capsys):
    """`--frames -1,0` (README: indices, negative from the end) was refused by argparse as an
    unknown option ('expected one argument')."""
    import arthron.render as render
    seen = {}

    def fake_show(model, output, **kw):
        seen.update(kw)
        return {"frames": [0, 1], "output": output, "time": [0.0, 1.0], "meshes": 0, "missing": []}

    monkeypatch.setattr(render, "show", fake_show)
    assert main(["show", "m.osim", "--motion", "q.mot", "--frames", "-1,0", "-o", str(tmp_path / "a.png")]) == 0
    assert list(seen["frames"]) == [-1, 0]
    assert main(["show", "m.osim", "--motion", "q.mot", "--times", "-.5", "-o", str(tmp_path / "a.png")]) == 0
    assert cli._negative_lists(["show", "--frames", "0,-1"]) == ["show", "--frames", "0,-1"]


@needs_data
def test_output_into_a_closed_pipe_ends_quietly():
    """`arthron info M.osim | head -1`: no BrokenPipeError traceback; status 141 (128 + SIGPIPE)."""
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONUNBUFFERED", None)     # buffered, as in a user's shell: the pipe error comes at the flush
    p = subprocess.Popen([sys.executable, "-m", "arthron", "info", str(GAIT2354_SUBJECT)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()                      # the reader is gone before the command prints
    err = p.stderr.read().decode()
    p.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert p.returncode == 141


def test_demo_arm_refuses_the_shoulder_subject_options(tmp_path, capsys):
    """`demo --arm --gender f` ignored --gender silently."""
    assert main(["demo", "--arm", "--gender", "f", "--step", "2", "-o", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("arthron: error: --gender, --step:") and not (tmp_path / "d").exists()


def test_a_subject_of_another_shoulder_width_is_not_the_generic_one():
    """`demo --shoulder-width 0.4` wrote generic.osim, generic_abduction.mot ... and printed
    '(generic)' for a subject that is not the generic one."""
    from arthron.solvers.shoulder_study import Subject
    from arthron.tools.shoulder_study_tool import _slug, default_model
    _, spec = default_model()
    assert _slug(Subject().check(), spec) == "generic"
    assert _slug(Subject(shoulder_width=0.4).check(), spec) == "m_1.86m_85.5kg_sw0.4m"


@needs_data
def test_parameter_study_names_the_model_subject(tmp_path, monkeypatch):
    """With --model-subject the first variant is that subject (it was announced as the paper's
    'generic male 1.86 m, 85.5 kg')."""
    from dataclasses import replace
    from arthron.solvers.shoulder_study import Subject
    from arthron.tools import shoulder_study_tool as tool
    calls = []

    class Stop(Exception):
        pass

    def fake_run(model, spec, s, **kw):
        calls.append(s)
        raise Stop

    said = []
    monkeypatch.setattr(tool, "run_abduction", fake_run)
    model, spec = tool.default_model()
    spec = replace(spec, generic=Subject(gender="male", height=1.80, mass=75.0))
    with pytest.raises(Stop):
        tool.run_study(tmp_path / "o", parameter_study=True, progress=said.append, model=model, spec=spec,
                       plot=False)
    assert said[-1] == "[1/9] generic male 1.80 m, 75 kg" and calls[0].mass == 75.0


def test_info_help_names_what_it_takes(capsys):
    with pytest.raises(SystemExit):
        main(["info", "--help"])
    out = capsys.readouterr().out
    assert "MODEL.osim" in out and "OpenSim model" in out


@needs_data
@needs_opensim
def test_convert_check_leaves_no_opensim_log_and_no_stray_line(tmp_path):
    """`convert --check` with OpenSim installed printed OpenSim's own '[error] ... not a
    registered Object' line and left an opensim.log in the user's folder."""
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "arthron", "convert", str(LENHART), "len.osim",
                        "--exclude", "Smith2018ArticularContactForce", "--check"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "[error]" not in r.stdout + r.stderr
    assert "needs plugin class Smith2018ContactMesh" in r.stdout       # arthron's own line says it
    assert sorted(x.name for x in tmp_path.iterdir()) == ["len.osim"]


@needs_data
def test_a_setup_naming_a_file_elsewhere_points_to_search_dir(tmp_path, capsys):
    """OpenSim's Gait2354 pipeline setups name the model a previous step wrote: the refusal now
    says where it looked and how to look elsewhere (it named the file only)."""
    out = tmp_path / "ik.mot"
    assert main(["ik", "--setup", str(GAIT_PIPE / "subject01_Setup_IK.xml"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "'subject01_simbody.osim' named in the setup does not exist (not beside the setup; --search-dir DIR" in err
    assert err.count("\n") == 1 and not out.exists()
    assert main(["ik", "--setup", str(GAIT_PIPE / "subject01_Setup_IK.xml"), "--search-dir", str(tmp_path),
                 "-o", str(out)]) == 2
    assert "(not beside the setup nor under the search folders)" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("arthron ")


@needs_data
def test_paths_with_an_unknown_muscle_is_one_line(tmp_path, capsys):
    """`arthron paths M Q --muscles NOPE` ended in a KeyError traceback."""
    from conftest import ARM26, ARM26_TUT
    motion = ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"
    assert main(["paths", str(ARM26), str(motion), "--muscles", "NOPE,BIClong", "-o", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("arthron: error:") and "arm26.osim" in err and "no force named 'NOPE'" in err
    assert "BIClong" in err and err.count("\n") == 1 and not (tmp_path / "p").exists()


@needs_data
def test_id_exclude_naming_nothing_warns(tmp_path):
    """`--exclude musles` (a typo) excluded nothing and the muscles pulled at their default
    states (776 N·m at arm26's shoulder instead of 2.7) without a word: it warns. `muscles` in
    lower case is OpenSim 4.6's keyword (DynamicsTool matches All, Actuators, Muscles in any
    case): the same result as `Muscles`, silently; a class name, which OpenSim does not read,
    excludes its forces with a warning that OpenSim's result differs (tests/test_forces_to_exclude.py)."""
    from conftest import ARM26, ARM26_TUT
    from arthron.errors import ArthronWarning
    from arthron.io.sto import read_sto
    motion = ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"
    with pytest.warns(ArthronWarning, match=r"forces_to_exclude names 'musles', which match no force"):
        assert main(["id", str(ARM26), str(motion), "--exclude", "musles", "-o", str(tmp_path / "a.sto")]) == 0
    with pytest.warns(ArthronWarning, match=r"'Thelen2003Muscle' excluded here but not by OpenSim 4.6"):
        assert main(["id", str(ARM26), str(motion), "--exclude", "Thelen2003Muscle", "-o", str(tmp_path / "b.sto")]) == 0
    import warnings
    # silent: warnings recorded, not turned into errors (the command sets ArthronWarning's filter
    # to "default" itself, which overrides an "error" filter set here)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert main(["id", str(ARM26), str(motion), "--exclude", "muscles", "-o", str(tmp_path / "c.sto")]) == 0
        assert main(["id", str(ARM26), str(motion), "--exclude", "Muscles", "-o", str(tmp_path / "d.sto")]) == 0
    assert not [str(w.message) for w in seen if issubclass(w.category, ArthronWarning)]
    a, b, c, d = (read_sto(tmp_path / f"{x}.sto").data for x in "abcd")
    assert np.array_equal(b, c) and np.array_equal(c, d) and np.abs(a - d).max() > 100.0


@needs_data
@pytest.mark.parametrize("option", ["--pcsa", "--emg-map"])
def test_so_text_files_that_are_not_text_are_one_line(tmp_path, capsys, option):
    """`so --pcsa FILE` / `--emg-map FILE` on a binary file or a folder ended in a
    UnicodeDecodeError / IsADirectoryError traceback."""
    from conftest import ARM26, ARM26_TUT
    motion = ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"
    binary = tmp_path / "b.dat"
    binary.write_bytes(bytes(range(256)) * 4)
    extra = ["--objective", "stress"] if option == "--pcsa" else ["--emg", str(motion)]
    for bad in (binary, tmp_path):
        assert main(["so", str(ARM26), str(motion), *extra, option, str(bad), "-o", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"arthron: error: {bad}") and err.count("\n") == 1, err


@needs_data
def test_output_folders_that_cannot_be_made_are_one_line(tmp_path, capsys):
    """`so -o FILE/x` and `ligament --demo -o FILE/x` (a file, /dev/null, a name too long where the
    folder goes) ended in NotADirectoryError / FileExistsError / OSError tracebacks."""
    from conftest import ARM26, ARM26_TUT
    motion = ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"
    (tmp_path / "afile").write_text("x")
    for out in (tmp_path / "afile" / "x", tmp_path / "afile", tmp_path / ("x" * 300)):
        assert main(["so", str(ARM26), str(motion), "-o", str(out)]) == 2
        assert main(["ligament", "--demo", "-o", str(out)]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 2 and all(e.startswith(f"arthron: error: {str(out)[:40]}") for e in err), err


def test_top_level_help_says_where_to_start(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "Start with 'arthron demo'" in out and "'arthron COMMAND --help'" in out


@pytest.mark.parametrize("command", [["demo"], ["demo", "--arm"], ["study"], ["ligament", "--demo"]])
def test_demo_into_an_existing_file_names_that_file(tmp_path, capsys, command):
    """`demo -o FILE` with FILE an existing file said 'FILE/summary.csv: ... is a file': a file
    the demo never writes. The error names FILE and says it is not a folder, in one line."""
    f = tmp_path / "out.txt"
    f.write_text("keep")
    assert main([*command, "-o", str(f)]) == 2
    err = capsys.readouterr().err
    assert err == f"arthron: error: {f}: is a file, not a folder: give a folder for the outputs\n", err
    assert f.read_text() == "keep"


def _no_solve(*a, **kw):
    raise AssertionError("solved before the outputs were checked")


@needs_data
def test_so_checks_its_outputs_before_solving(tmp_path, capsys, monkeypatch):
    """`so ... -o DIR`: a folder where an output goes, an output that is the motion read, or a
    file as DIR failed only after the solve (seconds on a big model): now before it, in one
    line; with --joint-reactions the files are written all or none."""
    import shutil
    from conftest import ARM26, ARM26_TUT
    from arthron.tools import load_sharing_tool
    motion = ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"
    out = tmp_path / "o"
    out.mkdir()
    (out / "arm26_JointReaction_ReactionLoads.sto").mkdir()       # a folder where an output goes
    as_input = tmp_path / "in"
    as_input.mkdir()
    mine = shutil.copy(motion, as_input / "arm26_StaticOptimization_force.sto")
    (tmp_path / "afile").write_text("x")
    with monkeypatch.context() as m:
        m.setattr(load_sharing_tool, "run_load_sharing", _no_solve)
        for args, says in [
                (["-o", str(out), "--joint-reactions"], "arm26_JointReaction_ReactionLoads.sto: the output is a folder"),
                ([str(mine), "-o", str(as_input)], "refusing to overwrite an input of this command"),
                (["-o", str(tmp_path / "afile")], "afile: is a file, not a folder"),
                (["-o", str(tmp_path / "afile" / "x")], "is a file, not a folder")]:
            argv = ["so", str(ARM26), *([str(motion)] if not args[0].endswith(".sto") else []), *args]
            assert main(argv) == 2, argv
            err = capsys.readouterr().err
            assert err.startswith("arthron: error:") and says in err and err.count("\n") == 1, err
    assert sorted(p.name for p in out.iterdir()) == ["arm26_JointReaction_ReactionLoads.sto"]  # nothing written
    assert main(["so", str(ARM26), str(motion), "-o", str(out / "new"), "--joint-reactions",
                 "--time-range", "0", "0.05"]) == 0
    assert sorted(p.name for p in (out / "new").iterdir()) == [
        "arm26_JointReaction_ReactionLoads.sto", "arm26_StaticOptimization_activation.sto",
        "arm26_StaticOptimization_controls.xml", "arm26_StaticOptimization_force.sto",
        "arm26_StaticOptimization_report.sto"]


@pytest.mark.parametrize("name", ["../x", "sub/x", "/tmp/x", "..", "a\\b"])
def test_so_name_is_a_name_not_a_path(tmp_path, capsys, monkeypatch, name):
    """`so --name ../x -o DIR` wrote DIR/../x_StaticOptimization_*.sto, outside DIR."""
    from arthron.tools import load_sharing_tool
    monkeypatch.setattr(load_sharing_tool, "run_load_sharing", _no_solve)
    assert main(["so", "m.osim", "q.mot", "--name", name, "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"arthron: error: --name {name!r}: a name for the output files, not a path")
    assert err.count("\n") == 1 and list(tmp_path.iterdir()) == []


@needs_data
def test_paths_of_a_model_named_like_a_path_writes_nothing_outside(tmp_path, capsys):
    """`paths M -o DIR` names its files after the model: a model named '../evil' (which OpenSim
    4.6 refuses: 'contains invalid characters') wrote DIR/../evil_MuscleAnalysis_*.sto."""
    from conftest import ARM26, ARM26_TUT
    motion = ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"
    text = ARM26.read_text()
    assert text.count('<Model name="arm26">') == 1
    model = tmp_path / "m.osim"
    model.write_text(text.replace('<Model name="arm26">', '<Model name="../evil">'))
    assert main(["paths", str(model), str(motion), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"arthron: error: {model}: model name '../evil': a name for the output files")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.osim"]


_GROUND_IN_ITS_PROPERTY = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40600"><Model name="tiny">
 <ground><Ground name="ground"><components>
  <PhysicalOffsetFrame name="gframe"><socket_parent>..</socket_parent>
   <translation>0.1 0.2 -0.05</translation><orientation>0.2 -0.1 0.3</orientation></PhysicalOffsetFrame>
 </components></Ground></ground>
 <BodySet name="bodyset"><objects>
  <Body name="b"><mass>1</mass><mass_center>0 -0.5 0</mass_center><inertia>0.1 0.1 0.1 0 0 0</inertia></Body>
  <Body name="c"><mass>1</mass><mass_center>0 -0.5 0</mass_center><inertia>0.1 0.1 0.1 0 0 0</inertia></Body>
 </objects></BodySet>
 <JointSet name="jointset"><objects>
  <PinJoint name="j"><socket_parent_frame>gframe_offset</socket_parent_frame><socket_child_frame>b_offset</socket_child_frame>
   <coordinates><Coordinate name="q1"/></coordinates><frames>
    <PhysicalOffsetFrame name="gframe_offset"><socket_parent>/ground/gframe</socket_parent>
     <translation>0 0 0</translation><orientation>0 0 0.3</orientation></PhysicalOffsetFrame>
    <PhysicalOffsetFrame name="b_offset"><socket_parent>/bodyset/b</socket_parent>
     <translation>0 0.5 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame></frames></PinJoint>
  <PinJoint name="k"><socket_parent_frame>/bodyset/b</socket_parent_frame><socket_child_frame>/bodyset/c</socket_child_frame>
   <coordinates><Coordinate name="q2"/></coordinates></PinJoint>
 </objects></JointSet>
</Model></OpenSimDocument>"""


@needs_opensim
def test_ground_written_inside_its_property_element_is_read_as_opensim_does(tmp_path, capsys):
    """`<ground><Ground name="ground">...</Ground></ground>` (OpenSim 4.6 reads it) was refused:
    "frame '/ground/gframe' does not exist in the model". Body poses equal OpenSim's."""
    import numpy as np
    import oracle
    from arthron.io.osim import read_osim, write_osim
    from arthron.multibody.kinematics import compile_model, forward_kinematics
    path = tmp_path / "tiny.osim"
    path.write_text(_GROUND_IN_ITS_PROPERTY)
    assert main(["info", str(path)]) == 0 and "bodies     2" in capsys.readouterr().out
    model = read_osim(path)
    assert "gframe" in str(model.frames) and not model.verbatim
    write_osim(tmp_path / "again.osim", model)           # written as OpenSim writes it: <Ground> in <Model>
    tree = compile_model(model)
    m, s = oracle.load(path)
    for q in np.random.default_rng(1).uniform(-1.5, 1.5, (4, tree.nq)):
        kin = oracle.assert_poses_equal(m, s, tree, q)
    again = compile_model(read_osim(tmp_path / "again.osim"))
    np.testing.assert_allclose(forward_kinematics(again, q[None]).o, kin.o, atol=1e-15)


def test_readme_names_the_module_that_holds_a_class():
    """The README said `MultivariatePolynomialFunction` is in `arthron.models.functions`: it is
    in arthron.models.multivariate (functions cannot re-export it: multivariate imports
    functions' Function). Every "`Name` in `arthron.module`" of the README imports."""
    import importlib
    import re
    text = (SRC.parent / "README.md").read_text(encoding="utf-8")
    named = re.findall(r"`([A-Za-z_]\w*)` (?:is )?in\s+`(arthron(?:\.\w+)+)`", text)
    assert ("MultivariatePolynomialFunction", "arthron.models.multivariate") in named
    for name, module in named:
        assert hasattr(importlib.import_module(module), name), f"{name} is not in {module}"


def test_study_of_a_model_named_like_a_path_is_refused_before_solving(tmp_path, monkeypatch):
    """`study --model M` names its files after the model: a model named '../x' wrote
    OUT/../x_*.sto after the solve. Refused before it, naming the model."""
    from dataclasses import replace
    from arthron.errors import ModelFileError
    from arthron.tools import shoulder_study_tool as tool
    monkeypatch.setattr(tool, "run_abduction", _no_solve)
    model, spec = tool.default_model()
    model.name, model.source = "../x", "m.osim"
    with pytest.raises(ModelFileError, match=r"^m.osim: model name '../x': a name for the output files"):
        tool.run_study(tmp_path / "o", model=model, spec=replace(spec, builtin=False), plot=False)


@needs_data
def test_so_setup_checks_its_outputs_before_solving(tmp_path, capsys, monkeypatch):
    """`so --setup S -o DIR` (and the setup's results_directory): a file as the folder or a
    folder where an output goes failed only after the solve."""
    from conftest import ARM26_TUT, REF
    from arthron.tools import static_optimization_tool
    so_ref = REF / "task1_arm26"
    raw = (so_ref / "setups" / "so_setup_physiological.xml").read_text()
    raw = (raw.replace("<workdir>/arm26/results/SO_phys", str(tmp_path / "res"))
              .replace("<workdir>/arm26/results/IK", str(so_ref / "IK"))
              .replace("<workdir>/arm26", str(ARM26_TUT / "InverseKinematics")))
    setup = tmp_path / "so.xml"
    setup.write_text(raw)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "res" / "arm26_StaticOptimization_force.sto").mkdir(parents=True)
    monkeypatch.setattr(static_optimization_tool, "static_optimization_of_setup", _no_solve)
    for extra, says in [(["-o", str(tmp_path / "afile")], "afile: is a file, not a folder"),
                        ([], "arm26_StaticOptimization_force.sto: the output is a folder")]:
        assert main(["so", "--setup", str(setup), *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("arthron: error:") and says in err and err.count("\n") == 1, err


def test_an_output_folder_without_write_permission_is_refused_before_solving(tmp_path, capsys, monkeypatch):
    """`so -o DIR` in a folder this process may not write in failed after the solve."""
    import os
    from arthron.io import files
    from arthron.tools import load_sharing_tool
    monkeypatch.setattr(load_sharing_tool, "run_load_sharing", _no_solve)
    real = os.access
    # as root every folder is writable: the permission bits of tmp_path as an ordinary user sees them
    monkeypatch.setattr(files.os, "access", lambda p, mode, **kw: False if Path(p) == tmp_path else real(p, mode, **kw))
    for out in (tmp_path, tmp_path / "new" / "o"):
        assert main(["so", "m.osim", "q.mot", "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert err == f"arthron: error: {out}: no permission to write in '{tmp_path}'\n", err
