"""Granular gas cooling: 1,000 spheres with e = 0.9 in a periodic box follow Haff's law.

A freely cooling granular gas (no gravity, no walls) loses a fraction 1 - e^2 of
the normal relative kinetic energy at every impact. While it stays homogeneous,
kinetic theory gives Haff's law for the kinetic energy,

    E(t) = E0 / (1 + t / tau)^2,     1 / tau = (1 - e^2) omega0 / 6,

with omega0 = 4 n sigma^2 g0 sqrt(pi T0 / m) the Enskog collision frequency of one
sphere (n number density, sigma = 2 r, T0 = m <v_x^2>, g0 = (1 - phi/2)/(1 - phi)^3
the Carnahan-Starling contact value at packing fraction phi). So E decays as
t^-2 once t >> tau; tau is about 6 / (1 - e^2) = 32 collision times at e = 0.9.

Choices: packing fraction 0.05 (dilute: the box spans about a dozen mean free
paths, small enough to stay homogeneous; clusters and vortices grow only in larger
boxes), rms speed 1 m/s, r = 1 cm, dt = 5e-4 s, so a sphere moves 0.05 r per step
and meets another every ~90 steps at the start, less often as the gas cools
(speeds fall as 1 / (1 + t/tau)). Kinetic theory gives tau = 1.42 s; the run lasts
10 s, about 7 tau and 65 impacts per sphere. In the 300-sphere run of the test (packing
0.1, kinetic-theory tau = 0.620 s) the fitted tau is 0.554 s at dt = 1e-3 (11% short:
impacts are resolved up to a step early) and 0.631 s at dt = 5e-4 (2% off), with
exponents -1.92 and -2.00.

Prints the fitted exponent and tau of E(t) = A (1 + t/tau)^-alpha next to the
kinetic-theory tau, the late-time log-log slope, and writes a log-log plot of
E(t) with the fit to ``outputs/granular_gas_cooling.png``.

The animation ``outputs/granular_gas_cooling.mp4`` and its still
``outputs/granular_gas_cooling_still.png`` come from a short run of their own (the
same 1,000 spheres for 3 s, about 2 tau, a frame every 0.05 s), not from the 10 s
run: spheres coloured by speed on one scale for the whole clip, so the cooling shows
as the colours darkening.

    python -m granular.scenes.granular_gas_cooling [DURATION]     # the full run, then the renders
    python -m granular.scenes.granular_gas_cooling --render-only  # the renders only
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import granular as gr
from granular.progress import progress
from granular.render import animate, snapshot

RADIUS = 0.01  # m
DENSITY = 2500.0  # kg/m^3
RESTITUTION = 0.9
PACKING = 0.05
SPEED = 1.0  # m/s, rms speed (3D) at t = 0
DEFAULTS = dict(duration=10.0, dt=5e-4, record_every=40)
#: ``granular run granular_gas_cooling --set restitution=0.8``; a sweep over
#: restitution compares tau(e) with `haff_time` (README, "Parameter sweeps").
PARAMETERS = dict(n=1000, restitution=RESTITUTION, packing=PACKING, speed=SPEED, seed=0)
PARAMETER_HELP = dict(
    n="number of spheres",
    restitution="coefficient of restitution e of every impact (1)",
    packing="packing fraction of the periodic cube (1)",
    speed="initial rms speed (m/s)",
    seed="random seed of the positions and velocities",
)
RENDERS = Path("outputs")  # under the working directory


def build(
    n: int = 1000, packing: float = PACKING, speed: float = SPEED, restitution: float = RESTITUTION, seed: int = 0
) -> gr.SphereWorld:
    """``n`` spheres at random places in a periodic cube filled to ``packing``,
    Gaussian velocities with zero total momentum and rms speed ``speed`` (m/s)."""
    rng = np.random.default_rng(seed)
    side = (n * 4.0 / 3.0 * np.pi * RADIUS**3 / packing) ** (1.0 / 3.0)
    cell = gr.PeriodicBox([0.0, 0.0, 0.0], [side] * 3)
    positions = np.empty((n, 3))
    placed = 0
    while placed < n:  # random sequential addition, minimum-image distances
        trial = rng.uniform(0.0, side, 3)
        separation = cell.minimum_image(positions[:placed] - trial)
        if np.all(np.einsum("ij,ij->i", separation, separation) > (2.0 * RADIUS * 1.001) ** 2):
            positions[placed] = trial
            placed += 1
    velocities = rng.normal(size=(n, 3))
    velocities -= velocities.mean(axis=0)
    velocities *= speed / np.sqrt(np.mean(np.sum(velocities**2, axis=1)))
    return gr.SphereWorld(
        positions,
        RADIUS,
        velocities=velocities,
        density=DENSITY,
        gravity=(0.0, 0.0, 0.0),
        periodic=cell,
        restitution=restitution,
    )


def haff_time(packing: float = PACKING, speed: float = SPEED, restitution: float = RESTITUTION) -> float:
    """Kinetic-theory tau (s): 6 / ((1 - e^2) omega0), omega0 the Enskog collision frequency."""
    number_density = packing / (4.0 / 3.0 * np.pi * RADIUS**3)
    sigma = 2.0 * RADIUS
    contact = (1.0 - packing / 2.0) / (1.0 - packing) ** 3
    thermal = speed / np.sqrt(3.0)  # sqrt(T0 / m)
    omega = 4.0 * number_density * sigma**2 * contact * np.sqrt(np.pi) * thermal
    return 6.0 / ((1.0 - restitution**2) * omega)


def fit_haff(t: np.ndarray, energy: np.ndarray) -> dict:
    """Least-squares fit of ``log E = log A - alpha log(1 + t / tau)`` over the frames.

    Returns ``exponent`` (= -alpha, the late-time log-log slope of the law),
    ``tau`` (s), ``amplitude`` A (J), ``rms_log_residual``, and a check that needs
    no fit: ``late_slope``, the straight-line slope of log E against log t over the
    last factor of two in time, next to ``haff_late_slope`` = -2 t_m / (t_m + tau),
    the local slope of Haff's law at t_m = t_end / sqrt(2).
    """
    from scipy.optimize import curve_fit

    t, energy = np.asarray(t, dtype=float), np.asarray(energy, dtype=float)
    log_energy = np.log(energy)

    def model(time, log_amplitude, log_tau, alpha):
        return log_amplitude - alpha * np.log1p(time / np.exp(log_tau))

    guess = (log_energy[0], np.log(t[-1] / 10.0), 2.0)
    (log_amplitude, log_tau, alpha), _ = curve_fit(model, t, log_energy, p0=guess, maxfev=20000)
    late = t >= 0.5 * t[-1]
    late_slope = np.polyfit(np.log(t[late]), log_energy[late], 1)[0]
    middle = t[-1] / np.sqrt(2.0)
    residual = log_energy - model(t, log_amplitude, log_tau, alpha)
    return dict(
        exponent=float(-alpha),
        tau=float(np.exp(log_tau)),
        amplitude=float(np.exp(log_amplitude)),
        late_slope=float(late_slope),
        haff_late_slope=float(-2.0 * middle / (middle + np.exp(log_tau))),
        rms_log_residual=float(np.sqrt(np.mean(residual**2))),
    )


def summary(trajectory: gr.Trajectory) -> dict:
    """Haff's law fitted to the run's kinetic energy (`fit_haff`): ``tau`` (s),
    ``exponent`` (fitted, -2 for Haff), ``late_slope`` (log-log slope over the last
    factor of two in time), ``tau_theory`` (s, `haff_time` for the run's packing,
    speed and restitution, read from its stored parameters) and ``tau_ratio`` =
    tau / tau_theory. Needs at least four frames after t = 0."""
    parameters = {**PARAMETERS, **trajectory.meta.get("parameters", {})}
    fit = fit_haff(trajectory.t, trajectory.kinetic_energy)
    theory = haff_time(packing=parameters["packing"], speed=parameters["speed"], restitution=parameters["restitution"])
    return dict(
        tau=fit["tau"],
        exponent=fit["exponent"],
        late_slope=fit["late_slope"],
        tau_theory=theory,
        tau_ratio=fit["tau"] / theory,
    )


def plot(t: np.ndarray, energy: np.ndarray, fit: dict, path: Path, title: str = "") -> Path:
    """Log-log plot of E(t) (t > 0) with the fitted law and the t^-2 asymptote."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keep = t > 0
    fitted = fit["amplitude"] * (1.0 + t[keep] / fit["tau"]) ** fit["exponent"]
    figure, axes = plt.subplots(figsize=(6.0, 4.5))
    axes.loglog(t[keep], energy[keep], ".", markersize=3, label="simulated $E(t)$")
    axes.loglog(t[keep], fitted, "-", label=rf"$A(1+t/\tau)^{{{fit['exponent']:.2f}}}$, $\tau$ = {fit['tau']:.3g} s")
    asymptote = fit["amplitude"] * (t[keep] / fit["tau"]) ** -2.0
    late = t[keep] > fit["tau"]
    axes.loglog(t[keep][late], asymptote[late], "--", color="grey", label=r"$\propto t^{-2}$")
    axes.set_xlabel("t (s)")
    axes.set_ylabel("kinetic energy (J)")
    axes.set_title(title or "freely cooling granular gas (Haff's law)")
    axes.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def main(duration: float = DEFAULTS["duration"], dt: float = DEFAULTS["dt"], n: int = 1000) -> dict:
    world = build(n)
    sim = gr.Simulation(world, dt=dt)
    start = time.perf_counter()
    trajectory = sim.run(duration=duration, record_every=DEFAULTS["record_every"], progress=progress())  # stderr
    seconds = time.perf_counter() - start
    t, energy = trajectory.t, trajectory.kinetic_energy
    fit = fit_haff(t, energy)
    side = world.periodic.lengths[0]
    print(
        f"granular_gas_cooling: {world.n} spheres, packing {PACKING}, e = {RESTITUTION}, "
        f"periodic cube {side:.4g} m, {sim.steps_taken} steps of {dt:g} s in {seconds:.0f} s"
    )
    print(f"  kinetic-theory tau          {haff_time():.4g} s")
    print(f"  fitted tau                  {fit['tau']:.4g} s")
    print(f"  fitted exponent             {fit['exponent']:.3f}   (Haff: -2)")
    print(
        f"  log-log slope, last 2x in t {fit['late_slope']:.3f}   (Haff with the fitted tau: "
        f"{fit['haff_late_slope']:.3f})"
    )
    print(f"  rms residual of log E       {fit['rms_log_residual']:.3g}")
    print(
        f"  E(end) / E0                 {energy[-1] / energy[0]:.4g} at t = {t[-1]:.3g} s "
        f"= {t[-1] / fit['tau']:.3g} tau"
    )
    print(f"  E strictly decreasing       {bool(np.all(np.diff(energy) < 0.0))}")
    path = plot(
        t,
        energy,
        fit,
        RENDERS / "granular_gas_cooling.png",
        title=f"{world.n} spheres, e = {RESTITUTION}, packing {PACKING}",
    )
    print(f"  plot                        {path}")
    return fit


def render(
    duration: float = 3.0, frame_interval: float = 0.05, dt: float = DEFAULTS["dt"], out_dir: Path = RENDERS
) -> gr.Trajectory:
    """Animate a dedicated ``duration`` s run (a frame every ``frame_interval`` s,
    10 frames per second) and write a still of its first frame. Returns the trajectory."""
    trajectory = gr.Simulation(build(), dt=dt).run(duration=duration, record_every=int(round(frame_interval / dt)))
    cooled = trajectory.kinetic_energy[-1] / trajectory.kinetic_energy[0]
    title = f"e = {RESTITUTION}"
    animate(trajectory, out_dir / "granular_gas_cooling.mp4", fps=10, size=(400, 400), quality=4.5, title=title)
    snapshot(trajectory, 0, out_dir / "granular_gas_cooling_still.png", size=(480, 480), title=title)
    print(
        f"  wrote {out_dir / 'granular_gas_cooling.mp4'} and {out_dir / 'granular_gas_cooling_still.png'} "
        f"(E / E0 = {cooled:.3f} at t = {trajectory.t[-1]:.2g} s)"
    )
    return trajectory


if __name__ == "__main__":
    if "--render-only" not in sys.argv[1:]:
        main(*(float(a) for a in sys.argv[1:2]))
    render()
