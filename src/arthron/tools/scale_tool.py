"""OpenSim's ScaleTool as a workflow: setup file, ModelScaler, MarkerPlacer, outputs.

The scaling *rules* (scale factors from measurements, how every model quantity scales,
anthropometric scaling) live in :mod:`arthron.solvers.scaling` and the MarkerPlacer's static
pose and marker moves in :mod:`arthron.solvers.marker_placer`; this module reads a ScaleTool
setup, resolves its files, calls those solvers and writes the scaled model,
``*_scaleSet_applied.xml``, the placed model, marker set and static pose, as OpenSim 4.6 does.

Source: OpenSim 4.6 ``ScaleTool``, ``GenericModelMaker``, ``ModelScaler``, ``MarkerPlacer``,
re-implemented from their documented behaviour.
"""
from __future__ import annotations

import math

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from lxml import etree

from ..errors import DataFileError, ModelFileError
from ..io.files import atomic_write, check_output, input_guard, make_output_folder, output_group
from ..io.osim import read_osim, write_osims
from ..io.setup import parse_xml, read_tool_setup
from ..io.sto import read_sto, write_sto
from ..io.trc import read_trc
from ..models.model import GROUND, Marker, Model
from ..multibody.kinematics import compile_model
from ..solvers.marker_placer import place_markers
from ..solvers.model_scaling import default_path_lengths
from ..solvers.scaling import (Measurement, ScaleEntry, compute_scale_set, frame_scale_entries,
                              scale_model)
from ..tables import Table
from .ik_tool import read_ik_tasks
from .setup_files import check_tool, find_setup_file

__all__ = ["ScaleSetup", "ScaleResult", "place_markers", "read_scale_setup", "scale_from_setup",
           "write_scale_set", "read_marker_set", "write_marker_set"]


def _fmt6(x: float) -> str:
    """A double as C++ ``ostream`` prints it by default (6 significant digits)."""
    s = f"{float(x):g}"
    return s


def write_scale_set(path, entries: list[ScaleEntry]) -> Path:
    """Write ``*_scaleSet_applied.xml`` as OpenSim 4.6 does (factors with 6 significant digits)."""
    lines = ['<?xml version="1.0" encoding="UTF-8" ?>', '<OpenSimDocument Version="40600">',
             '\t<ScaleSet name="ScaleSet">', "\t\t<objects>"]
    for e in entries:
        lines += ["\t\t\t<Scale>",
                  "\t\t\t\t<scales> " + " ".join(_fmt6(v) for v in e.factors) + "</scales>",
                  f"\t\t\t\t<segment>{e.segment}</segment>",
                  f"\t\t\t\t<apply>{'true' if e.apply else 'false'}</apply>",
                  "\t\t\t</Scale>"]
    lines += ["\t\t</objects>", "\t\t<groups />", "\t</ScaleSet>", "</OpenSimDocument>"]
    path = Path(path)
    make_output_folder(path)
    atomic_write(path, "\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------------------- setup files
def read_marker_set(path, model: Model) -> dict:
    """Markers of a ``<MarkerSet>`` file (2.x ``<body>`` or 4.x ``socket_parent_frame``).

    Raises
    ------
    DataFileError on a marker naming a body/frame the model lacks or a bad location.
    """
    root = parse_xml(path)
    ms = root if root.tag == "MarkerSet" else root.find(".//MarkerSet")
    if ms is None:
        raise DataFileError("no <MarkerSet> element", path)
    out = {}
    objs = ms.find("objects")
    for e in (list(objs) if objs is not None else []):
        if not isinstance(e.tag, str) or e.tag != "Marker":
            continue
        name = e.get("name", "")
        sp = (e.findtext("socket_parent_frame") or "").strip()
        if sp:
            frame = sp if sp.startswith("/") else f"/{sp}"
            if frame.startswith("/") and frame[1:] in model.bodies:
                frame = f"/bodyset/{frame[1:]}"
        else:
            bn = (e.findtext("body") or "ground").strip()
            frame = GROUND if bn == "ground" else f"/bodyset/{bn}"
        try:
            model.frame_in_base(frame)
        except ModelFileError:
            raise DataFileError(f"marker '{name}' is on '{frame}', which model '{model.name}' "
                                "lacks", path, f"line {e.sourceline}") from None
        try:
            loc = np.array([float(v) for v in (e.findtext("location") or "").split()], float)
        except ValueError:
            loc = np.zeros(0)
        if loc.shape != (3,):
            raise DataFileError(f"marker '{name}': location needs 3 numbers", path,
                                f"line {e.sourceline}")
        fixed = (e.findtext("fixed") or "false").strip().lower() == "true"
        out[name] = Marker(name=name, parent_frame=frame, location=loc, fixed=fixed)
    return out


def write_marker_set(path, model: Model, name: str = "markerset") -> Path:
    """Write the markers of ``model`` as an OpenSim 4.x ``<MarkerSet>`` document (what
    MarkerPlacer's ``output_marker_file`` holds: ``Model::writeMarkerFile``), readable by
    :func:`read_marker_set` and by OpenSim's ``MarkerSet(file)``."""
    doc = etree.Element("OpenSimDocument", Version="40000")
    ms = etree.SubElement(doc, "MarkerSet", name=name)
    objs = etree.SubElement(ms, "objects")
    for mk in model.markers.values():
        me = etree.SubElement(objs, "Marker", name=mk.name)
        etree.SubElement(me, "socket_parent_frame").text = mk.parent_frame
        etree.SubElement(me, "location").text = " ".join(f"{float(v):.17g}" for v in mk.location)
        etree.SubElement(me, "fixed").text = str(bool(mk.fixed)).lower()
    etree.SubElement(ms, "groups")
    path = Path(path)
    make_output_folder(path)
    atomic_write(path, etree.tostring(doc, pretty_print=True, xml_declaration=True,
                                      encoding="UTF-8"))
    return path


@dataclass
class ScaleSetup:
    """A ScaleTool setup, read (see :func:`read_scale_setup`)."""

    path: Path
    name: str
    mass: float | None
    model_file: Path | None
    marker_set_file: Path | None
    scaler_apply: bool = True
    scaling_order: tuple = ("measurements",)
    measurements: list = field(default_factory=list)
    manual: list = field(default_factory=list)
    scaler_marker_file: Path | None = None
    scaler_time_range: tuple | None = None
    preserve_mass_distribution: bool = False
    scaled_model_file: Path | None = None
    scale_file: Path | None = None
    placer_apply: bool = True
    ik_task_set: object = None
    placer_marker_file: Path | None = None
    placer_coordinate_file: Path | None = None
    placer_time_range: tuple | None = None
    placer_motion_file: Path | None = None
    placer_model_file: Path | None = None
    placer_marker_set_file: Path | None = None
    max_marker_movement: float = -1.0


def _txt(el, tag):
    if el is None:
        return None
    v = el.findtext(tag)
    return None if v is None else v.strip()


def _boolean(v, default):
    if v is None or v == "":
        return default
    return v.strip().lower() in ("true", "1", "yes")


def _floats(v, n, path, what):
    try:
        out = tuple(float(x) for x in v.split())
    except (ValueError, AttributeError):
        raise DataFileError(f"{what}: expected {n} numbers, got {v!r}", path) from None
    if len(out) != n or not all(math.isfinite(x) for x in out):
        raise DataFileError(f"{what}: expected {n} finite number{'s' if n > 1 else ''}, got "
                            f"{v!r}", path)
    return out


def read_scale_setup(path, *, placeholders=None, search_dirs=None,
                     model_given: bool = False) -> ScaleSetup:
    """Read a ScaleTool setup (2.x–4.x layouts). File names are resolved against the setup's
    folder, then by file name in ``search_dirs``. With ``model_given`` GenericModelMaker's
    ``model_file`` is not looked up (the caller supplies the model).

    Raises
    ------
    DataFileError on a malformed setup (not a ScaleTool, bad numbers, missing files).
    """
    st = read_tool_setup(path, placeholders)
    check_tool(st, "ScaleTool")
    el = st.element

    def f(name, key=None):
        if name is None or not name.strip() or name.strip() == "Unassigned":
            return None
        return find_setup_file(st, name, search_dirs, key=key)

    def out_file(name):
        if name is None or not name.strip() or name.strip() == "Unassigned":
            return None
        return st.resolve(name)

    mass = st.get("mass")
    s = ScaleSetup(path=st.path, name=st.name, mass=_floats(mass, 1, st.path, "<mass>")[0] if mass else None,
                   model_file=None, marker_set_file=None)
    gm = el.find("GenericModelMaker")
    s.model_file = None if model_given else f(_txt(gm, "model_file"), "GenericModelMaker/model_file")
    s.marker_set_file = f(_txt(gm, "marker_set_file"), "GenericModelMaker/marker_set_file")
    ms = el.find("ModelScaler")
    if ms is not None:
        s.scaler_apply = _boolean(_txt(ms, "apply"), True)
        so = _txt(ms, "scaling_order")
        s.scaling_order = tuple(so.split()) if so else ("measurements",)
        mset = ms.find("MeasurementSet")
        if mset is not None and mset.find("objects") is not None:
            for me in mset.find("objects"):
                if not isinstance(me.tag, str) or me.tag != "Measurement":
                    continue
                pairs, bodies = [], []
                for mp in me.iter("MarkerPair"):
                    names = (mp.findtext("markers") or "").split()
                    if len(names) != 2:
                        raise DataFileError(f"measurement '{me.get('name')}': a MarkerPair needs "
                                            "2 marker names", st.path, f"line {mp.sourceline}")
                    pairs.append(tuple(names))
                if not pairs and _boolean(_txt(me, "apply"), True):
                    raise DataFileError(f"measurement '{me.get('name')}' has no MarkerPair (a "
                                        "measurement's factor is the mean of its marker-pair "
                                        "distance ratios)", st.path, f"line {me.sourceline}")
                for bs in me.iter("BodyScale"):
                    axes = "".join((bs.findtext("axes") or "X Y Z").split())
                    bodies.append((bs.get("name", ""), axes))
                s.measurements.append(Measurement(me.get("name", ""), pairs, bodies,
                                                  _boolean(_txt(me, "apply"), True)))
        sset = ms.find("ScaleSet")
        if sset is not None and sset.find("objects") is not None:
            for se in sset.find("objects"):
                if not isinstance(se.tag, str) or se.tag != "Scale":
                    continue
                seg = (se.findtext("segment") or "").strip()
                fac = _floats(se.findtext("scales"), 3, st.path, f"Scale '{seg}' scales")
                s.manual.append(ScaleEntry(seg, np.array(fac), _boolean(_txt(se, "apply"), True)))
        s.scaler_marker_file = f(_txt(ms, "marker_file"), "ModelScaler/marker_file")
        tr = _txt(ms, "time_range")
        s.scaler_time_range = _floats(tr, 2, st.path, "ModelScaler time_range") if tr else None
        s.preserve_mass_distribution = _boolean(_txt(ms, "preserve_mass_distribution"), False)
        s.scaled_model_file = out_file(_txt(ms, "output_model_file"))
        s.scale_file = out_file(_txt(ms, "output_scale_file"))
    else:
        s.scaler_apply = False
    mp = el.find("MarkerPlacer")
    if mp is not None:
        s.placer_apply = _boolean(_txt(mp, "apply"), True)
        s.ik_task_set = mp.find("IKTaskSet")
        s.placer_marker_file = f(_txt(mp, "marker_file"), "MarkerPlacer/marker_file")
        s.placer_coordinate_file = f(_txt(mp, "coordinate_file"), "MarkerPlacer/coordinate_file")
        tr = _txt(mp, "time_range")
        s.placer_time_range = _floats(tr, 2, st.path, "MarkerPlacer time_range") if tr else None
        s.placer_motion_file = out_file(_txt(mp, "output_motion_file"))
        s.placer_model_file = out_file(_txt(mp, "output_model_file"))
        s.placer_marker_set_file = out_file(_txt(mp, "output_marker_file"))
        mm = _txt(mp, "max_marker_movement")
        s.max_marker_movement = _floats(mm, 1, st.path, "<max_marker_movement>")[0] if mm else -1.0
    else:
        s.placer_apply = False
    return s


@dataclass
class ScaleResult:
    """What :func:`scale_from_setup` produced.

    Attributes
    ----------
    scale_set : list of ScaleEntry (all frames, OpenSim order)
    measured : dict measurement name -> factor
    scaled_model : Model after ModelScaler (before marker placement)
    model : Model after MarkerPlacer (= scaled_model when placement is off); it has its own
        markers (and joints when a coordinate file set default values) and shares the other
        components with ``scaled_model`` (``.copy()`` one of them before changing it)
    static_q : (nq,) static pose (rad/m) or None; static_errors : dict marker -> m
    """

    setup: ScaleSetup
    scale_set: list
    measured: dict
    scaled_model: Model
    model: Model
    static_q: np.ndarray | None = None
    static_errors: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list, repr=False)

    def write(self, folder=None) -> list:
        """Write the outputs the setup names (scaled model, scale set, placed model, placed
        marker set, static pose motion), into ``folder`` if given (file names kept), else where the setup says.
        Returns the paths written."""
        with input_guard(self.inputs), output_group():
            return self._write(folder)

    def nothing_written_reason(self) -> str:
        """Why :meth:`write` writes nothing for this setup (OpenSim 4.6's ScaleTool then
        writes nothing either): the message of ``arthron scale --setup``."""
        s = self.setup
        scaler = ("the ModelScaler is off (<apply>false</apply>)" if not s.scaler_apply else
                  "the ModelScaler's <output_model_file> and <output_scale_file> are Unassigned")
        placer = ("the MarkerPlacer is off (<apply>false</apply>)" if not s.placer_apply else
                  "the MarkerPlacer names no output file")
        return (f"nothing to write: {scaler} and {placer}; name an <output_model_file> of the "
                "ModelScaler (or turn the MarkerPlacer on)")

    def _write(self, folder):
        s = self.setup
        out = []

        # as OpenSim 4.6's ScaleTool: the ModelScaler and the MarkerPlacer write their files
        # only when they ran, and a placed model named as the scaled one overwrites it
        # (Pose2Sim's setups name one file for both)
        placed_run = self.static_q is not None

        def where(p, placer=False):
            if p is None or (placer and not placed_run):
                return None
            return Path(folder) / Path(p).name if folder is not None else Path(p)
        p_scaled = where(s.scaled_model_file) if s.scaler_apply else None
        p_placed = where(s.placer_model_file, True)
        if p_scaled is not None and p_placed is not None and p_scaled.resolve() == p_placed.resolve():
            p_scaled = None
        p_scale = where(s.scale_file) if s.scaler_apply else None     # ModelScaler::processModel writes it
        p_markers, p_motion = where(s.placer_marker_set_file, True), where(s.placer_motion_file, True)
        targets = [p for p in (p_scaled, p_scale, p_placed, p_markers, p_motion) if p is not None]
        for p in targets:                       # every output checked before anything is created
            check_output(p)
        for p in targets:
            make_output_folder(p)
        models = [(p, m) for p, m in ((p_scaled, self.scaled_model), (p_placed, self.model))
                  if p is not None]
        write_osims(models)     # the placed model's shared components written once
        if p_scaled is not None:
            out.append(p_scaled)
        if p_scale is not None:
            out.append(write_scale_set(p_scale, self.scale_set))
        if p_placed is not None:
            out.append(p_placed)
        if p_markers is not None:
            out.append(write_marker_set(p_markers, self.model))
        if p_motion is not None:
            coords = list(self.model.coordinates.values())
            q = np.array(self.static_q, float).copy()
            for i, c in enumerate(coords):
                if c.motion_type == "rotational":
                    q[i] = np.rad2deg(q[i])
            t = float(s.placer_time_range[0]) if s.placer_time_range else 0.0
            write_sto(p_motion, Table(name="static pose", time=np.array([t]),
                                      labels=[c.name for c in coords], data=q[None], in_degrees=True))
            out.append(p_motion)
        return out


def scale_from_setup(path, *, placeholders=None, search_dirs=None, model=None,
                     mass=None) -> ScaleResult:
    """Run a ScaleTool setup (GenericModelMaker, ModelScaler, MarkerPlacer) without writing;
    call ``.write()`` on the result. ``model`` (an ``.osim`` path) replaces GenericModelMaker's
    ``model_file`` and ``mass`` (kg) the setup's ``<mass>`` (what ``arthron batch`` does for
    a subject that names them).

    Raises
    ------
    DataFileError / ModelFileError on bad input (missing files, a measurement marker missing
    from the static trial or the model, a manual scale naming an unknown segment, ...).
    """
    with input_guard() as inputs:
        res = _scale_from_setup(path, placeholders, search_dirs, model, mass)
    res.inputs = [p for p, _ in inputs]
    return res


def _scale_from_setup(path, placeholders, search_dirs, model_file=None, mass=None) -> ScaleResult:
    s = read_scale_setup(path, placeholders=placeholders, search_dirs=search_dirs,
                         model_given=model_file is not None)
    if model_file is not None:
        s.model_file = Path(model_file)
    if mass is not None:
        s.mass = float(mass)
    if s.model_file is None:
        raise DataFileError("GenericModelMaker names no model_file", s.path)
    model = read_osim(s.model_file)
    if s.marker_set_file is not None:
        for n, mk in read_marker_set(s.marker_set_file, model).items():
            if n in model.markers:
                del model.markers[n]
            model.markers[n] = mk
    entries = frame_scale_entries(model)
    measured = {}
    scaled = model
    trials = {}

    def trial(p):
        if p not in trials:
            trials[p] = read_trc(p)
        return trials[p]
    if s.scaler_apply:
        st = trial(s.scaler_marker_file) if s.scaler_marker_file is not None else None
        if st is not None and s.scaler_time_range is None:
            raise DataFileError("ModelScaler time_range is unspecified", s.path)
        tree = compile_model(model)     # one compilation of the generic model for both uses
        entries, measured = compute_scale_set(
            model, scaling_order=s.scaling_order, measurements=s.measurements, manual=s.manual,
            static_trial=st, time_range=s.scaler_time_range, source=s.path, tree=tree)
        name = model.name
        # the generic model was read for this run only: scaled in place (no copy)
        scaled = scale_model(model, entries, mass=s.mass,
                             preserve_mass_distribution=s.preserve_mass_distribution,
                             path_lengths_before=default_path_lengths(model, tree=tree), in_place=True)
        scaled.name = name
    placed, q, errs = scaled, None, {}
    if s.placer_apply and s.placer_marker_file is not None:
        static = trial(s.placer_marker_file)
        coord_values, coord_table = None, None
        if s.placer_coordinate_file is not None:
            tab = read_sto(s.placer_coordinate_file)
            rot = [c.name for c in scaled.coordinates.values()
                   if c.motion_type == "rotational" and c.name in tab.labels]
            coord_table = tab.to_radians(rot)
            t0 = s.placer_time_range[0] if s.placer_time_range else coord_table.time[0]
            coord_values = {n: float(np.interp(t0, coord_table.time, coord_table.column(n)))
                            for n in coord_table.labels if n in scaled.coordinates}
        tasks = read_ik_tasks(s.ik_task_set, scaled, coord_table, s.path)
        unit = {"mm": 1e-3, "cm": 1e-2, "m": 1.0}.get(str(static.units).strip().lower(), 1.0)
        placed, q, errs = place_markers(scaled, static, tasks, s.placer_time_range,
                                        coordinate_values=coord_values,
                                        max_marker_movement=s.max_marker_movement * unit,
                                        share=True)
    return ScaleResult(setup=s, scale_set=entries, measured=measured, scaled_model=scaled,
                       model=placed, static_q=q, static_errors=errs)
