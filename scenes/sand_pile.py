"""Sand pile: frictional spheres poured onto a floor form a heap whose slope grows with mu.

A quasi-2D slot (one sphere thick, frictionless glass walls at y = 0 and y = W)
over a rough floor. ``N`` spheres of radii 4-6 mm (polydisperse, so the heap
does not crystallise) start at random in a loose column 0.1 m wide above x = 0 and
fall, the higher ones later, like a stream from a funnel; Coulomb friction ``mu``
acts between spheres and between spheres and the floor. The spheres do not
rotate (see `granular.world`): friction resists sliding only, so the heap is a
heap of frictional points, whose angle of repose depends on ``mu`` alone.

The angle of repose is read from the settled surface: the top of the highest
sphere in bins one diameter wide along x, a straight line fitted to each flank
between 20% and 80% of the heap's height, the angle the mean of both flanks.

Prints, for mu = 0, 0.3 and 0.6: the angle of repose, the final kinetic energy
and the solver time per step; writes ``renders/sand_pile.png`` (the three heaps
and their fitted flanks).

    python scenes/sand_pile.py

Status: mu = 0 runs (150 spheres, 1.5 s: flat layer, 0.8 deg, 11 ms/step). With
mu = 0.3 and 0.6 the 3D Coulomb fixed point of `granular.friction` stops
converging in the dense stream (ConvergenceError at t = 0.36 s and 0.15 s with
150 spheres): the angles of repose are not measured yet.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import granular as gr

RADIUS_RANGE = (0.004, 0.006)       # m
SLOT = 2.0 * RADIUS_RANGE[1] * 1.05  # m, slot thickness: one sphere
FLOOR_HALF_WIDTH = 0.25             # m, end walls at x = -0.25 and 0.25
FRICTIONS = (0.0, 0.3, 0.6)
DEFAULTS = dict(duration=2.0, dt=1e-3, record_every=50)
RENDERS = Path(__file__).resolve().parent.parent / "renders"


def build(friction: float = 0.6, n: int = 300, width: float = 0.1, seed: int = 3) -> gr.SphereWorld:
    """``n`` spheres at random in a column ``width`` (m) wide above the centre of a
    rough floor, at a loose 2D packing fraction of about 0.35 (random sequential
    insertion: no lattice, so no sphere lands exactly on top of another, which
    rotation-free spheres would keep as a standing tower)."""
    rng = np.random.default_rng(seed)
    radii = rng.uniform(*RADIUS_RANGE, n)
    area = np.pi * np.sum(radii ** 2) / 0.35
    height = area / width
    centres = np.zeros((0, 2))
    for r in radii:
        for _ in range(10000):
            candidate = np.array([rng.uniform(-0.5 * width + r, 0.5 * width - r),
                                  rng.uniform(RADIUS_RANGE[1] + r, RADIUS_RANGE[1] + height - r)])
            placed = radii[:len(centres)]
            if np.all(np.linalg.norm(centres - candidate, axis=1) > placed + r + 1e-4):
                centres = np.vstack([centres, candidate])
                break
        else:
            raise RuntimeError("could not place the spheres; lower n or widen the column")
    positions = np.stack([centres[:, 0], np.full(n, 0.5 * SLOT), centres[:, 1]], axis=1)
    walls = [gr.Plane([0, 0, 0], [0, 0, 1], friction=friction),
             gr.Plane([0, 0, 0], [0, 1, 0], friction=0.0), gr.Plane([0, SLOT, 0], [0, -1, 0], friction=0.0),
             gr.Plane([-FLOOR_HALF_WIDTH, 0, 0], [1, 0, 0], friction=0.0),
             gr.Plane([FLOOR_HALF_WIDTH, 0, 0], [-1, 0, 0], friction=0.0)]
    return gr.SphereWorld(positions, radii, density=2500.0, walls=walls, friction=friction)


def surface(positions: np.ndarray, radii: np.ndarray, bin_width: float) -> tuple[np.ndarray, np.ndarray]:
    """Bin centres (m) and the top of the highest sphere in each occupied bin (m)."""
    x, top = positions[:, 0], positions[:, 2] + radii
    bins = np.floor(x / bin_width).astype(int)
    centres, heights = [], []
    for b in np.unique(bins):
        centres.append((b + 0.5) * bin_width)
        heights.append(top[bins == b].max())
    return np.array(centres), np.array(heights)


def angle_of_repose(positions: np.ndarray, radii: np.ndarray) -> tuple[float, list]:
    """Mean flank angle (degrees) of the heap, and the two fitted lines
    ``(slope, intercept, x_min, x_max)``. A heap lower than two diameters (a flat
    layer) has angle 0."""
    diameter = 2.0 * float(radii.mean())
    x, height = surface(positions, radii, diameter)
    peak = int(np.argmax(height))
    base = float(np.median(np.sort(height)[: max(3, height.size // 5)]))  # the floor layer
    rise = height[peak] - base
    if rise < 2.0 * diameter:
        return 0.0, []
    band = (height > base + 0.2 * rise) & (height < base + 0.8 * rise)
    fits, angles = [], []
    for side in (x < x[peak], x > x[peak]):
        chosen = band & side
        if np.count_nonzero(chosen) < 3:
            continue
        slope, intercept = np.polyfit(x[chosen], height[chosen], 1)
        fits.append((slope, intercept, x[chosen].min(), x[chosen].max()))
        angles.append(np.degrees(np.arctan(abs(slope))))
    return (float(np.mean(angles)) if angles else 0.0), fits


def pour(friction: float, duration: float = DEFAULTS["duration"], dt: float = DEFAULTS["dt"],
         n: int = 300) -> dict:
    """Run one pour; returns the final state, the angle and timings."""
    world = build(friction, n=n)
    simulation = gr.Simulation(world, dt)
    solve_seconds, steps = 0.0, int(round(duration / dt))
    start = time.perf_counter()
    for _ in range(steps):
        result = simulation.step()
        solve_seconds += result.solver.seconds.get("solve", 0.0)
    wall = time.perf_counter() - start
    angle, fits = angle_of_repose(result.positions, result.radii)
    return dict(friction=friction, positions=result.positions, radii=result.radii, angle=angle, fits=fits,
                kinetic_energy=result.kinetic_energy, seconds_per_step=wall / steps,
                solve_per_step=solve_seconds / steps)


def main(out_dir: Path = RENDERS) -> list:
    runs = []
    print(f"sand pile: {300} spheres, r in {RADIUS_RANGE} m, quasi-2D slot, dt = {DEFAULTS['dt']} s, "
          f"{DEFAULTS['duration']} s")
    for friction in FRICTIONS:
        run = pour(friction)
        runs.append(run)
        print(f"  mu = {friction:.1f}: angle of repose {run['angle']:5.1f} deg, final KE "
              f"{run['kinetic_energy']:.2e} J, {run['seconds_per_step'] * 1e3:.1f} ms/step "
              f"({run['solve_per_step'] * 1e3:.1f} ms in the contact solve)")
    plot(runs, Path(out_dir) / "sand_pile.png")
    return runs


def plot(runs: list, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Circle

    figure, axes = plt.subplots(len(runs), 1, figsize=(9, 2.6 * len(runs)), sharex=True)
    for axis, run in zip(np.atleast_1d(axes), runs):
        circles = [Circle((p[0], p[2]), r) for p, r in zip(run["positions"], run["radii"])]
        axis.add_collection(PatchCollection(circles, facecolor="tan", edgecolor="0.3", linewidth=0.3))
        for slope, intercept, x0, x1 in run["fits"]:
            xs = np.array([x0, x1])
            axis.plot(xs, slope * xs + intercept, "r-", lw=1.5)
        axis.set(aspect="equal", ylim=(0, 0.12), ylabel="z (m)",
                 title=f"mu = {run['friction']:.1f}: angle of repose {run['angle']:.1f} deg")
    np.atleast_1d(axes)[-1].set(xlabel="x (m)", xlim=(-FLOOR_HALF_WIDTH, FLOOR_HALF_WIDTH))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"  wrote {path}")


if __name__ == "__main__":
    main()
