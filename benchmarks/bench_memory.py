"""Peak memory of ``arthron id`` and ``arthron jr`` on a long trial (issue 11 finding 14).

Run:  python benchmarks/bench_memory.py [--frames 100000]

The Gait2354 walk (23 coordinates, subject01_simbody.osim) tiled to N frames at 100 Hz, 6 Hz
low-pass, no external loads; each command runs as a fresh process and its peak resident set
(``ru_maxrss``) is printed, with the frames solved in chunks (the default,
``arthron.solvers.inverse_dynamics.FRAME_CHUNK``) and in one pass (chunk = N), plus the wall time.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import GAIT_MODEL, ROOT, tiled_motion  # noqa: E402

RUN = """
import resource, sys
import arthron.solvers.inverse_dynamics as m
if {chunk}:
    m.FRAME_CHUNK = {chunk}
from arthron.cli import main
rc = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, file=sys.stderr)
sys.exit(rc)
"""


def peak(args, chunk, env):
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", RUN.format(chunk=chunk), *args], env=env,
                       capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return float(r.stderr.strip().splitlines()[-1]), dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=100_000)
    n = ap.parse_args().frames
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    from arthron.io.sto import write_sto
    with tempfile.TemporaryDirectory() as d:
        mot = Path(d) / "long.mot"
        write_sto(mot, tiled_motion(n))
        print(f"Gait2354, {n} frames, 6 Hz low-pass: peak memory (MB) and wall time (s)")
        for cmd in ("id", "jr"):
            args = [cmd, str(GAIT_MODEL), str(mot), "--lowpass", "6", "-o", str(Path(d) / f"{cmd}.sto")]
            for label, chunk in (("chunked", 0), ("one pass", n)):
                mb, dt = peak(args, chunk, env)
                print(f"  {cmd:3s} {label:9s} {mb:8.0f} MB {dt:8.1f} s", flush=True)


if __name__ == "__main__":
    main()
