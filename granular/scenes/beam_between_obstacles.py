"""The steel pipe between two obstacles of Dumont and Paoli (*Vibrations of a beam between
obstacles. Convergence of a fully discretized approximation*, 2006, section 4), reproduced.

A pipe of length L = 1.501 m (k^2 = EI / rho S = 282.84 m^4 s^-2, J = 19 Hermite
elements) is clamped to a support moving as phi(t) = 0.2 sin(10 t) m, at rest at
t = 0; its tip hits obstacles at +-g = +-0.1 m. We run the paper's cases over
[0, 2] s with `simulate_tip` (scheme (P_h beta), Lemma 4.1, by blocks of steps),
which keeps the tip of every step (the violations and figures need them):

- projection scheme, beta = 1/2, dt = 5e-5, 5e-6, 1e-6 s (the paper's Figs. 3a, 3b, 4a);
- projection scheme, beta = 1/4, dt = 1e-6, 5e-7 s (Figs. 4b, 5a);
- penalty (normal compliance) 1/eps = 1e8 and 5e9, beta = 1/4, dt = 2e-7 s (Figs. 9a, 10a),

print, for each, the largest violation max_t |u(L, t)| - g and the CPU seconds next
to the paper's figures, and write the tip history u(L, t) of each to
``outputs/beam_<case>.png`` and the first contact period of the beta = 1/2 runs
to ``outputs/beam_first_contact.png``.

The animation ``outputs/beam_between_obstacles.mp4`` and its still
``outputs/beam_between_obstacles.png`` (the first contact) come from a short run of
their own, not from the cases above: one period of the support (0.63 s) with the
Newmark scheme through `granular.Simulation` (beta = 1/2, dt = 5e-5 s, a frame every
2 ms, shown ten times slower than real time; `Simulation.run` takes the same block
fast path and recomputes the recorded steps). The beam is drawn relative to its
moving support (the drawing adapter has no time), so the tip's contacts are exact.

Units: the paper's scaled equations (divided by rho S), so 1/eps is the paper's
number. The paper's CPU times are Scilab 3.1.1 on a 1.1 GHz Mac G4 (2005).

    .venv/bin/python -m granular.scenes.beam_between_obstacles [--quick] [--render-only] [--out outputs]

``--quick`` runs only the cases of at most 2 million steps (no penalty runs);
``--render-only`` skips the cases and writes only the animation and its still.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from granular.schemes.newmark import TipRun, simulate_tip
from granular.systems.beam import Beam
from granular.render import animate, snapshot

DURATION = 2.0  # s
GAP = 0.1  # m
#: What ``granular run beam_between_obstacles`` integrates: the paper's Fig. 3a case
#: (projection scheme, beta = 1/2, dt = 5e-5 s) through `granular.Simulation` with the
#: Newmark scheme, a frame every 5 ms. (The default velocity scheme is explicit in the
#: stiffness: at this dt, beyond its limit 2 / w_max, `Simulation` refuses it.)
DEFAULTS = dict(duration=DURATION, dt=5e-5, record_every=100, scheme="newmark", beta=0.5)


@dataclass(frozen=True)
class Case:
    """One run of section 4 of Dumont and Paoli (2006) and what the paper reports for it."""

    name: str
    beta: float
    dt: float
    penalty: float | None = None  # 1/eps, None for the projection scheme
    paper_violation: float | None = None  # m
    paper_seconds: float | None = None  # s, Scilab on a 2005 Mac G4
    figure: str = ""

    @property
    def steps(self) -> int:
        return int(round(DURATION / self.dt))

    @property
    def scheme(self) -> str:
        return "projection" if self.penalty is None else f"penalty 1/eps={self.penalty:.0e}"


CASES = (
    Case("half_5e-5", 0.5, 5e-5, paper_violation=0.0, paper_seconds=15.88, figure="3a"),
    Case("half_5e-6", 0.5, 5e-6, paper_violation=0.0, paper_seconds=151.14, figure="3b"),
    Case("half_1e-6", 0.5, 1e-6, paper_violation=0.0, paper_seconds=753.9, figure="4a"),
    Case("quarter_1e-6", 0.25, 1e-6, paper_violation=0.0, paper_seconds=747.12, figure="4b"),
    Case("quarter_5e-7", 0.25, 5e-7, paper_violation=0.0, paper_seconds=1501.51, figure="5a"),
    Case("penalty_1e8", 0.25, 2e-7, penalty=1e8, paper_violation=1.968e-4, paper_seconds=6090.0, figure="9a"),
    Case("penalty_5e9", 0.25, 2e-7, penalty=5e9, paper_violation=4.47e-5, figure="10a"),
)


def build(penalty: float | None = None) -> Beam:
    """The pipe of Dumont and Paoli, 2006 (defaults of `Beam`), with normal compliance if ``penalty``."""
    beam = Beam(
        length=1.501, k2=282.84, elements=19, support_amplitude=0.2, support_frequency=10.0, lower=-GAP, upper=GAP
    )
    return beam if penalty is None else beam.penalised(penalty)


def run(case: Case) -> TipRun:
    return simulate_tip(build(case.penalty), case.dt, DURATION, beta=case.beta)


def table(rows) -> str:
    header = (
        f"{'scheme':<22} {'beta':>5} {'dt (s)':>8} {'steps':>9} {'violation (m)':>14} "
        f"{'CPU (s)':>8}   {'paper violation':>15} {'CPU (s)':>8}  fig."
    )
    lines = [header, "-" * len(header)]
    for case, result in rows:
        paper_v = "-" if case.paper_violation is None else f"{case.paper_violation:.4g}"
        paper_s = "-" if case.paper_seconds is None else f"{case.paper_seconds:.2f}"
        lines.append(
            f"{case.scheme:<22} {case.beta:>5.2f} {case.dt:>8.0e} {case.steps:>9d} "
            f"{result.violation:>14.4g} {result.seconds:>8.2f}   {paper_v:>15} {paper_s:>8}  {case.figure}"
        )
    return "\n".join(lines)


def envelope(t: np.ndarray, x: np.ndarray, bins: int = 20000):
    """Per-bin (time, min, max) of a long history, so plots keep every extreme
    (a penalty penetration lasts a few microseconds)."""
    if x.size <= 2 * bins:
        return t, x, x
    width = x.size // bins
    n = width * bins
    shaped = x[:n].reshape(bins, width)
    return t[:n:width], shaped.min(axis=1), shaped.max(axis=1)


def plot(case: Case, result: TipRun, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, low, high = envelope(result.t, result.tip)
    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.fill_between(t, low, high, color="C0", linewidth=0.6, edgecolor="C0")
    for bound in (-GAP, GAP):
        ax.axhline(bound, color="k", linewidth=0.8, linestyle="--")
    ax.set(
        xlabel="t (s)",
        ylabel="u(L, t) (m)",
        xlim=(0.0, DURATION),
        title=f"{case.scheme}, beta = {case.beta:g}, dt = {case.dt:g} s "
        f"(Fig. {case.figure} of Dumont and Paoli, 2006); violation {result.violation:.3g} m",
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_first_contact(rows, path: Path, end: float = 0.3) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3.5))
    for case, result in rows:
        if case.penalty is None and case.beta == 0.5:
            keep = result.t <= end
            ax.plot(result.t[keep], result.tip[keep], linewidth=0.8, label=f"dt = {case.dt:g} s")
    ax.axhline(GAP, color="k", linewidth=0.8, linestyle="--")
    ax.set(
        xlabel="t (s)",
        ylabel="u(L, t) (m)",
        xlim=(0.0, end),
        title="beta = 1/2: the histories agree through the first contact period (t <= 0.2 s)",
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(quick: bool = False, out: str = "outputs") -> list:
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    cases = [case for case in CASES if not quick or (case.penalty is None and case.steps <= 2_000_000)]
    rows = []
    simulate_tip(build(), 5e-5, 0.01)  # warm up imports and BLAS, so CPU times compare runs
    start = time.perf_counter()
    for case in cases:
        result = run(case)
        rows.append((case, result))
        plot(case, result, directory / f"beam_{case.name}.png")
    plot_first_contact(rows, directory / "beam_first_contact.png")
    print(
        f"beam between obstacles (Dumont and Paoli, 2006, section 4; 'paper' columns are theirs): "
        f"L = 1.501 m, J = 19, g = {GAP} m, T = {DURATION} s"
    )
    print(table(rows))
    print(
        f"violation = max over every step of max(|u(L, t)| - g, 0); CPU = wall time of simulate_tip, "
        f"set-up included; whole scene {time.perf_counter() - start:.1f} s"
    )
    print(f"PNGs in {directory}/beam_*.png")
    return rows


def render(
    out: str = "outputs",
    duration: float = 2.0 * np.pi / 10.0,
    dt: float = 5e-5,
    frame_interval: float = 2e-3,
    slow_motion: float = 10.0,
):
    """Animate ``duration`` s (one support period) of a dedicated Newmark run, a frame
    every ``frame_interval`` s shown ``slow_motion`` times slower than real time, and
    write a still of the first contact. Returns the trajectory."""
    import granular as gr

    directory = Path(out)
    record_every = int(round(frame_interval / dt))
    trajectory = gr.Simulation(build(), dt, scheme="newmark", beta=0.5).run(
        duration=duration, record_every=record_every
    )
    fps = 1.0 / (frame_interval * slow_motion)
    title = f"beta = 1/2, dt = {dt:g} s, {slow_motion:g}x slower"
    view = (0.0, -1.0, 0.0)
    animate(trajectory, directory / "beam_between_obstacles.mp4", fps=fps, size=(640, 240), view=view, title=title)
    first = int(np.argmax([c.impulse.sum() > 0.0 for c in trajectory.contacts]))
    snapshot(
        trajectory, first, directory / "beam_between_obstacles.png", size=(640, 240), view=view, title="first contact"
    )
    print(f"wrote {directory / 'beam_between_obstacles.mp4'} and {directory / 'beam_between_obstacles.png'}")
    return trajectory


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the projection runs of <= 2e6 steps")
    parser.add_argument("--render-only", action="store_true", help="only the animation and its still")
    parser.add_argument("--out", default="outputs", help="directory of the PNGs and the animation")
    arguments = parser.parse_args()
    if not arguments.render_only:
        main(quick=arguments.quick, out=arguments.out)
    render(out=arguments.out)
