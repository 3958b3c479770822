"""Figures of the measurements of `granular.analysis` (matplotlib), for ``granular plot``:

- ``profile``: the last frame's coarse-grained packing fraction and ``sigma_zz``,
  ``sigma_xx``, pressure against height (Lucy kernel of a diameter).
- ``stress``: pressure and deviatoric stress of the spheres' bounding box against time.
- ``coordination``: Z and Z* (without rattlers) and the rattler fraction against time.
- ``forces``: ``P(f/<f>)`` of the last frame, on logarithmic axes.
- ``wall-torque``: torque about the z axis through the origin and power of each wall
  surface against time (N m, W); a drum needs the opposite torque.
"""

from __future__ import annotations
from ..analysis import BoxRegion, force_distribution, frame_forces, tables

KINDS = ("profile", "stress", "coordination", "forces", "wall-torque")


def figure(plt, trajectory, kind: str):
    return {
        "profile": _profile,
        "stress": _stress,
        "coordination": _coordination,
        "forces": _forces,
        "wall-torque": _wall_torque,
    }[kind](plt, trajectory)


def _last_measured(trajectory) -> int:
    return len(trajectory) - 1


def _profile(plt, trajectory):
    table = tables.profile_table(trajectory, _last_measured(trajectory), "z")
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 4.5), sharey=True)
    left.plot(table["packing_fraction"], table["position"], color="k")
    left.set_xlabel("packing fraction")
    left.set_ylabel("height z (m)")
    for column, label in (("sigma_zz", r"$\sigma_{zz}$"), ("sigma_xx", r"$\sigma_{xx}$"), ("pressure", "pressure")):
        right.plot(table[column], table["position"], label=label)
    right.set_xlabel("stress (Pa, compression positive)")
    right.legend()
    for axes in (left, right):
        axes.grid(alpha=0.3)
    return fig


def _stress(plt, trajectory):
    forces = frame_forces(trajectory, -1)
    reach = forces.radii.max()
    region = BoxRegion(forces.centres.min(axis=0) - reach, forces.centres.max(axis=0) + reach)
    table = tables.series(trajectory, region)
    fig, axes = plt.subplots(figsize=(7, 4))
    axes.plot(table["t"], table["pressure"], label="pressure")
    axes.plot(table["t"], table["deviatoric"], label="deviatoric stress q")
    axes.set_xlabel("time (s)")
    axes.set_ylabel("Pa (Love-Weber, last frame's bounding box)")
    axes.legend()
    return fig


def _coordination(plt, trajectory):
    table = tables.series(trajectory)
    fig, axes = plt.subplots(figsize=(7, 4))
    axes.plot(table["t"], table["z"], label="Z")
    axes.plot(table["t"], table["z_mechanical"], label="Z* (without rattlers)")
    axes.set_xlabel("time (s)")
    axes.set_ylabel("contacts per sphere")
    twin = axes.twinx()
    twin.plot(table["t"], table["rattler_fraction"], color="grey", linestyle=":", label="rattler fraction")
    twin.set_ylabel("rattler fraction")
    axes.legend(loc="upper left")
    return fig


def _forces(plt, trajectory):
    density, edges = force_distribution(frame_forces(trajectory, -1), bins=30)
    middles = 0.5 * (edges[1:] + edges[:-1])
    fig, axes = plt.subplots(figsize=(6, 4))
    axes.semilogy(middles[density > 0], density[density > 0], "o-")
    axes.set_xlabel(r"$f / \langle f \rangle$")
    axes.set_ylabel(r"$P(f / \langle f \rangle)$")
    axes.grid(alpha=0.3)
    return fig


def _wall_torque(plt, trajectory):
    table = tables.wall_table(trajectory)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for name, rows in table.groupby("name", sort=False):
        top.plot(rows["t"], rows["torque"], label=name)
        bottom.plot(rows["t"], rows["power"], label=name)
    top.set_ylabel("torque about z (N m)")
    bottom.set_ylabel("power delivered (W)")
    bottom.set_xlabel("time (s)")
    top.legend(fontsize="small")
    return fig
