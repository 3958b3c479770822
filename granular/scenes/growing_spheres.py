"""Growing spheres: radii grow in time inside a closed box until the packing jams.

Eighty equal spheres start at packing fraction 0.10 at random places in a closed
cube (no gravity, small random velocities, inelastic) and their radii grow as
``r(t) = r0 (1 + g t)``. The scheme evaluates every gap at the end of the step
with the radii of that time (Bernicot and Lefebvre-Lepot, *Existence results for
non-smooth second order differential inclusions, convergence result for a numerical
scheme and application to the modelling of inelastic collisions*, 2010, end of
section 4), so the projection pushes the spheres apart as they swell. When no
velocity can make room any more the projection is infeasible: `granular.JammingError`,
with the time and the packing fraction reached, which this scene prints.

OSQP does not always certify an infeasible problem; when it gives up with a plain
`SolverError`, the step is handed to the reference solver (cvxpy, if installed)
to tell jamming from a solver failure.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import granular as gr
from granular.render import animate, snapshot

N = 80
BOX = 0.1  # m, side of the cube
PACKING = 0.10  # initial packing fraction
GROWTH = 0.8  # 1/s, relative growth rate of the radii
DEFAULTS = dict(duration=1.5, dt=1e-3, record_every=10)
RENDERS = Path("outputs")  # under the working directory
R0 = (PACKING * BOX**3 / (N * 4.0 / 3.0 * np.pi)) ** (1.0 / 3.0)


def radii(t: float) -> np.ndarray:
    """Radii at time t (m)."""
    return np.full(N, R0 * (1.0 + GROWTH * t))


def random_centres(seed: int) -> np.ndarray:
    """Random sequential addition: non-overlapping centres inside the box."""
    rng = np.random.default_rng(seed)
    centres = np.zeros((0, 3))
    while len(centres) < N:
        candidate = rng.uniform(R0, BOX - R0, 3)
        if np.all(np.linalg.norm(centres - candidate, axis=1) > 2.0 * R0):
            centres = np.vstack([centres, candidate])
    return centres


#: ``granular run growing_spheres --set seed=4``: another random start (the run
#: ends in a JammingError; its frames and summary are kept).
PARAMETERS = dict(seed=3)
#: The run ends in a jam, which is this scene's result: ``granular run`` saves it as a
#: complete run and exits 0.
EXPECTED_ERRORS = (gr.JammingError,)
PARAMETER_HELP = dict(seed="random seed of the initial centres and velocities")


def build(seed: int = 3, positions=None, velocities=None, t0: float = 0.0) -> gr.SphereWorld:
    """The growing spheres; ``positions``, ``velocities``, ``t0`` restart from a saved state."""
    rng = np.random.default_rng(seed + 1)
    positions = random_centres(seed) if positions is None else positions
    velocities = rng.normal(0.0, 0.02, (N, 3)) if velocities is None else velocities
    return gr.SphereWorld(
        positions,
        radii,
        masses=0.01,
        velocities=velocities,
        gravity=(0.0, 0.0, 0.0),
        walls=[gr.Box([0.0, 0.0, 0.0], [BOX, BOX, BOX])],
        t0=t0,
    )


def summary(trajectory: gr.Trajectory) -> dict:
    """``packing_fraction`` (1) of the box at the last frame (the sum of the spheres'
    volumes over the box's; the jamming fraction when the run ended in a jam) and
    ``t_end`` (s), the time of that frame."""
    radii_end = np.asarray(trajectory.radii[-1], dtype=float)
    volume = float(np.sum(4.0 / 3.0 * np.pi * radii_end**3))
    return dict(packing_fraction=volume / BOX**3, t_end=float(trajectory.t[-1]))


def confirm_jamming(sim: gr.Simulation) -> str:
    """Ask cvxpy whether the step that OSQP could not solve is infeasible."""
    world = build(positions=sim.positions, velocities=sim.velocities, t0=sim.t)
    try:
        gr.Simulation(world, dt=sim.dt, solver="cvxpy").step()
    except gr.JammingError:
        return "cvxpy confirms: infeasible, jammed"
    except (ImportError, gr.InvalidInputError) as error:
        return f"not confirmed ({error})"
    except gr.SolverError as error:
        return f"cvxpy failed too ({error})"
    return "cvxpy solved the step: a solver failure, not jamming"


def main(duration: float = DEFAULTS["duration"], dt: float = DEFAULTS["dt"]) -> gr.Trajectory:
    world = build()
    sim = gr.Simulation(world, dt=dt)
    every = DEFAULTS["record_every"]
    parts, outcome = [], f"not jammed by t = {duration:g} s"
    try:
        while sim.t < duration - 0.5 * dt:
            parts.append(sim.run(steps=min(5 * every, int(round((duration - sim.t) / dt))), record_every=every))
    except gr.JammingError as jam:
        outcome = f"jammed at t = {jam.t:.4f} s: JammingError"
    except gr.SolverError as failure:
        outcome = f"projection failed at t = {failure.t:.4f} s; {confirm_jamming(sim)}"
    trajectory = gr.Trajectory.concatenate(parts)
    fraction = world.packing_fraction(sim.t)
    print(f"growing_spheres: {N} spheres in a {BOX} m box, radii r0 (1 + {GROWTH} t), r0 = {R0 * 1e3:.3f} mm")
    print(f"  initial packing fraction    {world.packing_fraction(0.0):.4f}")
    print(f"  {outcome}")
    print(f"  packing fraction reached    {fraction:.4f} (radius {radii(sim.t)[0] * 1e3:.3f} mm)")
    print(f"  active contacts at the end  {int(np.count_nonzero(trajectory.contacts[-1].impulse > 0))}")
    print(
        f"  smallest gap of the last step {trajectory.contacts[-1].gap.min(initial=np.inf):.3g} m "
        f"(D(t_n+1, q_n): one step of growth, {2 * R0 * GROWTH * dt:.3g} m, closed by the projection)"
    )
    return trajectory


if __name__ == "__main__":
    trajectory = main(*(float(a) for a in sys.argv[1:2]))

    animate(
        trajectory,
        RENDERS / "growing_spheres.mp4",
        fps=20,
        size=(512, 384),
        camera="orbit",
        color_by="id",
        orbit_turns=0.5,
        title="growing",
    )
    snapshot(trajectory, -1, RENDERS / "growing_spheres.png", forces=True, size=(512, 384))
    print(f"  wrote {RENDERS / 'growing_spheres.mp4'} and {RENDERS / 'growing_spheres.png'}")
