"""Mutation fuzzing of arthron's readers on real files (shared by tests/test_fuzz.py and
benchmarks/fuzz_readers.py).

A case is one mutation of one real file (a number replaced by an absurd value, an element
deleted, duplicated or given bad text, an attribute changed, bytes deleted or inserted, the file
truncated), written into a temporary folder and handed to a reader and, for models, to every
compile step. The only acceptable outcomes are a result or a typed :class:`ArthronError`; any
other exception is a finding. Typed messages must not show ``np.float64(...)``.
"""
from __future__ import annotations

import copy
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from arthron.errors import ArthronError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
M = DATA / "opensim-models"
PIPE = M / "Pipelines" / "Gait2354_Simbody"

BAD_VALUES = ("nan", "NaN", "inf", "-inf", "1e300", "-1e300", "1,5", "0,5 1", "", "abc", "1e20",
              "99999999999", "-1", "0", "1 kg", "0x10", "1e-320", " ", "1 2 3", "true",
              "Unassigned", "-0", "4.0", "1e-9", "-99999999999")
XML_KINDS = ("num", "elem_delete", "elem_text", "elem_dup", "attr", "bytes_delete", "bytes_insert",
             "truncate")
TEXT_KINDS = ("num", "line_delete", "line_dup", "cell", "bytes_delete", "bytes_insert", "truncate")
_NUM = re.compile(rb"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Mutation:
    kind: str
    index: int
    value: str
    blob: bytes = b""


def mutate(base: bytes, m: Mutation, xml: bool) -> bytes:
    """The mutated bytes of ``base`` (deterministic in ``m``)."""
    k = m.index
    val = m.value.encode()
    if m.kind == "num":
        hits = list(_NUM.finditer(base))
        if not hits:
            return base
        h = hits[k % len(hits)]
        return base[:h.start()] + val + base[h.end():]
    if m.kind == "bytes_delete":
        i = k % max(len(base), 1)
        return base[:i] + base[i + 1 + (k // 7) % 16:]
    if m.kind == "bytes_insert":
        i = k % max(len(base), 1)
        return base[:i] + m.blob + base[i:]
    if m.kind == "truncate":
        return base[:k % max(len(base), 1)]
    if xml:
        root = etree.fromstring(base, etree.XMLParser(recover=True, remove_blank_text=False))
        if root is None:
            return base
        elems = [e for e in root.iter() if isinstance(e.tag, str)]
        e = elems[k % len(elems)]
        if m.kind == "elem_delete" and e.getparent() is not None:
            e.getparent().remove(e)
        elif m.kind == "elem_text":
            e.text = m.value
        elif m.kind == "elem_dup" and e.getparent() is not None:
            e.addnext(copy.deepcopy(e))
        elif m.kind == "attr":
            attrs = [(x, a) for x in elems for a in x.attrib]
            if attrs:
                x, a = attrs[k % len(attrs)]
                x.set(a, m.value)
        return etree.tostring(root.getroottree(), xml_declaration=True, encoding="UTF-8")
    lines = base.split(b"\n")
    i = k % len(lines)
    if m.kind == "line_delete":
        del lines[i]
    elif m.kind == "line_dup":
        lines.insert(i, lines[i])
    elif m.kind == "cell":
        cells = lines[i].split(b"\t") if b"\t" in lines[i] else lines[i].split(b" ")
        cells[(k // 13) % len(cells)] = val
        lines[i] = (b"\t" if b"\t" in lines[i] else b" ").join(cells)
    return b"\n".join(lines)


# ----------------------------------------------------------------------------- targets
def _absolutize(path: Path, replace=()) -> bytes:
    """A setup's text with every file name that exists beside it made absolute (so the mutated
    copy in a temporary folder still finds the model and the data), after the ``replace`` pairs
    (text substitutions, e.g. a states file swapped for the coordinates file)."""
    text = path.read_bytes()
    for a, b in replace:
        text = text.replace(a.encode(), b.encode())
    root = etree.fromstring(text)
    for e in root.iter():
        if isinstance(e.tag, str) and e.text and e.text.strip() and len(e) == 0:
            names = e.text.split()
            new = [str(path.parent / n) if (path.parent / n).is_file() else n for n in names]
            if new != names:
                e.text = " ".join(new)
    return etree.tostring(root.getroottree(), xml_declaration=True, encoding="UTF-8")


def _model_target(p):
    from arthron.io.osim import read_osim
    from arthron.multibody.constraints import compile_constraints
    from arthron.multibody.path_compile import compile_paths
    from arthron.multibody.tree import compile_model
    from arthron.multibody.forces import applied_generalized_forces
    m = read_osim(p)
    tree = compile_model(m)
    compile_paths(m, tree)
    q = tree.default_q[None]
    applied_generalized_forces(m, tree, q, 0.1 + 0 * q, exclude=("Muscles", "BushingForce"))
    compile_constraints(m, tree)


def _sto_target(p):
    from arthron.io.sto import read_sto
    read_sto(p)


def _trc_target(p):
    from arthron.io.trc import read_trc
    read_trc(p)


def _id_target(p):
    from arthron.io.setup import read_id_setup
    read_id_setup(p)


def _loads_target(p):
    from arthron.io.setup import read_external_loads
    read_external_loads(p).resolve()


def _ik_target(p):
    from arthron.io.osim import read_osim
    from arthron.io.setup import read_tool_setup
    from arthron.tools.ik_tool import _ik_config
    from arthron.tools.setup_files import require_setup_file
    st = read_tool_setup(p)
    model = read_osim(require_setup_file(st, "model_file"))
    _ik_config(st, model, None)


def _jr_target(p):
    from arthron.tools.analyze_tool import model_with_force_sets, read_analyze_setup
    model_with_force_sets(read_analyze_setup(p))


def _scale_target(p):
    from arthron.tools.scale_tool import read_scale_setup
    read_scale_setup(p)


def _mesh_target(p):
    from arthron.io.mesh import load_mesh
    load_mesh(p)


@dataclass(frozen=True)
class Target:
    name: str
    base: Path
    run: object
    xml: bool
    absolutize: bool = False
    replace: tuple = ()

    def base_bytes(self) -> bytes:
        return _absolutize(self.base, self.replace) if self.absolutize else self.base.read_bytes()


TARGETS = {t.name: t for t in (
    Target("osim4", M / "Models" / "Arm26" / "arm26.osim", _model_target, True),
    Target("osim3", DATA / "opensim-models-legacy" / "gait10dof18musc_v30000.osim", _model_target, True),
    Target("osim2", DATA / "opensim-models-legacy" / "arm26_v20303.osim", _model_target, True),
    Target("osim_contact", DATA / "opensim-models-legacy" / "bouncing_block_v20303.osim",
           _model_target, True),
    Target("sto", PIPE / "subject01_walk1_ik.mot", _sto_target, False),
    Target("grf", PIPE / "subject01_walk1_grf.mot", _sto_target, False),
    Target("trc", PIPE / "subject01_walk1.trc", _trc_target, False),
    Target("id_setup", PIPE / "subject01_Setup_InverseDynamics.xml", _id_target, True, True),
    Target("loads", PIPE / "subject01_walk1_grf.xml", _loads_target, True, True),
    Target("ik_setup", PIPE / "subject01_Setup_IK.xml", _ik_target, True, True,
           (("<model_file>subject01_simbody.osim", "<model_file>OutputReference/subject01_simbody.osim"),
            ("<model_file> subject01_simbody.osim", "<model_file> OutputReference/subject01_simbody.osim"))),
    Target("jr_setup", PIPE / "subject01_Setup_Analyze_Reactions.xml", _jr_target, True, True,
           (("<model_file> subject01_simbody_adjusted.osim",
             "<model_file> OutputReference/subject01_simbody_adjusted.osim"),
            ("<states_file> ResultsCMC/subject01_walk1_states.sto", "<states_file>"),
            ("<coordinates_file>  <", "<coordinates_file> OutputReference/subject01_walk1_ik.mot <"))),
    Target("scale_setup", PIPE / "subject01_Setup_Scale.xml", _scale_target, True, True,
           ((">gait2354_simbody.osim<", f">{M / 'Models' / 'Gait2354_Simbody' / 'gait2354_simbody.osim'}<"),
            ("> gait2354_simbody.osim <", f"> {M / 'Models' / 'Gait2354_Simbody' / 'gait2354_simbody.osim'} <"))),
    Target("vtp", M / "Geometry" / "r_patella.vtp", _mesh_target, True),
    Target("vtp_tri", M / "Geometry" / "pisiform_lvs.vtp", _mesh_target, True),
)}


def run_case(target: Target, base: bytes, m: Mutation, folder: Path) -> str | None:
    """Run one case; None if the reader returned or raised a typed error with a clean
    message, else a one-line description of the finding."""
    data = mutate(base, m, target.xml)
    p = folder / target.base.name
    p.write_bytes(data)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            target.run(p)
    except ArthronError as e:
        if "np.float64" in str(e) or "np.int64" in str(e):
            return f"numpy repr in message: {e}"
        return None
    except RecursionError as e:  # pragma: no cover - reported like any other
        return f"RecursionError: {e}"
    except Exception as e:  # noqa: BLE001 - the finding
        import traceback
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return f"{type(e).__name__}: {e} [{Path(tb.filename).name}:{tb.lineno}]"
    return None
