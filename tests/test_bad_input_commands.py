"""Bad input to the commands added in this session (batch, show, plot, study, demo, c3d, scale)
as a careless user gives it: each case runs through ``arthron.cli.main`` in the process and must
end with exit status 2 (1 for a batch whose trial failed), one ``arthron: error:`` line naming
the file or the option and what is wrong, no traceback, and nothing written or left behind
(the folder holds exactly the inputs afterwards). Inputs are tiny files made in ``tmp_path`` and
real files read in place from ../shared/data; every case fails before any long computation."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ARM26, DATA, HAVE_DATA
from arthron.cli import main

WALKING2 = DATA / "opensim-core" / "OpenSim" / "Tests" / "shared" / "walking2.c3d"
_HDR = "name\nversion=1\nnRows={n}\nnColumns={c}\ninDegrees=yes\nendheader\n"


def _sto(labels, rows):
    return _HDR.format(n=len(rows), c=len(labels)) + "\t".join(labels) + "\n" + \
        "".join("\t".join(str(v) for v in r) + "\n" for r in rows)


def _trc(rows):
    """arm26's three markers; ``rows`` of 9 numbers (NaN: an empty cell), metres."""
    head = ("PathFileType\t4\t(X/Y/Z)\tt.trc\nDataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\t"
            "OrigDataRate\tOrigDataStartFrame\tOrigNumFrames\n"
            f"100\t100\t{len(rows)}\t3\tm\t100\t1\t{len(rows)}\n"
            "Frame#\tTime\tr_acromion\t\t\tr_humerus_epicondyle\t\t\tr_radius_styloid\t\t\n"
            "\t\tX1\tY1\tZ1\tX2\tY2\tZ2\tX3\tY3\tZ3\n")
    return head + "".join(f"{i + 1}\t{i / 100:.2f}\t" + "\t".join("" if v != v else f"{v:.5f}" for v in r) + "\n"
                          for i, r in enumerate(rows))


_GOOD = [-0.013, 0.39, 0.16, 0.005, 0.1, 0.17, 0.05, -0.13, 0.3]
_NAN = [float("nan")] * 9


def _noplat_c3d(path):
    """A C3D with two markers and no force platform, written by ezc3d in a child process (its
    writer registers SWIG std::vector types that then break OpenSim's, as in test_c3d.py)."""
    import subprocess
    import sys
    code = ("import sys, numpy as np, ezc3d\nc = ezc3d.c3d()\n"
            "c['parameters']['POINT']['RATE']['value'] = [100]\n"
            "c['parameters']['POINT']['LABELS']['value'] = ('A', 'B')\n"
            "c['parameters']['POINT']['UNITS']['value'] = ['mm']\n"
            "p = np.ones((4, 2, 5)); p[:3] *= 100.0\nc['data']['points'] = p\nc.write(sys.argv[1])\n")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)


_STUDY = """[study]
steps = ["scale", "ik"]
[[subjects]]
name = "s1"
model = "arm26.osim"
mass = {mass}
height = {height}
{trials}"""
_TRIAL = '  [[subjects.trials]]\n  name = "{0}"\n  markers = "{0}.trc"\n'

#: name -> (files to make: {name: text | callable(path)}, argv, expected status, words of the error line)
CASES = {
    # arthron plot
    "plot-empty-columns": ({"m.mot": _sto(["time", "a"], [[0, 1], [1, 2]])},
                           ["plot", "m.mot", "--columns", ",", "-o", "p.png"], 2, ["--columns"]),
    "plot-duplicate-column": ({"m.mot": _sto(["time", "a", "a"], [[0, 1, 2], [1, 3, 4]])},
                              ["plot", "m.mot", "--columns", "a", "-o", "p.png"], 2, ["m.mot", "'a'", "2 times"]),
    "plot-not-png": ({"m.mot": _sto(["time", "a"], [[0, 1], [1, 2]])},
                     ["plot", "m.mot", "--columns", "a", "-o", "p.pdf"], 2, ["p.pdf", ".png"]),
    "plot-non-numeric": ({"m.mot": _sto(["time", "a"], [[0, "foo"], [1, 2]])},
                         ["plot", "m.mot", "--columns", "a", "-o", "p.png"], 2, ["m.mot", "line 8", "foo"]),
    "plot-no-rows": ({"m.sto": _sto(["time", "a"], [])},
                     ["plot", "m.sto", "--columns", "a", "-o", "p.png"], 2, ["m.sto", "no rows"]),
    "plot-glob-matches-nothing": ({"m.mot": _sto(["time", "a"], [[0, 1], [1, 2]])},
                                  ["plot", "m.mot", "--columns", "zz*", "-o", "p.png"], 2, ["m.mot", "zz*"]),
    "plot-onto-its-input": ({"m.mot": _sto(["time", "a"], [[0, 1], [1, 2]])},
                            ["plot", "m.mot", "--columns", "a", "-o", "m.mot"], 2, ["m.mot", "input"]),
    "plot-model-not-xml": ({"m.mot": _sto(["time", "a"], [[0, 1], [1, 2]]), "bad.osim": "not xml\n"},
                           ["plot", "m.mot", "--columns", "a", "--model", "bad.osim", "-o", "p.png"], 2,
                           ["bad.osim", "line 1"]),
    # arthron show
    "show-osim-not-xml": ({"bad.osim": "not xml\n"}, ["show", "bad.osim", "-o", "s.png"], 2,
                          ["bad.osim", "line 1", "XML"]),
    "show-motion-matches-no-coordinate": ({"m.mot": _sto(["time", "zzz"], [[0, 1], [1, 2]])},
                                          ["show", str(ARM26), "--motion", "m.mot", "-o", "s.png"], 2,
                                          ["m.mot", "no column", "arm26"]),
    "show-frame-out-of-range": ({"m.mot": _sto(["time", "r_shoulder_elev", "r_elbow_flex"], [[0, 10, 20]])},
                                ["show", str(ARM26), "--motion", "m.mot", "--frames", "5", "-o", "s.png"], 2,
                                ["--frames", "5", "1 frames"]),
    "show-time-out-of-range": ({"m.mot": _sto(["time", "r_shoulder_elev", "r_elbow_flex"], [[0, 10, 20]])},
                               ["show", str(ARM26), "--motion", "m.mot", "--times", "99", "-o", "s.png"], 2,
                               ["--times", "99"]),
    "show-slice-step-0": ({"m.mot": _sto(["time", "r_shoulder_elev", "r_elbow_flex"], [[0, 10, 20], [1, 1, 2]])},
                          ["show", str(ARM26), "--motion", "m.mot", "--frames", "0:2:0", "-o", "s.png"], 2,
                          ["--frames", "step cannot be 0"]),
    "show-size-out-of-memory": ({}, ["show", str(ARM26), "--size", "100000x100000", "-o", "s.png"], 2,
                                ["--size", "8192"]),
    "show-size-not-wxh": ({}, ["show", str(ARM26), "--size", "abc", "-o", "s.png"], 2, ["--size", "WIDTHxHEIGHT"]),
    "show-geometry-folder-missing": ({}, ["show", str(ARM26), "--geometry", "nowhere", "-o", "s.png"], 2,
                                     ["--geometry", "nowhere", "no such folder"]),
    "show-nan-coordinate": ({"m.mot": _sto(["time", "r_shoulder_elev", "r_elbow_flex"], [[0, "nan", 20], [1, 1, 2]])},
                            ["show", str(ARM26), "--motion", "m.mot", "-o", "s.png"], 2, ["m.mot", "r_shoulder_elev"]),
    "show-model-without-bodies": ({"e.osim": '<?xml version="1.0"?>\n<OpenSimDocument Version="40000">'
                                             '<Model name="x"></Model></OpenSimDocument>\n'},
                                  ["show", "e.osim", "-o", "s.png"], 2, ["e.osim", "no body"]),
    "show-output-is-a-folder": ({"d/x": ""}, ["show", str(ARM26), "-o", "d"], 2, ["folder"]),
    "show-output-not-a-picture": ({}, ["show", str(ARM26), "-o", "s.txt"], 2, ["s.txt", ".png"]),
    "show-gif-to-a-png-name": ({}, ["show", str(ARM26), "--gif", "-o", "s.png"], 2, ["s.png", "--gif", ".gif file"]),
    # arthron study / demo: the subject and the output folder are checked before the computation
    "study-mass-negative": ({}, ["study", "--mass", "-5", "-o", "out"], 2, ["mass", "-5"]),
    "study-height-5m": ({}, ["study", "--height", "5", "-o", "out"], 2, ["height", "5"]),
    "study-step-0": ({}, ["study", "--step", "0", "-o", "out"], 2, ["--step", "0"]),
    "study-rc-pcsa-factor-0": ({}, ["study", "--rc-pcsa-factor", "0", "-o", "out"], 2, ["PCSA factor"]),
    "study-inclination-nan": ({}, ["study", "--inclination", "nan", "-o", "out"], 2, ["inclination", "nan"]),
    "study-version-89": ({}, ["study", "--version", "89", "-o", "out"], 2, ["version", "89"]),
    "study-humeral-rotation-100": ({}, ["study", "--humeral-rotation", "100", "-o", "out"], 2,
                                   ["--humeral-rotation", "100"]),
    "demo-humeral-rotation-nan": ({}, ["demo", "--humeral-rotation", "nan", "-o", "out"], 2,
                                  ["--humeral-rotation", "nan"]),
    "study-elbow-flexion-150": ({}, ["study", "--elbow-flexion", "150", "-o", "out"], 2,
                                ["--elbow-flexion", "150"]),
    "study-output-is-a-file": ({"f.txt": "x"}, ["study", "-o", "f.txt"], 2, ["f.txt", "is a file"]),
    "demo-output-is-a-file": ({"f.txt": "x"}, ["demo", "-o", "f.txt"], 2, ["f.txt", "is a file"]),
    "demo-output-under-a-file": ({"f.txt": "x"}, ["demo", "-o", "f.txt/sub"], 2, ["f.txt", "is a file"]),
    "demo-arm-output-is-a-file": ({"f.txt": "x"}, ["demo", "--arm", "-o", "f.txt"], 2, ["f.txt", "is a file"]),
    # arthron c3d / id with a C3D
    "c3d-bodies-without-platforms": ({"np.c3d": _noplat_c3d}, ["c3d", "np.c3d", "--bodies", "calcn_r", "-o", "o"],
                                     2, ["np.c3d", "no force platform"]),
    "c3d-bodies-count": ({}, ["c3d", str(WALKING2), "--bodies", "a,b,c", "-o", "o"], 2,
                         ["walking2.c3d", "3 bodies", "2 force platforms"]),
    "c3d-not-a-c3d": ({"g.c3d": "garbage" * 40}, ["c3d", "g.c3d", "-o", "o"], 2, ["g.c3d", "C3D"]),
    "id-grf-from-c3d-without-platforms": ({"np.c3d": _noplat_c3d, "m.mot": _sto(
        ["time", "r_shoulder_elev", "r_elbow_flex"], [[0, 10, 20], [0.01, 11, 21]])},
        ["id", str(ARM26), "m.mot", "--external-loads", "np.c3d", "--bodies", "r_humerus", "-o", "id.sto"],
        2, ["np.c3d", "no force platform"]),
    # arthron scale (anthropometric): units slips are refused
    "scale-height-in-mm": ({}, ["scale", str(ARM26), "--mass", "70", "--height", "1750", "-o", "s.osim"], 2,
                           ["height", "1750"]),
    "scale-mass-in-g": ({}, ["scale", str(ARM26), "--mass", "70000", "--height", "1.75", "-o", "s.osim"], 2,
                        ["mass", "70000"]),
    # arthron ik on a trial whose markers are all empty
    "ik-nan-only-markers": ({"nan.trc": _trc([_NAN] * 3)}, ["ik", str(ARM26), "nan.trc", "-o", "ik.mot"], 2,
                            ["nan.trc", "no marker data"]),
    # arthron batch
    "batch-wrong-types": ({"s.toml": '[study]\noutput = 5\n[defaults]\nlowpass_hz = "six"\n[[subjects]]\n'
                                     'name = "s 1"\nmass = "heavy"\n'},
                          ["batch", "s.toml"], 2, ["s.toml", "errors in the study file"]),
    "batch-height-in-mm": ({"s.toml": _STUDY.format(mass=70, height=1750, trials=_TRIAL.format("t")),
                            "t.trc": _trc([_GOOD]), "arm26.osim": lambda p: p.write_bytes(ARM26.read_bytes())},
                           ["batch", "s.toml", "-j", "1"], 2,
                           ["s.toml", "1 error in the study file", "subjects[0] ('s1').height", "1750"]),
    "batch-output-is-a-file": ({"s.toml": _STUDY.format(mass=70, height=1.7, trials=_TRIAL.format("t")),
                                "t.trc": _trc([_GOOD]), "f.txt": "x"},
                               ["batch", "s.toml", "-j", "1", "-o", "f.txt"], 2, ["f.txt", "is a file"]),
    "batch-output-is-its-study": ({"s.toml": _STUDY.format(mass=70, height=1.7, trials=_TRIAL.format("t")),
                                   "t.trc": _trc([_GOOD])},
                                  ["batch", "s.toml", "-j", "1", "-o", "s.toml"], 2, ["s.toml", "is a file"]),
    "batch-scheduler-not-an-address": ({"s.toml": _STUDY.format(mass=70, height=1.7, trials=_TRIAL.format("t")),
                                        "t.trc": _trc([_GOOD])},
                                       ["batch", "s.toml", "--scheduler", "garbage"], 2, ["scheduler"]),
    "batch-jobs-0": ({"s.toml": _STUDY.format(mass=70, height=1.7, trials=_TRIAL.format("t")),
                      "t.trc": _trc([_GOOD])}, ["batch", "s.toml", "-j", "0"], 2, ["jobs", "0"]),
}


def _make(folder: Path, files: dict):
    for name, content in files.items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        content(p) if callable(content) else p.write_text(content)


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.stat().st_size if p.is_file() else None) for p in folder.rglob("*")}


@pytest.mark.skipif(not HAVE_DATA, reason="../shared/data is absent")
@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_one_line_error_and_nothing_written(case, tmp_path, monkeypatch, capsys):
    files, argv, status, words = CASES[case]
    monkeypatch.chdir(tmp_path)
    _make(tmp_path, files)
    before = _tree(tmp_path)
    assert main(argv) == status
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [ln for ln in err.splitlines() if ln.startswith("arthron: error: ")]
    assert len(errors) == 1, err
    # a study file's structural errors: the error line, then one indented line per key at fault
    message = err[err.index(errors[0]):]
    assert all(ln.startswith("  ") for ln in message.splitlines()[1:]), message
    for w in words:
        assert w in message, (w, message)
    assert _tree(tmp_path) == before         # nothing written, no folder made, no temporary left


@pytest.mark.skipif(not HAVE_DATA, reason="../shared/data is absent")
def test_batch_trial_with_empty_or_single_frame_markers(tmp_path, monkeypatch, capsys):
    """A trial whose markers are all empty fails alone (named in the summary, exit status 1);
    a single-frame trial and the good one complete."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "arm26.osim").write_bytes(ARM26.read_bytes())
    _make(tmp_path, {"s.toml": _STUDY.format(mass=70, height=1.7, trials="".join(
                         _TRIAL.format(n) for n in ("single", "nan", "good", "dir"))),
                     "dir.trc/x": "",
                     "single.trc": _trc([_GOOD]), "nan.trc": _trc([_NAN] * 3),
                     "good.trc": _trc([[v + 0.001 * i for v in _GOOD] for i in range(4)])})
    assert main(["batch", "s.toml", "-j", "1"]) == 1
    out = capsys.readouterr().out
    assert "s1/nan: failed at ik: " in out and "nan.trc" in out and "no marker data" in out
    assert "s1/single: ok" in out and "s1/good: ok" in out
    assert "s1/dir: failed at inputs: " in out and "'dir.trc' is a folder, not a file" in out
    assert not (tmp_path / "s_results" / "s1" / "nan").exists() or \
        not any((tmp_path / "s_results" / "s1" / "nan").glob("*.mot"))


def test_ctrl_c_is_one_line_and_status_130(monkeypatch, capsys):
    """Ctrl-C (KeyboardInterrupt) during a command: one line, exit status 130, no traceback."""
    import arthron.cli as cli
    import arthron.cli_study as cli_study

    def interrupted(a):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli_study, "cmd_study", interrupted)
    monkeypatch.setattr(cli, "_PARSER", None)       # the cached parser holds the unpatched handler
    assert main(["study", "-o", "never"]) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [err.strip()] and err.startswith("arthron: interrupted")
