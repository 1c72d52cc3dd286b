"""Shared fixtures: where the real data lives, and markers for tests needing it or OpenSim."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Test this checkout's code even when another checkout is installed in editable mode.
sys.path.insert(0, str(ROOT / "src"))
DATA = ROOT.parent / "shared" / "data"
HAVE_DATA = DATA.is_dir()
HAVE_OPENSIM = importlib.util.find_spec("opensim") is not None

needs_data = pytest.mark.skipif(not HAVE_DATA, reason="../shared/data is absent")
needs_opensim = pytest.mark.skipif(not HAVE_OPENSIM, reason="official OpenSim (extra 'interop') not installed")

MODELS = DATA / "opensim-models"
REF = DATA / "opensim-reference"
ARM26 = MODELS / "Models" / "Arm26" / "arm26.osim"
GAIT2354 = MODELS / "Models" / "Gait2354_Simbody" / "gait2354_simbody.osim"
GAIT2354_SUBJECT = MODELS / "Models" / "Gait2354_Simbody" / "subject01_simbody.osim"
GAIT_PIPE = MODELS / "Pipelines" / "Gait2354_Simbody"
GAIT_REF_MODEL = GAIT_PIPE / "OutputReference" / "subject01_simbody.osim"
TSM = DATA / "opensim-core" / "OpenSim" / "Tests" / "shared" / "ThoracoscapularShoulderModel.osim"
TSM_ID = DATA / "opensim-core" / "Applications" / "ID" / "tests" / "resources"
LENHART = DATA / "opensim-jam" / "models" / "knee_healthy" / "lenhart2015" / "lenhart2015.osim"
ARM26_TUT = MODELS / "Tutorials" / "Computed_Muscle_Control"


@pytest.fixture
def data_dir() -> Path:
    if not HAVE_DATA:
        pytest.skip("../shared/data is absent")
    return DATA


def _data_files():
    """Every file of the shared data with its (mtime, size): files added, changed or removed."""
    if not HAVE_DATA:
        return {}
    out = {}
    for p in DATA.rglob("*"):
        try:
            if p.is_file():
                st = p.stat()
                out[p] = (st.st_mtime_ns, st.st_size)
        except OSError:
            pass
    return out


def pytest_sessionstart(session):
    session.config._arthron_data_files = _data_files()


def pytest_sessionfinish(session, exitstatus):
    """The shared data is read in place and never written: fail the run if a test left files,
    or rewrote or removed one (a setup run without -o writes into the setup's folder)."""
    before = getattr(session.config, "_arthron_data_files", None)
    if before is None:
        return
    after = _data_files()
    added = sorted(str(p) if p not in before else f"{p} (changed)" if p in after else f"{p} (removed)"
                   for p in set(after) | set(before) if before.get(p) != after.get(p))
    if added:
        print("\ntests wrote into ../shared/data (not allowed):\n  " + "\n  ".join(map(str, added[:20])))
        session.exitstatus = 1
