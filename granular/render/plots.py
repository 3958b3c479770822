"""Figures of a run with matplotlib (Agg, no display): energy, multipliers, contacts.

    plot(trajectory, "energy", "energy.png")

- ``energy``: kinetic energy, potential energy and total energy relative to the
  first frame, the energy dissipated by contact impulses since the start, and the
  balance ``E - E(0) + dissipated`` (zero up to the work of user forces and
  solver tolerance), against time (J).
- ``multipliers``: histogram of the positive contact impulses of every frame
  (N s, logarithmic bins), and per frame the largest and the summed impulse.
- ``contacts``: number of active contacts and of constraints the step considered,
  against time.
- ``wall-forces``: the force the spheres exert on each wall surface (N), its
  magnitude against time, and the three components of their sum
  (`Trajectory.wall_forces`: over each frame's step, impulse / dt);
  `plot_wall_forces`.

`plot_stress_strain` draws the stress on a moving plane (a piston: force along its
motion over an area, Pa) against its strain (travel over the sample's height).

Impulses below the solver's tolerance (`granular.records.active_contacts.noise_impulse`) count as zero
in every figure, as in ``granular inspect`` and ``granular run``.

Figures are written under a temporary name and renamed (``.png``, ``.svg`` or ``.pdf``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InvalidInputError
from ..records.files import atomic_path
from . import analysis_plots
from ..records.active_contacts import active_counts, noise_impulse
from ..walls import first_surface, surface_names

KINDS = (
    "energy",
    "multipliers",
    "contacts",
    "wall-forces",
    "profile",
    "stress",
    "coordination",
    "forces",
    "wall-torque",
)
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def plot(trajectory, kind: str, path, title: str | None = None, dpi: int = 120) -> Path:
    """Write the figure ``kind`` (one of `KINDS`) of ``trajectory`` to ``path``."""
    if kind not in KINDS:
        raise InvalidInputError(f"unknown plot {kind!r}: choose one of {', '.join(KINDS)}")
    path = Path(path)
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise InvalidInputError(
            f"unsupported figure extension {path.suffix or '(none)'!r} for {path}: use {', '.join(FIGURE_SUFFIXES)}"
        )
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    drawn = figure(plt, trajectory, kind)
    if title:
        drawn.suptitle(title)
    drawn.tight_layout()
    return save_figure(plt, drawn, path, dpi)


def figure(plt, trajectory, kind: str):
    """The matplotlib figure ``kind`` (one of `KINDS`) of ``trajectory``, drawn with
    ``plt`` (``matplotlib.pyplot``), not yet written (`plot` writes it)."""
    if kind in analysis_plots.KINDS:  # the measurements of granular.analysis
        return analysis_plots.figure(plt, trajectory, kind)
    figures = {"energy": _energy, "multipliers": _multipliers, "contacts": _contacts, "wall-forces": _wall_forces}
    return figures[kind](plt, trajectory)


def save_figure(plt, figure, path, dpi: int) -> Path:
    """Write a matplotlib ``figure`` to ``path`` (format from its suffix) under a
    temporary name, then close it. Returns the path."""
    path = Path(path)
    try:
        with atomic_path(path) as temporary:
            figure.savefig(temporary, dpi=dpi, format=path.suffix.lower().lstrip("."))
    finally:
        plt.close(figure)
    return path


def _energy(plt, trajectory):
    t = trajectory.t
    kinetic, potential = trajectory.kinetic_energy, trajectory.potential_energy
    total = kinetic + potential
    dissipated = trajectory.dissipated_energy
    figure, axes = plt.subplots(figsize=(7.0, 4.2))
    axes.plot(t, kinetic, label="kinetic")
    axes.plot(t, potential - potential[0], label="potential - initial")
    axes.plot(t, total - total[0], label="total - initial", linewidth=2)
    axes.plot(t, dissipated, label="dissipated by contacts", linestyle="--")
    axes.plot(
        t, total - total[0] + dissipated, label="balance: total - initial + dissipated", linestyle=":", color="black"
    )
    _time_axes(axes, "energy (J)", title="energy", legend=True)
    return figure


def _multipliers(plt, trajectory):
    t = trajectory.t
    # multipliers below the solver's tolerance are zeros (granular.records.active_contacts.noise_impulse):
    # left in, their noise stretched the histogram down to 1e-136 N s
    impulses = [np.asarray(c.impulse, float) for c in trajectory.contacts]
    impulses = [np.where(v > noise_impulse(trajectory, k), v, 0.0) for k, v in enumerate(impulses)]
    positive = np.concatenate([v[v > 0] for v in impulses]) if impulses else np.zeros(0)
    largest = np.array([v.max(initial=0.0) for v in impulses])
    summed = np.array([v.sum() for v in impulses])
    figure, (left, right) = plt.subplots(1, 2, figsize=(10.0, 4.2))
    if positive.size:
        low, high = positive.min(), positive.max()
        # logarithmic bins always: equal impulses (a symmetric pile) got linear bins
        # of width 1 N s around them, reaching down to negative impulses
        bins = np.geomspace(low, high * (1 + 1e-9), 40) if high > low else np.geomspace(low / 1.1, high * 1.1, 3)
        left.hist(positive, bins=bins, color="#c0392b", alpha=0.8)
        left.set_xscale("log")
    else:
        left.text(0.5, 0.5, "no positive impulse", ha="center", va="center", transform=left.transAxes)
    left.set_xlabel("impulse (N s)")
    left.set_ylabel("contacts (all frames)")
    left.set_title("distribution of multipliers")
    right.plot(t, largest, label="largest")
    right.plot(t, summed, label="sum")
    if np.any(summed > 0):
        right.set_yscale("log")
    _time_axes(right, "impulse (N s)", title="multipliers per frame", legend=True)
    return figure


def _contacts(plt, trajectory):
    t = trajectory.t

    active = active_counts(trajectory)
    considered = np.array([len(c) for c in trajectory.contacts])
    figure, axes = plt.subplots(figsize=(7.0, 4.2))
    axes.plot(t, considered, label="considered by the step", color="#95a5a6")
    axes.plot(t, active, label="active (impulse above solver noise)", color="#2c3e50", linewidth=2)
    _time_axes(axes, "contacts", title="contacts", legend=True)
    return figure


def plot_wall_forces(trajectory, path, title: str | None = None, dpi: int = 120) -> Path:
    """Write the ``wall-forces`` figure of ``trajectory`` to ``path`` (.png, .svg, .pdf):
    the magnitude of the force on each wall surface that carried one, and the
    components of the total force on the walls, against time (N). Raises
    `InvalidInputError` for a run without walls."""
    return plot(trajectory, "wall-forces", path, title=title, dpi=dpi)


def _wall_forces(plt, trajectory):
    forces = getattr(trajectory, "wall_forces", None)
    if forces is None or np.asarray(forces).size == 0:
        raise InvalidInputError("this run has no walls, so no wall forces to plot")
    forces = np.asarray(forces, float)
    t = trajectory.t
    names = surface_names((trajectory.system or {}).get("walls", []))
    names += [f"wall {k}" for k in range(len(names), forces.shape[1])]
    magnitude = np.linalg.norm(forces, axis=2)
    loaded = np.flatnonzero(magnitude.max(axis=0) > 0.0)
    figure, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.2))
    for k in loaded:
        left.plot(t, magnitude[:, k], label=names[k])
    if not loaded.size:
        left.text(0.5, 0.5, "no wall contact", ha="center", va="center", transform=left.transAxes)
    else:
        left.legend(fontsize="small")
    _time_axes(left, "|force| (N)", title="force on each wall (over each frame's step)")
    total = forces.sum(axis=1)
    for axis, name in enumerate("xyz"):
        right.plot(t, total[:, axis], label=f"F{name}")
    _time_axes(right, "force (N)", title="total force on the walls", legend=True)
    return figure


def stress_strain(trajectory, wall: int, area: float, height: float) -> tuple[np.ndarray, np.ndarray]:
    """``(strain (F,), stress (F,) Pa)`` of the moving plane ``system["walls"][wall]``
    (a piston): strain is its travel along its normal over ``height`` (m, the
    sample's initial height), stress the force the spheres push it back with,
    ``-F . n``, over ``area`` (m^2). Both are >= 0 for a piston moving into the sample.
    """
    walls = (trajectory.system or {}).get("walls", [])
    if not 0 <= wall < len(walls) or walls[wall].get("type") != "plane":
        raise InvalidInputError(f"walls[{wall}] of this run is not a plane")
    if not (area > 0.0 and height > 0.0):
        raise InvalidInputError(f"area and height must be positive, got {area} m^2 and {height} m")

    normal = np.asarray(walls[wall]["normal"], float)
    displacements = trajectory.wall_displacements
    travel = np.zeros(len(trajectory.t)) if displacements is None else displacements[:, wall] @ normal
    forces = trajectory.wall_forces[:, first_surface(walls, wall)]
    return travel / height, -(forces @ normal) / area


def plot_stress_strain(
    trajectory, path, wall: int, area: float, height: float, title: str | None = None, dpi: int = 120, bins: int = 30
) -> Path:
    """Write the stress (Pa) on the piston ``system["walls"][wall]`` against its strain
    (`stress_strain`) to ``path`` (.png, .svg, .pdf): each frame's value (thin), and
    their mean over ``bins`` equal intervals of strain (bold). Each frame's force is
    that of its own step, so a run recorded at every step (``record_every=1``) gives
    bin means that are the mean force over the bin's time: the impulses of the
    collisions are then averaged, not sampled."""
    path = Path(path)
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise InvalidInputError(
            f"unsupported figure extension {path.suffix or '(none)'!r} for {path}: use {', '.join(FIGURE_SUFFIXES)}"
        )
    strain, stress = stress_strain(trajectory, wall, area, height)
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7.0, 4.2))
    axes.plot(strain, stress, linewidth=0.6, color="#95a5a6", label="each frame's step")
    centres, means = _bin_means(strain[1:], stress[1:], bins)  # frame 0 has no step
    axes.plot(centres, means, marker="o", linewidth=2, color="#c0392b", label=f"mean over {bins} strain bins")
    axes.set_xlabel("strain (piston travel / initial height)")
    axes.set_ylabel("stress on the piston (Pa)")
    axes.set_title(title or "piston compression")
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    return save_figure(plt, figure, path, dpi)


def _bin_means(x: np.ndarray, y: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Centres and means of ``y`` over ``bins`` equal intervals of ``x`` (empty ones left out)."""
    if x.size == 0:
        return np.zeros(0), np.zeros(0)
    edges = np.linspace(x.min(), x.max(), max(int(bins), 1) + 1)
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2)
    counts = np.bincount(which, minlength=len(edges) - 1)
    sums = np.bincount(which, weights=y, minlength=len(edges) - 1)
    full = counts > 0
    return 0.5 * (edges[:-1] + edges[1:])[full], sums[full] / counts[full]


def _time_axes(axes, ylabel: str, title: str | None = None, legend: bool = False) -> None:
    """The common dress of a plot against time: labels, title, grid, legend."""
    axes.set_xlabel("time (s)")
    axes.set_ylabel(ylabel)
    if title is not None:
        axes.set_title(title)
    axes.grid(alpha=0.3)
    if legend:
        axes.legend(fontsize="small")
