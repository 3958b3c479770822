"""The Coulomb sweeps' largest residual, sweep by sweep, on steps of Siconos' box.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/sweep_trace.py [--n 8000] [--mu 0.5]
        [--seed 0] [--steps 150 170 190] [--sweeps 3000] [--every 50] [--plain] [--without-friction]
        [--spectrum]

The scene is `peer_scenes.siconos_box` (as in `stress.py`). The run is stepped to each
of ``steps``, and the stage-4 solve of that step (the arguments
`friction_gauss_seidel.solve` received) is kept. From each kept start it prints:

- what `friction_gauss_seidel.solve` itself does: its sweeps and the residual it keeps;
- ``sweeps`` sweeps with the solve's momentum (`friction_gauss_seidel._Momentum`; plain
  sweeps with ``--plain``), without its stall rules, repairs or jumps: the largest
  natural residual in units of each contact's tolerance every ``every`` sweeps, the
  first sweep at which it is within the tolerance (measured every second sweep), and
  the range it stays in after that.

With ``--without-friction`` the kept problems are replayed with every friction coefficient 0:
the normal law alone on the same contacts, velocities and tolerances, to tell what the
depth of the network costs the sweeps from what friction adds. With ``--spectrum`` it also
prints the spectrum of the linear system the solve's answer holds: the rows of its closed
contacts (the normal row, and the two tangent rows of a sticking one), their Delassus
matrix ``H M^{-1} H^T`` scaled to a unit diagonal, its null space (self-stressed loops
of sticking contacts), its smallest nonzero eigenvalues and its largest. The ratio of
the largest to the smallest nonzero one (the condition number on the matrix's range)
sets the sweeps' rate on a linear system (Saad, *Iterative methods for sparse linear
systems*, 2003, chapter 4).

On the deep 8,000-sphere box the residual meets the tolerance and then wanders about
it, where on the 1,000-sphere box it goes on down to the sweeps' aim
(benchmarks/README.md, "why the deep box costs more sweeps a step").
"""

from __future__ import annotations

import argparse
import dataclasses
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sparse_linalg

import granular as gr
from granular.contact import coulomb_rows
from granular.contact import friction_gauss_seidel as gauss_seidel
from granular.contact.friction import FRICTION_SWEEPS
from peer_scenes import siconos_box


def kept_solves(n: int, mu: float, seed: int, steps, first_round: bool = False) -> list[tuple[int, tuple, np.ndarray]]:
    """``(step, arguments, centres)`` of the stage-4 solve of each of ``steps`` (the
    largest solve of the step: the impact stage's are smaller; with ``first_round``, the
    step's first solve of at least half as many contacts, the first round of its
    working set, where a later round starts from the last one's answer): the arguments
    ``(rows, predicted, start, tolerance, floor)`` `friction_gauss_seidel.solve`
    received, and the sphere centres (n, 3) at the start of the step."""
    world, dt = siconos_box(n=n, seed=seed, friction=mu)
    simulation = gr.Simulation(world, dt=dt)
    solve, kept, current = gauss_seidel.solve, [], []

    def keeping(rows, predicted, start, tolerance, max_sweeps, floor=None, **options):
        current.append((rows, predicted.copy(), np.array(start, copy=True), np.array(tolerance, copy=True), floor))
        return solve(rows, predicted, start, tolerance, max_sweeps, floor=floor, **options)

    gauss_seidel.solve = keeping
    try:
        for step in range(max(steps) + 1):
            current.clear()
            centres = simulation.positions.copy()
            simulation.step()
            if step in steps and current:
                kept.append((step, _kept_round(current, first_round), centres))
    finally:
        gauss_seidel.solve = solve
    return kept


def _kept_round(solves: list, first_round: bool) -> tuple:
    """The largest of a step's solves, or with ``first_round`` the first one of at least
    half its size (`kept_solves`)."""
    largest = max(solves, key=lambda solve: solve[0].cols.shape[0])
    if not first_round:
        return largest
    return next(solve for solve in solves if 2 * solve[0].cols.shape[0] >= largest[0].cols.shape[0])


def add_solve_arguments(parser: argparse.ArgumentParser, n: int, steps) -> None:
    """The options that choose the kept solves (`kept_solves`): ``--n``, ``--mu``,
    ``--seed`` and ``--steps``, with the script's defaults ``n`` and ``steps``."""
    parser.add_argument("--n", type=int, default=n)
    parser.add_argument("--mu", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, nargs="+", default=list(steps))


def replayed_solves(args):
    """``(step, rows, predicted, start, tolerance (m,), floor)`` of each kept solve that
    the options of `add_solve_arguments` choose, the run's time-step and tolerance
    warnings silenced (the replays judge the solves themselves)."""
    warnings.simplefilter("ignore", gr.TimeStepWarning)
    warnings.simplefilter("ignore", gr.SolverToleranceWarning)
    first_round = getattr(args, "first_round", False)
    for step, (rows, predicted, start, tolerance, floor), _ in kept_solves(
        args.n, args.mu, args.seed, set(args.steps), first_round
    ):
        yield step, rows, predicted, start, np.broadcast_to(tolerance, (rows.cols.shape[0],)), floor


def measured_iterates(rows, predicted, start, tolerance, sweeps: int, plain: bool = False):
    """The solve's sweeps replayed from ``start`` (its momentum, or plain sweeps with
    ``plain``; none of its stall rules): ``(sweep, r, levels)`` before every second of
    ``sweeps`` sweeps and after the last, ``levels`` (m,) the natural residuals in units of
    each contact's tolerance (m,) and ``r`` (m, q) the impulses then (not a copy: the
    next sweep changes them)."""
    r = coulomb_rows.onto_cones(rows, start)
    u = coulomb_rows.velocities(rows, predicted, r)
    compiled = rows.compiled
    scale = compiled.visit_scale(tolerance)
    momentum = gauss_seidel._Momentum(r, u)
    momentum.enabled = not plain
    for sweep in range(sweeps + 1):
        if sweep % gauss_seidel.CHECK_EVERY == 0 or sweep == sweeps:
            yield sweep, r, coulomb_rows.contact_residuals(rows, u, r) / tolerance
        if sweep < sweeps:
            momentum.extrapolate(r, u)
            _, change = compiled.sweep(u, r, scale)
            momentum.judge(change)


def trace(rows, predicted, start, tolerance, sweeps: int, plain: bool) -> list[float]:
    """The largest residual (in tolerances) before each of ``sweeps`` sweeps and after
    the last, measured every second sweep (NaN in between)."""
    tolerance = np.broadcast_to(tolerance, (rows.cols.shape[0],))
    largest = [np.nan] * (sweeps + 1)
    for sweep, _, levels in measured_iterates(rows, predicted, start, tolerance, sweeps, plain):
        largest[sweep] = float(levels.max())
    return largest


def without_friction(rows, start):
    """The kept problem with every friction coefficient 0 (the normal law alone on the
    same contacts, velocities and tolerances) and its start's friction impulses 0."""
    start = np.array(start, copy=True)
    start[:, 1:] = 0.0
    return dataclasses.replace(rows, mu=np.zeros_like(rows.mu)), start


def held_rows(rows, r) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(H, contact, component, closed, sticking)``: the rows the impulses ``r`` (m, 3)
    hold, ``H`` (k, d) sparse: the normal row of each closed contact (``l_N > 0``), then
    both tangent rows of each sticking one (``|l_T| < mu l_N``); row ``i`` is component
    ``component[i]`` (0 normal, 1 and 2 tangents) of contact ``contact[i]``; ``closed``
    and ``sticking`` are (m,) masks."""
    closed, sticking = closed_and_sticking(rows, r)
    contact = np.concatenate([np.flatnonzero(closed)] + 2 * [np.flatnonzero(sticking)])
    component = np.repeat([0, 1, 2], [closed.sum(), sticking.sum(), sticking.sum()])
    return row_matrix(rows, contact, component), contact, component, closed, sticking


def closed_and_sticking(rows, r) -> tuple[np.ndarray, np.ndarray]:
    """The (m,) masks of the closed contacts (``l_N > 0``) of the impulses ``r`` (m, 3),
    and of the sticking ones among them (``|l_T| < mu l_N``)."""
    normal, tangential = r[:, 0], np.linalg.norm(r[:, 1:3], axis=1)
    closed = normal > 0.0
    return closed, closed & (tangential < rows.mu * normal * (1.0 - 1e-9))


def row_matrix(rows, contact: np.ndarray, component: np.ndarray) -> sp.csr_matrix:
    """``H`` (k, d) sparse: row ``i`` is component ``component[i]`` (0 normal, 1 and 2
    tangents) of contact ``contact[i]``'s rows, the padding coordinate left out."""
    dummy = rows.inverse_mass.size - 1
    cols, values = rows.cols[contact], rows.values[contact, component]
    row_index = np.repeat(np.arange(contact.size), cols.shape[1])
    touched = cols.ravel() < dummy
    return sp.csr_matrix(
        (values.ravel()[touched], (row_index[touched], cols.ravel()[touched])), shape=(contact.size, dummy)
    )


def pattern_delassus(rows, r) -> tuple[sp.csc_matrix, int, int]:
    """``(W, closed, sticking)``: the Delassus matrix of the rows the answer ``r`` (m, 3)
    holds (`held_rows`), scaled to a unit diagonal, and the counts of closed and
    sticking contacts."""
    dummy = rows.inverse_mass.size - 1
    H, _, _, closed, sticking = held_rows(rows, r)
    W = H @ sp.diags(rows.inverse_mass[:dummy]) @ H.T
    scale = sp.diags(1.0 / np.sqrt(W.diagonal()))
    return (scale @ W @ scale).tocsc(), int(closed.sum()), int(sticking.sum())


def spectrum_line(rows, r, count: int = 80) -> str:
    """The held pattern's null space among its ``count`` smallest eigenvalues, its
    smallest nonzero ones and its largest (`pattern_delassus`); shift-invert just below
    0, since the matrix is semidefinite."""
    W, closed, sticking = pattern_delassus(rows, r)
    smallest = np.sort(sparse_linalg.eigsh(W, k=min(count, W.shape[0] - 1), sigma=-1e-7, return_eigenvectors=False))
    largest = float(sparse_linalg.eigsh(W, k=1, which="LA", return_eigenvectors=False)[0])
    null = smallest < 1e-9 * largest
    nonzero = smallest[~null]
    shown = " ".join(f"{value:.2g}" for value in nonzero[:8])
    return (
        f"  held: {closed} closed contacts ({sticking} sticking), {W.shape[0]} rows; null space "
        f"{int(null.sum())} (of the {smallest.size} smallest); smallest nonzero {shown}; largest {largest:.2f}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_solve_arguments(parser, 8000, [150, 170, 190])
    parser.add_argument("--sweeps", type=int, default=3000)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--plain", action="store_true", help="plain sweeps, without momentum")
    parser.add_argument(
        "--without-friction", action="store_true", help="the kept problems with mu = 0 (and no friction impulse)"
    )
    parser.add_argument("--spectrum", action="store_true", help="the spectrum of the rows the answer holds")
    args = parser.parse_args()
    for step, rows, predicted, start, tolerance, floor in replayed_solves(args):
        m = rows.cols.shape[0]
        if args.without_friction:
            rows, start = without_friction(rows, start)
        answer, used, _ = gauss_seidel.solve(rows, predicted, start, tolerance, FRICTION_SWEEPS, floor=floor)
        velocities = coulomb_rows.velocities(rows, predicted, answer)
        kept_at = float((coulomb_rows.contact_residuals(rows, velocities, answer) / tolerance).max())
        largest = np.array(trace(rows, predicted, start, tolerance, args.sweeps, args.plain))
        within = np.flatnonzero(largest <= 1.0)
        first = int(within[0]) if within.size else None
        after = largest[first:] if first is not None else largest[:0]
        after = after[np.isfinite(after)]
        print(
            f"n {args.n} step {step}: {m} contacts; the solve: {used} sweeps, kept at {kept_at:.2f} "
            f"tolerances; {'plain' if args.plain else 'accelerated'} sweeps: first within the "
            f"tolerance at sweep {first}"
            + (f", then {after.min():.2f}-{after.max():.2f} tolerances" if after.size else ""),
            flush=True,
        )
        print("  " + " ".join(f"{k}: {largest[k]:.3g}" for k in range(0, args.sweeps + 1, args.every)), flush=True)
        if args.spectrum:
            print(spectrum_line(rows, answer), flush=True)


if __name__ == "__main__":
    main()
