"""arthron.models.functions against OpenSim 4.6's own Function classes."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from arthron.errors import ModelFileError, UnsupportedFeature
from arthron.models import functions as F
from arthron.io.osim_functions import function_to_xml, read_function, read_function_property
from conftest import GAIT2354, needs_data, needs_opensim

TOL = 1e-10


def _close(a, b, tol=TOL):
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    err = np.abs(a - b) / np.maximum(1.0, np.abs(b))
    return float(err.max()) if err.size else 0.0


def _points(x=None, lo=-2.0, hi=2.0):
    pts = [np.linspace(lo, hi, 157)]
    if x is not None:
        x = np.asarray(x, float)
        span = x[-1] - x[0]
        pts += [np.linspace(x[0] - 0.5 * span, x[-1] + 0.5 * span, 211), x, x + 1e-14, x - 1e-14,
                x + 1e-9, x - 1e-9, 0.5 * (x[1:] + x[:-1])]
    return np.concatenate(pts)


# --- OpenSim side --------------------------------------------------------------------------

def _osim_eval(f, ts, order):
    import opensim as osim
    out = np.empty(len(ts))
    comps = osim.StdVectorInt([0] * order)
    for i, t in enumerate(ts):
        v = osim.Vector(1, float(t))
        out[i] = f.calcValue(v) if order == 0 else f.calcDerivative(comps, v)
    return out


def _osim_xy(cls, x, y):
    import opensim as osim
    f = getattr(osim, cls)()
    for a, b in zip(x, y):
        f.addPoint(float(a), float(b))
    return f


def _osim_from_text(xml_text, tmp_dir):
    """Load a function element (XML text) with OpenSim's own deserializer."""
    import opensim as osim
    p = Path(tmp_dir) / f"f_{abs(hash(xml_text))}.xml"
    p.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<OpenSimDocument Version="40000">'
                 + xml_text + "</OpenSimDocument>")
    obj = osim.OpenSimObject.makeObjectFromFile(str(p))
    f = osim.Function.safeDownCast(obj)
    f._keep = obj  # keep the owner alive
    return f


def _osim_from_xml(elem, tmp_path):
    """Load an arthron-written element with OpenSim's own deserializer."""
    return _osim_from_text(etree.tostring(elem).decode(), tmp_path)


def _osim_multiplier(inner_xml, scale):
    # opensim.MultiplierFunction(f, s) from Python keeps a dangling pointer to f (segfault in
    # 4.6), so the OpenSim object is built from hand-written 4.x XML instead.
    return _osim_from_text(f"<MultiplierFunction><function>{inner_xml}</function>"
                           f"<scale>{scale!r}</scale></MultiplierFunction>", tempfile.mkdtemp())


RNG = np.random.default_rng(7)
XK = np.array([-1.2, -0.7, -0.1, 0.05, 0.4, 0.9, 1.3, 1.35, 1.8])
YK = np.sin(2 * XK) + 0.3 * XK ** 2


def _cases():
    """(id, arthron function, builder of the equivalent opensim function, knots)."""
    import opensim as osim
    x4 = np.array([0.0, 0.3, 0.8, 1.0])
    gx = np.linspace(0.0, 1.0, 15) + np.r_[0, RNG.uniform(-0.02, 0.02, 13), 0]
    gy = np.cumsum(RNG.standard_normal(15))
    cases = [
        ("Constant", F.Constant(2.5), lambda: osim.Constant(2.5), None),
        ("LinearFunction", F.LinearFunction(-1.7, 0.3), lambda: osim.LinearFunction(-1.7, 0.3),
         None),
        ("PolynomialFunction", F.PolynomialFunction([0.5, -1.0, 2.0, 3.0]),
         lambda: osim.PolynomialFunction(osim.Vector([0.5, -1.0, 2.0, 3.0])), None),
        ("SimmSpline", F.SimmSpline(XK, YK), lambda: _osim_xy("SimmSpline", XK, YK), XK),
        ("SimmSpline2", F.SimmSpline(XK[:2], YK[:2]),
         lambda: _osim_xy("SimmSpline", XK[:2], YK[:2]), XK[:2]),
        ("SimmSpline3", F.SimmSpline(XK[:3], YK[:3]),
         lambda: _osim_xy("SimmSpline", XK[:3], YK[:3]), XK[:3]),
        ("SimmSpline4", F.SimmSpline(x4, [0, 1, -1, 2]),
         lambda: _osim_xy("SimmSpline", x4, [0, 1, -1, 2]), x4),
        ("PiecewiseLinearFunction", F.PiecewiseLinearFunction(XK, YK),
         lambda: _osim_xy("PiecewiseLinearFunction", XK, YK), XK),
        ("PiecewiseConstantFunction", F.PiecewiseConstantFunction(XK, YK),
         lambda: _osim_xy("PiecewiseConstantFunction", XK, YK), XK),
        ("StepFunction", F.StepFunction(0.2, 1.1, -0.5, 2.0),
         lambda: osim.StepFunction(0.2, 1.1, -0.5, 2.0), np.array([0.2, 1.1])),
        ("Sine", F.Sine(1.3, 2.2, 0.4, -0.1), lambda: osim.Sine(1.3, 2.2, 0.4, -0.1), None),
        ("MultiplierFunction", F.MultiplierFunction(F.SimmSpline(XK, YK), 1.147),
         lambda: _osim_multiplier("<SimmSpline><x>%s</x><y>%s</y></SimmSpline>"
                                  % (" ".join(map(repr, XK.tolist())),
                                     " ".join(map(repr, YK.tolist()))), 1.147),
         XK),
        ("MultiplierConstant", F.MultiplierFunction(F.Constant(0.02), 0.98),
         lambda: _osim_multiplier("<Constant><value>0.02</value></Constant>", 0.98), None),
    ]
    for deg in (5, 3, 7, 1):
        def build(deg=deg):
            g = osim.GCVSpline()
            g.setDegree(deg)
            for a, b in zip(gx, gy):
                g.addPoint(float(a), float(b))
            return g
        cases.append((f"GCVSpline{deg}", F.GCVSpline(deg, gx, gy), build, gx))
    return cases


CASE_IDS = ["Constant", "LinearFunction", "PolynomialFunction", "SimmSpline", "SimmSpline2",
            "SimmSpline3", "SimmSpline4", "PiecewiseLinearFunction", "PiecewiseConstantFunction",
            "StepFunction", "Sine", "MultiplierFunction", "MultiplierConstant", "GCVSpline5",
            "GCVSpline3", "GCVSpline7", "GCVSpline1"]


@needs_opensim
@pytest.mark.parametrize("case_id", CASE_IDS)
def test_matches_opensim_api(case_id):
    """Value, 1st and 2nd derivative equal opensim.<Class>.calcValue/calcDerivative (1e-10)."""
    case = {c[0]: c for c in _cases()}[case_id]
    _, ours, build, knots = case
    theirs = build()
    ts = _points(knots)
    for order in (0, 1, 2):
        mine = ours.value(ts) if order == 0 else ours.derivative(ts, order)
        ref = _osim_eval(theirs, ts, order)
        assert _close(mine, ref) < TOL, (case_id, order, _close(mine, ref))


@needs_opensim
@pytest.mark.parametrize("case_id", CASE_IDS)
def test_to_xml_loads_in_opensim(case_id, tmp_path):
    """What to_xml writes is read by OpenSim 4.6 as the same function, and read back by us."""
    _, ours, _, knots = {c[0]: c for c in _cases()}[case_id]
    ts = _points(knots)
    theirs = _osim_from_xml(function_to_xml(ours), tmp_path)
    back = read_function(etree.fromstring(etree.tostring(function_to_xml(ours))))
    assert type(back) is type(ours)
    for order in (0, 1, 2):
        mine = ours.value(ts) if order == 0 else ours.derivative(ts, order)
        ref = _osim_eval(theirs, ts, order)
        assert _close(mine, ref) < TOL, (case_id, order)
        again = back.value(ts) if order == 0 else back.derivative(ts, order)
        np.testing.assert_array_equal(again, mine)


@needs_opensim
def test_natural_cubic_spline_is_simm_spline_in_opensim(tmp_path):
    """4.6 loads <NaturalCubicSpline> as a SimmSpline; ours evaluates identically."""
    ours = F.NaturalCubicSpline(XK, YK)
    theirs = _osim_from_xml(function_to_xml(ours), tmp_path)
    assert theirs.getConcreteClassName() == "SimmSpline"
    ts = _points(XK)
    for order in (0, 1, 2):
        mine = ours.value(ts) if order == 0 else ours.derivative(ts, order)
        assert _close(mine, _osim_eval(theirs, ts, order)) < TOL


def test_shapes_and_scalars():
    f = F.SimmSpline(XK, YK)
    assert f.value(0.3).shape == ()
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    for g in (f, F.Constant(1.0), F.LinearFunction(2, 1), F.GCVSpline(5, XK, YK),
              F.MultiplierFunction(f, 2.0), F.PiecewiseConstantFunction(XK, YK)):
        assert g.value(x).shape == (3, 4)
        assert g.derivative(x, 1).shape == (3, 4)
        assert g.derivative(x, 2).shape == (3, 4)
    with pytest.raises(ValueError):
        f.derivative(0.0, 3)


def test_gcvspline_interpolates_and_extrapolates_quadratically():
    x = np.linspace(0, 1, 12)
    y = np.cos(3 * x)
    g = F.GCVSpline(5, x, y)
    np.testing.assert_allclose(g.value(x), y, atol=1e-13)
    # beyond the knots a quintic natural spline is a quadratic
    t = np.array([1.1, 1.2, 1.3])
    d2 = g.derivative(t, 2)
    assert np.ptp(d2) < 1e-12
    with pytest.raises(UnsupportedFeature):
        F.GCVSpline(5, x, y, error_variance=0.1)


# --- real model splines --------------------------------------------------------------------

@needs_data
@needs_opensim
def test_gait2354_simmsplines_match_opensim():
    """Every SimmSpline in gait2354_simbody.osim (knee translations, patella, moving path points)
    evaluates as opensim.SimmSpline over its range and 30 % beyond."""
    tree = etree.parse(str(GAIT2354))
    elems = tree.getroot().iter("SimmSpline")
    n = 0
    worst = 0.0
    for e in elems:
        f = read_function(e, GAIT2354)
        theirs = _osim_xy("SimmSpline", f.x, f.y)
        span = f.x[-1] - f.x[0]
        ts = np.concatenate([np.linspace(f.x[0] - 0.3 * span, f.x[-1] + 0.3 * span, 301), f.x])
        for order in (0, 1, 2):
            mine = f.value(ts) if order == 0 else f.derivative(ts, order)
            worst = max(worst, _close(mine, _osim_eval(theirs, ts, order)))
        n += 1
    assert n >= 10
    assert worst < TOL


@needs_data
def test_gait2354_knee_axes_read_as_4x_properties():
    tree = etree.parse(str(GAIT2354))
    knee = [j for j in tree.getroot().iter("CustomJoint") if j.get("name") == "knee_r"][0]
    axes = {a.get("name"): read_function_property(a, GAIT2354)
            for a in knee.iter("TransformAxis")}
    assert isinstance(axes["rotation1"], F.LinearFunction)
    assert axes["rotation3"].is_constant
    assert isinstance(axes["translation1"], F.SimmSpline)
    assert isinstance(axes["translation2"], F.SimmSpline)
    assert axes["translation3"].is_constant


# --- XML forms and errors ------------------------------------------------------------------

def _x(s):
    return etree.fromstring(s)


def test_read_function_property_forms():
    four = _x("<TransformAxis name='t1'><function><LinearFunction name='f'><coefficients>2 1"
              "</coefficients></LinearFunction></function></TransformAxis>")
    f = read_function_property(four)
    assert isinstance(f, F.LinearFunction) and f.name == "f" and f.value(1.0) == 3.0
    three = _x("<TransformAxis><function><natCubicSpline><x>0 1 2</x><y>0 1 0</y>"
               "</natCubicSpline></function></TransformAxis>")
    assert isinstance(read_function_property(three), F.NaturalCubicSpline)
    direct = _x("<x_location><SimmSpline><x>0 1 2</x><y>0 1 0</y></SimmSpline></x_location>")
    assert isinstance(read_function_property(direct), F.SimmSpline)
    mult = _x("<x_location><MultiplierFunction><function><SimmSpline><x>0 1 2</x><y>0 1 0</y>"
              "</SimmSpline></function><scale>0.5</scale></MultiplierFunction></x_location>")
    m = read_function_property(mult)
    assert isinstance(m, F.MultiplierFunction) and m.value(1.0) == 0.5
    assert read_function_property(_x("<TransformAxis><function/></TransformAxis>")) is None
    assert read_function_property(_x("<TransformAxis><axis>1 0 0</axis></TransformAxis>")) is None
    wrapped = _x("<function><Constant><value>0.3</value></Constant></function>")
    assert read_function(wrapped).value(5.0) == 0.3


def test_scale_function():
    s = F.SimmSpline([0, 1, 2], [0, 1, 0])
    m = F.scale_function(s, 1.2)
    assert isinstance(m, F.MultiplierFunction) and m.function is s and m.scale == 1.2
    m2 = F.scale_function(m, 0.5)
    assert m2.function is s and m2.scale == pytest.approx(0.6) and m.scale == 1.2
    xml = etree.tostring(function_to_xml(m2)).decode()
    assert xml.startswith("<MultiplierFunction><function><SimmSpline>")
    assert "<scale>0.6" in xml


def test_bad_input_names_file_and_line():
    doc = _x("<root>\n<SimmSpline name='bad'>\n<x>0 1 two</x><y>0 1 2</y></SimmSpline></root>")
    with pytest.raises(ModelFileError) as ei:
        read_function(doc[0], "model.osim")
    assert "model.osim" in str(ei.value) and "line" in str(ei.value) and "<x>" in str(ei.value)
    with pytest.raises(ModelFileError, match="3 values but <y> has 2"):
        read_function(_x("<SimmSpline><x>0 1 2</x><y>0 1</y></SimmSpline>"), "m.osim")
    with pytest.raises(ModelFileError, match="at least 2"):
        read_function(_x("<SimmSpline><x>0</x><y>1</y></SimmSpline>"), "m.osim")
    with pytest.raises(ModelFileError, match="LinearFunction"):
        read_function(_x("<LinearFunction><coefficients>1</coefficients></LinearFunction>"))
    with pytest.raises(UnsupportedFeature, match="ExpressionBasedFunction"):
        read_function(_x("<ExpressionBasedFunction><expression>x</expression>"
                           "</ExpressionBasedFunction>"), "m.osim")
    with pytest.raises(ModelFileError, match="no inner function"):
        read_function(_x("<MultiplierFunction><scale>2</scale></MultiplierFunction>"))


@pytest.mark.parametrize("m, n", [(2, 4), (2, 137), (2, 3000), (3, 6), (3, 137), (3, 3000)])
def test_numpy_natural_splines_equal_scipys(m, n, monkeypatch):
    """The numpy natural cubic (Thomas) and quintic (dense Hermite) splines that spare a
    command the scipy.interpolate import (issue 11 finding 15) against scipy's
    ``make_interp_spline`` with the same end conditions: values and derivatives inside and
    beyond the knots, uniform and non-uniform knots."""
    import arthron.models.natural_splines as fn
    from arthron import runtime
    rng = np.random.default_rng(n)
    for x in (0.4 + 0.01 * np.arange(n), np.cumsum(rng.uniform(0.5, 1.5, n)) * 0.01):
        y = np.cumsum(rng.standard_normal((n, 3)), axis=0)
        monkeypatch.setattr(runtime, "light_imports", True)
        ours = fn._NaturalSpline(x, y, m)
        assert ours.spline is None                     # the numpy route was taken
        monkeypatch.setattr(fn, "_QUINTIC_DENSE_MAX", 0)
        monkeypatch.setattr(fn, "_CUBIC_THOMAS_MAX", 0)
        ref = fn._NaturalSpline(x, y, m)
        monkeypatch.undo()
        q = np.concatenate([x, np.sort(rng.uniform(x[0] - 0.02, x[-1] + 0.02, 300))])
        for order in range(m):
            a, b = ours(q, order), ref(q, order)
            assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max(), (order, np.abs(a - b).max())


@pytest.mark.parametrize("m", [2, 3])
def test_numpy_natural_splines_at_their_knots_equal_horner(m, monkeypatch):
    """Evaluated at the knots (the tools' solve times), the numpy splines return the knot data,
    bit for bit what their Horner evaluation gives there (u = 0), for values, first and second
    derivatives."""
    import arthron.models.natural_splines as fn
    from arthron import runtime
    rng = np.random.default_rng(m)
    x = np.cumsum(rng.uniform(0.5, 1.5, 300)) * 0.01
    y = np.cumsum(rng.standard_normal((300, 4)), axis=0)
    monkeypatch.setattr(runtime, "light_imports", True)
    sp = fn._NaturalSpline(x, y, m)._quintic
    for order in range(3):
        fast = sp(x[:-1], order)
        near = sp(np.concatenate([x[:-1], [x[0] + 1e-9]]), order)[:-1]   # not all at knots: Horner
        assert np.array_equal(fast, near), order
