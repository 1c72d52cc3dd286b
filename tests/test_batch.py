"""``arthron batch``: a study of Gait2354 subjects (ScaleTool and anthropometric scalings) ×
trials (the walking TRC with its GRF, and walking2.c3d with its force platforms), run on the
local process pool and on a Dask ``LocalCluster`` with equal results; a broken trial, an unknown
marker name and a missing file are reported while the others complete; a run started again
does not recompute completed outputs."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

from conftest import DATA, GAIT2354, GAIT_PIPE, needs_data, needs_opensim
from arthron.errors import DataFileError, OptionError
from arthron.io.study import STEPS, read_study
from arthron.tools.batch_tool import SUMMARY_COLUMNS, read_summary, run_batch

WALKING2 = DATA / "opensim-core" / "OpenSim" / "Tests" / "shared" / "walking2.c3d"
MAP = ('{ RASI = "R.ASIS", LASI = "L.ASIS", RCAL = "R.Heel", LCAL = "L.Heel", STRN = "Sternum", '
       'RMT1 = "R.Toe.Med", LMT1 = "L.Toe.Med" }')


def _walk1(name="walk1", markers=None):
    return f'''
  [[subjects.trials]]
  name = "{name}"
  markers = "{markers or GAIT_PIPE / 'subject01_walk1.trc'}"
  external_loads = "{GAIT_PIPE / 'subject01_walk1_grf.xml'}"
  ik_setup = "{GAIT_PIPE / 'subject01_Setup_IK.xml'}"
  time_range = [0.5, 0.56]
'''


def _c3d(name="walking2", marker_map=MAP):
    return f'''
  [[subjects.trials]]
  name = "{name}"
  markers = "{WALKING2}"
  rotate = "x-90"
  bodies = ["calcn_r", "calcn_l"]
  time_range = [2.9, 2.93]
  marker_map = {marker_map}
'''


def _study(tmp_path, *, broken=True) -> "os.PathLike":
    """3 subjects × 2 trials (+ 3 broken ones in s3)."""
    bad = tmp_path / "bad_walk.trc"
    lines = (GAIT_PIPE / "subject01_walk1.trc").read_text().splitlines()
    cells = lines[12].split("\t")
    cells[5] = "1.2.3"                              # line 13: a coordinate that is no number
    lines[12] = "\t".join(cells)
    bad.write_text("\n".join(lines) + "\n")
    text = f'''
[study]
name = "gait2354 cohort"
output = "out"
steps = ["scale", "ik", "id", "so", "jr"]

[defaults]
lowpass_hz = 6
reserves = 100
joints = ["hip_r", "knee_r", "ankle_r"]

[[subjects]]
name = "s1"                                   # ScaleTool: subject01's setup, 72.6 kg
scale_setup = "{GAIT_PIPE / 'subject01_Setup_Scale.xml'}"
model = "{GAIT2354}"
{_walk1()}{_c3d()}
[[subjects]]
name = "s2"                                   # anthropometric: 60 kg, 1.65 m, female
model = "{GAIT2354}"
marker_set = "{GAIT_PIPE / 'gait2354_Scale_MarkerSet.xml'}"
mass = 60
height = 1.65
gender = "f"
{_walk1()}  grf = "{GAIT_PIPE / 'subject01_walk1_grf.mot'}"
{_c3d()}
[[subjects]]
name = "s3"                                   # ScaleTool factors, 85 kg
scale_setup = "{GAIT_PIPE / 'subject01_Setup_Scale.xml'}"
model = "{GAIT2354}"
mass = 85
{_walk1()}{_c3d()}'''
    if broken:
        text += (_walk1("broken", bad) + _c3d("unknown_marker", '{ RASI = "R.ASIS", XYZ = "L.ASIS" }')
                 + _walk1("missing", tmp_path / "no_such_trial.trc"))
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


def _rows(res):
    return {(r["subject"], r["trial"]): r for r in res.rows}


_VOLATILE = {"time_s", "folder", "warnings"}


def _same_results(a, b):
    ra, rb = _rows(a), _rows(b)
    assert ra.keys() == rb.keys()
    for k in ra:
        for c in SUMMARY_COLUMNS:
            if c in _VOLATILE or c in ("computed_steps", "resumed_steps", "status"):
                continue
            assert ra[k][c] == rb[k][c], (k, c, ra[k][c], rb[k][c])
    for r in a.rows:
        if r["status"] == "failed":
            continue
        fa = sorted(p for p in os.listdir(r["folder"]) if p.endswith((".sto", ".mot")))
        assert fa
        for name in fa:
            other = os.path.join(_rows(b)[(r["subject"], r["trial"])]["folder"], name)
            with open(os.path.join(r["folder"], name), "rb") as x, open(other, "rb") as y:
                assert x.read() == y.read(), name


def _outputs_mtimes(folder):
    return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns
            for d, _, fs in os.walk(folder) for f in fs}


@needs_data
def test_batch_pool_and_dask_equal_failures_reported_and_resume(tmp_path):
    distributed = pytest.importorskip("distributed")
    study = _study(tmp_path)
    # a run "killed" after subject s1: only s1 done
    first = run_batch(study, jobs=2, only=["s1"], progress=False)
    assert [r["status"] for r in first.rows] == ["ok", "ok"]
    s1 = tmp_path / "out" / "s1"
    before = _outputs_mtimes(s1)
    summary = {(r["subject"], r["trial"]): r for r in read_summary(first.summary)}
    assert summary[("s2", "walk1")]["status"] == "not run"

    # started again: s1 is not recomputed, the rest is done
    pool = run_batch(study, jobs=2, progress=False)
    assert pool.executor == "pool(2)"
    assert _outputs_mtimes(s1) == before
    rows = _rows(pool)
    for t in ("walk1", "walking2"):
        assert rows[("s1", t)]["status"] == "resumed"
        assert rows[("s1", t)]["resumed_steps"] == "ik id so jr" and rows[("s1", t)]["computed_steps"] == ""
        for s in ("s2", "s3"):
            assert rows[(s, t)]["status"] == "ok", rows[(s, t)]["error"]
            assert rows[(s, t)]["computed_steps"] == "ik id so jr"
    # the subjects are scaled differently
    masses = {s: rows[(s, "walk1")]["subject_mass_kg"] for s in ("s1", "s2", "s3")}
    assert masses["s1"] == pytest.approx(72.6, rel=1e-9)      # the setup's <mass>
    assert masses["s2"] == pytest.approx(60.0 * 0.999, rel=1e-9)   # anthropometric, female: Dumas
    # et al. 2007's fractions sum to 99.9 % (tests/test_scaling.py::test_dumas2007_table_as_published)
    assert masses["s3"] == pytest.approx(85.0, rel=1e-9)
    rms = [rows[(s, "walk1")]["ik_rms_mean_mm"] for s in ("s1", "s2", "s3")]
    assert all(0 < x < 100 for x in rms)
    # s3 has s1's marker-based geometry with another mass: the same kinematics, other dynamics
    for t in ("walk1", "walking2"):
        assert rows[("s3", t)]["ik_rms_mean_mm"] == rows[("s1", t)]["ik_rms_mean_mm"]
        assert rows[("s3", t)]["id_peak_residual_force_N"] != rows[("s1", t)]["id_peak_residual_force_N"]
        assert open(tmp_path / "out" / "s3" / t / f"{t}_ik.mot").read() == \
            open(tmp_path / "out" / "s1" / t / f"{t}_ik.mot").read()
    # marker-placed ScaleTool model tracks subject01's markers better than the anthropometric one
    assert rows[("s1", "walk1")]["ik_rms_mean_mm"] < rows[("s2", "walk1")]["ik_rms_mean_mm"]
    assert rows[("s1", "walking2")]["ik_markers"] == 7
    for r in pool.rows:
        if r["status"] != "failed":
            assert math.isfinite(r["id_peak_moment_Nm"]) and r["jr_peak_force_N"] > 0
            assert 0 <= r["so_max_muscle_activation"] <= 1

    # the broken trials are reported with their file and line or key; the others completed
    bad = rows[("s3", "broken")]
    assert bad["status"] == "failed" and bad["failed_step"] == "ik"
    assert "bad_walk.trc: line 13" in bad["error"] and "L.ASIS" in bad["error"]
    unk = rows[("s3", "unknown_marker")]
    assert unk["status"] == "failed"
    assert str(study) in unk["error"] and "marker_map.XYZ" in unk["error"] and "'XYZ'" in unk["error"]
    miss = rows[("s3", "missing")]
    assert miss["status"] == "failed" and miss["failed_step"] == "inputs"
    assert "markers" in miss["error"] and "no_such_trial.trc" in miss["error"] and str(study) in miss["error"]
    assert pool.n_failed == 3
    csv_rows = read_summary(pool.summary)
    assert len(csv_rows) == 9 and list(csv_rows[0]) == SUMMARY_COLUMNS
    assert float(csv_rows[0]["ik_rms_mean_mm"]) == rows[("s1", "walk1")]["ik_rms_mean_mm"]
    try:
        import pyarrow.parquet as pq
    except ImportError:
        assert pool.parquet is None
    else:
        table = pq.read_table(pool.parquet).to_pylist()
        assert [(x["subject"], x["trial"], x["status"]) for x in table] == \
            [(x["subject"], x["trial"], x["status"]) for x in csv_rows]
        assert table[0]["ik_rms_mean_mm"] == rows[("s1", "walk1")]["ik_rms_mean_mm"]

    # a step whose completion marker is missing (killed between its outputs and the marker)
    # is recomputed, the others not
    (tmp_path / "out" / "s2" / "walk1" / ".done-so.json").unlink()
    again = run_batch(study, jobs=1, progress=False, only=["s2/walk1"])
    r = again.rows[0]
    assert r["computed_steps"] == "so" and r["resumed_steps"] == "ik id jr"

    # the same study on a Dask LocalCluster (same task functions): equal results
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        dask = run_batch(study, scheduler=cluster.scheduler_address, output=tmp_path / "out_dask",
                         progress=False)
    assert dask.executor == "dask"
    assert [r["computed_steps"] for r in dask.rows if r["status"] != "failed"] == ["ik id so jr"] * 6
    _same_results(pool, dask)


@needs_data
def test_batch_results_are_the_tools_results(tmp_path):
    """The batch's files are what the tools write for the same inputs (one trial, sequential)."""
    from arthron.io.sto import read_sto
    from arthron.tools.id_tool import run_id
    from arthron.tools.ik_tool import run_ik
    from arthron.tools.scale_tool import scale_from_setup
    study = _study(tmp_path, broken=False)
    res = run_batch(study, jobs=1, only=["s1/walk1"], progress=False)
    assert res.executor == "sequential" and res.rows[0]["status"] == "ok"
    sc = scale_from_setup(GAIT_PIPE / "subject01_Setup_Scale.xml", model=GAIT2354)
    ik = run_ik(sc.model, GAIT_PIPE / "subject01_walk1.trc", setup=GAIT_PIPE / "subject01_Setup_IK.xml",
                time_range=(0.5, 0.56))
    folder = tmp_path / "out" / "s1" / "walk1"
    mot = read_sto(folder / "walk1_ik.mot")
    assert np.allclose(mot.data, ik.motion_table().data, rtol=0, atol=1e-6)
    assert res.rows[0]["ik_rms_mean_mm"] == pytest.approx(1e3 * float(np.mean(ik.rms)), rel=1e-9)
    idr = run_id(sc.model, ik.motion_table(), external_loads=GAIT_PIPE / "subject01_walk1_grf.xml",
                 lowpass_hz=6)
    tau = read_sto(folder / "walk1_inverse_dynamics.sto")
    assert np.allclose(tau.data, idr.result.generalized_forces, rtol=1e-6, atol=1e-5)


@needs_data
@needs_opensim
def test_batch_against_opensim(tmp_path):
    """The subject models the batch writes load in OpenSim 4.6 with the summary's masses, and
    OpenSim's InverseDynamicsTool on the batch's model, IK motion and the trial's GRF (6 Hz
    filter, the motion's time range) gives the batch's generalized forces."""
    import opensim
    from arthron.io.sto import read_sto
    study = _study(tmp_path, broken=False)
    res = run_batch(study, jobs=1, only=["s2/walk1", "s3/walk1"], progress=False)
    cwd = os.getcwd()
    os.chdir(tmp_path)            # opensim.log goes to the cwd
    try:
        for r in res.rows:
            model_file = tmp_path / "out" / r["subject"] / f"{r['subject']}.osim"
            m = opensim.Model(str(model_file))
            s = m.initSystem()
            assert m.getTotalMass(s) == pytest.approx(r["subject_mass_kg"], rel=1e-9)
            folder = tmp_path / "out" / r["subject"] / "walk1"
            ours = read_sto(folder / "walk1_inverse_dynamics.sto")
            tool = opensim.InverseDynamicsTool()
            tool.setModel(m)
            tool.setCoordinatesFileName(str(folder / "walk1_ik.mot"))
            tool.setStartTime(float(ours.time[0]))
            tool.setEndTime(float(ours.time[-1]))
            tool.setLowpassCutoffFrequency(6)
            ex = opensim.ArrayStr()
            ex.append("Muscles")
            tool.setExcludedForces(ex)
            tool.setExternalLoadsFileName(str(GAIT_PIPE / "subject01_walk1_grf.xml"))
            tool.setResultsDir(str(tmp_path / "osim"))
            tool.setOutputGenForceFileName(f"{r['subject']}.sto")
            assert tool.run()
            theirs = read_sto(tmp_path / "osim" / f"{r['subject']}.sto")
            assert theirs.labels == ours.labels and len(theirs.time) == len(ours.time)
            np.testing.assert_allclose(ours.data, theirs.data, rtol=0, atol=1e-6)   # measured 7e-9
    finally:
        os.chdir(cwd)


def test_study_file_errors_name_file_and_keys(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('''
[study]
steps = ["scale", "id"]
colour = "red"
[[subjects]]
name = "a b"
mass = -3
heigth = 1.7
  [[subjects.trials]]
  name = "t"
''')
    with pytest.raises(DataFileError) as e:
        read_study(p)
    msg = str(e.value)
    assert msg.startswith(str(p))
    for piece in ("study.steps: must be a prefix", "study.colour: unknown key",
                  "subjects[0].name", "mass: must be positive", "heigth: unknown key",
                  "did you mean height", "needs markers"):
        assert piece in msg, piece
    p.write_text("[study\nname = 1")
    with pytest.raises(DataFileError, match=r"bad.toml: line 1: not valid TOML"):
        read_study(p)


def test_study_missing_files_are_trial_problems(tmp_path):
    p = tmp_path / "s.toml"
    (tmp_path / "m.osim").write_text("<OpenSimDocument/>")
    p.write_text('''
[defaults]
time_range = [0, 1]
[[subjects]]
name = "a"
model = "m.osim"
  [[subjects.trials]]
  name = "t1"
  markers = "nope.trc"
  [[subjects.trials]]
  name = "t2"
  markers = "m.osim"
''')
    with pytest.raises(DataFileError, match="must be a .trc or .c3d file"):
        read_study(p)
    p.write_text(p.read_text().replace('markers = "m.osim"', 'markers = "t2.c3d"'))
    st = read_study(p)
    assert st.steps == STEPS and st.output == tmp_path / "s_results"
    a = st.subjects[0]
    assert a.scaling == "none" and not a.problems
    assert a.trials[0].options["time_range"] == (0.0, 1.0)
    assert "subjects[0] ('a').trials[0] ('t1').markers: file 'nope.trc' does not exist" in a.trials[0].problems[0]
    assert "t2.c3d" in a.trials[1].problems[0]
    with pytest.raises(OptionError, match="--only names"):
        run_batch(st, only=["zz"], jobs=1, progress=False)
    # the subject's model is not a model: its trials are reported failed at "scale"
    res = run_batch(st, jobs=1, progress=False)
    assert [r["status"] for r in res.rows] == ["failed", "failed"]
    assert all(r["failed_step"] == "scale" and "subject 'a'" in r["error"] and "m.osim" in r["error"]
               for r in res.rows)
    assert res.subjects[0]["status"] == "failed"


def test_yaml_study_equals_toml(tmp_path):
    pytest.importorskip("yaml")
    (tmp_path / "m.osim").write_text("<OpenSimDocument/>")
    (tmp_path / "a.trc").write_text("")
    (tmp_path / "s.toml").write_text('''
[study]
steps = ["scale", "ik"]
[[subjects]]
name = "a"
model = "m.osim"
mass = 70
height = 1.8
  [[subjects.trials]]
  name = "t"
  markers = "a.trc"
  marker_map = { X = "Y" }
''')
    (tmp_path / "s.yaml").write_text('''
study: {steps: [scale, ik]}
subjects:
  - name: a
    model: m.osim
    mass: 70
    height: 1.8
    trials:
      - {name: t, markers: a.trc, marker_map: {X: Y}}
''')
    a, b = read_study(tmp_path / "s.toml"), read_study(tmp_path / "s.yaml")
    assert a.subjects == b.subjects and a.steps == b.steps
    (tmp_path / "bad.yaml").write_text("study: [1,\n")
    with pytest.raises(DataFileError, match="bad.yaml: line"):
        read_study(tmp_path / "bad.yaml")


@needs_data
def test_cli_batch_check_names_unknown_marker(tmp_path, capsys):
    from arthron.cli import main
    study = _study(tmp_path)
    assert main(["batch", str(study), "--check"]) == 2
    err = capsys.readouterr()
    assert "marker_map.XYZ: marker 'XYZ' is not in the trial file walking2.c3d" in err.err
    assert "no_such_trial.trc" in err.err
    assert "3 subjects, 9 trials" in err.out


@needs_data
def test_batch_killed_and_started_again_finishes_the_rest(tmp_path):
    """A real kill: the command is killed (SIGKILL) once its first trial is complete; started
    again, it recomputes nothing that was complete and finishes the rest."""
    import signal
    import subprocess
    import sys
    import time
    from conftest import ROOT
    trials = "".join(f'''
  [[subjects.trials]]
  name = "w{k}"
  markers = "{GAIT_PIPE / 'subject01_walk1.trc'}"
  external_loads = "{GAIT_PIPE / 'subject01_walk1_grf.xml'}"
  time_range = [{0.5 + 0.1 * k:.2f}, {0.62 + 0.1 * k:.2f}]
''' for k in range(6))
    study = tmp_path / "kill.toml"
    study.write_text(f'''
[study]
output = "out"
steps = ["scale", "ik", "id"]
[[subjects]]
name = "s"
scale_setup = "{GAIT_PIPE / 'subject01_Setup_Scale.xml'}"
model = "{GAIT2354}"
{trials}''')
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    cmd = [sys.executable, "-m", "arthron.cli", "batch", str(study), "-j", "1"]
    out = tmp_path / "out" / "s"
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not list(out.glob("w*/.done-id.json")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = sorted(p.parent.name for p in out.glob("w*/.done-id.json"))
    assert 1 <= len(done) < 6, done               # killed midway
    assert not (tmp_path / "out" / "summary.csv").exists()
    before = {n: _outputs_mtimes(out / n) for n in done}
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = {x["trial"]: x for x in read_summary(tmp_path / "out" / "summary.csv")}
    assert len(rows) == 6 and all(x["status"] in ("ok", "resumed") for x in rows.values())
    for n in done:
        assert _outputs_mtimes(out / n) == before[n]
        assert rows[n]["status"] == "resumed" and rows[n]["computed_steps"] == ""
    assert sum(rows[n]["computed_steps"] != "" for n in rows) >= 6 - len(done)
    assert not list(out.rglob("*.tmp"))            # a killed write leaves no temporary file behind
