"""A small arm model built in code, and a synthesized elbow-flexion trial, for ``arthron demo``.

The model is the embedded default until the generic shoulder–elbow model of the shoulder–elbow model paper lands:
ground → (weld) thorax → shoulder (PinJoint, elevation about z) → humerus → elbow (PinJoint,
flexion about z) → forearm-and-hand. Segment masses and inertias follow de Leva (1996) for a
1.86 m, 85.5 kg man (the shoulder–elbow model paper's generic subject): upper arm 2.71 % of body mass (2.32 kg), length
0.282 m, COM at 57.7 % from the shoulder, radii of gyration 28.5/26.9/15.8 %; forearm + hand 2.23 %
(1.91 kg), length 0.45 m, COM at 0.2 m from the elbow. Two path actuators (biceps, triceps) with
straight paths and four markers come with it.
"""
from __future__ import annotations

import numpy as np

from .forces import PathActuator
from .model import (Body, Coordinate, GeometryPath, Joint, Marker, Model, OffsetFrame,
                    PathPoint)

__all__ = ["build_demo_arm", "elbow_flexion_trial"]


def _inertia(m, L, rx, ry, rz):
    return np.diag([m * (rx * L) ** 2, m * (ry * L) ** 2, m * (rz * L) ** 2])


def build_demo_arm() -> Model:
    """The demo arm as a :class:`Model` (SI units; y up, x anterior)."""
    m = Model(name="arthron_demo_arm")
    m.credits = "arthron demo arm (de Leva 1996 segment parameters)"
    m_ua, L_ua = 2.32, 0.282
    m_fa, L_fa = 1.91, 0.45
    m.bodies["thorax"] = Body("thorax", 30.0, np.array([0.0, -0.2, 0.0]), np.diag([1.2, 0.5, 1.2]))
    m.bodies["humerus"] = Body("humerus", m_ua, np.array([0.0, -0.577 * L_ua, 0.0]),
                               _inertia(m_ua, L_ua, 0.285, 0.158, 0.269))
    m.bodies["forearm"] = Body("forearm", m_fa, np.array([0.0, -0.2, 0.0]),
                               _inertia(m_fa, L_fa, 0.30, 0.12, 0.30))

    def frame(joint, name, parent, tr):
        f = OffsetFrame(name, f"/jointset/{joint}/{name}", parent, np.asarray(tr, float), np.zeros(3),
                        owner=f"joint:{joint}")
        m.frames[f.path] = f
        return f.path

    p = frame("thorax_weld", "ground_offset", "/ground", [0, 1.4, 0])
    c = frame("thorax_weld", "thorax_offset", "/bodyset/thorax", [0, 0, 0])
    m.joints["thorax_weld"] = Joint("thorax_weld", "WeldJoint", p, c)
    p = frame("shoulder", "thorax_offset", "/bodyset/thorax", [0, 0, 0.17])
    c = frame("shoulder", "humerus_offset", "/bodyset/humerus", [0, 0, 0])
    m.joints["shoulder"] = Joint("shoulder", "PinJoint", p, c, [
        Coordinate("shoulder_elev", "shoulder", 0.0, range=(-1.0, 3.0), clamped=True)])
    p = frame("elbow", "humerus_offset", "/bodyset/humerus", [0, -L_ua, 0])
    c = frame("elbow", "forearm_offset", "/bodyset/forearm", [0, 0, 0])
    m.joints["elbow"] = Joint("elbow", "PinJoint", p, c, [
        Coordinate("elbow_flex", "elbow", 0.0, range=(0.0, 2.6), clamped=True)])
    for name, body, loc in [("ACROMION", "humerus", [0, 0.02, 0]), ("LAT_EPICONDYLE", "humerus", [0, -L_ua, 0.03]),
                            ("RADIAL_STYLOID", "forearm", [0, -0.26, 0.03]), ("HAND", "forearm", [0, -0.4, 0])]:
        m.markers[name] = Marker(name, f"/bodyset/{body}", np.array(loc, float))
    for name, pts, f_max in [
        ("biceps", [("humerus", [0.02, -0.02, 0.0]), ("forearm", [0.02, -0.04, 0.0])], 600.0),
        ("triceps", [("humerus", [-0.02, -0.05, 0.0]), ("humerus", [-0.025, -L_ua + 0.02, 0.0]),
                     ("forearm", [-0.025, 0.02, 0.0])], 800.0),
    ]:
        gp = GeometryPath([PathPoint(f"{name}-P{k + 1}", "PathPoint", f"/bodyset/{b}", np.array(l, float))
                           for k, (b, l) in enumerate(pts)])
        m.forces[name] = PathActuator(name, path=gp, optimal_force=f_max)
    return m


def elbow_flexion_trial(n_frames: int = 121, duration: float = 1.0):
    """A smooth elbow flexion 0 → 90° → 0 with the shoulder slightly elevated.

    Returns
    -------
    time : (T,) s; labels : list[str]; values : (T, 2) in degrees (shoulder_elev, elbow_flex)
    """
    t = np.linspace(0.0, duration, n_frames)
    s = 0.5 - 0.5 * np.cos(2 * np.pi * t / duration)
    return t, ["shoulder_elev", "elbow_flex"], np.column_stack([10.0 + 5.0 * s, 90.0 * s])
