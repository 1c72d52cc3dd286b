"""Malformed values in real files give a typed arthron error naming the file and the element or
line (issue 11, finding 11), never a traceback. Each case is a one-line change to a real file
from ../shared/data, written to a temporary folder."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from conftest import ARM26, DATA, GAIT_PIPE, GAIT_REF_MODEL, REF, needs_data, needs_opensim
from arthron.cli import main
from arthron.errors import ArthronError, DataFileError, ModelFileError, OptionError
from arthron.io.osim import read_osim
from arthron.io.setup import read_external_loads, read_id_setup
from arthron.io.sto import read_sto
from arthron.io.trc import read_trc
from arthron.multibody.tree import compile_model

PENDULUM = DATA / "opensim-reference" / "task6_pendulum" / "pendulum_off0.osim"
LEGACY3 = DATA / "opensim-models-legacy" / "gait10dof18musc_v30000.osim"
LEGACY2 = DATA / "opensim-models-legacy" / "arm26_v20303.osim"
IK_MOT = GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot"
ARM_IK = (DATA / "opensim-models" / "Tutorials" / "Computed_Muscle_Control" / "OutputReference"
          / "InverseKinematics" / "arm26_InverseKinematics.mot")

pytestmark = needs_data


def _mutated(tmp_path, src, old, new, name=None, count=1, regex=False):
    text = src.read_text(encoding="utf-8", errors="replace")
    if regex:
        out, n = re.subn(old, new, text, count=count, flags=re.S)
    else:
        n = text.count(old)
        out = text.replace(old, new, count)
    assert n >= 1, f"{old!r} not in {src}"
    p = tmp_path / (name or src.name)
    p.write_text(out, encoding="utf-8")
    return p


def _typed(exc_type, fn, *args, where=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc_type) as ei:
            fn(*args)
    e = ei.value
    assert e.path is not None, f"no file in {e}"
    assert "np.float64" not in str(e) and "np.int64" not in str(e), str(e)
    if where is not None:
        assert where in str(e), f"{where!r} not in {e}"
    return e


def _absolute_setup(tmp_path, src, subs=(), name=None):
    """A pipeline setup copied to tmp_path, file names made absolute, then ``subs`` applied."""
    text = src.read_text()
    for n in ("subject01_simbody.osim", "subject01_walk1_grf.xml", "subject01_walk1_ik.mot",
              "subject01_walk1.trc", "gait2354_Scale_MarkerSet.xml", "subject01_static.trc",
              "gait2354_CMC_Actuators.xml"):
        target = GAIT_PIPE / n if (GAIT_PIPE / n).exists() else GAIT_PIPE / "OutputReference" / n
        text = re.sub(rf"(>\s*){re.escape(n)}(\s*<)", rf"\g<1>{target}\g<2>", text)
    text = re.sub(r"(>\s*)gait2354_simbody.osim(\s*<)",
                  rf"\g<1>{DATA / 'opensim-models' / 'Models' / 'Gait2354_Simbody' / 'gait2354_simbody.osim'}\g<2>",
                  text)
    for a, b in subs:
        assert re.search(a, text, flags=re.S), a
        text = re.sub(a, b, text, count=1, flags=re.S)
    p = tmp_path / (name or src.name)
    p.write_text(text)
    return p


# ----------------------------------------------------------------------------- models
def test_version_not_an_integer(tmp_path):
    p = _mutated(tmp_path, PENDULUM, r'Version="\d+"', 'Version="4.0"', regex=True)
    _typed(ModelFileError, read_osim, p, where="line")


def test_mass_with_unit(tmp_path):
    p = _mutated(tmp_path, PENDULUM, r"<mass>([^<]*)</mass>", r"<mass>1 kg</mass>", regex=True)
    _typed(ModelFileError, read_osim, p, where="<mass>")


@pytest.mark.parametrize("tag,src,old,new", [
    ("default_value", GAIT_REF_MODEL, r"<default_value>\s*(-?\d+)\.(\d+)", r"<default_value>\1,\2"),
    ("scale_factors", ARM26, r"<scale_factors>1 1 1", "<scale_factors>1,5 1 1"),
    ("radius", ARM26, r"<radius>\s*(-?\d+)\.(\d+)", r"<radius>\1,\2")])
def test_decimal_comma_in_model(tmp_path, tag, src, old, new):
    p = _mutated(tmp_path, src, old, new, regex=True)
    e = _typed(ModelFileError, read_osim, p, where=f"<{tag}")
    assert "line" in str(e)


def test_pathwrap_range_nan(tmp_path):
    p = _mutated(tmp_path, ARM26, r"(<PathWrap .*?<range>)[^<]*(</range>)", r"\1nan 2\2", regex=True)
    _typed(ModelFileError, read_osim, p, where="<range>")


def test_3x_marker_without_location_reads_at_the_origin_as_opensim(tmp_path):
    p = _mutated(tmp_path, LEGACY2, r"(<Marker name=\"r_acromion\">.*?)<location>[^<]*</location>",
                 r"\1", regex=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = read_osim(p)
    np.testing.assert_array_equal(m.markers["r_acromion"].location, np.zeros(3))
    assert np.any(read_osim(LEGACY2).markers["r_acromion"].location != 0)


def test_pin_joint_without_coordinates_fails_in_compilation_naming_the_joint(tmp_path):
    p = _mutated(tmp_path, PENDULUM, r"<coordinates>.*?</coordinates>", "", regex=True)
    m = read_osim(p)
    _typed(ModelFileError, compile_model, m, where="PinJoint name='pin'")


def test_custom_joint_without_spatial_transform(tmp_path):
    p = _mutated(tmp_path, ARM26, r"<SpatialTransform>.*?</SpatialTransform>", "", regex=True)
    m = read_osim(p)
    _typed(ModelFileError, compile_model, m, where="CustomJoint")


def test_nonfinite_model_values_are_refused(tmp_path):
    p = _mutated(tmp_path, PENDULUM, r"<mass_center>[^<]*</mass_center>",
                 "<mass_center>0 nan 0</mass_center>", regex=True)
    _typed(ModelFileError, read_osim, p, where="<mass_center>")


# ----------------------------------------------------------------------------- tables
def test_nrows_inf(tmp_path):
    p = _mutated(tmp_path, IK_MOT, re.search(r"nRows=\d+", IK_MOT.read_text()).group(), "nRows=inf")
    _typed(DataFileError, read_sto, p, where="line")


def test_time_message_prints_plain_numbers(tmp_path):
    lines = IK_MOT.read_text().splitlines()
    k = next(i for i, l in enumerate(lines) if l.strip() == "endheader") + 6
    cells = lines[k].split("\t")
    cells[0] = "-1"
    lines[k] = "\t".join(cells)
    p = tmp_path / "m.mot"
    p.write_text("\n".join(lines))
    e = _typed(DataFileError, read_sto, p)
    assert "time -1.0 is not greater" in str(e)


def test_trc_frame_number_1e20(tmp_path):
    trc = GAIT_PIPE / "subject01_walk1.trc"
    lines = trc.read_text().splitlines()
    cells = lines[6].split("\t")
    cells[0] = "1e20"
    lines[6] = "\t".join(cells)
    p = tmp_path / trc.name
    p.write_text("\n".join(lines) + "\n")
    _typed(DataFileError, read_trc, p, where="line 7")


def test_inf_cell_in_motion_is_refused_naming_column_and_time(tmp_path, capsys):
    lines = ARM_IK.read_text().splitlines()
    k = next(i for i, l in enumerate(lines) if l.strip() == "endheader") + 5
    cells = lines[k].split("\t")
    labels = lines[k - 4].split("\t") if "\t" in lines[k - 4] else None
    cells[1] = "inf"
    lines[k] = "\t".join(cells)
    p = tmp_path / "arm_ik.mot"
    p.write_text("\n".join(lines))
    assert main(["id", str(ARM26), str(p), "-o", str(tmp_path / "id.sto")]) == 2
    err = capsys.readouterr().err
    assert "arm_ik.mot" in err and "non-finite" in err and "at time" in err and "Traceback" not in err
    assert not (tmp_path / "id.sto").exists()


def _grf_with(tmp_path, fn):
    grf = GAIT_PIPE / "subject01_walk1_grf.mot"
    lines = grf.read_text().splitlines()
    h = next(i for i, l in enumerate(lines) if l.strip() == "endheader") + 1
    labels = lines[h].split()
    fn(lines, h, labels)
    (tmp_path / grf.name).write_text("\n".join(lines) + "\n")
    loads = _mutated(tmp_path, GAIT_PIPE / "subject01_walk1_grf.xml", "subject01_walk1_grf.mot",
                     str(tmp_path / grf.name))
    return read_external_loads(loads)


def test_nan_centre_of_pressure_without_load_is_no_load(tmp_path):
    """Force-plate exports leave the centre of pressure NaN while the foot is off the plate."""
    rows = []

    def nan_cop(lines, h, labels):
        vy, px = labels.index("ground_force_vy"), labels.index("ground_force_px")
        for r in range(h + 1, len(lines)):
            c = lines[r].split()
            if float(c[vy]) == 0.0:
                c[px] = c[px + 1] = c[px + 2] = "NaN"
                lines[r] = "\t".join(c)
                rows.append(r)
    ext = _grf_with(tmp_path, nan_cop)
    assert rows
    with pytest.warns(Warning, match="ground_force_px.*read as no load"):
        res = ext.resolve()
    assert np.all(np.isfinite(res["right"].point))


def test_nan_centre_of_pressure_under_load_is_refused(tmp_path):
    def nan_cop(lines, h, labels):
        vy, px = labels.index("ground_force_vy"), labels.index("ground_force_px")
        for r in range(h + 1, len(lines)):
            c = lines[r].split()
            if float(c[vy]) > 100:
                c[px] = "NaN"
                lines[r] = "\t".join(c)
                return
    ext = _grf_with(tmp_path, nan_cop)
    _typed(DataFileError, ext.resolve, where="ExternalForce 'right'")


# ----------------------------------------------------------------------------- setups
def test_id_setup_without_model_file(tmp_path, capsys):
    p = _absolute_setup(tmp_path, GAIT_PIPE / "subject01_Setup_InverseDynamics.xml",
                        [(r"<model_file>[^<]*</model_file>", "")])
    assert main(["id", "--setup", str(p)]) == 2
    err = capsys.readouterr().err
    assert "model_file" in err and str(p) in err and "Traceback" not in err


@pytest.mark.parametrize("tag", ["time_range", "lowpass_cutoff_frequency_for_coordinates"])
def test_id_setup_decimal_comma(tmp_path, tag):
    p = _absolute_setup(tmp_path, GAIT_PIPE / "subject01_Setup_InverseDynamics.xml",
                        [(rf"<{tag}>\s*(\d+)\.(\d+)", rf"<{tag}>\1,\2")])
    _typed(DataFileError, read_id_setup, p, where=tag)


def test_ik_setup_decimal_comma_in_accuracy(tmp_path, capsys):
    p = _absolute_setup(tmp_path, GAIT_PIPE / "subject01_Setup_IK.xml",
                        [(r"<accuracy>1e-005", "<accuracy>0,00001")])
    assert main(["ik", "--setup", str(p)]) == 2
    err = capsys.readouterr().err
    assert "accuracy" in err and str(p) in err and "Traceback" not in err


def _jr_setup(tmp_path, subs=()):
    return _absolute_setup(tmp_path, GAIT_PIPE / "subject01_Setup_Analyze_Reactions.xml", [
        (r"<model_file>\s*subject01_simbody_adjusted.osim",
         f"<model_file>{GAIT_PIPE / 'OutputReference' / 'subject01_simbody_adjusted.osim'}"),
        (r"<states_file>[^<]*</states_file>", "<states_file></states_file>"),
        (r"<coordinates_file>\s*</coordinates_file>", f"<coordinates_file>{IK_MOT}</coordinates_file>"),
        (r"<results_directory>[^<]*<", f"<results_directory>{tmp_path / 'res'}<"),
        (r"<final_time>[^<]*<", "<final_time>0.6<"),
        *subs])


def test_jr_setup_decimal_comma_in_initial_time(tmp_path, capsys):
    p = _jr_setup(tmp_path, [(r"<initial_time>[^<]*<", "<initial_time>0,5<")])
    assert main(["jr", "--setup", str(p)]) == 2
    err = capsys.readouterr().err
    assert "initial_time" in err and str(p) in err and "Traceback" not in err


def test_jr_setup_force_set_files_unassigned_means_none(tmp_path, capsys):
    """OpenSim reads ``Unassigned`` as no file."""
    p = _jr_setup(tmp_path, [(r"<force_set_files>[^<]*gait2354[^<]*<", "<force_set_files>Unassigned<")])
    out = tmp_path / "jr.sto"
    assert main(["jr", "--setup", str(p), "-o", str(out)]) == 0, capsys.readouterr().err
    assert read_sto(out).data.shape[0] > 0


def test_scale_measurement_without_marker_pair(tmp_path, capsys):
    p = _absolute_setup(tmp_path, GAIT_PIPE / "subject01_Setup_Scale.xml", [
        (r"<MarkerPairSet name=\"\">.*?</MarkerPairSet>", '<MarkerPairSet name=""><objects/></MarkerPairSet>')])
    assert main(["scale", "--setup", str(p), "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "measurement 'torso' has no MarkerPair" in err and str(p) in err


def test_scale_setup_decimal_comma_in_mass(tmp_path, capsys):
    p = _absolute_setup(tmp_path, GAIT_PIPE / "subject01_Setup_Scale.xml",
                        [(r"<mass>\s*72.6", "<mass>72,6")])
    assert main(["scale", "--setup", str(p), "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "mass" in err and str(p) in err and "Traceback" not in err


def test_paths_on_a_model_without_muscles(tmp_path, capsys):
    p = _mutated(tmp_path, ARM26, r"<ForceSet.*?</ForceSet>",
                 '<ForceSet name="forceset"><objects/></ForceSet>', regex=True)
    assert main(["paths", str(p), str(ARM_IK), "-o", str(tmp_path / "pp")]) == 2
    err = capsys.readouterr().err
    assert "no muscle" in err and str(p) in err


# ----------------------------------------------------------------------------- solver errors name the file
def test_spline_sample_count_names_the_motion(tmp_path):
    """Filtering needs at least six samples (OpenSim's quintic GCV spline): the error names the
    motion file."""
    from arthron.solvers.inverse_dynamics import run_inverse_dynamics
    lines = ARM_IK.read_text().splitlines()
    k = next(i for i, l in enumerate(lines) if l.strip() == "endheader") + 2
    p = tmp_path / "short.mot"
    p.write_text("\n".join(lines[:k + 3]).replace("nRows=121", "nRows=3"))
    _typed(ArthronError, lambda: run_inverse_dynamics(read_osim(ARM26), read_sto(p), lowpass_hz=6.0),
           where="short.mot")


def test_no_marker_data_names_the_trial(tmp_path):
    from dataclasses import replace
    from arthron.solvers.inverse_kinematics import solve_ik
    trial = read_trc(GAIT_PIPE / "subject01_walk1.trc")
    pos = trial.positions.copy()
    pos[:] = np.nan
    bad = replace(trial, positions=pos)
    e = _typed(ArthronError, solve_ik, read_osim(GAIT_REF_MODEL), bad, None,
               where="subject01_walk1.trc")
    assert "no marker data" in str(e) or "no frame" in str(e) or "no marker" in str(e)


def test_reaction_options_name_the_model():
    from arthron.solvers.reactions import joint_reactions
    e = _typed(OptionError, lambda: joint_reactions(read_osim(ARM26), read_sto(ARM_IK), joints=["nope"]))
    assert str(ARM26) in str(e)


# ----------------------------------------------------------------------------- finding 4
@pytest.mark.skipif(not __import__("conftest").HAVE_OPENSIM, reason="needs OpenSim")
def test_massless_body_has_no_inertia_as_in_opensim(tmp_path):
    """A body of mass 0 with inertia 1 1 1 (as MoBL-ARMS' thorax): OpenSim 4.6's ID ignores the
    inertia; so does arthron's (keeping it would change the lumbar moments by newton-metres)."""
    import oracle
    from arthron.solvers.inverse_dynamics import run_inverse_dynamics
    p = _mutated(tmp_path, GAIT_REF_MODEL,
                 r"(<Body name=\"torso\">.*?<mass>)[^<]*(</mass>.*?<inertia>)[^<]*(</inertia>)",
                 r"\g<1>0\g<2>1 1 1 0 0 0\g<3>", regex=True)
    model = read_osim(p)
    assert model.bodies["torso"].mass == 0 and model.bodies["torso"].inertia[0, 0] == 1
    labels, t, ref = oracle.run_id_tool(p, IK_MOT, tmp_path, (0.6, 0.9))
    res = run_inverse_dynamics(model, read_sto(IK_MOT), time_range=(0.6, 0.9))
    np.testing.assert_allclose(res.time, t, atol=1e-12)
    for j, lab in enumerate(labels):
        np.testing.assert_allclose(res.column(lab), ref[:, j], atol=1e-6, rtol=1e-8, err_msg=lab)
    # the inertia would matter if it were kept
    model.bodies["torso"].mass = 1e-300
    kept = run_inverse_dynamics(model, read_sto(IK_MOT), time_range=(0.6, 0.9))
    assert np.abs(kept.column("lumbar_extension_moment") - res.column("lumbar_extension_moment")).max() > 0.1


# ----------------------------------------------------------------------------- finding 5
def _inline(text, prop):
    """``<prop><Func name=..>..</Func></prop>`` -> ``<Func name="prop">..</Func>`` (OpenSim's
    inline form of a function-valued property)."""
    pat = rf"<{prop}>\s*<(\w+)(?: name=\"[^\"]*\")?>(.*?)</\1>\s*</{prop}>"
    out, n = re.subn(pat, rf'<\1 name="{prop}">\2</\1>', text, flags=re.S)
    assert n >= 1, prop
    return out


def _pendulum_with_ligament(tmp_path):
    from arthron.io.osim import write_osim
    from arthron.models import forces as F
    from arthron.models.functions import SimmSpline
    from arthron.models.model import GeometryPath, PathPoint
    m = read_osim(PENDULUM)
    x = np.linspace(1.0, 1.6, 7)
    m.forces["lig"] = F.Ligament(
        "lig", path=GeometryPath([PathPoint("a", "PathPoint", "/ground", np.array([0.3, 1.2, 0.0])),
                                  PathPoint("b", "PathPoint", "/bodyset/rod", np.array([0.0, -0.4, 0.0]))]),
        resting_length=0.5, pcsa_force=200.0, force_length_curve=SimmSpline(x, (x - 1.0) ** 2 * 3.0))
    return write_osim(tmp_path / "wrapped.osim", m)


def test_inline_function_property_reads_as_the_wrapped_form(tmp_path):
    """``<SimmSpline name="force_length_curve">`` directly in a Ligament, and a MovingPathPoint's
    ``<SimmSpline name="x_location">``, read exactly as the wrapped forms (one mechanism:
    io.osim_functions.wrap_inline_function_properties)."""
    from arthron.multibody.paths import compile_paths, path_lengths
    wrapped = _pendulum_with_ligament(tmp_path)
    inline = tmp_path / "inline.osim"
    inline.write_text(_inline(wrapped.read_text(), "force_length_curve"))
    assert '<SimmSpline name="force_length_curve">' in inline.read_text()
    a, b = read_osim(wrapped).forces["lig"], read_osim(inline).forces["lig"]
    np.testing.assert_array_equal(a.force_length_curve.x, b.force_length_curve.x)
    np.testing.assert_array_equal(a.force_length_curve.y, b.force_length_curve.y)
    # MovingPathPoint functions of the Gait2354 knee extensors
    src = DATA / "opensim-models" / "Models" / "Gait2354_Simbody" / "gait2354_simbody.osim"
    p = tmp_path / "gait_inline.osim"
    text = src.read_text()
    for ax in "xyz":
        text = _inline(text, f"{ax}_location")
    p.write_text(text)
    m0, m1 = read_osim(src), read_osim(p)
    t0, t1 = compile_model(m0), compile_model(m1)
    q = np.tile(t0.default_q, (5, 1))
    q[:, list(m0.coordinates).index("knee_angle_r")] = np.linspace(-1.5, 0.1, 5)
    np.testing.assert_array_equal(path_lengths(compile_paths(m0, t0), t0, q),
                                  path_lengths(compile_paths(m1, t1), t1, q))


@pytest.mark.skipif(not __import__("conftest").HAVE_OPENSIM, reason="needs OpenSim")
def test_inline_ligament_curve_in_id_like_opensim(tmp_path):
    """OpenSim 4.6 reads the inline Ligament curve and applies the ligament in ID; arthron's ID of
    the same file agrees."""
    import oracle
    from arthron.solvers.inverse_dynamics import run_inverse_dynamics
    from arthron.io.sto import write_sto
    from arthron.tables import Table
    wrapped = _pendulum_with_ligament(tmp_path)
    inline = tmp_path / "inline.osim"
    inline.write_text(_inline(wrapped.read_text(), "force_length_curve"))
    t = np.linspace(0, 1, 41)
    mot = tmp_path / "q.mot"
    write_sto(mot, Table(name="q", time=t, labels=["q"], data=np.deg2rad(60 * np.sin(3 * t))[:, None],
                         in_degrees=False))
    labels, to, ref = oracle.run_id_tool(inline, mot, tmp_path, (0.1, 0.9))
    res = run_inverse_dynamics(read_osim(inline), read_sto(mot), time_range=(0.1, 0.9))
    bare = run_inverse_dynamics(read_osim(PENDULUM), read_sto(mot), time_range=(0.1, 0.9))
    np.testing.assert_allclose(res.column(labels[0]), ref[:, 0], atol=1e-6, rtol=1e-8)
    assert np.abs(bare.column(labels[0]) - ref[:, 0]).max() > 1.0  # the ligament matters


# ----------------------------------------------------------------------------- finding 13
def _motion_with(tmp_path, fn, src=IK_MOT, name="m.mot"):
    lines = src.read_text().splitlines()
    h = next(i for i, l in enumerate(lines) if l.strip() == "endheader") + 1
    while not lines[h].strip():
        h += 1
    labels = lines[h].split("\t") if "\t" in lines[h] else lines[h].split()
    rows = [l.split() for l in lines[h + 1:] if l.strip()]
    head = lines[:h]
    fn(head, labels, rows)
    p = tmp_path / name
    p.write_text("\n".join(head + ["\t".join(labels)] + ["\t".join(r) for r in rows]) + "\n")
    return p


def _id_warnings(model, p):
    from arthron.solvers.inverse_dynamics import run_inverse_dynamics
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        run_inverse_dynamics(model, read_sto(p))
    return [str(x.message) for x in w]


@pytest.mark.parametrize("case", ["degrees_as_radians", "knee_x100", "spike"])
def test_absurd_coordinates_are_warned_naming_column_and_time(tmp_path, case):
    model = read_osim(GAIT_REF_MODEL)

    def mutate(head, labels, rows):
        k = labels.index("knee_angle_r")
        if case == "degrees_as_radians":
            head[:] = [l.replace("inDegrees=yes", "inDegrees=no") for l in head]
        elif case == "knee_x100":
            for r in rows:
                r[k] = repr(float(r[k]) * 100)
        else:
            rows[40][k] = "1e6"
    p = _motion_with(tmp_path, mutate)
    msgs = [m for m in _id_warnings(model, p) if "far outside their ranges" in m]
    assert len(msgs) == 1 and "m.mot" in msgs[0] and "knee_angle_r" in msgs[0] and "at t =" in msgs[0]
    if case == "degrees_as_radians":
        assert "look like degrees" in msgs[0] and " rad at t =" in msgs[0]
    if case == "spike":   # in the file's unit (degrees here), with the range
        assert "knee_angle_r = 1e+06° at t =" in msgs[0] and "(range -120° to 10°)" in msgs[0]
    assert not [m for m in _id_warnings(model, IK_MOT) if "far outside" in m]


def test_time_step_of_nanoseconds_is_warned(tmp_path):
    def mutate(head, labels, rows):
        t0 = float(rows[0][0])
        for k, r in enumerate(rows):
            r[0] = repr(t0 + 1e-9 * k)
    p = _motion_with(tmp_path, mutate)
    assert any("time step of 1e-09 s" in m for m in _id_warnings(read_osim(GAIT_REF_MODEL), p))


def test_mass_1e300_is_refused(tmp_path):
    p = _mutated(tmp_path, PENDULUM, r"<mass>[^<]*</mass>", "<mass>1e300</mass>", regex=True)
    _typed(ModelFileError, read_osim, p, where="<mass>")
    p = _mutated(tmp_path, PENDULUM, r"<mass>[^<]*</mass>", "<mass>20000</mass>", regex=True)
    with pytest.warns(Warning, match="mass of 20000 kg"):
        read_osim(p)


def test_centre_of_pressure_in_millimetres_is_warned(tmp_path):
    def mm(lines, h, labels):
        for c in ("ground_force_px", "ground_force_py", "ground_force_pz"):
            k = labels.index(c)
            for r in range(h + 1, len(lines)):
                cells = lines[r].split()
                cells[k] = repr(float(cells[k]) * 1000)
                lines[r] = "\t".join(cells)
    ext = _grf_with(tmp_path, mm)
    with pytest.warns(Warning, match=r"ExternalForce 'right': point .* millimetres read as metres"):
        ext.resolve()


def test_time_range_outside_the_data_is_refused(tmp_path, capsys):
    assert main(["id", str(ARM26), str(ARM_IK), "--time-range", "50", "60",
                 "-o", str(tmp_path / "id.sto")]) == 2
    err = capsys.readouterr().err
    assert "lies outside the data" in err and "arm26_InverseKinematics.mot" in err
    assert not (tmp_path / "id.sto").exists()


def test_lowpass_nan_is_refused(tmp_path, capsys):
    assert main(["id", str(ARM26), str(ARM_IK), "--lowpass", "nan", "-o", str(tmp_path / "id.sto")]) == 2
    assert "low-pass" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0.4 1.0 1.6", "nan 1.6"])
def test_setup_time_range_three_values_or_nan(tmp_path, value):
    p = _absolute_setup(tmp_path, GAIT_PIPE / "subject01_Setup_InverseDynamics.xml",
                        [(r"<time_range>[^<]*<", f"<time_range>{value}<")])
    _typed(DataFileError, read_id_setup, p, where="time_range")


def test_trc_in_millimetres_declared_metres_is_warned(tmp_path):
    from arthron.solvers.inverse_kinematics import solve_ik
    trc = GAIT_PIPE / "subject01_walk1.trc"
    lines = trc.read_text().splitlines()
    lines[2] = re.sub(r"\tmm\t", "\tm\t", lines[2])
    p = tmp_path / trc.name
    p.write_text("\n".join(lines) + "\n")
    trial = read_trc(p)
    assert trial.units == "m"
    t0 = float(trial.time[10])
    with pytest.warns(Warning, match=r"subject01_walk1.trc: IK marker errors of metres.*Units \(read as m\)"):
        solve_ik(read_osim(GAIT_REF_MODEL), trial, None, time_range=(t0, t0))


def _arm26_motion_with_elbow_label(tmp_path, label):
    src = REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"
    lines = src.read_text().splitlines()
    i = lines.index("endheader")
    lines[i + 1] = f"time\t/jointset/r_shoulder/r_shoulder_elev/value\t{label}"
    p = tmp_path / f"m{len(list(tmp_path.glob('m*.mot')))}.mot"
    p.write_text("\n".join(lines) + "\n")
    return p


@needs_data
@needs_opensim
def test_state_path_naming_another_joint_is_not_read_as_in_opensim(tmp_path, monkeypatch):
    """A column ``/jointset/WRONG/r_elbow_flex/value`` is not the elbow's: OpenSim 4.6's
    AnalyzeTool does not read it (it warns it did not find /jointset/r_elbow/r_elbow_flex/value
    and keeps the default value; its Kinematics q, run here, says so), nor does arthron, which
    names the column and the coordinate's joint (a warning in analyses, an error in ID); the
    tail ``r_elbow/r_elbow_flex/value`` is read by both."""
    import opensim as osim
    from arthron.errors import ArthronWarning
    from arthron.io.osim import read_osim
    from arthron.models.motion import coordinates_from_table
    from arthron.solvers.inverse_dynamics import run_inverse_dynamics
    monkeypatch.chdir(tmp_path)          # opensim.log
    model = read_osim(ARM26)
    k = list(model.coordinates).index("r_elbow_flex")
    for label, read in [("/jointset/WRONG/r_elbow_flex/value", False),
                        ("/jointset/r_shoulder/r_elbow_flex/value", False),
                        ("r_elbow/r_elbow_flex/value", True)]:
        mot = _arm26_motion_with_elbow_label(tmp_path, label)
        name = mot.stem
        (tmp_path / f"{name}.xml").write_text(
            f'<OpenSimDocument Version="40000"><AnalyzeTool name="{name}"><model_file>{ARM26}'
            f'</model_file><results_directory>{tmp_path}</results_directory><initial_time>0'
            '</initial_time><final_time>0.05</final_time><AnalysisSet name="Analyses"><objects>'
            '<Kinematics name="Kinematics"><in_degrees>false</in_degrees></Kinematics></objects>'
            f'</AnalysisSet><coordinates_file>{mot}</coordinates_file>'
            '<lowpass_cutoff_frequency_for_coordinates>-1</lowpass_cutoff_frequency_for_coordinates>'
            '</AnalyzeTool></OpenSimDocument>')
        osim.AnalyzeTool(str(tmp_path / f"{name}.xml")).run()
        ref = read_sto(tmp_path / f"{name}_Kinematics_q.sto")
        table = read_sto(mot)
        if read:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                q = coordinates_from_table(model, table, missing="default")
        else:
            with pytest.warns(ArthronWarning, match=f"'{label}' \\(coordinate 'r_elbow_flex' is in "
                                                    "joint 'r_elbow'"):
                q = coordinates_from_table(model, table, missing="default")
            with pytest.raises(DataFileError, match=f"missing coordinate column\\(s\\) r_elbow_flex.*'{label}'"):
                run_inverse_dynamics(model, table)
        elbow = ref.data[:, ref.labels.index("r_elbow_flex")]
        assert (np.abs(elbow).max() > 1e-3) == read       # OpenSim read the column or kept 0
        np.testing.assert_allclose(q[:len(elbow), k], elbow, atol=1e-7)
