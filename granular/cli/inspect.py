"""``granular inspect RUN.h5``: a run's summary, one frame's totals and energies, and
its active contacts sorted by impulse, largest first."""

from __future__ import annotations

import numpy as np

from ..app.runs import dissipation_text
from ..records.active_contacts import active
from .arguments import add_command, positive_int
from .common import frame_index, load_run_file
from ..analysis.tables import floor_load, weight
from ..spheres.flows import FlowCounters
from ..walls import surface_names

#: The line of 'granular --help', and the text of 'granular inspect --help'.
HELP = "table of the contacts of a frame, largest multiplier first"
DESCRIPTION = """Print a run's summary, one frame's totals and energies, and its contacts sorted by impulse (N s),
largest first."""


def add_parser(commands) -> None:
    parser = add_command(commands, "inspect", command_inspect, HELP, DESCRIPTION)
    parser.add_argument("run", metavar="RUN.h5")
    parser.add_argument("--frame", type=int, metavar="K", help="frame (default the last; negative from the end)")
    parser.add_argument("--top", type=positive_int, default=10, metavar="N", help="contacts shown (10)")


def _print_missed_steps(summary) -> None:
    """One line on the steps that kept a contact solver's best answer short of its
    tolerance (`granular.records.recording.missed_summary`), when there were any."""
    if not summary:
        return
    t, residual, ratio = summary["worst"]
    count = int(summary["count"])
    listed = ", ".join(f"{step[0]:.6g}" for step in summary["first"][:10])
    more = "" if count <= 10 else f" and {count - 10} more"
    print(
        f"solver tolerance missed at {count} step{'s' if count != 1 else ''} (t = {listed}{more} s); the worst at "
        f"t = {t:.6g} s, residual {residual:.3g} m/s = {ratio:.3g} times its tolerance (the step kept the "
        f"solver's best answer)"
    )


def _print_flow(trajectory, k: int) -> None:
    """The inlets' and outlets' counts up to frame ``k`` (`granular.spheres.flows.FlowCounters`)."""
    flows = trajectory.system.get("flows", {})
    inlets, outlets = len(flows.get("inlets", [])), len(flows.get("outlets", []))
    counters = FlowCounters.from_row(trajectory.flow[k], inlets, outlets)
    print(
        f"inlets inserted {int(counters.inserted.sum())} spheres ({float(counters.inserted_mass.sum()):.6g} kg), "
        f"outlets removed {int(counters.removed.sum())} ({float(counters.removed_mass.sum()):.6g} kg) "
        f"by t = {trajectory.t[k]:.6g} s"
    )


def command_inspect(args) -> int:
    trajectory = load_run_file(args.run)
    k = frame_index(trajectory, args.frame)
    system, meta = trajectory.system, trajectory.meta
    dt = float(meta.get("dt", float("nan")))
    n = trajectory.positions.shape[1] if trajectory.positions.ndim == 3 else trajectory.positions.shape[-1]
    bodies = f"{n} spheres" if system.get("kind") == "spheres" else f"{system.get('kind', 'system')}, {n} coordinates"
    if trajectory.varying:  # spheres that come and go: the count of the frame, and the ids assigned
        bodies = f"{trajectory.present(k).size} spheres in frame {k} ({n} ids over the run)"
    print(
        f"{args.run}: {bodies}, {len(trajectory)} frames from t = {trajectory.t[0]:.6g} s "
        f"to {trajectory.t[-1]:.6g} s (dt = {dt:g} s, recorded every {meta.get('record_every', '?')} steps, "
        f"scheme {meta.get('scheme', '?')}, solver {meta.get('solver', '?')})"
    )
    _print_missed_steps(meta.get("missed_steps"))
    if trajectory.varying:
        _print_flow(trajectory, k)
    contacts = trajectory.contacts[k]
    impulse = np.asarray(contacts.impulse, float)
    mask = active(trajectory, k)  # solver noise (below the tolerance) is no contact
    print(f"frame {k} at t = {trajectory.t[k]:.6g} s: {len(contacts)} constraints considered, {int(mask.sum())} active")
    _print_loads(trajectory, k, impulse[mask], dt)
    kinetic, potential = _plain(trajectory.kinetic_energy[k]), _plain(trajectory.potential_energy[k])
    print(
        f"  energy: kinetic {kinetic:.6g} J, potential {potential:.6g} J, total {kinetic + potential:.6g} J, "
        f"{dissipation_text(trajectory, k, digits=6, since=' since the start')}"
    )
    if not mask.any():
        print("  no active contacts in this frame")
        return 0
    # the table lists the active contacts (positive impulse), not every constraint
    # row the step considered: "... 1052 more" counted rows that carry nothing
    ordered = contacts.take(np.flatnonzero(mask)).sorted_by_impulse()
    top = min(args.top, len(ordered))
    walls = wall_names(system)
    labels = [
        _contact_label(system, int(ordered.i[r]), int(ordered.j[r]), int(ordered.wall[r]), walls) for r in range(top)
    ]
    width = max([16] + [len(label) for label in labels])
    # friction and rolling-resistance columns (norms of the impulses along the
    # tangent basis) only when the frame's active contacts carry some
    friction = np.linalg.norm(np.asarray(ordered.tangential_impulse, float).reshape(len(ordered), -1), axis=1)
    rolling = np.linalg.norm(np.asarray(ordered.rolling_impulse, float).reshape(len(ordered), -1), axis=1)
    extra = [
        (title, values)
        for title, values in ((f"{'friction (N s)':>14}", friction), (f"{'rolling (N m s)':>15}", rolling))
        if np.any(values > 0.0)
    ]
    print()
    print(
        f"{'rank':>4}  {'active contact':<{width}} {'impulse (N s)':>14} {'force (N)':>12} "
        + "".join(f"{title} " for title, _ in extra)
        + f"{'gap (m)':>12}  normal"
    )
    for r in range(top):
        normal = np.asarray(ordered.normal[r], float).reshape(-1)
        shown = "(" + ", ".join(f"{v:.3g}" for v in normal[:6]) + (", ...)" if normal.size > 6 else ")")
        columns = "".join(f"{values[r]:>{len(title)}.6g} " for title, values in extra)
        print(
            f"{r + 1:>4}  {labels[r]:<{width}} {ordered.impulse[r]:>14.6g} {ordered.impulse[r] / dt:>12.6g} "
            f"{columns}{ordered.gap[r]:>12.4g}  {shown}"
        )
    if top < len(ordered):
        print(f"  ... {len(ordered) - top} more active contacts (--top N shows more)")
    return 0


def _print_loads(trajectory, k: int, impulses: np.ndarray, dt: float) -> None:
    """The frame's forces in words that cannot be misread: the floor's load against the
    weight, then the mean and the largest contact force (impulse over the step / dt).
    A sum over all contacts counts each load once per contact it passes through."""
    if trajectory.system.get("kind") == "spheres" and trajectory.meta.get("masses"):
        load, total = floor_load(trajectory, k), weight(trajectory, k)
        if total > 0.0:
            print(
                f"  floor load {load:.6g} N against a weight of {total:.6g} N ({100 * load / total:.4g} % of it; "
                "the rest is on other walls or accelerates)"
            )
    if impulses.size:
        print(
            f"  contact forces (impulse / dt): mean {impulses.mean() / dt:.6g} N, "
            f"largest {impulses.max() / dt:.6g} N "
            f"(largest impulse {impulses.max():.6g} N s) over {impulses.size} active contacts"
        )


def wall_names(system: dict) -> list[str]:
    """A name for each contact surface a sphere run's contacts index (``Contacts.wall``),
    in the world's order: `granular.walls.surface_names` ("floor", "box x-min", ...,
    "cylinder side", or the index and normal of a plane)."""
    return surface_names(system.get("walls", []))


def _contact_label(system: dict, i: int, j: int, wall: int, walls: list[str]) -> str:
    if system.get("kind") != "spheres":
        return f"constraint {i}"
    if wall >= 0:
        return f"{i} - {walls[wall] if wall < len(walls) else f'wall {wall}'}"
    return f"{i} - {j}"


def _plain(value) -> float:
    """``value`` as a float with -0.0 made 0.0, so that tables never print "-0"."""
    return float(value) + 0.0
