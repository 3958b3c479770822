"""Painleve's rod: a slender rod slides on a rough floor into a dynamic jam and jumps off it.

The rod is the example of a study of Moreau's contact dynamics with Coulomb friction and its
discrete contact law (Springer, 2017, doi:10.1007/978-3-319-55795-3_40), called
"the 2017 study" below.

Glocker's parameters: m = 1 kg, half-length s = 1 m, J = m s^2/3, g = 10 m/s^2,
mu = 5/3, e = 0; phi0 = 31 degrees with the lower end A on the floor, dx/dt = 30 m/s,
A leading (`granular.systems.frictional.painleve_rod`). Friction on A turns the
rod up; sliding forward is consistent while ``p(phi) = 1 + 3 cos^2 phi - 3 mu sin
phi cos phi > 0``, i.e. below 45 degrees (``tan phi = 1``). The rod reaches that
angle at about t = 0.815 s with the normal force growing without bound (the
dynamic jam of Genot and Brogliato). The continuation is not unique: A may leave
the floor with the velocity it had (u^-), or take a tangential impact, a jump of
its velocity without collision towards u~ = Proj(0, (u^- + M^-1 R) cap T), where A
stops. Section 3 of the 2017 study shows that the scheme's limits as h -> 0 are u^-, u~,
or (here, where gamma changes sign at 45 degrees) any point of the segment
between them. Which one a run gives depends on where its last sliding step falls
relative to 45 degrees, hence on dt, and does not settle as dt shrinks. Measured
(`python -m granular.scenes.painleve_rod`, sliding of A ends at t = 0.814-0.815 s):

- dt = 5e-3 and 2.5e-3: A leaves the floor with u^- (no jump; the last sliding
  step slows A by 1.8x the step before, the growth of the unbounded force), flies,
  and lands on B at t = 1.495 s and 1.4925 s;
- dt = 2e-3: a tangential impact at t = 0.816 s, A's sliding speed 9.60 -> 0 m/s;
- dt = 1e-3: a partial tangential impact at t = 0.815 s, 9.62 -> 7.79 m/s (a point
  inside the segment [u^-, u~]), then flight;
- dt = 5e-4: A hovers three steps at a gap of 1.3 micron without reaction (its
  normal velocity ~0: no collision), then a tangential impact at t = 0.817 s,
  9.37 -> 0 m/s.

So the phases and events of the two coarse step sizes agree (the test checks it),
and finer step sizes pick other, equally valid continuations. A tangential
impact is classified by the jump of the end's tangential velocity in one step
while its normal velocity does not approach, against a threshold of
`JUMP_RATIO` times the step's regular velocity change (`events`).

Prints, for dt = 5e-3 and smaller: the contact phases (free, sliding, sticking,
per end) with their start times, the tangential impacts (a jump of the velocity
of an end that stays on the floor) and collisions; writes
``outputs/painleve_rod.png`` (x, y, phi and their rates against time, phases
shaded, tangential impacts marked), ``outputs/painleve_rod.mp4`` (the dt = 5e-3
run, four times slower than real time, seen from a camera that moves along x with
the rod's centre: the rod slides 27 m) and ``outputs/painleve_rod_still.png`` (the
jam: the last step of the first contact phase).

    python -m granular.scenes.painleve_rod
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import granular as gr
from granular.systems.frictional import painleve_rod
from granular.render import animate, snapshot

HALF_LENGTH = 1.0
DEFAULTS = dict(duration=1.5, dt=5e-3, record_every=1)
STEP_SIZES = (5e-3, 2.5e-3, 2e-3, 1e-3, 5e-4)
#: An end slides when its tangential speed after the step exceeds this fraction of
#: the largest velocity component (Lemke's answer sticks to round-off, ~1e-15).
STICK_TOLERANCE = 1e-8
#: A step changes an end's velocity by a jump (an impact) when the change exceeds
#: this many times the step's regular change: the change of that end's velocity in
#: the step before, and at least the force's ``h |J M^-1 f|`` (``h g`` here).
#: Bounded forces change the velocity by O(h) from one step to the next; near the
#: jam the normal force grows without bound and the change grows by at most 1.8x a
#: step (measured: dt = 5e-3; 1.3x-1.5x at dt <= 2.5e-3), while the jumps measured
#: are 5.9x (the partial jump at dt = 1e-3) to 1900x (dt = 5e-4) the step before.
JUMP_RATIO = 3.0
GRAVITY = 10.0
ENDS = ("A", "B")
RENDERS = Path("outputs")  # under the working directory


def build() -> gr.ConstrainedSystem:
    return painleve_rod(half_length=HALF_LENGTH)


def run(dt: float = DEFAULTS["dt"], duration: float = DEFAULTS["duration"]) -> gr.Trajectory:
    """Every step recorded (the phase classification needs them)."""
    return gr.Simulation(build(), dt).run(duration=duration, record_every=1)


def painleve_margin(phi, friction: float = 5.0 / 3.0):
    """``p(phi) = 1 + 3 cos^2 phi - 3 mu sin phi cos phi`` (J = m s^2/3): m times the
    normal velocity gained by A per unit normal impulse while A slides forward.
    Sliding is inconsistent where it is negative (45 to 76 degrees at mu = 5/3)."""
    return 1.0 + 3.0 * np.cos(phi) ** 2 - 3.0 * friction * np.sin(phi) * np.cos(phi)


def end_jacobian(q: np.ndarray, half_length: float = HALF_LENGTH) -> np.ndarray:
    """(2, 2, 3): row ``[e, a]`` maps ``u`` to the velocity of end ``e`` (A, B) along
    ``a`` (tangential x, normal y) at ``q``."""
    c, s = np.cos(q[2]), np.sin(q[2])
    return np.array(
        [
            [[1.0, 0.0, -half_length * s], [0.0, 1.0, -half_length * c]],
            [[1.0, 0.0, half_length * s], [0.0, 1.0, half_length * c]],
        ]
    )


def end_velocities(q: np.ndarray, u: np.ndarray, half_length: float = HALF_LENGTH) -> np.ndarray:
    """Velocities ``(tangential, normal)`` of ends A and B (2, 2), m/s, at ``q``."""
    return end_jacobian(q, half_length) @ u


def step_labels(trajectory) -> list[str]:
    """One label per step: "free", or per end in contact "sliding A", "sticking B", ..."""
    labels = []
    for k in range(1, len(trajectory)):
        impulse = trajectory.contacts[k].impulse
        ends = end_velocities(trajectory.positions[k - 1], trajectory.velocities[k])
        scale = max(1.0, float(np.abs(trajectory.velocities[k]).max()))
        parts = [
            ("sliding " if abs(ends[e, 0]) > STICK_TOLERANCE * scale else "sticking ") + ENDS[e]
            for e in range(2)
            if impulse.size and impulse[e] > 0.0
        ]
        labels.append(", ".join(parts) if parts else "free")
    return labels


def contact_phases(trajectory) -> list[tuple[str, float, float]]:
    """Runs of equal step labels: ``(label, t_start, t_end)`` (s)."""
    phases = []
    for k, label in enumerate(step_labels(trajectory)):
        t0, t1 = float(trajectory.t[k]), float(trajectory.t[k + 1])
        if phases and phases[-1][0] == label:
            phases[-1] = (label, phases[-1][1], t1)
        else:
            phases.append((label, t0, t1))
    return phases


def phase_sequence(trajectory) -> list[str]:
    """The labels of `contact_phases` in order (what two step sizes should share)."""
    return [label for label, _, _ in contact_phases(trajectory)]


def end_changes(trajectory) -> np.ndarray:
    """(F - 1, 2, 2): the change of each end's velocity ``(tangential, normal)`` over
    each step, ``J(q_{k-1}) (u_k - u_{k-1})`` (m/s)."""
    return np.array(
        [
            end_jacobian(trajectory.positions[k - 1]) @ (trajectory.velocities[k] - trajectory.velocities[k - 1])
            for k in range(1, len(trajectory))
        ]
    )


def regular_changes(trajectory) -> np.ndarray:
    """(F - 1, 2): each step's regular velocity change per end (m/s): the size of the
    change in the step before, at least ``h g`` (gravity moves each end's normal
    velocity by ``g``; the first step has only that)."""
    sizes = np.linalg.norm(end_changes(trajectory), axis=2)
    before = np.vstack([np.zeros((1, 2)), sizes[:-1]])
    return np.maximum(before, (np.diff(trajectory.t) * GRAVITY)[:, None])


def events(trajectory) -> list[tuple[float, str, str, float, float]]:
    """``(t, kind, end, v_T before, v_T after)`` (s, -, -, m/s, m/s) for every step in
    which an end carries an impulse and its velocity jumps (`JUMP_RATIO` times the
    regular change):

    - "collision": the end arrives from a flight, its normal velocity before the
      step approaching faster than the threshold;
    - otherwise the end stays on the floor (the 2017 study: a jump with ``<u^-, n> = 0``,
      without collision) and a jump of its tangential velocity is a "tangential
      impact" when the end then sticks, a "partial tangential impact" when it goes
      on sliding slower (a point of the segment [u^-, u~] of section 3 of the 2017 study).
    """
    found, changes, regular = [], end_changes(trajectory), regular_changes(trajectory)
    for k in range(1, len(trajectory)):
        impulse, t = trajectory.contacts[k].impulse, float(trajectory.t[k])
        before = end_velocities(trajectory.positions[k - 1], trajectory.velocities[k - 1])
        after = before + changes[k - 1]
        scale = max(1.0, float(np.abs(trajectory.velocities[k]).max()))
        for e in range(2):
            if not (impulse.size and impulse[e] > 0.0):
                continue
            threshold = JUMP_RATIO * regular[k - 1, e]
            if before[e, 1] < -threshold:
                kind = "collision"
            elif abs(changes[k - 1, e, 0]) > threshold:
                sticks = abs(after[e, 0]) <= STICK_TOLERANCE * scale
                kind = "tangential impact" if sticks else "partial tangential impact"
            else:
                continue
            found.append((t, kind, ENDS[e], float(before[e, 0]), float(after[e, 0])))
    return found


def tangential_impacts(trajectory) -> np.ndarray:
    """Times (s) of the tangential impacts, full or partial, of `events`."""
    return np.array([t for t, kind, *_ in events(trajectory) if "tangential" in kind])


def jam(trajectory) -> tuple[float, float, str]:
    """What the run does at the jam: ``(t, phi, outcome)``, the end of the first
    phase (A sliding; s), the angle there (degrees), and the first event of A within
    ten steps after it, or "leaves the floor with the velocity it had" (no jump)."""
    _, _, t_end = contact_phases(trajectory)[0]
    k = int(np.argmin(np.abs(trajectory.t - t_end)))
    window = 10.0 * float(trajectory.t[1] - trajectory.t[0])
    for t, kind, end, v_before, v_after in events(trajectory):
        if end == "A" and t_end - window < t <= t_end + window:
            return (
                t_end,
                float(np.degrees(trajectory.positions[k, 2])),
                (f"{kind} of A at t = {t:.4f} s: sliding speed {v_before:.3f} -> {v_after:.3f} m/s"),
            )
    return t_end, float(np.degrees(trajectory.positions[k, 2])), "A leaves the floor with the velocity it had (no jump)"


def report(trajectory, dt: float) -> None:
    print(f"  dt = {dt:g} s")
    for label, t0, t1 in contact_phases(trajectory):
        print(f"    {t0:7.4f} - {t1:7.4f} s  {label}")
    for t, kind, end, v_before, v_after in events(trajectory):
        print(f"    {kind} of end {end} at t = {t:.4f} s (tangential velocity {v_before:+.3f} -> {v_after:+.3f} m/s)")
    t_jam, phi_jam, outcome = jam(trajectory)
    print(f"    jam: A stops sliding at t = {t_jam:.4f} s, phi = {phi_jam:.2f} deg; {outcome}")
    energy = trajectory.kinetic_energy + trajectory.potential_energy
    print(
        f"    energy {energy[0]:.3f} J -> {energy[-1]:.3f} J, largest rise per step "
        f"{max(float(np.diff(energy).max()), 0.0):.2e} J"
    )


def main(out_dir: Path = RENDERS) -> dict:
    critical = np.degrees(np.arctan(1.0))
    print(
        f"Painleve's rod: mu = 5/3, phi0 = 31 deg, dx/dt = 30 m/s; sliding forward is inconsistent "
        f"above {critical:.0f} deg (p(31 deg) = {painleve_margin(np.radians(31.0)):.3f})"
    )
    runs = {dt: run(dt) for dt in STEP_SIZES}
    for dt, trajectory in runs.items():
        report(trajectory, dt)
    plot(runs, Path(out_dir) / "painleve_rod.png")
    return runs


def plot(runs: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"free": "white", "sliding": "tab:orange", "sticking": "tab:green"}
    figure, axes = plt.subplots(2, 3, figsize=(14, 7), sharex=True)
    names = ("x (m)", "y (m)", "phi (deg)", "dx/dt (m/s)", "dy/dt (m/s)", "dphi/dt (deg/s)")
    default = DEFAULTS["dt"]
    for dt, trajectory in runs.items():
        values = np.hstack([trajectory.positions, trajectory.velocities])
        values[:, [2, 5]] = np.degrees(values[:, [2, 5]])
        for k, axis in enumerate(axes.ravel()):
            axis.plot(trajectory.t, values[:, k], lw=1.6 if dt == default else 0.9, label=f"dt = {dt:g} s")
        for t in tangential_impacts(trajectory):
            for axis in axes.ravel():
                axis.axvline(t, color="tab:red", lw=0.8, ls=":")
    for label, t0, t1 in contact_phases(runs[default]):
        kind = label.split(" ")[0]
        for axis in axes.ravel():
            axis.axvspan(t0, t1, color=colours.get(kind, "tab:blue"), alpha=0.12, lw=0)
    for axis, name in zip(axes.ravel(), names):
        axis.set(ylabel=name)
    for axis in axes[1]:
        axis.set(xlabel="t (s)")
    axes[0, 0].legend(fontsize=8)
    figure.suptitle(
        "Painleve's rod (mu = 5/3): shaded phases of dt = 5e-3 (orange sliding, green sticking), "
        "dotted red: tangential impacts of any run",
        fontsize=10,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"  wrote {path}")


def co_moving(trajectory) -> gr.Trajectory:
    """The trajectory with the centre's x set to 0 in every frame: a view that moves
    with the rod (the floor is drawn under the rod anyway)."""
    from dataclasses import replace

    positions = np.array(trajectory.positions, float)
    positions[:, 0] = 0.0
    return replace(trajectory, positions=positions)


def render(trajectory, out_dir: Path = RENDERS, slow_motion: float = 4.0) -> None:
    """Animation at 25 frames per second, ``slow_motion`` times slower than real time,
    and a still at the jam: the last frame of the first contact phase, where end A
    leaves the floor or takes a tangential impact, depending on dt."""
    out_dir, fps = Path(out_dir), 25.0
    dt = float(trajectory.t[1] - trajectory.t[0])
    every = max(1, int(round(1.0 / (fps * slow_motion * dt))))
    view, moving = (0.0, -1.0, 0.08), co_moving(trajectory)
    title = f"mu = 5/3, camera moving with the rod, {slow_motion:g}x slower"
    animate(moving, out_dir / "painleve_rod.mp4", fps=fps, every=every, size=(512, 320), view=view, title=title)
    touching = np.array([c.impulse.max(initial=0.0) > 0.0 for c in trajectory.contacts])
    touching[0] = True  # frame 0 has no contacts recorded
    jam = int(np.argmin(touching)) - 1  # the frame before the first free one
    snapshot(
        moving,
        jam,
        out_dir / "painleve_rod_still.png",
        size=(512, 320),
        view=view,
        title="the jam: end of the first contact phase",
    )
    print(f"  wrote {out_dir / 'painleve_rod.mp4'} and {out_dir / 'painleve_rod_still.png'}")


if __name__ == "__main__":
    render(main()[DEFAULTS["dt"]])
