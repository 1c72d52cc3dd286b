"""The `arthron` command end to end on the real files."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ARM26, ARM26_TUT, GAIT_PIPE, GAIT_REF_MODEL, LENHART, REF, needs_data
from arthron.cli import main
from arthron.io.osim import read_osim
from arthron.io.sto import read_sto

ARM_IK = ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"


@needs_data
def test_info_lists_kept_components(capsys):
    assert main(["info", str(LENHART)]) == 0
    out = capsys.readouterr().out
    assert "Blankevoort1991Ligament ×76" in out
    assert "Smith2018ArticularContactForce tf_contact" in out
    assert "coordinates 52" in out


@needs_data
def test_convert_writes_4x_that_reads_back_the_same(tmp_path):
    out = tmp_path / "arm26_4x.osim"
    assert main(["convert", str(ARM26), str(out)]) == 0
    a, b = read_osim(ARM26), read_osim(out)
    assert list(a.bodies) == list(b.bodies) and list(a.coordinates) == list(b.coordinates)
    for n in a.bodies:
        assert a.bodies[n].mass == b.bodies[n].mass
        np.testing.assert_array_equal(a.bodies[n].inertia, b.bodies[n].inertia)


@needs_data
def test_id_command_equals_opensim_reference(tmp_path):
    out = tmp_path / "id.sto"
    assert main(["id", str(ARM26), str(ARM_IK), "--lowpass", "6", "-o", str(out)]) == 0
    res, ref = read_sto(out), read_sto(REF / "task1_arm26" / "ID_filtered" / "arm26_InverseDynamics.sto")
    assert res.labels == ref.labels
    np.testing.assert_allclose(res.data, ref.data, atol=1e-6)


@needs_data
def test_id_command_from_setup(tmp_path):
    setup = tmp_path / "id_setup.xml"
    setup.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000"><InverseDynamicsTool name="walk">
  <results_directory>{tmp_path}</results_directory>
  <model_file>{GAIT_REF_MODEL}</model_file>
  <time_range>0.4 1.6</time_range>
  <forces_to_exclude>Muscles</forces_to_exclude>
  <external_loads_file>{GAIT_PIPE / 'subject01_walk1_grf.xml'}</external_loads_file>
  <coordinates_file>{GAIT_PIPE / 'OutputReference' / 'subject01_walk1_ik.mot'}</coordinates_file>
  <lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>
  <output_gen_force_file>walk_id.sto</output_gen_force_file>
</InverseDynamicsTool></OpenSimDocument>""")
    assert main(["id", "--setup", str(setup)]) == 0
    res = read_sto(tmp_path / "walk_id.sto")
    ref = read_sto(REF / "task2_gait2354" / "ResultsID_C_refModel_refIK" / "inverse_dynamics.sto")
    assert res.labels == ref.labels
    np.testing.assert_allclose(res.data, ref.data, atol=1e-4)


def test_demo_runs_on_the_embedded_default(tmp_path, capsys):
    # the former demo (embedded two-segment arm) is `arthron demo --arm` since `arthron demo`
    # runs the shoulder-elbow abduction study (tests/test_shoulder_study.py)
    assert main(["demo", "--arm", "-o", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "outputs written to" in out
    files = {p.name for p in (tmp_path / "demo").iterdir()}
    assert {"demo_arm.osim", "elbow_flexion.mot", "inverse_dynamics.sto", "joint_reactions.sto",
            "arthron_demo_arm_MuscleAnalysis_Length.sto"} <= files
    res = read_sto(tmp_path / "demo" / "inverse_dynamics.sto")
    # static check at the first frame (shoulder at 10°, elbow 0°). OpenSim's preprocessing,
    # reproduced here (pad by reflection, 6 Hz IIR, quintic spline), makes the speeds and
    # accelerations vanish there (q̈ ≈ 2e-3 rad/s²), so the shoulder moment is the weight of the
    # arm about the pin, m g x_com.
    model = read_osim(tmp_path / "demo" / "demo_arm.osim")
    m_ua, m_fa = model.bodies["humerus"].mass, model.bodies["forearm"].mass
    th = np.deg2rad(10.0)
    L = 0.282
    x_ua = 0.577 * L * np.sin(th)
    x_fa = (L + 0.2) * np.sin(th)
    expected = 9.80665 * (m_ua * x_ua + m_fa * x_fa)
    assert res.column("shoulder_elev_moment")[0] == pytest.approx(expected, rel=2e-3)


@needs_data
def test_jr_command_runs(tmp_path):
    out = tmp_path / "jr.sto"
    forces = REF / "task1_arm26" / "SO_phys" / "arm26_StaticOptimization_force.sto"
    assert main(["jr", str(ARM26), str(ARM_IK), "--forces", str(forces), "--lowpass", "6",
                 "--joints", "r_elbow", "--in", "child", "-o", str(out)]) == 0
    t = read_sto(out)
    assert len(t.time) == 121
    assert t.labels[0] == "r_elbow_on_r_ulna_radius_hand_in_r_ulna_radius_hand_fx"


@needs_data
def test_bad_input_is_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "broken.osim"
    bad.write_text("<OpenSimDocument><Model name='x'><BodySet></Model>")
    assert main(["info", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("arthron: error:") and "broken.osim" in err and "line" in err
    assert main(["id", str(ARM26), str(GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot"),
                 "-o", str(tmp_path / "x.sto")]) == 2
    assert "missing coordinate" in capsys.readouterr().err
    assert not (tmp_path / "x.sto").exists()


@needs_data
def test_ligament_command_exports_tpsm_fibres(tmp_path, capsys):
    """Strands replaced by TPSM fibres; arthron reads the file back and the fibres' summed
    tension at the default pose equals the TPSM's (OpenSim's own wrench check of these
    components is in test_ligament_lenhart)."""
    from arthron.multibody.kinematics import compile_model
    from arthron.models.muscles import ligament_forces
    from arthron.multibody.paths import compile_paths, path_lengths
    mesh = LENHART.parent / "Geometry" / "lenhart2015-R-tibia-bone.stl"
    out = tmp_path / "lenhart_tpsm.osim"
    assert main(["ligament", str(LENHART), "--ligament", "ACL", "--mesh", str(mesh), "--triangles", "60",
                 "--export", str(out)]) == 0
    assert "strands replaced by 180 TPSM fibres" in capsys.readouterr().out
    m = read_osim(out)
    names = [n for n in m.forces if n.startswith("ACL_tpsm")]
    assert len(names) == 180 and not any(n.startswith(("ACLam", "ACLpl")) for n in m.forces)
    assert sum(f.type == "Blankevoort1991Ligament" for f in m.forces.values()) == 76 - 12 + 180
    tree = compile_model(m)
    ps = compile_paths(m, tree, forces=names)
    ten = ligament_forces(m, ps.names, path_lengths(ps, tree, tree.default_q[None]))
    assert ten.sum() > 1.0


@needs_data
def test_analyze_command_writes_opensim_names_and_prints_them(tmp_path, capsys):
    forces = REF / "task1_arm26" / "SO_phys" / "arm26_StaticOptimization_force.sto"
    setup = tmp_path / "analyze.xml"
    setup.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40600"><AnalyzeTool name="arm26">
  <model_file>{ARM26}</model_file><results_directory>results</results_directory>
  <initial_time>0</initial_time><final_time>1</final_time>
  <AnalysisSet name="Analyses"><objects>
    <MuscleAnalysis name="MuscleAnalysis"><muscle_list>all</muscle_list>
      <moment_arm_coordinate_list>r_elbow_flex</moment_arm_coordinate_list></MuscleAnalysis>
    <JointReaction name="JointReaction"><forces_file>{forces}</forces_file>
      <joint_names>ALL</joint_names><apply_on_bodies>child</apply_on_bodies>
      <express_in_frame>child</express_in_frame></JointReaction>
  </objects></AnalysisSet>
  <coordinates_file>{ARM_IK}</coordinates_file>
  <lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>
</AnalyzeTool></OpenSimDocument>""")
    assert main(["analyze", "--setup", str(setup)]) == 0
    out = capsys.readouterr().out
    res = tmp_path / "results"
    for name in ("arm26_MuscleAnalysis_Length.sto", "arm26_MuscleAnalysis_MomentArm_r_elbow_flex.sto",
                 "arm26_JointReaction_ReactionLoads.sto"):
        assert (res / name).exists() and f"wrote {res / name}" in out
    assert main(["jr", "--setup", str(setup), "-o", str(tmp_path / "jr.sto")]) == 0
    a, b = read_sto(tmp_path / "jr.sto"), read_sto(res / "arm26_JointReaction_ReactionLoads.sto")
    np.testing.assert_array_equal(a.data, b.data)
    assert main(["paths", "--setup", str(setup), "-o", str(tmp_path / "p")]) == 0
    assert (tmp_path / "p" / "arm26_MuscleAnalysis_Length.sto").exists()


@needs_data
def test_bad_option_values_are_one_line_with_exit_2(tmp_path, capsys):
    out = tmp_path / "x.sto"
    assert main(["id", str(ARM26), str(ARM_IK), "--time-range", "1", "0", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("arthron: error:") and "time range" in err and err.count("\n") == 1
    assert main(["jr", str(ARM26), str(ARM_IK), "--lowpass", "nan", "-o", str(out)]) == 2
    assert "cut-off" in capsys.readouterr().err
    assert main(["scale", str(ARM26), "--mass", "-3", "--height", "1.8", "-o", str(tmp_path / "s.osim")]) == 2
    assert "mass" in capsys.readouterr().err
    assert main(["ligament", str(LENHART), "--ligament", "ACL", "--triangles", "0"]) == 2
    assert "--triangles" in capsys.readouterr().err
    assert not out.exists()


def test_main_called_from_python_leaves_the_library_routes(tmp_path, capsys):
    """``arthron.cli.main([...])`` from Python (a script, the tests) switches the process to the
    command's start-up routes (``runtime.light_imports``: arthron's own splines and filters, IK
    stations on NumPy for short trials) only for the call: it leaked, so later library calls in
    the same process took other routes than a fresh process (a batch's in-process Dask tasks and
    its spawned pool workers then differed by 1e-15 in an IK RMS)."""
    import warnings
    from arthron import runtime
    from arthron.cli import main
    before = (runtime.light_imports, warnings.formatwarning)
    assert main(["demo", "--height", "0"]) == 2
    assert "height" in capsys.readouterr().err
    assert (runtime.light_imports, warnings.formatwarning) == before
