"""AnalyzeTool's BodyKinematics + Kinematics + PointKinematics: OpenSim 4.6 vs arthron, end to end
(setup read, model loaded, coordinates filtered and splined, the three analyses, nine files
written), side by side in one process.

Run:  python benchmarks/bench_kinematics_analyses.py [n_frames_long]

Cases
-----
* The Gait2354 walk (subject01_simbody with its 54 Thelen2003Muscles at their default states,
  its IK motion 0.6–1.4 s filtered at 6 Hz, its ground reactions): every body, every coordinate,
  a heel point. Medians of 3 runs.
* The same model on the walk tiled to ``n_frames_long`` frames (default 5000; no filter, no
  ground reactions). One OpenSim run, median of 3 for arthron.

The largest difference between the two tools' files is printed for each case.
"""
from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import GAIT, GAIT_MODEL, median_time, tiled_motion  # noqa: E402

from arthron.io.sto import read_sto, write_sto  # noqa: E402
from arthron.tools.analyze_tool import run_analyze  # noqa: E402

SETUP = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40600"><AnalyzeTool name="walk">
  <model_file>{model}</model_file>
  <results_directory>{out}</results_directory>
  <initial_time>{t0}</initial_time><final_time>{t1}</final_time>
  <AnalysisSet name="Analyses"><objects>
   <BodyKinematics name="BodyKinematics"><on>true</on><bodies>all</bodies></BodyKinematics>
   <Kinematics name="Kinematics"><on>true</on><coordinates>all</coordinates></Kinematics>
   <PointKinematics name="PointKinematics"><on>true</on><body_name>calcn_r</body_name>
     <relative_to_body_name>pelvis</relative_to_body_name><point_name>heel</point_name>
     <point>0 0.01 -0.005</point></PointKinematics>
  </objects></AnalysisSet>
  <external_loads_file>{grf}</external_loads_file>
  <coordinates_file>{motion}</coordinates_file>
  <lowpass_cutoff_frequency_for_coordinates>{lowpass}</lowpass_cutoff_frequency_for_coordinates>
</AnalyzeTool></OpenSimDocument>"""


def _case(tmp: Path, label, motion, t0, t1, lowpass, grf, runs_opensim):
    import opensim
    opensim.Logger.setLevelString("error")
    setup = tmp / f"{label}.xml"
    setup.write_text(SETUP.format(model=GAIT_MODEL, out=tmp / f"{label}_osim", t0=t0, t1=t1,
                                  grf=grf or "", motion=motion, lowpass=lowpass))
    t_os = median_time(lambda: opensim.AnalyzeTool(str(setup)).run(), runs_opensim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_ar = median_time(lambda: run_analyze(setup, results_dir=tmp / f"{label}_arthron"))
    worst = 0.0
    for f in (tmp / f"{label}_arthron").iterdir():
        a, o = read_sto(f), read_sto(tmp / f"{label}_osim" / f.name)
        worst = max(worst, float(np.abs(a.data - o.data).max()))
    n = len(read_sto(tmp / f"{label}_osim" / "walk_Kinematics_q.sto").time)
    print(f"{label:28s} {n:6d} frames  OpenSim {t_os:7.3f} s  arthron {t_ar:7.3f} s  "
          f"ratio {t_os / t_ar:5.2f}x  worst |diff| {worst:.1e}")


def main():
    n_long = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    print(f"machine load (1 min): {Path('/proc/loadavg').read_text().split()[0]}")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        import os
        os.chdir(tmp)                      # opensim.log goes there
        _case(tmp, "walk (6 Hz, GRF)", GAIT / "OutputReference" / "subject01_walk1_ik.mot", 0.6, 1.4,
              6, GAIT / "subject01_walk1_grf.xml", 3)
        mot = tiled_motion(n_long)
        write_sto(tmp / "long.mot", mot)
        _case(tmp, "walk tiled (no filter)", tmp / "long.mot", -1e9, 1e9, -1, None, 1)


if __name__ == "__main__":
    t = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - t:.1f} s")
