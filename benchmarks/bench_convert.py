"""Converting the shared OpenSim 2.x/3.x models to 4.x: arthron vs OpenSim 4.6.

For each file in ``opensim-models-legacy``:

* arthron: ``read_osim`` (with the per-class upgrade of :mod:`arthron.io.osim_upgrade`) then
  ``write_osim``;
* OpenSim: ``Model(path)`` (its in-memory ``updateFromXMLNode`` upgrade) then ``printToXML``
  (no ``initSystem``, which a converter does not need);

each timed as the best of ``--repeat`` runs; printed with their ratio and whether OpenSim 4.6
loads arthron's file (``initSystem``). Run: ``python benchmarks/bench_convert.py``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from conftest import DATA  # noqa: E402

from arthron.io.osim import read_osim, write_osim  # noqa: E402


def best(f, n):
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    import opensim as osim
    osim.Logger.setLevelString("error")
    tmp = Path(tempfile.mkdtemp(prefix="arthron-bench-convert-"))
    print(f"{'model':<28} {'arthron (s)':>11} {'OpenSim (s)':>11} {'ratio':>7}  OpenSim loads ours")
    for src in sorted((DATA / "opensim-models-legacy").glob("*.osim")):
        out_a, out_o = tmp / f"a_{src.name}", tmp / f"o_{src.name}"

        def ours():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                write_osim(out_a, read_osim(src))

        def theirs():
            osim.Model(str(src)).printToXML(str(out_o))

        ta, to = best(ours, a.repeat), best(theirs, a.repeat)
        try:
            osim.Model(str(out_a)).initSystem()
            ok = "yes"
        except Exception as e:  # reported, not raised: the benchmark lists every file
            ok = f"no: {str(e).splitlines()[0][:60]}"
        print(f"{src.stem:<28} {ta:11.4f} {to:11.4f} {to / ta:7.2f}  {ok}")


if __name__ == "__main__":
    main()
