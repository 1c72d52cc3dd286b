"""Fuzz arthron's readers with mutated real files (hypothesis) and count the outcomes.

    python benchmarks/fuzz_readers.py [--cases 10000] [--targets osim4,sto,...] [--seed 0]

Each target (a real file from ../shared/data and the reader, plus compile steps for models, see
tests/fuzz_harness.py) runs in its own child process so that a crash (segfault, abort) or a hang
(no progress for 30 s) is seen and counted instead of ending the run. Printed per target: cases,
typed errors, untyped exceptions, crashes, hangs, and the first few findings.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent / "tests"))


def _child(name, cases, seed, progress_path, out_path, skip):
    from hypothesis import HealthCheck, Phase, given, seed as hseed, settings, strategies as st

    import fuzz_harness as fh
    target = fh.TARGETS[name]
    base = target.base_bytes()
    kinds = fh.XML_KINDS if target.xml else fh.TEXT_KINDS
    folder = Path(tempfile.mkdtemp(prefix=f"fuzz-{name}-"))
    findings, count = [], [0]
    prog = open(progress_path, "w")

    @hseed(seed)
    @settings(max_examples=cases, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.builds(fh.Mutation, st.sampled_from(kinds), st.integers(0, 2 ** 31),
                     st.sampled_from(fh.BAD_VALUES), st.binary(min_size=1, max_size=8)))
    def run(m):
        count[0] += 1
        if count[0] <= skip:
            return
        prog.seek(0)
        prog.write(json.dumps([count[0], m.kind, m.index, m.value, m.blob.hex()]) + "\n")
        prog.flush()
        r = fh.run_case(target, base, m, folder)
        if r is not None:
            findings.append([m.kind, m.index, m.value, m.blob.hex(), r[:300]])

    run()
    Path(out_path).write_text(json.dumps({"cases": count[0], "findings": findings}))


def fuzz(name, cases, seed):
    """Run one target; restart after a crash or hang from the next case."""
    tmp = Path(tempfile.mkdtemp(prefix="fuzzrun-"))
    prog, out = tmp / "progress", tmp / "out.json"
    done, findings, crashes, hangs = 0, [], [], []
    t0 = time.time()
    while True:
        p = mp.get_context("spawn").Process(target=_child, args=(name, cases, seed, prog, out, done))
        p.start()
        last, last_t = None, time.time()
        while p.is_alive():
            p.join(1.0)
            try:
                cur = prog.read_text()
            except OSError:
                cur = None
            if cur != last:
                last, last_t = cur, time.time()
            elif time.time() - last_t > 30:
                p.kill()
                p.join()
                hangs.append(last)
                break
        if out.exists():
            r = json.loads(out.read_text())
            findings += r["findings"]
            done = r["cases"]
            break
        if p.exitcode not in (0, None) and not (hangs and hangs[-1] == last):
            crashes.append([p.exitcode, last])
        try:
            done = json.loads(last)[0]
        except (TypeError, ValueError):
            break
    return dict(target=name, cases=done, untyped=len(findings), crashes=len(crashes),
                hangs=len(hangs), seconds=round(time.time() - t0, 1), examples=findings[:8],
                crash_cases=crashes[:5], hang_cases=hangs[:5])


def main():
    import fuzz_harness as fh
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--targets", default=",".join(fh.TARGETS))
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    total = dict(cases=0, untyped=0, crashes=0, hangs=0)
    for name in a.targets.split(","):
        r = fuzz(name, a.cases, a.seed)
        for k in total:
            total[k] += r[k]
        print(f"{r['target']:12s} cases {r['cases']:6d}  untyped {r['untyped']:4d}  crashes "
              f"{r['crashes']:3d}  hangs {r['hangs']:3d}  ({r['seconds']} s)", flush=True)
        for ex in r["examples"]:
            print("    ", ex, flush=True)
        for ex in r["crash_cases"] + r["hang_cases"]:
            print("    crash/hang:", ex, flush=True)
    print(f"{'total':12s} cases {total['cases']:6d}  untyped {total['untyped']:4d}  crashes "
          f"{total['crashes']:3d}  hangs {total['hangs']:3d}")
    return 0 if total["untyped"] == total["crashes"] == total["hangs"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
