"""The study of the thin-plate spline ligament model (TPSM) paper, reproduced with arthron.

Run:  python examples/tpsm_study.py [OUT_DIR]      (default ./tpsm_study_out)

Figures (PNG):
  fig5_meshes.png         mesh statistics vs number of triangles (edge lengths, vertices)
  fig6_errors.png         force and moment error (Eq. 16) vs triangles, MBM / TPSM-1/3/4,
                          l0 = 27 mm (partially slack) and 10 mm (taut), synthetic ACL
  fig7_time.png           time per wrench vs triangles (single pose and per pose in a batch)
  fig8_error_vs_time.png  error vs time (equal-accuracy comparison)
  fig9_centroid_mbm.png   MBM vs TPSM-1 vs MBM with fibres at triangle centroids
  fig10_fibres.png        TPSM-1 and MBM fibres drawn between the insertions (3-D)
  lenhart_*.png           Lenhart2015 knee: convergence, TPSM vs 12-strand MBM over a flexion
                          sweep with 5 mm anterior drawer (needs OpenSim for the knee kinematics),
                          and a pyvista off-screen view of the tibia with the insertion and fibres
"""
from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from arthron.solvers.ligament import strand_fibres, tpsm_from_strands  # noqa: E402
from arthron.solvers.tpsm_study import (convergence_study, reference_wrench, synthetic_acl,  # noqa: E402
                                        synthetic_flexion)

ROOT = Path(__file__).resolve().parents[1]
LENHART = ROOT.parent / "shared" / "data" / "opensim-jam" / "models" / "knee_healthy" / "lenhart2015" / "lenhart2015.osim"
NS = [15, 20, 30, 45, 60, 90, 120, 180, 240, 360, 500, 720]
METHODS = ("MBM", "TPSM-1", "TPSM-3", "TPSM-4")
COLORS = {"MBM": "k", "TPSM-1": "tab:blue", "TPSM-3": "tab:red", "TPSM-4": "tab:green",
          "MBM-centroid": "goldenrod"}


def _best(fn, rep=20):
    b = np.inf
    for _ in range(rep):
        t0 = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t0)
    return b


def synthetic_study(out: Path):
    studies = {}
    Rb, tb = synthetic_flexion(np.linspace(0, 30, 500))
    for l0 in (0.027, 0.010):
        lig = synthetic_acl(l0=l0)
        st = convergence_study(lig, NS, METHODS + ("MBM-centroid",), timing_repeats=30)
        for m in METHODS:
            st[m]["batch_us"] = np.array([_best(lambda f=lig.model(m, n): f.wrench(Rb, tb), 5) / 500 * 1e6
                                          for n in NS])
        studies[l0] = st
    # fig 6
    fig, axs = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    for j, l0 in enumerate((0.027, 0.010)):
        st = studies[l0]
        for i, key in enumerate(("eF", "eM")):
            ax = axs[i, j]
            for m in METHODS:
                ax.semilogy(NS, np.maximum(st[m][key], 1e-4), "o-", color=COLORS[m], label=m, ms=3)
            ax.axhline(10, color="gray", ls=":")
            ax.axhline(4, color="gray", ls="--", lw=0.7)
            ax.set_title(f"{'force' if key == 'eF' else 'moment'} error, l0 = {l0 * 1e3:.0f} mm "
                         f"({'partially slack' if l0 > 0.02 else 'taut'})")
            ax.set_ylabel("error %")
            ax.grid(True, which="both", alpha=0.3)
    for ax in axs[1]:
        ax.set_xlabel("triangles")
    axs[0, 0].legend()
    fig.tight_layout()
    fig.savefig(out / "fig6_errors.png", dpi=120)
    plt.close(fig)
    # fig 9
    st = studies[0.027]
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in ("MBM", "TPSM-1", "MBM-centroid"):
        ax.semilogy(NS, np.maximum(st[m]["eF"], 1e-4), "o-", color=COLORS[m], label=m, ms=3)
    ax.set_xlabel("triangles")
    ax.set_ylabel("force error %")
    ax.set_title("fibre position: vertices (MBM), centroids (modified MBM), TPSM-1")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "fig9_centroid_mbm.png", dpi=120)
    plt.close(fig)
    # fig 7 and 8
    fig, axs = plt.subplots(1, 2, figsize=(10, 4))
    for m in METHODS:
        axs[0].plot(NS, st[m]["us"], "o-", color=COLORS[m], label=f"{m} single pose", ms=3)
        axs[0].plot(NS, st[m]["batch_us"], "s--", color=COLORS[m], label=f"{m} per pose (batch 500)", ms=3)
    axs[0].set_xlabel("triangles")
    axs[0].set_ylabel("µs per wrench")
    axs[0].legend(fontsize=7)
    axs[0].set_title("time vs triangles")
    for m in METHODS:
        axs[1].loglog(st[m]["batch_us"], np.maximum(st[m]["eF"], 1e-4), "o-", color=COLORS[m], label=m, ms=3)
    axs[1].set_xlabel("µs per pose (batch)")
    axs[1].set_ylabel("force error %, l0 = 27 mm")
    axs[1].set_title("error vs time")
    axs[1].legend()
    for ax in axs:
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "fig7_time.png", dpi=120)
    extent = axs[1].get_window_extent().transformed(fig.dpi_scale_trans.inverted())
    fig.savefig(out / "fig8_error_vs_time.png", dpi=120, bbox_inches=extent.expanded(1.25, 1.3))
    plt.close(fig)
    # fig 5
    lig = synthetic_acl()
    e_min, e_max, e_mean, e_std, nv = [], [], [], [], []
    for n in NS:
        mesh = lig.triangulate(n)
        e = mesh.edge_lengths() * 1e3
        e_min.append(e.min()), e_max.append(e.max()), e_mean.append(e.mean()), e_std.append(e.std())
        nv.append(mesh.vertices.shape[0])
    fig, axs = plt.subplots(1, 2, figsize=(9, 3.5))
    e_mean, e_std = np.array(e_mean), np.array(e_std)
    axs[0].plot(NS, e_min, "k-", NS, e_max, "k-")
    axs[0].plot(NS, e_mean, "b-")
    axs[0].fill_between(NS, e_mean - e_std, e_mean + e_std, color="tab:blue", alpha=0.2)
    axs[0].set_xlabel("triangles")
    axs[0].set_ylabel("edge length (mm)")
    axs[1].plot(NS, nv, "o-")
    axs[1].set_xlabel("triangles")
    axs[1].set_ylabel("vertices")
    fig.tight_layout()
    fig.savefig(out / "fig5_meshes.png", dpi=120)
    plt.close(fig)
    # fig 10
    R, t = lig.default_pose
    fig = plt.figure(figsize=(6, 6))
    ax = fig.add_subplot(projection="3d")
    for fib, col, lw in ((lig.mbm(45), "k", 0.8), (lig.fibres(45, 1), "tab:blue", 1.0)):
        q = fib.q @ R.T + t
        for a, b in zip(fib.p * 1e3, q * 1e3):
            ax.plot(*np.c_[a, b], color=col, lw=lw)
    for ins, RR, tt in ((lig.tibial, np.eye(3), np.zeros(3)), (lig.femoral, R, t)):
        c = ins.to_bone(np.vstack([ins.contour, ins.contour[:1]])) @ RR.T + tt
        ax.plot(*(c * 1e3).T, color="tab:red", lw=2)
    ax.set_xlabel("x anterior (mm)")
    ax.set_ylabel("y superior (mm)")
    ax.set_zlabel("z lateral (mm)")
    ax.set_title("synthetic ACL, 45 triangles: TPSM-1 (blue), MBM (black)")
    fig.tight_layout()
    fig.savefig(out / "fig10_fibres.png", dpi=120)
    plt.close(fig)
    return studies


def lenhart_strands():
    from lxml import etree
    P, Q, l0, k = [], [], [], []
    for lig in etree.parse(str(LENHART)).getroot().iter("Blankevoort1991Ligament"):
        if not lig.get("name").startswith("ACL"):
            continue
        pts = {pp.findtext("socket_parent_frame"): np.array(pp.findtext("location").split(), float)
               for pp in lig.iter("PathPoint")}
        P.append(pts["/bodyset/tibia_proximal_r"])
        Q.append(pts["/bodyset/femur_distal_r"])
        l0.append(float(lig.findtext("slack_length")))
        k.append(float(lig.findtext("linear_stiffness")))
    return np.array(P), np.array(Q), np.array(l0), np.array(k)


def lenhart_poses(coords_list, tmpdir: Path):
    """Knee kinematics from OpenSim 4.6 (Smith2018 plugin components stripped)."""
    import opensim as osim
    from lxml import etree
    osim.Logger.setLevelString("error")     # not one "[warning] Couldn't find file" line per absent mesh
    tree = etree.parse(str(LENHART))
    for el in list(tree.getroot().iter()):
        if isinstance(el.tag, str) and el.tag.startswith("Smith2018"):
            el.getparent().remove(el)
    path = tmpdir / "lenhart_plain.osim"
    tree.write(str(path))
    m = osim.Model(str(path))
    s = m.initSystem()
    cs = m.getCoordinateSet()
    tib, fem = m.getBodySet().get("tibia_proximal_r"), m.getBodySet().get("femur_distal_r")

    def mat(T):
        return (np.array([[T.R().get(i, j) for j in range(3)] for i in range(3)]),
                np.array([T.p().get(i) for i in range(3)]))
    Rs, ts = [], []
    for coords in coords_list:
        for nm in ("knee_flex_r", "knee_add_r", "knee_rot_r", "knee_tx_r", "knee_ty_r", "knee_tz_r"):
            cs.get(nm).setValue(s, coords.get(nm, 0.0), False)
        m.realizePosition(s)
        Rt, pt = mat(tib.getTransformInGround(s))
        Rf, pf = mat(fem.getTransformInGround(s))
        Rs.append(Rt.T @ Rf)
        ts.append(Rt.T @ (pf - pt))
    return np.array(Rs), np.array(ts)


def lenhart_study(out: Path):
    if not LENHART.is_file():
        print("Lenhart2015 data not found; skipping the knee study")
        return None
    from arthron.io.mesh import load_mesh
    P, Q, l0, k = lenhart_strands()
    mesh = load_mesh(LENHART.parent / "Geometry" / "lenhart2015-R-tibia-bone.stl")
    lig = tpsm_from_strands(P, Q, l0, k, mesh=mesh, name="ACL")
    mbm = strand_fibres(P, Q, l0, k)
    R0, t0 = np.eye(3), np.zeros(3)
    ref = reference_wrench(lig, R0, t0)
    ns = [15, 30, 60, 120, 240, 360, 720]
    errs = {m: [] for m in ("TPSM-1", "TPSM-3")}
    for n in ns:
        for m in errs:
            w = lig.model(m, n).wrench(R0, t0)
            errs[m].append(100 * abs(w.force_magnitude - ref.force_magnitude) / ref.force_magnitude)
    w_mbm = mbm.wrench(R0, t0)
    res = {"reference": ref, "mbm12": w_mbm, "tpsm3_360": lig.fibres(360, 3).wrench(R0, t0)}
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for m, e in errs.items():
        ax.semilogy(ns, np.maximum(e, 1e-5), "o-", color=COLORS[m], label=m)
    ax.set_xlabel("triangles")
    ax.set_ylabel("force error % vs adaptive reference")
    ax.set_title(f"Lenhart2015 ACL at the default pose\nTPSM |F| = {ref.force_magnitude:.2f} N, "
                 f"12-strand MBM |F| = {w_mbm.force_magnitude:.2f} N", fontsize=9)
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "lenhart_convergence.png", dpi=120)
    plt.close(fig)
    try:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            ang = np.linspace(0, 90, 91)
            R, t = lenhart_poses([{"knee_flex_r": np.deg2rad(a), "knee_tx_r": 0.005} for a in ang], Path(d))
        w_t = lig.fibres(360, 3).wrench(R, t)
        w_m = mbm.wrench(R, t)
        fig, axs = plt.subplots(1, 2, figsize=(10, 3.8))
        axs[0].plot(ang, w_t.force_magnitude, label="TPSM-3, 360 triangles")
        axs[0].plot(ang, w_m.force_magnitude, "k--", label="12-strand MBM (Lenhart2015)")
        axs[0].set_ylabel("|F| on tibia (N)")
        axs[1].plot(ang, w_t.moment_magnitude, label="TPSM-3")
        axs[1].plot(ang, w_m.moment_magnitude, "k--", label="MBM")
        axs[1].set_ylabel("|M| about tibia_proximal_r origin (N·m)")
        for ax in axs:
            ax.set_xlabel("knee flexion (°), 5 mm anterior drawer")
            ax.legend()
            ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "lenhart_flexion_sweep.png", dpi=120)
        plt.close(fig)
        res["sweep"] = (ang, w_t, w_m)
    except ImportError:
        print("OpenSim not installed: no Lenhart flexion sweep")
    try:
        import os
        from arthron.render import offscreen_backend
        window, _ = offscreen_backend()        # the VTK window arthron's pictures use (no X server needed)
        if window not in (None, "display"):
            os.environ.setdefault("VTK_DEFAULT_OPENGL_WINDOW", window)
        import pyvista as pv
        pv.OFF_SCREEN = True
        V, F = mesh
        poly = pv.PolyData(V, np.hstack([np.full((len(F), 1), 3), F]).ravel())
        fib = lig.fibres(60, 1)
        pl = pv.Plotter(off_screen=True, window_size=(900, 700))
        pl.add_mesh(poly.clip_box([-0.03, 0.05, -0.045, 0.0, -0.04, 0.05], invert=False), color="ivory")
        lines = np.hstack([fib.p, fib.q]).reshape(-1, 3)
        seg = pv.PolyData(lines, lines=np.hstack([np.full((fib.n, 1), 2), np.arange(2 * fib.n).reshape(-1, 2)]).ravel())
        pl.add_mesh(seg, color="royalblue", line_width=2)
        cont = lig.tibial.to_bone(lig.tibial.contour)
        pl.add_mesh(pv.PolyData(cont), color="red", point_size=6, render_points_as_spheres=True)
        pl.add_mesh(pv.PolyData(P), color="black", point_size=9, render_points_as_spheres=True)
        pl.camera_position = [(0.09, 0.03, 0.08), (0.012, -0.02, 0.0), (0, 1, 0)]
        pl.screenshot(str(out / "lenhart_tibia_fibres.png"))
        pl.close()
    except Exception as exc:  # noqa: BLE001 - off-screen rendering may be unavailable
        warnings.warn(f"pyvista off-screen view skipped: {exc}")
    return res


def main(out_dir="tpsm_study_out"):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    studies = synthetic_study(out)
    for l0, st in studies.items():
        print(f"synthetic ACL, l0 = {l0 * 1e3:.0f} mm, reference |F| = {st['reference'].force_magnitude:.2f} N")
        for m in METHODS + ("MBM-centroid",):
            print(f"  {m:13s} " + " ".join(f"{n}:{e:.2f}%" for n, e in zip(NS, st[m]["eF"])))
    res = lenhart_study(out)
    if res:
        r, mb, t3 = res["reference"], res["mbm12"], res["tpsm3_360"]
        print(f"Lenhart2015 ACL, default pose: TPSM (adaptive) F = {np.round(r.force, 3)} N |F| = "
              f"{r.force_magnitude:.3f} N; TPSM-3@360 |F| = {t3.force_magnitude:.3f} N; "
              f"12-strand MBM F = {np.round(mb.force, 3)} N |F| = {mb.force_magnitude:.3f} N")
    print("figures in", out.resolve())


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="The TPSM paper's TPSM vs MBM study: figures as PNG")
    ap.add_argument("out_dir", nargs="?", default="tpsm_study_out", help="output folder")
    main(ap.parse_args().out_dir)
