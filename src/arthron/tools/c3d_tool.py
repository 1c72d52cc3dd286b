"""``arthron c3d``: a C3D trial to OpenSim's files (``.trc``, GRF ``.mot``, ExternalLoads ``.xml``).

:func:`export_c3d` reads the C3D once (:func:`arthron.io.c3d.read_c3d`, so the rotation, units
and force location are stated once and apply to every output) and writes, as one group (all
files or none, :func:`arthron.io.files.output_group`):

- ``<stem>.trc``: the markers (in the file's length unit unless ``trc_units`` says otherwise;
  invalid points as ``NaN``, which ``TRCFileAdapter`` reads as missing);
- ``<stem>_grf.mot``: one row per analog frame, columns ``f1_1 f1_2 f1_3 p1_1 ... m1_3 f2_1 ...``
  (OpenSim's ``C3DFileAdapter`` force table, flattened as ``STOFileAdapter`` flattens it), by
  default in N, m and N·m as OpenSim's ExternalLoads expect;
- ``<stem>_external_loads.xml``: an ``ExternalLoads`` with one ``ExternalForce`` per platform
  (``force_identifier`` ``fN_``, ``point_identifier`` ``pN_``, ``torque_identifier`` ``mN_``,
  all expressed in ground, ``datafile`` the ``.mot``); ``applied_to_body`` is the body named in
  ``bodies`` for that platform, else a placeholder ``FOOT_ON_PLATFORM_N`` to edit.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import OptionError
from ..io.c3d import C3DTrial, read_c3d
from ..io.files import atomic_write, output_group
from ..io.setup import ExternalForce, ExternalLoads
from ..io.sto import iter_sto
from ..io.trc import format_trc

__all__ = ["export_c3d", "C3DExport", "external_loads_xml", "c3d_markers", "c3d_external_loads"]


@dataclass
class C3DExport:
    """Paths written by :func:`export_c3d` (``grf``/``external_loads`` None without platforms)
    and the trial read."""

    trc: Path
    grf: Path | None
    external_loads: Path | None
    trial: C3DTrial


def external_loads_xml(trial: C3DTrial, datafile: str, bodies=None) -> bytes:
    """ExternalLoads XML (OpenSim 4.x document) for the platforms of ``trial``; ``datafile``
    is written as given (a name relative to the XML's folder). ``bodies``: one body name per
    platform or None (placeholders)."""
    from lxml import etree

    n = len(trial.platforms)
    if bodies is not None and len(bodies) != n:
        raise OptionError(f"--bodies names {len(bodies)} bodies for {n} force platforms")
    doc = etree.Element("OpenSimDocument", Version="40000")
    el = etree.SubElement(doc, "ExternalLoads", name="externalloads")
    objs = etree.SubElement(el, "objects")
    for k, p in enumerate(trial.platforms):
        if bodies is None:
            objs.append(etree.Comment(f" platform {p.number} (type {p.type}): set applied_to_body "
                                      "to the body that stands on it "))
        ef = etree.SubElement(objs, "ExternalForce", name=f"platform{p.number}")
        for tag, text in (("applied_to_body", bodies[k] if bodies else f"FOOT_ON_PLATFORM_{p.number}"),
                          ("force_expressed_in_body", "ground"),
                          ("point_expressed_in_body", "ground"),
                          ("force_identifier", f"f{p.number}_"),
                          ("point_identifier", f"p{p.number}_"),
                          ("torque_identifier", f"m{p.number}_"),
                          ("data_source_name", Path(datafile).stem)):
            etree.SubElement(ef, tag).text = text
    etree.SubElement(el, "groups")
    etree.SubElement(el, "datafile").text = datafile
    etree.SubElement(el, "external_loads_model_kinematics_file")
    etree.SubElement(el, "lowpass_cutoff_frequency_for_load_kinematics").text = "-1"
    return etree.tostring(doc, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def export_c3d(c3d_path, out_dir, *, force_location: str = "origin", rotation=None,
               units: str = "m", trc_units: str | None = None, bodies=None) -> C3DExport:
    """Read ``c3d_path`` and write its ``.trc``, GRF ``.mot`` and ExternalLoads ``.xml`` into
    ``out_dir`` (created if missing). Options as :func:`arthron.io.c3d.read_c3d`; ``trc_units``
    overrides the marker file's unit. A C3D without force platforms gives the ``.trc`` only.

    Raises DataFileError (bad or missing file, unwritable output) or OptionError."""
    trial = read_c3d(c3d_path, force_location=force_location, rotation=rotation, units=units)
    if bodies is not None and not trial.platforms:
        trial.require_forces()       # DataFileError naming the file: it has no force platform
    if bodies is not None and len(bodies) != len(trial.platforms):
        raise OptionError(f"--bodies names {len(bodies)} bodies for {len(trial.platforms)} "
                          "force platforms", trial.source)
    out = Path(out_dir)
    stem = Path(c3d_path).stem
    trc = out / f"{stem}.trc"
    grf = out / f"{stem}_grf.mot" if trial.forces is not None else None
    xml = out / f"{stem}_external_loads.xml" if trial.forces is not None else None
    src = [trial.source]
    with output_group():
        atomic_write(trc, format_trc(trial.markers, trc, trc_units), sources=src)
        if grf is not None:
            atomic_write(grf, iter_sto(trial.forces, grf), sources=src)
            atomic_write(xml, external_loads_xml(trial, grf.name, bodies), sources=src)
    return C3DExport(trc=trc, grf=grf, external_loads=xml, trial=trial)


def c3d_markers(c3d_path, *, rotation=None):
    """The markers of a C3D trial (what ``arthron ik`` reads from a ``.c3d``), rotated by
    ``rotation`` into OpenSim's frame: a MarkerTrial in metres."""
    return read_c3d(c3d_path, rotation=rotation).markers


def c3d_external_loads(c3d_path, *, bodies, rotation=None, force_location: str = "origin"):
    """ExternalLoads and its data table straight from a C3D trial (what ``arthron id`` uses for
    ``--external-loads TRIAL.c3d``): one ExternalForce per platform on ``bodies`` (one body per
    platform, in platform order), identifiers ``fN_``/``pN_``/``mN_`` in ground, data in N, m,
    N·m, the same as :func:`export_c3d` writes.

    Returns (ExternalLoads, Table). Raises DataFileError naming the file when it has no force
    platform; OptionError when ``bodies`` is missing or does not name one body per platform."""
    trial = read_c3d(c3d_path, force_location=force_location, rotation=rotation, units="m")
    table = trial.require_forces()
    n = len(trial.platforms)
    if not bodies:
        raise OptionError(f"ground reactions from a C3D file need the body on each of its {n} "
                          "force platforms (--bodies calcn_r,calcn_l)")
    if len(bodies) != n:
        raise OptionError(f"--bodies names {len(bodies)} bodies for {n} force platforms", trial.source)
    forces = [ExternalForce(name=f"platform{p.number}", applied_to_body=b,
                            force_identifier=f"f{p.number}_", point_identifier=f"p{p.number}_",
                            torque_identifier=f"m{p.number}_", data_source_name=table.name)
              for p, b in zip(trial.platforms, bodies)]
    ext = ExternalLoads(name="externalloads", forces=forces, datafile=None, path=trial.source)
    return ext, table
