"""Bouncing ball, one coordinate: the SphereWorld ball as a ConstrainedSystem.

q = [z], the height of the ball's centre (m); radius 0.1 m, mass 1 kg, dropped from
a gap of 1 m onto the floor z = 0 with e = 0.9. Exact apexes e^(2k) H.

Prints, for the three schemes and the SphereWorld ball (dt = 1e-3): the first
six apex heights, the apex ratios over e^2, and the agreement with SphereWorld;
writes ``outputs/bouncing_ball_1dof.png`` (heights against time, apex ratios),
``outputs/bouncing_ball_1dof.mp4`` (the velocity-scheme run in real time) and
``outputs/bouncing_ball_1dof_still.png`` (the first impact).

    python -m granular.scenes.bouncing_ball_1dof
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import granular as gr
from granular.systems.examples import bouncing_ball
from granular.render import animate, snapshot

HEIGHT, RESTITUTION, RADIUS, DT, DURATION = 1.0, 0.9, 0.1, 1e-3, 4.5
SCHEMES = ("velocity", "dzonou-monteiro-marques", "paoli-schatzman")
#: What ``granular run bouncing_ball_1dof`` integrates: the velocity scheme, whose energy
#: never rises (the Dzonou-Monteiro-Marques scheme's rises by up to 22 mJ above the start between impacts).
DEFAULTS = dict(duration=DURATION, dt=DT, record_every=10, scheme="velocity")


#: ``granular run bouncing_ball_1dof --set restitution=0.7``.
PARAMETERS = dict(height=HEIGHT, restitution=RESTITUTION)
PARAMETER_HELP = dict(
    height="initial gap between the ball and the floor (m)", restitution="coefficient of restitution e of the floor (1)"
)


def build(height: float = HEIGHT, restitution: float = RESTITUTION) -> gr.ConstrainedSystem:
    return bouncing_ball(height=height, restitution=restitution, radius=RADIUS)


def summary(trajectory) -> dict:
    """``apex_ratio``: the mean ratio of consecutive apex heights, exactly e^2 for the
    ideal ball; ``apex_ratio_over_e2``: that ratio over e^2 (e read from the run's
    stored parameters); ``bounces``: the number of ratios averaged. Apexes are the
    initial gap and the local maxima of the recorded gap above 1 mm (`sampled_apexes`:
    the frames of ``granular run`` are too sparse for the impulses `apexes` needs)."""
    restitution = {**PARAMETERS, **trajectory.meta.get("parameters", {})}["restitution"]
    found = sampled_apexes(trajectory)
    if found.size < 2:
        return dict(apex_ratio=float("nan"), apex_ratio_over_e2=float("nan"), bounces=0)
    ratio = float(np.mean(found[1:] / found[:-1]))
    return dict(apex_ratio=ratio, apex_ratio_over_e2=ratio / restitution**2, bounces=int(found.size - 1))


def sampled_apexes(trajectory, smallest: float = 1e-3) -> np.ndarray:
    """Initial gap, then the gap (m) at each local maximum of the recorded gaps above
    ``smallest`` (m). A frame every k steps misses an apex by at most g (k dt)^2 / 8."""
    gap = heights(trajectory) - RADIUS
    inner = np.flatnonzero((gap[1:-1] >= gap[:-2]) & (gap[1:-1] > gap[2:])) + 1
    return np.concatenate([gap[:1], gap[inner[gap[inner] > smallest]]])


def sphere_world() -> gr.SphereWorld:
    """The same ball as a sphere above the plane z = 0."""
    return gr.SphereWorld(
        [[0.0, 0.0, HEIGHT + RADIUS]],
        RADIUS,
        masses=1.0,
        walls=[gr.Plane([0, 0, 0], [0, 0, 1])],
        restitution=RESTITUTION,
    )


def heights(trajectory) -> np.ndarray:
    """Centre heights (m) of a ConstrainedSystem or SphereWorld trajectory."""
    return trajectory.positions.reshape(len(trajectory), -1)[:, -1]


def apexes(trajectory) -> np.ndarray:
    """Initial gap, then the highest gap of each complete flight between impacts (m)."""
    gap = heights(trajectory) - RADIUS
    touching = np.array([c.impulse.sum() > 0.0 for c in trajectory.contacts]).astype(int)
    starts = np.flatnonzero(np.diff(touching) == 1) + 1
    ends = np.flatnonzero(np.diff(touching) == -1) + 1
    found = [gap[0]]
    for end in ends:
        following = starts[starts > end]
        if not following.size:
            break
        found.append(gap[end : following[0]].max())
    return np.array(found)


def main(out_dir: str = "outputs") -> dict:
    runs = {name: gr.Simulation(build(), DT, scheme=name).run(duration=DURATION) for name in SCHEMES}
    runs["SphereWorld"] = gr.Simulation(sphere_world(), DT).run(duration=DURATION)
    exact = HEIGHT * RESTITUTION ** (2 * np.arange(6))
    print(f"bouncing ball, 1 dof: H = {HEIGHT} m, e = {RESTITUTION}, dt = {DT} s")
    print(f"  {'exact':>16}  apexes " + " ".join(f"{a:.4f}" for a in exact))
    reference = heights(runs["SphereWorld"])
    for name, trajectory in runs.items():
        found = apexes(trajectory)[:6]
        ratios = found[1:] / found[:-1] / RESTITUTION**2
        print(
            f"  {name:>23}  apexes "
            + " ".join(f"{a:.4f}" for a in found)
            + "   ratio/e^2 "
            + " ".join(f"{r:.4f}" for r in ratios)
        )
    difference = np.abs(heights(runs["velocity"]) - reference).max()
    print(f"  velocity scheme vs SphereWorld: largest height difference {difference:.3g} m (same scheme)")
    for name in SCHEMES[1:]:
        gap = np.abs(apexes(runs[name])[:6] - apexes(runs["SphereWorld"])[:6]).max()
        print(
            f"  {name} vs SphereWorld: largest apex difference {gap * 1e3:.2f} mm "
            f"(one step's travel h v1 = {DT * np.sqrt(2 * 9.81 * HEIGHT) * 1e3:.2f} mm)"
        )
    plot(runs, Path(out_dir) / "bouncing_ball_1dof.png")
    return runs


def plot(runs: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (heights_axis, ratio_axis) = plt.subplots(1, 2, figsize=(11, 4))
    for name, trajectory in runs.items():
        world = name == "SphereWorld"  # drawn dashed and hollow: it lies on the velocity scheme's curve
        heights_axis.plot(trajectory.t, heights(trajectory) - RADIUS, label=name, lw=1, ls="--" if world else "-")
        found = apexes(trajectory)[:6]
        ratio_axis.plot(
            np.arange(1, found.size),
            found[1:] / found[:-1] / RESTITUTION**2,
            "o--" if world else "o-",
            mfc="none" if world else None,
            ms=9 if world else 6,
            label=name,
        )
    heights_axis.set(xlabel="t (s)", ylabel="gap (m)", title="ball above the floor")
    ratio_axis.axhspan(0.98, 1.02, color="0.9", label="2% band")
    ratio_axis.set(xlabel="bounce", ylabel="apex ratio / e$^2$", title="restitution")
    heights_axis.legend()
    ratio_axis.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"  wrote {path}")


def first_impact(trajectory) -> int:
    """Index of the first frame with a positive impulse (0 if none)."""
    return int(np.argmax([c.impulse.sum() > 0.0 for c in trajectory.contacts]))


def render(trajectory, out_dir: str = "outputs", fps: float = 25.0) -> None:
    """Animation in real time (one frame every ``1 / fps`` s of a run recorded every
    step) and a still of the first impact, seen from the side."""
    out_dir, view = Path(out_dir), (0.0, -1.0, 0.3)
    every = max(1, int(round(1.0 / (fps * DT))))
    animate(
        trajectory,
        out_dir / "bouncing_ball_1dof.mp4",
        fps=fps,
        every=every,
        size=(384, 384),
        view=view,
        title=f"e = {RESTITUTION}",
    )
    snapshot(
        trajectory,
        first_impact(trajectory),
        out_dir / "bouncing_ball_1dof_still.png",
        size=(384, 384),
        view=view,
        title="first impact",
    )
    print(f"  wrote {out_dir / 'bouncing_ball_1dof.mp4'} and {out_dir / 'bouncing_ball_1dof_still.png'}")


if __name__ == "__main__":
    render(main()["velocity"])
