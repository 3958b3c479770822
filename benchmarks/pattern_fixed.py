"""The Coulomb sweeps on a solve whose stick/slip pattern is known: how much of a deep
solve's sweeps goes to finding that pattern.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pattern_fixed.py [--n 8000] [--mu 0.5]
        [--seed 0] [--steps 90 95 100 130 150] [--reference 4000] [--largest-round]

The kept solves are `sweep_trace.kept_solves`' (Siconos' box, as in `stress.py`): each
step's first working-set round (``--largest-round``: its largest solve, which may be a
later round that starts from the last one's answer). From each solve's start:

- the solve's sweeps with its momentum and without its stall rules (as
  `sweep_trace.trace`), until its acceptance rule holds: every contact within its
  tolerance, and the loaded contacts within the aim in root mean square
  (`friction_gauss_seidel.TARGET`). Then on to ``reference`` sweeps, whose answer gives
  the pattern: each contact open (``l_N = 0``), sticking (``|l_T| < mu l_N``) or
  sliding, and each sliding contact's friction impulse;
- the same sweeps on the linear system of that pattern: a sticking contact takes the
  unconstrained local answer of its three rows, a sliding one that of its normal row
  with its friction held at the answer's, an open one no impulse. They run with the
  momentum and without it, until the held rows' velocities (the normal one of each
  closed contact, the tangent ones of each sticking one) are within the tolerance and
  their root mean square within the aim.

It prints, per solve, both counts, the statuses in which the start and the answer
differ, the status changes the sweeps make before they accept, and the contacts at
which the accepted iterate's status is not the answer's. The gap between the counts is
what finding the pattern costs (benchmarks/README.md, "the sweeps' growth with depth").
"""

from __future__ import annotations

import argparse

import numba
import numpy as np

from granular.contact import coulomb_rows
from granular.contact import friction_gauss_seidel as gauss_seidel
from sweep_trace import add_solve_arguments, closed_and_sticking, replayed_solves

OPEN, STICKING, SLIDING = 0, 1, 2


@numba.njit(cache=False)
def fixed_pattern_sweep(order, cols, values, width, scaled, shift, inverse, weights, scale, status, friction, u, r):
    """One sweep of the linear system that the stick/slip pattern ``status`` (m,) and
    the sliding friction ``friction`` (m, 2) leave (module docstring), on the arrays of
    the solve's generic sweep (`coulomb_rows.CompiledRows`: ``cols`` to ``inverse`` and
    ``weights`` in its visit order, ``scale`` its `visit_scale`): ``u`` and ``r`` in
    place, as `sweep_kernels.sweep` moves them. Returns the sum of the squares of the
    changes' residuals at their visits, the momentum's measure
    (`friction_gauss_seidel._Momentum.judge`)."""
    change = 0.0
    for i in range(order.size):
        k = order[i]
        state = status[k]
        if state == OPEN:
            if r[k, 0] == 0.0 and r[k, 1] == 0.0 and r[k, 2] == 0.0:
                continue
            normal = first = second = 0.0
        else:
            velocity, tangent1, tangent2 = -shift[i, 0], -shift[i, 1], -shift[i, 2]
            for j in range(width[i]):
                speed = u[cols[i, j]]
                velocity += values[i, 0, j] * speed
                tangent1 += values[i, 1, j] * speed
                tangent2 += values[i, 2, j] * speed
            normal = r[k, 0] - velocity * inverse[i, 0]
            if state == STICKING:
                first = r[k, 1] - tangent1 * inverse[i, 1]
                second = r[k, 2] - tangent2 * inverse[i, 1]
            else:
                first, second = friction[k, 0], friction[k, 1]
        c0, c1, c2 = normal - r[k, 0], first - r[k, 1], second - r[k, 2]
        r[k, 0], r[k, 1], r[k, 2] = normal, first, second
        change += scale[i] * ((weights[i, 0] * c0) ** 2 + (weights[i, 1] * c1) ** 2 + (weights[i, 2] * c2) ** 2)
        for j in range(width[i]):
            u[cols[i, j]] += scaled[i, 0, j] * c0 + scaled[i, 1, j] * c1 + scaled[i, 2, j] * c2
    return change


def statuses(rows, r: np.ndarray) -> np.ndarray:
    """Each contact's status (m,) int64: `OPEN`, `STICKING` or `SLIDING`."""
    closed, sticking = closed_and_sticking(rows, r)
    return np.where(closed, np.where(sticking, STICKING, SLIDING), OPEN).astype(np.int64)


def accepted(rows, u, r, tolerance) -> bool:
    """The acceptance rule of the solve's measured checks, its stall rules left out."""
    levels = coulomb_rows.contact_residuals(rows, u, r) / tolerance
    return levels.max(initial=0.0) <= 1.0 and gauss_seidel.loaded_level(levels, r) <= gauss_seidel.TARGET


def swept(rows, predicted, start, tolerance, sweeps: int):
    """The solve's sweeps with momentum from ``start``: ``(first accepting sweep or None,
    status changes made until then, the accepted iterate's statuses, the impulses after
    ``sweeps`` sweeps)``."""
    r = coulomb_rows.onto_cones(rows, start)
    u = coulomb_rows.velocities(rows, predicted, r)
    compiled = rows.compiled
    scale = compiled.visit_scale(tolerance)
    momentum = gauss_seidel._Momentum(r, u)
    previous, changes, first, at_first = statuses(rows, r), 0, None, None
    for sweep in range(1, sweeps + 1):
        momentum.extrapolate(r, u)
        _, change = compiled.sweep(u, r, scale)
        momentum.judge(change)
        if first is None:
            current = statuses(rows, r)
            changes += int((current != previous).sum())
            previous = current
            if sweep % 2 == 0 and accepted(rows, u, r, tolerance):
                first, at_first = sweep, current
    return first, changes, at_first, r


def pattern_sweeps(rows, predicted, start, tolerance, answer, momentum_on: bool, sweeps: int):
    """Sweeps of the linear system of ``answer``'s pattern (module docstring) from
    ``start`` until its held rows' velocities meet the tolerance and the aim, or None
    within ``sweeps``."""
    status = statuses(rows, answer)
    friction = np.where((status == SLIDING)[:, None], answer[:, 1:3], 0.0)
    held = np.zeros((status.size, 3), dtype=bool)
    held[:, 0] = status != OPEN
    held[:, 1:] = (status == STICKING)[:, None]
    r = coulomb_rows.onto_cones(rows, start)
    u = coulomb_rows.velocities(rows, predicted, r)
    compiled = rows.compiled
    cols, values, scaled, width = compiled.generic
    arrays = (compiled.order, cols, values, width, scaled, compiled.shift, compiled.inverse, compiled.weights)
    scale = compiled.visit_scale(tolerance)
    momentum = gauss_seidel._Momentum(r, u)
    momentum.enabled = momentum_on
    for sweep in range(1, sweeps + 1):
        momentum.extrapolate(r, u)
        change = fixed_pattern_sweep(*arrays, scale, status, friction, u, r)
        momentum.judge(change)
        if sweep % 2 == 0:
            levels = np.abs(rows.local_velocities(u)) / tolerance[:, None]
            if levels[held].max(initial=0.0) <= 1.0 and np.sqrt(np.mean(levels[held] ** 2)) <= gauss_seidel.TARGET:
                return sweep
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_solve_arguments(parser, 8000, (90, 95, 100, 130, 150))
    parser.add_argument("--reference", type=int, default=4000, help="sweeps whose answer gives the pattern")
    parser.add_argument(
        "--largest-round",
        dest="first_round",
        action="store_false",
        help="replay each step's largest solve (by default its first working-set round)",
    )
    args = parser.parse_args()
    for step, rows, predicted, start, tolerance, _ in replayed_solves(args):
        if rows.width != 3:
            raise SystemExit("pattern_fixed.py replays Coulomb contacts without rolling resistance")
        tolerance = np.ascontiguousarray(tolerance, dtype=float)
        first, changes, at_first, answer = swept(rows, predicted, start, tolerance, args.reference)
        answer_status = statuses(rows, answer)
        differ = int((statuses(rows, coulomb_rows.onto_cones(rows, start)) != answer_status).sum())
        left = "-" if at_first is None else int((at_first != answer_status).sum())
        with_momentum = pattern_sweeps(rows, predicted, start, tolerance, answer, True, args.reference)
        plain = pattern_sweeps(rows, predicted, start, tolerance, answer, False, args.reference)
        print(
            f"n {args.n} step {step}: {rows.cols.shape[0]} contacts; the sweeps accept at {first} "
            f"({changes} status changes; start and answer differ at {differ}; the accepted iterate "
            f"differs from the answer at {left}); the answer's pattern fixed: {with_momentum} sweeps "
            f"with momentum, {plain} plain",
            flush=True,
        )


if __name__ == "__main__":
    main()
