"""OpenSim Function XML: read into :mod:`arthron.models.functions` objects, written back in
OpenSim 4.x form.

:func:`read_function` and :func:`read_function_property` read the 4.x forms and the 3.x ones
(``<function>`` wrappers, ``natCubicSpline``); :func:`function_to_xml` writes a function as
the 4.x element OpenSim 4.6 reads as the same function (``tests/test_functions.py``).
"""
from __future__ import annotations

import math

import numpy as np
from lxml import etree

from ..errors import ModelFileError, UnsupportedFeature
from ..models.functions import (
    Constant, Function, GCVSpline, LinearFunction, MultiplierFunction, NaturalCubicSpline,
    PiecewiseConstantFunction, PiecewiseLinearFunction, PolynomialFunction, SimmSpline, Sine,
    StepFunction, _fmt, _fmt_list, _XYFunction,
)
from ..models.multivariate import MultivariatePolynomialFunction

__all__ = ["read_function", "read_function_property", "function_to_xml", "FUNCTION_TAGS"]


# ------------------------------------------------------------------------------------------
# Writing XML
# ------------------------------------------------------------------------------------------
def _sub(parent, tag, text):
    e = etree.SubElement(parent, tag)
    e.text = text
    return e


def function_to_xml(f: Function) -> etree._Element:
    """The function as an lxml element in OpenSim 4.x form.

    Raises UnsupportedFeature for a Function subclass without an OpenSim form.
    """
    e = etree.Element(f.xml_tag)
    if f.name:
        e.set("name", f.name)
    if isinstance(f, MultivariatePolynomialFunction):
        _sub(e, "coefficients", _fmt_list(f.coefficients))
        _sub(e, "dimension", str(f.dimension))
        _sub(e, "order", str(f.order))
    elif isinstance(f, MultiplierFunction):
        h = etree.SubElement(e, "function")
        h.append(function_to_xml(f.function))
        _sub(e, "scale", _fmt(f.scale))
    elif isinstance(f, GCVSpline):
        _sub(e, "half_order", str(f.half_order))
        _sub(e, "error_variance", _fmt(f.error_variance))
        _sub(e, "x", _fmt_list(f.x))
        _sub(e, "y", _fmt_list(f.y))
        _sub(e, "weights", _fmt_list(np.ones_like(f.x)))
    elif isinstance(f, StepFunction):
        for tag in ("transition_start_time", "transition_end_time", "start_value", "end_value"):
            _sub(e, tag, _fmt(getattr(f, tag)))
    elif isinstance(f, Sine):
        for tag in ("amplitude", "omega", "phase", "offset"):
            _sub(e, tag, _fmt(getattr(f, tag)))
    elif isinstance(f, Constant):
        _sub(e, "value", _fmt(f.constant))
    elif isinstance(f, LinearFunction):
        _sub(e, "coefficients", f"{_fmt(f.slope)} {_fmt(f.intercept)}")
    elif isinstance(f, PolynomialFunction):
        _sub(e, "coefficients", _fmt_list(f.coefficients))
    elif isinstance(f, _XYFunction):
        _sub(e, "x", _fmt_list(f.x))
        _sub(e, "y", _fmt_list(f.y))
    else:
        raise UnsupportedFeature(f"function {type(f).__name__} has no OpenSim XML form")
    return e


# ------------------------------------------------------------------------------------------
# Reading XML
# ------------------------------------------------------------------------------------------

#: Element tags read by :func:`read_function` (4.x names and the 3.x/2.x aliases).
FUNCTION_TAGS = frozenset({
    "Constant", "LinearFunction", "PolynomialFunction", "SimmSpline", "NaturalCubicSpline",
    "natCubicSpline", "NatCubicSpline", "GCVSpline", "PiecewiseLinearFunction",
    "PiecewiseConstantFunction", "StepFunction", "Sine", "MultiplierFunction",
    "MultivariatePolynomialFunction",
})


def _where(elem) -> str:
    line = getattr(elem, "sourceline", None)
    nm = elem.get("name") if hasattr(elem, "get") else None
    tag = f"<{elem.tag} name='{nm}'>" if nm else f"<{elem.tag}>"
    return f"{tag} (line {line})" if line else tag


def _children(elem):
    """The child elements (no comments or processing instructions)."""
    return list(elem.iterchildren(etree.Element))


def _child(elem, tag):
    """The first child element named ``tag``, or None."""
    return next(elem.iterchildren(tag), None)


def _numbers(elem, tag, path, required=True, default=None):
    c = _child(elem, tag)
    if c is None or not (c.text or "").strip():
        if required:
            raise ModelFileError(f"<{elem.tag}> has no <{tag}> values", path, _where(elem))
        return default
    try:
        vals = [float(t) for t in c.text.split()]
    except ValueError:
        raise ModelFileError(f"<{tag}> is not a list of numbers: {c.text.strip()[:60]!r}",
                             path, _where(c)) from None
    v = np.array(vals, dtype=float)
    if not all(map(math.isfinite, vals)):
        raise ModelFileError(f"<{tag}> holds a non-finite value: {c.text.strip()[:60]!r}",
                             path, _where(c))
    return v


def _number(elem, tag, path, default=None):
    v = _numbers(elem, tag, path, required=default is None, default=None)
    if v is None:
        return float(default)
    if v.size != 1:
        raise ModelFileError(f"<{tag}> must hold one number, found {v.size}", path,
                             _where(_child(elem, tag)))
    return float(v[0])


def _inner_function_elem(elem):
    """The function element inside a ``<function>`` wrapper (or None when it is empty)."""
    kids = _children(elem)
    return kids[0] if kids else None


def read_function(elem, path=None) -> Function:
    """Build the :class:`Function` an XML element describes.

    Parameters
    ----------
    elem : lxml element
        The function element itself (``<SimmSpline>``, ``<LinearFunction>`` ...). A 3.x
        ``<function>`` wrapper around it is accepted too.
    path : str or PathLike, optional
        The file, for error messages.

    Returns
    -------
    Function

    Raises
    ------
    ModelFileError
        Missing or non-numeric values, too few points, decreasing knots (names the file and the
        element with its line).
    UnsupportedFeature
        An unknown function type, or a GCVSpline that OpenSim would fit with smoothing.
    """
    tag = elem.tag
    if tag == "function":
        inner = _inner_function_elem(elem)
        if inner is None:
            raise ModelFileError("empty <function> element", path, _where(elem))
        return read_function(inner, path)
    name = elem.get("name") or None
    try:
        if tag == "Constant":
            return Constant(_number(elem, "value", path), name=name)
        if tag == "LinearFunction":
            c = _numbers(elem, "coefficients", path)
            if c.size != 2:
                raise ModelFileError(f"<coefficients> of LinearFunction needs 2 numbers "
                                     f"(slope intercept), found {c.size}", path, _where(elem))
            return LinearFunction(c[0], c[1], name=name)
        if tag == "PolynomialFunction":
            return PolynomialFunction(_numbers(elem, "coefficients", path), name=name)
        if tag in ("SimmSpline", "NaturalCubicSpline", "natCubicSpline", "NatCubicSpline",
                   "PiecewiseLinearFunction", "PiecewiseConstantFunction"):
            x = _numbers(elem, "x", path)
            y = _numbers(elem, "y", path)
            if x.size != y.size:
                raise ModelFileError(f"<x> has {x.size} values but <y> has {y.size}", path,
                                     _where(elem))
            if np.any(np.diff(x) < 0):
                raise ModelFileError("<x> values are not increasing", path, _where(elem))
            cls = {"SimmSpline": SimmSpline, "PiecewiseLinearFunction": PiecewiseLinearFunction,
                   "PiecewiseConstantFunction": PiecewiseConstantFunction}.get(
                       tag, NaturalCubicSpline)
            return cls(x, y, name=name)
        if tag == "GCVSpline":
            x = _numbers(elem, "x", path)
            y = _numbers(elem, "y", path, required=False)
            if y is None:
                raise UnsupportedFeature("GCVSpline without <y> (pre-4.0 form storing only "
                                         "GCVSPL coefficients) is not supported", path,
                                         _where(elem))
            if x.size != y.size:
                raise ModelFileError(f"<x> has {x.size} values but <y> has {y.size}", path,
                                     _where(elem))
            half = _number(elem, "half_order", path, default=0)
            if half == 0:
                deg = _number(elem, "degree", path, default=5)
            else:
                deg = 2 * int(half) - 1
            ev = _number(elem, "error_variance", path, default=0.0)
            try:
                return GCVSpline(deg, x, y, error_variance=ev, name=name)
            except UnsupportedFeature as e:
                raise UnsupportedFeature(e.message, path, _where(elem)) from None
        if tag == "StepFunction":
            return StepFunction(_number(elem, "transition_start_time", path, 0.0),
                                _number(elem, "transition_end_time", path, 1.0),
                                _number(elem, "start_value", path, 0.0),
                                _number(elem, "end_value", path, 1.0), name=name)
        if tag == "Sine":
            return Sine(_number(elem, "amplitude", path, 1.0), _number(elem, "omega", path, 1.0),
                        _number(elem, "phase", path, 0.0), _number(elem, "offset", path, 0.0),
                        name=name)
        if tag == "MultivariatePolynomialFunction":
            d = _number(elem, "dimension", path, 0)
            o = _number(elem, "order", path, 0)
            if d != int(d) or o != int(o):
                raise ModelFileError("<dimension> and <order> must be integers", path, _where(elem))
            c = _numbers(elem, "coefficients", path, required=False, default=np.zeros(0))
            return MultivariatePolynomialFunction(c, int(d), int(o), name=name)
        if tag == "MultiplierFunction":
            scale = _number(elem, "scale", path, 1.0)
            fe = _child(elem, "function")
            inner = None
            if fe is not None:
                inner = _inner_function_elem(fe)
            else:
                for c in _children(elem):
                    if c.tag in FUNCTION_TAGS:
                        inner = c
                        break
            if inner is None:
                raise ModelFileError("MultiplierFunction has no inner function", path,
                                     _where(elem))
            return MultiplierFunction(read_function(inner, path), scale, name=name)
    except ValueError as e:
        raise ModelFileError(str(e), path, _where(elem)) from None
    raise UnsupportedFeature(f"function type <{tag}> is not supported", path, _where(elem))


def read_function_property(parent_elem, path=None) -> Function | None:
    """Read the function held by an element such as ``<TransformAxis>`` or ``<x_location>``.

    Accepts the 4.x form (``<function><LinearFunction>..</LinearFunction></function>``), a
    function element as direct child (MovingPathPoint ``<x_location><SimmSpline>``, 3.x files,
    CoordinateCouplerConstraint ``<coupled_coordinates_function>``) and an element that is itself
    a ``<function>`` wrapper. Returns None when there is no function (absent or empty).

    Raises
    ------
    ModelFileError, UnsupportedFeature
        As :func:`read_function`.
    """
    if parent_elem is None:
        return None
    if parent_elem.tag == "function":
        inner = _inner_function_elem(parent_elem)
        return None if inner is None else read_function(inner, path)
    fe = _child(parent_elem, "function")
    if fe is not None:
        inner = _inner_function_elem(fe)
        return None if inner is None else read_function(inner, path)
    for c in _children(parent_elem):
        if c.tag in FUNCTION_TAGS:
            return read_function(c, path)
    return None


# ------------------------------------------------------------------------------------------
# Function-valued properties written inline
# ------------------------------------------------------------------------------------------
#: OpenSim properties whose value is a Function (besides the function fields of arthron's
#: registered components, added by :func:`function_property_names`).
FUNCTION_PROPERTIES = frozenset({
    "function", "x_location", "y_location", "z_location", "coupled_coordinates_function",
    "prescribed_function", "force_length_curve", "active_force_length_curve",
    "passive_force_length_curve", "tendon_force_length_curve", "force_velocity_curve",
    "damping_curve", "scale_function", "xFunction", "yFunction", "zFunction",
    "rotation_x_function", "rotation_y_function", "rotation_z_function",
    "translation_x_function", "translation_y_function", "translation_z_function",
    "forceX", "forceY", "forceZ", "pointX", "pointY", "pointZ", "torqueX", "torqueY", "torqueZ",
})


def function_property_names(*registries) -> frozenset:
    """:data:`FUNCTION_PROPERTIES` and the XML names of the ``kind="function"`` fields of the
    component dataclasses in ``registries`` (dicts name -> class)."""
    import dataclasses
    names = set(FUNCTION_PROPERTIES)
    for reg in registries:
        for cls in reg.values():
            for f in dataclasses.fields(cls):
                if f.metadata.get("kind") == "function":
                    names.add(f.metadata.get("xml", f.name))
    return frozenset(names)


def wrap_inline_function_properties(root, names=FUNCTION_PROPERTIES) -> int:
    """Rewrite, in place, every function-valued property written inline into the wrapped form.

    OpenSim reads an object-valued property in two forms: inside an element named after the
    property (``<force_length_curve><SimmSpline>..</SimmSpline></force_length_curve>``, what 4.x
    writes), or inline, as the object element whose ``name`` attribute is the property's name
    (``<SimmSpline name="force_length_curve">..</SimmSpline>``, common in 3.x files). After this
    pass every reader sees the first form only. A function element is rewritten when its
    ``name`` is one of ``names`` and its parent is not already that property's element.
    Returns the number of elements rewritten.
    """
    n = 0
    for e in list(root.iter(*FUNCTION_TAGS)):
        prop = (e.get("name") or "").strip()
        parent = e.getparent()
        if not prop or prop not in names or parent is None or parent.tag == prop:
            continue
        if any(isinstance(c.tag, str) and c.tag == prop for c in parent):
            continue  # the wrapped form is there too; OpenSim reads that one
        wrapper = etree.Element(prop)
        wrapper.tail = e.tail
        e.tail = None
        parent.replace(e, wrapper)
        wrapper.append(e)
        n += 1
    return n
