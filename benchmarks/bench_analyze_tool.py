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

Figures (2 shared cores, one process, interleaved, medians of 7)
----------------------------------------------------------------
Before: main at 8f887b3; after: this branch; same session, load 0.65-0.8.

==============  ====  =====  ========  ===============  ==============
case            rows  files  OpenSim   arthron before   arthron after
==============  ====  =====  ========  ===============  ==============
arm26_ik          80     30  0.071 s   0.077 s (0.91×)  0.049 s (1.47×)
arm26_states      28     30  0.036 s   0.060 s (0.60×)  0.040 s (0.90×)
gait2354          23     56  1.76 s    0.142 s (12.5×)  0.108 s (16.2×)
gait2354_setup    23     29  0.184 s   0.113 s (1.65×)  0.087 s (2.08×)
==============  ====  =====  ========  ===============  ==============

Every file arthron writes is the same, byte for byte, before and after (the first three
cases), and within OpenSim's 8 printed decimals of OpenSim's (``worst`` printed).

arthron's parts (ms, medians of 7, arthron alone in its process, load 0.7-0.8; before → after;
"writing" is everything after the analyses: formatting, four output checks per file, staging,
one fsync per file, the renames):

=====================================  ============  ============  ============  ============
part                                   arm26_ik      arm26_states  gait2354      g2354_setup
=====================================  ============  ============  ============  ============
model read (+ force sets)              2.7 → 2.8     2.9 → 2.7     12.1 → 11.5   12.2 → 11.1
kinematics' states (forward dynamics;  13.6 → 13.9   9.7 → 9.2     22.4 → 20.6   22.1 → 18.3
now the run's one path computation)
MuscleAnalysis                         23.9 → 3.0    16.8 → 1.9    21.0 → 14.2   20.2 → 12.0
ForceReporter                          11.4 → 0.9    7.7 → 0.4     15.2 → 9.1    14.8 → 8.5
JointReaction / Actuation              2.8 → 2.3     2.3 → 1.7     17.5 → 13.6   12.1 → 6.4
writing the files                      26.7 → 23.5   21.1 → 19.1   58.6 → 37.9   29.8 → 22.4
total                                  83.0 → 48.1   62.5 → 36.9   153 → 113     117 → 85
=====================================  ============  ============  ============  ============

What changed: the paths of a model are compiled once and rebuilt once per set of frames for
every analysis of the run (``arthron.multibody.paths.shared_paths``, entered with
``shared_muscle_loads``); the external loads file read once per run; when the results hold
20,000 values or more the .sto writer's orjson route is taken for every table of 256 values
or more (``io.sto.expect_values``; the import paid once); in an output group each folder is
made and cleaned of stale temporary files once and the umask read once (not per file).
``os.replace`` of the 30 files costs 0.15 ms (new files) to 3 ms (over the last run's files)
in all when arthron runs alone; the 2 ms each that cProfile showed was measured right after
OpenSim's runs (interleaved; likely ext4's journal commit taking OpenSim's unsynced files).

Left (arm26, 80 rows): the one path computation (~7 ms, the ellipsoid wraps), writing 30 small
files (~24 ms: repr formatting ~7 ms, four output checks per file, one fsync per file; slower right
after OpenSim's runs, as the renames), the
fixed costs of model reading and forward dynamics, each analysis' own forward kinematics and
velocity map at the same q. The goal of 3× OpenSim is not reached on arm26 (1.5×) nor on the
pipeline's setup (2.1×); on the Gait2354 walk with the five analyses arthron is 16× faster.
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
