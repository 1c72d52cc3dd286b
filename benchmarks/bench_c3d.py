"""``arthron c3d`` on walking2.c3d against ezc3d's bare read of the same file: the overhead arthron
adds (selecting markers, NaN for invalid points, rotation and units, OpenSim's force layout, and
formatting and writing the .trc, the 2000 Hz GRF .mot and the ExternalLoads .xml atomically).

Printed: median wall time (s) of

* ezc3d's bare read (``ezc3d.c3d(path, extract_forceplat_data=True)``, what arthron calls);
* ``read_c3d`` (the read plus arthron's tables);
* ``export_c3d`` (the whole ``arthron c3d`` work: read + the three files);
* ``arthron c3d`` as a fresh process (interpreter and imports included) against
  ``python -c "import ezc3d; ezc3d.c3d(...)"`` as a fresh process;

and their ratios to the bare read. Run: ``python benchmarks/bench_c3d.py``.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from _common import DATA, fresh_process_env, median_time

import ezc3d

from arthron.io.c3d import read_c3d
from arthron.tools.c3d_tool import export_c3d

WALK2 = DATA / "opensim-core/OpenSim/Tests/shared/walking2.c3d"


def main(n=7):
    bare = median_time(lambda: ezc3d.c3d(str(WALK2), extract_forceplat_data=True), n)
    rd = median_time(lambda: read_c3d(WALK2, rotation="x-90", units="m"), n)
    with tempfile.TemporaryDirectory() as d:
        ex = median_time(lambda: export_c3d(WALK2, Path(d) / "o", rotation="x-90"), n)
        env = fresh_process_env()       # bytecode cached as installed: one untimed run first
        cmd = [sys.executable, "-m", "arthron.cli", "c3d", str(WALK2), "-o", str(Path(d) / "p"),
               "--rotate", "x-90"]
        bare = [sys.executable, "-c", f"import ezc3d; ezc3d.c3d({str(WALK2)!r}, extract_forceplat_data=True)"]
        for c in (cmd, bare):
            subprocess.run(c, check=True, env=env, capture_output=True)
        cli = median_time(lambda: subprocess.run(cmd, check=True, env=env, capture_output=True), 3)
        raw = median_time(lambda: subprocess.run(bare, check=True, env=env, capture_output=True), 3)
    print(f"walking2.c3d: 1249 marker frames x 44 markers, 9992 analog frames x 12 channels, 2 platforms")
    print(f"ezc3d bare read          {bare * 1e3:8.1f} ms")
    print(f"arthron read_c3d         {rd * 1e3:8.1f} ms   x{rd / bare:.2f} of the bare read")
    print(f"arthron export_c3d       {ex * 1e3:8.1f} ms   x{ex / bare:.2f} of the bare read")
    print(f"process: arthron c3d     {cli * 1e3:8.1f} ms   x{cli / raw:.2f} of a process doing the bare read "
          f"({raw * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
