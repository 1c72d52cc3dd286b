"""Wrap objects as typed data, one dataclass per OpenSim class (fields = OpenSim property names,
metres and radians).

Common fields (OpenSim ``WrapObject``): ``translation`` (3,) and ``xyz_body_rotation`` (3,,
body-fixed X-Y-Z) of the wrap frame in the body frame, ``quadrant`` (``all``, ``+x``, ``-y``
...), ``active``; ``body`` is the name of the body that carries it (``ground`` for ground).

* :class:`WrapSphere` (``radius``), :class:`WrapCylinder` (``radius``, ``length``),
  :class:`WrapEllipsoid` (``dimensions``: the three radii), :class:`WrapTorus`
  (``inner_radius``, ``outer_radius``): OpenSim 4.6's wrap surfaces;
* :class:`WrapSphereObst`, :class:`WrapCylinderObst` (``wrapDirection``) and
  :class:`WrapDoubleCylinderObst` (``radiusUcyl``, ``radiusVcyl``, ``wrapUcylDirection``,
  ``wrapVcylDirection``, ``wrapVcylHomeBody``, ``xyz_body_rotationVcyl``, ``translationVcyl``):
  Garner & Pandy (2000) obstacle-set surfaces.

A field left None is absent from the file (OpenSim's default applies). ``WRAP_TYPES`` maps each
OpenSim class to its dataclass (:func:`register_wrap_object`); other classes are kept as
:class:`UnmodelledWrapObject`. ``unmodelled_xml`` holds properties arthron does not use
(appearance ...), read and written only by :mod:`arthron.io.osim`.
"""
from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import field, fields
from typing import Any, ClassVar

import numpy as np

from ..runtime import dataclass  # dataclasses.dataclass with shared __repr__/__eq__
from ..errors import ModelFileError

__all__ = ["WrapObject", "UnmodelledWrapObject", "WRAP_TYPES", "register_wrap_object",
           "WrapSphere", "WrapCylinder", "WrapEllipsoid", "WrapTorus", "WrapSphereObst",
           "WrapCylinderObst", "WrapDoubleCylinderObst"]

#: OpenSim class name -> wrap-object dataclass.
WRAP_TYPES: dict = {}


def register_wrap_object(cls):
    """Register a wrap-object dataclass under its OpenSim class name."""
    WRAP_TYPES[cls.opensim_type] = cls
    return cls


def _num(default=None):
    return field(default=default, metadata={"kind": "float"})


def _txt(default=None):
    return field(default=default, metadata={"kind": "str"})


def _vec(default=None):
    if default is None:
        return field(default=None, metadata={"kind": "vec"})
    return field(default_factory=lambda: np.array(default, float), metadata={"kind": "vec"})


class _DimView(MutableMapping):
    """The dimension fields of a wrap object that are set, by OpenSim property name."""

    __slots__ = ("_w",)

    def __init__(self, w):
        self._w = w

    def __getitem__(self, k):
        if k not in self._w.dimension_fields or getattr(self._w, k) is None:
            raise KeyError(k)
        return getattr(self._w, k)

    def __setitem__(self, k, v):
        if k not in self._w.dimension_fields:
            raise KeyError(f"{self._w.type} '{self._w.name}' has no dimension '{k}'")
        setattr(self._w, k, v)

    def __delitem__(self, k):
        setattr(self._w, k, None)

    def __iter__(self):
        return iter([k for k in self._w.dimension_fields if getattr(self._w, k) is not None])

    def __len__(self):
        return sum(1 for _ in self)


@dataclass(eq=False)
class WrapObject:
    """Base of the wrap objects (see the module docstring)."""

    name: str
    type: str = ""
    body: str = "ground"
    translation: np.ndarray = _vec([0.0, 0.0, 0.0])
    xyz_body_rotation: np.ndarray = _vec([0.0, 0.0, 0.0])
    quadrant: str = _txt("all")
    active: bool = field(default=True, metadata={"kind": "bool"})
    unmodelled_xml: str = field(default="", repr=False)

    opensim_type: ClassVar[str] = ""
    modelled: ClassVar[bool] = True
    dimension_fields: ClassVar[tuple] = ()

    @classmethod
    def property_fields(cls):
        """(name, kind) of the OpenSim properties this class models."""
        return [(f.name, f.metadata["kind"]) for f in fields(cls) if "kind" in f.metadata]

    @property
    def dimensions(self) -> MutableMapping:
        """The dimensions that are set (``radius``, ``length``, ``dimensions`` ...), live."""
        return _DimView(self)

    def wrap_dims(self) -> dict:
        """Dimensions as the wrapping code takes them: ``radius``, ``length``, ``radii`` (3,),
        ``inner_radius``, ``outer_radius`` (floats, metres; those set)."""
        out = {}
        for k in self.dimension_fields:
            v = getattr(self, k)
            if v is not None:
                out["radii" if k == "dimensions" else k] = (np.asarray(v, float) if k == "dimensions"
                                                            else float(v))
        return out


@dataclass(eq=False)
class UnmodelledWrapObject(WrapObject):
    """A wrap class arthron does not model: ``raw`` is its file element (io only)."""

    raw: Any = field(default=None, repr=False)
    modelled: ClassVar[bool] = False


@register_wrap_object
@dataclass(eq=False)
class WrapSphere(WrapObject):
    """OpenSim ``WrapSphere``: a sphere of ``radius`` (m) centred at the wrap frame's origin."""

    type: str = "WrapSphere"
    opensim_type: ClassVar[str] = "WrapSphere"
    dimension_fields: ClassVar[tuple] = ("radius",)
    radius: float | None = _num()


@register_wrap_object
@dataclass(eq=False)
class WrapCylinder(WrapObject):
    """OpenSim ``WrapCylinder``: a cylinder of ``radius`` and ``length`` (m) along the wrap
    frame's z axis, centred at its origin."""

    type: str = "WrapCylinder"
    opensim_type: ClassVar[str] = "WrapCylinder"
    dimension_fields: ClassVar[tuple] = ("radius", "length")
    radius: float | None = _num()
    length: float | None = _num()


@register_wrap_object
@dataclass(eq=False)
class WrapEllipsoid(WrapObject):
    """``dimensions``: the ellipsoid's radii along its x, y, z axes (m)."""

    type: str = "WrapEllipsoid"
    opensim_type: ClassVar[str] = "WrapEllipsoid"
    dimension_fields: ClassVar[tuple] = ("dimensions",)
    # A field named like OpenSim's property; ``WrapObject.dimensions`` (the mapping of all
    # dimensions) is shadowed here by the radii themselves, so give the view explicitly.
    radii: np.ndarray | None = field(default=None, metadata={"kind": "vec", "xml": "dimensions"})

    @property
    def dimensions(self) -> MutableMapping:
        return _EllipsoidDims(self)

    def wrap_dims(self) -> dict:
        return {} if self.radii is None else {"radii": np.asarray(self.radii, float)}


class _EllipsoidDims(_DimView):
    __slots__ = ()

    def __getitem__(self, k):
        if k != "dimensions" or self._w.radii is None:
            raise KeyError(k)
        return self._w.radii

    def __setitem__(self, k, v):
        if k != "dimensions":
            raise KeyError(k)
        self._w.radii = v

    def __delitem__(self, k):
        self._w.radii = None

    def __iter__(self):
        return iter([] if self._w.radii is None else ["dimensions"])


@register_wrap_object
@dataclass(eq=False)
class WrapTorus(WrapObject):
    """OpenSim ``WrapTorus``: a torus about the wrap frame's z axis, ``inner_radius`` and
    ``outer_radius`` (m)."""

    type: str = "WrapTorus"
    opensim_type: ClassVar[str] = "WrapTorus"
    dimension_fields: ClassVar[tuple] = ("inner_radius", "outer_radius")
    inner_radius: float | None = _num()
    outer_radius: float | None = _num()


def _direction(w, tag, txt):
    """+1 (right-handed, OpenSim's default) or -1 from an obstacle's wrap direction."""
    t = (txt or "righthand").strip().lower()
    if t in ("righthand", "right", "righthanded", "unassigned", ""):
        return 1
    if t in ("lefthand", "left", "lefthanded"):
        return -1
    raise ModelFileError(f"wrap obstacle '{w.name}': {tag} '{txt}' is not 'righthand' or "
                         "'lefthand'")


@register_wrap_object
@dataclass(eq=False)
class WrapSphereObst(WrapObject):
    """OpenSim ``WrapSphereObst`` (Garner & Pandy 2000 obstacle-set sphere): ``radius`` (m)."""

    type: str = "WrapSphereObst"
    opensim_type: ClassVar[str] = "WrapSphereObst"
    dimension_fields: ClassVar[tuple] = ("radius",)
    radius: float | None = _num()


@register_wrap_object
@dataclass(eq=False)
class WrapCylinderObst(WrapObject):
    """OpenSim ``WrapCylinderObst`` (Garner & Pandy 2000 obstacle-set cylinder): ``radius``
    and ``length`` (m) along the wrap frame's z axis; ``wrapDirection`` ``righthand`` (default)
    or ``lefthand``."""

    type: str = "WrapCylinderObst"
    opensim_type: ClassVar[str] = "WrapCylinderObst"
    dimension_fields: ClassVar[tuple] = ("radius", "length")
    radius: float | None = _num()
    length: float | None = _num()
    wrapDirection: str | None = _txt()

    def wrap_dims(self) -> dict:
        out = super().wrap_dims()
        out["direction"] = _direction(self, "wrapDirection", self.wrapDirection)
        return out


@register_wrap_object
@dataclass(eq=False)
class WrapDoubleCylinderObst(WrapObject):
    """Garner & Pandy's double-cylinder obstacle: the U cylinder is this object's frame; the V
    cylinder sits on ``wrapVcylHomeBody`` at ``translationVcyl`` / ``xyz_body_rotationVcyl``."""

    type: str = "WrapDoubleCylinderObst"
    opensim_type: ClassVar[str] = "WrapDoubleCylinderObst"
    dimension_fields: ClassVar[tuple] = ("length",)
    radiusUcyl: float | None = _num()
    radiusVcyl: float | None = _num()
    wrapUcylDirection: str | None = _txt()
    wrapVcylDirection: str | None = _txt()
    wrapUcylHomeBody: str | None = _txt()
    wrapVcylHomeBody: str | None = _txt()
    xyz_body_rotationVcyl: np.ndarray | None = _vec()
    translationVcyl: np.ndarray | None = _vec()
    length: float | None = _num()

    def wrap_dims(self) -> dict:
        """U/V radii and wrap directions (the V frame needs the model: see
        :func:`arthron.multibody.paths.compile_paths`)."""
        ru = -1.0 if self.radiusUcyl is None else float(self.radiusUcyl)
        rv = -1.0 if self.radiusVcyl is None else float(self.radiusVcyl)
        if ru < 0.0 or rv < 0.0:
            raise ModelFileError(f"wrap obstacle '{self.name}': radiusUcyl and radiusVcyl must "
                                 f"be given and not negative (got {ru}, {rv})")
        return {"radius": ru, "radius_v": rv,
                "direction": _direction(self, "wrapUcylDirection", self.wrapUcylDirection),
                "direction_v": _direction(self, "wrapVcylDirection", self.wrapVcylDirection)}
