"""Write OpenSim ControlSet files (``.xml``) of piecewise-linear controls.

What OpenSim 4.6's StaticOptimization writes beside its activations as
``<name>_StaticOptimization_controls.xml``: ``ControlSet(Storage)`` of the activation storage,
one ``ControlLinear`` per column (named by the column) with one ``ControlLinearNode`` (t, value)
per recorded row, every other property at ``ControlLinear``'s defaults (``is_model_control``
true, ``extrapolate`` true, ``default_min`` 0.02, ``default_max`` 1, no filter, no steps, no
min/max nodes, ``kp`` 100, ``kv`` 20). OpenSim's ForwardTool and CMC read it as their
``controls_file``.

Numbers are written as OpenSim writes them (C ``%.17g``, which Python's ``.17g`` reproduces
digit for digit), in OpenSim's layout (tabs, one element per line). The document is built as
text, not through lxml: its layout is fixed, its only free text is the column names (escaped),
and building some 10⁴ elements through lxml costs milliseconds where a static optimization of
a small model takes about 20.
"""
from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from ..errors import DataFileError
from ..tables import Table
from .files import atomic_write, output_path

__all__ = ["control_set_text", "write_control_set"]

_HEAD = ('<?xml version="1.0" encoding="UTF-8" ?>\n<OpenSimDocument Version="40600">\n'
         '\t<ControlSet name="Control Set">\n\t\t<objects>\n')
_CONTROL = ('\t\t\t<ControlLinear name={}>\n\t\t\t\t<is_model_control>true</is_model_control>\n'
            '\t\t\t\t<extrapolate>true</extrapolate>\n\t\t\t\t<default_min>0.02</default_min>\n'
            '\t\t\t\t<default_max>1</default_max>\n\t\t\t\t<filter_on>false</filter_on>\n'
            '\t\t\t\t<use_steps>false</use_steps>\n\t\t\t\t<x_nodes>\n')
_NODE_T = '\t\t\t\t\t<ControlLinearNode>\n\t\t\t\t\t\t<t>{}</t>\n\t\t\t\t\t\t<value>'
_NODE_END = '</value>\n\t\t\t\t\t</ControlLinearNode>\n'
_CONTROL_END = ('\t\t\t\t</x_nodes>\n\t\t\t\t<min_nodes />\n\t\t\t\t<max_nodes />\n'
                '\t\t\t\t<kp>100</kp>\n\t\t\t\t<kv>20</kv>\n\t\t\t</ControlLinear>\n')
_TAIL = '\t\t</objects>\n\t\t<groups />\n\t</ControlSet>\n</OpenSimDocument>\n'


def control_set_text(table: Table) -> str:
    """The ControlSet document of ``table`` (time (T,) s, data (T, n), labels: the controls'
    names), as OpenSim 4.6's ``ControlSet(Storage)`` prints it (module docstring)."""
    heads = [_NODE_T.format(format(t, ".17g")) for t in np.asarray(table.time, float).tolist()]
    data = np.asarray(table.data, float)
    parts = [_HEAD]
    for j, name in enumerate(table.labels):
        parts.append(_CONTROL.format(quoteattr(str(name))))
        parts.extend(h + format(v, ".17g") + _NODE_END for h, v in zip(heads, data[:, j].tolist()))
        parts.append(_CONTROL_END)
    parts.append(_TAIL)
    return "".join(parts)


def write_control_set(path, table: Table) -> Path:
    """Write ``table`` as an OpenSim ControlSet file (:func:`control_set_text`) at ``path``,
    whole or not at all (:func:`arthron.io.files.atomic_write`; staged in an open
    :func:`arthron.io.files.output_group`). DataFileError naming the file for a non-finite
    value (OpenSim cannot read it back) or a time column that is not increasing."""
    path = output_path(path, "write_control_set", "table")
    t = np.asarray(table.time, float)
    d = np.asarray(table.data, float)
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(d))):
        raise DataFileError("a control value or time is not a finite number; not written", path)
    if t.size > 1 and np.any(np.diff(t) <= 0):
        raise DataFileError("control times must increase; not written", path)
    atomic_write(path, control_set_text(table))
    return path
