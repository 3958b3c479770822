"""Painleve's rod: a slender rod slides on a rough floor into a dynamic jam and jumps off it (seed 002).

Glocker's parameters: m = 1 kg, half-length s = 1 m, J = m s^2/3, g = 10 m/s^2,
mu = 5/3, e = 0; phi0 = 31 degrees with the lower end A on the floor, dx/dt = 30 m/s,
A leading (`granular.systems.frictional.painleve_rod`). Friction on A turns the
rod up; sliding forward is consistent while ``p(phi) = 1 + 3 cos^2 phi - 3 mu sin
phi cos phi > 0``, i.e. below 45 degrees (``tan phi = 1``). The rod reaches that
angle at about t = 0.815 s with the normal force growing without bound (the
dynamic jam of Genot and Brogliato). There the discrete law S of seed 002 either
lets the end leave the floor with the velocity it had (u^-) or applies the jump
u~ = Proj(0, (u^- + M^-1 R) cap T): a tangential impact, after which A sticks for
that step. Section 3 of the seed shows both are limits of the scheme as h -> 0;
which one a run picks depends on where its last sliding step falls relative to
45 degrees, hence on dt (the report printed below shows it).

Prints, for dt = 5e-3 and smaller: the contact phases (free, sliding, sticking,
per end) with their start times, the tangential impacts (a jump of the velocity
of an end that stays on the floor) and collisions; writes
``renders/painleve_rod.png`` (x, y, phi and their rates against time, phases
shaded, tangential impacts marked).

    python scenes/painleve_rod.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import granular as gr
from granular.systems.frictional import painleve_rod

HALF_LENGTH = 1.0
DEFAULTS = dict(duration=1.5, dt=5e-3, record_every=1)
STEP_SIZES = (5e-3, 2.5e-3, 2e-3, 1e-3, 5e-4)
#: An end slides when its tangential speed after the step exceeds this fraction of
#: the largest velocity component (Lemke's answer sticks to round-off, ~1e-15).
STICK_TOLERANCE = 1e-8
#: A tangential impact changes the velocity of an end that stays on the floor by
#: at least this fraction of that velocity in one step; bounded forces change it
#: by O(h) (measured: at most 19% in the last sliding step before the jam at
#: dt = 1e-3, 100% in a tangential impact).
JUMP_FRACTION = 0.5
ENDS = ("A", "B")
RENDERS = Path(__file__).resolve().parent.parent / "renders"


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


def end_velocities(q: np.ndarray, u: np.ndarray, half_length: float = HALF_LENGTH) -> np.ndarray:
    """Velocities ``(tangential, normal)`` of ends A and B (2, 2), m/s, at ``q``."""
    c, s = np.cos(q[2]), np.sin(q[2])
    return np.array([[u[0] - half_length * s * u[2], u[1] - half_length * c * u[2]],
                     [u[0] + half_length * s * u[2], u[1] + half_length * c * u[2]]])


def step_labels(trajectory) -> list[str]:
    """One label per step: "free", or per end in contact "sliding A", "sticking B", ..."""
    labels = []
    for k in range(1, len(trajectory)):
        impulse = trajectory.contacts[k].impulse
        ends = end_velocities(trajectory.positions[k - 1], trajectory.velocities[k])
        scale = max(1.0, float(np.abs(trajectory.velocities[k]).max()))
        parts = [("sliding " if abs(ends[e, 0]) > STICK_TOLERANCE * scale else "sticking ") + ENDS[e]
                 for e in range(2) if impulse.size and impulse[e] > 0.0]
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


def events(trajectory) -> list[tuple[float, str, str]]:
    """``(t, kind, end)``: "tangential impact" where an end in contact at the previous
    step too has its velocity jump by ``JUMP_FRACTION`` of itself (no collision:
    it was on the floor); "collision" where an end lands from a flight."""
    found = []
    for k in range(2, len(trajectory)):
        before, now = trajectory.contacts[k - 1].impulse, trajectory.contacts[k].impulse
        q = trajectory.positions[k - 1]
        velocity_before = end_velocities(q, trajectory.velocities[k - 1])
        velocity_after = end_velocities(q, trajectory.velocities[k])
        for e in range(2):
            if not (now.size and now[e] > 0.0):
                continue
            if before.size and before[e] > 0.0:
                jump = np.linalg.norm(velocity_after[e] - velocity_before[e])
                if jump > JUMP_FRACTION * np.linalg.norm(velocity_before[e]):
                    found.append((float(trajectory.t[k]), "tangential impact", ENDS[e]))
            else:
                found.append((float(trajectory.t[k]), "collision", ENDS[e]))
    return found


def tangential_impacts(trajectory) -> np.ndarray:
    """Times (s) of the tangential impacts of `events`."""
    return np.array([t for t, kind, _ in events(trajectory) if kind == "tangential impact"])


def report(trajectory, dt: float) -> None:
    print(f"  dt = {dt:g} s")
    for label, t0, t1 in contact_phases(trajectory):
        print(f"    {t0:7.4f} - {t1:7.4f} s  {label}")
    for t, kind, end in events(trajectory):
        print(f"    {kind} of end {end} at t = {t:.4f} s")
    energy = trajectory.kinetic_energy + trajectory.potential_energy
    print(f"    energy {energy[0]:.3f} J -> {energy[-1]:.3f} J, largest rise per step "
          f"{max(float(np.diff(energy).max()), 0.0):.2e} J")


def main(out_dir: Path = RENDERS) -> dict:
    critical = np.degrees(np.arctan(1.0))
    print(f"Painleve's rod: mu = 5/3, phi0 = 31 deg, dx/dt = 30 m/s; sliding forward is inconsistent "
          f"above {critical:.0f} deg (p(31 deg) = {painleve_margin(np.radians(31.0)):.3f})")
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
    figure.suptitle("Painleve's rod (mu = 5/3): shaded phases of dt = 5e-3 (orange sliding, green sticking), "
                    "dotted red: tangential impacts of any run", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"  wrote {path}")


if __name__ == "__main__":
    main()
