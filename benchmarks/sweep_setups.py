"""Run every OpenSim setup and model found in ../shared/data through arthron's CLI, as a new user.

For each tool setup (InverseKinematicsTool, InverseDynamicsTool, ScaleTool, AnalyzeTool, and
the tools arthron does not implement: CMCTool, ForwardTool, RRATool) and every ``.osim`` model,
run the matching ``arthron`` command with every output redirected into a temporary folder
(``-o`` / ``--output-dir``), then, where the setup is valid, the same setup in OpenSim 4.6
(its inputs made absolute, its outputs sent into another temporary folder, cwd a temporary
folder), and compare the result files they both wrote (same file name; common columns, common
times). Prints one row per run: setup, command, arthron status and time, OpenSim status and
time, the largest difference (absolute, and relative to the column's largest magnitude).

The shared data is checked before and after: any file created or modified under it is
reported (and makes the exit status 1).

    python benchmarks/sweep_setups.py [--no-opensim] [--no-models] [--only SUBSTRING]

A setup that names files kept in another folder of the data (the tutorial's and the pipeline's
setups name the model or motion of a previous step) is run twice: as it is, and with the
``--search-dir`` folders a user would give (:data:`SEARCH`; OpenSim gets the same files).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "src"))

TOOLS = ("InverseKinematicsTool", "InverseDynamicsTool", "ScaleTool", "AnalyzeTool",
         "CMCTool", "ForwardTool", "RRATool")
# inputs of a setup that OpenSim resolves relative to the cwd / setup folder
FILE_TAGS = ("model_file", "marker_file", "coordinates_file", "external_loads_file",
             "marker_set_file", "states_file", "speeds_file", "controls_file",
             "force_set_files", "forces_file", "constraints_file", "task_set_file",
             "desired_kinematics_file", "desired_points_file", "initial_states_file")
OUTPUT_TAGS = ("output_model_file", "output_motion_file", "output_marker_file",
               "output_scale_file")


M = DATA / "opensim-models"
PIPE = M / "Pipelines" / "Gait2354_Simbody"
TUT = M / "Tutorials" / "Computed_Muscle_Control" / "OutputReference"
#: the folders a user passes as --search-dir when a setup names files that are not beside it
#: (the tutorial's and pipeline's setups name the model and motion of a previous step)
SEARCH = {
    PIPE: [PIPE / "OutputReference", M / "Models" / "Gait2354_Simbody"],
    DATA / "opensim-reference" / "task2_gait2354" / "setups": [
        PIPE, PIPE / "OutputReference", M / "Models" / "Gait2354_Simbody"],
    TUT / "InverseKinematics": [TUT],
    TUT / "InverseDynamics": [TUT, TUT / "InverseKinematics"],
    TUT / "StaticOptimization": [TUT, TUT / "InverseKinematics"],
    DATA / "opensim-core" / "Applications" / "ID" / "tests" / "resources": [
        DATA / "opensim-core" / "OpenSim" / "Tests" / "shared"],
}
REFD = DATA / "opensim-reference"
#: the reference's setup templates (``<workdir>`` placeholders: not XML until filled in) and
#: where the files their placeholders stood for are kept
TEMPLATE_SEARCH = {
    REFD / "task1_arm26" / "setups": [M / "Tutorials" / "Computed_Muscle_Control" / "InverseKinematics",
                                      REFD / "task1_arm26" / "IK", REFD / "task1_arm26" / "SO_phys"],
    REFD / "task2_gait2354" / "setups": [REFD / "task2_gait2354", PIPE,
                                         REFD / "task2_gait2354" / "IK_ourModel"],
}


def filled_template(setup, folder: Path):
    """The template with ``<workdir>`` (a folder of its own) and ``<opensim-models>`` filled in,
    written into ``folder``; (path, tool, analyses) or None when it is not a template."""
    text = setup.read_text(errors="replace")
    if "<workdir>" not in text:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    text = text.replace("<workdir>", str(folder / "workdir")).replace("<opensim-models>", str(M))
    dst = folder / setup.name
    dst.write_text(text)
    tool, analyses, err = _root_tool(dst)
    return None if err else (dst, tool, analyses)


def search_dirs_for(setup):
    return [d for d in SEARCH.get(setup.parent, []) if d.is_dir()]


def find_in(name, folder, dirs):
    """A setup's file as arthron resolves it (arthron.tools.setup_files.find_setup_file)."""
    p = Path(name.replace("\\", "/"))
    p = p if p.is_absolute() else folder / p
    if p.exists():
        return p
    for d in [folder, *dirs]:
        if (d / p.name).exists():
            return d / p.name
    for d in dirs:
        hit = next(iter(sorted(d.rglob(p.name))), None)
        if hit is not None:
            return hit
    return p


# ----------------------------------------------------------------------------------- discovery
def _root_tool(path):
    """(tool tag, analyses, parse error) of an XML file."""
    from lxml import etree
    try:
        root = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True)
                           ).getroot()
    except etree.XMLSyntaxError as e:
        return None, [], str(e)
    kids = [c for c in root if isinstance(c.tag, str)]
    tool = kids[0].tag if kids else root.tag
    if root.tag in TOOLS:
        tool = root.tag
    analyses = []
    for aset in root.iter("AnalysisSet"):
        for objs in aset.iter("objects"):
            analyses += [c.tag for c in objs if isinstance(c.tag, str)]
    return tool, analyses, None


def discover(data=DATA):
    """[(path, tool, analyses, parse_error)] of the setups and [.osim] of the models."""
    setups, models = [], []
    for p in sorted(data.rglob("*")):
        if "Geometry" in p.parts or not p.is_file():
            continue
        if p.suffix == ".osim":
            models.append(p)
        elif p.suffix == ".xml":
            tool, analyses, err = _root_tool(p)
            if tool in TOOLS:
                setups.append((p, tool, analyses, None))
            elif err and "setup" in str(p).lower():
                # a setup that is not XML (a template): guess the tool from its name
                n = p.name.lower()
                guess = ("InverseKinematicsTool" if n.startswith("ik") else
                         "InverseDynamicsTool" if n.startswith("id") else
                         "ScaleTool" if "scale" in n else "AnalyzeTool")
                an = (["JointReaction"] if n.startswith("jr") else
                      ["StaticOptimization"] if n.startswith("so") else [])
                setups.append((p, guess, an, err))
    return setups, models


# -------------------------------------------------------------------------------- arthron runs
def arthron_commands(setup, tool, analyses, out: Path, search=()):
    """The CLI command lines a user runs for this setup, outputs into ``out``."""
    from lxml import etree
    s = str(setup)
    tr = [a for d in search for a in ("--search-dir", str(d))]
    cmds = []
    if tool == "InverseKinematicsTool":
        name = "ik.mot"
        try:
            el = etree.parse(s).getroot().find(".//output_motion_file")
            if el is not None and el.text and el.text.strip() not in ("", "Unassigned"):
                name = Path(el.text.strip().replace("\\", "/")).name
        except Exception:
            pass
        cmds.append(("ik", ["ik", "--setup", s, *tr, "-o", str(out / name)]))
    elif tool == "InverseDynamicsTool":
        name = "inverse_dynamics.sto"
        try:
            el = etree.parse(s).getroot().find(".//output_gen_force_file")
            if el is not None and el.text and el.text.strip():
                name = Path(el.text.strip().replace("\\", "/")).name
        except Exception:
            pass
        cmds.append(("id", ["id", "--setup", s, *tr, "-o", str(out / name)]))
    elif tool == "ScaleTool":
        cmds.append(("scale", ["scale", "--setup", s, *tr, "--output-dir", str(out)]))
    elif tool == "AnalyzeTool":
        cmds.append(("analyze", ["analyze", "--setup", s, *tr, "--output-dir", str(out)]))
        if "StaticOptimization" in analyses:
            cmds.append(("so", ["so", "--setup", s, *tr, "-o", str(out / "so")]))
    else:                      # CMC, Forward, RRA: what a user would try
        cmds.append(("analyze", ["analyze", "--setup", s, *tr, "--output-dir", str(out)]))
    return cmds


SRC = ROOT / "src"          # --src: another checkout's src (e.g. main, for a before/after table)


def run_arthron(args, cwd):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    exe = shutil.which("arthron")
    cmd = [exe, *args] if exe else [sys.executable, "-c",
                                    "import sys; from arthron.cli import main; sys.exit(main())",
                                    *args]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    err = p.stderr.strip().splitlines()
    return p.returncode, dt, err, p.stdout


# ------------------------------------------------------------------------------- OpenSim runs
_OPENSIM_RUNNER = r'''
import sys, os
import opensim as osim
osim.Logger.setLevelString("error")
try:
    osim.Logger.removeFileSink()
except Exception:
    pass
tool_tag, setup, out = sys.argv[1:4]
cls = {"InverseKinematicsTool": osim.InverseKinematicsTool,
       "InverseDynamicsTool": osim.InverseDynamicsTool,
       "ScaleTool": osim.ScaleTool, "AnalyzeTool": osim.AnalyzeTool}[tool_tag]
tool = cls(setup) if tool_tag != "AnalyzeTool" else cls(setup, True)
ok = tool.run()
sys.exit(0 if ok in (True, None) else 1)
'''


def opensim_copy(setup, tool, out: Path, search=()):
    """A copy of the setup in ``out`` with absolute inputs and outputs inside ``out``."""
    from lxml import etree
    tree = etree.parse(str(setup))
    folder = setup.parent
    for el in tree.getroot().iter():
        if not isinstance(el.tag, str) or el.text is None:
            continue
        txt = el.text.strip()
        if el.tag in FILE_TAGS and txt and txt != "Unassigned":
            names = txt.split()
            fixed = []
            for n in names:
                p = find_in(n, folder, search)
                # relative to the copy: ScaleTool prefixes every name with the setup's folder
                fixed.append(os.path.relpath(p.resolve(), out) if p.exists() else n)
            el.text = " ".join(fixed)
        elif el.tag in OUTPUT_TAGS and txt and txt != "Unassigned":
            el.text = Path(txt.replace("\\", "/")).name     # the copy's folder is ``out``
        elif el.tag == "results_directory":
            el.text = str(out)
    dst = out / ("opensim_" + setup.name)
    tree.write(str(dst))
    return dst


def run_opensim(setup, tool, out: Path, search=()):
    if tool not in ("InverseKinematicsTool", "InverseDynamicsTool", "ScaleTool", "AnalyzeTool"):
        return None, 0.0, ["not run"]
    try:
        copy = opensim_copy(setup, tool, out, search)
    except Exception as e:
        return 2, 0.0, [f"setup unreadable: {str(e).splitlines()[0]}"]
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", _OPENSIM_RUNNER, tool, str(copy), str(out)],
                       cwd=out, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    copy.unlink()
    err = [ln for ln in (p.stderr + p.stdout).strip().splitlines() if ln.strip()]
    return p.returncode, dt, err


# --------------------------------------------------------------------------------- comparison
def compare(a_dir: Path, o_dir: Path):
    """Largest difference over the .sto/.mot files both wrote: (abs, rel, file:column)."""
    from arthron.io.sto import read_sto
    best = (0.0, 0.0, "")
    found = False
    for f in sorted(o_dir.rglob("*")):
        if f.suffix not in (".sto", ".mot"):
            continue
        cands = [g for g in a_dir.rglob(f.name) if not g.is_relative_to(o_dir)]
        if not cands:
            continue
        try:
            A, O = read_sto(cands[0]), read_sto(f)
        except Exception:
            continue
        cols = [c for c in O.labels if c in A.labels and c != "time"]
        if not cols or len(O.time) == 0 or len(A.time) == 0:
            continue
        t0, t1 = max(A.time[0], O.time[0]), min(A.time[-1], O.time[-1])
        keep = (O.time >= t0 - 1e-9) & (O.time <= t1 + 1e-9)
        if not keep.any():
            continue
        found = True
        for c in cols:
            o = O.data[keep, O.labels.index(c)]
            a = np.interp(O.time[keep], A.time, A.data[:, A.labels.index(c)])
            d = float(np.max(np.abs(a - o)))
            scale = float(np.max(np.abs(o)))
            rel = d / scale if scale > 0 else d
            if d > best[0]:
                best = (d, rel, f"{f.name}:{c}")
    return best if found else None


def objectives(a_dir: Path, o_dir: Path):
    """The optimizers' own yardsticks, where both wrote them: IK's summed squared marker error
    per frame (``*_ik_marker_errors.sto``, total_squared_error) and StaticOptimization's
    Σ activation² per frame. Returns 'IK/SO obj: arthron/OpenSim max ratio' text or ''."""
    from arthron.io.sto import read_sto
    out = []
    for pat, col in (("*_ik_marker_errors.sto", "total_squared_error"),
                     ("*_StaticOptimization_activation.sto", None)):
        for f in sorted(o_dir.glob(pat)):
            cands = sorted(a_dir.rglob(f.name))
            if not cands:
                continue
            A, O = read_sto(cands[0]), read_sto(f)
            if len(A.time) != len(O.time):
                out.append(f"{f.name}: {len(A.time)} vs {len(O.time)} frames")
                continue
            if col:
                fa, fo = A.data[:, A.labels.index(col)], O.data[:, O.labels.index(col)]
            else:
                fa = (A.data ** 2).sum(axis=1)
                fo = (O.data[:, [O.labels.index(c) for c in A.labels]] ** 2).sum(axis=1)
            ratio = float(np.max(fa / np.maximum(fo, 1e-300)))
            what = ("IK summed squared marker error (unweighted; the weighted objective is "
                    "tests/test_inverse_kinematics)" if col else "SO objective sum a^2")
            out.append(f"{what}: arthron/OpenSim max {ratio:.6f}")
    for f in sorted(o_dir.glob("*scaleSet*.xml")):         # ScaleTool: the scale factors
        cands = sorted(a_dir.rglob(f.name))
        if cands:
            sa, so = _scales(cands[0]), _scales(f)
            d = max((float(np.max(np.abs(sa[k] - so[k]))) for k in so if k in sa), default=np.nan)
            out.append(f"scale factors ({len(so)} segments): max |d| {d:.2e}")
    return "; ".join(out)


def ik_weighted_objective(setup, search, a_mot: Path, o_mot: Path):
    """IK's own objective (marker weights and coordinate tasks of the setup, as
    tests/test_inverse_kinematics.py::test_gait2354_cost_not_worse) on arthron's and OpenSim's
    motions, frame by frame: 'max ratio arthron/OpenSim' text."""
    from arthron.io.osim import read_osim
    from arthron.io.setup import read_tool_setup
    from arthron.io.sto import read_sto
    from arthron.io.trc import read_trc
    from arthron.solvers.inverse_kinematics import InverseKinematics
    from arthron.tools.ik_tool import _ik_config
    from arthron.tools.setup_files import find_setup_file
    st = read_tool_setup(setup)
    model = read_osim(find_setup_file(st, st.get("model_file"), list(search)))
    trial = read_trc(find_setup_file(st, st.get("marker_file"), list(search)))
    ik = InverseKinematics(model, _ik_config(st, model, list(search))["tasks"], np.inf, trial.labels)
    cols = [trial.labels.index(n) for n in ik.marker_names]
    w = np.array(ik.ctask_w)
    rot = np.array([c.motion_type == "rotational" for c in model.coordinates.values()])

    def q_of(path):
        m = read_sto(path)
        q = m.data[:, [m.labels.index(c) for c in model.coordinates]].copy()
        if m.in_degrees:
            q[:, rot] = np.deg2rad(q[:, rot])
        return m.time, q

    def cost(q, o):
        P, _ = ik.chain.evaluate(q, None, False)
        ok = np.all(np.isfinite(o), 1)
        c = np.sum(ik.marker_weights[ok] * np.sum((P - o)[ok] ** 2, 1))
        return c + np.sum(w * (q[ik.ctask_idx] - ik.coordinate_targets(0, ik.tree.default_q)) ** 2)

    (ta, qa), (to, qo) = q_of(a_mot), q_of(o_mot)
    if len(ta) != len(to):
        return f"IK: {len(ta)} vs {len(to)} frames"
    ratios = []
    for k, t in enumerate(ta):
        o = trial.positions[int(np.argmin(np.abs(trial.time - t)))][cols]
        ratios.append(cost(qa[k], o) / max(cost(qo[k], o), 1e-300))
    return f"IK weighted objective: arthron/OpenSim max {max(ratios):.9f}"


def _scales(path):
    from lxml import etree
    return {el.findtext("segment").strip(): np.array(el.findtext("scales").split(), float)
            for el in etree.parse(str(path)).getroot().iter("Scale")}


# ------------------------------------------------------------------------------------- sweep
def snapshot(data=DATA):
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in data.rglob("*") if p.is_file()}


def first_line(lines):
    """The line that says what went wrong: arthron's error line, OpenSim's exception text."""
    for key in ("arthron: error", "RuntimeError", "Exception", "[error]", "Error"):
        for ln in lines:
            if key in ln:
                return ln.strip()
    return lines[-1].strip() if lines else ""


def _has_states_file(setup):
    from lxml import etree
    el = etree.parse(str(setup)).getroot().find(".//states_file")
    return el is not None and el.text is not None and el.text.strip() not in ("", "Unassigned")


def edited_copy(setup, folder: Path, search, changes: dict) -> Path:
    """A copy of ``setup`` in ``folder`` with every input file absolute (found as arthron
    finds it, with ``search``) and the properties in ``changes`` replaced."""
    from lxml import etree
    folder.mkdir(parents=True, exist_ok=True)
    tree = etree.parse(str(setup))
    for el in tree.getroot().iter():
        if not isinstance(el.tag, str):
            continue
        if el.tag in changes:
            el.text = changes[el.tag]
        elif el.tag in FILE_TAGS and el.text and el.text.strip() not in ("", "Unassigned"):
            el.text = " ".join(str(find_in(n, setup.parent, search)) for n in el.text.split())
    dst = folder / setup.name
    tree.write(str(dst))
    return dst


def _run_setup(setup, label, tool, analyses, perr, search, a_out, o_out, cwd, have_opensim):
    """The rows of one setup: each arthron command for it, and OpenSim's run of it."""
    rows = []
    o_out.mkdir()
    if have_opensim and perr is None:
        o_rc, o_dt, o_err = run_opensim(setup, tool, o_out, search)
    else:
        o_rc, o_dt, o_err = (None, 0.0, ["not run"] if perr is None else ["not XML: " + perr])
    for cmd, cli in arthron_commands(setup, tool, analyses, a_out, search):
        a_rc, a_dt, a_err, _ = run_arthron(cli, cwd)
        both = a_rc == 0 and o_rc == 0
        diff = compare(a_out, o_out) if both else None
        obj = objectives(a_out, o_out) if both else ""
        if cmd == "ik" and both:
            try:
                mot = next(iter(sorted(o_out.glob("*.mot"))))
                obj += "; " + ik_weighted_objective(setup, search, a_out / mot.name, mot)
            except Exception as e:      # the table says so rather than stopping
                obj += f"; IK weighted objective not computed: {e}"
        errs = [ln for ln in a_err if ln.startswith("arthron: error:") or "Traceback" in ln]
        rows.append(dict(what=label, tool=tool.replace("Tool", ""),
                         cmd=cmd + (" +search" if search else ""),
                         one_line=len(errs) == 1 and "Traceback" not in "\n".join(a_err),
                         a_rc=a_rc, a_dt=a_dt, a_msg=first_line(a_err) if a_rc else "",
                         o_rc=o_rc, o_dt=o_dt,
                         o_msg=("" if o_rc == 0 else first_line(o_err))
                         if o_rc is not None else o_err[0],
                         diff=diff, obj=obj))
        _print_row(rows[-1])
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-opensim", action="store_true")
    ap.add_argument("--only", default=None, help="only setups/models whose path contains this")
    ap.add_argument("--no-models", action="store_true")
    ap.add_argument("--src", default=None, help="run the arthron of this src folder (default: this "
                                                "checkout's); the comparisons still use this one")
    args = ap.parse_args(argv)
    global SRC
    if args.src:
        SRC = Path(args.src).resolve()
    try:
        import opensim  # noqa: F401
        have_opensim = not args.no_opensim
    except ImportError:
        have_opensim = False

    before = snapshot()
    setups, models = discover()
    rows = []
    work = Path(tempfile.mkdtemp(prefix="arthron-sweep-"))
    cwd = work / "cwd"
    cwd.mkdir()
    try:
        for i, (setup, tool, analyses, perr) in enumerate(setups):
            rel = setup.relative_to(DATA)
            if args.only and args.only not in str(rel):
                continue
            variants = [()]
            if search_dirs_for(setup) and perr is None:
                variants.append(tuple(search_dirs_for(setup)))
            for k, search in enumerate(variants):
                rows += _run_setup(setup, str(rel), tool, analyses, perr, search,
                                   work / f"a{i}_{k}", work / f"o{i}_{k}", cwd, have_opensim)
            # the reference's templates, placeholders filled as their README says
            if perr is not None and setup.parent in TEMPLATE_SEARCH:
                filled = filled_template(setup, work / f"t{i}")
                if filled is not None:
                    rows += _run_setup(filled[0], f"{rel} (placeholders filled)", filled[1],
                                       filled[2], None,
                                       tuple(d for d in TEMPLATE_SEARCH[setup.parent] if d.is_dir()),
                                       work / f"a{i}_t", work / f"o{i}_t", cwd, have_opensim)
            # what a user does after arthron's message about <states_file>: the IK motion instead
            if tool == "AnalyzeTool" and perr is None and _has_states_file(setup):
                ed = edited_copy(setup, work / f"e{i}", search_dirs_for(setup),
                                 {"states_file": "", "controls_file": "",
                                  "coordinates_file": str(PIPE / "OutputReference" /
                                                          "subject01_walk1_ik.mot")})
                rows += _run_setup(ed, f"{rel} (edited: coordinates_file = IK motion)", tool,
                                   analyses, None, (), work / f"a{i}_e", work / f"o{i}_e", cwd,
                                   have_opensim)
        # ExternalLoads files: applied by the pipeline's ID setup in place of its own
        id_setup = PIPE / "subject01_Setup_InverseDynamics.xml"
        for j, loads in enumerate(sorted(DATA.rglob("*.xml"))):
            rel = loads.relative_to(DATA)
            if (_root_tool(loads)[0] != "ExternalLoads" or not id_setup.exists()
                    or (args.only and args.only not in str(rel))):
                continue
            ed = edited_copy(id_setup, work / f"x{j}", search_dirs_for(id_setup),
                             {"external_loads_file": str(loads)})
            rows += _run_setup(ed, f"{rel} (in {id_setup.name})", "InverseDynamicsTool", [], None,
                               (), work / f"ax{j}", work / f"ox{j}", cwd, have_opensim)
        if not args.no_models:
            for j, m in enumerate(models):
                rel = m.relative_to(DATA)
                if args.only and args.only not in str(rel):
                    continue
                for cmd, cli in (("info", ["info", str(m)]),
                                 ("convert", ["convert", str(m),
                                              str(work / f"m{j}" / m.name), "--check"])):
                    a_rc, a_dt, a_err, a_out = run_arthron(cli, cwd)
                    msg = first_line(a_err) if a_rc else ""
                    if a_rc and cmd == "convert" and not msg:
                        msg = first_line(a_out.strip().splitlines()[-3:])
                    rows.append(dict(what=str(rel), tool="model", cmd=cmd, a_rc=a_rc, a_dt=a_dt,
                                     a_msg=msg, o_rc=None, o_dt=0.0, o_msg="", diff=None))
                    _print_row(rows[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    after = snapshot()
    changed = sorted(str(p) for p in set(after) | set(before) if before.get(p) != after.get(p))
    summary(rows)
    if changed:
        print("SHARED DATA CHANGED:", *changed, sep="\n  ")
        return 1
    print("shared data unchanged")
    return 0


def summary(rows):
    """Counts by outcome: both ran; arthron refused what it does not support (one line); the
    setup is broken for OpenSim as well; arthron failed where OpenSim ran (bugs)."""
    setup_rows = [r for r in rows if r["tool"] != "model"]
    model_rows = [r for r in rows if r["tool"] == "model"]
    both = [r for r in setup_rows if r["a_rc"] == 0 and r["o_rc"] == 0]
    a_only = [r for r in setup_rows if r["a_rc"] == 0 and r["o_rc"] not in (0,)]
    fail = [r for r in setup_rows if r["a_rc"] != 0]
    unsupported = [r for r in fail if "not supported" in r["a_msg"]]
    broken = [r for r in fail if r not in unsupported
              and (r["o_rc"] not in (0, None) or r["o_msg"].startswith("not XML"))]
    bugs = [r for r in fail if r not in unsupported and r not in broken]
    unclear = [r for r in fail if not r.get("one_line", True)]
    print(f"\n{len(setup_rows)} setup runs ({len({r['what'] for r in setup_rows})} setups and "
          f"variants), {len(model_rows)} model runs ({len({r['what'] for r in model_rows})} models)")
    print(f"  ran in arthron and OpenSim: {len(both)}; in arthron only (OpenSim not run or "
          f"failing): {len(a_only)}")
    print(f"  refused as unsupported, one line: {len(unsupported)}")
    print(f"  failed in OpenSim too (missing files, not XML): {len(broken)}")
    print(f"  failed in arthron where OpenSim ran or was not tried: {len(bugs)}" + "".join(
        f"\n    {r['what']} {r['cmd']}: {r['a_msg'][:200]}" for r in bugs))
    print(f"  failures not reported in one clear line: {len(unclear)}" + "".join(
        f"\n    {r['what']} {r['cmd']}" for r in unclear))
    print(f"  models failing info/convert --check: "
          f"{sum(1 for r in model_rows if r['a_rc'] != 0)}")


def _print_row(r):
    a = f"ok {r['a_dt']:.1f}s" if r["a_rc"] == 0 else f"FAIL({r['a_rc']}) {r['a_dt']:.1f}s"
    o = ("-" if r["o_rc"] is None else
         f"ok {r['o_dt']:.1f}s" if r["o_rc"] == 0 else f"FAIL {r['o_dt']:.1f}s")
    d = ("" if r["diff"] is None else
         f"max|d|={r['diff'][0]:.3g} rel={r['diff'][1]:.2g} ({r['diff'][2]})")
    print(f"{r['what']:<90} {r['cmd']:<15} {a:<14} {o:<12} {d}", flush=True)
    if r.get("obj"):
        print(f"    {r['obj']}")
    if r["a_msg"]:
        print(f"    arthron: {r['a_msg'][:300]}")
    if r["o_msg"] and r["o_rc"] not in (0,):
        print(f"    opensim: {r['o_msg'][:300]}")


if __name__ == "__main__":
    sys.exit(main())
