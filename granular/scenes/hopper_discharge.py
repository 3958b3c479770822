"""Hopper discharge: a flat-bottomed silo fed from an inlet empties through a circular orifice.

A vertical cylindrical silo (radius ``silo_radius``) stands on a floor with a
circular orifice of diameter ``orifice`` sphere diameters at its centre. The floor
is a `granular.Cone` of half-angle 84 degrees from the axis, a funnel almost flat
(its rim at the orifice is a rounded lip), so the silo is flat-bottomed as in
Beverloo's experiments. The grains are frictional turning spheres (Coulomb 0.5 at
every contact); they start on a lattice filling the silo to ``fill_height``, an
`granular.Inlet` at the top keeps it full (it inserts faster than the orifice
drains, and waits where the region has no room), and an `granular.Outlet` removes
the grains that have fallen a few diameters below the orifice.

`summary` gives the steady mass flow rate ``W`` (kg/s): the slope of the mass the
outlet removed against time, fitted over the second half of the run, and the bulk
density of the bed. Beverloo, Leniger and van de Velde (*The flow of granular
solids through orifices*, Chemical Engineering Science 15, 1961) found for a flat
orifice of diameter ``D`` and grains of diameter ``d``::

    W = C rho_b sqrt(g) (D - k d)^(5/2),     C = 0.55-0.65, k = 1.3-2.9,

``rho_b`` the bulk density of the flowing bed (kg/m^3). The sweep of
``benchmarks/beverloo.py`` (``python benchmarks/beverloo.py 0.6``: orifices of 4, 5,
6 and 7 diameters, d = 4 mm, silo radius 30 mm, 0.6 s each at dt = 2.5e-4 s, the
rate fitted over the last 0.3 s) measured W = 0.0219, 0.0513, 0.104 and 0.166 kg/s
with rho_b = 1386-1397 kg/m^3, and fits

    C = 0.554,  k = 1.57     (published: C = 0.55-0.65, k = 1.3-2.9),

both inside the published ranges (``BEVERLOO_FIT``). The runs are short (153 to
1,115 grains out), so the fit carries the noise of a few hundred grains; the widest
orifice is 0.47 silo diameters, near where the silo's wall starts to slow the flow.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import granular as gr
from granular.spheres.flows import CylinderRegion, Inlet, Outlet, BoxRegion
from granular.progress import progress
from granular.render import snapshot

DENSITY = 2500.0  # kg/m^3, glass
FLOOR_ANGLE = np.radians(84.0)  # the floor cone's half-angle from the vertical axis (90: flat)
DEFAULTS = dict(duration=0.5, dt=2.5e-4, record_every=40)
PARAMETERS = dict(orifice=5.0, radius=0.002, silo_radius=0.03, fill_height=0.05, friction=0.5, seed=0)
PARAMETER_HELP = dict(
    orifice="orifice diameter D in sphere diameters",
    radius="sphere radius r (m); the diameter d = 2 r",
    silo_radius="inner radius of the silo (m)",
    fill_height="height of the bed the lattice starts with and the inlet keeps (m)",
    friction="Coulomb coefficient of every contact (the spheres turn)",
    seed="seed of the lattice's jitter and of the inlet's draws",
)
#: The fit of ``benchmarks/beverloo.py`` (module docstring): C, k and the command.
BEVERLOO_FIT = dict(C=0.554, k=1.57, command="python benchmarks/beverloo.py 0.6")
RENDERS = Path("outputs")  # under the working directory


def walls(orifice_radius: float, silo_radius: float, top: float, friction: float) -> list:
    """The silo's side (an open cylinder from the floor's rim up to ``top``) and its floor,
    a nearly flat cone from the orifice's rim to the side (m)."""
    rise = (silo_radius - orifice_radius) / np.tan(FLOOR_ANGLE)
    floor = gr.Cone([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], orifice_radius, silo_radius, rise, friction=friction)
    side = gr.Cylinder(
        [0.0, 0.0, 0.5 * (rise + top)], [0.0, 0.0, 1.0], silo_radius, height=top - rise, caps=False, friction=friction
    )
    return [side, floor]


def lattice(radius: float, silo_radius: float, fill_height: float, orifice_radius: float, seed: int) -> np.ndarray:
    """Centres (N, 3) on a jittered square lattice inside the silo, above the floor."""
    rng = np.random.default_rng(seed)
    spacing = 2.2 * radius
    ticks = np.arange(-silo_radius + 1.2 * radius, silo_radius - 1.2 * radius, spacing)
    heights = np.arange(3.0 * radius + (silo_radius - orifice_radius) / np.tan(FLOOR_ANGLE), fill_height, spacing)
    grid = np.stack(np.meshgrid(ticks, ticks, heights, indexing="ij"), -1).reshape(-1, 3)
    grid = grid[np.hypot(grid[:, 0], grid[:, 1]) < silo_radius - 1.2 * radius]
    return grid + rng.uniform(-0.05, 0.05, grid.shape) * radius


def build(
    orifice: float = PARAMETERS["orifice"],
    radius: float = PARAMETERS["radius"],
    silo_radius: float = PARAMETERS["silo_radius"],
    fill_height: float = PARAMETERS["fill_height"],
    friction: float = PARAMETERS["friction"],
    seed: int = PARAMETERS["seed"],
) -> gr.SphereWorld:
    """The silo, its grains, the inlet that keeps it full and the outlet below the orifice."""
    if not orifice > 1.0:
        raise gr.InvalidInputError(f"orifice must exceed 1 sphere diameter, got {orifice}")
    orifice_radius = orifice * radius  # D / 2 = orifice d / 2
    top = fill_height + 8.0 * radius
    positions = lattice(radius, silo_radius, fill_height, orifice_radius, seed)
    # A feed band above the bed, as wide as the silo: its rate (a bed's worth in 0.2 s)
    # outruns any orifice here, so the bed stays at about fill_height.
    feed = CylinderRegion([0.0, 0.0], silo_radius - 1.05 * radius, fill_height, top - radius)
    rate = 5.0 * positions.shape[0]
    inlet = Inlet(feed, radius=radius, rate=rate, velocity=(0.0, 0.0, -0.2), density=DENSITY, seed=seed)
    below = BoxRegion([-np.inf, -np.inf, -np.inf], [np.inf, np.inf, -6.0 * radius])
    return gr.SphereWorld(
        positions,
        radius,
        density=DENSITY,
        walls=walls(orifice_radius, silo_radius, top, friction),
        friction=friction,
        inlets=[inlet],
        outlets=[Outlet(below)],
    )


def mass_flow_rate(trajectory: gr.Trajectory, since: float = 0.5) -> float:
    """The slope (kg/s) of the mass removed against time over the frames after the
    fraction ``since`` of the run (least squares)."""
    removed = trajectory.removed_mass()
    frames = trajectory.t >= trajectory.t[0] + since * (trajectory.t[-1] - trajectory.t[0])
    if np.count_nonzero(frames) < 2:
        return float("nan")
    return float(np.polyfit(trajectory.t[frames], removed[frames], 1)[0])


def bulk_density(trajectory: gr.Trajectory, k: int = -1) -> float:
    """Mass of the spheres (kg) whose centres lie in the silo between 4 diameters above
    the floor and 4 below the bed's top, over that volume (kg/m^3), in frame ``k``."""
    system = trajectory.system
    side = system["walls"][0]
    silo_radius = float(side["radius"])
    k = k % len(trajectory)
    ids = trajectory.present(k)
    positions, radii = trajectory.positions[k][ids], trajectory.radii[k][ids]
    d = 2.0 * float(np.median(radii))
    low, high = 4.0 * d, float(np.quantile(positions[:, 2], 0.9)) - 4.0 * d
    inside = (positions[:, 2] > low) & (positions[:, 2] < high)
    masses = np.asarray(trajectory.meta["masses"])[ids]
    if not high > low:
        return float("nan")
    return float(masses[inside].sum() / (np.pi * silo_radius**2 * (high - low)))


def summary(trajectory: gr.Trajectory) -> dict:
    """``mass_flow_rate`` (kg/s, `mass_flow_rate`), ``bulk_density`` (kg/m^3, the last
    frame's), ``inserted`` and ``removed`` (spheres, by the end)."""
    flow = trajectory.flow[-1]
    return dict(
        mass_flow_rate=mass_flow_rate(trajectory),
        bulk_density=bulk_density(trajectory),
        inserted=int(flow[1]),
        removed=int(flow[3]),
    )


def main(duration: float = DEFAULTS["duration"], dt: float = DEFAULTS["dt"]) -> gr.Trajectory:
    world = build()
    simulation = gr.Simulation(world, dt=dt)
    start = time.perf_counter()
    trajectory = simulation.run(duration=duration, record_every=DEFAULTS["record_every"], progress=progress())
    seconds = time.perf_counter() - start
    figures = summary(trajectory)
    print(
        f"hopper_discharge: orifice {PARAMETERS['orifice']:g} d, {world.n} grains at the end, "
        f"{simulation.steps_taken} steps of {dt:g} s in {seconds:.1f} s"
    )
    print(
        f"  inserted {figures['inserted']}, removed {figures['removed']}; steady mass flow rate "
        f"{figures['mass_flow_rate']:.4g} kg/s, bulk density {figures['bulk_density']:.4g} kg/m^3"
    )
    return trajectory


if __name__ == "__main__":
    trajectory = main(*(float(a) for a in sys.argv[1:2]))

    snapshot(
        trajectory, len(trajectory) - 1, RENDERS / "hopper_discharge.png", size=(512, 384), view=(0.25, -1.0, 0.35)
    )
    print(f"  wrote {RENDERS / 'hopper_discharge.png'}")
