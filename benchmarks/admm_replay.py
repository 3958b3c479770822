"""ADMM on the contact set's fixed linear system, replayed on steps of Siconos' box.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/admm_replay.py [--n 1000] [--mu 0.5]
        [--seed 0] [--steps 150 190] [--rho 0.1 1 10] [--iterations 1500]

The question: the Coulomb sweeps are slow on the sticking network, whose rows change as
contacts stick and slip (`sweep_trace.py --spectrum`), so a factor of that network does
not last (`held_rows_correction.py`). The alternating direction method of multipliers
needs only one linear system per step, that of every contact of the set whatever its
status: does it reach the sweeps' aim in few enough iterations to pay for it?

The method is that of Tasora, Mangoni, Benatti and Garziera (*Solving variational
inequalities and cone complementarity problems in nonsmooth dynamics using the
alternating direction method of multipliers*, IJNME, 2021), in the velocities ``u``
(d,): with the local velocities ``U = H u - b`` (``b`` the rows' lower bounds, m/s) and
De Saxce's shift ``s = mu |U_T| e_N`` updated at each iteration, Coulomb's law is
``U + s`` in the dual cone ``K*`` and the impulses in ``K``, and ADMM splits
``min 1/2 |u - v|_M^2`` subject to ``z = U + s``, ``z`` in ``K*``:

    z <- proj_K*(U + s + y)
    (M + H^T R H) u = M v + H^T R (b - s + z - y)
    y <- y + U + s - z

with ``R = rho diag(1 / w_k)`` per contact (``w_k`` its normal Delassus entry) and the
impulses ``r = -R y``, which lie in ``K`` by Moreau's decomposition. The matrix is that
of the whole contact set (open contacts too), factorised once by qdldl. Each iteration's
impulses are judged as the sweeps' are: the largest natural residual, in tolerances, at
``u = v + M^{-1} H^T r``, against the sweeps' aim (`friction_gauss_seidel.TARGET`).

For each kept solve it prints the sweeps to the aim (with the solve's momentum, without
its stall rules), and for each ``rho`` the ADMM iterations to the aim (None if not
within ``--iterations``), the last residual, the factorisation's time and an
iteration's solve time.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import qdldl
import scipy.sparse as sp

from granular.contact import coulomb_rows
from granular.contact import friction_gauss_seidel as gauss_seidel
from held_rows_correction import corrected_sweeps, largest_residual
from sweep_trace import add_solve_arguments, replayed_solves, row_matrix


def stacked_rows(rows) -> sp.csr_matrix:
    """``H`` (3m, d): the normal and two tangent rows of every contact, contact after contact."""
    m = rows.cols.shape[0]
    return row_matrix(rows, np.repeat(np.arange(m), 3), np.tile([0, 1, 2], m))


def onto_dual_cones(x: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``x`` (m, 3) projected onto the dual cones ``mu |x_T| <= x_N`` (a copy). With
    ``a = 1 / mu`` the cone is ``|x_T| <= a x_N``; outside it and outside its polar
    (``a |x_T| <= -x_N``, i.e. ``|x_T| <= -mu x_N``) the projection is ``(t, a t x_T /
    |x_T|)`` with ``t = (x_N + a |x_T|) / (1 + a^2)``."""
    normal, tangential = x[:, 0], np.linalg.norm(x[:, 1:3], axis=1)
    out = x.copy()
    inside = mu * tangential <= normal
    polar = ~inside & (tangential <= -mu * normal)
    edge = ~inside & ~polar
    a = 1.0 / mu[edge]
    t = (normal[edge] + a * tangential[edge]) / (1.0 + a**2)
    out[edge, 0] = t
    out[edge, 1:3] = (a * t / tangential[edge])[:, None] * x[edge, 1:3]
    out[polar] = 0.0
    return out


def admm(rows, predicted, start, tolerance, rho: float, iterations: int):
    """``(iterations, residual, factorisation seconds, seconds a solve)``: ADMM (module
    docstring) from the impulses ``start`` (m, 3) to the sweeps' aim; ``iterations`` is
    None when not reached, ``residual`` the last largest natural residual in tolerances."""
    m = rows.cols.shape[0]
    if rows.values.shape[1] != 3 or np.any(rows.mu <= 0.0):
        raise ValueError("the replay takes frictional contacts without rolling resistance")
    dummy = rows.inverse_mass.size - 1
    H = stacked_rows(rows)
    mass = 1.0 / rows.inverse_mass[:dummy]
    weight = rho / rows.w
    clock = time.perf_counter()
    solver = qdldl.Solver(sp.csc_matrix(sp.diags(mass) + H.T @ sp.diags(np.repeat(weight, 3)) @ H))
    factorisation = time.perf_counter() - clock
    bounds = np.zeros((m, 3))
    bounds[:, 0] = rows.lower
    r = coulomb_rows.onto_cones(rows, start)
    u = coulomb_rows.velocities(rows, predicted, r)[:dummy]
    y = -r / weight[:, None]
    shift = np.zeros((m, 3))
    solving, residual = 0.0, np.inf
    for iteration in range(1, iterations + 1):
        local = (H @ u).reshape(m, 3) - bounds
        shift[:, 0] = rows.mu * np.linalg.norm(local[:, 1:3], axis=1)
        z = onto_dual_cones(local + shift + y, rows.mu)
        right = mass * predicted + H.T @ (np.repeat(weight, 3) * (bounds - shift + z - y).ravel())
        clock = time.perf_counter()
        u = solver.solve(right)
        solving += time.perf_counter() - clock
        y += (H @ u).reshape(m, 3) - bounds + shift - z
        impulses = coulomb_rows.onto_cones(rows, -weight[:, None] * y)  # in K already, up to round-off
        residual = largest_residual(rows, coulomb_rows.velocities(rows, predicted, impulses), impulses, tolerance)
        if residual <= gauss_seidel.TARGET:
            return iteration, residual, factorisation, solving / iteration
    return None, residual, factorisation, solving / iterations


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_solve_arguments(parser, 1000, [150, 190])
    parser.add_argument("--rho", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    parser.add_argument("--iterations", type=int, default=1500)
    args = parser.parse_args()
    for step, rows, predicted, start, tolerance, _ in replayed_solves(args):
        sweeps, _, _, _ = corrected_sweeps(rows, predicted, start, tolerance, 0, 0.0, "projected", 6000)
        print(f"n {args.n} step {step}: {rows.cols.shape[0]} contacts; sweeps {sweeps}", flush=True)
        for rho in args.rho:
            used, residual, factorisation, solve = admm(rows, predicted, start, tolerance, rho, args.iterations)
            print(
                f"  rho {rho:g}: {used} iterations (last residual {residual:.3g} tolerances); "
                f"factorisation {1e3 * factorisation:.1f} ms, a solve {1e3 * solve:.2f} ms",
                flush=True,
            )


if __name__ == "__main__":
    main()
