"""Can Clarabel replace the hand-written interior-point method of `granular.contact.projection`?

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/ipm_vs_clarabel.py

Both solve the multiplier problem ``min_{l >= 0} 1/2 l^T W l + c^T l`` of real
steps: the pinned contact network of the box pour stored in the tests (830 rows,
an unbounded optimal face), and the full row sets of the Siconos box after 60 and
150 steps (pouring, then piled), and a problem the refinement gets in the 60-sphere
pour of the restitution tests. Prints per solver the wall time (best of 3), its
iterations when known, whether the answer meets the KKT test every projection
answer must meet (`granular.contact.kkt.kkt_holds` at the step's tolerances), the largest
impulse (N s; physical answers stay below the bodies' momentum) and the distance
to the active-set answer. Clarabel gets tolerances `TOL` (gap and feasibility,
absolute and relative) and runs on the same scaled problem (unit diagonal,
unit-size linear term) as the hand-written method, on ``W`` and on the proximal
``W + rho diag(W)`` the hand-written method uses for degenerate networks.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import granular as gr
from granular.contact import active_set, delassus_rows, projection
from granular.contact.kkt import kkt_holds
from granular.metric import DiagonalMetric
from granular.tolerances import COMPLEMENTARITY_TOLERANCE, VELOCITY_TOLERANCE
from peer_scenes import siconos_box

TOL = 1e-12
ROOT = Path(__file__).resolve().parent.parent


def pinned_network():
    data = np.load(ROOT / "tests" / "data" / "pinned_network.npz")
    G = sp.csr_matrix((data["data"], data["indices"], data["indptr"]), shape=tuple(data["shape"]))
    return "pinned network (box pour)", DiagonalMetric(1.0 / data["inverse_mass"]), G, data["predicted"], data["lower"]


def siconos_step(steps: int):
    """The projection problem of step ``steps + 1`` of the Siconos box (all its rows)."""
    world, dt = siconos_box()
    sim = gr.Simulation(world, dt=dt)
    captured = {}
    original = projection.project

    def capture(problem, *args, **kwargs):
        if problem.size > captured.get("rows", 0):
            captured.update(
                rows=problem.size, problem=(problem.metric, problem.jacobian, problem.predicted, problem.lower)
            )
        return original(problem, *args, **kwargs)

    for _ in range(steps):
        sim.step()
    import granular.schemes.velocity as velocity

    velocity.project = capture
    try:
        sim.step()
    finally:
        velocity.project = original
    return (f"Siconos box, step {steps + 1}", *captured["problem"])


def pile_refinement():
    """The first problem whose OSQP answer `project` refines, cold (no active set), in
    the 60-sphere pour of the restitution tests (dt = 1 ms): W (with the proximal
    term of that refinement), c and its absolute tolerances."""
    rng = np.random.default_rng(5)
    grid = np.stack(np.meshgrid(np.arange(4), np.arange(3), np.arange(5), indexing="ij"), -1).reshape(-1, 3)
    positions = grid * 0.024 + np.array([0.015, 0.015, 0.012]) + rng.uniform(-0.002, 0.002, grid.shape)
    world = gr.SphereWorld(
        positions,
        0.01,
        velocities=rng.normal(0.0, 0.3, grid.shape),
        density=2500.0,
        walls=[gr.Box([0, 0, 0], [0.1, 0.075, 0.3], open_top=True)],
        restitution=0.0,
    )
    sim = gr.Simulation(world, 1e-3, warm_start=False)
    captured = []
    original = projection.interior_point

    def capture(W, c, feasibility, complementarity, *args, **kwargs):
        if not captured:
            rho = kwargs.get("regularisation", 0.0)
            diagonal = np.maximum(W.diagonal(), np.finfo(float).tiny)
            captured.append(((W + rho * sp.diags(diagonal)).tocsc(), c.copy(), feasibility, complementarity))
        return original(W, c, feasibility, complementarity, *args, **kwargs)

    projection.interior_point = capture
    active_solve = active_set.solve
    active_set.solve = lambda *args, **kwargs: None  # as `project` without the active set
    try:
        while not captured and sim.steps_taken < 300:
            sim.step()
    finally:
        projection.interior_point, active_set.solve = original, active_solve
    return captured[0]


def compare_refinement():
    """Hand-written method and Clarabel on the pile's refinement problem, at its own
    absolute tolerances: the largest infeasibility and natural residual reached."""
    W, c, feasibility, complementarity = pile_refinement()
    diagonal = np.maximum(W.diagonal(), np.finfo(float).tiny)
    print(
        f"\npile of the restitution tests, a refinement problem: {c.size} rows; targets "
        f"{feasibility:.1e} (feasibility) / {complementarity:.1e} m/s (natural residual)"
    )
    print(f"  {'solver':<34} {'seconds':>9} {'infeasibility':>14} {'natural residual':>17} {'meets':>6}")

    def line(label, seconds, impulses):
        slack = W @ impulses + c
        residual = float(np.abs(np.minimum(diagonal * impulses, slack)).max())
        ok = kkt_holds(slack, impulses, diagonal, feasibility, complementarity)
        print(f"  {label:<34} {seconds:>9.4f} {max(-slack.min(), 0.0):>14.1e} {residual:>17.1e} {str(ok):>6}")

    try:
        seconds, impulses = timed(lambda: projection.interior_point(W, c, feasibility, complementarity))
        line("interior point (hand-written)", seconds, impulses)
    except gr.SolverError as error:
        print(f"  interior point (hand-written) failed: {error}")
    seconds, (impulses, iterations, status) = timed(lambda: clarabel_solve(W, c))
    line(f"Clarabel ({status}, {iterations} its)", seconds, impulses)


def tolerances(metric, G, v, b):
    """The absolute tolerances `project` uses for this problem (velocity units)."""
    scale = max(float(np.abs(G @ v - b).max(initial=0.0)), float(np.abs(G @ v).max(initial=0.0)), 1e-300)
    return VELOCITY_TOLERANCE * scale, COMPLEMENTARITY_TOLERANCE * scale


def clarabel_solve(W: sp.csc_matrix, c: np.ndarray):
    import clarabel

    diagonal = np.maximum(W.diagonal(), np.finfo(float).tiny)
    D = 1.0 / np.sqrt(diagonal)
    v_ref = max(float(np.abs(c).max()), np.finfo(float).tiny)
    P = sp.triu(sp.diags(D) @ W @ sp.diags(D), format="csc")
    q = D * c / v_ref
    m = c.size
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = TOL
    settings.tol_ktratio = TOL * 100
    solver = clarabel.DefaultSolver(
        P, q, -sp.identity(m, format="csc"), np.zeros(m), [clarabel.NonnegativeConeT(m)], settings
    )
    solution = solver.solve()
    return np.maximum(np.asarray(solution.x), 0.0) * D * v_ref, int(solution.iterations), str(solution.status)


def timed(function, repeats: int = 3):
    best, out = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = function()
        best = min(best, time.perf_counter() - start)
    return best, out


def compare(name, metric, G, v, b):
    W = metric.delassus(G).tocsc()
    c = G @ v - b
    feasibility, complementarity = tolerances(metric, G, v, b)
    diagonal = np.maximum(W.diagonal(), np.finfo(float).tiny)
    momentum = float(np.sum(metric.diagonal * np.abs(v)))
    rows = delassus_rows.DelassusRows(metric, G, c)
    keys = np.arange(c.size, dtype=np.int64)

    def accurate(impulses, slack):
        return kkt_holds(slack, impulses, rows.diagonal, feasibility, complementarity)

    reference_seconds, reference = timed(lambda: active_set.solve(rows, keys, np.zeros(c.size), accurate, feasibility))
    print(
        f"\n{name}: {c.size} rows, {int(np.count_nonzero(reference > 0)) if reference is not None else '?'} "
        f"active; tolerances {feasibility:.1e} / {complementarity:.1e} m/s; momentum {momentum:.3g} N s"
    )
    print(f"  {'solver':<34} {'seconds':>9} {'iters':>6} {'KKT':>5} {'max impulse':>12} {'|l - l_as|':>11}")

    def line(label, seconds, impulses, iterations="-"):
        ok = impulses is not None and kkt_holds(W @ impulses + c, impulses, diagonal, feasibility, complementarity)
        largest = "-" if impulses is None else f"{impulses.max(initial=0.0):.3g}"
        distance = "-" if impulses is None or reference is None else f"{np.abs(impulses - reference).max():.1e}"
        print(f"  {label:<34} {seconds:>9.4f} {iterations!s:>6} {str(ok):>5} {largest:>12} {distance:>11}")

    line("active set (cold start)", reference_seconds, reference)
    for rho in (0.0, 1e-8):
        try:
            seconds, impulses = timed(
                lambda: projection.interior_point(W, c, 0.1 * feasibility, 0.1 * complementarity, regularisation=rho)
            )
        except gr.SolverError as error:
            print(f"  {'interior point, rho = ' + format(rho, 'g'):<34} failed: {error}")
            continue
        line(f"interior point, rho = {rho:g}", seconds, impulses)
    for rho in (0.0, 1e-8):
        proximal = (W + rho * sp.diags(diagonal)).tocsc()
        seconds, (impulses, iterations, status) = timed(lambda: clarabel_solve(proximal, c))
        line(f"Clarabel, rho = {rho:g} ({status})", seconds, impulses, iterations)


def main():
    for problem in (pinned_network(), siconos_step(60), siconos_step(150)):
        compare(*problem)
    compare_refinement()


if __name__ == "__main__":
    main()
