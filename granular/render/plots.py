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

Impulses below the solver's tolerance (`granular.runs.noise_impulse`) count as zero
in every figure, as in ``granular inspect`` and ``granular run``.

Figures are written under a temporary name and renamed (``.png``, ``.svg`` or ``.pdf``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InvalidInputError
from ..files import atomic_path

KINDS = ("energy", "multipliers", "contacts")
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def plot(trajectory, kind: str, path, title: str | None = None, dpi: int = 120) -> Path:
    """Write the figure ``kind`` (one of `KINDS`) of ``trajectory`` to ``path``."""
    if kind not in KINDS:
        raise InvalidInputError(f"unknown plot {kind!r}: choose one of {', '.join(KINDS)}")
    path = Path(path)
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise InvalidInputError(f"unsupported figure extension {path.suffix or '(none)'!r} for {path}: "
                                f"use {', '.join(FIGURE_SUFFIXES)}")
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    figure = {"energy": _energy, "multipliers": _multipliers, "contacts": _contacts}[kind](plt, trajectory)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return save_figure(plt, figure, path, dpi)


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
    axes.plot(t, total - total[0] + dissipated, label="balance: total - initial + dissipated",
              linestyle=":", color="black")
    axes.set_xlabel("time (s)")
    axes.set_ylabel("energy (J)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small")
    axes.set_title("energy")
    return figure


def _multipliers(plt, trajectory):
    from ..runs import noise_impulse

    t = trajectory.t
    # multipliers below the solver's tolerance are zeros (granular.runs.noise_impulse):
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
    right.set_xlabel("time (s)")
    right.set_ylabel("impulse (N s)")
    right.set_title("multipliers per frame")
    right.grid(alpha=0.3)
    right.legend(fontsize="small")
    return figure


def _contacts(plt, trajectory):
    t = trajectory.t
    from ..runs import active_counts

    active = active_counts(trajectory)
    considered = np.array([len(c) for c in trajectory.contacts])
    figure, axes = plt.subplots(figsize=(7.0, 4.2))
    axes.plot(t, considered, label="considered by the step", color="#95a5a6")
    axes.plot(t, active, label="active (impulse above solver noise)", color="#2c3e50", linewidth=2)
    axes.set_xlabel("time (s)")
    axes.set_ylabel("contacts")
    axes.set_title("contacts")
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small")
    return figure
