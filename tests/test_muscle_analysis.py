"""The AnalyzeTool layer: MuscleAnalysis and JointReaction from setups and from files, results
under OpenSim's names in the setup's results_directory; the moment-arm plots."""
from __future__ import annotations

import numpy as np
import pytest

from arthron.errors import DataFileError, ModelFileError, OptionError
from arthron.io.osim import read_osim
from arthron.io.sto import read_sto
from arthron.plots import plot_moment_arms
from arthron.solvers.muscle_analysis import path_analysis
from arthron.tools.analyze_tool import run_analyze, write_path_analysis

from conftest import ARM26, REF, needs_data, needs_opensim

ARM = REF / "task1_arm26"
ARM_MOT = ARM / "IK" / "arm26_InverseKinematics.mot"



@needs_data
def test_write_path_analysis(tmp_path):
    model = read_osim(ARM26)
    mot = read_sto(REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot")
    files = write_path_analysis(model, mot, tmp_path, muscles=["BIClong", "TRIlat"])
    names = sorted(f.name for f in files)
    assert f"{model.name}_MuscleAnalysis_Length.sto" in names
    assert f"{model.name}_MuscleAnalysis_MomentArm_r_elbow_flex.sto" in names
    t = read_sto(tmp_path / f"{model.name}_MuscleAnalysis_Length.sto")
    assert t.labels == ["BIClong", "TRIlat"]
    assert t.data.shape == (len(mot.time), 2)
    ma = read_sto(tmp_path / f"{model.name}_MuscleAnalysis_MomentArm_r_elbow_flex.sto")
    assert ma.data[:, 0].max() > 0.01 and ma.data[:, 1].min() < -0.01


@needs_data
def test_plot_moment_arms_writes_pngs(tmp_path):
    pytest.importorskip("matplotlib")
    model = read_osim(ARM26)
    mot = read_sto(REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot")
    files = plot_moment_arms(model, mot, tmp_path, muscles=["BIClong", "TRIlong"])
    names = sorted(f.name for f in files)
    assert names == [f"{model.name}_MomentArm_r_elbow_flex.png",
                     f"{model.name}_MomentArm_r_shoulder_elev.png"]
    for f in files:
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f.stat().st_size > 5000
    one = plot_moment_arms(model, mot, tmp_path / "one", muscles=["BIClong"],
                          coordinates=["r_elbow_flex"], prefix="x")
    assert [f.name for f in one] == ["x_MomentArm_r_elbow_flex.png"]
    with pytest.raises(ModelFileError, match="no_such"):
        plot_moment_arms(model, mot, tmp_path, coordinates=["no_such"])


def _setup(tmp_path, analyses, name="arm", results="out", extra=""):
    f = tmp_path / "setup_analyze.xml"
    f.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40600"><AnalyzeTool name="{name}">
  <model_file>{ARM26}</model_file>
  <results_directory>{results}</results_directory>
  <initial_time>0</initial_time><final_time>1</final_time>
  <AnalysisSet name="Analyses"><objects>{analyses}</objects></AnalysisSet>
  <coordinates_file>{ARM_MOT}</coordinates_file>
  <lowpass_cutoff_frequency_for_coordinates>-1</lowpass_cutoff_frequency_for_coordinates>{extra}
</AnalyzeTool></OpenSimDocument>""")
    return f


MUSCLE_ANALYSIS = """<MuscleAnalysis name="MuscleAnalysis"><on>true</on><step_interval>{n}</step_interval>
  <muscle_list>{muscles}</muscle_list><moment_arm_coordinate_list>{coords}</moment_arm_coordinate_list>
</MuscleAnalysis>"""

JOINT_REACTION = """<JointReaction name="JointReaction"><on>true</on><step_interval>{n}</step_interval>
  <forces_file>{forces}</forces_file><joint_names>r_elbow</joint_names>
  <apply_on_bodies>child</apply_on_bodies><express_in_frame>child</express_in_frame></JointReaction>"""


@needs_data
def test_analyze_setup_writes_opensim_names_into_results_directory(tmp_path):
    forces = ARM / "SO_phys" / "arm26_StaticOptimization_force.sto"
    setup = _setup(tmp_path, MUSCLE_ANALYSIS.format(n=1, muscles="BIClong TRIlat", coords="r_elbow_flex r_shoulder_elev")
                   + JOINT_REACTION.format(n=1, forces=forces))
    assert not (tmp_path / "out").exists()
    from arthron.solvers.muscle_fibers import MUSCLE_ANALYSIS_FILES
    files = run_analyze(setup)
    assert (tmp_path / "out").is_dir()        # created, as OpenSim does
    assert sorted(f.name for f in files) == sorted([
        "arm_MuscleAnalysis_Length.sto", "arm_MuscleAnalysis_MomentArm_r_elbow_flex.sto",
        "arm_MuscleAnalysis_MomentArm_r_shoulder_elev.sto", "arm_JointReaction_ReactionLoads.sto"]
        + [f"arm_MuscleAnalysis_{k}.sto" for k in (*MUSCLE_ANALYSIS_FILES, "Moment_r_elbow_flex",
                                                   "Moment_r_shoulder_elev")])   # (OpenSim's other files)
    assert all(f.parent == tmp_path / "out" for f in files)
    # unfiltered coordinates: the same numbers as the MuscleAnalysis computation on the motion
    model, mot = read_osim(ARM26), read_sto(ARM_MOT)
    pa = path_analysis(model, mot, muscles=["BIClong", "TRIlat"])
    L = read_sto(tmp_path / "out" / "arm_MuscleAnalysis_Length.sto")
    assert L.labels == ["BIClong", "TRIlat"]
    np.testing.assert_allclose(L.data, pa.lengths, rtol=0, atol=1e-12)
    jr = read_sto(tmp_path / "out" / "arm_JointReaction_ReactionLoads.sto")
    assert jr.labels[0] == "r_elbow_on_r_ulna_radius_hand_in_r_ulna_radius_hand_fx"
    assert len(jr.time) == len(mot.time)


@needs_data
def test_analyze_setup_step_interval_and_only(tmp_path):
    setup = _setup(tmp_path, MUSCLE_ANALYSIS.format(n=5, muscles="all", coords="all"), results=str(tmp_path / "r"))
    files = run_analyze(setup, only=("MuscleAnalysis",))
    L = read_sto(tmp_path / "r" / "arm_MuscleAnalysis_Length.sto")
    mot = read_sto(ARM_MOT)
    np.testing.assert_array_equal(L.time, mot.time[::5])
    assert "arm_MuscleAnalysis_MomentArm_r_elbow_flex.sto" in {f.name for f in files}
    with pytest.raises(DataFileError, match="JointReaction"):
        run_analyze(setup, only=("JointReaction",))
    # StaticOptimization is run by the AnalyzeTool now (issue 10): this setup has none
    with pytest.raises(DataFileError, match="StaticOptimization"):
        run_analyze(setup, only=("StaticOptimization",))
    with pytest.raises(OptionError):
        run_analyze(setup, only=("CMC",))


@needs_data
def test_analyze_setup_names_unknown_muscles_and_coordinates(tmp_path):
    setup = _setup(tmp_path, MUSCLE_ANALYSIS.format(n=1, muscles="nope", coords="all"))
    with pytest.raises(DataFileError, match="nope"):
        run_analyze(setup)
    setup = _setup(tmp_path, MUSCLE_ANALYSIS.format(n=1, muscles="all", coords="no_coord"))
    with pytest.raises(DataFileError, match="no_coord"):
        run_analyze(setup)


def test_path_analysis_tables_name_unknown_coordinates():
    from arthron.models.demo import build_demo_arm
    model = build_demo_arm()
    pa = path_analysis(model, np.zeros((3, len(model.coordinates))))
    assert pa.length_table().data.shape == (3, len(pa.names))
    with pytest.raises(ModelFileError, match="nope"):
        pa.moment_arm_table("nope")


@needs_data
@needs_opensim
@pytest.mark.parametrize("lowpass,step", [(-1, 5), (6, 7)])
def test_step_interval_keeps_the_frames_opensim_records(tmp_path, lowpass, step):
    """OpenSim 4.6's AnalyzeTool records the first frame, the storage rows whose index is a
    multiple of step_interval (the storage padded by half its length when filtering), and the
    last frame; arthron keeps the same frames, with the same lengths (path tolerance)."""
    import opensim
    opensim.Logger.setLevelString("error")
    text = _setup(tmp_path, MUSCLE_ANALYSIS.format(n=step, muscles="BIClong", coords="r_elbow_flex")
                  .replace("</MuscleAnalysis>", "<compute_moments>false</compute_moments></MuscleAnalysis>"),
                  results=str(tmp_path / "osim")).read_text()
    text = text.replace("<initial_time>0</initial_time><final_time>1</final_time>",
                        "<initial_time>0.1</initial_time><final_time>0.9</final_time>")
    text = text.replace("<lowpass_cutoff_frequency_for_coordinates>-1<",
                        f"<lowpass_cutoff_frequency_for_coordinates>{lowpass}<")
    setup = tmp_path / "s.xml"
    setup.write_text(text)
    opensim.AnalyzeTool(str(setup)).run()
    ref = read_sto(tmp_path / "osim" / "arm_MuscleAnalysis_Length.sto")
    files = run_analyze(setup, results_dir=tmp_path / "arthron")
    got = read_sto(files[0])
    assert len(got.time) == len(ref.time)
    np.testing.assert_allclose(got.time, ref.time, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.data, ref.data, rtol=0, atol=1e-7)
