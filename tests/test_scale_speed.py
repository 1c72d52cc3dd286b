"""The ScaleTool's shortcuts give the same results as the plain way: the placed model sharing
its unchanged components with the scaled model, and ``write_osims`` copying shared elements
from the document written before (same bytes as ``write_osim`` of each model)."""
from __future__ import annotations

import copy
import warnings

import numpy as np

from conftest import GAIT_PIPE, MODELS, needs_data

from arthron.errors import ArthronWarning

SETUP = GAIT_PIPE / "subject01_Setup_Scale.xml"
DIRS = [MODELS / "Models" / "Gait2354_Simbody"]


def _generic():
    from arthron.io.osim import read_osim
    from arthron.tools.scale_tool import read_marker_set
    model = read_osim(DIRS[0] / "gait2354_simbody.osim")
    model.markers.update(read_marker_set(GAIT_PIPE / "gait2354_Scale_MarkerSet.xml", model))
    return model


@needs_data
def test_write_osims_same_bytes_as_write_osim(tmp_path):
    from arthron.io.osim import write_osim, write_osims
    a = _generic()
    b = copy.copy(a)                                 # shares bodies, joints, forces with a
    b.markers = {n: copy.deepcopy(m) for n, m in a.markers.items()}
    next(iter(b.markers.values())).location += 0.01
    c = copy.copy(a)                                 # own joints, a changed default value
    c.joints = copy.deepcopy(a.joints)
    next(iter(c.coordinates.values())).default_value = 0.25
    d = copy.copy(a)                                 # own forces, one changed
    d.forces = copy.deepcopy(a.forces)
    next(iter(d.forces.values())).path.points[0].location += 0.002
    items = [(tmp_path / f"{k}.osim", m) for k, m in zip("abcd", (a, b, c, d))]
    write_osims(items)
    for p, m in items:
        write_osim(tmp_path / f"one_{p.name}", m)
        assert p.read_bytes() == (tmp_path / f"one_{p.name}").read_bytes(), p.name
    texts = [p.read_text() for p, _ in items]
    assert len(set(texts)) == 4                       # every change is in its file


@needs_data
def test_shared_placement_equals_deep_copy():
    from arthron.io.osim import model_to_xml
    from arthron.io.trc import read_trc
    from arthron.solvers.marker_placer import place_markers
    from arthron.tools.ik_tool import read_ik_tasks
    from arthron.tools.scale_tool import read_scale_setup
    from lxml import etree
    model = _generic()
    s = read_scale_setup(SETUP, search_dirs=DIRS)
    static = read_trc(s.placer_marker_file)
    tasks = read_ik_tasks(s.ik_task_set, model, None, s.path)
    before = etree.tostring(model_to_xml(model))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ArthronWarning)
        deep, q1, e1 = place_markers(model, static, tasks, s.placer_time_range,
                                     coordinate_values={"knee_angle_r": -0.1})
        shared, q2, e2 = place_markers(model, static, tasks, s.placer_time_range,
                                       coordinate_values={"knee_angle_r": -0.1}, share=True)
    assert etree.tostring(model_to_xml(model)) == before      # the input is left unchanged
    assert np.array_equal(q1, q2) and e1 == e2
    assert etree.tostring(model_to_xml(shared)) == etree.tostring(model_to_xml(deep))
    assert shared.forces is model.forces and shared.markers is not model.markers
    assert shared.coordinates["knee_angle_r"].default_value == -0.1
    assert model.coordinates["knee_angle_r"].default_value != -0.1
