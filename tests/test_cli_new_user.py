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
def test_ligament_output_into_a_folder_that_does_not_exist(tmp_path, capsys):
    """`-o` into a missing folder creates it, as for every other command (it stopped with
    'output folder does not exist' after the computation)."""
    mesh = LENHART.parent / "Geometry" / "lenhart2015-R-tibia-bone.stl"
    out = tmp_path / "new" / "sub" / "acl.sto"
    assert main(["ligament", str(LENHART), "--ligament", "ACL", "--mesh", str(mesh),
                 "--triangles", "15", "-o", str(out)]) == 0
    assert out.is_file() and f"wrote {out}" in capsys.readouterr().out
    # a file where the folder goes: one line naming it, before any computation
    (tmp_path / "afile").write_text("x")
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
    with warnings.catch_warnings():
        warnings.simplefilter("error", ArthronWarning)
        assert main(["id", str(ARM26), str(motion), "--exclude", "muscles", "-o", str(tmp_path / "c.sto")]) == 0
        assert main(["id", str(ARM26), str(motion), "--exclude", "Muscles", "-o", str(tmp_path / "d.sto")]) == 0
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
