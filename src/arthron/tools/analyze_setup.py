"""The AnalyzeTool setup as arthron reads it: the files it names, its force sets, its analyses,
and the frames an analysis records with ``step_interval``. Shared by the AnalyzeTool
(:mod:`arthron.tools.analyze_tool`) and the StaticOptimization tool
(:mod:`arthron.tools.static_optimization_tool`); both re-export these names.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ArthronWarning, DataFileError, UnsupportedFeature
from ..io.osim import read_force_set, read_osim
from ..io.setup import ToolSetup, read_tool_setup
from ..models.model import Model
from .setup_files import setting_bool, setting_float, setting_list
from .setup_files import check_tool, find_setup_file, is_unassigned, require_setup_file, setup_result_name

__all__ = ["step_rows", "read_force_set_file", "AnalyzeSetup", "read_analyze_setup",
           "model_with_force_sets"]


def step_rows(motion_time, t_out, step_interval: int, filtered: bool) -> np.ndarray:
    """Rows of ``t_out`` an analysis records with ``step_interval`` N, as OpenSim's AnalyzeTool.

    AnalyzeTool steps through the rows of its states storage from the first at or before
    ``initial_time`` to ``final_time``: the first row is recorded (``begin``), then every row
    whose index *in the storage* is a multiple of N (``Analysis::step``), then the last
    (``end``). The storage is the coordinates file, padded in front by half its length when
    the coordinates are low-pass filtered (``Storage::pad``), so the same N keeps other frames
    with and without filtering. (Measured with OpenSim 4.6 on arm26, N = 5 and 7, with and
    without a 6 Hz filter. A non-uniformly sampled file is resampled by OpenSim before
    filtering; the index is then taken on the mean step.)
    """
    n = max(1, int(step_interval))
    T = len(t_out)
    if n == 1 or T <= 2:
        return np.arange(T)
    mt = np.asarray(motion_time, float)
    dt = (mt[-1] - mt[0]) / (len(mt) - 1)
    start = mt[0] - (len(mt) // 2) * dt if filtered else mt[0]
    k = np.rint((np.asarray(t_out, float) - start) / dt).astype(int)
    keep = k % n == 0
    keep[0] = keep[-1] = True
    return np.flatnonzero(keep)


def setup_step_rows(st: "AnalyzeSetup", motion, t_out, step_interval: int):
    """The frames of ``t_out`` an analysis of the setup ``st`` with ``step_interval`` N records
    (None for N ≤ 1: all): :meth:`arthron.solvers.states_file.ModelStates.step_rows` on a states
    file's ModelStates, else :func:`step_rows` on the coordinates file (padded when filtered)."""
    if step_interval <= 1:
        return None
    if hasattr(motion, "step_rows"):             # a states file's ModelStates
        return motion.step_rows(step_interval, t_out)
    return step_rows(motion.time, t_out, step_interval, st.lowpass_hz > 0)


# --------------------------------------------------------------------------------------
# force set files
# --------------------------------------------------------------------------------------
def read_force_set_file(path) -> list:
    """The actuators of an OpenSim ``ForceSet`` file (``force_set_files`` of a tool setup), as
    typed force elements (:func:`arthron.io.osim.read_force_set`). ``<defaults>`` are ignored.

    Raises
    ------
    DataFileError for a missing or malformed file or one that is not a ForceSet.
    """
    return read_force_set(path)


# --------------------------------------------------------------------------------------
# the setup
# --------------------------------------------------------------------------------------
@dataclass
class AnalyzeSetup:
    """An ``AnalyzeTool`` setup, its files resolved (:mod:`arthron.tools.setup_files`).

    Attributes
    ----------
    name : the tool's name (prefix of the result files)
    model_file, coordinates_file, external_loads_file : Path or None
    states_file : Path or None (when given, coordinates_file is None: the analyses run on the
        states, :mod:`arthron.solvers.states_file`)
    force_set_files : list of Path; replace_force_set : bool
    lowpass_hz : ``lowpass_cutoff_frequency_for_coordinates`` (≤ 0: none; -1 with a states file)
    time_range : (initial_time, final_time) s (OpenSim 4.6's defaults 0 and 1 s when absent)
    analyses : the enabled analyses, (class name, lxml element) in file order
    setup : the generic ToolSetup
    """

    name: str
    model_file: Path
    coordinates_file: Path | None
    external_loads_file: Path | None
    force_set_files: list
    replace_force_set: bool
    lowpass_hz: float
    time_range: tuple
    analyses: list = field(default_factory=list)
    setup: ToolSetup = field(default=None, repr=False)
    states_file: Path | None = None

    @property
    def path(self) -> Path:
        return self.setup.path

    def analysis(self, kind: str):
        """The first enabled analysis of class ``kind`` (lxml element), or None."""
        return next((el for k, el in self.analyses if k == kind), None)


def read_analyze_setup(path, placeholders=None, search_dirs=None) -> AnalyzeSetup:
    """Read an ``AnalyzeTool`` setup (formats 20302–4xxxx).

    Relative file names are resolved against the setup's folder (as AnalyzeTool does), names
    that do not exist by their file name in ``search_dirs``. ``placeholders``: literal text
    substitutions before parsing (:func:`arthron.io.setup.parse_xml`).

    Raises
    ------
    DataFileError (not an AnalyzeTool, missing model, coordinates or states file, bad numbers),
    UnsupportedFeature (``solve_for_equilibrium_for_auxiliary_states`` with a ``states_file``; a
    ``speeds_file`` beside a ``coordinates_file``, which OpenSim 4.6 reads as stored at the rows
    of the filtered coordinates).
    A ``states_file`` replaces ``coordinates_file`` and ``speeds_file`` (both ignored, with a
    warning, as OpenSim 4.6 does); its ``controls_file`` is ignored with a warning, as OpenSim
    4.6's AnalyzeTool ignores it (actuators at control 0; measured).
    """
    s = read_tool_setup(path, placeholders)
    check_tool(s, "AnalyzeTool")
    states_file = None if is_unassigned(s.get("states_file")) else _states_file(s, search_dirs)
    if not s.get("model_file") or not (s.get("coordinates_file") or states_file):
        raise DataFileError("the setup needs model_file and coordinates_file (or states_file)", s.path)
    if states_file is not None:
        _check_states_file_options(s)
    elif not is_unassigned(s.get("speeds_file")):
        el = s.element.find("speeds_file")
        raise UnsupportedFeature(
            "<speeds_file> beside a <coordinates_file>: OpenSim 4.6 then takes the generalized speeds "
            "from that file (as stored, at the padded rows of the filtered coordinates), which arthron "
            "does not reproduce; leave <speeds_file> empty to use the derivatives of the coordinates' "
            "splines (OpenSim's default), or give the coordinates and speeds together as a <states_file>",
            s.path, *_line_of(el))
    analyses = []
    aset = s.element.find("AnalysisSet")
    objs = aset.find("objects") if aset is not None else None
    for el in ([] if objs is None else list(objs)):
        if isinstance(el.tag, str) and setting_bool(el, "on", True):
            setup_result_name(s, el.get("name"), f"<{el.tag} name='{el.get('name')}'> (line {el.sourceline})")
            analyses.append((el.tag, el))
    return AnalyzeSetup(
        name=setup_result_name(s, s.name, f"<AnalyzeTool name='{s.name}'>"),
        model_file=require_setup_file(s, "model_file", search_dirs),
        coordinates_file=(require_setup_file(s, "coordinates_file", search_dirs)
                          if states_file is None else None),
        states_file=states_file,
        external_loads_file=find_setup_file(s, s.get("external_loads_file"), search_dirs),
        force_set_files=[require_setup_file(s, "force_set_files", search_dirs, value=n)
                         for n in setting_list(s.get("force_set_files")) if not is_unassigned(n)],
        replace_force_set=setting_bool(s.element, "replace_force_set", False),
        lowpass_hz=-1.0 if states_file is not None else setting_float(
            s.get("lowpass_cutoff_frequency_for_coordinates"), -1.0, s.path,
            "lowpass_cutoff_frequency_for_coordinates"),
        time_range=(setting_float(s.get("initial_time"), 0.0, s.path, "initial_time"),
                    setting_float(s.get("final_time"), 1.0, s.path, "final_time")),
        analyses=analyses, setup=s)


def _line_of(el) -> tuple:
    """("line N",) naming a setup element's line in an error, or () when it is absent."""
    return (f"line {el.sourceline}",) if el is not None else ()


def _states_file(s: ToolSetup, search_dirs) -> Path:
    """The setup's ``states_file``, found as the other inputs (:func:`find_setup_file`); a
    missing one is a DataFileError naming the element and its line, and where such files come
    from (CMC, a forward simulation: tools arthron does not run)."""
    el = s.element.find("states_file")
    try:
        return find_setup_file(s, s.get("states_file"), search_dirs, "states_file")
    except DataFileError as e:
        raise DataFileError(
            f"{e.message}; a states file is what CMC or a forward simulation writes, tools arthron "
            "does not run (not supported): run them in OpenSim first, or give the motion (e.g. the "
            "IK .mot) as <coordinates_file> and leave <states_file> empty", s.path,
            *_line_of(el)) from None


def _check_states_file_options(s: ToolSetup) -> None:
    """What OpenSim 4.6 does with the other inputs when ``states_file`` is set: warnings for
    those it ignores, UnsupportedFeature for an equilibration of the muscles' states."""
    if setting_bool(s.element, "solve_for_equilibrium_for_auxiliary_states", False):
        el = s.element.find("solve_for_equilibrium_for_auxiliary_states")
        raise UnsupportedFeature(
            "<solve_for_equilibrium_for_auxiliary_states> true with a <states_file>: OpenSim then "
            "replaces the file's fiber lengths by the muscles' equilibrium, which arthron does not "
            "compute; set it false to use the file's states", s.path,
            *_line_of(el))
    ignored = [k for k in ("coordinates_file", "speeds_file") if not is_unassigned(s.get(k))]
    if ignored:
        warnings.warn(f"{s.path}: {' and '.join(f'<{k}>' for k in ignored)} ignored since "
                      "<states_file> is set (as OpenSim does)", ArthronWarning, stacklevel=3)
    if not is_unassigned(s.get("controls_file")):
        warnings.warn(f"{s.path}: <controls_file> is ignored, as OpenSim 4.6's AnalyzeTool ignores "
                      "it: actuators apply their force at control 0", ArthronWarning, stacklevel=3)
    if setting_float(s.get("lowpass_cutoff_frequency_for_coordinates"), -1.0, s.path,
                     "lowpass_cutoff_frequency_for_coordinates") > 0:
        warnings.warn(f"{s.path}: <lowpass_cutoff_frequency_for_coordinates> does not apply to a "
                      "<states_file> (as in OpenSim): its states are used as they are",
                      ArthronWarning, stacklevel=3)


def analysis_name(el, kind: str) -> str:
    """The name OpenSim puts in an analysis' result files, ``<tool name>_<analysis name>_...``:
    the element's ``name`` attribute as written (``name=""`` gives ``arm26__ReactionLoads.sto``
    in OpenSim 4.6 too), the class name when the attribute is absent."""
    return el.get("name", kind) if el is not None else kind


def model_with_force_sets(st: AnalyzeSetup) -> Model:
    """The setup's model with its ``force_set_files`` appended, or replacing its forces when
    ``replace_force_set`` (as OpenSim's AnalyzeTool loads it)."""
    model = read_osim(st.model_file)
    if st.force_set_files:
        if st.replace_force_set:
            model.forces = {}
        for p in st.force_set_files:
            for f in read_force_set_file(p):
                model.forces[f.name] = f
    return model
