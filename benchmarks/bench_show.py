"""`arthron show`: where its time goes, and the posing against OpenSim 4.6.

On the Gait2354 walking trial (subject01_simbody, subject01_walk1_ik.mot, 19 meshes from
opensim-models/Geometry, 54 muscle paths, 39 markers):

* posing: arthron's ``ModelScene.build`` for all frames (forward kinematics, path nodes with
  wrap arcs, markers; meshes read once) against OpenSim computing the same numbers per frame
  (``Coordinate.setValue``, ``realizePosition``, every body's ``getTransformInGround``, every
  marker's ``getLocationInGround``, every path's ``getCurrentPath`` points in ground);
* rendering (no OpenSim counterpart: OpenSim's Python package has no off-screen renderer):
  seconds per image at 400x400 and 800x800 through VTK's off-screen window, and the whole
  ``arthron show`` command (fresh process) for a PNG and a 40-frame GIF.

Medians of ``--repeat`` runs (default 3); other processes on the machine slow both sides.
Run: ``python benchmarks/bench_show.py``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from conftest import GAIT_PIPE, GAIT_REF_MODEL, MODELS  # noqa: E402

from arthron.io.osim import read_osim  # noqa: E402
from arthron.io.sto import read_sto  # noqa: E402
from arthron.models.motion import coordinates_from_table  # noqa: E402
from arthron.render import ModelScene, render_frames  # noqa: E402

WALK = GAIT_PIPE / "subject01_walk1_ik.mot"
GEOMETRY = MODELS / "Geometry"
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import fresh_process_env, median_time as _median  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    model = read_osim(GAIT_REF_MODEL)
    table = read_sto(WALK)
    q = coordinates_from_table(model, table, missing="default")
    T = len(q)
    print(f"Gait2354 walk: {T} frames; load {os.getloadavg()[0]:.2f} (2 cores)")

    t_ar = _median(lambda: ModelScene.build(model, q, table.time, meshes=False), a.repeat)
    t_mesh = _median(lambda: ModelScene.build(model, q[:1], meshes=True, muscles=False, markers=False,
                                              wrap_objects=False, geometry_dirs=[GEOMETRY]), a.repeat)
    scene = ModelScene.build(model, q, table.time, geometry_dirs=[GEOMETRY])

    import opensim as osim

    import oracle
    m, s = oracle.load(GAIT_REF_MODEL)
    cs, bs, ms, fs = m.getCoordinateSet(), m.getBodySet(), m.getMarkerSet(), m.getForceSet()
    names = list(model.coordinates)
    gps = [osim.PathActuator.safeDownCast(fs.get(n)).getGeometryPath() for n in scene.path_names]

    def opensim_pose():
        for k in range(T):
            for j, c in enumerate(names):
                cs.get(c).setValue(s, float(q[k, j]), False)
            m.realizePosition(s)
            for i in range(bs.getSize()):
                bs.get(i).getTransformInGround(s)
            for i in range(ms.getSize()):
                ms.get(i).getLocationInGround(s)
            for gp in gps:
                cur = gp.getCurrentPath(s)
                for j in range(cur.getSize()):
                    cur.get(j).getLocationInGround(s)
    t_os = _median(opensim_pose, a.repeat)
    print(f"posing {T} frames (bodies, markers, path points): arthron {t_ar:.3f} s, OpenSim "
          f"{t_os:.3f} s; ratio OpenSim/arthron {t_os / t_ar:.2f}")
    print(f"reading the {len(scene.bodies)} meshes (once per command): {t_mesh:.3f} s")

    for size in ((400, 400), (800, 800)):
        n = 20
        frames = list(range(0, T, max(1, T // n)))[:n]
        t = _median(lambda: render_frames(scene, frames, size=size), a.repeat)
        print(f"render {size[0]}x{size[1]}: {1e3 * t / len(frames):.1f} ms per image "
              f"({len(frames)} images, one plotter)")

    env = fresh_process_env()     # bytecode cached as installed: one untimed run per command
    with tempfile.TemporaryDirectory() as d:
        for out, extra in (("one.png", ["--frames", "0"]), ("walk.gif", [])):
            cmd = [sys.executable, "-m", "arthron.cli", "show", str(GAIT_REF_MODEL), "--motion", str(WALK),
                   "--geometry", str(GEOMETRY), *extra, "-o", str(Path(d) / out)]
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            t = _median(lambda: subprocess.run(cmd, env=env, check=True, capture_output=True), a.repeat)
            print(f"arthron show -o {out}: {t:.2f} s (fresh process, 800x800)")


if __name__ == "__main__":
    main()
