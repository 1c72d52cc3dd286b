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



def one_muscle_arm(muscle_class: str, max_contraction_velocity, curves: str = "") -> str:
    """The .osim text (4.x) of an arm (1.5 kg) on a pin joint ``flex`` under gravity, moved by
    one muscle ``FLEX`` of ``muscle_class`` from the ground to the arm (F_max 800 N, l_opt
    0.12 m, l_s 0.1 m, α_opt 0.2 rad, ``max_contraction_velocity``), ``curves`` (XML of its
    curve properties) after its other properties."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000"><Model name="arm"><Ground name="ground"/>
<gravity>0 -9.80665 0</gravity>
<BodySet name="bodyset"><objects><Body name="arm"><mass>1.5</mass><mass_center>0 -0.15 0</mass_center>
<inertia>0.01 0.002 0.01 0 0 0</inertia></Body></objects></BodySet>
<JointSet name="jointset"><objects><PinJoint name="elbow">
<socket_parent_frame>/ground</socket_parent_frame><socket_child_frame>/bodyset/arm</socket_child_frame>
<coordinates><Coordinate name="flex"><range>-2 2</range></Coordinate></coordinates></PinJoint></objects></JointSet>
<ForceSet name="forceset"><objects>
<{muscle_class} name="FLEX"><min_control>0</min_control><max_control>1</max_control>
<GeometryPath name="path"><PathPointSet><objects>
<PathPoint name="o"><socket_parent_frame>/ground</socket_parent_frame><location>0.03 0.2 0</location></PathPoint>
<PathPoint name="i"><socket_parent_frame>/bodyset/arm</socket_parent_frame><location>0.03 -0.05 0</location></PathPoint>
</objects></PathPointSet></GeometryPath>
<max_isometric_force>800</max_isometric_force><optimal_fiber_length>0.12</optimal_fiber_length>
<tendon_slack_length>0.1</tendon_slack_length><pennation_angle_at_optimal>0.2</pennation_angle_at_optimal>
<max_contraction_velocity>{max_contraction_velocity}</max_contraction_velocity>{curves}
</{muscle_class}></objects></ForceSet></Model></OpenSimDocument>"""

def static_optimization_setup(name, model, coordinates, results, t0, t1, *, physiology,
                              force_set=None, grf=None) -> str:
    """The XML text of an OpenSim AnalyzeTool setup ``name`` running StaticOptimization from
    ``t0`` to ``t1`` s on every frame (activation exponent 2, OpenSim's default optimizer
    settings, coordinates low-passed at 6 Hz), with ``force_set`` appended to the model's forces
    and the ExternalLoads file ``grf`` when given. Used by the tests and the benchmarks."""
    return f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><AnalyzeTool name="{name}">
<model_file>{model}</model_file><replace_force_set>false</replace_force_set>
<force_set_files>{force_set or ''}</force_set_files><results_directory>{results}</results_directory>
<initial_time>{t0}</initial_time><final_time>{t1}</final_time>
<AnalysisSet name="Analyses"><objects><StaticOptimization name="StaticOptimization">
<on>true</on><start_time>{t0}</start_time><end_time>{t1}</end_time><step_interval>1</step_interval>
<use_model_force_set>true</use_model_force_set><activation_exponent>2</activation_exponent>
<use_muscle_physiology>{'true' if physiology else 'false'}</use_muscle_physiology>
<optimizer_convergence_criterion>0.0001</optimizer_convergence_criterion>
<optimizer_max_iterations>100</optimizer_max_iterations>
</StaticOptimization></objects></AnalysisSet>
<external_loads_file>{grf or ''}</external_loads_file><coordinates_file>{coordinates}</coordinates_file>
<lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>
</AnalyzeTool></OpenSimDocument>"""


def analyze_tool_setup(path: Path, name: str, model, inputs: str, results, analyses: str,
                       t0: float = 0.0, t1: float = 1.0) -> Path:
    """Write an OpenSim AnalyzeTool setup ``name`` at ``path``: ``model`` (its own force set),
    ``analyses`` (the AnalysisSet's members, XML text), ``inputs`` (the coordinates or states
    file elements, XML text), results into ``results``, from ``t0`` to ``t1`` s. Returns the path."""
    path.write_text(f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><AnalyzeTool name="{name}">
<model_file>{model}</model_file><replace_force_set>false</replace_force_set><force_set_files/>
<results_directory>{results}</results_directory><initial_time>{t0}</initial_time><final_time>{t1}</final_time>
<AnalysisSet name="Analyses"><objects>{analyses}</objects></AnalysisSet>{inputs}
</AnalyzeTool></OpenSimDocument>""")
    return path


def thoracoscapular_motion(path: Path) -> Path:
    """Write a synthesized 1-s motion of every coordinate of the Thoracoscapular model (101
    frames; rotations ±0.3 rad and translations ±1 cm about the defaults, each coordinate at its
    own frequency) to ``path`` (``.mot``, radians) and return it."""
    import numpy as np
    from arthron.io.osim import read_osim
    from arthron.io.sto import write_sto
    from arthron.tables import Table
    model = read_osim(TSM)
    t = np.linspace(0, 1, 101)
    names = list(model.coordinates)
    base = np.array([c.default_value for c in model.coordinates.values()])
    amp = np.where([c.motion_type == "rotational" for c in model.coordinates.values()], 0.3, 0.01)
    data = base + amp * np.sin(2 * np.pi * t[:, None] * (1 + 0.1 * np.arange(len(names))))
    write_sto(path, Table(name="tsm", time=t, labels=names, data=data, in_degrees=False))
    return path


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
