"""Issue 11 findings 2, 3, 8, 9, 10: where every command writes, that no command writes onto
one of its inputs by any route, that outputs are whole or absent (disk full, killed runs,
several files), with the usual permissions, and that XML attacks stay harmless.

Every test works on copies of real files from ../shared/data in a temporary folder."""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arthron.cli import main
from arthron.errors import DataFileError
from arthron.io import files as files_mod
from arthron.io.sto import read_sto
from conftest import ARM26, ARM26_TUT, GAIT_PIPE, MODELS, ROOT, needs_data

ARM_TRC = ARM26_TUT / "InverseKinematics" / "arm26_elbow_flex.trc"
ARM_IK = ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"
GAIT_GENERIC = MODELS / "Models" / "Gait2354_Simbody" / "gait2354_simbody.osim"


def _digest(folder: Path) -> dict:
    """name -> sha256 of every file under ``folder`` (the state a refused command must keep)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def arm(tmp_path):
    """arm26 model, its elbow-flexion trial and IK motion, copied into tmp_path."""
    for src in (ARM26, ARM_TRC, ARM_IK):
        shutil.copy(src, tmp_path / src.name)
    return tmp_path


def _refused(capsys, argv, folder, match="input"):
    before = _digest(folder)
    dirs = sorted(p for p in folder.rglob("*") if p.is_dir())
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("arthron: error:") and err.count("\n") == 1 and match in err, err
    assert _digest(folder) == before          # nothing overwritten, nothing new
    assert sorted(p for p in folder.rglob("*") if p.is_dir()) == dirs
    return err


# ----------------------------------------------------------------------------- finding 8
@needs_data
def test_no_command_writes_onto_its_inputs(arm, capsys, monkeypatch):
    """Every route of issue 11 finding 8, each refused with one line, exit 2, and no file
    changed or created (no folder either)."""
    monkeypatch.chdir(arm)
    m, mot, trc = "arm26.osim", "arm26_InverseKinematics.mot", "arm26_elbow_flex.trc"
    routes = [
        ["id", m, mot, "-o", mot], ["id", m, mot, "-o", m],
        ["id", m, mot, "-o", f"./sub/../{mot}"],                 # another spelling, no sub/ made
        ["ik", m, trc, "-o", trc], ["ik", m, trc, "-o", m],
        ["jr", m, mot, "-o", mot], ["jr", m, mot, "-o", m],
        ["scale", m, "--mass", "70", "--height", "1.8", "-o", m],
        ["convert", m, f"nonexistent/../{m}"], ["convert", m, m],
    ]
    for argv in routes:
        _refused(capsys, argv, arm)
    assert not (arm / "nonexistent").exists() and not (arm / "sub").exists()
    # a hard link and a symbolic link to the input are the same file
    os.link(arm / mot, arm / "hard.mot")
    os.symlink(arm / mot, arm / "soft.mot")
    for out in ("hard.mot", "soft.mot"):
        _refused(capsys, ["id", m, mot, "-o", out], arm)


def _ik_setup(folder: Path, output_motion: str, results: str = "results") -> Path:
    s = folder / "ik_setup.xml"
    s.write_text(f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><InverseKinematicsTool name="arm26">
  <results_directory>{results}</results_directory>
  <model_file>arm26.osim</model_file>
  <marker_file>arm26_elbow_flex.trc</marker_file>
  <time_range>0 0.1</time_range>
  <output_motion_file>{output_motion}</output_motion_file>
</InverseKinematicsTool></OpenSimDocument>""")
    return s


def _id_setup(folder: Path, output: str, results: str = "results") -> Path:
    s = folder / "id_setup.xml"
    s.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000"><InverseDynamicsTool name="arm">
  <results_directory>{results}</results_directory>
  <model_file>arm26.osim</model_file>
  <coordinates_file>arm26_InverseKinematics.mot</coordinates_file>
  <output_gen_force_file>{output}</output_gen_force_file>
</InverseDynamicsTool></OpenSimDocument>""")
    return s


def _jr_setup(folder: Path, name: str = "arm", results: str = "results") -> Path:
    s = folder / "jr_setup.xml"
    s.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000"><AnalyzeTool name="{name}">
  <model_file>arm26.osim</model_file>
  <results_directory>{results}</results_directory>
  <coordinates_file>arm26_InverseKinematics.mot</coordinates_file>
  <AnalysisSet name="Analyses"><objects>
    <JointReaction name="JointReaction"><on>true</on><step_interval>3</step_interval>
      <joint_names>r_elbow</joint_names></JointReaction>
  </objects><groups /></AnalysisSet>
</AnalyzeTool></OpenSimDocument>""")
    return s


@needs_data
def test_setup_outputs_pointing_at_inputs_are_refused(arm, capsys):
    """Setup files whose output names point at the model, the trial or the setup itself."""
    for out in ("../arm26.osim", "../arm26_InverseKinematics.mot", "../id_setup.xml"):
        _refused(capsys, ["id", "--setup", str(_id_setup(arm, out))], arm)
    for out in ("arm26.osim", "arm26_elbow_flex.trc", "ik_setup.xml"):
        _refused(capsys, ["ik", "--setup", str(_ik_setup(arm, out))], arm)
    # results_directory + the tool's name lands on the coordinates file
    shutil.copy(arm / "arm26_InverseKinematics.mot", arm / "x_JointReaction_ReactionLoads.sto")
    s = _jr_setup(arm, name="x", results=".")
    s.write_text(s.read_text().replace("arm26_InverseKinematics.mot", "x_JointReaction_ReactionLoads.sto"))
    _refused(capsys, ["jr", "--setup", str(s)], arm)
    _refused(capsys, ["jr", "--setup", str(_jr_setup(arm)), "-o", str(arm / "jr_setup.xml")], arm)


@needs_data
def test_scale_setup_outputs_pointing_at_inputs_are_refused(tmp_path, capsys):
    """ScaleTool: the scaled model onto the generic model, the scale set onto the marker set,
    the static pose onto the static trial: each refused before anything is written."""
    for src in (GAIT_PIPE / "subject01_Setup_Scale.xml", GAIT_GENERIC,
                GAIT_PIPE / "gait2354_Scale_MarkerSet.xml", GAIT_PIPE / "subject01_static.trc"):
        shutil.copy(src, tmp_path / src.name)
    setup = tmp_path / "subject01_Setup_Scale.xml"
    text = setup.read_text()
    for old, new in [("<output_model_file> subject01_scaledOnly.osim", "<output_model_file> gait2354_simbody.osim"),
                     ("<output_scale_file> subject01_scaleSet_applied.xml",
                      "<output_scale_file> gait2354_Scale_MarkerSet.xml"),
                     ("<output_motion_file> subject01_static_output.mot",
                      "<output_motion_file> subject01_static.trc")]:
        assert old in text
        setup.write_text(text.replace(old, new))
        _refused(capsys, ["scale", "--setup", str(setup)], tmp_path)
    setup.write_text(text)


def test_output_check_unit():
    """check_output on its own: folders, devices, over-long names, files where a folder is needed."""
    with pytest.raises(DataFileError, match="folder"):
        files_mod.check_output("/tmp")
    with pytest.raises(DataFileError, match="not a regular file"):
        files_mod.check_output("/dev/null")
    with pytest.raises(DataFileError, match="too long"):
        files_mod.check_output("/tmp/" + "x" * 300 + ".sto")
    with pytest.raises(DataFileError, match="is a file"):
        files_mod.check_output(__file__ + "/out.sto")


# ----------------------------------------------------------------------------- findings 2, 3
@needs_data
def test_setup_commands_write_what_opensim_writes_where_it_writes_it(arm, capsys):
    """``id --setup`` → <results_directory>/<output_gen_force_file>; ``ik --setup`` →
    output_motion_file and <results_directory>/<name>_ik_marker_errors.sto; ``jr --setup`` →
    <results_directory>/<name>_JointReaction_ReactionLoads.sto with every step_interval-th
    frame; the results directory is created (nested), and every path written is printed."""
    assert main(["id", "--setup", str(_id_setup(arm, "arm_id.sto", "res/id"))]) == 0
    out = capsys.readouterr().out
    assert (arm / "res" / "id" / "arm_id.sto").is_file() and str(arm / "res" / "id" / "arm_id.sto") in out
    assert main(["ik", "--setup", str(_ik_setup(arm, "res/ik/arm.mot", "res/ik"))]) == 0
    out = capsys.readouterr().out
    for p in (arm / "res" / "ik" / "arm.mot", arm / "res" / "ik" / "arm26_ik_marker_errors.sto"):
        assert p.is_file() and f"wrote {p}" in out, out
    assert main(["jr", "--setup", str(_jr_setup(arm, results="res/jr"))]) == 0
    out = capsys.readouterr().out
    jr = arm / "res" / "jr" / "arm_JointReaction_ReactionLoads.sto"
    assert jr.is_file() and str(jr) in out
    n = len(read_sto(arm / "arm26_InverseKinematics.mot").time)
    assert len(read_sto(jr).time) == len(range(0, n, 3)) + ((n - 1) % 3 != 0)


@needs_data
def test_o_into_a_missing_folder_creates_exactly_that_folder(arm, capsys, monkeypatch):
    monkeypatch.chdir(arm)
    m, mot, trc = "arm26.osim", "arm26_InverseKinematics.mot", "arm26_elbow_flex.trc"
    for argv, out in [(["id", m, mot, "-o", "a/b/id.sto"], "a/b/id.sto"),
                      (["jr", m, mot, "--joints", "r_elbow", "-o", "c/jr.sto"], "c/jr.sto"),
                      (["ik", m, trc, "--time-range", "0", "0.05", "-o", "d/ik.mot"], "d/ik.mot"),
                      (["convert", m, "e/f/m.osim"], "e/f/m.osim"),
                      (["scale", m, "--mass", "70", "--height", "1.8", "-o", "g/s.osim"], "g/s.osim"),
                      (["id", m, mot, "-o", "h/../i/id.sto"], "i/id.sto")]:
        assert main(argv) == 0, capsys.readouterr().err
        assert (arm / out).is_file()
        assert f"wrote {argv[-1]}" in capsys.readouterr().out
    assert (arm / "d" / "ik_marker_errors.sto").is_file()
    assert not (arm / "h").exists()                # only what the resolved path needs
    # a file where a folder is needed, a folder as -o: one line each, nothing created
    _refused(capsys, ["id", m, mot, "-o", f"{mot}/x.sto"], arm, match="folder")
    _refused(capsys, ["id", m, mot, "-o", "a"], arm, match="folder")
    _refused(capsys, ["id", m, mot, "-o", "/dev/null"], arm, match="regular file")
    _refused(capsys, ["id", m, mot, "-o", "x" * 300 + ".sto"], arm, match="too long")


# ----------------------------------------------------------------------------- finding 9
def _no_temps(folder: Path) -> bool:
    return not [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


@needs_data
def test_outputs_get_the_usual_permissions(arm, capsys, monkeypatch):
    monkeypatch.chdir(arm)
    old = os.umask(0o027)
    try:
        assert main(["id", "arm26.osim", "arm26_InverseKinematics.mot", "-o", "id.sto"]) == 0
        assert main(["convert", "arm26.osim", "m.osim"]) == 0
    finally:
        os.umask(old)
    assert main(["id", "arm26.osim", "arm26_InverseKinematics.mot", "-o", "id2.sto"]) == 0
    assert (arm / "id.sto").stat().st_mode & 0o777 == 0o640
    assert (arm / "m.osim").stat().st_mode & 0o777 == 0o640
    assert (arm / "id2.sto").stat().st_mode & 0o777 == 0o666 & ~old


def _scale_outputs(tmp_path):
    """A real ScaleTool result of Gait2354 (scaled model, scale set, placed model, marker set,
    static pose), its outputs pointed into ``tmp_path / 'out'``."""
    from arthron.tools.scale_tool import scale_from_setup
    res = scale_from_setup(GAIT_PIPE / "subject01_Setup_Scale.xml", search_dirs=[GAIT_GENERIC.parent])
    res.setup.placer_marker_set_file = Path("markers.xml")
    return res


@needs_data
def test_disk_full_leaves_no_partial_file_patched_writer(tmp_path, monkeypatch):
    """A writer that fails half-way (ENOSPC after the first bytes) leaves every final path as
    it was (absent or old) and no temporary file: scale set, marker set, the five outputs of a
    ScaleTool run written as one group."""
    from arthron.tools.scale_tool import write_marker_set, write_scale_set
    res = _scale_outputs(tmp_path)
    real = files_mod._write_all

    def full(fd, data):
        real(fd, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files_mod, "_write_all", full)
    (tmp_path / "old.xml").write_text("old\n")
    for f in (lambda p: write_scale_set(p, res.scale_set), lambda p: write_marker_set(p, res.model)):
        for name in ("new.xml", "old.xml"):
            with pytest.raises(DataFileError, match="disk is full"):
                f(tmp_path / name)
    assert not (tmp_path / "new.xml").exists() and (tmp_path / "old.xml").read_text() == "old\n"
    with pytest.raises(DataFileError, match="disk is full"):
        res.write(tmp_path / "out")
    assert not [p for p in (tmp_path / "out").iterdir()] and _no_temps(tmp_path)
    # the first files of a group are staged, a later one fails: none of them appears
    calls = {"n": 0}

    def third_fails(fd, data):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(files_mod, "_write_all", third_fails)
    with pytest.raises(DataFileError, match="disk is full"):
        res.write(tmp_path / "out")
    assert not [p for p in (tmp_path / "out").iterdir()]
    monkeypatch.setattr(files_mod, "_write_all", real)
    written = res.write(tmp_path / "out")
    assert len(written) == 5 and all(Path(p).stat().st_size > 0 for p in written)


def test_group_fsyncs_every_file_before_any_rename(tmp_path, monkeypatch):
    """Inside an output group the staged files are fsynced together when the group ends, all
    before the first rename; an fsync that fails (ENOSPC from the file system) leaves every
    target as it was and no temporary file."""
    (tmp_path / "a.sto").write_text("old a\n")
    synced, renamed = [], []
    real_sync, real_replace = files_mod._fsync_path, os.replace

    def sync(tmp):
        synced.append(Path(tmp).name)
        real_sync(tmp)

    def replace(a, b):
        renamed.append((len(synced), Path(b).name))
        real_replace(a, b)

    monkeypatch.setattr(files_mod, "_fsync_path", sync)
    monkeypatch.setattr(files_mod.os, "replace", replace)
    with files_mod.output_group():
        for n in ("a.sto", "b.sto", "c.sto"):
            files_mod.atomic_write(tmp_path / n, f"new {n}\n")
        assert synced == []                      # nothing synced or renamed inside the group
    assert len(synced) == 3 and [k for k, _ in renamed] == [3, 3, 3]
    assert (tmp_path / "a.sto").read_text() == "new a.sto\n"
    monkeypatch.setattr(files_mod.os, "replace", real_replace)

    def second_fails(tmp):
        if ".b.sto" in Path(tmp).name:
            raise OSError(28, "No space left on device")
        real_sync(tmp)

    monkeypatch.setattr(files_mod, "_fsync_path", second_fails)
    with pytest.raises(DataFileError, match="disk is full"):
        with files_mod.output_group():
            for n in ("a.sto", "b.sto", "c.sto"):
                files_mod.atomic_write(tmp_path / n, f"newer {n}\n")
    assert [(tmp_path / n).read_text() for n in ("a.sto", "b.sto", "c.sto")] == \
        ["new a.sto\n", "new b.sto\n", "new c.sto\n"]
    assert _no_temps(tmp_path)


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 96 KiB tmpfs (skipped where it cannot be mounted)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield mnt
    subprocess.run(["umount", str(mnt)], capture_output=True)


@needs_data
def test_disk_full_on_a_real_small_file_system(small_tmpfs, tmp_path, capsys):
    """On a real full file system: ``convert`` of Gait2354 (≈ 300 KB) into a 96 KiB tmpfs is one
    line, exit 2, nothing at the final path, no temporary file; the scale set and marker set
    of a ScaleTool run likewise when the disk has a few bytes left."""
    from arthron.tools.scale_tool import write_marker_set, write_scale_set
    out = small_tmpfs / "gait.osim"
    assert main(["convert", str(GAIT_GENERIC), str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "disk is full" in err
    assert list(small_tmpfs.iterdir()) == []
    res = _scale_outputs(tmp_path)
    filler = small_tmpfs / "filler"
    st = os.statvfs(small_tmpfs)
    filler.write_bytes(b"x" * (st.f_bavail * st.f_frsize - 4096))     # one page left
    for f in (lambda p: write_scale_set(p, res.scale_set * 40), lambda p: write_marker_set(p, res.model)):
        with pytest.raises(DataFileError, match="disk is full"):
            f(small_tmpfs / "x.xml")
        assert sorted(p.name for p in small_tmpfs.iterdir()) == ["filler"]


_KILLED_WRITER = r"""
import os, sys, time
from pathlib import Path
from arthron.io import files
target, flag = Path(sys.argv[1]), Path(sys.argv[2])
real = files._write_all
def slow(fd, data):
    real(fd, data[:100])
    os.fsync(fd)
    flag.write_text("half")
    time.sleep(60)
files._write_all = slow
files.atomic_write(target, "new content " * 1000)
"""


def test_killed_run_leaves_old_file_and_next_run_cleans_its_temp(tmp_path):
    """SIGKILL while a file is half written: the final path keeps its old content (or stays
    absent); the killed run's temporary file is removed by the next write in that folder (and
    a live run's is not)."""
    target, flag = tmp_path / "out.sto", tmp_path / "flag"
    target.write_text("old\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(target), str(flag)], env=env)
    t0 = time.time()
    while not flag.exists() and time.time() - t0 < 30:
        time.sleep(0.02)
    assert flag.exists()
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert target.read_text() == "old\n"
    temps = [x for x in tmp_path.iterdir() if x.name.endswith(".tmp")]
    assert len(temps) == 1 and temps[0].stat().st_size >= 100
    live = tmp_path / f".x.sto.arthron-{os.getppid()}-abcd1234.tmp"   # a running process's
    live.write_text("in progress")
    files_mod.atomic_write(tmp_path / "other.sto", "x\n")
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted(["out.sto", "other.sto", "flag", live.name])


@needs_data
def test_ik_outputs_are_all_new_or_stale_ones_are_named(arm, capsys, monkeypatch):
    """IK writes the motion and the marker errors as one group: a failure while staging leaves
    both old; a failing rename names the written and the stale files."""
    monkeypatch.chdir(arm)
    argv = ["ik", "arm26.osim", "arm26_elbow_flex.trc", "--time-range", "0", "0.05", "-o", "ik.mot"]
    (arm / "ik.mot").write_text("old motion\n")
    (arm / "ik_marker_errors.sto").write_text("old errors\n")
    real_write, real_replace = files_mod._write_all, os.replace
    n = {"w": 0, "r": 0}

    def second_write_fails(fd, data):
        n["w"] += 1
        if n["w"] == 2:
            raise OSError(28, "No space left on device")
        real_write(fd, data)

    monkeypatch.setattr(files_mod, "_write_all", second_write_fails)
    assert main(argv) == 2 and "nothing was written" in capsys.readouterr().err
    assert (arm / "ik.mot").read_text() == "old motion\n"
    assert (arm / "ik_marker_errors.sto").read_text() == "old errors\n" and _no_temps(arm)
    monkeypatch.setattr(files_mod, "_write_all", real_write)

    def second_rename_fails(src, dst):
        n["r"] += 1
        if n["r"] == 2:
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(files_mod.os, "replace", second_rename_fails)
    assert main(argv) == 2
    err = capsys.readouterr().err
    monkeypatch.setattr(files_mod.os, "replace", real_replace)
    assert "written: ik.mot" in err and "stale (old or missing): ik_marker_errors.sto" in err
    assert (arm / "ik.mot").read_text() != "old motion\n" and _no_temps(arm)


# ----------------------------------------------------------------------------- finding 10
XI = '<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="{href}" parse="text"/>'


def _attack(folder: Path, name: str, doctype: str = "", inject: str = "", where='<Body name="r_humerus">'):
    """A copy of arm26.osim with a DOCTYPE after the declaration and ``inject`` after ``where``."""
    text = ARM26.read_text()
    decl, rest = text.split("\n", 1)
    assert where in rest
    p = folder / name
    p.write_text(decl + "\n" + doctype + "\n" + rest.replace(where, where + inject, 1))
    return p


@needs_data
def test_xml_attacks_are_inert(tmp_path, capsys):
    """Entities (internal and external), an external DTD, XInclude at every level, an entity
    bomb and a quadratic blow-up: nothing outside the file is read, no entity is expanded, the
    bombs are refused in well under a second, and ``convert`` does not copy xi:include."""
    from arthron.errors import ArthronWarning, ModelFileError
    from arthron.io.osim import read_osim
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-CONTENT")
    (tmp_path / "ext.dtd").write_text('<!ENTITY fromdtd "DTD-CONTENT">')
    # internal entity used in a value, external (file) entity: refused with the line
    for name, doctype, inject in [
            ("internal.osim", '<!DOCTYPE OpenSimDocument [<!ENTITY e "1.5">]>', "<mass>&e;</mass>"),
            ("external.osim", f'<!DOCTYPE OpenSimDocument [<!ENTITY x SYSTEM "file://{secret}">]>',
             "<mass>&x;</mass>"),
            ("dtd.osim", f'<!DOCTYPE OpenSimDocument SYSTEM "file://{tmp_path / "ext.dtd"}">',
             "<mass>&fromdtd;</mass>")]:
        p = _attack(tmp_path, name, doctype, inject)
        with pytest.raises(ModelFileError, match=r"entity reference &\w+; is not allowed") as e:
            read_osim(p)
        assert "line" in str(e.value)
        assert main(["convert", str(p), str(tmp_path / f"out_{name}")]) == 2
        assert capsys.readouterr().err.count("\n") == 1
    # a declared but unused external entity and an external DTD are never loaded
    p = _attack(tmp_path, "unused.osim", f'<!DOCTYPE OpenSimDocument SYSTEM "file://{tmp_path / "ext.dtd"}" '
                f'[<!ENTITY x SYSTEM "file://{secret}">]>')
    assert main(["convert", str(p), str(tmp_path / "unused_out.osim")]) == 0
    out = (tmp_path / "unused_out.osim").read_text()
    assert "SECRET" not in out and "DTD-CONTENT" not in out
    # XInclude: never processed, left out with a warning, never copied into a converted model
    wheres = ['<Model name="arm26">', '<Body name="r_humerus">', '<Thelen2003Muscle name="TRIlong">',
              '<ForceSet name="forceset">\n\t\t\t<objects>', '<JointSet name="jointset">\n\t\t\t<objects>']
    for i, where in enumerate(wheres):
        p = _attack(tmp_path, f"xi{i}.osim", inject=XI.format(href=f"file://{secret}"), where=where)
        with pytest.warns(ArthronWarning, match="xi:include"):
            m = read_osim(p)
        assert main(["convert", str(p), str(tmp_path / f"xi{i}_out.osim")]) == 0
        out = (tmp_path / f"xi{i}_out.osim").read_text()
        assert "include" not in out and "SECRET" not in out and "XInclude" not in out
        assert list(m.bodies) == list(read_osim(ARM26).bodies)
    # billion laughs and a quadratic blow-up: refused fast, one typed line
    laughs = '<!DOCTYPE OpenSimDocument [<!ENTITY a0 "lol">' + "".join(
        f'<!ENTITY a{i} "{("&a" + str(i - 1) + ";") * 10}">' for i in range(1, 10)) + "]>"
    quad = f'<!DOCTYPE OpenSimDocument [<!ENTITY q "{"x" * 100_000}">]>'
    for name, doctype, inject in [("laughs.osim", laughs, "<mass>&a9;</mass>"),
                                  ("quad.osim", quad, "<mass>" + "&q;" * 20_000 + "</mass>")]:
        p = _attack(tmp_path, name, doctype, inject)
        t0 = time.perf_counter()
        assert main(["info", str(p)]) == 2
        assert time.perf_counter() - t0 < 1.0
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and name in err


@needs_data
def test_setup_attacks_and_over_long_names(arm, capsys):
    """The same guards on setup files (an external entity in <model_file>); a setup or mesh
    file name longer than the file system allows is one typed line, not OSError."""
    secret = arm / "secret.txt"
    secret.write_text("arm26.osim")
    s = _id_setup(arm, "out.sto")
    s.write_text(s.read_text().replace('<?xml version="1.0" encoding="UTF-8"?>',
                                       f'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE OpenSimDocument '
                                       f'[<!ENTITY x SYSTEM "file://{secret}">]>')
                 .replace("<model_file>arm26.osim", "<model_file>&x;"))
    assert main(["id", "--setup", str(s)]) == 2
    assert "entity reference &x;" in capsys.readouterr().err
    s = _id_setup(arm, "out.sto")
    s.write_text(s.read_text().replace("<model_file>arm26.osim", "<model_file>" + "m" * 300 + ".osim"))
    assert main(["id", "--setup", str(s)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "too long" in err
    assert main(["id", "--setup", str(arm / ("s" * 300 + ".xml"))]) == 2
    assert "too long" in capsys.readouterr().err
    text = ARM26.read_text()
    i = text.index("<mesh_file>")
    j = text.index("</mesh_file>", i)
    (arm / "longmesh.osim").write_text(text[:i] + "<mesh_file>" + "y" * 300 + ".vtp" + text[j:])
    assert main(["info", str(arm / "longmesh.osim")]) == 2
    err = capsys.readouterr().err
    assert "longmesh.osim" in err and "too long" in err and err.count("\n") == 1


@needs_data
@pytest.mark.skipif(__import__("importlib").util.find_spec("opensim") is None, reason="needs OpenSim")
def test_setup_commands_write_the_files_opensim_writes(tmp_path, capsys):
    """The same ID, IK and AnalyzeTool (JointReaction, step_interval 3) setups run by OpenSim
    4.6 (cwd = the setup's folder) and by ``arthron --setup`` in two copies of one folder leave
    the same new files at the same relative paths (results directories created), with the same
    number of rows; arthron prints every path it writes."""
    import opensim as osim
    from oracle import _cwd
    osim.Logger.setLevelString("error")
    folders = {}
    for who in ("opensim", "arthron"):
        d = tmp_path / who
        d.mkdir()
        for src in (ARM26, ARM_TRC, ARM_IK):
            shutil.copy(src, d / src.name)
        # one level of new folder: OpenSim 4.6's IO::makeDir creates no parents (with
        # res/id it writes nothing; arthron creates the parents too)
        setups = (_id_setup(d, "arm_id.sto", "resid"), _ik_setup(d, "arm.mot", "resik"),
                  _jr_setup(d, results="resjr"))
        folders[who] = (d, set(_digest(d)))
        if who == "opensim":
            with _cwd(d):
                osim.InverseDynamicsTool(str(setups[0])).run()
                osim.InverseKinematicsTool(str(setups[1])).run()
                osim.AnalyzeTool(str(setups[2])).run()
        else:
            out = ""
            for cmd, s in zip(("id", "ik", "jr"), setups):
                assert main([cmd, "--setup", str(s)]) == 0
                out += capsys.readouterr().out
    new = {w: set(_digest(d)) - before - {"opensim.log"} for w, (d, before) in folders.items()}
    assert len(new["opensim"]) == 4
    assert new["arthron"] == new["opensim"], new
    for rel in new["arthron"]:
        assert str(folders["arthron"][0] / rel) in out
        if rel.endswith((".sto", ".mot")):
            a, o = (read_sto(folders[w][0] / rel) for w in ("arthron", "opensim"))
            assert len(a.time) == len(o.time), rel
