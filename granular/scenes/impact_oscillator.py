"""Impact oscillator: a harmonically forced mass-spring hitting a rigid stop.

    x'' + c x' + x = cos(w t),   x <= 0 (the stop at the spring's rest position),
    restitution e = 0.8, damping c = 0.2; time in units of 1 / natural frequency.

For each forcing frequency w the scene drops the transient and samples x once
per forcing period (the stroboscopic Poincare section): one point for a
period-1 orbit, n for period n, a cloud for chaos. Prints the detected period
against w, checks the section of the period-1 orbit at w = 1.8 against its exact
value (linear motion between impacts; first order in dt, about 8% off at the
sweep's 100 steps per period, so the diagram is qualitative) and writes

    outputs/impact_oscillator_bifurcation.png   section against w
    outputs/impact_oscillator_poincare.png      (x, v) section at the w with the richest section
    outputs/impact_oscillator.mp4               eight forcing periods at w = 1.8 (a short run of its own)
    outputs/impact_oscillator.png               a still of it at an impact

    python -m granular.scenes.impact_oscillator            # 80 frequencies, about 80 s on 2 cores
    python -m granular.scenes.impact_oscillator --quick    # 16 frequencies, a few seconds
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

import granular as gr
from granular.systems.examples import impact_oscillator
from granular.render import animate, snapshot

DAMPING, RESTITUTION, STOP, AMPLITUDE = 0.2, 0.8, 0.0, 1.0
STEPS_PER_PERIOD = 100  # dt = (2 pi / w) / 100: strobe times fall on steps
SCHEME = "dzonou-monteiro-marques"  # the cheapest step; every scheme gives the same picture


#: What `granular run impact_oscillator` integrates: one forcing frequency, 40 periods.
DEFAULT_FREQUENCY = 1.8
DEFAULTS = dict(
    duration=40 * 2.0 * np.pi / DEFAULT_FREQUENCY,
    dt=2.0 * np.pi / DEFAULT_FREQUENCY / STEPS_PER_PERIOD,
    record_every=5,
    scheme=SCHEME,
)


def build(frequency: float = DEFAULT_FREQUENCY) -> gr.ConstrainedSystem:
    """The oscillator forced at ``frequency`` (units of the natural frequency)."""
    return impact_oscillator(
        frequency=frequency, amplitude=AMPLITUDE, stop=STOP, restitution=RESTITUTION, damping=DAMPING, x0=-0.5
    )


def section(
    frequency: float, transient: int, periods: int, steps_per_period: int = STEPS_PER_PERIOD, scheme: str = SCHEME
) -> np.ndarray:
    """``(periods, 2)`` stroboscopic samples ``(x, v)`` at ``t = k 2 pi / w`` after
    ``transient`` forcing periods."""
    dt = 2.0 * np.pi / frequency / steps_per_period
    sim = gr.Simulation(build(frequency), dt, scheme=scheme)
    samples = []
    for step in range(1, (transient + periods) * steps_per_period + 1):
        result = sim.step()
        if step % steps_per_period == 0 and step > transient * steps_per_period:
            samples.append((result.positions[0], result.velocities[0]))
    return np.array(samples)


def period_one_orbit(frequency: float) -> float:
    """Exact x on the section of the period-1 orbit with one impact per period.

    Between impacts the motion is linear: ``y = y_p + exp(J s)(y_0 - y_p)`` with the
    forced response ``y_p`` and ``J = [[0, 1], [-1, -c]]``. The orbit leaves the stop
    at phase ``tau`` with speed ``-e v`` and is back one period later with ``+v``:
    two equations for ``(tau, v)``, solved from a scan of starting phases; the
    orbit must stay in ``x <= 0``. Raises ValueError when there is none.
    """
    from scipy.linalg import expm
    from scipy.optimize import fsolve

    w, c, e, period = frequency, DAMPING, RESTITUTION, 2.0 * np.pi / frequency
    D = (1.0 - w * w) ** 2 + (c * w) ** 2
    a, b = (1.0 - w * w) / D * AMPLITUDE, c * w / D * AMPLITUDE

    def forced(t):
        return np.array([a * np.cos(w * t) + b * np.sin(w * t), w * (b * np.cos(w * t) - a * np.sin(w * t))])

    def state(tau, v, s):  # s after leaving the stop at phase tau
        return forced(tau + s) + expm(np.array([[0.0, 1.0], [-1.0, -c]]) * s) @ (np.array([0.0, -e * v]) - forced(tau))

    for guess in np.linspace(0.0, period, 24, endpoint=False):
        (tau, v), _, found, _ = fsolve(
            lambda z: state(z[0], z[1], period) - [0.0, z[1]], [guess, 1.0], full_output=True
        )
        if found == 1 and v > 0.0 and max(state(tau, v, s)[0] for s in np.linspace(0, period, 200)) <= 1e-9:
            return float(state(tau, v, (-tau) % period)[0])
    raise ValueError(f"no period-1 impacting orbit found at w = {frequency}")


def period_of(samples: np.ndarray, tolerance: float = 1e-3) -> int:
    """Smallest n with x_{k+n} = x_k over the samples (0: none up to 8, chaos or quasi-periodic)."""
    x = samples[:, 0]
    for n in range(1, 9):
        if np.abs(x[n:] - x[:-n]).max() <= tolerance * max(1.0, np.abs(x).max()):
            return n
    return 0


def _section_job(arguments):
    return section(*arguments)


def sweep(frequencies, transient: int, periods: int) -> list:
    jobs = [(w, transient, periods) for w in frequencies]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return list(pool.map(_section_job, jobs))


def main(quick: bool = False, out_dir: str = "outputs") -> dict:
    count, transient, periods = (16, 40, 16) if quick else (80, 50, 30)
    frequencies = np.linspace(1.2, 4.2, count)
    sections = sweep(frequencies, transient, periods)
    print(
        f"impact oscillator: c = {DAMPING}, e = {RESTITUTION}, stop at x = {STOP}, "
        f"{STEPS_PER_PERIOD} steps per period, scheme {SCHEME}"
    )
    print(f"  {'w':>6} {'period':>7} {'x on the section':>20}")
    periods_found = [period_of(s) for s in sections]
    for w, n, s in zip(frequencies, periods_found, sections):
        shown = np.unique(np.round(s[:, 0], 3))
        label = str(n) if n else "chaos"
        print(f"  {w:6.3f} {label:>7}  " + " ".join(f"{x:.3f}" for x in shown[:4]) + (" ..." if shown.size > 4 else ""))
    w_check = 1.8
    exact = period_one_orbit(w_check)
    for steps in (STEPS_PER_PERIOD, 4 * STEPS_PER_PERIOD, 16 * STEPS_PER_PERIOD):
        x = section(w_check, 30, 1, steps)[0, 0]
        print(
            f"  period-1 orbit at w = {w_check}: x = {x:.4f} with {steps} steps per period, exact {exact:.4f} "
            f"(error {abs(x - exact):.4f})"
        )
    # The richest section (most distinct points) gets a long (x, v) portrait.
    distinct = [np.unique(np.round(s[:, 0], 3)).size for s in sections]
    w_chaos = frequencies[int(np.argmax(distinct))]
    cloud = section(w_chaos, transient, 120 if quick else 600)
    print(
        f"  Poincare section at w = {w_chaos:.3f}: {len(cloud)} points, x in "
        f"[{cloud[:, 0].min():.3f}, {cloud[:, 0].max():.3f}]"
    )
    plot(frequencies, sections, w_chaos, cloud, Path(out_dir))
    return {"frequencies": frequencies, "sections": sections, "periods": periods_found}


def plot(frequencies, sections, w_chaos, cloud, out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    figure, axis = plt.subplots(figsize=(8, 4.5))
    for w, samples in zip(frequencies, sections):
        axis.plot(np.full(len(samples), w), samples[:, 0], ".k", ms=1.5)
    axis.set(
        xlabel="forcing frequency w",
        ylabel="x at t = 2 pi k / w",
        title="impact oscillator: stroboscopic section against w",
    )
    figure.tight_layout()
    figure.savefig(out_dir / "impact_oscillator_bifurcation.png", dpi=130)
    figure, axis = plt.subplots(figsize=(5.5, 4.5))
    axis.plot(cloud[:, 0], cloud[:, 1], ".k", ms=2)
    axis.axvline(STOP, color="C3", lw=1, label="stop")
    axis.set(xlabel="x", ylabel="v", title=f"Poincare section, w = {w_chaos:.3f}")
    axis.legend()
    figure.tight_layout()
    figure.savefig(out_dir / "impact_oscillator_poincare.png", dpi=130)
    print(f"  wrote {out_dir / 'impact_oscillator_bifurcation.png'} and {out_dir / 'impact_oscillator_poincare.png'}")


def render(
    out_dir: str = "outputs", frequency: float = DEFAULT_FREQUENCY, periods: int = 8, frames_per_period: int = 20
) -> gr.Trajectory:
    """Animate ``periods`` forcing periods at ``frequency`` from rest at x0 (a run of
    its own, ``frames_per_period`` frames per period, 25 frames per second) and a
    still of the frame nearest the stop (an impact lasts one step, rarely a recorded
    one). Returns the trajectory."""
    out_dir = Path(out_dir)
    dt = 2.0 * np.pi / frequency / STEPS_PER_PERIOD
    trajectory = gr.Simulation(build(frequency), dt, scheme=SCHEME).run(
        steps=periods * STEPS_PER_PERIOD, record_every=STEPS_PER_PERIOD // frames_per_period
    )
    title, view = f"w = {frequency:g}, dimensionless time", (0.0, -1.0, 0.15)
    animate(trajectory, out_dir / "impact_oscillator.mp4", fps=25, size=(512, 256), view=view, title=title)
    nearest = int(np.argmax(trajectory.positions[:, 0]))
    snapshot(trajectory, nearest, out_dir / "impact_oscillator.png", size=(512, 256), view=view, title=title)
    print(f"  wrote {out_dir / 'impact_oscillator.mp4'} and {out_dir / 'impact_oscillator.png'}")
    return trajectory


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 frequencies and short runs")
    main(quick=parser.parse_args().quick)
    render()
