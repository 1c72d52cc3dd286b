"""arthron.io.trc and arthron.io.sto: every real file reads, values match numpy and OpenSim,
arthron-written files read back identically in arthron and in OpenSim 4.6, bad input fails clearly."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from arthron.errors import DataFileError
from arthron.io import sto as sto_mod
from arthron.io.sto import Table, read_mot, read_sto, write_sto
from arthron.io.trc import MarkerTrial, read_trc, write_trc

from conftest import ARM26_TUT, DATA, GAIT_PIPE, HAVE_DATA, needs_data, needs_opensim

TRC_FILES = sorted(DATA.rglob("*.trc")) if HAVE_DATA else []
STO_FILES = sorted([*DATA.rglob("*.sto"), *DATA.rglob("*.mot")]) if HAVE_DATA else []


def _id(p: Path) -> str:
    return str(p.relative_to(DATA))


def _osim():
    import opensim

    opensim.Logger.setLevelString("error")
    opensim.Logger.removeFileSink()  # no opensim.log in the cwd
    return opensim


# ------------------------------------------------------------------------------------------------
# reading every real file
# ------------------------------------------------------------------------------------------------
@needs_data
def test_data_files_are_there():
    assert len(TRC_FILES) >= 4
    assert len(STO_FILES) >= 55


@needs_data
@pytest.mark.parametrize("path", TRC_FILES, ids=_id)
def test_read_trc_matches_loadtxt(path):
    tr = read_trc(path)
    raw = np.genfromtxt(path, skip_header=5, delimiter="\t")
    n = len(tr.labels)
    assert tr.positions.shape == (raw.shape[0], n, 3)
    assert tr.n_frames == raw.shape[0] and tr.n_markers == n
    np.testing.assert_array_equal(tr.frames, raw[:, 0].astype(int))
    np.testing.assert_array_equal(tr.time, raw[:, 1])
    assert tr.units == "mm"
    # metres = the file's decimal value / 1000, rounded once (so within 1 ulp of float(text) / 1000)
    np.testing.assert_array_max_ulp(tr.positions.reshape(len(tr.time), 3 * n), raw[:, 2:2 + 3 * n] / 1000.0, 1)
    np.testing.assert_array_equal(tr.marker(tr.labels[-1]), tr.positions[:, -1, :])
    assert np.all(np.diff(tr.time) > 0)


def _read_trc_by_loop(path, monkeypatch):
    """read_trc with its bulk parser switched off (every row through the checking loop)."""
    from arthron.io import trc as trc_mod
    with monkeypatch.context() as m:
        m.setattr(trc_mod, "_bulk_rows", lambda *a: None)
        return read_trc(path)


def _same_trial(a, b):
    np.testing.assert_array_equal(a.frames, b.frames)
    assert a.time.tobytes() == b.time.tobytes()
    assert a.positions.tobytes() == b.positions.tobytes()      # bit for bit, NaN included
    assert a.labels == b.labels and a.units == b.units


@needs_data
@pytest.mark.parametrize("path", TRC_FILES, ids=_id)
def test_read_trc_bulk_equals_checking_loop(path, monkeypatch):
    """The bulk parser of regular data blocks gives the checking loop's numbers bit for bit."""
    from arthron.io import trc as trc_mod
    calls = []
    real = trc_mod._bulk_rows
    monkeypatch.setattr(trc_mod, "_bulk_rows", lambda *a: calls.append(1) or real(*a))
    _same_trial(read_trc(path), _read_trc_by_loop(path, monkeypatch))
    assert calls


@pytest.mark.parametrize("units", ["mm", "cm", "m"])
@pytest.mark.parametrize("edit", ["none", "gap", "exponent", "space", "nan", "trailing_tabs"])
def test_read_trc_bulk_equals_checking_loop_random(units, edit, tmp_path, monkeypatch):
    rng = np.random.default_rng(11)
    tr = _random_trial(rng, units=units)
    if edit != "gap":
        tr.positions[np.isnan(tr.positions)] = 0.25
    p = tmp_path / "r.trc"
    write_trc(p, tr)
    lines = p.read_text().split("\n")
    k = 9
    cells = lines[k].split("\t")
    if edit == "exponent":
        cells[4] = "1.5e+02"
    elif edit == "space":
        cells[4] = " " + cells[4]
    elif edit == "nan":
        cells[4] = "nan"
    elif edit == "trailing_tabs":
        lines = [ln + "\t\t" if ln and ln[0].isdigit() else ln for ln in lines]
    lines[k] = "\t".join(cells) if edit != "trailing_tabs" else lines[k]
    p.write_text("\n".join(lines))
    _same_trial(read_trc(p), _read_trc_by_loop(p, monkeypatch))


@needs_data
def test_read_trc_header_values():
    tr = read_trc(GAIT_PIPE / "subject01_walk1.trc")
    assert (tr.data_rate, tr.camera_rate, tr.orig_data_rate) == (60.0, 60.0, 60.0)
    assert (tr.orig_start_frame, tr.orig_num_frames) == (1, 151)
    assert tr.positions.shape == (151, 41, 3)
    assert tr.labels[:3] == ["R.ASIS", "L.ASIS", "V.Sacral"]
    # first row, R.ASIS = 617.247620 1055.275020 170.781980 mm
    np.testing.assert_allclose(tr.marker("R.ASIS")[0], [0.61724762, 1.05527502, 0.17078198], rtol=1e-15)
    arm = read_trc(ARM26_TUT / "InverseKinematics" / "arm26_elbow_flex.trc")
    assert arm.positions.shape == (121, 3, 3) and arm.data_rate == 120.0
    with pytest.raises(KeyError):
        arm.marker("nope")


def _data_lines(path: Path):
    lines = Path(path).read_text().splitlines()
    end = next(i for i, l in enumerate(lines) if l.strip().lower() == "endheader")
    lab = end + 1
    while not lines[lab].strip():
        lab += 1
    return lines, lab


@needs_data
@pytest.mark.parametrize("path", STO_FILES, ids=_id)
def test_read_sto_matches_loadtxt(path):
    t = read_sto(path)
    lines, lab = _data_lines(path)
    labels = [c.strip() for c in lines[lab].split("\t") if c.strip()]
    raw = np.loadtxt(path, skiprows=lab + 1, delimiter="\t", usecols=range(len(labels)), ndmin=2)
    assert [t.time_label, *t.labels] == labels
    assert t.time_label == "time"
    np.testing.assert_array_equal(t.time, raw[:, 0])
    np.testing.assert_array_equal(t.data, raw[:, 1:])
    assert np.all(np.diff(t.time) > 0)
    # Storage files say version=1 with nRows; OpenSim's C3D adapter (STOFileAdapter) writes
    # version=3 without nRows; SIMM-era headers ("datarows 101") have no version key at all
    version = t.metadata.get("version")
    assert version in ("1", "3", None)
    if version == "1":
        assert int(t.metadata["nRows"]) == t.n_rows
    else:
        assert "nRows" not in t.metadata
    assert read_mot is read_sto


@needs_data
def test_read_sto_header_fields():
    ik = read_sto(GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot")
    assert ik.name == "Coordinates" and ik.in_degrees is True and ik.data.shape == (73, 23)
    assert "Angles are in degrees." in ik.comments
    grf = read_sto(GAIT_PIPE / "subject01_walk1_grf.mot")  # header lines with trailing tabs
    assert grf.name == "subject01_walk1_grf.mot" and grf.metadata["nColumns"] == "19"
    assert grf.data.shape == (1501, 18)
    np.testing.assert_array_equal(grf.column("ground_force_vy")[:1], [745.4661142])
    rad = ik.to_radians(["pelvis_tilt"])
    np.testing.assert_allclose(rad.column("pelvis_tilt"), np.deg2rad(ik.column("pelvis_tilt")), rtol=1e-15)
    np.testing.assert_array_equal(rad.column("pelvis_tx"), ik.column("pelvis_tx"))
    assert rad.in_degrees is False and ik.in_degrees is True
    jr = read_sto(DATA / "opensim-reference" / "task6_pendulum" / "JR_hang0_off0"
                  / "hang0_off0_JointReaction_ReactionLoads.sto")
    assert len(jr.labels) == 36 and len(set(jr.labels)) < 36  # duplicate labels kept as in the file
    with pytest.raises(KeyError):
        ik.column("nope")


@needs_opensim
@needs_data
@pytest.mark.parametrize("path", TRC_FILES, ids=_id)
def test_read_trc_agrees_with_opensim_adapter(path):
    osim = _osim()
    tr = read_trc(path)
    tab = osim.TimeSeriesTableVec3(str(path))
    flat = tab.flatten()  # keep a reference: the matrix view dies with its table
    M = flat.getMatrix().to_numpy().copy()
    assert list(tab.getColumnLabels()) == tr.labels
    np.testing.assert_array_equal(np.array(tab.getIndependentColumn()), tr.time)
    np.testing.assert_array_max_ulp(M / 1000.0, tr.positions.reshape(M.shape), 1)


def _storage_matrix(osim, path):
    s = osim.Storage(str(path))
    labels = [s.getColumnLabels().get(i) for i in range(s.getColumnLabels().getSize())]
    rows, times = [], []
    for i in range(s.getSize()):
        sv = s.getStateVector(i)
        times.append(sv.getTime())
        d = sv.getData()
        rows.append([d.get(j) for j in range(d.getSize())])
    return labels, np.array(times), np.array(rows), s


@needs_opensim
@needs_data
@pytest.mark.parametrize("path", STO_FILES, ids=_id)
def test_read_sto_agrees_with_opensim_storage(path):
    osim = _osim()
    t = read_sto(path)
    labels, times, rows, s = _storage_matrix(osim, path)
    assert labels == ["time", *t.labels]
    np.testing.assert_array_equal(times, t.time)
    np.testing.assert_array_equal(rows.reshape(t.data.shape), t.data)
    assert s.isInDegrees() == bool(t.in_degrees)


# ------------------------------------------------------------------------------------------------
# round trips and OpenSim reading what arthron writes
# ------------------------------------------------------------------------------------------------
def _random_table(rng, n_rows=7, n_cols=5, nan=False):
    scales = 10.0 ** rng.integers(-12, 12, size=(n_rows, n_cols))
    data = rng.standard_normal((n_rows, n_cols)) * scales
    data[0, 0] = 0.0
    data[1, 0] = -0.0
    data[2, 1] = 1 / 3
    data[3, 1] = 5e-324  # smallest subnormal
    data[4, 2] = 1.7976931348623157e308
    if nan:
        data[2, 3] = np.nan
    time = np.cumsum(rng.uniform(1e-4, 0.1, size=n_rows)) - 0.05
    return Table(name="random doubles", time=time, labels=[f"c{i}" for i in range(n_cols)], data=data,
                 in_degrees=False, metadata={"DataType": "double", "note": "x"}, comments=["free text line"])


def _assert_same_table(a: Table, b: Table):
    assert b.labels == a.labels and b.time_label == a.time_label
    np.testing.assert_array_equal(b.time, a.time)
    np.testing.assert_array_equal(b.data, a.data)
    assert b.in_degrees == a.in_degrees
    assert b.name == (a.name or b.name)


@needs_data
@pytest.mark.parametrize("path", STO_FILES, ids=_id)
def test_sto_round_trip(path, tmp_path):
    t = read_sto(path)
    out = tmp_path / ("out" + path.suffix)
    write_sto(out, t)
    t2 = read_sto(out)
    _assert_same_table(t, t2)
    assert t2.comments == t.comments
    for k, v in t.metadata.items():
        if k not in ("nRows", "nColumns", "version", "inDegrees"):
            assert t2.metadata[k] == v


def test_sto_round_trip_random(tmp_path):
    rng = np.random.default_rng(7)
    t = _random_table(rng, 50, 9)
    write_sto(tmp_path / "r.sto", t)
    t2 = read_sto(tmp_path / "r.sto")
    _assert_same_table(t, t2)
    assert np.signbit(t2.data[1, 0])
    assert t2.metadata["note"] == "x" and t2.comments == ["free text line"]


@needs_data
@pytest.mark.parametrize("path", TRC_FILES, ids=_id)
def test_trc_round_trip(path, tmp_path):
    tr = read_trc(path)
    out = tmp_path / "out.trc"
    write_trc(out, tr)
    tr2 = read_trc(out)
    np.testing.assert_array_equal(tr2.positions, tr.positions)
    np.testing.assert_array_equal(tr2.time, tr.time)
    np.testing.assert_array_equal(tr2.frames, tr.frames)
    assert tr2.labels == tr.labels and tr2.units == tr.units
    assert (tr2.data_rate, tr2.camera_rate, tr2.orig_data_rate, tr2.orig_start_frame, tr2.orig_num_frames) == (
        tr.data_rate, tr.camera_rate, tr.orig_data_rate, tr.orig_start_frame, tr.orig_num_frames)
    # the file holds the original digits
    # (a missing marker is written NaN, OpenSim's spelling)
    orig_row = Path(path).read_text().splitlines()[-1].split("\t")[2]
    expected = "NaN" if np.isnan(float(orig_row)) else repr(float(orig_row))
    assert out.read_text().splitlines()[-1].split("\t")[2] == expected


def _random_trial(rng, T=20, n=4, units="mm"):
    pos = rng.standard_normal((T, n, 3)) * rng.choice([1e-3, 1.0, 2.5], size=(1, n, 1))
    pos[3, 1, :] = np.nan  # gap
    pos[5:8, 2, :] = np.nan
    return MarkerTrial(frames=np.arange(1, T + 1), time=np.arange(T) / 120.0, labels=[f"M{i}" for i in range(n)],
                       positions=pos, data_rate=120.0, camera_rate=120.0, orig_data_rate=120.0,
                       orig_start_frame=1, orig_num_frames=T, units=units)


@pytest.mark.parametrize("units", ["mm", "cm", "m"])
def test_trc_round_trip_random_with_gaps(units, tmp_path):
    rng = np.random.default_rng(3)
    tr = _random_trial(rng, units=units)
    write_trc(tmp_path / "r.trc", tr)
    tr2 = read_trc(tmp_path / "r.trc")
    np.testing.assert_array_equal(tr2.positions, tr.positions)  # NaN == NaN here
    np.testing.assert_array_equal(tr2.time, tr.time)
    assert tr2.units == units


def test_trc_blank_cells_are_nan(tmp_path):
    p = tmp_path / "gap.trc"
    p.write_text("PathFileType\t4\t(X/Y/Z)\tgap.trc\n"
                 "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\tOrigDataStartFrame\tOrigNumFrames\n"
                 "100\t100\t3\t2\tcm\t100\t1\t3\n"
                 "Frame#\tTime\tA\t\t\tB\t\t\n"
                 "\t\tX1\tY1\tZ1\tX2\tY2\tZ2\n"
                 "\n"
                 "1\t0\t1\t2\t3\t4\t5\t6\n"
                 "2\t0.01\t\t\t\t4\t5\t6\n"
                 "3\t0.02\t1\t2\t3\tNaN\tnan\tnan\n")
    tr = read_trc(p)
    assert np.isnan(tr.positions[1, 0]).all() and np.isnan(tr.positions[2, 1]).all()
    np.testing.assert_array_equal(tr.positions[0], [[0.01, 0.02, 0.03], [0.04, 0.05, 0.06]])


@needs_opensim
@needs_data
@pytest.mark.parametrize("path", TRC_FILES, ids=_id)
def test_opensim_reads_arthron_trc(path, tmp_path):
    osim = _osim()
    tr = read_trc(path)
    out = tmp_path / "w.trc"
    write_trc(out, tr)
    tab = osim.TimeSeriesTableVec3(str(out))
    flat = tab.flatten()  # keep a reference: the matrix view dies with its table
    M = flat.getMatrix().to_numpy().copy()
    assert list(tab.getColumnLabels()) == tr.labels
    np.testing.assert_allclose(np.array(tab.getIndependentColumn()), tr.time, rtol=1e-12, atol=0)
    np.testing.assert_allclose(M, tr.positions.reshape(M.shape) * 1000.0, rtol=1e-12, atol=0)
    assert tab.getTableMetaDataAsString("Units") == "mm"
    assert int(tab.getTableMetaDataAsString("NumFrames")) == tr.n_frames


@needs_opensim
@pytest.mark.parametrize("units", ["mm", "m"])
def test_opensim_reads_arthron_trc_random_with_gaps(units, tmp_path):
    osim = _osim()
    tr = _random_trial(np.random.default_rng(11), units=units)
    out = tmp_path / "w.trc"
    write_trc(out, tr)
    tab = osim.TimeSeriesTableVec3(str(out))
    flat = tab.flatten()  # keep a reference: the matrix view dies with its table
    M = flat.getMatrix().to_numpy().copy()
    f = 1000.0 if units == "mm" else 1.0
    expected = tr.positions.reshape(M.shape) * f
    np.testing.assert_array_equal(np.isnan(M), np.isnan(expected))
    np.testing.assert_allclose(M, expected, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(np.array(tab.getIndependentColumn()), tr.time)


def _check_opensim_reads(osim, out: Path, t: Table, adapter=True):
    labels, times, rows, s = _storage_matrix(osim, out)
    assert labels == ["time", *t.labels]
    assert s.getSize() == t.n_rows
    np.testing.assert_allclose(times, t.time, rtol=1e-12, atol=0)
    np.testing.assert_allclose(rows.reshape(t.data.shape), t.data, rtol=1e-12, atol=0)
    if adapter:
        tab = osim.TimeSeriesTable(str(out))  # STOFileAdapter
        assert list(tab.getColumnLabels()) == t.labels
        np.testing.assert_allclose(np.array(tab.getIndependentColumn()), t.time, rtol=1e-12, atol=0)
        M = tab.getMatrix().to_numpy().copy().reshape(t.data.shape)
        np.testing.assert_allclose(M, t.data, rtol=1e-12, atol=0)
        return max(np.max(np.abs(rows.reshape(t.data.shape) - t.data), initial=0),
                   np.max(np.abs(M - t.data), initial=0))
    return np.max(np.abs(rows.reshape(t.data.shape) - t.data), initial=0)


@needs_opensim
@needs_data
@pytest.mark.parametrize("path", STO_FILES, ids=_id)
def test_opensim_reads_arthron_sto(path, tmp_path):
    osim = _osim()
    t = read_sto(path)
    out = tmp_path / ("w" + path.suffix)
    write_sto(out, t)
    # TimeSeriesTable refuses duplicate column labels (JointReaction files): Storage only there
    diff = _check_opensim_reads(osim, out, t, adapter=len(set(t.labels)) == len(t.labels))
    assert diff == 0.0  # measured: the doubles come back bit-identical


@needs_opensim
def test_opensim_reads_arthron_sto_random(tmp_path):
    osim = _osim()
    t = _random_table(np.random.default_rng(5), 40, 12)
    out = tmp_path / "r.sto"
    write_sto(out, t)
    assert _check_opensim_reads(osim, out, t) == 0.0
    mot = tmp_path / "r.mot"
    t.in_degrees = True
    write_sto(mot, t)
    assert osim.Storage(str(mot)).isInDegrees()
    assert osim.TimeSeriesTable(str(mot)).getTableMetaDataAsString("inDegrees") == "yes"


@needs_opensim
def test_nan_refused_by_default_because_storage_truncates(tmp_path):
    osim = _osim()
    t = _random_table(np.random.default_rng(1), 5, 4, nan=True)
    with pytest.raises(DataFileError, match="NaN"):
        write_sto(tmp_path / "n.sto", t)
    assert not (tmp_path / "n.sto").exists()
    write_sto(tmp_path / "n.sto", t, allow_nan=True)
    back = read_sto(tmp_path / "n.sto")
    np.testing.assert_array_equal(back.data, t.data)
    tab = osim.TimeSeriesTable(str(tmp_path / "n.sto"))
    np.testing.assert_array_equal(tab.getMatrix().to_numpy().copy(), t.data)
    # OpenSim 4.6 Storage stops at the NaN row: the reason for the default
    assert osim.Storage(str(tmp_path / "n.sto")).getSize() < t.n_rows


# ------------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------------
TRC_HEAD = ("PathFileType\t4\t(X/Y/Z)\tbad.trc\n"
            "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\tOrigDataStartFrame\tOrigNumFrames\n"
            "{rate}\t100\t{nf}\t{nm}\t{units}\t100\t1\t3\n"
            "Frame#\tTime\tA\t\t\tB\t\t\n"
            "\t\tX1\tY1\tZ1\tX2\tY2\tZ2\n"
            "\n")
GOOD_ROWS = ["1\t0\t1\t2\t3\t4\t5\t6", "2\t0.01\t1\t2\t3\t4\t5\t6", "3\t0.02\t1\t2\t3\t4\t5\t6"]


def _trc(tmp_path, rows=GOOD_ROWS, nf=3, nm=2, units="mm", rate="100", head=None):
    p = tmp_path / "bad.trc"
    text = head if head is not None else TRC_HEAD.format(nf=nf, nm=nm, units=units, rate=rate)
    p.write_text(text + "\n".join(rows) + "\n")
    return p


def _raises(p, reader, line=None, match=None):
    with pytest.raises(DataFileError) as ei:
        reader(p)
    msg = str(ei.value)
    assert p.name in msg and str(p) == ei.value.path
    if line is not None:
        assert f"line {line}" in msg, msg
    if match is not None:
        assert re.search(match, msg), msg
    return msg


def test_trc_good_fixture_reads(tmp_path):
    tr = read_trc(_trc(tmp_path))
    assert tr.positions.shape == (3, 2, 3) and tr.positions[0, 0, 0] == 0.001


@pytest.mark.parametrize("case, kwargs, line, match", [
    ("row too short", dict(rows=[GOOD_ROWS[0], "2\t0.01\t1\t2\t3\t4\t5", GOOD_ROWS[2]]), 8, "7 cells, expected 8"),
    ("row too long", dict(rows=[GOOD_ROWS[0], GOOD_ROWS[1], GOOD_ROWS[2] + "\t7"]), 9, "9 cells"),
    ("time repeats", dict(rows=[GOOD_ROWS[0], GOOD_ROWS[1], "3\t0.01\t1\t2\t3\t4\t5\t6"]), 9, "not greater"),
    ("time decreases", dict(rows=[GOOD_ROWS[0], "2\t-1\t1\t2\t3\t4\t5\t6", GOOD_ROWS[2]]), 8, "not greater"),
    ("non numeric", dict(rows=[GOOD_ROWS[0], "2\t0.01\t1\tabc\t3\t4\t5\t6", GOOD_ROWS[2]]), 8, "non-numeric"),
    ("NumFrames", dict(nf=2), 3, "NumFrames=2 but the file has 3"),
    ("NumMarkers", dict(nm=3), 4, "NumMarkers=3"),
    ("units unknown", dict(units="inch"), 3, "Units"),
    ("data after blank", dict(rows=[GOOD_ROWS[0], "", GOOD_ROWS[1]]), 9, "blank line"),
])
def test_trc_bad_input(tmp_path, case, kwargs, line, match):
    _raises(_trc(tmp_path, **kwargs), read_trc, line, match)


def test_trc_bad_headers(tmp_path):
    no_units = TRC_HEAD.replace("\tUnits", "").replace("\tmm", "").format(nf=3, nm=2, units="", rate="100")
    _raises(_trc(tmp_path, head=no_units.replace("{units}", "")), read_trc, 2, "Units")
    _raises(_trc(tmp_path, head="Hello\n" + TRC_HEAD.split("\n", 1)[1].format(nf=3, nm=2, units="mm", rate=100)),
            read_trc, 1, "PathFileType")
    _raises(_trc(tmp_path, rate="fast"), read_trc, 3, "DataRate")
    with pytest.raises(DataFileError, match="does not exist"):
        read_trc(tmp_path / "missing.trc")


STO_OK = "demo\nversion=1\nnRows={nr}\nnColumns={nc}\ninDegrees=no\nendheader\ntime\ta\tb\n{rows}\n"


def _sto(tmp_path, rows=("0\t1\t2", "0.1\t3\t4"), nr=2, nc=3, text=None):
    p = tmp_path / "bad.sto"
    p.write_text(text if text is not None else STO_OK.format(nr=nr, nc=nc, rows="\n".join(rows)))
    return p


def test_sto_good_fixture_reads(tmp_path):
    t = read_sto(_sto(tmp_path))
    assert t.name == "demo" and t.labels == ["a", "b"] and t.in_degrees is False
    np.testing.assert_array_equal(t.data, [[1, 2], [3, 4]])


def test_sto_spaces_and_no_version(tmp_path):
    p = tmp_path / "old.mot"
    p.write_text("old simm motion\ndatacolumns 3\nnRows=2\nendheader\ntime  a  b\n 0.0  1 2\n 0.5 3   4\n")
    t = read_sto(p)
    assert t.labels == ["a", "b"] and t.in_degrees is None and t.comments == ["datacolumns 3"]
    np.testing.assert_array_equal(t.time, [0.0, 0.5])
    p2 = tmp_path / "v2.sto"
    p2.write_text("DataType=double\nversion=2\nOpenSimVersion=4.6\nendheader\ntime\tx\n0\t1.5\n1\t2.5\n")
    t2 = read_sto(p2)
    assert t2.name == "" and t2.metadata["OpenSimVersion"] == "4.6" and t2.data[:, 0].tolist() == [1.5, 2.5]


@pytest.mark.parametrize("case, kwargs, line, match", [
    ("nColumns vs labels", dict(nc=4), 4, "nColumns=4"),
    ("nRows", dict(nr=3), 3, "nRows=3 but the file has 2"),
    ("short row", dict(rows=("0\t1\t2", "0.1\t3")), 9, "2 cells but there are 3"),
    ("long row", dict(rows=("0\t1\t2\t9", "0.1\t3\t4")), 8, "4 cells"),
    ("non numeric", dict(rows=("0\t1\t2", "0.1\tx3\t4")), 9, "non-numeric value 'x3' in column 'a'"),
    ("time not increasing", dict(rows=("0\t1\t2", "0\t3\t4")), 9, "not greater"),
    ("time nan", dict(rows=("0\t1\t2", "nan\t3\t4")), 9, "finite"),
])
def test_sto_bad_input(tmp_path, case, kwargs, line, match):
    _raises(_sto(tmp_path, **kwargs), read_sto, line, match)


def test_sto_bad_structure(tmp_path):
    _raises(_sto(tmp_path, text="demo\nnRows=1\ntime\ta\n0\t1\n"), read_sto, None, "endheader")
    _raises(_sto(tmp_path, text="demo\nendheader\n\n"), read_sto, 2, "no column-label")
    _raises(_sto(tmp_path, text="demo\nnRows=two\nendheader\ntime\ta\n0\t1\n"), read_sto, 2, "integer")
    with pytest.raises(DataFileError, match="does not exist"):
        read_sto(tmp_path / "missing.sto")


# ------------------------------------------------------------------------------------------------
# writers: never overwrite the input, never leave a partial file
# ------------------------------------------------------------------------------------------------
def test_writers_refuse_to_overwrite_input(tmp_path):
    p = _sto(tmp_path)
    before = p.read_bytes()
    t = read_sto(p)
    with pytest.raises(DataFileError, match="refusing to overwrite"):
        write_sto(p, t)
    with pytest.raises(DataFileError, match="refusing to overwrite"):
        write_sto(tmp_path / "." / "bad.sto", t)  # same file by another spelling
    assert p.read_bytes() == before
    q = _trc(tmp_path)
    before = q.read_bytes()
    tr = read_trc(q)
    with pytest.raises(DataFileError, match="refusing to overwrite"):
        write_trc(q, tr)
    assert q.read_bytes() == before
    write_sto(tmp_path / "other.sto", t)  # elsewhere is fine


def test_refusals_say_of_this_command_only_in_a_command(tmp_path):
    """A library call that would write over its input, or write two outputs of one name, is
    refused with "an input" / "two outputs"; "of this command" is said only while a command-line
    command runs (the CLI's input_guard; its own test asserts its words)."""
    from arthron.io.files import atomic_write, input_guard, output_group
    p = _sto(tmp_path)
    t = read_sto(p)
    with pytest.raises(DataFileError) as e:
        write_sto(p, t)
    assert "refusing to overwrite an input (" in str(e.value) and "command" not in str(e.value)
    with input_guard():                                   # a tool called from Python
        read_sto(p)
        with pytest.raises(DataFileError) as e:
            write_sto(p, t)
        assert "command" not in str(e.value)
        with pytest.raises(DataFileError, match="a.txt: two outputs have the same name"), output_group():
            atomic_write(tmp_path / "a.txt", "1")
            atomic_write(tmp_path / "a.txt", "2")
    with input_guard([p], command=True):
        with pytest.raises(DataFileError, match="refusing to overwrite an input of this command"):
            write_sto(p, t)
        with pytest.raises(DataFileError, match="b.txt: two outputs of this command have the same name"), \
                output_group():
            atomic_write(tmp_path / "b.txt", "1")
            atomic_write(tmp_path / "b.txt", "2")
    with pytest.raises(DataFileError) as e:              # the command's wording does not stay
        write_sto(p, t)
    assert "command" not in str(e.value)
    assert not (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()


def _no_temp_files(folder):
    return [f for f in os.listdir(folder) if f.endswith(".tmp")] == []


def test_writers_leave_no_partial_file(tmp_path, monkeypatch):
    t = Table(name="x", time=np.array([0.0, 1.0]), labels=["a"], data=np.zeros((2, 2)))
    with pytest.raises(DataFileError, match="1 labels for 2 data columns"):
        write_sto(tmp_path / "x.sto", t)
    t = Table(name="x", time=np.array([1.0, 0.0]), labels=["a"], data=np.zeros((2, 1)))
    with pytest.raises(DataFileError, match="strictly increasing"):
        write_sto(tmp_path / "x.sto", t)
    tr = _random_trial(np.random.default_rng(0))
    tr.labels[1] = tr.labels[0]
    with pytest.raises(DataFileError, match="duplicate"):
        write_trc(tmp_path / "x.trc", tr)
    assert not (tmp_path / "x.sto").exists() and not (tmp_path / "x.trc").exists()
    assert _no_temp_files(tmp_path)

    # a failure at the last moment (disk full, ...) keeps the old file and removes the temp file
    dest = tmp_path / "keep.sto"
    dest.write_text("old content\n")
    good = Table(name="x", time=np.array([0.0, 1.0]), labels=["a"], data=np.zeros((2, 1)))

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sto_mod.os, "replace", boom)
    with pytest.raises(DataFileError, match="No space left"):
        write_sto(dest, good)
    monkeypatch.undo()
    assert dest.read_text() == "old content\n"
    assert _no_temp_files(tmp_path)
    with pytest.raises(DataFileError, match="folder does not exist"):
        write_sto(tmp_path / "nofolder" / "x.sto", good)


@needs_data
def test_sto_writer_keeps_the_c3d_adapter_header(tmp_path):
    """A table read from OpenSim's C3D-adapter output (version=3, DataType, OpenSimVersion)
    is written with the same version and keys, and NaN is spelled as OpenSim spells it."""
    src = DATA / "opensim-core" / "OpenSim" / "Common" / "Test" / "std_walking2_analog.sto"
    t = read_sto(src)
    write_sto(tmp_path / "a.sto", t)
    head = (tmp_path / "a.sto").read_text().split("endheader")[0].splitlines()
    assert "version=3" in head and "DataType=double" in head
    assert any(h.startswith("OpenSimVersion=") for h in head)
    t.data[0, 0] = np.nan
    write_sto(tmp_path / "b.sto", t, allow_nan=True)
    row = (tmp_path / "b.sto").read_text().split("endheader")[1].splitlines()[2]
    assert row.split("\t")[1] == "NaN"
    assert np.isnan(read_sto(tmp_path / "b.sto").data[0, 0])


@pytest.mark.parametrize("body", [
    "0\t1\t2\n\n0.5\t 3 \t4\n",          # blank line, spaces around cells: the fast parser
    "0 1 2\n  \n0.5   3 4\n",            # space-separated
    "0\t1\t2\t\n0.5\t3\t4\t\t\n",        # trailing tabs: the cell-by-cell parser
    "0\t\t2\n0.5\t3\t4\n",               # an empty cell reads as NaN
])
def test_sto_fast_and_cell_by_cell_row_parsers_agree(tmp_path, body):
    from arthron.io import sto
    p = tmp_path / "rows.sto"
    p.write_text("rows\nversion=1\nendheader\ntime\ta\tb\n" + body)
    t = read_sto(p)
    lines = p.read_text().splitlines()
    rows, linenos = sto._parse_rows(lines, 4, 3, ["time", "a", "b"], p)
    np.testing.assert_array_equal(np.column_stack([t.time, t.data]), np.array(rows))
    assert linenos == ([5, 7] if len(lines) == 7 else [5, 6])
    fast = sto._parse_rows_fast(lines, 4, 3)
    assert (fast is None) == (("\t\n" in body) or ("\t\t" in body))
    if fast is not None:
        np.testing.assert_array_equal(np.array(fast, float), np.array(rows))


@pytest.mark.parametrize("body, numpy_route", [
    ("0\t1\t2\n\n0.5\t-3.25e-2\t4\n", True),
    ("0\t1\t-0\n0.5\t3\t+.5\n", True),              # signed zero, signs, bare fractions
    ("0\tnan\t2\n0.5\tInfinity\t4\n", True),
    ("0 1 2\n0.5 3 4\n", True),
    ("0\t1\t2\n0.5 3 4\n", False),                    # mixed separators
    ("0\t1_0\t2\n0.5\t3\t4\n", False),              # Python's float reads it, numpy not
    ("0\t1\t2\n  \n0.5\t3\t4\n", False),            # a whitespace-only line
    ("0\t1\t2\t9\n0.5\t3\t4\t9\n", False),        # rows longer than the labels
])
def test_sto_numpy_route_reads_what_float_reads(tmp_path, body, numpy_route):
    """Rows read by numpy's parser hold the doubles Python's float gives (sign of zero
    included); what it does not read goes the per-line routes (same values or the same error)."""
    from arthron.io import sto
    p = tmp_path / "n.sto"
    p.write_text("n\nversion=1\nendheader\ntime\ta\tb\n" + body)
    lines = p.read_text().splitlines()
    assert (sto._parse_rows_numpy(lines, 4, 3) is not None) == numpy_route
    cells = [ln.split("\t") if "\t" in ln else ln.split() for ln in lines[4:] if ln.strip()]
    if any(len(c) != 3 for c in cells):
        with pytest.raises(DataFileError, match="cells"):
            read_sto(p)
        return
    t = read_sto(p)
    expected = np.array([[float(c) for c in row] for row in cells])
    got = np.column_stack([t.time, t.data])
    np.testing.assert_array_equal(got, expected)
    assert (np.signbit(got) == np.signbit(expected)).all()


def test_sto_rows_formatted_as_repr_by_either_route(monkeypatch):
    """The orjson route of the .sto writer gives exactly ``repr`` of every value: random bit
    patterns over the magnitudes it formats itself ([1e-4, 1e16) and zeros, rounded values
    too), and rows with smaller or larger magnitudes (repr's exponent form) mixed in."""
    from arthron.io import sto
    rng = np.random.default_rng(3)
    n = 60_000
    e = rng.uniform(np.log2(1e-4), np.log2(1e16), n)
    x = np.ldexp(rng.uniform(1, 2, n), np.floor(e).astype(int))
    x = (x.view(np.uint64) ^ rng.integers(0, 2 ** 20, n, dtype=np.uint64)).view(np.float64)
    x = x * np.where(rng.random(n) < 0.5, -1, 1)
    x = np.concatenate([x, np.round(x[:6000], 3), [0.0, -0.0, 1e-4, 0.1, 1.0, 100.0, 2.0 ** 53]])
    x = x[(np.abs(x) >= 1e-4) | (x == 0)]
    full = x[: x.size // 6 * 6].reshape(-1, 6)
    full[5, 2], full[9, 0], full[9, 4], full[11, 1] = 1e-05, -3.2e-7, 1e16, 5e-324
    fmt = "\t".join(["%r"] * 6) + "\n"
    expected = "".join(fmt % tuple(r) for r in full.tolist())
    assert sto._orjson is not None                 # a core dependency: the fast route is tested
    assert sto._format_rows(full, fmt) == expected
    monkeypatch.setattr(sto, "_orjson", None)
    assert sto._format_rows(full, fmt) == expected


def test_sto_rows_with_many_exponent_cells_formatted_as_repr():
    """Every row holding cells of repr's exponent form (|x| < 1e-4 or ≥ 1e16, as reaction
    loads and accelerations do), 1e-12 ... 1e19 over the table, zeros and -0.0: the orjson
    route (those cells put in place one by one) gives exactly ``repr`` of every value, str
    and bytes."""
    from arthron.io import sto
    rng = np.random.default_rng(5)
    full = rng.standard_normal((4000, 12)) * 10.0 ** rng.integers(-12, 20, (4000, 12))
    full[rng.random(full.shape) < 0.1] = 0.0
    full[0, 0], full[1, :] = -0.0, 1e-05
    fmt = "\t".join(["%r"] * 12) + "\n"
    expected = "".join(fmt % tuple(r) for r in full.tolist())
    assert full.size >= sto._ORJSON_MIN
    assert sto._format_rows(full, fmt) == expected
    assert sto._format_rows(full, fmt, as_bytes=True) == expected.encode("ascii")
    # orjson imported (just now, by the first call): small tables take its route too
    small = full[:30]
    assert "orjson" in sys.modules and 256 <= small.size < sto._ORJSON_MIN
    assert sto._format_rows(small, fmt) == "".join(fmt % tuple(r) for r in small.tolist())
