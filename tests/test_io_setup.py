"""arthron.io.setup: every real setup / ExternalLoads XML reads; values agree with OpenSim 4.6's
own parsing; identifiers resolve to the GRF columns as Storage does; bad input fails clearly."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from arthron.errors import ArthronWarning, DataFileError
from arthron.io.setup import (
    ExternalForce, ExternalLoads, parse_xml, read_external_loads, read_id_setup, read_tool_setup,
)
from arthron.io.sto import Table, read_sto, write_sto

from conftest import ARM26_TUT, DATA, GAIT_PIPE, HAVE_DATA, MODELS, REF, TSM_ID, needs_data, needs_opensim

XML_FILES = sorted(DATA.rglob("*.xml")) if HAVE_DATA else []
# opensim-reference/*/setups (and the pendulum JR setups) have their absolute paths replaced by
# "<workdir>" / "<opensim-models>", which is not well-formed XML until substituted.
PLACEHOLDERS = {"<workdir>": str(REF), "<opensim-models>": str(MODELS)}
GRF_XML = GAIT_PIPE / "subject01_walk1_grf.xml"
GRF_MOT = GAIT_PIPE / "subject01_walk1_grf.mot"


def _id(p: Path) -> str:
    return str(p.relative_to(DATA))


def _redacted(p: Path) -> bool:
    return b"<workdir>" in p.read_bytes() or b"<opensim-models>/" in p.read_bytes()


def _osim():
    import opensim

    opensim.Logger.setLevelString("error")
    opensim.Logger.removeFileSink()  # no opensim.log in the cwd
    return opensim


@needs_data
def test_xml_files_are_there():
    assert len(XML_FILES) >= 50
    assert sum(map(_redacted, XML_FILES)) == 20


@needs_data
@pytest.mark.parametrize("path", XML_FILES, ids=_id)
def test_every_xml_reads(path):
    if _redacted(path):
        with pytest.raises(DataFileError) as ei:
            read_tool_setup(path)
        assert path.name in str(ei.value) and "line " in str(ei.value) and "malformed XML" in str(ei.value)
        s = read_tool_setup(path, placeholders=PLACEHOLDERS)
    else:
        s = read_tool_setup(path)
    assert s.tool and s.path == path
    assert s.version is not None and s.version >= 20302
    if s.tool == "InverseDynamicsTool":
        idt = read_id_setup(path, placeholders=PLACEHOLDERS)
        assert idt.model_file.is_absolute() and idt.coordinates_file.is_absolute()
        assert idt.results_directory.is_absolute()
    if s.tool == "ExternalLoads":
        el = read_external_loads(path)
        assert el.datafile == GRF_MOT and len(el.forces) == 2
        res = el.resolve()
        assert set(res) == {f.name for f in el.forces}
    if s.tool in ("ScaleTool", "InverseKinematicsTool", "AnalyzeTool"):
        assert "model_file" in s.properties or s.tool == "ScaleTool"


@needs_data
def test_id_setup_gait_pipeline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # resolution must not depend on the cwd
    s = read_id_setup(GAIT_PIPE / "subject01_Setup_InverseDynamics.xml")
    assert s.name == "subject01_walk1" and s.version == 20302
    assert s.model_file == GAIT_PIPE / "subject01_simbody.osim"
    assert s.coordinates_file == GAIT_PIPE / "subject01_walk1_ik.mot"
    assert s.external_loads_file == GRF_XML
    assert s.lowpass_cutoff_frequency_for_coordinates == 6.0 and s.filtered
    assert s.time_range == (0.4, 1.6)
    assert s.forces_to_exclude == ["Muscles"]
    assert s.results_directory == GAIT_PIPE / "ResultsInverseDynamics"
    assert s.output_gen_force_file == GAIT_PIPE / "ResultsInverseDynamics" / "inverse_dynamics.sto"
    assert s.coordinates_in_degrees is None
    assert s.other == {"input_directory": ""}


@needs_data
def test_id_setup_arm26_and_tsm():
    d = ARM26_TUT / "OutputReference" / "InverseDynamics"
    s = read_id_setup(d / "arm26_Setup_InverseDynamics.xml")
    assert s.coordinates_in_degrees is True  # pre-4.0 tag, kept for information
    assert s.external_loads_file is None
    assert s.output_gen_force_file == d / "FilteredResults" / "arm26_InverseDynamics.sto"
    assert s.output_gen_force_file.exists()
    t = read_id_setup(TSM_ID / "ThorascapularShoulderModel_ID_static.xml")
    assert t.version == 40000
    assert t.lowpass_cutoff_frequency_for_coordinates == -1 and not t.filtered
    assert t.time_range == (0.01, 0.06) and t.external_loads_file is None
    assert t.coordinates_file == TSM_ID / "ThorascapularShoulderModel_static.mot" and t.coordinates_file.exists()
    assert t.results_directory == TSM_ID  # empty -> the setup's folder
    assert t.joints_to_report_body_forces == [] and t.output_body_forces_file is None


@needs_data
def test_id_setup_redacted_reference_with_placeholders():
    s = read_id_setup(REF / "task2_gait2354" / "setups" / "id_setup_C_refModel_refIK.xml", placeholders=PLACEHOLDERS)
    assert s.model_file == GAIT_PIPE / "OutputReference" / "subject01_simbody.osim"
    assert s.coordinates_file == GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot"
    assert s.model_file.exists() and s.coordinates_file.exists()


@needs_opensim
@needs_data
@pytest.mark.parametrize("path", [GAIT_PIPE / "subject01_Setup_InverseDynamics.xml",
                                  ARM26_TUT / "OutputReference" / "InverseDynamics" / "arm26_Setup_InverseDynamics.xml",
                                  TSM_ID / "ThorascapularShoulderModel_ID_static.xml"], ids=lambda p: p.name)
def test_id_setup_agrees_with_opensim(path):
    osim = _osim()
    tool = osim.InverseDynamicsTool(str(path), False)
    s = read_id_setup(path)
    folder = path.parent
    assert s.name == tool.getName()
    assert s.model_file == folder / tool.getModelFileName()
    assert s.coordinates_file == folder / tool.getCoordinatesFileName()
    ext = tool.getExternalLoadsFileName().strip()
    assert s.external_loads_file == ((folder / ext) if ext and ext != "Unassigned" else None)
    assert s.lowpass_cutoff_frequency_for_coordinates == tool.getLowpassCutoffFrequency()
    assert s.time_range == (tool.getStartTime(), tool.getEndTime())
    assert s.results_directory == (folder / tool.getResultsDir()).absolute()
    assert s.output_gen_force_file.name == tool.getOutputGenForceFileName()
    excl = tool.getPropertyByName("forces_to_exclude").toString().strip("()").split()
    assert s.forces_to_exclude == excl


@needs_data
def test_external_loads_gait():
    el = read_external_loads(GRF_XML)
    assert el.name == "Ex2" and el.version == 20302 and el.datafile == GRF_MOT
    r, l = el.forces
    assert (r.name, r.applied_to_body, r.force_expressed_in_body, r.point_expressed_in_body) == (
        "right", "calcn_r", "ground", "ground")
    assert (r.force_identifier, r.point_identifier, r.torque_identifier) == (
        "ground_force_v", "ground_force_p", "ground_torque_")
    assert (l.force_identifier, l.point_identifier, l.torque_identifier) == (
        "1_ground_force_v", "1_ground_force_p", "1_ground_torque_")
    assert r.data_source_name == "Unassigned" and r.enabled and r.applies_force and r.specifies_point
    assert el.force("left") is l
    # forces_grf.xml: same loads, with a <defaults> block of other classes that must be ignored
    el2 = read_external_loads(GAIT_PIPE / "forces_grf.xml")
    assert [f.name for f in el2.forces] == ["Right", "Left"]
    assert [f.applied_to_body for f in el2.forces] == ["calcn_r", "calcn_l"]


@needs_data
def test_external_loads_resolve_matches_columns():
    el = read_external_loads(GRF_XML)
    table = read_sto(GRF_MOT)
    res = el.resolve(table)
    r, l = res["right"], res["left"]
    assert r.columns == {"force": ["ground_force_vx", "ground_force_vy", "ground_force_vz"],
                         "point": ["ground_force_px", "ground_force_py", "ground_force_pz"],
                         "torque": ["ground_torque_x", "ground_torque_y", "ground_torque_z"]}
    assert l.columns["force"] == ["1_ground_force_vx", "1_ground_force_vy", "1_ground_force_vz"]
    assert l.columns["torque"] == ["1_ground_torque_x", "1_ground_torque_y", "1_ground_torque_z"]
    for res_f in (r, l):
        for kind in ("force", "point", "torque"):
            arr = getattr(res_f, kind)
            assert arr.shape == (1501, 3)
            np.testing.assert_array_equal(arr, np.column_stack([table.column(c) for c in res_f.columns[kind]]))
    np.testing.assert_array_equal(r.time, table.time)
    # spot values from the file's first row: right vy 745.4661142 N, left px 0.81009656 m
    assert r.force[0, 1] == 745.4661142 and l.point[0, 0] == 0.81009656
    # the vertical GRF is positive during stance (sanity: a walking trial)
    assert r.force[:, 1].max() > 500 and l.force[:, 1].max() > 500
    res2 = el.resolve()  # default: reads the datafile
    np.testing.assert_array_equal(res2["left"].torque, l.torque)


@needs_opensim
@needs_data
def test_external_loads_agree_with_opensim():
    osim = _osim()
    ours = read_external_loads(GRF_XML)
    theirs = osim.ExternalLoads(str(GRF_XML), True)
    assert theirs.getSize() == len(ours.forces)
    assert (GRF_XML.parent / theirs.getDataFileName()) == ours.datafile
    storage = osim.Storage(str(GRF_MOT))
    table = read_sto(GRF_MOT)
    res = ours.resolve(table)
    for i, f in enumerate(ours.forces):
        o = theirs.get(i)
        assert (f.name, f.applied_to_body, f.force_expressed_in_body, f.point_expressed_in_body) == (
            o.getName(), o.getAppliedToBodyName(), o.getForceExpressedInBodyName(), o.getPointExpressedInBodyName())
        assert (f.force_identifier, f.point_identifier, f.torque_identifier) == (
            o.getForceIdentifier(), o.getPointIdentifier(), o.getTorqueIdentifier())
        assert f.enabled == o.get_appliesForce()
        for kind, ident in (("force", f.force_identifier), ("point", f.point_identifier),
                            ("torque", f.torque_identifier)):
            idx = storage.getColumnIndicesForIdentifier(ident)
            osim_cols = [idx.get(k) for k in range(idx.getSize())]  # index 0 = time
            assert osim_cols == [table.labels.index(c) + 1 for c in res[f.name].columns[kind]]


# ------------------------------------------------------------------------------------------------
# synthetic files: old formats, bad input
# ------------------------------------------------------------------------------------------------
def _loads_xml(tmp_path, forces_xml, datafile="grf.mot", version="30000", name="loads.xml"):
    p = tmp_path / name
    p.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n<OpenSimDocument Version="{version}">\n'
                 f'<ExternalLoads name="x">\n<objects>\n{forces_xml}\n</objects>\n<groups/>\n'
                 f'<datafile>{datafile}</datafile>\n</ExternalLoads>\n</OpenSimDocument>\n')
    return p


def _grf_table(tmp_path, labels=("f_vx", "f_vy", "f_vz", "f_px", "f_py", "f_pz", "t_x", "t_y", "t_z")):
    t = Table(name="grf", time=np.array([0.0, 0.01, 0.02]), labels=list(labels),
              data=np.arange(3 * len(labels), dtype=float).reshape(3, len(labels)))
    write_sto(tmp_path / "grf.mot", t)
    return read_sto(tmp_path / "grf.mot")


EF = ("<ExternalForce name='{name}'><appliesForce>{on}</appliesForce><applied_to_body>calcn_r</applied_to_body>"
      "<force_expressed_in_body>ground</force_expressed_in_body><point_expressed_in_body>ground</point_expressed_in_body>"
      "<force_identifier>{f}</force_identifier><point_identifier>{p}</point_identifier>"
      "<torque_identifier>{t}</torque_identifier></ExternalForce>")


def test_external_loads_4x_format_and_disabled(tmp_path):
    table = _grf_table(tmp_path)
    xml = (EF.format(name="a", on="true", f="f_v", p="f_p", t="t_") + EF.format(name="b", on="false", f="f_v", p="", t="")
           + EF.format(name="c", on="true", f="", p="Unassigned", t="t_"))
    el = read_external_loads(_loads_xml(tmp_path, xml, version="40000"))
    assert [f.enabled for f in el.forces] == [True, False, True]
    res = el.resolve(table)
    assert set(res) == {"a", "c"}  # disabled forces are not applied
    np.testing.assert_array_equal(res["a"].force, table.data[:, 0:3])
    np.testing.assert_array_equal(res["a"].torque, table.data[:, 6:9])
    assert res["c"].force is None and res["c"].point is None
    np.testing.assert_array_equal(res["c"].torque, table.data[:, 6:9])


def test_external_loads_missing_columns_name_the_identifier(tmp_path):
    table = _grf_table(tmp_path, labels=("f_vx", "f_vy", "f_px", "f_py", "f_pz"))
    el = read_external_loads(_loads_xml(tmp_path, EF.format(name="a", on="true", f="f_v", p="f_p", t="")))
    with pytest.raises(DataFileError) as ei:
        el.resolve(table)
    msg = str(ei.value)
    assert "force_identifier 'f_v'" in msg and "found 2 (f_vx, f_vy)" in msg and "grf.mot" in msg
    assert "ExternalForce 'a'" in msg
    el = read_external_loads(_loads_xml(tmp_path, EF.format(name="a", on="true", f="f_p", p="zz_", t="")))
    with pytest.raises(DataFileError, match="point_identifier 'zz_'.*found 0 \\(none\\)"):
        el.resolve(table)


def test_external_loads_bad_xml(tmp_path):
    p = tmp_path / "broken.xml"
    p.write_text('<?xml version="1.0"?>\n<OpenSimDocument Version="30000">\n<ExternalLoads>\n'
                 '<objects><ExternalForce name="a">\n<applied_to_body>x</applied_to_body>\n</objects>\n'
                 '</ExternalLoads></OpenSimDocument>\n')
    with pytest.raises(DataFileError) as ei:
        read_external_loads(p)
    assert "broken.xml" in str(ei.value) and "line 6" in str(ei.value)
    q = _loads_xml(tmp_path, "<ExternalForce name='n'><applied_to_body>calcn_r</applied_to_body></ExternalForce>")
    with pytest.raises(DataFileError, match="neither a force nor a torque") as ei:
        read_external_loads(q)
    assert "ExternalForce name='n'" in str(ei.value) and "line 5" in str(ei.value)
    r = _loads_xml(tmp_path, "<ExternalForce name='n'><force_identifier>f_v</force_identifier></ExternalForce>")
    with pytest.raises(DataFileError, match="applied_to_body"):
        read_external_loads(r)
    with pytest.raises(DataFileError, match="expected <ExternalLoads>"):
        read_external_loads(GAIT_PIPE / "subject01_Setup_IK.xml" if HAVE_DATA else q.with_name("x"))
    with pytest.raises(DataFileError, match="does not exist"):
        read_external_loads(tmp_path / "nope.xml")


def test_external_loads_pre_20301_prescribed_force(tmp_path):
    table = _grf_table(tmp_path)
    old = ("<PrescribedForce name='right'><isDisabled>false</isDisabled><body>calcn_r</body>"
           "<FunctionSet name='forceFunctions'><objects><Constant name='f_vx'/><Constant name='f_vy'/>"
           "<Constant name='f_vz'/></objects></FunctionSet>"
           "<FunctionSet name='pointFunctions'><objects><Constant name='#4'/><Constant name='#5'/>"
           "<Constant name='#6'/></objects></FunctionSet></PrescribedForce>")
    with pytest.warns(ArthronWarning, match="external_loads_model_kinematics_file"):
        p = tmp_path / "old.xml"
        p.write_text('<OpenSimDocument Version="20300"><ExternalLoads><objects>' + old + "</objects>"
                     "<datafile>grf.mot</datafile><external_loads_model_kinematics_file>ik.mot"
                     "</external_loads_model_kinematics_file></ExternalLoads></OpenSimDocument>")
        el = read_external_loads(p)
    (f,) = el.forces
    assert (f.applied_to_body, f.force_identifier, f.point_identifier, f.torque_identifier) == (
        "calcn_r", "f_v", "f_p", "")
    assert f.force_expressed_in_body == "ground" and f.point_expressed_in_body == "ground"
    res = el.resolve(table)["right"]
    np.testing.assert_array_equal(res.point, table.data[:, 3:6])


def test_tool_setup_generic_and_errors(tmp_path):
    p = tmp_path / "ik.xml"
    p.write_text('<OpenSimDocument Version="40000"><InverseKinematicsTool name="ik">'
                 "<model_file>m.osim</model_file><marker_file>../t.trc</marker_file>"
                 "<time_range>0 1</time_range><IKTaskSet><objects/></IKTaskSet><empty/>"
                 "</InverseKinematicsTool></OpenSimDocument>")
    s = read_tool_setup(p)
    assert s.tool == "InverseKinematicsTool" and s.name == "ik" and s.version == 40000
    assert s.properties == {"model_file": "m.osim", "marker_file": "../t.trc", "time_range": "0 1", "empty": ""}
    assert s.resolve(s.get("marker_file")) == (tmp_path / ".." / "t.trc").absolute()
    assert s.resolve("") is None and s.resolve("Unassigned") is None
    assert s.element.find("IKTaskSet") is not None
    with pytest.raises(DataFileError, match="expected an InverseDynamicsTool"):
        read_id_setup(p)
    q = tmp_path / "id.xml"
    q.write_text('<OpenSimDocument Version="40000"><InverseDynamicsTool>\n<time_range>0</time_range>\n'
                 "</InverseDynamicsTool></OpenSimDocument>")
    with pytest.raises(DataFileError) as ei:
        read_id_setup(q)
    assert "two numbers" in str(ei.value) and "line 2" in str(ei.value) and "id.xml" in str(ei.value)
    q.write_text('<OpenSimDocument Version="40000"><InverseDynamicsTool>\n'
                 "<lowpass_cutoff_frequency_for_coordinates>six</lowpass_cutoff_frequency_for_coordinates>\n"
                 "</InverseDynamicsTool></OpenSimDocument>")
    with pytest.raises(DataFileError, match="'six' is not a number"):
        read_id_setup(q)
    q.write_text('<OpenSimDocument Version="40000"><InverseDynamicsTool name="d"/></OpenSimDocument>')
    d = read_id_setup(q)  # all defaults
    assert d.time_range == (-math.inf, math.inf) and d.lowpass_cutoff_frequency_for_coordinates == -1
    assert d.model_file is None and d.output_gen_force_file is None and d.forces_to_exclude == []


def test_parse_xml_accepts_double_colon_names(tmp_path):
    p = tmp_path / "hc.osim"
    p.write_text('<OpenSimDocument Version="30000"><Model><HuntCrossleyForce name="c">'
                 "<HuntCrossleyForce::ContactParametersSet><objects><HuntCrossleyForce::ContactParameters>"
                 "<stiffness>1e8</stiffness></HuntCrossleyForce::ContactParameters></objects>"
                 "</HuntCrossleyForce::ContactParametersSet></HuntCrossleyForce></Model></OpenSimDocument>")
    root = parse_xml(p)  # strict lxml rejects these names (namespace error): recovered, nothing lost
    found = [e for e in root.iter() if e.tag == "HuntCrossleyForce::ContactParameters"]
    assert len(found) == 1 and found[0][0].tag == "stiffness" and found[0][0].text == "1e8"
    # a real syntax error in the same file is still an error, with its line
    p.write_text(p.read_text().replace("</stiffness>", "</stifness>").replace("><objects>", ">\n<objects>"))
    with pytest.raises(DataFileError) as ei:
        parse_xml(p)
    assert "hc.osim" in str(ei.value) and "line 2" in str(ei.value)


# ------------------------------------------------------------ the tools' one file resolver
def test_setup_file_resolver(tmp_path):
    from arthron.tools.setup_files import (find_setup_file, output_file, require_setup_file,
                                           results_directory)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "m.osim").write_text("x")
    (tmp_path / "elsewhere" / "deep").mkdir(parents=True)
    (tmp_path / "elsewhere" / "deep" / "t.trc").write_text("x")
    setup = tmp_path / "s.xml"
    setup.write_text("""<OpenSimDocument Version="40000"><InverseKinematicsTool name="ik">
      <model_file>data/m.osim</model_file><marker_file>C:\\\\lab\\\\t.trc</marker_file>
      <coordinate_file>Unassigned</coordinate_file><results_directory>res/a</results_directory>
      <output_motion_file>out.mot</output_motion_file><other_file>nope.sto</other_file>
    </InverseKinematicsTool></OpenSimDocument>""")
    st = read_tool_setup(setup)
    assert find_setup_file(st, st.get("model_file")) == tmp_path / "data" / "m.osim"
    assert find_setup_file(st, st.get("coordinate_file")) is None
    # a path of another machine: found by its file name in the search folders (recursively)
    assert find_setup_file(st, st.get("marker_file"), [tmp_path / "elsewhere"]) == \
        tmp_path / "elsewhere" / "deep" / "t.trc"
    with pytest.raises(DataFileError, match="other_file.*nope.sto"):
        require_setup_file(st, "other_file")
    with pytest.raises(DataFileError, match="<states_file>"):
        require_setup_file(st, "states_file")
    d = results_directory(st, create=False)
    assert d == tmp_path / "res" / "a" and not d.exists()
    assert output_file(st, st.get("output_motion_file")) == tmp_path / "res" / "a" / "out.mot"
    assert d.is_dir()      # created, as OpenSim's tools do
