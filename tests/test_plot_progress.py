"""`arthron plot` (time series with OpenSim's units) and the progress bar of the long commands
(drawn on a terminal only)."""
from __future__ import annotations

import io
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ARM26, ARM26_TUT, GAIT_PIPE, REF, ROOT, needs_data
from arthron.cli import main
from arthron.errors import DataFileError
from arthron.io.sto import read_sto
from arthron.progress import progress_bar

pytest.importorskip("matplotlib", reason="matplotlib (extras 'plot' and 'test') not installed")

WALK_IK = GAIT_PIPE / "subject01_walk1_ik.mot"
ARM_IK = ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"
T1 = REF / "task1_arm26"
ARM_TUT_MODEL = ARM26_TUT / "InverseKinematics" / "arm26.osim"
ARM_TRC = ARM26_TUT / "InverseKinematics" / "arm26_elbow_flex.trc"


def _labels(fig):
    return [(ax.get_ylabel(), len(ax.lines), [ln.get_label() for ln in ax.lines]) for ax in fig.axes]


# ------------------------------------------------------------------------------------- plot
@needs_data
def test_coordinates_in_degrees_and_metres_with_globs():
    import matplotlib.pyplot as plt

    from arthron.plots import plot_time_series
    t = read_sto(WALK_IK)
    fig = plot_time_series(t, ["hip_flexion_*", "knee_angle_r", "pelvis_t?"])
    try:
        assert _labels(fig) == [
            ("angle (deg)", 3, ["hip_flexion_r", "hip_flexion_l", "knee_angle_r"]),
            ("translation (m)", 3, ["pelvis_tx", "pelvis_ty", "pelvis_tz"])]
        assert fig.axes[-1].get_xlabel() == "time (s)"
        assert fig.axes[0].get_title() == WALK_IK.name
        x, y = fig.axes[0].lines[2].get_data()
        np.testing.assert_array_equal(x, t.time)
        np.testing.assert_array_equal(y, t.column("knee_angle_r"))   # the file's values, in degrees
    finally:
        plt.close(fig)


@needs_data
@pytest.mark.parametrize("path, columns, expected", [
    (T1 / "ID_filtered" / "arm26_InverseDynamics.sto", ["*_moment"], [("moment (N·m)", 2)]),
    (T1 / "JR_child_in_ground" / "arm26_JointReaction_ReactionLoads.sto", ["r_elbow_on_r_ulna_radius_hand_in_ground_f?",
     "r_elbow_*_mx"], [("force (N)", 3), ("moment (N·m)", 1)]),
    (T1 / "SO_phys" / "arm26_StaticOptimization_activation.sto", ["BIC*"], [("activation", 2)]),
    (T1 / "SO_phys" / "arm26_StaticOptimization_force.sto", ["TRIlong", "BRA"], [("force (N)", 2)]),
    (GAIT_PIPE / "subject01_walk1_grf.mot", ["ground_force_v?", "ground_torque_y"],
     [("force (N)", 3), ("moment (N·m)", 1)]),
])
def test_units_of_opensim_outputs(path, columns, expected):
    import matplotlib.pyplot as plt

    from arthron.plots import plot_time_series
    fig = plot_time_series(read_sto(path), columns)
    try:
        assert [(y, n) for y, n, _ in _labels(fig)] == expected
    finally:
        plt.close(fig)


@needs_data
def test_a_model_tells_rotational_from_translational(tmp_path):
    import matplotlib.pyplot as plt

    from arthron.io.osim import read_osim
    from arthron.plots import plot_time_series
    fig = plot_time_series(read_sto(ARM_IK), ["r_*"], model=read_osim(ARM26))
    try:
        assert [(y, n) for y, n, _ in _labels(fig)] == [("angle (deg)", 2)]
    finally:
        plt.close(fig)


@needs_data
def test_plot_command_writes_a_png_and_names_unknown_columns(tmp_path, capsys):
    out = tmp_path / "ik.png"
    assert main(["plot", str(WALK_IK), "--columns", "hip_flexion_r,knee_angle_*", "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    assert main(["plot", str(WALK_IK), "--columns", "hip_flexion_r,ankle_flexion", "-o",
                 str(tmp_path / "bad.png")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(WALK_IK) in err and "no column 'ankle_flexion'" in err
    assert not (tmp_path / "bad.png").exists()
    from arthron.plots import select_columns
    with pytest.raises(DataFileError, match="no column 'x_\\*'"):
        select_columns(read_sto(WALK_IK), ["x_*"])


@needs_data
def test_plot_without_matplotlib_names_the_extra(tmp_path, capsys, monkeypatch):
    for m in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, m)
    monkeypatch.setitem(sys.modules, "matplotlib", None)       # import matplotlib -> ImportError
    assert main(["plot", str(WALK_IK), "--columns", "hip_flexion_r", "-o", str(tmp_path / "a.png")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'arthron[plot]'" in err


# --------------------------------------------------------------------------------- progress
class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_draws_on_a_terminal_only():
    quiet = io.StringIO()
    with progress_bar("inverse kinematics", stream=quiet) as bar:
        assert not bar.active
        bar.stage("solving")
        for i in range(5):
            bar(i + 1, 5)
    assert quiet.getvalue() == ""
    tty = _Terminal()
    with progress_bar("inverse kinematics", stream=tty) as bar:
        assert bar.active
        bar.stage("solving")
        bar(3, 5)
        bar._live.refresh()
    assert "inverse kinematics: solving" in tty.getvalue() and "3/5" in tty.getvalue()


def _run(args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), TERM="xterm-256color", COLUMNS="100")
    return subprocess.run([sys.executable, "-m", "arthron.cli", *args], env=env, timeout=300, **kw)


@needs_data
def test_commands_print_only_their_own_lines_when_not_on_a_terminal(tmp_path):
    out = tmp_path / "ik.mot"
    r = _run(["ik", str(ARM_TUT_MODEL), str(ARM_TRC), "-o", str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert r.stdout.splitlines() == [ln for ln in r.stdout.splitlines() if ln.startswith("wrote ")]
    assert "\x1b" not in r.stdout
    r = _run(["id", str(ARM_TUT_MODEL), str(out), "-o", str(tmp_path / "id.sto")], capture_output=True, text=True,
             cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == "" and r.stdout.startswith("wrote ") and r.stdout.count("\n") == 1


@needs_data
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminal test written for Linux")
def test_a_long_command_draws_its_bar_on_a_terminal(tmp_path):
    import pty
    master, slave = pty.openpty()
    try:
        r = _run(["ik", str(ARM_TUT_MODEL), str(ARM_TRC), "-o", str(tmp_path / "ik.mot")], stdout=subprocess.PIPE,
                 stderr=slave, cwd=tmp_path)
        os.close(slave)
        slave = None
        chunks = []
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:
                break
            if not b:
                break
            chunks.append(b)
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    assert r.returncode == 0
    drawn = b"".join(chunks).decode("utf-8", "replace")
    assert "inverse kinematics" in drawn and "/121" in drawn        # the frames, counted
    assert r.stdout.decode().startswith("wrote ")                    # stdout (a pipe) stays clean


def test_non_finite_values_are_drawn_as_gaps_and_named(tmp_path):
    """A column with NaN or infinite values is drawn with gaps, and a warning names it and how
    many values are missing; finite columns raise no warning."""
    import warnings

    import matplotlib.pyplot as plt

    from arthron.errors import ArthronWarning
    from arthron.plots import plot_time_series
    from arthron.tables import Table
    t = np.linspace(0.0, 1.0, 6)
    data = np.column_stack([t, t ** 2])
    data[2, 0], data[4, 0] = np.nan, np.inf
    table = Table(name="gaps", time=t, labels=["knee_angle_r", "hip_flexion_r"], data=data, in_degrees=True)
    with pytest.warns(ArthronWarning, match=r"knee_angle_r \(2 of 6\)"):
        fig = plot_time_series(table, ["knee_angle_r", "hip_flexion_r"])
    plt.close(fig)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ArthronWarning)
        plt.close(plot_time_series(table, ["hip_flexion_r"]))
