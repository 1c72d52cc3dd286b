"""InverseDynamicsTool ``joints_to_report_body_forces``: arthron's body forces at joints against
OpenSim 4.6's ``body_forces_at_joints.sto``, both run here from setup files written in tmp_path.

Tolerance: OpenSim prints 8 decimals (±5e-9) and arthron's generalized forces agree with
OpenSim's within ~1e-9 N·m (tests/test_inverse_dynamics.py), so 2e-8 absolute (N, N·m) plus
1e-9 relative; arthron measures ≤ 5.1e-9 on Gait2354 and the Thoracoscapular model.
"""
from __future__ import annotations

import numpy as np
import pytest

import oracle
from conftest import GAIT_PIPE, GAIT_REF_MODEL, TSM, needs_data, needs_opensim, thoracoscapular_motion
from arthron.errors import DataFileError
from arthron.io.osim import read_osim
from arthron.io.sto import Table, read_sto, write_sto
from arthron.tools.id_tool import run_id_from_setup

GAIT_IK = GAIT_PIPE / "subject01_walk1_ik.mot"
GAIT_GRF = GAIT_PIPE / "subject01_walk1_grf.xml"


def _setup(path, results, model, coords, time_range, lowpass, joints, ext=None, body_file=None):
    body = f"<output_body_forces_file>{body_file}</output_body_forces_file>" if body_file else ""
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<OpenSimDocument Version="40000">'
        f'<InverseDynamicsTool name="t"><results_directory>{results}</results_directory>'
        f"<model_file>{model}</model_file><time_range>{time_range[0]} {time_range[1]}</time_range>"
        "<forces_to_exclude>Muscles</forces_to_exclude>"
        f"<external_loads_file>{ext or ''}</external_loads_file><coordinates_file>{coords}</coordinates_file>"
        f"<lowpass_cutoff_frequency_for_coordinates>{lowpass}</lowpass_cutoff_frequency_for_coordinates>"
        f"<output_gen_force_file>inverse_dynamics.sto</output_gen_force_file>"
        f"<joints_to_report_body_forces>{joints}</joints_to_report_body_forces>{body}"
        "</InverseDynamicsTool></OpenSimDocument>")
    return path


def _both(tmp_path, monkeypatch, body_file=None, **kw):
    """Run OpenSim's tool and arthron's on the same setup (results in two folders); return
    (OpenSim's table, arthron's table, arthron's run)."""
    import opensim as osim
    oracle._quiet(osim)
    monkeypatch.chdir(tmp_path)                       # OpenSim writes beside the cwd, never in data
    name = body_file or "body_forces_at_joints"
    fname = name if name.endswith(".sto") else name + ".sto"
    osim.InverseDynamicsTool(str(_setup(tmp_path / "os.xml", tmp_path / "os", body_file=body_file, **kw))).run()
    run = run_id_from_setup(_setup(tmp_path / "ar.xml", tmp_path / "ar", body_file=body_file, **kw))
    out = run.write()
    assert out == tmp_path / "ar" / "inverse_dynamics.sto" and run.body_forces_output == tmp_path / "ar" / fname
    return read_sto(tmp_path / "os" / fname), read_sto(run.body_forces_output), run


def _compare(ref, got):
    assert got.labels == ref.labels
    np.testing.assert_allclose(got.time, ref.time, atol=1e-8)
    assert got.data.shape == ref.data.shape
    worst = np.abs(got.data - ref.data).max(0)
    bad = {lab: float(w) for lab, w, r in zip(ref.labels, worst, np.abs(ref.data).max(0))
           if w > 2e-8 + 1e-9 * r}
    assert not bad, bad
    return float(worst.max())


@needs_data
@needs_opensim
@pytest.mark.parametrize("joints,body_file", [("All", None), ("knee_r back ALL", "bf"),
                                              ("hip_r knee_l ankle_l subtalar_r", "subset.sto")])
def test_gait2354_walk_body_forces_equal_opensim(tmp_path, monkeypatch, joints, body_file):
    ref, got, run = _both(tmp_path, monkeypatch, body_file=body_file, model=GAIT_REF_MODEL,
                          coords=GAIT_IK, ext=GAIT_GRF, time_range=(0.4, 1.6), lowpass=6.0, joints=joints)
    _compare(ref, got)
    model = read_osim(GAIT_REF_MODEL)
    names = joints.split()
    if "ALL" in (n.upper() for n in names):      # names before All, then every joint (OpenSim)
        k = [n.upper() for n in names].index("ALL")
        expect = names[:k] + list(model.joints)
    else:
        expect = names
    assert run.body_forces.joints == expect
    assert got.labels[:6] == [f"{expect[0]}_{model.joints[expect[0]].child_frame.split('/')[-1]}_{c}"
                              for c in ("FX", "FY", "FZ", "MX", "MY", "MZ")]
    assert np.abs(got.data).max() > 100          # the GRF reach the pelvis and the stance leg


@needs_data
@needs_opensim
def test_thoracoscapular_body_forces_equal_opensim(tmp_path, monkeypatch):
    """ScapulothoracicJoint: an Ellipsoid mobilizer (speeds ω_FM) plus a winging Pin, summed;
    a CustomJoint thorax with six coordinates, a WeldJoint (zeros)."""
    mot = thoracoscapular_motion(tmp_path / "tsm_motion.mot")
    ref, got, _ = _both(tmp_path, monkeypatch, model=TSM, coords=mot, time_range=(0.1, 0.9),
                        lowpass=6.0, joints="all")
    _compare(ref, got)
    st = [i for i, lab in enumerate(got.labels) if lab.startswith("scapulothoracic_")]
    assert len(st) == 6 and np.abs(got.data[:, st]).max() > 1.0
    assert not got.data[:, [i for i, lab in enumerate(got.labels) if lab.startswith("rc_")]].any()


@needs_opensim
def test_every_joint_type_body_forces_equal_opensim(tmp_path, monkeypatch):
    """Ball, Gimbal, Universal, Planar, Slider, Ellipsoid, Free and Pin joints with offset frames
    (the chain of tests/test_joint_types.py), a moving trial."""
    from test_joint_types import _chain_xml
    chain = tmp_path / "chain.osim"
    chain.write_text(_chain_xml())
    names = list(read_osim(chain).coordinates)
    t = np.linspace(0, 1, 101)
    data = 0.4 * np.sin(2 * np.pi * t[:, None] * (0.7 + 0.13 * np.arange(len(names))) + np.arange(len(names)))
    mot = tmp_path / "chain.mot"
    write_sto(mot, Table(name="chain", time=t, labels=names, data=data, in_degrees=False))
    ref, got, _ = _both(tmp_path, monkeypatch, model=chain, coords=mot, time_range=(0.1, 0.9),
                        lowpass=6.0, joints="All")
    _compare(ref, got)


@needs_data
def test_unknown_joint_is_a_typed_error_and_nothing_is_written(tmp_path):
    s = _setup(tmp_path / "bad_id_setup.xml", tmp_path / "out", GAIT_REF_MODEL, GAIT_IK, (0.4, 0.6),
               6.0, "hip_r knee_R", ext=GAIT_GRF)
    with pytest.raises(DataFileError, match=r"bad_id_setup\.xml.*joints_to_report_body_forces.*knee_R"):
        run_id_from_setup(s)
    assert not (tmp_path / "out").exists()


@needs_data
def test_body_forces_file_onto_an_input_is_refused(tmp_path):
    mot = tmp_path / "walk.sto"
    write_sto(mot, read_sto(GAIT_IK))
    s = _setup(tmp_path / "id.xml", tmp_path, GAIT_REF_MODEL, mot, (0.4, 0.6), 6.0, "All",
               ext=GAIT_GRF, body_file="walk.sto")
    before = mot.read_bytes()
    with pytest.raises(DataFileError, match=r"walk\.sto"):
        run_id_from_setup(s).write()
    assert mot.read_bytes() == before


@needs_data
def test_output_elsewhere_takes_the_body_forces_along(tmp_path):
    """``arthron id --setup S -o DIR/OUT.sto`` leaves the setup's folder untouched."""
    s = _setup(tmp_path / "id.xml", "results", GAIT_REF_MODEL, GAIT_IK, (0.4, 0.6), 6.0,
               "knee_r", ext=GAIT_GRF, body_file="knee")
    run = run_id_from_setup(s, output=tmp_path / "elsewhere" / "id.sto")
    run.write()
    bf = read_sto(tmp_path / "elsewhere" / "knee.sto")
    assert bf.labels == [f"knee_r_tibia_r_offset_{c}" for c in ("FX", "FY", "FZ", "MX", "MY", "MZ")]
    np.testing.assert_allclose(bf.data, run.body_forces.data, atol=1e-8, rtol=1e-8)
    assert not (tmp_path / "results").exists()


@needs_data
def test_command_without_a_setup_writes_the_same_body_forces(tmp_path, capsys):
    """``arthron id MODEL MOTION --body-forces knee_r,hip_r`` gives the file a setup with the same
    inputs and ``joints_to_report_body_forces`` gives (same labels, same numbers); an unknown
    joint is one line naming the option, and nothing is written."""
    from arthron.cli import main
    setup = _setup(tmp_path / "s.xml", tmp_path / "viaset", GAIT_REF_MODEL, GAIT_IK, (0.5, 1.0), 6,
                   "knee_r hip_r")
    run = run_id_from_setup(setup)
    run.write()
    ref = read_sto(run.body_forces_output)
    out = tmp_path / "cli"
    assert main(["id", str(GAIT_REF_MODEL), str(GAIT_IK), "--lowpass", "6", "--time-range", "0.5", "1.0",
                 "--body-forces", "knee_r,hip_r", "-o", str(out / "id.sto")]) == 0
    got = read_sto(out / "body_forces_at_joints.sto")
    assert got.labels == ref.labels and got.labels[0] == "knee_r_tibia_r_offset_FX"
    # the command fits its splines by arthron's numpy route (runtime.light_imports), the library
    # by scipy's: the same numbers to rounding (seen 2.5e-11 N·m), not bit for bit
    np.testing.assert_allclose(got.data, ref.data, rtol=0, atol=1e-9)
    capsys.readouterr()
    assert main(["id", str(GAIT_REF_MODEL), str(GAIT_IK), "--body-forces", "nope",
                 "-o", str(tmp_path / "bad" / "id.sto")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--body-forces" in err[0] and "'nope'" in err[0]
    assert not (tmp_path / "bad").exists()
