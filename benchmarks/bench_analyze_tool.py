"""AnalyzeTool with the five common analyses (Kinematics, BodyKinematics, MuscleAnalysis with
moments, ForceReporter, JointReaction of every joint): OpenSim 4.6's ``AnalyzeTool.run()`` vs
arthron's :func:`arthron.tools.analyze_tool.run_analyze`, end to end (setup read, model loaded,
input read, every analysis, files written), in one process, interleaved run by run.

Run:  python benchmarks/bench_analyze_tool.py [runs] [--profile]

Cases
-----
* ``arm26_ik``: arm26 on its IK motion (opensim-reference task1_arm26), 0 to 2/3 s: 81 rows.
* ``arm26_states``: arm26 on the states file of OpenSim's forward simulation (0.1 s under
  constant excitations; ``tests/test_analyze_states_file._forward``).
* ``gait2354``: the Gait2354 pipeline's subject01 model on the walk's IK motion with its ground
  reactions (``subject01_walk1_grf.xml``), 0.8 to 1.18 s, 6 Hz filter.
* ``gait2354_setup``: the pipeline's own Analyze setup (:func:`_pipeline_setup`) with a
  ForceReporter, on the same motion.

The largest difference between the two tools' files is printed for each case. ``--profile``
prints arthron's cProfile (cumulative) of each case.

Figures (2 shared cores, one process, interleaved, medians of 5-7)
------------------------------------------------------------------
==============  ====  =====  ========  ===============  ==============
case            rows  files  OpenSim   arthron before   arthron after
==============  ====  =====  ========  ===============  ==============
arm26_ik          80     30  0.071 s   0.089 s (0.80×)  0.051 s (1.43×)
arm26_states      28     30  0.036 s   0.068 s (0.55×)  0.041 s (0.89×)
gait2354          23     56  1.74 s    0.156 s (11.5×)  0.117 s (14.8×)
==============  ====  =====  ========  ===============  ==============

(load 0.3-1.2; every file arthron writes is the same, byte for byte, before and after, and
within OpenSim's 8 printed decimals of OpenSim's.)

arthron's parts (ms, medians of 7, arthron alone, load 0.3-0.5; before → after):

=========================================  ============  ============  ============
part                                       arm26_ik      arm26_states  gait2354
=========================================  ============  ============  ============
model read (+ force sets)                  2.6 → 2.6     2.7 → 2.6     10.9 → 10.8
kinematics' states (forward dynamics;      12.4 → 13.0   8.4 → 8.6     20.3 → 18.7
now the one path computation of the run)
MuscleAnalysis (lengths, moment arms,      21.7 → 3.1    14.4 → 2.0    18.3 → 13.4
fibre files, moments)
ForceReporter                              10.2 → 0.9    6.6 → 0.5     13.4 → 8.9
JointReaction                              2.6 → 2.2     1.9 → 1.6     15.5 → 12.9
writing the files (formatting, checks,     26.2 → 24.0   21.1 → 20.3   55.7 → 40.4
staging, fsync, renames)
total                                      77.4 → 47.5   57.1 → 37.5   139 → 111
=========================================  ============  ============  ============

What changed: the paths of a model are compiled once and rebuilt once per set of frames for
every analysis of the run (``arthron.multibody.paths.shared_paths``, entered with
``shared_muscle_loads``); the external loads file read once per run; when the results hold
20,000 values or more the .sto writer's orjson route is taken for every table of 256 values
or more (``io.sto.expect_values``; the import paid once); in an output group each folder is
made and cleaned of stale temporary files once and the umask read once (not per file).
``os.replace`` of the 30 files costs 0.15 ms (new files) to 3 ms (over the last run's files)
in all, not 2 ms each: that figure came from cProfile right after OpenSim's runs.

Left (arm26, 81 rows): the one path computation (~7 ms, the ellipsoid wraps), writing 30 small
files (~24 ms: repr formatting ~7 ms, four output checks per file, one fsync per file), the
fixed costs of model reading and forward dynamics; the goal of 3× OpenSim on arm26 is not
reached (1.4×); on the Gait2354 walk arthron is 15× faster.
"""
from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, GAIT, GAIT_IK, GAIT_MODEL, ROOT  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from test_analyze_states_file import _forward  # noqa: E402

from arthron.io.sto import read_sto  # noqa: E402
from arthron.tools.analyze_tool import run_analyze  # noqa: E402

ARM = DATA / "opensim-models" / "Models" / "Arm26" / "arm26.osim"
ARM_IK = DATA / "opensim-reference" / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"

ANALYSES = """
   <Kinematics name="Kinematics"><on>true</on><coordinates>all</coordinates></Kinematics>
   <BodyKinematics name="BodyKinematics"><on>true</on><bodies>all</bodies></BodyKinematics>
   <MuscleAnalysis name="MuscleAnalysis"><on>true</on><muscle_list>all</muscle_list>
     <moment_arm_coordinate_list>all</moment_arm_coordinate_list>
     <compute_moments>true</compute_moments></MuscleAnalysis>
   <ForceReporter name="ForceReporter"><on>true</on></ForceReporter>
   <JointReaction name="JointReaction"><on>true</on><joint_names>ALL</joint_names>
     <apply_on_bodies>child</apply_on_bodies><express_in_frame>ground</express_in_frame></JointReaction>"""

SETUP = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40600"><AnalyzeTool name="{name}">
  <model_file>{model}</model_file><results_directory>{out}</results_directory>
  <initial_time>{t0}</initial_time><final_time>{t1}</final_time>
  <AnalysisSet name="Analyses"><objects>{analyses}
  </objects></AnalysisSet>
  {input}
</AnalyzeTool></OpenSimDocument>"""


def _pipeline_setup(tmp: Path) -> str:
    """The Gait2354 pipeline's Analyze setup (Kinematics, Actuation, BodyKinematics with
    step_interval 10, MuscleAnalysis of knee_angle_r; the CMC actuators appended, the walk's
    ground reactions) with a ForceReporter added, on the walk's IK motion (6 Hz) instead of the
    CMC states it names (not in the data), 0.8 to 1.18 s: the text with ``{name}`` and
    ``{out}`` left to fill."""
    import re
    # the actuators without their <defaults> block (each sets its optimal_force): OpenSim would
    # otherwise change its process-wide CoordinateActuator default
    acts = tmp / "gait2354_CMC_Actuators.xml"
    acts.write_text(re.sub(r"<defaults>.*?</defaults>", "<defaults/>",
                           (GAIT / "gait2354_CMC_Actuators.xml").read_text(), flags=re.S))
    text = (GAIT / "subject01_Setup_Analyze.xml").read_text()
    subs = {"model_file": str(GAIT / "OutputReference" / "subject01_simbody_adjusted.osim"),
            "force_set_files": str(acts), "results_directory": "{out}", "states_file": "",
            "coordinates_file": str(GAIT_IK), "controls_file": "",
            "external_loads_file": str(GAIT / "subject01_walk1_grf.xml"),
            "lowpass_cutoff_frequency_for_coordinates": "6"}
    for tag, v in subs.items():
        text = re.sub(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>{v}</{tag}>", text)
    text = re.sub(r'<AnalyzeTool name="[^"]*">', '<AnalyzeTool name="{name}">', text)
    text = re.sub(r"<ControllerSet.*?</ControllerSet>", "", text, flags=re.S)
    return text.replace("<BodyKinematics name=", '<ForceReporter name="ForceReporter"><on>true</on>'
                        "</ForceReporter>\n\t\t\t<BodyKinematics name=", 1)


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _case(tmp: Path, label: str, setup_text: str, runs: int, profile: bool):
    import opensim
    setup = tmp / f"{label}.xml"
    setup.write_text(setup_text.format(name=label, out=tmp / f"{label}_osim"))
    t_os, t_ar = [], []
    arthron_dir = tmp / f"{label}_arthron"

    def arthron():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run_analyze(setup, results_dir=arthron_dir)

    arthron()                                # warm-up: imports, lazy modules
    opensim.AnalyzeTool(str(setup)).run()
    for _ in range(runs):                    # interleaved: the same machine load for both
        t = time.perf_counter()
        opensim.AnalyzeTool(str(setup)).run()
        t_os.append(time.perf_counter() - t)
        t = time.perf_counter()
        written = arthron()
        t_ar.append(time.perf_counter() - t)
    worst, n = 0.0, 0
    for f in written:       # (arthron writes the moment arms without compute_moments too)
        if not (tmp / f"{label}_osim" / Path(f).name).exists():
            continue
        a, o = read_sto(f), read_sto(tmp / f"{label}_osim" / Path(f).name)
        n = max(n, len(a.time))
        d = np.abs(a.data - o.data)
        worst = max(worst, float(np.nanmax(d / (1 + np.abs(o.data)))) if d.size else 0.0)
    os_, ar = statistics.median(t_os), statistics.median(t_ar)
    print(f"{label:13s} {n:4d} rows {len(written):3d} files  OpenSim {os_:6.3f} s  arthron {ar:6.3f} s  "
          f"ratio {os_ / ar:5.2f}x  worst |diff|/(1+|x|) {worst:.1e}  (load {_load()})", flush=True)
    if profile:
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(3):
            arthron()
        pr.disable()
        pstats.Stats(pr).sort_stats("cumulative").print_stats(45)


def main():
    import opensim
    opensim.Logger.setLevelString("error")
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    runs = int(args[0]) if args else 5
    profile = "--profile" in sys.argv
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.chdir(tmp)                        # opensim.log goes there
        _case(tmp, "arm26_ik", SETUP.replace("{analyses}", ANALYSES).format(
            name="{name}", out="{out}", model=ARM, t0=0, t1=2 / 3,
            input=f"<coordinates_file>{ARM_IK}</coordinates_file>"), runs, profile)
        states = _forward(ARM, tmp / "arm_states.sto", 0.1, 1e-5)
        _case(tmp, "arm26_states", SETUP.replace("{analyses}", ANALYSES).format(
            name="{name}", out="{out}", model=ARM, t0=0, t1=1e6,
            input=f"<states_file>{states}</states_file>"), runs, profile)
        _case(tmp, "gait2354", SETUP.replace("{analyses}", ANALYSES).format(
            name="{name}", out="{out}", model=GAIT_MODEL, t0=0.8, t1=1.18,
            input=f"<coordinates_file>{GAIT_IK}</coordinates_file>"
                  f"<lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>"
                  f"<external_loads_file>{GAIT / 'subject01_walk1_grf.xml'}</external_loads_file>"),
              runs, profile)
        _case(tmp, "gait2354_setup", _pipeline_setup(tmp), runs, profile)


if __name__ == "__main__":
    main()
