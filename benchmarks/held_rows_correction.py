"""The Coulomb sweeps with direct solves of the rows they hold, replayed on steps of Siconos' box.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/held_rows_correction.py [--n 1000] [--mu 0.5]
        [--seed 0] [--steps 120 150 170 190] [--every 50] [--rho 1e-3] [--rule projected]
        [--sweeps 6000]

The question: the sweeps are slow on the linear system of the rows their iterate holds
(the normal rows of closed contacts and the tangent rows of sticking ones, whose
Delassus matrix has self-stressed loops and a bulk 8-28 times worse conditioned than the
normal law's: `sweep_trace.py --spectrum`). Does solving that system directly every
``every`` sweeps, and sweeping on from there, take fewer sweeps? That is the "projected
Gauss-Seidel subspace minimization" of Silcowitz, Niebe and Erleben (*Projected
Gauss-Seidel subspace minimization for interactive rigid body dynamics*, 2010), with a
proximal (Tikhonov) term that keeps the correction out of the loops' null space::

    (W_SS + rho diag(W_SS)) dr_S = -U_S

where ``W_SS = H_S M^{-1} H_S^T`` and ``U_S`` are the held rows' velocities (m/s), which
the law wants at 0. It is solved by qdldl on the quasi-definite form ``[[M, H_S^T], [H_S,
-rho D]] [du; -dr_S] = [0; -U_S]`` (the library's own sparse factorisation, so its time is
what a step would pay). Two rules take the step:

- ``projected``: ``r_S + dr_S``, then every impulse onto its cone;
- ``feasible``: the step along ``dr_S`` that minimises the held rows' energy ``1/2 r^T W r
  + b^T r``, halved until every held impulse stays in its cone, a sliding contact's
  friction impulse scaled with its normal impulse.

For each kept solve it prints the sweeps (with the solve's momentum, without its stall
rules) to the solve's aim (`friction_gauss_seidel.TARGET` times the tolerance) with and
without the corrections, the corrections made and their factorisations' time, and the
largest natural residual (in tolerances) before and after the first few corrections.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import qdldl
import scipy.sparse as sp

from granular.contact import coulomb_rows
from granular.contact import friction_gauss_seidel as gauss_seidel
from sweep_trace import add_solve_arguments, held_rows, replayed_solves

#: The corrections whose largest residual before and after is printed.
SHOWN_CORRECTIONS = 4
#: Relative room on the cone test: a sliding impulse lies on its cone up to round-off.
CONE_SLACK = 1e-12


def largest_residual(rows, u, r, tolerance) -> float:
    """The largest natural residual, in units of each contact's tolerance."""
    return float((coulomb_rows.contact_residuals(rows, u, r) / tolerance).max(initial=0.0))


def correction(rows, u, r, rho: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, sp.csr_matrix, float]:
    """``(dr, contact, component, sliding, H, seconds)``: the held rows' proximal
    correction ``dr`` (k,) (N s) of the impulses ``r`` (m, 3) at the velocities ``u``, the
    held rows (`sweep_trace.held_rows`), the sliding contacts (m,) and the factorisation's
    and solve's time."""
    H, contact, component, closed, sticking = held_rows(rows, r)
    held_velocities = rows.local_velocities(u)[contact, component]
    dummy = rows.inverse_mass.size - 1
    inverse_mass = rows.inverse_mass[:dummy]
    moving = np.flatnonzero(inverse_mass > 0.0)
    H_moving = H.tocsc()[:, moving]
    diagonal = np.asarray(H_moving.multiply(H_moving) @ inverse_mass[moving]).ravel()
    kkt = sp.bmat(
        [[sp.diags(1.0 / inverse_mass[moving]), H_moving.T], [H_moving, sp.diags(-rho * diagonal)]], format="csc"
    )
    clock = time.perf_counter()
    solution = qdldl.Solver(kkt).solve(np.concatenate([np.zeros(moving.size), -held_velocities]))
    seconds = time.perf_counter() - clock
    return -solution[moving.size :], contact, component, closed & ~sticking, H, seconds


def in_cones(rows, r, contact) -> bool:
    """Whether the impulses ``r`` (m, 3) of the contacts ``contact`` lie in their cones."""
    held = r[contact]
    friction = np.linalg.norm(held[:, 1:3], axis=1)
    return bool(np.all(held[:, 0] >= 0.0) and np.all(friction <= rows.mu[contact] * held[:, 0] * (1.0 + CONE_SLACK)))


def feasible_step(rows, u, r, dr, contact, component, sliding, H) -> np.ndarray:
    """The impulses after the energy-minimising step along ``dr``, halved until the held
    impulses stay in their cones (`feasible` rule of the module docstring)."""
    dummy = rows.inverse_mass.size - 1
    gradient = rows.local_velocities(u)[contact, component]
    curvature = float(dr @ (H @ (rows.inverse_mass[:dummy] * (H.T @ dr))))
    length = -float(gradient @ dr) / curvature if curvature > 0.0 else 1.0
    ratio = 1.0 / r[sliding, 0]  # sliding contacts are closed: l_N > 0
    for _ in range(60):
        moved = r.copy()
        moved[contact, component] += length * dr
        moved[sliding, 1:3] = r[sliding, 1:3] * (moved[sliding, 0] * ratio)[:, None]
        if in_cones(rows, moved, contact):
            return moved
        length *= 0.5
    return r


def corrected_sweeps(rows, predicted, start, tolerance, every: int, rho: float, rule: str, sweeps: int):
    """``(sweeps, corrections, seconds, before_after)``: the sweeps to the aim (None if
    not within ``sweeps``) with a correction every ``every`` sweeps (none when 0), the
    corrections' count and factorisation time, and the largest residual before and
    after the first `SHOWN_CORRECTIONS` corrections."""
    r = coulomb_rows.onto_cones(rows, start)
    u = coulomb_rows.velocities(rows, predicted, r)
    compiled = rows.compiled
    scale = compiled.visit_scale(tolerance)
    momentum = gauss_seidel._Momentum(r, u)
    corrections, seconds, shown = 0, 0.0, []
    for sweep in range(sweeps + 1):
        measured = largest_residual(rows, u, r, tolerance) if sweep % gauss_seidel.CHECK_EVERY == 0 else None
        if measured is not None and measured <= gauss_seidel.TARGET:
            return sweep, corrections, seconds, shown
        if every and sweep and sweep % every == 0:
            before = largest_residual(rows, u, r, tolerance) if measured is None else measured
            dr, contact, component, sliding, H, spent = correction(rows, u, r, rho)
            if rule == "projected":
                r = r.copy()
                r[contact, component] += dr
                r = coulomb_rows.onto_cones(rows, r)
            else:
                r = feasible_step(rows, u, r, dr, contact, component, sliding, H)
            u = coulomb_rows.velocities(rows, predicted, r)
            corrections, seconds = corrections + 1, seconds + spent
            if len(shown) < SHOWN_CORRECTIONS:
                shown.append((before, largest_residual(rows, u, r, tolerance)))
            momentum.restart()
        momentum.extrapolate(r, u)
        _, change = compiled.sweep(u, r, scale)
        momentum.judge(change)
    return None, corrections, seconds, shown


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_solve_arguments(parser, 1000, [120, 150, 170, 190])
    parser.add_argument("--every", type=int, nargs="+", default=[50])
    parser.add_argument("--rho", type=float, nargs="+", default=[1e-3])
    parser.add_argument("--rule", choices=["projected", "feasible"], default="projected")
    parser.add_argument("--sweeps", type=int, default=6000)
    args = parser.parse_args()
    for step, rows, predicted, start, tolerance, _ in replayed_solves(args):
        plain, _, _, _ = corrected_sweeps(rows, predicted, start, tolerance, 0, 0.0, args.rule, args.sweeps)
        print(f"n {args.n} step {step}: {rows.cols.shape[0]} contacts; sweeps alone {plain}", flush=True)
        for every in args.every:
            for rho in args.rho:
                used, count, seconds, shown = corrected_sweeps(
                    rows, predicted, start, tolerance, every, rho, args.rule, args.sweeps
                )
                changes = ", ".join(f"{before:.3g} -> {after:.3g}" for before, after in shown)
                print(
                    f"  every {every}, rho {rho:g}, {args.rule}: {used} sweeps, {count} corrections "
                    f"({1e3 * seconds:.0f} ms of factorisations); first corrections {changes}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
