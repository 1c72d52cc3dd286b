"""OpenSim's InverseKinematicsTool: ``IKTaskSet`` and setup files run on arthron's
inverse-kinematics solver (:mod:`arthron.solvers.inverse_kinematics`), results written under
OpenSim's names.

Source: OpenSim 4.6 ``InverseKinematicsTool::run`` (setup properties, ``results_directory``
created, ``<name>_ik_marker_errors.sto`` and ``<name>_ik_model_marker_locations.sto`` beside
the ``output_motion_file``).
"""
from __future__ import annotations

import math
from dataclasses import field, fields
from pathlib import Path

import numpy as np

from ..runtime import dataclass  # dataclasses.dataclass with shared __repr__/__eq__
from ..errors import DataFileError, OptionError
from ..io.files import check_output, input_guard, make_output_folder, note_input, output_group
from ..io.osim import read_osim
from ..io.setup import read_tool_setup
from ..io.sto import read_sto, write_sto
from ..io.trc import read_trc
from ..models.model import Model
from ..solvers.inverse_kinematics import (CoordinateTask, IKResult, IKTasks, check_ik_options,
                                          coordinate_reference, solve_ik)
from .setup_files import check_tool, find_setup_file, results_directory, setup_result_name

__all__ = ["IKToolResult", "read_ik_tasks", "run_ik", "run_ik_from_setup", "write_ik_result"]


def write_ik_result(result: IKResult, motion_path, errors_path=None, locations_path=None) -> Path:
    """Write an :class:`IKResult` as OpenSim's IK tool does: the ``.mot`` (degrees, OpenSim
    layout) and, when given, the marker errors ``.sto`` and the model marker locations ``.sto``.
    Missing folders are created. The files are written as one
    (:func:`arthron.io.files.output_group`): all new, or none (a failed rename names the stale
    ones); every path is checked before anything is created. Returns the motion path."""
    motion_path = Path(motion_path)
    paths = [p for p in (motion_path, errors_path, locations_path) if p is not None]
    for p in paths:
        check_output(p)
    for p in paths:
        make_output_folder(p)
    with output_group():
        write_sto(motion_path, result.motion_table())
        if errors_path is not None:
            write_sto(errors_path, result.errors_table())
        if locations_path is not None:
            write_sto(locations_path, result.locations_table())
    return motion_path


@dataclass
class IKToolResult(IKResult):
    """An :class:`IKResult` that knows where the tool writes it.

    Attributes (besides :class:`IKResult`'s)
    ----------------------------------------
    output_motion_file : Path or None, the ``.mot``
    errors_file : Path or None, ``<name>_ik_marker_errors.sto``
    locations_file : Path or None, ``<name>_ik_model_marker_locations.sto``
        (``report_marker_locations``)
    """

    output_motion_file: Path | None = None
    errors_file: Path | None = None
    locations_file: Path | None = None
    inputs: list = field(default_factory=list, repr=False)

    @classmethod
    def of(cls, result: IKResult, **paths) -> "IKToolResult":
        return cls(**{f.name: getattr(result, f.name) for f in fields(IKResult)}, **paths)

    def write(self, motion_path=None, errors_path=None, locations_path=None) -> Path:
        """Write the ``.mot`` (degrees, OpenSim layout) and, when given or when the result came
        from a setup, ``<name>_ik_marker_errors.sto`` and (``report_marker_locations``)
        ``<name>_ik_model_marker_locations.sto``. Returns the motion path.

        Raises
        ------
        OptionError when no motion path is given or known.
        """
        motion_path = Path(motion_path) if motion_path is not None else self.output_motion_file
        if motion_path is None:
            raise OptionError("IK result: no output motion path given")
        with input_guard(self.inputs):
            return write_ik_result(self, motion_path,
                                   errors_path if errors_path is not None else self.errors_file,
                                   locations_path if locations_path is not None
                                   else self.locations_file)


def read_ik_tasks(task_set_elem, model: Model, coordinate_table=None, path=None) -> IKTasks:
    """Read an ``<IKTaskSet>`` element (lxml) into :class:`IKTasks`.

    Tasks with ``apply`` false are skipped. ``from_file`` coordinate tasks need
    ``coordinate_table`` (a :class:`arthron.tables.Table` in radians/metres).

    Raises
    ------
    DataFileError for a coordinate task naming a coordinate the model lacks, a bad weight, or a
    ``from_file`` task without coordinate data.
    """
    mw: dict = {}
    ct: dict = {}
    if task_set_elem is None:
        return IKTasks(None, {})
    objs = task_set_elem.find("objects")
    items = list(objs) if objs is not None else []
    coords = model.coordinates
    for e in items:
        if not isinstance(e.tag, str):
            continue
        name = e.get("name", "")
        ap = (e.findtext("apply") or "true").strip().lower()
        if ap in ("false", "0", "no"):
            continue
        try:
            w = float((e.findtext("weight") or "0").strip())
        except ValueError:
            raise DataFileError(f"task '{name}': weight is not a number", path,
                                f"<{e.tag} name='{name}'> line {e.sourceline}") from None
        if e.tag == "IKMarkerTask":
            mw[name] = w
        elif e.tag == "IKCoordinateTask":
            if name not in coords:
                raise DataFileError(f"IKCoordinateTask names coordinate '{name}' that the model "
                                    f"'{model.name}' lacks", path, f"line {e.sourceline}")
            vt = (e.findtext("value_type") or "default_value").strip()
            try:
                val = float((e.findtext("value") or "0").strip() or 0.0)
            except ValueError:
                raise DataFileError(f"task '{name}': value is not a number", path,
                                    f"<{e.tag} name='{name}'> line {e.sourceline}") from None
            task = CoordinateTask(w, vt, val)
            if vt == "from_file":
                if coordinate_table is None or name not in coordinate_table.labels:
                    raise DataFileError(f"IKCoordinateTask '{name}' is from_file but the coordinate "
                                        "file is missing or lacks that column", path,
                                        f"line {e.sourceline}")
                tt = np.asarray(coordinate_table.time, float)
                yy = np.asarray(coordinate_table.column(name), float)
                task.values = coordinate_reference(tt, yy)
            elif vt not in ("default_value", "manual_value"):
                raise DataFileError(f"IKCoordinateTask '{name}': unknown value_type '{vt}'", path,
                                    f"line {e.sourceline}")
            ct[name] = task
    return IKTasks(mw, ct)


def run_ik(model, trial, setup=None, *, tasks: IKTasks | None = None, time_range=None,
           constraint_weight=math.inf, output=None, progress=None, block: int | None = None,
           report_marker_locations: bool = False, penalty: bool = False,
           rotation=None) -> IKToolResult:
    """IK from objects or file names (what ``arthron ik`` calls).

    Parameters
    ----------
    model : Model or path of an ``.osim``
    trial : MarkerTrial or path of a ``.trc`` or a ``.c3d`` (its markers,
        :func:`arthron.io.c3d.read_c3d`, turned by ``rotation``, e.g. ``"x-90"``)
    setup : optional path of an InverseKinematicsTool setup: its tasks, time range and
        constraint weight are used unless given here
    tasks, time_range ((t0, t1) s), constraint_weight, block, penalty, progress : as
        :func:`arthron.solvers.inverse_kinematics.solve_ik`
    output : optional path: the result remembers it for :meth:`IKResult.write`
    report_marker_locations : with ``output``, also write ``<stem>_model_marker_locations.sto``
        (model marker positions in ground; also on when the setup asks for it)

    Returns
    -------
    IKToolResult (call ``.write()``)
    """
    with input_guard() as inputs:
        if not hasattr(trial, "positions") and Path(trial).suffix.lower() == ".c3d":
            from .c3d_tool import c3d_markers
            trial = c3d_markers(trial, rotation=rotation)
        elif rotation is not None:
            raise OptionError("rotation applies to a .c3d trial only")
        res = _run_ik(model, trial, setup, tasks, time_range, constraint_weight, output, progress,
                      block, report_marker_locations, penalty)
    res.inputs = [p for p, _ in inputs]
    return res


def _run_ik(model, trial, setup, tasks, time_range, constraint_weight, output, progress, block,
            report_marker_locations, penalty) -> IKToolResult:
    if not isinstance(model, Model):
        model = read_osim(model)
    if setup is not None:
        st = read_tool_setup(setup)
        cfg = _ik_config(st, model, None)
        tasks = tasks if tasks is not None else cfg["tasks"]
        time_range = time_range if time_range is not None else cfg["time_range"]
        if constraint_weight == math.inf:
            constraint_weight = cfg["constraint_weight"]
        report_marker_locations = report_marker_locations or cfg["report_marker_locations"]
    if not hasattr(trial, "positions"):
        trial = read_trc(trial)
    note_input(model.source)
    note_input(getattr(trial, "source", None))
    if output is not None:
        check_output(output)            # before solving: an output that is an input is refused
    res = IKToolResult.of(solve_ik(model, trial, tasks, time_range=time_range,
                                   constraint_weight=constraint_weight, progress=progress,
                                   block=block, penalty=penalty))
    if output is not None:
        res.output_motion_file = Path(output)
        res.errors_file = Path(output).with_name(Path(output).stem + "_marker_errors.sto")
        if report_marker_locations:
            res.locations_file = Path(output).with_name(Path(output).stem
                                                        + "_model_marker_locations.sto")
    return res


def _parse_float(text, default, st=None, tag=""):
    if text is None or not str(text).strip():
        return default
    t = str(text).strip().lower()
    if t in ("inf", "infinity", "+inf"):
        return math.inf
    try:
        return float(t)
    except ValueError:
        raise DataFileError(f"<{tag}> is not a number: {text!r}",
                            None if st is None else st.path) from None


def _ik_config(st, model, search_dirs):
    """The solver options of an InverseKinematicsTool setup (tasks, time range, constraint
    weight, accuracy, report_marker_locations), checked by the solver's
    :func:`~arthron.solvers.inverse_kinematics.check_ik_options`.

    Raises
    ------
    DataFileError for unreadable values, OptionError (naming the setup) for bad ones.
    """
    el = st.element
    coord_table = None
    cf = st.get("coordinate_file")
    if cf and cf.strip() and cf.strip() != "Unassigned":
        tab = read_sto(find_setup_file(st, cf, search_dirs))
        rot = [c.name for c in model.coordinates.values()
               if c.motion_type == "rotational" and c.name in tab.labels]
        coord_table = tab.to_radians(rot)
    tasks = read_ik_tasks(el.find("IKTaskSet"), model, coord_table, st.path)
    tr = st.get("time_range")
    try:
        time_range = [float(v) for v in tr.split()] if tr and tr.strip() else None
    except ValueError:
        raise DataFileError(f"<time_range> must be two numbers, got {tr!r}", st.path) from None
    cfg = dict(tasks=tasks, time_range=time_range,
               constraint_weight=_parse_float(st.get("constraint_weight"), math.inf, st,
                                              "constraint_weight"),
               accuracy=_parse_float(st.get("accuracy"), 1e-5, st, "accuracy"),
               report_marker_locations=(st.get("report_marker_locations") or "false").strip()
               .lower() in ("true", "1", "yes"),
               report_errors=(st.get("report_errors") or "true").strip().lower()
               in ("true", "1", "yes"))
    try:
        check_ik_options(tasks=tasks, time_range=time_range,
                         constraint_weight=cfg["constraint_weight"], accuracy=cfg["accuracy"])
    except OptionError as e:
        first = e.message.split()[0]
        where = "<IKTaskSet>" if "task" in e.message.split(":")[0] else f"<{first}>"
        raise OptionError(e.message, st.path, where) from None
    return cfg


def run_ik_from_setup(path, *, search_dirs=None, placeholders=None, progress=None,
                      block: int | None = None, penalty: bool = False) -> IKToolResult:
    """Run an OpenSim ``InverseKinematicsTool`` setup file.

    File names are resolved against the setup's folder; names that do not exist there (for
    example absolute paths of another machine) are looked up by file name in the setup folder
    and ``search_dirs``.

    Returns
    -------
    IKToolResult whose ``write()`` writes ``output_motion_file`` (default
    ``<results_directory>/<tool name>_ik.mot``), with ``report_errors`` (default true)
    ``<results_directory>/<tool name>_ik_marker_errors.sto`` and, with
    ``report_marker_locations``, ``<tool name>_ik_model_marker_locations.sto`` (OpenSim's names;
    the results directory is created, as OpenSim's tool does).
    """
    with input_guard() as inputs:
        res = _run_ik_from_setup(path, search_dirs, placeholders, progress, block, penalty)
    res.inputs = [p for p, _ in inputs]
    return res


def _run_ik_from_setup(path, search_dirs, placeholders, progress, block, penalty) -> IKToolResult:
    st = read_tool_setup(path, placeholders)
    check_tool(st, "InverseKinematicsTool")
    mf = find_setup_file(st, st.get("model_file"), search_dirs)
    if mf is None:
        raise DataFileError("model_file is not set", st.path)
    model = read_osim(mf, forces=False)      # IK uses the kinematics alone
    trc = find_setup_file(st, st.get("marker_file"), search_dirs)
    if trc is None:
        raise DataFileError("marker_file is not set", st.path)
    trial = read_trc(trc)
    cfg = _ik_config(st, model, search_dirs)
    out = st.resolve(st.get("output_motion_file"))
    rd = results_directory(st, create=False)
    if out is None or cfg["report_errors"] or cfg["report_marker_locations"]:   # the name names files
        setup_result_name(st, st.name, f"<InverseKinematicsTool name='{st.name}'>")
    paths = dict(output_motion_file=out if out is not None else rd / f"{st.name}_ik.mot",
                 errors_file=rd / f"{st.name}_ik_marker_errors.sto" if cfg["report_errors"] else None,
                 locations_file=(rd / f"{st.name}_ik_model_marker_locations.sto"
                                 if cfg["report_marker_locations"] else None))
    for p in paths.values():            # before solving: an output that is an input is refused
        if p is not None:
            check_output(p)
    return IKToolResult.of(solve_ik(model, trial, cfg["tasks"], time_range=cfg["time_range"],
                                    constraint_weight=cfg["constraint_weight"], progress=progress,
                                    block=block, penalty=penalty), **paths)
