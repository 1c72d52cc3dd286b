"""OpenSim's InverseDynamicsTool on arthron's inverse dynamics
(:func:`arthron.solvers.inverse_dynamics.run_inverse_dynamics`): from a setup file
(``arthron id --setup``) or from files given directly (``arthron id MODEL MOTION``).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ArthronWarning, DataFileError, OptionError
from ..io.files import check_output, input_guard, make_output_folder, note_input, output_group
from ..io.osim import read_osim
from ..io.setup import InverseDynamicsSetup, read_external_loads, read_id_setup, read_tool_setup
from ..io.sto import read_sto, write_sto
from ..models.model import Model
from ..solvers.inverse_dynamics import InverseDynamicsResult, run_inverse_dynamics
from ..solvers.joint_body_forces import JointBodyForces, joint_body_forces
from .options import check_lowpass, check_time_range
from .setup_files import check_tool, find_setup_file, require_setup_file, results_directory

__all__ = ["run_id", "run_id_from_setup", "InverseDynamicsRun", "write_inverse_dynamics",
           "DEFAULT_OUTPUT", "DEFAULT_BODY_FORCES_OUTPUT", "joints_to_report"]

#: OpenSim's default ``output_gen_force_file``
DEFAULT_OUTPUT = "inverse_dynamics.sto"
#: OpenSim's default ``output_body_forces_file``
DEFAULT_BODY_FORCES_OUTPUT = "body_forces_at_joints.sto"


def write_inverse_dynamics(result: InverseDynamicsResult, path) -> Path:
    """Write generalized forces as OpenSim's ``.sto`` (whole or not at all; missing folders of
    ``path`` created, as OpenSim's ``IO::makeDir``); returns the path.

    Raises DataFileError when ``path`` is an input of the running command
    (:func:`arthron.io.files.input_guard`), a folder or a device."""
    make_output_folder(path)
    write_sto(path, result.to_table())
    return Path(path)


@dataclass
class InverseDynamicsRun:
    """An inverse-dynamics run and where its result goes.

    result : InverseDynamicsResult; output : Path of the ``.sto`` (the setup's
    ``results_directory / output_gen_force_file``, or the one given); setup : the
    InverseDynamicsSetup when run from a setup file; body_forces : the equivalent body forces
    at the setup's ``joints_to_report_body_forces`` (:class:`JointBodyForces`, None when it
    lists none) and body_forces_output where they go.
    """

    result: InverseDynamicsResult
    output: Path | None = None
    setup: InverseDynamicsSetup | None = field(default=None, repr=False)
    inputs: list = field(default_factory=list, repr=False)
    body_forces: JointBodyForces | None = None
    body_forces_output: Path | None = None

    def write(self, path=None) -> Path:
        """Write the result to ``path`` (default :attr:`output`; missing folders created, as
        OpenSim does for its results directory), never onto a file the run read
        (:attr:`inputs`), and the body forces (when asked for) to :attr:`body_forces_output`,
        both files or neither (one output group). Returns the generalized forces' path."""
        if path is None:
            if self.output is None:
                raise DataFileError("no output file: give a path")
            path = self.output
        with input_guard(self.inputs), output_group():
            out = write_inverse_dynamics(self.result, path)
            if self.body_forces is not None:
                make_output_folder(self.body_forces_output)
                write_sto(self.body_forces_output, self.body_forces.to_table())
        return out


def run_id(model, motion, *, external_loads=None, lowpass_hz=None, time_range=None,
           forces_to_exclude=("Muscles",), in_degrees=None, output=None, bodies=None,
           rotation=None, force_location: str = "origin", body_forces=None,
           body_forces_output=None) -> InverseDynamicsRun:
    """Inverse dynamics of files or objects (``arthron id MODEL MOTION``).

    Parameters
    ----------
    model : Model or path of an ``.osim``
    motion : Table or path of a ``.mot/.sto`` of coordinates (degrees honoured)
    external_loads : ExternalLoads or path of an ExternalLoads XML (its ``datafile`` is read),
        or of a ``.c3d`` trial: its force platforms applied to ``bodies`` (one per platform),
        turned by ``rotation`` and expressed at ``force_location`` (``"origin"``/``"cop"``),
        as :func:`arthron.tools.c3d_tool.c3d_external_loads`
    lowpass_hz : cut-off for the coordinates (None or ≤ 0: no filter)
    time_range : (t0, t1) s or None (the whole motion)
    forces_to_exclude : names, classes, ``Muscles``, ``Actuators`` or ``All`` (OpenSim's property;
        one name may be given as a str)
    in_degrees : bool or None: rotational columns in degrees (None: the motion's ``inDegrees``)
    output : the ``.sto`` path the run remembers for :meth:`InverseDynamicsRun.write`
    body_forces : joint names (or ``All``) whose equivalent body forces are also computed, as a
        setup's ``joints_to_report_body_forces`` (:func:`joints_to_report`); written to
        ``body_forces_output`` (default ``body_forces_at_joints.sto`` beside ``output``)

    Raises
    ------
    OptionError (time range not two increasing numbers, cut-off not finite; a C3D without
    ``bodies``), the readers' DataFileError/ModelFileError (a C3D with no force platform), the
    solver's errors.
    """
    with input_guard() as inputs:
        if isinstance(external_loads, (str, Path)) and Path(external_loads).suffix.lower() == ".c3d":
            from .c3d_tool import c3d_external_loads
            note_input(external_loads)
            external_loads = c3d_external_loads(external_loads, bodies=bodies, rotation=rotation,
                                                force_location=force_location)
        if body_forces and not isinstance(model, Model):
            model = read_osim(model)
        run = _run_id(model, motion, external_loads, lowpass_hz, time_range, forces_to_exclude,
                      in_degrees, output)
        if body_forces:
            joints = joints_to_report(model, list(body_forces), getattr(model, "source", None), "--body-forces")
            out = Path(body_forces_output) if body_forces_output else (
                (Path(output).parent if output is not None else Path.cwd()) / DEFAULT_BODY_FORCES_OUTPUT)
            if output is not None and out.absolute() == Path(output).absolute():
                raise OptionError(f"the body-forces file {out} is the generalized-forces file")
            check_output(out)
            run.body_forces = joint_body_forces(model, run.result, joints)
            run.body_forces_output = out.absolute()
    run.inputs = [p for p, _ in inputs]
    return run


def _run_id(model, motion, external_loads, lowpass_hz, time_range, forces_to_exclude, in_degrees,
            output) -> InverseDynamicsRun:
    time_range = check_time_range(time_range)
    lowpass_hz = check_lowpass(lowpass_hz)
    model = model if isinstance(model, Model) else read_osim(model)
    motion = motion if hasattr(motion, "labels") else read_sto(motion)
    ext = loads_table = None
    if isinstance(external_loads, tuple):           # (ExternalLoads, Table) read from a C3D
        ext, loads_table = external_loads
    elif external_loads is not None:
        ext = external_loads if hasattr(external_loads, "forces") else read_external_loads(external_loads)
        loads_table = ext.load_table()
    for x in (model, motion, ext, loads_table):
        note_input(getattr(x, "source", None) or getattr(x, "path", None))
    if output is not None:
        check_output(output)            # before computing: an output that is an input is refused
    res = run_inverse_dynamics(model, motion, external_loads=ext, loads_table=loads_table,
                               lowpass_hz=lowpass_hz, time_range=time_range, in_degrees=in_degrees,
                               forces_to_exclude=(forces_to_exclude,) if isinstance(forces_to_exclude, str)
                               else tuple(forces_to_exclude))
    return InverseDynamicsRun(res, None if output is None else Path(output))


def run_id_from_setup(path, *, placeholders=None, search_dirs=None, output=None) -> InverseDynamicsRun:
    """Run an OpenSim ``InverseDynamicsTool`` setup file.

    Reads ``model_file``, ``coordinates_file``, ``external_loads_file`` (resolved against the
    setup's folder, then by file name in ``search_dirs``: :mod:`arthron.tools.setup_files`),
    ``lowpass_cutoff_frequency_for_coordinates``, ``time_range``, ``forces_to_exclude`` and the
    pre-4.0 ``coordinates_in_degrees``. The result goes to
    ``results_directory / output_gen_force_file`` (default ``inverse_dynamics.sto``) unless
    ``output`` is given. ``joints_to_report_body_forces`` (joint names, case-sensitive, or the
    keyword ``All``, any case: every joint in JointSet order; names before ``All`` are kept and
    those after it ignored, as OpenSim's ``getJointsByName``) adds the equivalent body forces at
    those joints (:func:`arthron.solvers.joint_body_forces.joint_body_forces`) written to
    ``results_directory / output_body_forces_file`` (default ``body_forces_at_joints.sto``; a
    file name: a folder part is ignored with a warning and ``.sto`` added when there is no
    extension, as OpenSim's ``Storage::printResult``). OpenSim 4.6 writes that file after
    restoring the working directory, so it resolves a *relative* ``results_directory`` against
    the process's folder for this file only; arthron writes both files in the same results
    directory (relative to the setup's folder); with ``output`` it goes beside ``output``.

    Returns
    -------
    InverseDynamicsRun (call ``.write()``).

    Raises
    ------
    DataFileError (not an InverseDynamicsTool, missing model or coordinates file, bad
    numbers; a joint in ``joints_to_report_body_forces`` the model lacks, where OpenSim only
    warns and skips it; a body-forces file that is the generalized-forces file or an input),
    the solver's errors.
    """
    with input_guard() as inputs:
        run = _run_id_from_setup(path, placeholders, search_dirs, output)
    run.inputs = [p for p, _ in inputs]
    return run


def _run_id_from_setup(path, placeholders, search_dirs, output) -> InverseDynamicsRun:
    try:
        st = read_id_setup(path, placeholders)
    except DataFileError:        # another tool's setup: say which command runs it, or that none does
        check_tool(read_tool_setup(path, placeholders), "InverseDynamicsTool")
        raise
    ts = st.setup
    model_file = require_setup_file(ts, "model_file", search_dirs, value=str(st.model_file or ""))
    motion_file = require_setup_file(ts, "coordinates_file", search_dirs,
                                     value=str(st.coordinates_file or ""))
    ext_file = find_setup_file(ts, None if st.external_loads_file is None else str(st.external_loads_file),
                               search_dirs)
    model = model_file
    joints, body_out = [], None
    if st.joints_to_report_body_forces:
        model = read_osim(model_file)
        note_input(model_file)
        joints = joints_to_report(model, st.joints_to_report_body_forces, st.path, _element_line(ts))
        body_out = _body_forces_file(ts, st, output)
        check_output(body_out)          # before computing: an output that is an input is refused
    run = run_id(model, motion_file, external_loads=ext_file,
                 lowpass_hz=st.lowpass_cutoff_frequency_for_coordinates, time_range=st.time_range,
                 forces_to_exclude=st.forces_to_exclude, in_degrees=st.coordinates_in_degrees)
    if output is not None:
        run.output = Path(output)
    else:
        run.output = st.output_gen_force_file or (results_directory(ts, st.results_directory, create=False)
                                                  / DEFAULT_OUTPUT)
    if joints:
        if Path(run.output).absolute() == body_out:
            raise DataFileError(f"output_body_forces_file is the generalized-forces file {run.output}",
                                st.path, "<output_body_forces_file>")
        run.body_forces = joint_body_forces(model, run.result, joints)
        run.body_forces_output = body_out
    run.setup = st
    return run


def joints_to_report(model: Model, names, source=None, where=None) -> list:
    """OpenSim's ``InverseDynamicsTool::getJointsByName``: joint names (case-sensitive) in the
    listed order; the keyword ``All`` (any case) appends every joint in JointSet order and ends
    the list.

    Raises DataFileError naming ``source`` and ``where`` for a joint the model lacks (OpenSim
    warns and skips it)."""
    out = []
    for n in names:
        if n.upper() == "ALL":
            out += list(model.joints)
            break
        if n not in model.joints:
            raise DataFileError(f"joints_to_report_body_forces names joint '{n}', which model "
                                f"'{model.name}' lacks (joints: {', '.join(model.joints)})",
                                source, where)
        out.append(n)
    return out


def _element_line(ts) -> str:
    el = ts.element.find("joints_to_report_body_forces") if ts.element is not None else None
    line = f" line {el.sourceline}" if el is not None and el.sourceline else ""
    return f"<joints_to_report_body_forces>{line}"


def _body_forces_file(ts, st, output=None) -> Path:
    """``results_directory / output_body_forces_file`` by OpenSim's ``Storage::printResult``
    (beside ``output`` when the generalized forces are sent elsewhere)."""
    raw = (ts.properties.get("output_body_forces_file") or "").strip()
    name = DEFAULT_BODY_FORCES_OUTPUT if not raw or raw == "Unassigned" else raw.replace("\\", "/")
    p = Path(name)
    if p.name != name:
        warnings.warn(f"{st.path}: output_body_forces_file '{raw}' names a folder; as OpenSim, only "
                      f"the file name '{p.name}' is used, in the results directory", ArthronWarning,
                      stacklevel=3)
    fname = p.name if p.suffix else p.name + ".sto"
    folder = (Path(output).absolute().parent if output is not None
              else results_directory(ts, st.results_directory, create=False))
    return Path(folder / fname).absolute()
