"""arthron.io.c3d against OpenSim's reference outputs for walking2.c3d (the std_walking2_* files
OpenSim's testC3DFileAdapter compares C3DFileAdapter with, after its downsample_table: every 10th
marker row, every 100th force row, plus the last row), and bad input."""
from __future__ import annotations

import numpy as np
import pytest

from arthron.errors import DataFileError, OptionError
from arthron.io.c3d import downsample_rows, read_c3d, rotation_matrix
from arthron.io.sto import read_sto
from arthron.io.trc import read_trc

from conftest import DATA, needs_data, needs_opensim

WALK2 = DATA / "opensim-core" / "OpenSim" / "Tests" / "shared" / "walking2.c3d"
STD = DATA / "opensim-core" / "OpenSim" / "Common" / "Test"

pytestmark = needs_data


@pytest.fixture(scope="module")
def origin():
    return read_c3d(WALK2)


@pytest.fixture(scope="module")
def cop():
    return read_c3d(WALK2, force_location="cop")


def test_markers_equal_opensim_reference(origin):
    # std_walking2_markers.trc holds 5 significant digits (Mokka export), so each reference cell
    # is the C3D value rounded to 5 digits: |ours - ref| <= half a unit of its last digit, plus one
    # float32 ulp (C3D stores float32; a decimal tie such as 56.6815 is 56.68149567 in float32).
    ref = read_trc(STD / "std_walking2_markers.trc")
    m = origin.markers
    rows = downsample_rows(m.n_frames, 10)
    assert m.labels == ref.labels
    assert ref.positions.shape == (len(rows), 44, 3)
    np.testing.assert_allclose(m.time[rows], ref.time, atol=1e-12)
    ours = m.positions[rows] * 1000.0  # mm, the file's unit
    theirs = ref.positions * 1000.0
    assert m.units == ref.units == "mm"
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))  # residual -1 -> NaN, same cells
    ok = ~np.isnan(theirs)
    assert ok.sum() > 5000
    mag = np.floor(np.log10(np.maximum(np.abs(theirs[ok]), 1e-300)))
    half_ulp = 0.5 * 10.0 ** (mag - 4)
    bound = half_ulp + np.abs(theirs[ok]) * 2.0 ** -23
    ratio = np.abs(ours[ok] - theirs[ok]) / bound
    assert ratio.max() <= 1.0, ratio.max()
    # most cells sit well inside the rounding interval, not at its edge
    assert np.median(np.abs(ours[ok] - theirs[ok]) / half_ulp) < 0.6


def _forces_vs(std_name, trial):
    ref = read_sto(STD / std_name)
    f = trial.forces
    rows = downsample_rows(f.n_rows, 100)
    assert f.labels == ref.labels
    np.testing.assert_allclose(f.time[rows], ref.time, atol=1e-12)
    ours, theirs = f.data[rows], ref.data
    # the reference is printed with 8 decimals: 1e-7 relative plus its rounding (5e-9)
    err = np.abs(ours - theirs) - 5e-9
    assert np.all(err <= 1e-7 * np.abs(theirs)), (err / np.maximum(np.abs(theirs), 1e-300)).max()
    return ours, theirs


def test_forces_at_platform_origin_equal_opensim(origin):
    ours, _ = _forces_vs("std_walking2_grfs.sto", origin)
    assert origin.forces.metadata["position_units"] == "mm"
    assert [p.type for p in origin.platforms] == [2, 2]
    # the point is the centre of the four corners, constant
    np.testing.assert_array_equal(ours[:, 3:6], np.broadcast_to(origin.platforms[0].centre, (len(ours), 3)))


def test_forces_at_centre_of_pressure_equal_opensim(cop):
    ours, _ = _forces_vs("std_cop_walking2_grfs.sto", cop)
    # only the free moment about the vertical remains (ezc3d's Tz vector: x, y at round-off)
    assert np.abs(ours[:, [6, 7, 15, 16]]).max() <= 1e-12 * np.abs(ours[:, [8, 17]]).max()


def test_origin_and_cop_are_the_same_wrench(origin, cop):
    # M_centre = M_cop + (p_cop - centre) x F at every frame where the platform is loaded
    for k, p in enumerate(origin.platforms):
        F, Mo = p.force, p.moment
        q = cop.platforms[k]
        loaded = np.abs(F[:, 2]) > 50.0
        assert loaded.sum() > 100
        Mc = q.free_moment + np.cross(q.cop - p.centre, F)
        np.testing.assert_allclose(Mc[loaded], Mo[loaded], rtol=1e-9, atol=1e-6 * np.abs(Mo).max())


def test_analog_channels_equal_opensim(origin):
    ref = read_sto(STD / "std_walking2_analog.sto")
    a = origin.analogs
    rows = downsample_rows(a.n_rows, 1000)
    assert a.labels == ref.labels
    np.testing.assert_allclose(a.time[rows], ref.time, atol=1e-12)
    np.testing.assert_allclose(a.data[rows], ref.data, rtol=1e-14, atol=0)
    assert origin.analog_rate == 2000.0 and origin.point_rate == 250.0


def test_rotation_and_si_units_apply_to_everything(origin):
    t = read_c3d(WALK2, rotation="x-90", units="m")
    R = rotation_matrix("x-90")
    np.testing.assert_array_equal(R, [[1, 0, 0], [0, 0, 1], [0, -1, 0]])
    np.testing.assert_allclose(t.markers.positions[..., 1], origin.markers.positions[..., 2])
    np.testing.assert_allclose(t.markers.positions[..., 2], -origin.markers.positions[..., 1])
    f0, f1 = origin.forces, t.forces
    assert f1.metadata["position_units"] == "m" and f1.metadata["moment_units"] == "Nm"
    for n in (1, 2):
        for kind, scale in (("f", 1.0), ("p", 1e-3), ("m", 1e-3)):
            a = np.stack([f0.column(f"{kind}{n}_{i}") for i in (1, 2, 3)], 1) * scale
            b = np.stack([f1.column(f"{kind}{n}_{i}") for i in (1, 2, 3)], 1)
            np.testing.assert_allclose(b, a @ R.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(t.platforms[0].corners, origin.platforms[0].corners * 1e-3 @ R.T)
    # "a,b" is R_b R_a
    np.testing.assert_allclose(rotation_matrix("x-90,y90"), rotation_matrix("y90") @ R)


def test_bad_options_and_files(tmp_path):
    with pytest.raises(OptionError, match="force_location"):
        read_c3d(WALK2, force_location="corner")
    with pytest.raises(OptionError, match="rotation"):
        read_c3d(WALK2, rotation="q90")
    with pytest.raises(OptionError, match="rotation"):
        rotation_matrix(np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(DataFileError, match="no such C3D file") as e:
        read_c3d(tmp_path / "missing.c3d")
    assert "missing.c3d" in str(e.value)
    bad = tmp_path / "bad.c3d"
    bad.write_bytes(b"this is not a c3d file" * 10)
    with pytest.raises(DataFileError, match="bad.c3d"):
        read_c3d(bad)


_WRITE_NO_PLATFORM = """
import sys, numpy as np, ezc3d
c = ezc3d.c3d()
c["parameters"]["POINT"]["RATE"]["value"] = [100]
c["parameters"]["POINT"]["LABELS"]["value"] = ("A", "B")
p = np.ones((4, 2, 5))
p[3] = 0.0
p[:3, 1, 2] = np.nan  # ezc3d writes it with residual -1: an invalid point
c["data"]["points"] = p
c.write(sys.argv[1])
"""


def test_no_force_platform_is_a_clear_error_when_grf_asked(tmp_path):
    # written in a child process: ezc3d's writer registers SWIG std::vector types that then
    # shadow OpenSim's in the same process (later opensim calcDerivative(StdVectorInt) fails)
    import subprocess
    import sys

    path = tmp_path / "noplate.c3d"
    subprocess.run([sys.executable, "-c", _WRITE_NO_PLATFORM, str(path)], check=True)
    t = read_c3d(path)
    assert t.forces is None and t.platforms == []
    assert t.markers.labels == ["A", "B"] and np.isnan(t.markers.positions[2, 1]).all()
    assert not np.isnan(t.markers.positions[2, 0]).any()
    with pytest.raises(DataFileError, match="no force platform") as e:
        t.require_forces()
    assert "noplate.c3d" in str(e.value)


# ------------------------------------------------------------------------------------------------
# arthron c3d TRIAL.c3d -o DIR
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from arthron.cli import main

    out = tmp_path_factory.mktemp("c3d")
    assert main(["c3d", str(WALK2), "-o", str(out), "--rotate", "x-90",
                 "--bodies", "calcn_r,calcn_l"]) == 0
    return out, read_c3d(WALK2, rotation="x-90", units="m")


def test_cli_writes_trc_mot_and_external_loads_read_back_by_arthron(exported):
    from arthron.io.setup import read_external_loads

    out, trial = exported
    assert sorted(p.name for p in out.iterdir()) == [
        "walking2.trc", "walking2_external_loads.xml", "walking2_grf.mot"]
    tr = read_trc(out / "walking2.trc")
    assert tr.units == "mm" and tr.labels == trial.markers.labels
    np.testing.assert_array_equal(tr.positions, trial.markers.positions)  # exact round trip
    g = read_sto(out / "walking2_grf.mot")
    np.testing.assert_array_equal(g.data, trial.forces.data)
    np.testing.assert_array_equal(g.time, trial.forces.time)
    el = read_external_loads(out / "walking2_external_loads.xml")
    assert [f.applied_to_body for f in el.forces] == ["calcn_r", "calcn_l"]
    res = el.resolve()
    np.testing.assert_array_equal(res["platform2"].torque, trial.platforms[1].moment)
    np.testing.assert_array_equal(res["platform1"].point[0], trial.platforms[0].centre)
    # rotated into OpenSim's Y-up ground: body weight pushes up along +Y at mid stance
    assert trial.forces.column("f1_2").max() > 500.0


@needs_opensim
def test_opensim_reads_the_written_trc_and_mot_with_equal_values(exported):
    import opensim as osim

    osim.Logger.setLevelString("error")
    out, trial = exported
    tab = osim.TimeSeriesTableVec3(str(out / "walking2.trc"))  # TRCFileAdapter
    flat = tab.flatten()
    M = flat.getMatrix().to_numpy().copy() / 1000.0
    assert list(tab.getColumnLabels()) == trial.markers.labels
    np.testing.assert_array_equal(np.array(tab.getIndependentColumn()), trial.markers.time)
    ours = trial.markers.positions.reshape(M.shape)
    assert np.array_equal(np.isnan(M), np.isnan(ours))
    np.testing.assert_array_max_ulp(M[~np.isnan(M)], ours[~np.isnan(ours)], 1)

    s = osim.Storage(str(out / "walking2_grf.mot"))
    assert s.getSize() == trial.forces.n_rows
    labels = [s.getColumnLabels().get(i) for i in range(s.getColumnLabels().getSize())]
    assert labels == ["time", *trial.forces.labels]
    t = osim.ArrayDouble()
    s.getTimeColumn(t)
    np.testing.assert_array_equal(t.getAsVector().to_numpy(), trial.forces.time)
    for j, lab in enumerate(trial.forces.labels):
        a = osim.ArrayDouble()
        s.getDataColumn(lab, a)
        np.testing.assert_array_equal(a.getAsVector().to_numpy(), trial.forces.data[:, j])
    el = osim.ExternalLoads(str(out / "walking2_external_loads.xml"), True)
    assert el.getSize() == 2 and el.get(0).get_applied_to_body() == "calcn_r"
    assert el.get(1).get_torque_identifier() == "m2_"


def test_cli_no_force_platform_and_bad_options(tmp_path, capsys):
    import subprocess
    import sys

    from arthron.cli import main

    path = tmp_path / "noplate.c3d"
    subprocess.run([sys.executable, "-c", _WRITE_NO_PLATFORM, str(path)], check=True)
    assert main(["c3d", str(path), "-o", str(tmp_path / "o")]) == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["noplate.trc"]
    assert "no force platform" in capsys.readouterr().out
    # one body for two platforms: an error, nothing written
    assert main(["c3d", str(WALK2), "-o", str(tmp_path / "o2"), "--bodies", "calcn_r"]) == 2
    assert "2 force platforms" in capsys.readouterr().err
    assert not (tmp_path / "o2").exists()
    assert main(["c3d", str(tmp_path / "nope.c3d"), "-o", str(tmp_path / "o3")]) == 2
    assert "nope.c3d" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------
# arthron ik / id with a .c3d trial
# ------------------------------------------------------------------------------------------------
_WRITE_FROM_TRC = """
import sys, numpy as np, ezc3d
sys.path.insert(0, sys.argv[3])
from arthron.io.trc import read_trc
tr = read_trc(sys.argv[1])
# OpenSim's Y-up ground turned into a Z-up lab (x+90), as motion-capture systems write it
R = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
xyz = tr.positions @ R.T * 1000.0
c = ezc3d.c3d()
c["parameters"]["POINT"]["RATE"]["value"] = [tr.data_rate]
c["parameters"]["POINT"]["LABELS"]["value"] = tuple(tr.labels)
c["parameters"]["POINT"]["UNITS"]["value"] = ["mm"]
p = np.ones((4, tr.n_markers, tr.n_frames))
p[:3] = xyz.transpose(2, 1, 0)
p[3] = 0.0
c["data"]["points"] = p
c.write(sys.argv[2])
"""


def test_ik_from_c3d_equals_ik_from_the_exported_trc(tmp_path):
    import subprocess
    import sys

    from arthron.cli import main
    from arthron.io.sto import read_mot
    from conftest import GAIT_PIPE, GAIT_REF_MODEL, ROOT

    c3d = tmp_path / "walk.c3d"
    subprocess.run([sys.executable, "-c", _WRITE_FROM_TRC, str(GAIT_PIPE / "subject01_walk1.trc"),
                    str(c3d), str(ROOT / "src")], check=True)
    assert main(["c3d", str(c3d), "-o", str(tmp_path / "x"), "--rotate", "x-90"]) == 0
    a, b = tmp_path / "from_c3d.mot", tmp_path / "from_trc.mot"
    rng = ["--time-range", "0.6", "0.7"]
    assert main(["ik", str(GAIT_REF_MODEL), str(c3d), "--rotate", "x-90", *rng, "-o", str(a)]) == 0
    assert main(["ik", str(GAIT_REF_MODEL), str(tmp_path / "x" / "walk.trc"), *rng, "-o", str(b)]) == 0
    ta, tb = read_mot(a), read_mot(b)
    assert ta.n_rows == 7 and ta.labels == tb.labels
    np.testing.assert_array_equal(ta.data, tb.data)
    # the C3D round trip (float32 mm, turned to Z-up and back) keeps the original trial's IK
    c = tmp_path / "from_original.mot"
    assert main(["ik", str(GAIT_REF_MODEL), str(GAIT_PIPE / "subject01_walk1.trc"), *rng,
                 "-o", str(c)]) == 0
    tc = read_mot(c)
    assert tc.labels == ta.labels
    assert np.abs(ta.data - tc.data).max() < 1e-3  # degrees (float32 mm: ~1e-4 mm per marker)


def test_id_with_c3d_loads_equals_id_with_the_exported_external_loads(exported, tmp_path, capsys):
    from arthron.cli import main
    from arthron.io.sto import read_sto as rs
    from conftest import GAIT_PIPE, GAIT_REF_MODEL

    out, _ = exported
    mot = GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot"
    a, b = tmp_path / "a.sto", tmp_path / "b.sto"
    common = [str(GAIT_REF_MODEL), str(mot), "--time-range", "0.6", "0.8"]
    assert main(["id", *common, "--external-loads", str(WALK2), "--bodies", "calcn_r,calcn_l",
                 "--rotate", "x-90", "-o", str(a)]) == 0
    assert main(["id", *common, "--external-loads", str(out / "walking2_external_loads.xml"),
                 "-o", str(b)]) == 0
    ta, tb = rs(a), rs(b)
    assert ta.labels == tb.labels and ta.n_rows > 5
    np.testing.assert_allclose(ta.data, tb.data, rtol=1e-12, atol=1e-9)
    capsys.readouterr()
    # no body named: a clear error; a C3D without platforms asked for GRF: a clear error
    assert main(["id", *common, "--external-loads", str(WALK2), "-o", str(tmp_path / "c.sto")]) == 2
    assert "--bodies" in capsys.readouterr().err
    import subprocess
    import sys
    nop = tmp_path / "noplate.c3d"
    subprocess.run([sys.executable, "-c", _WRITE_NO_PLATFORM, str(nop)], check=True)
    assert main(["id", *common, "--external-loads", str(nop), "--bodies", "calcn_r",
                 "-o", str(tmp_path / "d.sto")]) == 2
    err = capsys.readouterr().err
    assert "noplate.c3d" in err and "no force platform" in err
    assert not (tmp_path / "c.sto").exists() and not (tmp_path / "d.sto").exists()


_WRITE_TYPE4 = """
import sys, numpy as np, ezc3d
c = ezc3d.c3d(sys.argv[1])
rng = np.random.default_rng(0)
# a non-symmetric calibration matrix mixing forces with forces and moments with moments (mixing
# N with N*mm channels would bring float32 round-off of the moments into the forces)
C = np.eye(6) + 0.3 * rng.standard_normal((6, 6))
C[:3, 3:] = 0.0
C[3:, :3] = 0.0
fp = c["parameters"]["FORCE_PLATFORM"]
fp["TYPE"]["value"] = np.array([4, 4])
fp["CAL_MATRIX"]["value"] = np.stack([C, C], axis=2)
a = c["data"]["analogs"]
for k in range(2):
    a[0, 6 * k:6 * k + 6, :] = np.linalg.solve(C, a[0, 6 * k:6 * k + 6, :])  # C @ new = old
c["data"]["analogs"] = a
c.write(sys.argv[2])
"""


def test_type4_platform_applies_its_calibration_matrix(tmp_path, origin):
    # walking2 rewritten as type-4 platforms whose channels are C^-1 times the type-2 channels:
    # the wrenches must be those of the type-2 file (C3D: channels -> C @ channels)
    import subprocess
    import sys

    path = tmp_path / "type4.c3d"
    subprocess.run([sys.executable, "-c", _WRITE_TYPE4, str(WALK2), str(path)], check=True)
    t = read_c3d(path)
    assert [p.type for p in t.platforms] == [4, 4]
    assert not np.allclose(t.platforms[0].cal_matrix, np.eye(6))
    a, b = origin.forces.data, t.forces.data
    # float32 storage of the channels and of CAL_MATRIX: ~1e-7 of each column's range
    scale = np.abs(a).max(axis=0)
    assert np.all(np.abs(a - b).max(axis=0) <= 5e-6 * scale)
