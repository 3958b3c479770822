"""``granular analyse RUN.h5``: a frame's stress, structure and wall loads in words,
and the tables of a run (`granular.analysis`) as CSV or Parquet."""

from __future__ import annotations

import numpy as np

from .arguments import add_command, positive_float
from .common import USAGE, CommandError, frame_index, load_run_file
from .. import analysis
from ..analysis import BoxRegion, frame_list, parse_frames, parse_region
from ..analysis.walls import translations
from ..walls import surface_names

HELP = "stress, coordination, force distribution and wall loads of a frame; tables of a run"
DESCRIPTION = """Measure a packing: the Love-Weber stress over a region (--region), coordination numbers with
and without rattlers, the fabric, the contact forces and the wall loads of a frame; write the per-frame series
(--series), the wall loads (--walls) and a coarse-grained profile (--profile) as CSV or Parquet. With --frames A:B,
the region's stress and the profile are also averaged over those frames."""


def add_parser(commands) -> None:
    parser = add_command(commands, "analyse", command_analyse, HELP, DESCRIPTION)
    parser.add_argument("run", metavar="RUN.h5")
    parser.add_argument("--frame", type=int, metavar="K", help="frame (default the last; negative from the end)")
    parser.add_argument(
        "--region",
        metavar="SPEC",
        help="box:x0,y0,z0,x1,y1,z1 | cylinder:cx,cy,cz,ax,ay,az,R,H | slab:AXIS,lo,hi,AREA "
        "(default: the box around the spheres)",
    )
    parser.add_argument(
        "--frames",
        metavar="A:B",
        help="average the region's stress and the profile over frames A to B-1 (Python's slice)",
    )
    parser.add_argument("--series", metavar="OUT.csv", help="per-frame table (.csv or .parquet)")
    parser.add_argument("--walls", metavar="OUT.csv", help="per-frame, per-surface force, torque and power")
    parser.add_argument("--profile", metavar="OUT.csv", help="coarse-grained fields of the frame along --axis")
    parser.add_argument("--axis", default="z", choices=("x", "y", "z"), help="profile axis (z)")
    parser.add_argument("--kernel", default="lucy", choices=("lucy", "gaussian"), help="coarse-graining kernel")
    parser.add_argument("--width", type=positive_float, metavar="W", help="kernel width (m; default a diameter)")
    parser.add_argument(
        "--torque-axis",
        metavar="X,Y,Z,AX,AY,AZ",
        default="0,0,0,0,0,1",
        help="point and direction of the axis of the wall torques (0,0,0,0,0,1)",
    )


def _region(args, forces):
    if args.region is None:
        reach = forces.radii.max()
        return BoxRegion(forces.centres.min(axis=0) - reach, forces.centres.max(axis=0) + reach)
    try:
        return parse_region(args.region)
    except ValueError as error:
        raise CommandError(str(error), USAGE) from None


def _torque_axis(text: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        values = np.array([float(v) for v in text.split(",")])
    except ValueError:
        values = np.zeros(0)
    if values.shape != (6,) or not np.linalg.norm(values[3:]) > 0.0:
        raise CommandError(f"--torque-axis: expected X,Y,Z,AX,AY,AZ with a non-zero direction, got {text!r}", USAGE)
    return values[:3], values[3:]


def _frames(trajectory, text):
    """The frame indices of ``--frames A:B``, or None without it; a usage error when it selects none."""
    if text is None:
        return None
    try:
        return frame_list(trajectory, parse_frames(text))
    except ValueError as error:
        raise CommandError(f"--{error}", USAGE) from None


def _print_average(trajectory, frames, region) -> None:
    sigma = analysis.average_region_stress(trajectory, region, frames, kinetic=True)
    print(
        f"  averaged over frames {frames[0]} to {frames[-1]} ({len(frames)} frames, t = {trajectory.t[frames[0]]:.6g}"
        f" to {trajectory.t[frames[-1]]:.6g} s): pressure {analysis.pressure(sigma):.4g} Pa, deviatoric "
        f"{analysis.deviatoric_stress(sigma):.4g} Pa"
    )


def command_analyse(args) -> int:
    trajectory = load_run_file(args.run)
    if trajectory.system.get("kind") != "spheres":
        raise CommandError(f"{args.run} is not a run of spheres: granular analyse measures packings", USAGE)
    k = frame_index(trajectory, args.frame)
    origin, direction = _torque_axis(args.torque_axis)
    frames = _frames(trajectory, args.frames)
    forces = analysis.frame_forces(trajectory, k)
    region = _region(args, forces)
    _print_frame(trajectory, k, forces, region, origin, direction)
    try:
        if frames is not None:
            _print_average(trajectory, frames, region)
        if args.series:
            analysis.save_table(analysis.series(trajectory, region), args.series)
            print(f"wrote {args.series}")
        if args.walls:
            analysis.save_table(analysis.wall_table(trajectory, direction, origin), args.walls)
            print(f"wrote {args.walls}")
        if args.profile:
            table = analysis.profile_table(
                trajectory, k, args.axis, kernel=args.kernel, width=args.width, frames=frames
            )
            analysis.save_table(table, args.profile)
            print(f"wrote {args.profile}")
    except ValueError as error:
        raise CommandError(str(error), USAGE) from None
    return 0


def _print_frame(trajectory, k, forces, region, origin, direction) -> None:
    sigma = analysis.region_stress(forces, region, kinetic=True)
    values, vectors = analysis.principal(sigma)
    numbers = analysis.coordination(forces)
    magnitudes = forces.contact_force_magnitudes()
    print(
        f"frame {k} at t = {trajectory.t[k]:.6g} s: {forces.n} spheres, {len(forces.pair_i)} contacts between "
        f"spheres and {len(forces.wall_sphere)} with walls"
    )
    print(
        f"  coordination number Z = {numbers.z:.4g}; without rattlers (fewer than 4 contacts) Z* = "
        f"{numbers.z_mechanical:.4g}, rattlers {100 * numbers.rattler_fraction:.3g} % of the spheres"
    )
    if magnitudes.size:
        print(
            f"  contact forces: mean {magnitudes.mean():.4g} N, largest {magnitudes.max():.4g} N "
            f"({magnitudes.max() / magnitudes.mean():.3g} times the mean)"
        )
    print(
        f"  stress over {type(region).__name__} of {region.volume:.4g} m^3 (Love-Weber with the kinetic part, "
        f"compression positive): pressure {analysis.pressure(sigma):.4g} Pa, deviatoric "
        f"{analysis.deviatoric_stress(sigma):.4g} Pa"
    )
    for value, vector in zip(values, vectors.T):
        print(f"    principal {value:>11.4g} Pa along ({', '.join(f'{v + 0.0:.3f}' for v in vector)})")
    fabric = np.linalg.eigvalsh(analysis.fabric(forces))[::-1]
    print(f"  fabric eigenvalues {', '.join(f'{v:.3f}' for v in fabric)} (isotropic: 0.333 each)")
    shifts = None if trajectory.wall_displacements is None else trajectory.wall_displacements[k]
    loads = analysis.wall_loads(
        analysis.frame_forces(trajectory, k, threshold=0.0),
        trajectory.system,
        direction,
        origin,
        shifts,
        translations(trajectory, k),
    )
    names = surface_names(trajectory.system.get("walls", []))
    for s, force in enumerate(loads["force"]):
        if np.any(force != 0.0):
            name = names[s] if s < len(names) else f"wall {s}"
            print(
                f"  {name}: force ({', '.join(f'{v + 0.0:.4g}' for v in force)}) N, torque "
                f"{loads['torque'][s] + 0.0:.4g} N m, power {loads['power'][s] + 0.0:.4g} W"
            )
