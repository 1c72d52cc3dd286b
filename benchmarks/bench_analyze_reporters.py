"""AnalyzeTool MuscleAnalysis (every file) + ForceReporter: OpenSim 4.6 vs arthron, end to end
(setup read, model loaded, analyses, files written), side by side in one process, interleaved
run by run (medians of 3; the machine's load average is printed: other work may be running).

Run:  python benchmarks/bench_analyze_reporters.py

Cases
-----
* walk: the Gait2354 pipeline's scaled model (54 Thelen2003Muscles) on its IK motion from 0.5 to
  1.5 s (61 frames) with the ground reactions as external loads: MuscleAnalysis of every
  muscle about every coordinate (compute_moments) and ForceReporter.
* gait10dof: gait10dof18musc (18 Millard2012EquilibriumMuscles) on the states of OpenSim's
  forward simulation (0.1 s) tiled to 1000 rows: the same two analyses.

For each case the largest difference between the two tools' files is printed (beyond the 8
printed decimals, and relative to each column's largest value), and the number of files each
wrote.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, GAIT, GAIT_IK, GAIT_MODEL  # noqa: E402
from bench_analyze_states_file import _forward, _tiled  # noqa: E402

from arthron.io.sto import read_sto  # noqa: E402
from arthron.tools.analyze_tool import run_analyze  # noqa: E402

ANALYSES = """<MuscleAnalysis name="MuscleAnalysis"><on>true</on><muscle_list>all</muscle_list>
<moment_arm_coordinate_list>all</moment_arm_coordinate_list><compute_moments>true</compute_moments></MuscleAnalysis>
<ForceReporter name="ForceReporter"><on>true</on></ForceReporter>"""


def _setup(folder: Path, name: str, model, source: str, t0, t1, extra="") -> Path:
    f = folder / f"{name}.xml"
    f.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40600"><AnalyzeTool name="{name}">
  <model_file>{model}</model_file><results_directory>out</results_directory>
  <initial_time>{t0}</initial_time><final_time>{t1}</final_time>{extra}
  <AnalysisSet name="Analyses"><objects>{ANALYSES}</objects></AnalysisSet>
  {source}
</AnalyzeTool></OpenSimDocument>""")
    return f


def _opensim(setup: Path, out: Path):
    import opensim
    cwd = os.getcwd()
    os.chdir(setup.parent)
    try:
        tool = opensim.AnalyzeTool(str(setup))
        tool.setResultsDir(str(out))
        tool.run()
    finally:
        os.chdir(cwd)


def _arthron(setup: Path, out: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_analyze(setup, results_dir=out)


def _worst(files, ref: Path) -> tuple:
    """(largest absolute difference beyond the files' 8 printed decimals, largest difference
    relative to its column's largest value, for columns reaching 1e-6 at least)."""
    worst_abs = worst_rel = 0.0
    where = ""
    for f in files:
        r, g = read_sto(ref / f.name), read_sto(f)
        d = np.abs(g.data - r.data)
        a = float(np.maximum(d - 5e-9, 0).max())
        if a > worst_abs:
            worst_abs, where = a, f.name
        scale = np.maximum(np.abs(r.data).max(axis=0), 1e-6)
        worst_rel = max(worst_rel, float((d / scale).max()))
    return worst_abs, worst_rel, where


def main():
    import opensim
    opensim.Logger.setLevelString("error")
    d = Path(tempfile.mkdtemp(prefix="bench-reporters-"))
    states = _tiled(_forward(d / "g10.sto"), d / "g10_tiled.sto", 1000)
    cases = {
        "walk (54 Thelen, 61 frames, GRF)": _setup(
            d, "walk", GAIT_MODEL, f"<coordinates_file>{GAIT_IK}</coordinates_file>", 0.5, 1.5,
            f"<external_loads_file>{GAIT / 'subject01_walk1_grf.xml'}</external_loads_file>"),
        "gait10dof (18 Millard, 1000 states)": _setup(
            d, "g10", DATA / "opensim-models-legacy" / "gait10dof18musc_v30000.osim",
            f"<states_file>{states}</states_file>", 0, 1e6),
    }
    print(f"load average before: {os.getloadavg()}")
    for label, setup in cases.items():
        t_o, t_a = [], []
        for k in range(3):
            o, a = d / f"{setup.stem}_osim{k}", d / f"{setup.stem}_arthron{k}"
            t = time.perf_counter()
            _opensim(setup, o)
            t_o.append(time.perf_counter() - t)
            t = time.perf_counter()
            files = _arthron(setup, a)
            t_a.append(time.perf_counter() - t)
        mo, ma = statistics.median(t_o), statistics.median(t_a)
        n_osim = len(list(o.iterdir()))
        wa, wr, where = _worst(files, o)
        print(f"{label}: OpenSim {mo:.2f} s, arthron {ma:.2f} s (x{mo / ma:.1f}); files: OpenSim "
              f"{n_osim}, arthron {len(files)}; worst difference beyond the 8 decimals {wa:.1e} "
              f"({where}), {wr:.1e} of the column's largest value")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
