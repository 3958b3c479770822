"""Sand pile: poured spheres that turn stand as a heap only with rolling resistance.

A quasi-2D slot (one sphere thick, frictionless glass walls at y = 0 and y = W)
over a rough floor ``2 floor_half_width`` long (end walls at x = -1 and 1 m by
default). ``N`` spheres of radii 4-6 mm (polydisperse, so the heap does not
crystallise) start at random in a loose column ``width`` wide above x = 0 (0.3 m by
default, 0.23 m tall for 300 spheres) and fall, the higher ones later; Coulomb
friction ``mu`` acts between spheres and between spheres and the floor. By default
friction turns the spheres (``rotation=True``, see `granular.spheres.world`): they can
roll, resisted by ``rolling_friction`` (``mu_r``, the rolling friction cone of
Tasora and Anitescu, 2013: a torque impulse at most ``mu_r R* lambda_N``, ``R* =
r_i r_j / (r_i + r_j)`` between spheres, about 2.5 mm here, and ``r_i`` on the
floor). ``rotation=False`` gives frictional points that never turn.

The angle of repose is read from the settled surface: the top of the highest
sphere in bins one diameter wide along x, a straight line fitted to each flank
between 20% and 80% of the heap's height, the angle the mean of both flanks.

Runs the pours of `POURS` from each seed of `SEEDS` (15 pours, about 8 minutes on
one core) until the heap rests (kinetic energy below `REST_ENERGY` for `REST_TIME`)
or 2 s; prints each pour's angle and flanks, when it came to rest (or how many
spheres still move), the spheres at the end walls and the timings, then each
setting's mean angle; writes ``outputs/sand_pile.png`` (seed 3's deposits and their
fitted flanks).

    python -m granular.scenes.sand_pile [--workers 1]

The angles of the 15 pours, their times, and how they changed with the solvers are
in `benchmarks/README.md` ("`scenes/sand_pile.py`"): without rolling resistance the
turning spheres leave a low mound, and the angle grows with ``mu_r``.

What the numbers mean. Spheres that turn need rolling resistance to stand as a free
heap. Without it (mu_r = 0) nothing stops a sphere rolling on the flat floor: the
pour leaves a low mound (7-13 deg) and 62-118 of the 300
spheres still move at 2 s,
rolling out towards the end walls 1 m away; on a floor 0.5 m long they banked
against its walls. With mu_r = 0.1 the heap
stands free within x = +-0.3 m (a few runaway spheres to 0.65 m: rolling on the
floor decelerates at 5/7 mu_r g = 0.7 m/s^2, `tests/test_rotation.py`, so a sphere
leaving at 1 m/s rolls 0.7 m) and the angle grows with mu_r: 17, 20 and 21 deg for
mu_r = 0.1, 0.2 and 0.3, above the slope down which a lone sphere rolls on a plane
of the same mu_r, ``atan(mu_r)`` = 6, 11 and 17 deg. The pour matters as much: from
a column 0.1 m wide (0.68 m tall, the last spheres landing at 3.7 m/s) the same
spheres spread to 11 deg at mu_r = 0.3 and 3 deg at mu_r = 0.1 (seed 3, floor
+-0.5 m, measured while choosing the column); from the 0.3 m column they land at up
to 2 m/s. And one pour is one sample: identical settings (column 0.2 m, mu_r = 0.3,
seed 3) gave 19.5, 19.6 and 21.3 deg under successive versions of the solver
(round-off changed the order of events), so the seeds' spread, 4-9 deg for the
turning heaps in `benchmarks/README.md`'s runs, is the precision of these angles: the means for
mu_r = 0.2 and 0.3 do not tell apart.
Frictional points cannot roll (as
if their rolling resistance were unbounded): they stop where they land and the
narrow column leaves a loose deposit of vertical chains, 38 deg on average (one
flank as low as 12 deg and others up to 56), steeper than
any heap of turning spheres; from the 0.3 m column they leave a flat-topped block as
wide as the column, with no flank to fit.

These trends are those of the DEM study of Zhou, Xu, Yu and Zulli (*Numerical
investigation of the angle of repose of monosized spheres*, Physical Review E,
2001), whose abstract reports that sliding and rolling friction are the primary
reasons a sandpile forms, that increasing either coefficient increases the angle of
repose, that larger particles and thicker containers decrease it, and that the angle
is not sensitive to density, Poisson's ratio, damping or Young's modulus. Their
rolling friction coefficient is a length (the torque is that length times the normal
force); ours is dimensionless, so theirs = ``mu_r R*``: ours of 0.1, 0.2 and 0.3 are
0.25, 0.5 and 0.75 mm between two spheres of radius 5 mm and 0.5, 1 and 1.5 mm on
the floor. Their experiments with glass beads (*An experimental and numerical study
of the angle of repose of coarse spheres*, Powder Technology, 2002) are not compared
number for number: no text giving their measured angles was at hand, and no angle is
quoted here that was not read. Nor would a match be expected: this slot is one
sphere thick with frictionless side walls (their abstract relates the effect of the
container's thickness to particle-wall interactions), the spheres are polydisperse
(4-6 mm), the contacts hard and perfectly inelastic (their DEM has soft contacts,
with a Young's modulus, a Poisson's ratio and damping, to which, by their abstract,
the angle is not sensitive), and the heap comes from a column that falls all at once
rather than from a steady stream. What this scene shows is the qualitative result
they report: without rolling resistance spheres free to turn do not make a heap, and
the angle rises with mu_r.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import granular as gr

RADIUS_RANGE = (0.004, 0.006)  # m
SLOT = 2.0 * RADIUS_RANGE[1] * 1.05  # m, slot thickness: one sphere
#: m, end walls at x = -1 and 1: the widest heap with rolling resistance (mu_r = 0.1)
#: stands within x = +-0.3 m and its few runaway spheres stop by 0.65 m, so the heaps
#: stand free. Spheres without rolling resistance still roll on towards the walls:
#: nothing stops a sphere rolling on a flat floor.
FLOOR_HALF_WIDTH = 1.0
#: m, width of the falling column: wide enough that the column of 300 spheres is
#: 0.23 m tall, so the last spheres land at about 2 m/s (a column 0.1 m wide is
#: 0.68 m tall and its spheres, landing at up to 3.7 m/s, spread the heap to 11 deg
#: at mu_r = 0.3).
COLUMN_WIDTH = 0.3
DEFAULTS = dict(duration=2.0, dt=1e-3, record_every=50)
#: The heap rests when its kinetic energy stays below REST_ENERGY (J) for REST_TIME
#: (s): about 1 mm/s per sphere (a sphere weighs 1-3 g).
REST_ENERGY = 1e-7
REST_TIME = 0.05
RENDERS = Path("outputs")  # under the working directory
#: ``granular run sand_pile --set rolling_friction=0.3`` (the command runs the full
#: duration; it does not stop when the heap rests as `pour` does).
PARAMETERS = dict(
    friction=0.6,
    n=300,
    width=COLUMN_WIDTH,
    seed=3,
    rotation=True,
    rolling_friction=0.0,
    floor_half_width=FLOOR_HALF_WIDTH,
)
PARAMETER_HELP = dict(
    friction="Coulomb friction coefficient between spheres and with the floor (1)",
    n="number of spheres",
    width="width of the falling column (m)",
    seed="random seed of the radii and starting places",
    rotation="whether friction turns the spheres (default; False: frictional points)",
    rolling_friction="rolling resistance coefficient mu_r between spheres and with the floor (1; needs rotation=True)",
    floor_half_width="half the length of the floor: the end walls stand at x = -this and +this (m)",
)
#: The pours `main` compares, ``(friction, rotation, rolling_friction, column width
#: (m))``: frictional points, then spheres that turn without and with rolling
#: resistance. The points pour from the former column 0.1 m wide: they stop where they
#: land, so from the 0.3 m column they leave a flat-topped block as wide as the
#: column, with no flank to measure.
POURS = (
    (0.6, False, 0.0, 0.1),
    (0.6, True, 0.0, COLUMN_WIDTH),
    (0.6, True, 0.1, COLUMN_WIDTH),
    (0.6, True, 0.2, COLUMN_WIDTH),
    (0.6, True, 0.3, COLUMN_WIDTH),
)
#: Each pour is repeated from these seeds (radii and starting places): a pour is
#: chaotic, so one seed's angle is one sample (module docstring).
SEEDS = (3, 4, 5)


def build(
    friction: float = 0.6,
    n: int = 300,
    width: float = COLUMN_WIDTH,
    seed: int = 3,
    rotation: bool = True,
    rolling_friction: float = 0.0,
    floor_half_width: float = FLOOR_HALF_WIDTH,
) -> gr.SphereWorld:
    """``n`` spheres at random in a column ``width`` (m) wide above the centre of a
    rough floor ``2 floor_half_width`` (m) long, at a loose 2D packing fraction of
    about 0.35 (random sequential insertion: no lattice, so no sphere lands exactly
    on top of another, which rotation-free spheres would keep as a standing tower).
    ``rotation=True`` (default): friction turns the spheres and they can roll
    (`granular.spheres.world`), resisted by ``rolling_friction`` (``mu_r``, between spheres and
    on the floor); ``False``: they do not turn (frictional points)."""
    rng = np.random.default_rng(seed)
    radii = rng.uniform(*RADIUS_RANGE, n)
    area = np.pi * np.sum(radii**2) / 0.35
    height = max(area / width, 4.0 * RADIUS_RANGE[1])  # a few spheres: still room for the largest
    centres = np.zeros((0, 2))
    for r in radii:
        for _ in range(10000):
            candidate = np.array(
                [
                    rng.uniform(-0.5 * width + r, 0.5 * width - r),
                    rng.uniform(RADIUS_RANGE[1] + r, RADIUS_RANGE[1] + height - r),
                ]
            )
            placed = radii[: len(centres)]
            if np.all(np.linalg.norm(centres - candidate, axis=1) > placed + r + 1e-4):
                centres = np.vstack([centres, candidate])
                break
        else:
            raise RuntimeError("could not place the spheres; lower n or widen the column")
    positions = np.stack([centres[:, 0], np.full(n, 0.5 * SLOT), centres[:, 1]], axis=1)
    walls = [
        gr.Plane([0, 0, 0], [0, 0, 1], friction=friction, rolling_friction=rolling_friction),
        gr.Plane([0, 0, 0], [0, 1, 0], friction=0.0),
        gr.Plane([0, SLOT, 0], [0, -1, 0], friction=0.0),
        gr.Plane([-floor_half_width, 0, 0], [1, 0, 0], friction=0.0),
        gr.Plane([floor_half_width, 0, 0], [-1, 0, 0], friction=0.0),
    ]
    return gr.SphereWorld(
        positions,
        radii,
        density=2500.0,
        walls=walls,
        friction=friction,
        rotation=rotation,
        rolling_friction=rolling_friction,
    )


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
    ``(slope, intercept, x_min, x_max)``, the left flank first. A heap lower than two
    diameters (a flat layer) has angle 0."""
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


def flank_angles(fits: list) -> list:
    """The angle (degrees) of each fitted flank of `angle_of_repose`."""
    return [float(np.degrees(np.arctan(abs(slope)))) for slope, *_ in fits]


def summary(trajectory: gr.Trajectory) -> dict:
    """``angle_of_repose`` (degrees, `angle_of_repose` of the last frame; 0 for a flat
    layer) and ``kinetic_energy`` (J) at the last frame (below `REST_ENERGY` at rest)."""
    angle, _ = angle_of_repose(np.asarray(trajectory.positions[-1]), np.asarray(trajectory.radii[-1]))
    return dict(angle_of_repose=angle, kinetic_energy=float(trajectory.kinetic_energy[-1]))


def pour(
    friction: float,
    duration: float = DEFAULTS["duration"],
    dt: float = DEFAULTS["dt"],
    n: int = 300,
    rotation: bool = True,
    rolling_friction: float = 0.0,
    floor_half_width: float = FLOOR_HALF_WIDTH,
    width: float = COLUMN_WIDTH,
    seed: int = 3,
    close_gaps: bool = True,
    sweep_aim: float | None = None,
) -> dict:
    """Run one pour until the heap rests (`REST_ENERGY` for `REST_TIME`) or ``duration``
    (s); returns the final state, the angle and flanks, the time reached, whether the
    heap rests, timings (wall and processor seconds), the spheres that touch an end
    wall, those still moving (faster than 1 cm/s) and the steps that kept a contact
    solver's best answer (``missed``: ``(t, residual, residual / tolerance)`` each), and
    the solver iterations of the run (``iterations``: the Coulomb sweeps, with the
    impacts' and the frictionless projections' iterations). ``close_gaps`` and
    ``sweep_aim`` are `Simulation` options (`granular.contact.gap_closure`, the sweeps'
    aim)."""
    world = build(
        friction,
        n=n,
        width=width,
        seed=seed,
        rotation=rotation,
        rolling_friction=rolling_friction,
        floor_half_width=floor_half_width,
    )
    simulation = gr.Simulation(world, dt, close_gaps=close_gaps, sweep_aim=sweep_aim)
    solve_seconds, steps, calm, failure, result, at_rest = 0.0, int(round(duration / dt)), 0, None, None, False
    iterations = 0
    start, processor = time.perf_counter(), time.process_time()
    for step in range(1, steps + 1):
        try:
            result = simulation.step()
        except gr.ConvergenceError as error:  # stalled contact solve: report it with the state reached
            failure = str(error)
            if result is None:
                raise
            break
        solve_seconds += result.solver.seconds.get("solve", 0.0)
        iterations += result.solver.iterations
        calm = calm + 1 if result.kinetic_energy < REST_ENERGY else 0
        if calm * dt >= REST_TIME:
            at_rest = True
            break
    wall, processor = time.perf_counter() - start, time.process_time() - processor
    angle, fits = angle_of_repose(result.positions, result.radii)
    at_wall = int(np.count_nonzero(floor_half_width - np.abs(result.positions[:, 0]) < result.radii + 1e-3))
    moving = int(np.count_nonzero(np.linalg.norm(result.velocities, axis=1) > 0.01))
    return dict(
        failure=failure,
        missed=list(simulation.missed_steps),
        iterations=iterations,
        friction=friction,
        rotation=rotation,
        rolling_friction=rolling_friction,
        seed=seed,
        n=n,
        width=width,
        floor_half_width=floor_half_width,
        positions=result.positions,
        radii=result.radii,
        angle=angle,
        fits=fits,
        flanks=flank_angles(fits),
        at_wall=at_wall,
        moving=moving,
        at_rest=at_rest,
        kinetic_energy=result.kinetic_energy,
        t=result.t,
        steps=step,
        seconds=wall,
        processor_seconds=processor,
        seconds_per_step=wall / step,
        solve_per_step=solve_seconds / step,
    )


def main(out_dir: Path = RENDERS, workers: int = 2, seeds: tuple = SEEDS) -> list:
    """The pours of `POURS`, each from every seed of ``seeds``, ``workers`` at a time
    (separate processes); prints each pour and each setting's mean angle, and plots the
    first seed's deposits."""
    print(
        f"sand pile: {PARAMETERS['n']} spheres, r in {RADIUS_RANGE} m, quasi-2D slot, floor "
        f"+-{FLOOR_HALF_WIDTH} m, dt = {DEFAULTS['dt']} s, until at rest or "
        f"{DEFAULTS['duration']} s; seeds {', '.join(map(str, seeds))}"
    )
    start = time.perf_counter()
    runs = pours(seeds, workers)
    for run in runs:
        flanks = " / ".join(f"{a:.1f}" for a in run["flanks"]) or "-"
        state = (
            f"at rest at t = {run['t']:.2f} s"
            if run["at_rest"]
            else f"{run['moving']} spheres still moving at t = {run['t']:.2f} s"
        )
        print(
            f"  {_label(run)}, seed {run['seed']}: angle {run['angle']:5.1f} deg (flanks {flanks}), "
            f"{state}, {run['at_wall']} spheres at the end walls, "
            f"{run['seconds']:.0f} s ({run['processor_seconds']:.0f} s of processor, "
            f"{run['seconds_per_step'] * 1e3:.1f} ms/step, {run['solve_per_step'] * 1e3:.1f} in the contact solve)"
        )
        if run["failure"]:
            print(f"    stopped: {run['failure']}")
    for setting in POURS:
        done = [
            run
            for run in runs
            if (run["friction"], run["rotation"], run["rolling_friction"], run["width"]) == setting
            and not run["failure"]
        ]  # a stopped pour is a state mid-pour, not a heap
        if done:
            angles = [run["angle"] for run in done]
            print(
                f"  {_label(done[0])}: mean angle {np.mean(angles):.1f} deg over {len(done)} completed pours "
                f"({min(angles):.1f}-{max(angles):.1f})"
            )
    print(f"  {time.perf_counter() - start:.0f} s in all ({workers} processes)")
    plot([run for run in runs if run["seed"] == seeds[0]], Path(out_dir) / "sand_pile.png")
    return runs


def pours(seeds, workers: int = 2, sweep_aim: float | None = None) -> list:
    """The runs (`pour`) of every setting of `POURS` from every seed of ``seeds``,
    setting after setting, ``workers`` at a time (separate processes); ``sweep_aim`` is
    the `Simulation` option."""
    from concurrent.futures import ProcessPoolExecutor

    settings = [(*setting, seed, sweep_aim) for setting in POURS for seed in seeds]
    if workers == 1:
        return list(map(_pour, settings))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_pour, settings))


def _pour(settings: tuple) -> dict:
    friction, rotation, rolling_friction, width, seed, sweep_aim = settings
    return pour(
        friction, rotation=rotation, rolling_friction=rolling_friction, width=width, seed=seed, sweep_aim=sweep_aim
    )


def _label(run: dict) -> str:
    turning = (
        "turning" + (f", mu_r = {run['rolling_friction']:.1f}" if run["rolling_friction"] else "")
        if run["rotation"]
        else "points"
    )
    return f"mu = {run['friction']:.1f} ({turning}, column {run['width']:.1f} m)"


def plot(runs: list, path: Path) -> None:
    """The deposits, one row per run on the same scale, with the fitted flanks (red)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Circle

    top = max(float(np.max(run["positions"][:, 2] + run["radii"])) for run in runs) + 0.01
    reach = max(float(np.max(np.abs(run["positions"][:, 0]) + run["radii"])) for run in runs) + 0.01
    width = 12.0
    figure, axes = plt.subplots(
        len(runs), 1, figsize=(width, len(runs) * (0.75 + width * top / (2.0 * reach))), sharex=True
    )
    for axis, run in zip(np.atleast_1d(axes), runs):
        circles = [Circle((p[0], p[2]), r) for p, r in zip(run["positions"], run["radii"])]
        axis.add_collection(PatchCollection(circles, facecolor="tan", edgecolor="0.3", linewidth=0.3))
        for slope, intercept, x0, x1 in run["fits"]:
            xs = np.array([x0, x1])
            axis.plot(xs, slope * xs + intercept, "r-", lw=1.5)
        flanks = " / ".join(f"{a:.1f}" for a in run["flanks"])
        notes = ([f"{run['at_wall']} at the end walls"] if run["at_wall"] else []) + (
            []
            if run["at_rest"]
            else [f"stopped at t = {run['t']:.2f} s (stalled solve)"]
            if run["failure"]
            else [f"{run['moving']} still moving at t = {run['t']:.2f} s"]
        )
        axis.set(aspect="equal", ylim=(0, top), ylabel="z (m)")
        axis.set_title(
            f"{_label(run)}, seed {run['seed']}: angle {run['angle']:.1f} deg"
            + (f" (flanks {flanks})" if flanks else "")
            + ("; " + ", ".join(notes) if notes else ""),
            fontsize=10,
        )
    np.atleast_1d(axes)[-1].set(xlabel="x (m)", xlim=(-reach, reach))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"  wrote {path}")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Pour the sand piles of POURS and plot their deposits.")
    parser.add_argument("--workers", type=int, default=2, help="pours run at once (processes)")
    main(workers=parser.parse_args().workers)
