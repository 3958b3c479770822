"""The Coulomb sweeps on a solve with parts of its answer held: how much of a deep solve's
sweeps goes to its stick/slip pattern, and how much to its sliding friction.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pattern_fixed.py [--n 8000] [--mu 0.5]
        [--seed 0] [--steps 90 95 100 130 150] [--reference 4000] [--sweeps 3000]
        [--plain] [--largest-round]

The kept solves are `sweep_trace.kept_solves`' (Siconos' box, as in `stress.py`): each
step's first working-set round (``--largest-round``: its largest solve, which may be a
later round that starts from the last one's answer). Each solve's answer is its sweeps'
iterate after ``reference`` sweeps. It gives the pattern: each contact open (``l_N =
0``), sticking (``|l_T| < mu l_N``) or sliding, and each sliding contact's friction
impulse. From the solve's start, the same sweeps with the same momentum then run on five
maps, which differ only in what a contact's visit does (`held_sweep`):

- ``law``: Coulomb's law, as the solve's own sweeps;
- ``status``: each contact keeps its answer's status: an open one takes no impulse, a
  closed one the unconstrained answer of its normal row (which may be negative), a
  sticking one that of its tangent rows as well (which may leave the cone), a sliding
  one friction of size ``mu l_N`` against its tangential velocity, as the law gives;
- ``direction``: as ``status``, but the sliding friction keeps the answer's direction
  (its size still ``mu l_N``);
- ``magnitude``: as ``status``, but the sliding friction keeps the answer's size (its
  direction still against the tangential velocity);
- ``friction``: as ``status``, but the sliding friction is the answer's, direction and
  size: the map is then Gauss-Seidel on a linear system.

The answer is a fixed point of every map. Each run stops at the first measured sweep
(every second one) whose visits' residuals are all within the tolerance and whose closed
contacts' root mean square is within the aim (`friction_gauss_seidel.TARGET`): the visit
residual ``|W_kk (r_new - r_old)|`` is the map's own natural residual, the estimate the
solve's sweeps make (`sweep_kernels.sweep`), so all five maps are judged alike. A run
that has not stopped after ``sweeps`` sweeps prints ``-``, with the residual it ended at.
``--plain`` runs the maps without momentum as well.

The difference between the maps' counts is what each part of the law costs the sweeps
(benchmarks/README.md, "what the deep box's sweeps pay for").
"""

from __future__ import annotations

import argparse
import math

import numba
import numpy as np

from granular.contact import coulomb_rows
from granular.contact import friction_gauss_seidel as gauss_seidel
from granular.contact.sweep_kernels import _coulomb_answer, _local_velocities, _normal_velocity
from sweep_trace import add_solve_arguments, closed_and_sticking, replayed_solves

OPEN, STICKING, SLIDING = 0, 1, 2
#: The maps (module docstring), by what they hold of the answer.
HOLDS = ("law", "status", "direction", "magnitude", "friction")
LAW, STATUS, DIRECTION, MAGNITUDE, FRICTION = range(len(HOLDS))


@numba.njit(cache=False, inline="always")
def _sliding_friction(hold, first, second, limit, held1, held2):
    """A sliding contact's friction under ``hold`` from its unconstrained tangential
    answer ``(first, second)``, its limit ``mu l_N`` and the answer's friction ``(held1,
    held2)`` (module docstring)."""
    if hold == FRICTION:
        return held1, held2
    if hold == DIRECTION:
        size, a, b = limit, held1, held2
    elif hold == MAGNITUDE:
        size, a, b = math.sqrt(held1 * held1 + held2 * held2), first, second
    else:
        size, a, b = limit, first, second
    length = math.sqrt(a * a + b * b)
    if length == 0.0:
        return 0.0, 0.0
    return a * size / length, b * size / length


@numba.njit(cache=False)
def held_sweep(
    hold, order, cols, values, width, scaled, shift, inverse, mu, weights, scale, status, friction, u, r, visit
):
    """One sweep of the map ``hold`` (module docstring) on the arrays of the solve's
    generic sweep (`coulomb_rows.CompiledRows`: ``cols`` to ``inverse``, ``mu`` and
    ``weights`` in its visit order, ``scale`` its `visit_scale`), the answer's
    ``status`` (m,) and sliding ``friction`` (m, 2): ``u`` and ``r`` in place, as
    `sweep_kernels.sweep` moves them, and ``visit`` (m,) each contact's squared visit
    residual in tolerances (0 when skipped). Returns their sum, the momentum's measure
    (`friction_gauss_seidel._Momentum.judge`)."""
    change = 0.0
    for i in range(order.size):
        k = order[i]
        visit[k] = 0.0
        state = status[k]
        if hold == LAW:  # the solve's own sweep (`sweep_kernels.sweep`)
            if r[k, 0] == 0.0 and _normal_velocity(i, cols, values, width, shift, u) >= 0.0:
                continue
            normal, first, second = _coulomb_answer(i, k, cols, values, width, shift, inverse, mu, u, r)
        elif state == OPEN:
            if r[k, 0] == 0.0 and r[k, 1] == 0.0 and r[k, 2] == 0.0:
                continue
            normal = first = second = 0.0
        else:
            velocity, tangent1, tangent2 = _local_velocities(i, cols, values, width, shift, u)
            normal = r[k, 0] - velocity * inverse[i, 0]
            first = r[k, 1] - tangent1 * inverse[i, 1]
            second = r[k, 2] - tangent2 * inverse[i, 1]
            if state == SLIDING:
                limit = mu[i] * max(normal, 0.0)
                first, second = _sliding_friction(hold, first, second, limit, friction[k, 0], friction[k, 1])
        c0, c1, c2 = normal - r[k, 0], first - r[k, 1], second - r[k, 2]
        r[k, 0], r[k, 1], r[k, 2] = normal, first, second
        visit[k] = scale[i] * ((weights[i, 0] * c0) ** 2 + (weights[i, 1] * c1) ** 2 + (weights[i, 2] * c2) ** 2)
        change += visit[k]
        for j in range(width[i]):
            u[cols[i, j]] += scaled[i, 0, j] * c0 + scaled[i, 1, j] * c1 + scaled[i, 2, j] * c2
    return change


def statuses(rows, r: np.ndarray) -> np.ndarray:
    """Each contact's status (m,) int64: `OPEN`, `STICKING` or `SLIDING`."""
    closed, sticking = closed_and_sticking(rows, r)
    return np.where(closed, np.where(sticking, STICKING, SLIDING), OPEN).astype(np.int64)


def reference_answer(rows, predicted, start, tolerance, sweeps: int) -> np.ndarray:
    """The impulses (m, 3) after ``sweeps`` of the solve's sweeps with momentum from
    ``start``, without its stall rules: the answer whose parts the maps hold."""
    r = coulomb_rows.onto_cones(rows, start)
    u = coulomb_rows.velocities(rows, predicted, r)
    compiled = rows.compiled
    scale = compiled.visit_scale(tolerance)
    momentum = gauss_seidel._Momentum(r, u)
    for _ in range(sweeps):
        momentum.extrapolate(r, u)
        _, change = compiled.sweep(u, r, scale)
        momentum.judge(change)
    return r


def held_sweeps(rows, predicted, start, tolerance, answer, hold: int, momentum_on: bool, sweeps: int):
    """``(sweeps to the stop or None, the largest visit residual then, in tolerances,
    status changes before the stop, contacts whose status at the stop is not the
    answer's)`` of the map ``hold`` from ``start`` (module docstring); the last two are
    counted for `LAW` only (0 otherwise)."""
    status = statuses(rows, answer)
    friction = np.ascontiguousarray(np.where((status == SLIDING)[:, None], answer[:, 1:3], 0.0))
    closed = status != OPEN
    r = coulomb_rows.onto_cones(rows, start)
    u = coulomb_rows.velocities(rows, predicted, r)
    compiled = rows.compiled
    cols, values, scaled, width = compiled.generic
    arrays = (compiled.order, cols, values, width, scaled, compiled.shift, compiled.inverse, compiled.mu)
    scale = compiled.visit_scale(tolerance)
    visit = np.zeros(status.size)
    momentum = gauss_seidel._Momentum(r, u)
    momentum.enabled = momentum_on
    largest, changes, previous = np.inf, 0, statuses(rows, r)
    for sweep in range(1, sweeps + 1):
        momentum.extrapolate(r, u)
        change = held_sweep(hold, *arrays, compiled.weights, scale, status, friction, u, r, visit)
        momentum.judge(change)
        if hold == LAW:
            current = statuses(rows, r)
            changes += int((current != previous).sum())
            previous = current
        if sweep % 2 == 0:
            levels = np.sqrt(visit)
            largest = float(levels.max(initial=0.0))
            loaded = r[:, 0] > 0.0 if hold == LAW else closed
            typical = float(np.sqrt(np.mean(levels[loaded] ** 2))) if loaded.any() else 0.0
            if largest <= 1.0 and typical <= gauss_seidel.TARGET:
                return sweep, largest, changes, int((previous != status).sum()) if hold == LAW else 0
    return None, largest, changes, int((previous != status).sum()) if hold == LAW else 0


def _count(result) -> str:
    sweeps, largest = result[:2]
    return str(sweeps) if sweeps is not None else f"- ({largest:.3g})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_solve_arguments(parser, 8000, (90, 95, 100, 130, 150))
    parser.add_argument("--reference", type=int, default=4000, help="sweeps whose answer gives the pattern")
    parser.add_argument("--sweeps", type=int, default=3000, help="the most sweeps of each map")
    parser.add_argument("--plain", action="store_true", help="the maps without momentum as well")
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
        answer = reference_answer(rows, predicted, start, tolerance, args.reference)
        differ = int((statuses(rows, coulomb_rows.onto_cones(rows, start)) != statuses(rows, answer)).sum())
        results = {
            (hold, on): held_sweeps(rows, predicted, start, tolerance, answer, HOLDS.index(hold), on, args.sweeps)
            for hold in HOLDS
            for on in ((True, False) if args.plain else (True,))
        }
        counts = {key: _count(result) for key, result in results.items()}
        _, _, changes, left = results["law", True]
        line = ", ".join(f"{hold} {counts[hold, True]}" for hold in HOLDS)
        if args.plain:
            line += "; plain: " + ", ".join(f"{hold} {counts[hold, False]}" for hold in HOLDS)
        print(
            f"n {args.n} step {step}: {rows.cols.shape[0]} contacts, {int((statuses(rows, answer) == SLIDING).sum())} "
            f"sliding in the answer; start and answer differ in status at {differ}; the law's sweeps make {changes} "
            f"status changes and stop {left} statuses from the answer's; sweeps with momentum: {line}",
            flush=True,
        )


if __name__ == "__main__":
    main()
