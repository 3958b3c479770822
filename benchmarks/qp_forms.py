"""OSQP on the two equivalent forms of Maury's projection, on the same problems.

    velocity form:    min 1/2 |u - v|_M^2      s.t.  G u >= b        (3N unknowns, m rows)
    multiplier form:  min 1/2 l^T W l + c^T l  s.t.  l >= 0          (m unknowns, W = G M^-1 G^T)

A box of N spheres on a lattice 2.2 radii apart (benchmarks/step_scaling.py's
dense regime) is stepped until its lattice has collapsed into a contact network;
the projection problem of the next step (all the rows the neighbour search
proposes, as the step built them) is then solved by both forms. Prints the wall
time of OSQP's setup and solve for each form, and how far apart the two answers
are, in velocity units; then the wall time of `granular.contact.projection.project`, the
step's own solve (constraint generation on the multiplier form, refined to the
tolerances of `granular.tolerances`), on the same problem.

    .venv/bin/python benchmarks/qp_forms.py [N ...] [--steps K]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import granular as gr
from granular.contact.backends import osqp_
from granular.contact.problem import ContactProblem
from granular.contact.projection import project
from step_scaling import SPACINGS, lattice_box


def problem_after(n: int, steps: int) -> ContactProblem:
    """The projection problem of step ``steps + 1`` of the dense lattice box."""
    world = lattice_box(n, SPACINGS["dense"])
    sim = gr.Simulation(world, dt=1e-3)
    for _ in range(steps):
        sim.step()
    h, t = sim.dt, sim.t
    q, u = sim.positions.reshape(-1), sim.velocities.reshape(-1)
    metric = world.metric(t + h, q)
    predicted = u + h * metric.solve(world.force(t, q, u))
    speed = 2.0 * max(world.body_speeds(u).max(), world.body_speeds(predicted).max())
    constraints = world.constraints(t + h, q, h, speed)
    return ContactProblem(metric, constraints.jacobian, predicted, -constraints.gap / h)


def timed(problem: ContactProblem, form: str):
    start = time.perf_counter()
    result = osqp_.solve(problem, form=form)
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10000])
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    print(
        f"{'N':>7} {'rows':>7} {'velocity form s':>16} {'multiplier form s':>18} {'max |du| (m/s)':>15} "
        f"{'project s':>10} {'active':>7}",
        flush=True,
    )
    for n in args.sizes:
        problem = problem_after(n, args.steps)
        seconds_v, velocity = timed(problem, "velocity")
        seconds_d, dual = timed(problem, "dual")
        metric, G = problem.metric, problem.jacobian
        u_v = problem.predicted + metric.solve(G.T @ velocity.impulses)
        u_d = problem.predicted + metric.solve(G.T @ dual.impulses)
        start = time.perf_counter()
        answer = project(ContactProblem(metric, G, problem.predicted, problem.lower))
        seconds_p = time.perf_counter() - start
        print(
            f"{n:>7} {G.shape[0]:>7} {seconds_v:>16.3f} {seconds_d:>18.3f} {np.abs(u_v - u_d).max():>15.2e} "
            f"{seconds_p:>10.3f} {int(np.count_nonzero(answer.impulses)):>7}",
            flush=True,
        )


if __name__ == "__main__":
    main()
