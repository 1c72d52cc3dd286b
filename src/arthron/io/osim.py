"""OpenSim model files (``.osim``): read into :class:`arthron.models.model.Model`, write 4.x.

Reading accepts the 4.x format (``Version="40000"``: sockets, PhysicalOffsetFrames owned by
joints) and the 3.x/2.x formats still found in real models (``<Joint>`` inside ``<Body>``,
``location_in_parent``/``orientation_in_parent``, ``<body>`` references, ``inertia_xx`` ...),
the way OpenSim 4.6 upgrades them in memory (the per-class version steps are in
:mod:`arthron.io.osim_upgrade`, applied to the document before it is read). Element names containing ``::`` (HuntCrossleyForce
contact parameters in several OpenSim example models) do not break parsing: libxml2 rejects them as QNames, so the file is re-read in recovery mode and
accepted only when every error is of that kind (``arthron.io.setup.parse_xml``).

Force elements and wrap objects go through a type -> (read, write) registry (``READERS``,
``WRITERS``; :func:`register`): each class arthron models (:mod:`arthron.models.forces`,
:mod:`arthron.models.wrap_objects`) is read into its dataclass fields and written from them, so
a model built in Python is written like one read from a file. Properties of a modelled
component that arthron does not use (appearance, control bounds, activation time constants
...) are kept as serialized XML in its ``unmodelled_xml`` and written back; only this module
reads or writes that field. Components arthron does not model at all (contact geometry and
forces, plugin classes such as ``Smith2018ArticularContactForce``, controllers, probes,
model-level components) are kept as their XML (``Model.verbatim``, ``UnmodelledForce.raw``)
and written back verbatim; they never make reading fail.

This module is the entry point: it parses the file and picks the reader by the document's
``Version`` (:mod:`arthron.io.osim_v4` for 4.x, with the element readers both forms share;
:mod:`arthron.io.osim_v3` for 3.x/2.x). :mod:`arthron.io.osim_write` writes and
:mod:`arthron.io.osim_xml` holds the element helpers and the registry that reading and writing
use (all public names are importable from here).
Writing always produces a ``Version="40000"`` document that OpenSim 4.6 loads and that means the
same as the input (same bodies, frames, joints, coordinates, constraints, markers, forces).
"""
from __future__ import annotations

import warnings

from lxml import etree

from ..errors import ArthronWarning, DataFileError, ModelFileError, OptionError, UnsupportedFeature
from ..models.model import GROUND, Model
from .osim_functions import wrap_inline_function_properties
from .osim_upgrade import set_objects as _objects
from .osim_v3 import read_v3
from .osim_v4 import read_v4
from .osim_xml import (  # noqa: F401  (READERS, WRITERS, register: public API)
    _FUNCTION_PROPS, READERS, WRITERS, _Ctx, _force_from_element, apply_defaults, register,
)
from .setup import parse_xml
from .osim_write import force_to_xml, model_to_xml, write_osim, write_osims  # noqa: F401  (public API)

__all__ = ["read_osim", "write_osim", "write_osims", "model_to_xml", "force_to_xml", "read_force_set",
           "READERS", "WRITERS", "register"]


# ----------------------------------------------------------------------------- reading
def read_osim(path, *, forces: bool = True) -> Model:
    """Read an OpenSim model file.

    Parameters
    ----------
    path : str or os.PathLike
        ``.osim`` file (4.x, 3.x or 2.x format).
    forces : bool
        False: the forces of the ForceSet are not read (``model.forces`` is empty, the errors
        and warnings of their paths and properties are not raised; the frames they own are
        read) -- for the tools that use the kinematics alone (the IK tool); such a model is
        not for writing back.

    Returns
    -------
    Model
        SI units, radians; frame references as absolute component paths.

    Raises
    ------
    OptionError
        ``path`` is a Model already.
    ModelFileError
        Malformed XML (with the line), no ``<Model>``, a socket or body reference that does not
        resolve, an unknown joint type, a joint whose child already has a parent (closed loop
        through joints).
    UnsupportedFeature
        Model features arthron cannot represent faithfully (reversed 3.x joints whose inverse
        transform is not a joint transform, see :func:`arthron.io.osim_upgrade.reversed_joint`;
        TransformAxis functions of several coordinates).

    Pre-4.0 files are first upgraded class by class as OpenSim 4.6 upgrades them in memory
    (:mod:`arthron.io.osim_upgrade`): names made valid (one ArthronWarning lists the renames),
    muscle control bounds, socket paths of constraints and of the forces kept verbatim,
    display and contact geometry, controllers.
    """
    if isinstance(path, Model):
        raise OptionError("read_osim(path) takes a file name; this is already a Model (copy it: model.copy())")
    ctx = _Ctx(path, forces)
    try:
        # lxml, tolerant of OpenSim's '::' element names only (see io.setup.parse_xml)
        root = parse_xml(path)
    except DataFileError as e:
        raise ModelFileError(e.message, path, e.where) from None
    wrap_inline_function_properties(root, _FUNCTION_PROPS)
    apply_defaults(root)
    version = _version(root, path)
    melem = root if root.tag == "Model" else root.find("Model")
    if melem is None:
        raise ModelFileError("no <Model> element", path)
    if version >= 40000:
        model = read_v4(melem, ctx)
    else:
        model = read_v3(melem, ctx, version)
    model.version = version
    model.source = str(path)
    _check_tree(model, ctx)
    _warn_function_based_paths(model, ctx)
    return model


def _warn_function_based_paths(model: Model, ctx):
    """One ArthronWarning naming the forces whose path is an OpenSim 4.5+ ``FunctionBasedPath``
    that arthron cannot evaluate (a function type it does not read, named in the message):
    arthron keeps the element and writes it back, but those forces have no path in arthron
    (moment arms, muscle analysis and static optimization leave them out). FunctionBasedPaths
    of functions arthron reads (MultivariatePolynomialFunction, the one-argument functions) are
    read into :class:`FunctionBasedPath` and evaluated."""
    names = [f.name for f in model.forces.values() if f.path is None and any(
        "<FunctionBasedPath" in x for x in (getattr(f, "unmodelled_xml", "") or "",
                                            etree.tostring(f.raw, encoding="unicode")
                                            if getattr(f, "raw", None) is not None else ""))]
    if names:
        why = getattr(ctx, "fbp_unsupported", {})
        warnings.warn(f"{ctx.path}: {len(names)} force(s) with a FunctionBasedPath, which arthron "
                      f"keeps but does not evaluate (no path: moment arms, muscle analysis and "
                      f"static optimization leave them out): "
                      + ", ".join(f"{n} ({why[n]})" if n in why else n for n in names),
                      ArthronWarning)


def _version(root, path) -> int:
    """The ``Version`` attribute of an ``<OpenSimDocument>`` (0 for a bare ``<Model>``)."""
    if root.tag != "OpenSimDocument":
        return 0
    v = (root.get("Version") or "0").strip() or "0"
    if not v.isdigit():
        raise ModelFileError(f"OpenSimDocument Version {v!r} is not an integer (OpenSim writes "
                             "e.g. Version=\"40000\")", path, f"line {root.sourceline}")
    return int(v)


def _check_tree(model: Model, ctx: _Ctx):
    """Each body must be the child of exactly one joint (no loops through joints)."""
    child_of = {}
    for j in model.joints.values():
        cb, _ = model.frame_in_base(j.child_frame)
        pb, _ = model.frame_in_base(j.parent_frame)
        if cb == GROUND:
            raise UnsupportedFeature(f"joint '{j.name}' has ground as its child frame (reversed joint)",
                                     ctx.path, f"joint '{j.name}'")
        if cb in child_of:
            raise ModelFileError(f"body '{cb}' is the child of joints '{child_of[cb]}' and '{j.name}'",
                                 ctx.path, f"joint '{j.name}'")
        child_of[cb] = j.name
    for b in model.bodies.values():
        if b.path not in child_of:
            warnings.warn(f"{ctx.path}: body '{b.name}' has no joint; it is not connected", ArthronWarning)


def read_force_set(path) -> list:
    """The force elements of an OpenSim ``ForceSet`` file (e.g. a tool's ``force_set_files``:
    residual and reserve actuators), typed (:mod:`arthron.models.forces`), in file order.
    A ``<defaults>`` block fills the properties its default objects give to the elements of
    their class that omit them, as in OpenSim (:func:`arthron.io.osim_xml.apply_defaults`).
    Path-based forces are returned without their path.

    Raises
    ------
    DataFileError for a missing or malformed file or one that is not a ForceSet,
    ModelFileError for a malformed property.
    """
    root = parse_xml(path)
    wrap_inline_function_properties(root, _FUNCTION_PROPS)
    apply_defaults(root)
    fs = root if root.tag == "ForceSet" else root.find("ForceSet")
    if fs is None:
        raise DataFileError("not a <ForceSet> file", path)
    ctx = _Ctx(path)
    return [_force_from_element(el, ctx) for el in _objects(fs)]
