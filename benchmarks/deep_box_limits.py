"""What the deep frictional box asks of a solver: where its solves' sweeps end, and what
one Newton step would cost instead.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/deep_box_limits.py [--n 1000 8000]
        [--mu 0.5] [--seed 0] [--steps 89 95 101 110 119 125] [--sweeps 3000]

The scene is `peer_scenes.siconos_box` (as in `stress.py`); the kept solves are each
step's largest Coulomb solve (`sweep_trace.kept_solves`). For each box it prints:

1. **Which acceptance test ends the sweeps.** `friction_gauss_seidel.solve` accepts
   an iterate when every contact is within its tolerance and the loaded contacts'
   root mean square within the aim (`friction_gauss_seidel.TARGET`, in tolerances).
   The solve's own sweeps are replayed (its momentum, without its stall rules,
   which these steps do not reach), the residual measured every second sweep: the
   replay ends where the solve does, or up to two sweeps sooner (the solve measures
   the residual only when its estimate is within the tolerance). It prints the
   sweep at which each test is first met, the sweep at which both are, and, after the
   root mean square first met the aim, the most contacts beyond the tolerance
   at a measurement and their largest residual.
2. **One Newton step on the same problem.** At the answer of the last kept step, the
   generalised Jacobian of Alart and Curnier's function on the loaded contacts
   (`coulomb_newton.AlartCurnier`, regularised by the first of
   `coulomb_newton.VARIANTS`), the matrix a semismooth Newton iteration factorises:
   its rows, its entries, and SuperLU's factorisation time and fill with each
   ordering `coulomb_newton.sparse_solve` tries. If `pypardiso` is installed
   (``.venv/bin/pip install pypardiso``: Intel MKL's PARDISO, not a dependency of
   granular), also PARDISO's symbolic analysis, its numeric factorisation alone
   (best of three, the analysis reused as a Newton loop on a fixed pattern would
   reuse it) and one solve.

Single thread (``OMP_NUM_THREADS=1``; MKL reads it as well).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sparse_linalg

import granular as gr
from granular.contact import coulomb_newton
from granular.contact import friction_gauss_seidel as gauss_seidel
from granular.contact.friction import FRICTION_SWEEPS
from sweep_trace import kept_solves, measured_iterates

DEFAULT_STEPS = {1000: (89, 95, 101, 110, 119, 125), 8000: (89, 95, 98, 107, 113, 119, 122, 128)}


def acceptance_line(step, rows, predicted, start, tolerance, floor, sweeps: int) -> tuple[str, np.ndarray]:
    """A line on which acceptance test ends the replayed sweeps of one solve, and the
    solve's own answer."""
    answer, solved_in, _ = gauss_seidel.solve(rows, predicted, start, tolerance, FRICTION_SWEEPS, floor=floor)
    every_met = aim_met = both_met = None
    beyond, worst = 0, 0.0
    for sweep, r, levels in measured_iterates(rows, predicted, start, tolerance, sweeps):
        largest, loaded = levels.max(initial=0.0), gauss_seidel.loaded_level(levels, r)
        every_met = sweep if every_met is None and largest <= 1.0 else every_met
        aim_met = sweep if aim_met is None and loaded <= gauss_seidel.TARGET else aim_met
        if aim_met is not None:
            beyond, worst = max(beyond, int((levels > 1.0).sum())), max(worst, largest)
        if largest <= 1.0 and loaded <= gauss_seidel.TARGET:
            both_met = sweep
            break
    line = (
        f"step {step}: {rows.cols.shape[0]} contacts; the solve {solved_in} sweeps; replayed: the loaded root "
        f"mean square within the aim at sweep {aim_met}, every contact within the tolerance first at "
        f"{every_met}, both at {both_met}; after the aim, up to {beyond} contacts beyond the tolerance "
        f"(largest {worst:.2f} tolerances)"
    )
    return line, answer


def newton_system(rows, predicted, answer) -> sp.csc_matrix:
    """The regularised generalised Jacobian ``J + eps I`` of Alart and Curnier's
    function at ``answer`` on its loaded contacts (what `coulomb_newton.newton`
    factorises)."""
    loaded = np.flatnonzero(answer[:, 0] > 0.0)
    function = coulomb_newton.AlartCurnier(rows.subset(loaded), predicted)
    _, jacobian = function.value(answer[loaded], jacobian=True)
    epsilon = coulomb_newton.VARIANTS[0][0]
    return (jacobian + epsilon * sp.eye(jacobian.shape[0])).tocsc()


def factorisation_lines(matrix: sp.csc_matrix) -> list[str]:
    """SuperLU's time and fill with each ordering, and PARDISO's when installed."""
    lines = [f"Newton's matrix: {matrix.shape[0]} rows, {matrix.nnz} entries"]
    for name, options in coulomb_newton.ORDERINGS.items():
        start = time.perf_counter()
        factor = sparse_linalg.splu(matrix, **options)
        seconds = time.perf_counter() - start
        lines.append(f"  SuperLU, {name}: {1e3 * seconds:.0f} ms, {factor.L.nnz + factor.U.nnz} entries in the factors")
    lines.append(pardiso_line(matrix.tocsr()))
    return lines


def pardiso_line(matrix: sp.csr_matrix) -> str:
    """PARDISO's analysis, numeric factorisation (best of three) and solve, or why not."""
    try:
        import pypardiso
    except ImportError:
        return "  PARDISO: pypardiso is not installed"
    matrix.sort_indices()
    right = np.ones(matrix.shape[0])
    solver = pypardiso.PyPardisoSolver(mtype=11)  # real, nonsymmetric
    # pypardiso's public calls run the analysis with every factorisation; its phases
    # (11 analysis, 22 numeric factorisation, 33 solve) are reached through `_call_pardiso`.
    timings = {}
    for phase, name, repeats in ((11, "analysis", 1), (22, "numeric", 3), (33, "solve", 1)):
        solver.set_phase(phase)
        best = np.inf
        for _ in range(repeats):
            start = time.perf_counter()
            solution = solver._call_pardiso(matrix, right)
            best = min(best, time.perf_counter() - start)
        timings[name] = best
    error = float(np.abs(matrix @ solution - right).max())
    return (
        f"  PARDISO: analysis {1e3 * timings['analysis']:.0f} ms, numeric factorisation "
        f"{1e3 * timings['numeric']:.0f} ms, solve {1e3 * timings['solve']:.1f} ms (residual {error:.1e})"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 8000])
    parser.add_argument("--mu", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, nargs="+", default=None, help="the kept steps (default: per box)")
    parser.add_argument("--sweeps", type=int, default=3000, help="the replay's cap")
    args = parser.parse_args()
    warnings.simplefilter("ignore", gr.TimeStepWarning)
    warnings.simplefilter("ignore", gr.SolverToleranceWarning)
    for n in args.n:
        steps = set(args.steps or DEFAULT_STEPS.get(n, DEFAULT_STEPS[1000]))
        print(f"{n} spheres, mu = {args.mu}, seed {args.seed}")
        kept = kept_solves(n, args.mu, args.seed, steps)
        for step, (rows, predicted, start, tolerance, floor), _ in kept:
            tolerance = np.broadcast_to(tolerance, (rows.cols.shape[0],))
            line, answer = acceptance_line(step, rows, predicted, start, tolerance, floor, args.sweeps)
            print("  " + line, flush=True)
        print(f"  at step {step}'s answer:")
        for line in factorisation_lines(newton_system(rows, predicted, answer)):
            print("  " + line, flush=True)


if __name__ == "__main__":
    main()
