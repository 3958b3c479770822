"""Silo filling: an empty cylindrical silo filled from an inlet with a size distribution.

The silo (radius 4 cm, a closed floor, open at the top) starts empty. An
`granular.Inlet` near the top inserts frictional spheres (Coulomb 0.4, turning),
radii uniform between 2.5 and 3.5 mm, thrown down at 0.2 m/s, at ``mass_rate``
kg/s for ``fill_time`` seconds, never overlapping a sphere or the wall; they pour
down and heap, and the run's second half lets the heap settle. `summary`
gives the mass inserted against the inlet's rate (they agree to within one
sphere while the inlet has room), the height of the heap and the packing fraction
of its lower half, which for a poured frictional bed lies between random loose
packing (about 0.55: Onoda and Liniger, *Random loose packings of uniform spheres
and the dilatancy onset*, Physical Review Letters 64, 1990) and random close
packing (0.64), less near the silo's wall and floor, where spheres pack looser.
The default run (``python -m granular.scenes.silo_filling``: 0.15 kg, 517 spheres,
settled for 0.3 s) gives 0.581 over a heap 1.9 cm high.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import granular as gr
from granular.spheres.flows import CylinderRegion, Inlet
from granular.progress import progress

DENSITY = 2500.0  # kg/m^3
SILO_RADIUS = 0.04  # m
HEIGHT = 0.12  # m
# dt: a sphere reaches at most sqrt(0.2^2 + 2 g 0.1) = 1.41 m/s after falling from the
# inlet (0.1 m up at most, thrown at 0.2 m/s), and should travel under a tenth of its
# smallest radius a step (granular.simulation.MAX_TRAVEL): dt <= 0.1 * 2.5e-3 / 1.41 = 1.8e-4 s.
DEFAULTS = dict(duration=0.6, dt=1.5e-4, record_every=200)
PARAMETERS = dict(mass_rate=0.5, fill_time=0.3, friction=0.4, seed=0)
PARAMETER_HELP = dict(
    mass_rate="the inlet's rate (kg/s)",
    fill_time="how long the inlet feeds (s)",
    friction="Coulomb coefficient of every contact",
    seed="seed of the inlet's draws",
)
RADII = (0.0025, 0.0035)  # m, uniform


def build(
    mass_rate: float = PARAMETERS["mass_rate"],
    fill_time: float = PARAMETERS["fill_time"],
    friction: float = PARAMETERS["friction"],
    seed: int = PARAMETERS["seed"],
) -> gr.SphereWorld:
    """The empty silo and its inlet, a disc-shaped band 3 cm thick 2 cm under the rim."""
    silo = gr.Cylinder([0.0, 0.0, HEIGHT / 2], [0.0, 0.0, 1.0], SILO_RADIUS, height=HEIGHT, caps=False)
    floor = gr.Plane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0])
    feed = CylinderRegion([0.0, 0.0], SILO_RADIUS - 0.005, HEIGHT - 0.05, HEIGHT - 0.02)
    inlet = Inlet(
        feed, radius=RADII, mass_rate=mass_rate, velocity=(0.0, 0.0, -0.2), density=DENSITY, seed=seed, stop=fill_time
    )
    return gr.SphereWorld(
        np.zeros((0, 3)), RADII[0], density=DENSITY, walls=[silo, floor], friction=friction, inlets=[inlet]
    )


def heap(trajectory: gr.Trajectory, k: int = -1) -> tuple[float, float]:
    """``(height (m), packing fraction)`` of the bed in frame ``k``: the height below
    which 90 % of the spheres' centres lie, and the spheres' volume below half that
    height over the silo's volume there (the settled lower half of the bed)."""
    k = k % len(trajectory)
    ids = trajectory.present(k)
    if ids.size < 10:
        return 0.0, 0.0
    positions, radii = trajectory.positions[k][ids], trajectory.radii[k][ids]
    height = float(np.quantile(positions[:, 2], 0.9))
    low = positions[:, 2] < 0.5 * height
    return height, float(np.sum(4.0 / 3.0 * np.pi * radii[low] ** 3) / (np.pi * SILO_RADIUS**2 * 0.5 * height))


def summary(trajectory: gr.Trajectory) -> dict:
    """``inserted`` (spheres), ``inserted_mass`` (kg), ``expected_mass`` (the inlet's
    rate times the time it fed, kg), ``heap_height`` (m) and ``packing_fraction`` (`heap`)."""
    flow = trajectory.flow[-1]
    inlet = trajectory.system["flows"]["inlets"][0]
    stop = np.inf if inlet["stop"] is None else inlet["stop"]
    fed = min(float(trajectory.t[-1]), stop) - max(float(trajectory.t[0]), inlet["start"])
    height, fraction = heap(trajectory)
    return dict(
        inserted=int(flow[1]),
        inserted_mass=float(flow[2]),
        expected_mass=float(inlet["mass_rate"] * fed),
        heap_height=height,
        packing_fraction=fraction,
    )


def main(duration: float = DEFAULTS["duration"]) -> gr.Trajectory:
    simulation = gr.Simulation(build(), dt=DEFAULTS["dt"])
    start = time.perf_counter()
    trajectory = simulation.run(duration=duration, record_every=DEFAULTS["record_every"], progress=progress())
    figures = summary(trajectory)
    print(
        f"silo_filling: {figures['inserted']} spheres, {figures['inserted_mass']:.4g} kg inserted "
        f"({figures['expected_mass']:.4g} kg at the inlet's rate) in {time.perf_counter() - start:.1f} s; heap "
        f"{figures['heap_height'] * 100:.2f} cm high, packing fraction {figures['packing_fraction']:.3f}"
    )
    return trajectory


if __name__ == "__main__":
    main(*(float(a) for a in sys.argv[1:2]))
