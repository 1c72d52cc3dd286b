"""Ligament workflows on files: the TPSM of a model's multi-strand ligament over a motion
(``arthron ligament MODEL.osim``), the TPSM study on the embedded synthetic ACL
(``arthron ligament --demo``), and export of the TPSM's fibres as OpenSim 4.6
``Blankevoort1991Ligament`` components.

The computations are :mod:`arthron.solvers.ligament` (the thin-plate spline ligament model,
its strands interop and poses) and :mod:`arthron.solvers.tpsm_study`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import SolverError
from ..io.files import atomic_write, check_output, make_output_dir, make_output_folder
from ..io.mesh import load_mesh
from ..io.osim import force_to_xml, read_osim, write_osim
from ..io.sto import read_sto, write_sto
from ..models.forces import Blankevoort1991Ligament
from ..models.model import GeometryPath, Model, PathPoint
from ..models.motion import coordinates_from_table
from ..multibody.kinematics import compile_model
from ..solvers.ligament import Fibres, Strands, _body_name, ligament_poses, strands_from_model, wrench_table
from ..solvers.tpsm_study import convergence_study, synthetic_acl, synthetic_flexion
from ..tables import Table
from .options import check_positive_int

__all__ = ["blankevoort_ligaments", "blankevoort_xml", "run_demo", "run_model", "export_model", "DEMO_TRIANGLES"]


def blankevoort_ligaments(fibres: Fibres, *, tibia_frame: str = "/bodyset/tibia_proximal_r",
                          femur_frame: str = "/bodyset/femur_distal_r", prefix: str = "TPSM",
                          big_transition_strain: float = 1e3) -> list:
    """One typed OpenSim 4.6 ``Blankevoort1991Ligament`` per fibre (n components), named
    ``<prefix>1..n``. Path: P1 on the femur (q_n), P2 on the tibia (p_n), like Lenhart2015's
    strands; metres, in the given frames.

    Exact force mapping: "blankevoort" law → linear_stiffness = w_n c_n, transition_strain ε_t,
    slack_length = l0_n; "quadratic" law c ε² → the Blankevoort toe region with
    transition_strain = ``big_transition_strain`` and linear_stiffness = 2 w c ε_t (exact while
    ε < ε_t). Damping is zero (the TPSM is elastic).

    Raises
    ------
    SolverError for laws that cannot be expressed, and for non-positive stiffness (Gauss rules
    with a negative weight, e.g. the 4-point rule: use 1, 3, 6 or 7 points).
    """
    kind = fibres.law.kind
    if kind == "blankevoort":
        et = fibres.law.transition_strain
        k = fibres.weight * fibres.c
    elif kind == "quadratic":
        et = big_transition_strain
        k = 2.0 * fibres.weight * fibres.c * et
    else:
        raise SolverError(f"{fibres.label}: a {kind!r} fibre law has no Blankevoort1991Ligament equivalent")
    if np.any(k <= 0):
        raise SolverError(f"{fibres.label}: {int(np.sum(k <= 0))} fibres have non-positive stiffness "
                          "(negative quadrature weights?); OpenSim ligaments need positive stiffness")
    out = []
    for i in range(fibres.n):
        nm = f"{prefix}{i + 1}"
        path = GeometryPath([
            PathPoint(f"{nm}-P1", "PathPoint", femur_frame, np.array(fibres.q[i], float)),
            PathPoint(f"{nm}-P2", "PathPoint", tibia_frame, np.array(fibres.p[i], float))])
        out.append(Blankevoort1991Ligament(
            name=nm, path=path, applies_force=True, linear_stiffness=float(k[i]),
            transition_strain=float(et), damping_coefficient=0.0, slack_length=float(fibres.l0[i])))
    return out


def blankevoort_xml(fibres: Fibres, *, tibia_frame: str = "/bodyset/tibia_proximal_r",
                    femur_frame: str = "/bodyset/femur_distal_r", prefix: str = "TPSM",
                    big_transition_strain: float = 1e3) -> str:
    """The components of :func:`blankevoort_ligaments` as OpenSim XML text (to be placed in a
    model's ``<ForceSet><objects>``), written by :func:`arthron.io.osim.force_to_xml`."""
    ligs = blankevoort_ligaments(fibres, tibia_frame=tibia_frame, femur_frame=femur_frame,
                                 prefix=prefix, big_transition_strain=big_transition_strain)
    return "\n".join(force_to_xml(f) for f in ligs)




DEMO_TRIANGLES = (15, 20, 30, 45, 60, 90, 120, 180, 240, 360, 500, 720)


def run_demo(out_dir, n_triangles=DEMO_TRIANGLES, verbose: bool = True) -> dict:
    """``arthron ligament --demo``: the TPSM paper's convergence study on the embedded synthetic ACL.

    Writes into ``out_dir``: ``tpsm_errors.csv`` (force/moment errors, Eq. 16, of MBM, MBM-centroid,
    TPSM-1/3/4 vs the adaptive reference for l0 = 27 mm and 10 mm) and ``acl_wrench_flexion.sto``
    (TPSM-3, 360 triangles, l0 = 27 mm, 0-120° flexion). Returns a summary dict and prints it.
    """
    out = Path(out_dir)
    make_output_dir(out)                            # a file or device as the folder: one line naming it
    make_output_folder(out / "tpsm_errors.csv")
    methods = ("MBM", "MBM-centroid", "TPSM-1", "TPSM-3", "TPSM-4")
    rows, summary = [], {}
    for l0 in (0.027, 0.010):
        lig = synthetic_acl(l0=l0)
        st = convergence_study(lig, list(n_triangles), methods)
        key = f"l0={l0 * 1e3:.0f}mm"
        summary[key] = {"reference_force_N": float(st["reference"].force_magnitude)}
        for m in methods:
            e = st[m]["eF"]
            above = [n for n, v in zip(n_triangles, e) if v >= 10.0]
            cross = None if above and above[-1] == n_triangles[-1] else \
                (n_triangles[n_triangles.index(above[-1]) + 1] if above else n_triangles[0])
            summary[key][m] = {"below_10pct_from": cross,
                               "eF_at": {int(n): float(v) for n, v in zip(n_triangles, e)}}
            for n, a, b, nf in zip(n_triangles, st[m]["eF"], st[m]["eM"], st[m]["n_fibres"]):
                rows.append(f"{l0 * 1e3:.0f},{m},{n},{nf},{a:.6g},{b:.6g}")
    atomic_write(out / "tpsm_errors.csv", "l0_mm,method,n_triangles,n_fibres,force_error_pct,"
                 "moment_error_pct\n" + "\n".join(rows) + "\n")
    lig = synthetic_acl(l0=0.027)
    ang = np.linspace(0.0, 120.0, 121)
    R, t = synthetic_flexion(ang)
    w = lig.fibres(360, 3).wrench(R, t)
    write_sto(out / "acl_wrench_flexion.sto",
              wrench_table(w, ang / 100.0, extra={"knee_flexion_deg": ang}))
    summary["files"] = [str(out / "tpsm_errors.csv"), str(out / "acl_wrench_flexion.sto")]
    if verbose:
        for key in ("l0=27mm", "l0=10mm"):
            print(f"synthetic ACL, {key}: reference |F| = {summary[key]['reference_force_N']:.1f} N")
            for m in methods:
                e = summary[key][m]["eF_at"]
                print(f"  {m:13s} force error {e.get(30, float('nan')):7.2f}% @30  {e.get(45, float('nan')):7.2f}% @45"
                      f"  {e.get(360, float('nan')):7.3f}% @360   <10% from {summary[key][m]['below_10pct_from']} triangles")
        print("wrote", ", ".join(summary["files"]))
    return summary




def run_model(model_path, ligament: str, *, mesh=None, motion=None, out=None, n_triangles: int = 360,
              rule: int = 3, tibia_frame: str | None = None, include_mbm: bool = True):
    """The TPSM of a model's multi-strand ligament over a motion (``arthron ligament MODEL.osim``).

    Parameters
    ----------
    model_path : .osim file (read with :func:`arthron.io.osim.read_osim`) or a Model
    ligament : strand name prefix, e.g. "ACL" (Blankevoort1991Ligament strands, see
        ``strands_from_model``)
    mesh : tibia bone mesh file (STL/VTP/OBJ, in the tibial body frame) or None (Γ_t through the
        strand points)
    motion : .mot/.sto with coordinate columns (missing coordinates keep defaults, with a
        warning; with ``inDegrees=yes`` only rotational coordinates are converted, as OpenSim
        does — "coupled" ones such as Lenhart2015's knee_flex_r stay as written); None → the
        default pose only
    out : .sto to write (optional; its missing folders are created, as for every ``-o``)
    n_triangles, rule : TPSM discretization (default TPSM-3 on 360 triangles)

    Returns
    -------
    (table, info): an :class:`arthron.tables.Table` with the wrench on the tibial body in its frame
    (``<lig>_tpsm_on_<body>_in_<body>_fx .. _mz``, and the same for the model's strands, ``_mbm_``,
    if ``include_mbm``), and a dict with the ligament, fibres, strands and model objects.

    Raises
    ------
    OptionError (``n_triangles`` not a positive integer), the readers' errors, SolverError
    naming the mesh when the footprint misses it.
    """
    n_triangles = check_positive_int(n_triangles, "n_triangles")
    if out is not None:     # before the computation: an output onto an input, or a file where a folder goes
        check_output(out)
    model = model_path if isinstance(model_path, Model) else read_osim(model_path)
    strands = strands_from_model(model, ligament, tibia_frame=tibia_frame)
    tree = compile_model(model)
    if motion is None:
        table_in = None
        q = np.asarray(tree.default_q, float)[None]
        time_ = np.zeros(1)
    else:
        table_in = read_sto(motion)
        q = coordinates_from_table(model, table_in, locked_at_default=True, missing="default")
        time_ = np.asarray(table_in.time, float)
    R, t = ligament_poses(model, tree, q, strands.tibia_frame, strands.femur_frame)
    m = load_mesh(mesh) if mesh is not None else None
    try:
        lig = strands.tpsm(mesh=m, name=ligament)
    except SolverError as exc:  # name the files: the strands come from the model, Γ_t from the mesh
        raise SolverError(exc.message, path=mesh if mesh is not None else model_path,
                          where=f"{ligament} strands of {model_path}" if mesh is not None else None) from None
    fib = lig.fibres(n_triangles, rule)
    body = _body_name(strands.tibia_frame)
    w = fib.wrench(R, t)
    labels, data = w.to_table(f"{ligament}_tpsm_on_{body}_in_{body}")
    labels, cols = list(labels), [np.atleast_2d(data)]
    mbm = strands.fibres()
    if include_mbm:
        lm, dm = mbm.wrench(R, t).to_table(f"{ligament}_mbm_on_{body}_in_{body}")
        labels += lm
        cols.append(np.atleast_2d(dm))
    table = Table(f"{ligament}_wrench", time_, labels, np.hstack(cols), in_degrees=False,
                  comments=[f"TPSM-{rule} on {n_triangles} triangles ({fib.n} fibres) built from "
                            f"{len(strands.names)} strands; moments about the {body} origin"])
    if out is not None:
        make_output_folder(out)
        write_sto(out, table)
    return table, {"ligament": lig, "fibres": fib, "strands": strands, "mbm": mbm, "poses": (R, t),
                   "model": model}


def export_model(model, strands: "Strands", fibres: Fibres, out, *, prefix: str | None = None):
    """Write ``model`` with the ligament's strands replaced by the TPSM's quadrature fibres.

    Each fibre becomes a typed ``Blankevoort1991Ligament`` (:func:`blankevoort_ligaments`) between the
    strands' femoral and tibial frames, so OpenSim 4.6 applies the TPSM wrench. The input model
    is not changed; the file is written whole or not at all (:func:`arthron.io.osim.write_osim`).

    Parameters
    ----------
    model : arthron.models.model.Model holding ``strands`` (e.g. from :func:`strands_from_model`)
    strands : Strands; fibres : Fibres (positive weights: Gauss rules 1, 3, 6 or 7)
    out : output .osim path
    prefix : name prefix of the new components (default ``<first strand prefix>_tpsm``)

    Returns
    -------
    the new Model.
    """
    new = model.copy()
    for n in strands.names:
        new.forces.pop(n, None)
    prefix = prefix or (strands.names[0].rstrip("0123456789") + "_tpsm")
    for f in blankevoort_ligaments(fibres, tibia_frame=strands.tibia_frame,
                                   femur_frame=strands.femur_frame, prefix=prefix):
        new.forces[f.name] = f
    write_osim(out, new)
    return new
