"""Read OpenSim tool setup files and ExternalLoads files into plain dataclasses.

Covers the formats found in OpenSim 2.x–4.x files: ``<OpenSimDocument Version="20302">``
(``<isDisabled>``, ``<datafile>``, ``<input_directory>``), ``30000`` and ``4xxxx``; files whose
root is the tool element itself are accepted too. XML is parsed with lxml; element names such as ``HuntCrossleyForce::ContactParametersSet``
(valid XML 1.0 names, but not namespace-valid, so lxml 6 / libxml2 2.14 rejects them in strict
mode) are accepted by :func:`parse_xml`, which falls back to recovery mode only when every
error is of that kind.

File names are resolved to absolute paths against the folder of the XML file, as OpenSim's
ScaleTool and AnalyzeTool do. (OpenSim 4.6's InverseDynamicsTool resolves them against the
current working directory instead and fails when run from elsewhere; arthron always uses the
setup's folder.)
"""
from __future__ import annotations

import math
import warnings
from dataclasses import field
from pathlib import Path

import numpy as np
from lxml import etree

from ..runtime import dataclass  # dataclasses.dataclass with shared __repr__/__eq__
from .files import note_input
from ..errors import ArthronWarning, DataFileError

__all__ = [
    "ToolSetup", "InverseDynamicsSetup", "ExternalForce", "ExternalLoads", "ResolvedExternalForce",
    "read_tool_setup", "read_id_setup", "read_external_loads", "parse_xml",
]


# --------------------------------------------------------------------------------------
# XML helpers
# --------------------------------------------------------------------------------------
_XINCLUDE = "{http://www.w3.org/2001/XInclude}"


def _inert(root, path):
    """Keep a parsed document free of anything that reaches outside it: an entity reference
    (internal or external entities of a DTD; lxml leaves them unexpanded) is a DataFileError
    naming its line; ``xi:include`` elements are left out with a warning (they are never
    processed, as in OpenSim, and are not copied into files arthron writes). External DTDs are
    never loaded and the network is never used (parser options)."""
    xi = list(root.iter(etree.Entity, _XINCLUDE + "*"))     # one C-level scan for both
    for e in xi:
        if not isinstance(e.tag, str):          # (an entity reference)
            raise DataFileError(f"entity reference {e.text} is not allowed (entities are not expanded, "
                                "as in OpenSim)", path, f"line {e.sourceline}")
    if xi:                                      # (no entity: elements of the XInclude namespace)
        for e in xi:
            if e.getparent() is not None:
                e.getparent().remove(e)
        lines = ", ".join(str(e.sourceline) for e in xi[:10])
        warnings.warn(f"{path}: xi:include element(s) at line(s) {lines} ignored (not processed, as in "
                      "OpenSim, and not copied)", ArthronWarning, stacklevel=3)
        if root.tag.startswith(_XINCLUDE):
            raise DataFileError("the document is an xi:include element", path)
    return root


def parse_xml(path, placeholders: dict | None = None):
    """Parse an XML file with lxml and return its root element.

    ``placeholders`` maps literal text to its replacement, applied to the raw text before
    parsing (the setups in ``opensim-reference/*/setups`` have their absolute paths replaced
    by ``<workdir>`` and ``<opensim-models>``, which makes them malformed XML until
    substituted). Raises :class:`DataFileError` (with ``line N``) on a missing file or
    malformed XML.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataFileError("file does not exist", path) from None
    except OSError as e:
        raise DataFileError(f"cannot read file: {e.strerror or e}", path) from None
    note_input(path)
    if placeholders:
        for k, v in placeholders.items():
            raw = raw.replace(str(k).encode("utf-8"), str(v).encode("utf-8"))
    opts = dict(remove_blank_text=False, resolve_entities=False, no_network=True, huge_tree=True,
                load_dtd=False, dtd_validation=False, attribute_defaults=False)
    try:
        return _inert(etree.fromstring(raw, parser=etree.XMLParser(**opts), base_url=str(path)), path)
    except etree.XMLSyntaxError as e:
        first = e
    # Element names such as "HuntCrossleyForce::ContactParametersSet" are well-formed XML 1.0
    # names but not namespace-well-formed QNames; libxml2 (lxml 6) rejects them with a NAMESPACE
    # error. Re-parse in recovery mode and accept the result only if every error it logs is
    # such a namespace error.
    parser = etree.XMLParser(recover=True, **opts)
    root = None
    try:
        root = etree.fromstring(raw, parser=parser, base_url=str(path))
    except etree.XMLSyntaxError:
        pass
    errors = list(parser.error_log)
    # A comment holding '--' (ue_RL.osim of osim-rl comments out a block with an unclosed
    # '<!--' before the next comment) is not well-formed XML 1.0, but OpenSim's parser reads it
    # and so does libxml2's recovery: the comment ends at the first '-->', as in OpenSim.
    hyphens = [x for x in errors if x.type_name == "ERR_HYPHEN_IN_COMMENT"]
    real = [x for x in errors if x.domain_name != "NAMESPACE" and x.type_name != "ERR_HYPHEN_IN_COMMENT"]
    if root is not None and errors and not real:
        if hyphens:
            lines = ", ".join(str(x.line) for x in hyphens)
            warnings.warn(f"{path}: comment(s) holding '--' at line(s) {lines} (not well-formed XML); "
                          "read as OpenSim does, each comment ending at its first '-->'",
                          ArthronWarning, stacklevel=3)
        return _inert(root, path)
    if real:
        x = real[0]
        raise DataFileError(f"malformed XML: {x.message.strip()}", path, f"line {x.line}") from None
    line = getattr(first, "lineno", None)
    msg = getattr(first, "msg", None) or str(first)
    raise DataFileError(f"malformed XML: {msg}", path, f"line {line}" if line else None) from None


def _children(el):
    return [c for c in el if isinstance(c.tag, str)]


def _child(el, *tags):
    for c in _children(el):
        if c.tag in tags:
            return c
    return None


def _text(el) -> str | None:
    if el is None:
        return None
    return (el.text or "").strip()


def _where(el) -> str:
    name = el.get("name")
    s = f"<{el.tag} name='{name}'>" if name is not None else f"<{el.tag}>"
    return f"{s} (line {el.sourceline})" if el.sourceline else s


def _document(root, path):
    """Return (version or None, the object element under OpenSimDocument)."""
    if root.tag == "OpenSimDocument":
        v = root.get("Version")
        try:
            version = int(v) if v is not None else None
        except ValueError:
            raise DataFileError(f"OpenSimDocument Version {v!r} is not an integer", path,
                                f"line {root.sourceline}") from None
        kids = _children(root)
        if not kids:
            raise DataFileError("OpenSimDocument is empty", path, f"line {root.sourceline}")
        return version, kids[0]
    return None, root


def _float(text: str, path, el) -> float:
    t = text.strip()
    low = t.lower()
    if low in ("inf", "infinity", "+inf", "+infinity"):
        return math.inf
    if low in ("-inf", "-infinity"):
        return -math.inf
    try:
        x = float(t)
    except ValueError:
        raise DataFileError(f"{t!r} is not a number", path, _where(el)) from None
    if x != x:
        raise DataFileError(f"{t!r} is not a usable number", path, _where(el))
    return x


def _bool(text: str, path, el) -> bool:
    t = text.strip().lower()
    if t in ("true", "1", "yes"):
        return True
    if t in ("false", "0", "no"):
        return False
    raise DataFileError(f"{text!r} is not a boolean (true/false)", path, _where(el))


def _resolve(folder: Path, name: str | None) -> Path | None:
    if name is None:
        return None
    name = name.strip()
    if not name or name == "Unassigned":
        return None
    p = Path(name.replace("\\", "/")) if "\\" in name and "/" not in name else Path(name)
    p = p.expanduser()
    if not p.is_absolute():
        p = folder / p
    return Path(p.absolute())


# --------------------------------------------------------------------------------------
# generic tool setup
# --------------------------------------------------------------------------------------
@dataclass
class ToolSetup:
    """Any OpenSim tool setup (``InverseKinematicsTool``, ``ScaleTool``, ``AnalyzeTool`` ...).

    Attributes
    ----------
    tool : str
        Tag of the tool element, e.g. ``"InverseDynamicsTool"``.
    name : str
        Its ``name`` attribute (``""`` if absent).
    version : int or None
        ``OpenSimDocument`` ``Version`` (20302, 30000, 40000 ...); None without the wrapper.
    properties : dict of str -> str
        The tool's simple properties: each direct child element that has no element children,
        mapped to its stripped text (``""`` for ``<x/>``). First occurrence wins.
    path : Path
        Absolute path of the setup file.
    element : lxml element
        The tool element, for nested content (IK task sets, analyses, scale sets ...).
    """

    tool: str
    name: str
    version: int | None
    properties: dict[str, str]
    path: Path
    element: object = field(repr=False, default=None)

    @property
    def folder(self) -> Path:
        return self.path.parent

    def resolve(self, name: str | None) -> Path | None:
        """Absolute path of a file name against the setup's folder (None for empty/Unassigned)."""
        return _resolve(self.folder, name)

    def get(self, key: str, default=None):
        return self.properties.get(key, default)


def read_tool_setup(path, placeholders: dict | None = None) -> ToolSetup:
    """Read any OpenSim tool setup file.

    Parameters
    ----------
    path : str or os.PathLike
    placeholders : dict, optional
        Literal text substitutions applied before parsing (see :func:`parse_xml`).

    Raises
    ------
    DataFileError
        Missing file, malformed XML (line N), empty ``OpenSimDocument``.
    """
    path = Path(path).absolute()
    root = parse_xml(path, placeholders)
    version, el = _document(root, path)
    props: dict[str, str] = {}
    for c in _children(el):
        if not _children(c) and c.tag not in props:
            props[c.tag] = _text(c)
    return ToolSetup(tool=el.tag, name=el.get("name", ""), version=version, properties=props,
                     path=path, element=el)


# --------------------------------------------------------------------------------------
# inverse dynamics
# --------------------------------------------------------------------------------------
@dataclass
class InverseDynamicsSetup:
    """An ``InverseDynamicsTool`` setup.

    Attributes
    ----------
    name : str
        Tool name (OpenSim uses it as a default output prefix).
    model_file, coordinates_file, external_loads_file : Path or None
        Absolute paths (resolved against the setup's folder); None when empty.
    lowpass_cutoff_frequency_for_coordinates : float
        Hz; ``-1`` (any negative value) means no filtering (OpenSim's default).
    time_range : tuple of float
        (start, end) in s; ``(-inf, inf)`` when absent (OpenSim's default).
    forces_to_exclude : list of str
        Force names or groups (``Muscles``, ``Actuators``, ``All`` ...).
    results_directory : Path
        Absolute; the setup's folder when empty.
    output_gen_force_file : Path or None
        Absolute: ``results_directory / <output_gen_force_file>`` (where OpenSim writes it).
    coordinates_in_degrees : bool or None
        The pre-4.0 ``<coordinates_in_degrees>`` tag if present (4.x ignores it and uses the
        motion file's ``inDegrees`` header).
    joints_to_report_body_forces : list of str
    output_body_forces_file : Path or None
        Under ``results_directory``.
    version : int or None
    path : Path
    other : dict of str -> str
        Remaining simple properties (e.g. ``input_directory``).
    setup : ToolSetup
        The generic setup it was read from (for :mod:`arthron.tools.setup_files`).
    """

    name: str
    model_file: Path | None
    coordinates_file: Path | None
    external_loads_file: Path | None
    lowpass_cutoff_frequency_for_coordinates: float
    time_range: tuple[float, float]
    forces_to_exclude: list[str]
    results_directory: Path
    output_gen_force_file: Path | None
    coordinates_in_degrees: bool | None = None
    joints_to_report_body_forces: list[str] = field(default_factory=list)
    output_body_forces_file: Path | None = None
    version: int | None = None
    path: Path | None = None
    other: dict[str, str] = field(default_factory=dict)
    setup: ToolSetup | None = field(default=None, repr=False)

    @property
    def filtered(self) -> bool:
        return self.lowpass_cutoff_frequency_for_coordinates > 0


_ID_KNOWN = {"results_directory", "model_file", "time_range", "forces_to_exclude", "external_loads_file",
             "coordinates_file", "lowpass_cutoff_frequency_for_coordinates", "output_gen_force_file",
             "joints_to_report_body_forces", "output_body_forces_file", "coordinates_in_degrees"}


def read_id_setup(path, placeholders: dict | None = None) -> InverseDynamicsSetup:
    """Read an ``InverseDynamicsTool`` setup file (formats 20302, 30000, 4xxxx).

    Raises
    ------
    DataFileError
        Missing file; malformed XML (line N); the document's tool is not an
        ``InverseDynamicsTool``; a non-numeric cutoff or time range (names the element);
        a time range without exactly two values.

    Source
    ------
    OpenSim ``InverseDynamicsTool`` / ``DynamicsTool`` properties; the path rule of
    ``ScaleTool``/``AnalyzeTool`` (relative names are relative to the setup file).
    """
    setup = read_tool_setup(path, placeholders)
    path = setup.path
    el = setup.element
    if setup.tool != "InverseDynamicsTool":
        raise DataFileError(f"expected an InverseDynamicsTool setup, found <{setup.tool}>", path,
                            f"line {el.sourceline}")
    p = setup.properties
    folder = setup.folder

    cutoff = -1.0
    c = _child(el, "lowpass_cutoff_frequency_for_coordinates")
    if c is not None and _text(c):
        cutoff = _float(_text(c), path, c)

    time_range = (-math.inf, math.inf)
    c = _child(el, "time_range")
    if c is not None and _text(c):
        parts = _text(c).split()
        if len(parts) != 2:
            raise DataFileError(f"time_range needs two numbers, got {_text(c)!r}", path, _where(c))
        time_range = (_float(parts[0], path, c), _float(parts[1], path, c))

    in_deg = None
    c = _child(el, "coordinates_in_degrees")
    if c is not None and _text(c):
        in_deg = _bool(_text(c), path, c)

    results_dir = _resolve(folder, p.get("results_directory")) or Path(folder.absolute())
    out_name = (p.get("output_gen_force_file") or "").strip()
    body_name = (p.get("output_body_forces_file") or "").strip()
    return InverseDynamicsSetup(
        name=setup.name,
        model_file=_resolve(folder, p.get("model_file")),
        coordinates_file=_resolve(folder, p.get("coordinates_file")),
        external_loads_file=_resolve(folder, p.get("external_loads_file")),
        lowpass_cutoff_frequency_for_coordinates=cutoff,
        time_range=time_range,
        forces_to_exclude=(p.get("forces_to_exclude") or "").split(),
        results_directory=results_dir,
        output_gen_force_file=_resolve(results_dir, out_name) if out_name else None,
        coordinates_in_degrees=in_deg,
        joints_to_report_body_forces=(p.get("joints_to_report_body_forces") or "").split(),
        output_body_forces_file=_resolve(results_dir, body_name) if body_name else None,
        version=setup.version,
        path=path,
        other={k: v for k, v in p.items() if k not in _ID_KNOWN},
        setup=setup,
    )


# --------------------------------------------------------------------------------------
# external loads
# --------------------------------------------------------------------------------------
def _is_assigned(identifier: str) -> bool:
    return bool(identifier.strip()) and identifier.strip() != "Unassigned"


@dataclass
class ExternalForce:
    """One ``ExternalForce`` of an ExternalLoads file.

    Identifiers are column-label prefixes in the data file: the columns whose labels start
    with ``force_identifier`` give the force (exactly 3 are needed), likewise point and torque.
    An empty or ``Unassigned`` identifier means "not given" (OpenSim's ``appliesForce``,
    ``specifiesPoint``, ``appliesTorque``).
    """

    name: str
    applied_to_body: str
    force_expressed_in_body: str = "ground"
    point_expressed_in_body: str = "ground"
    force_identifier: str = ""
    point_identifier: str = ""
    torque_identifier: str = ""
    data_source_name: str = ""
    enabled: bool = True

    @property
    def applies_force(self) -> bool:
        return _is_assigned(self.force_identifier)

    @property
    def specifies_point(self) -> bool:
        return _is_assigned(self.point_identifier)

    @property
    def applies_torque(self) -> bool:
        return _is_assigned(self.torque_identifier)


@dataclass
class ResolvedExternalForce:
    """An ExternalForce's data pulled from the table, at the table's rows.

    ``force``, ``point``, ``torque`` have shape (T, 3) (file units: N, m, N·m as in the data
    file; expressed in ``force_expressed_in_body`` / ``point_expressed_in_body``; the torque
    is expressed in ``force_expressed_in_body`` as in OpenSim), or None when the identifier is
    not given. With no point, OpenSim applies the force at the body origin.
    ``columns`` maps ``"force"``/``"point"``/``"torque"`` to the labels used, in file order.
    """

    name: str
    applied_to_body: str
    force_expressed_in_body: str
    point_expressed_in_body: str
    time: np.ndarray
    force: np.ndarray | None
    point: np.ndarray | None
    torque: np.ndarray | None
    columns: dict[str, list[str]]


@dataclass
class ExternalLoads:
    """An ExternalLoads file.

    Attributes
    ----------
    name : str
    forces : list of ExternalForce
        In file order, disabled ones included (``enabled`` False).
    datafile : Path or None
        The data (``.mot``/``.sto``) file, absolute (resolved against the XML's folder).
    version : int or None
    path : Path or None
    external_loads_model_kinematics_file : str or None
        Pre-4.0 option, ignored by OpenSim 4.x (kept for information, a warning is issued).
    lowpass_cutoff_frequency_for_load_kinematics : float or None
    """

    name: str
    forces: list[ExternalForce]
    datafile: Path | None
    version: int | None = None
    path: Path | None = None
    external_loads_model_kinematics_file: str | None = None
    lowpass_cutoff_frequency_for_load_kinematics: float | None = None

    def force(self, name: str) -> ExternalForce:
        for f in self.forces:
            if f.name == name:
                return f
        raise KeyError(f"no ExternalForce {name!r}")

    def load_table(self):
        """Read :attr:`datafile` with :func:`arthron.io.sto.read_sto`."""
        from arthron.io.sto import read_sto

        if self.datafile is None:
            raise DataFileError("ExternalLoads has no <datafile>", self.path)
        return read_sto(self.datafile)

    def resolve(self, table=None) -> dict[str, ResolvedExternalForce]:
        """Pull each enabled ExternalForce's force, point and torque columns out of ``table``.

        Parameters
        ----------
        table : arthron.io.sto.Table, optional
            The loads data (default: :meth:`load_table`).

        Returns
        -------
        dict name -> ResolvedExternalForce
            Arrays of shape (T, 3), rows = the table's rows. Disabled forces are left out.

        Raises
        ------
        DataFileError
            A force with neither force nor torque identifier, a point without a force, or an
            identifier that does not match exactly 3 column labels (the message names the
            identifier and the columns found).

        Source
        ------
        OpenSim ``ExternalForce::extendConnectToModel`` and
        ``Storage::getColumnIndicesForIdentifier``: an identifier selects every column whose
        label *starts with* it, in file order, and exactly 3 are required (e.g.
        ``ground_force_v`` -> ``ground_force_vx, _vy, _vz``; ``1_ground_force_v`` ->
        ``1_ground_force_vx ...``).
        """
        if table is None:
            table = self.load_table()
        src = getattr(table, "source", None) or self.path
        labels = list(table.labels)
        out: dict[str, ResolvedExternalForce] = {}
        for f in self.forces:
            if not f.enabled:
                continue
            where = f"ExternalForce '{f.name}'"
            if not f.applies_force and not f.applies_torque:
                raise DataFileError("ExternalForce has neither a force nor a torque identifier",
                                    self.path, where)
            if not f.applies_force and f.specifies_point:
                raise DataFileError("ExternalForce specifies a point but no force", self.path, where)
            cols: dict[str, list[str]] = {}
            arrays: dict[str, np.ndarray | None] = {"force": None, "point": None, "torque": None}
            for kind, ident, used in (("force", f.force_identifier, f.applies_force),
                                      ("point", f.point_identifier, f.specifies_point),
                                      ("torque", f.torque_identifier, f.applies_torque)):
                if not used:
                    continue
                ident = ident.strip()
                idx = [j for j, lab in enumerate(labels) if lab.startswith(ident)]
                if len(idx) != 3:
                    found = ", ".join(labels[j] for j in idx) or "none"
                    raise DataFileError(
                        f"{kind}_identifier '{ident}' must match exactly 3 column labels starting with "
                        f"it; found {len(idx)} ({found})", src, where)
                cols[kind] = [labels[j] for j in idx]
                arrays[kind] = np.asarray(table.data)[:, idx].astype(float, copy=True)
            _check_finite_loads(arrays, cols, np.asarray(table.time, float), src, where)
            out[f.name] = ResolvedExternalForce(
                name=f.name, applied_to_body=f.applied_to_body,
                force_expressed_in_body=f.force_expressed_in_body,
                point_expressed_in_body=f.point_expressed_in_body,
                time=np.array(table.time, dtype=float, copy=True),
                force=arrays["force"], point=arrays["point"], torque=arrays["torque"], columns=cols)
        return out


#: A point of application farther than this (m) from the origin is a unit error (mm as m).
_FAR_POINT = 20.0


def _check_finite_loads(arrays, cols, time, src, where):
    """Non-finite values in an ExternalForce's columns. Real force-plate exports leave the centre
    of pressure (and sometimes the force) NaN while the foot is off the plate: rows whose force
    is zero or NaN and whose point or torque is NaN are read as no load (zeros), with one
    warning naming the columns and the time span. Anything else non-finite (an infinity, a NaN
    point under a non-zero force) is a DataFileError naming the column and the time."""
    F = arrays["force"]
    off = None
    if F is not None:
        off = np.all(np.isnan(F) | (F == 0.0), axis=1)
    fixed = []
    for kind in ("force", "point", "torque"):
        a = arrays[kind]
        if a is None:
            continue
        bad = ~np.isfinite(a)
        if not bad.any():
            continue
        if off is not None:
            soft = bad & np.isnan(a) & off[:, None]
            if soft.any():
                a[soft] = 0.0
                fixed.append(([cols[kind][j] for j in np.flatnonzero(soft.any(axis=0))],
                              time[soft.any(axis=1)]))
                bad = bad & ~soft
        if bad.any():
            r, c = (int(x[0]) for x in np.nonzero(bad))
            why = "" if off is None or off[r] else " under a non-zero force"
            raise DataFileError(f"non-finite value {a[r, c]} in column '{cols[kind][c]}'{why} at time "
                                f"{float(time[r])}", src, where)
    P = arrays["point"]
    if P is not None and F is not None:
        loaded = np.linalg.norm(F, axis=1) > 0
        far = loaded & (np.linalg.norm(P, axis=1) > _FAR_POINT)
        if far.any():
            r = int(np.flatnonzero(far)[0])
            warnings.warn(f"{src}: {where}: point ({', '.join(cols['point'])}) is "
                          f"{float(np.linalg.norm(P[r])):.4g} m from the origin at t = "
                          f"{float(time[r])} under load ({int(far.sum())} rows): millimetres read "
                          "as metres?", ArthronWarning, stacklevel=3)
    if fixed:
        names = sorted({c for cs, _ in fixed for c in cs})
        t = np.concatenate([ts for _, ts in fixed])
        warnings.warn(f"{src}: {where}: NaN in {', '.join(names)} while the force is zero or NaN "
                      f"({t.size} values between t = {float(t.min())} and {float(t.max())}) read as "
                      "no load", ArthronWarning, stacklevel=3)


def _function_names(pf, set_name: str) -> list[str]:
    """Names of the functions of a pre-2.3 PrescribedForce function set (best effort)."""
    fs = _child(pf, set_name)
    if fs is None:
        for c in _children(pf):
            if c.tag == "FunctionSet" and c.get("name") == set_name:
                fs = c
                break
    if fs is None:
        return []
    inner = _child(fs, "FunctionSet")
    if inner is not None:
        fs = inner
    objs = _child(fs, "objects")
    items = _children(objs) if objs is not None else _children(fs)
    return [c.get("name", "") for c in items if c.get("name")]


def _old_identifier(names: list[str], labels: list[str] | None, path, pf) -> str:
    # ExternalLoads::createIdentifier: the first function's name minus its last character;
    # "#N" means column N of the data file (time = column 0).
    if not names:
        return ""
    first = names[0]
    if first.startswith("#"):
        try:
            k = int(first[1:])
        except ValueError:
            raise DataFileError(f"bad function name {first!r}", path, _where(pf)) from None
        if labels is None or not 0 <= k < len(labels):
            raise DataFileError(f"function {first!r} refers to a column the data file does not have",
                                path, _where(pf))
        first = labels[k]
    return first[:-1]


def read_external_loads(path, placeholders: dict | None = None) -> ExternalLoads:
    """Read an ExternalLoads XML file (formats < 20301 with PrescribedForce, 20302, 30000, 4xxxx).

    Returns
    -------
    ExternalLoads
        ``forces`` (ExternalForce list, string properties stripped; ``enabled`` is
        ``not isDisabled`` for 2.x/3.x files and ``appliesForce`` for 4.x), ``datafile``
        resolved against the XML's folder.

    Raises
    ------
    DataFileError
        Missing file, malformed XML (line N), the document's object not ``<ExternalLoads>``,
        an ExternalForce without ``applied_to_body`` or with neither force nor torque
        identifier (names the element), a non-boolean ``isDisabled``.

    Source
    ------
    OpenSim ``ExternalLoads`` (property ``datafile``; ``ExternalForce`` children of
    ``<objects>``; ``ExternalLoads::updateFromXMLNode`` converts pre-20301 ``PrescribedForce``
    entries: body, forces/points/torques expressed in ground, identifier = first function
    name minus its last character) and ``ExternalForce`` properties.
    """
    path = Path(path).absolute()
    root = parse_xml(path, placeholders)
    version, el = _document(root, path)
    if el.tag != "ExternalLoads":
        raise DataFileError(f"expected <ExternalLoads>, found <{el.tag}>", path, f"line {el.sourceline}")
    folder = path.parent
    datafile = _resolve(folder, _text(_child(el, "datafile")))
    kin = _text(_child(el, "external_loads_model_kinematics_file")) or None
    if kin:
        warnings.warn(f"{path}: external_loads_model_kinematics_file is ignored (as in OpenSim 4.x)",
                      ArthronWarning, stacklevel=2)
    cut_el = _child(el, "lowpass_cutoff_frequency_for_load_kinematics")
    cutoff = _float(_text(cut_el), path, cut_el) if cut_el is not None and _text(cut_el) else None

    objects = _child(el, "objects")
    items = _children(objects) if objects is not None else []
    forces: list[ExternalForce] = []
    labels_cache: list[str] | None = None
    for item in items:
        if item.tag == "ExternalForce":
            body = _text(_child(item, "applied_to_body"))
            if not body:
                raise DataFileError("ExternalForce without <applied_to_body>", path, _where(item))
            enabled = True
            dis = _child(item, "isDisabled")
            if dis is not None and _text(dis):
                enabled = not _bool(_text(dis), path, dis)
            app = _child(item, "appliesForce")
            if app is not None and _text(app):
                enabled = enabled and _bool(_text(app), path, app)

            def prop(tag, default=""):
                t = _text(_child(item, tag))
                return default if t is None or t == "" else t

            ef = ExternalForce(
                name=item.get("name", ""), applied_to_body=body,
                force_expressed_in_body=prop("force_expressed_in_body", "ground"),
                point_expressed_in_body=prop("point_expressed_in_body", "ground"),
                force_identifier=prop("force_identifier"), point_identifier=prop("point_identifier"),
                torque_identifier=prop("torque_identifier"), data_source_name=prop("data_source_name"),
                enabled=enabled)
            if not ef.applies_force and not ef.applies_torque:
                raise DataFileError("ExternalForce identifies neither a force nor a torque", path, _where(item))
            forces.append(ef)
        elif item.tag == "PrescribedForce" and (version is None or version < 20301):
            body = _text(_child(item, "body")) or _text(_child(item, "body_name")) or ""
            body = body.rsplit("/", 1)[-1]
            if not body:
                raise DataFileError("PrescribedForce without <body>", path, _where(item))
            fnames = {k: _function_names(item, k) for k in ("forceFunctions", "pointFunctions", "torqueFunctions")}
            if any(n.startswith("#") for v in fnames.values() for n in v[:1]) and labels_cache is None:
                if datafile is None:
                    raise DataFileError("PrescribedForce refers to columns by number but there is no "
                                        "<datafile>", path, _where(item))
                from arthron.io.sto import read_sto

                t = read_sto(datafile)
                labels_cache = [t.time_label, *t.labels]
            enabled = True
            dis = _child(item, "isDisabled")
            if dis is not None and _text(dis):
                enabled = not _bool(_text(dis), path, dis)
            ef = ExternalForce(
                name=item.get("name", ""), applied_to_body=body,
                force_identifier=_old_identifier(fnames["forceFunctions"], labels_cache, path, item),
                point_identifier=_old_identifier(fnames["pointFunctions"], labels_cache, path, item),
                torque_identifier=_old_identifier(fnames["torqueFunctions"], labels_cache, path, item),
                enabled=enabled)
            if not ef.applies_force and not ef.applies_torque:
                raise DataFileError("PrescribedForce has no force or torque functions", path, _where(item))
            forces.append(ef)
        else:
            warnings.warn(f"{path}: {_where(item)} in ExternalLoads is not an ExternalForce; skipped",
                          ArthronWarning, stacklevel=2)
    return ExternalLoads(name=el.get("name", ""), forces=forces, datafile=datafile, version=version, path=path,
                         external_loads_model_kinematics_file=kin,
                         lowpass_cutoff_frequency_for_load_kinematics=cutoff)
