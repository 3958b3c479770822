"""``granular pack``: fill a box or a cylinder with spheres and write them to a file.

    granular pack box --n N --radius R [--radius-max R2] --lower X,Y,Z --upper X,Y,Z
                      [--grow] [--seed S] [--max-attempts K] --out PACKING.csv|PACKING.xyz
    granular pack cylinder --n N --radius R [--radius-max R2] --centre X,Y,Z [--axis z|X,Y,Z]
                           --cylinder-radius RC --height H [--seed S] --out PACKING.csv

SI units (m). With ``--radius-max`` the radii are uniform in ``[radius,
radius-max]``, else all equal ``radius``. The file is written atomically; its
columns are those of `granular.spheres.packing` (``x,y,z,r``). A region that cannot hold
the spheres is a usage error (exit 2) whose one line gives the packing fraction
asked and how many spheres fitted. A vector starting with a minus sign is
written ``--lower=-1,0,0`` (argparse would take ``-1,0,0`` for an option).
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from .arguments import add_command, checked_number, positive_float, positive_int
from ..records.configurations import write_configuration
from ..errors import InvalidInputError
from ..spheres.packing import fill_box, fill_cylinder, packing_fraction

#: Output formats `write_configuration` knows.
_SUFFIXES = (".csv", ".xyz")


def _vector(text: str) -> np.ndarray:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected X,Y,Z in metres, got {text!r}") from None
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected three finite numbers X,Y,Z, got {text!r}")
    return np.array(values)


def _axis(text: str):
    if text.lower() in ("x", "y", "z"):
        return text.lower()
    return _vector(text)


def _non_negative_int(text: str) -> int:
    return checked_number(text, int, lambda value: value >= 0, "a non-negative integer")


#: The line of 'granular --help', and the text of 'granular pack --help'.
HELP = "fill a box or a cylinder with non-overlapping spheres (CSV/XYZ)"
DESCRIPTION = """Random sequential addition of N spheres, biggest first; writes x,y,z,r (m) to a .csv or .xyz file.
It reaches a packing fraction of about 0.3 (box --grow: 0.45-0.5)."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``pack box`` and ``pack cylinder`` to the ``granular`` command's subparsers."""
    pack = add_command(subparsers, "pack", command_pack, HELP, DESCRIPTION)
    regions = pack.add_subparsers(dest="region", metavar="REGION", parser_class=type(pack))
    regions.required = True
    box = regions.add_parser("box", help="an axis-aligned box [lower, upper]")
    box.add_argument("--lower", type=_vector, required=True, metavar="X,Y,Z", help="lower corner (m)")
    box.add_argument("--upper", type=_vector, required=True, metavar="X,Y,Z", help="upper corner (m)")
    box.add_argument(
        "--grow",
        action="store_true",
        help="denser (to about 0.45-0.5, slower): pack shrunk spheres, then grow them back removing the overlaps",
    )
    cylinder = regions.add_parser("cylinder", help="a closed cylinder around an axis")
    cylinder.add_argument(
        "--centre",
        type=_vector,
        required=True,
        metavar="X,Y,Z",
        help="midpoint of the axis (m): the cylinder spans height/2 on each side",
    )
    cylinder.add_argument("--axis", type=_axis, default="z", metavar="x|y|z|X,Y,Z", help="axis direction (z)")
    cylinder.add_argument(
        "--cylinder-radius", type=positive_float, required=True, metavar="RC", help="radius of the cylinder (m)"
    )
    cylinder.add_argument(
        "--height", type=positive_float, required=True, metavar="H", help="full height of the cylinder (m)"
    )
    for region in (box, cylinder):
        _common_options(region)
    return pack


def _common_options(parser) -> None:
    parser.add_argument("--n", type=positive_int, required=True, metavar="N", help="number of spheres")
    parser.add_argument(
        "--radius",
        type=positive_float,
        required=True,
        metavar="R",
        help="sphere radius (m); the smallest one with --radius-max",
    )
    parser.add_argument(
        "--radius-max", type=positive_float, metavar="R2", help="largest radius (m): radii uniform in [R, R2]"
    )
    parser.add_argument("--seed", type=_non_negative_int, default=0, help="random seed (0): same seed, same packing")
    parser.add_argument(
        "--max-attempts",
        type=positive_int,
        default=2000,
        metavar="K",
        help="candidate positions per sphere before giving up (2000)",
    )
    parser.add_argument("--out", required=True, metavar="PACKING.csv|PACKING.xyz", help="output file")


def command_pack(args) -> int:
    """Fill the region, write the file, print one line; returns the exit status (0)."""
    from pathlib import Path

    out = Path(args.out)
    if out.suffix.lower() not in _SUFFIXES:
        raise InvalidInputError(f"--out must end in .csv or .xyz, got {args.out!r}")
    radii = args.radius
    if args.radius_max is not None:
        if args.radius_max < args.radius:
            raise InvalidInputError(f"--radius-max {args.radius_max} is smaller than --radius {args.radius}")
        radii = (args.radius, args.radius_max)
    if args.region == "box":
        positions, radii = fill_box(
            args.n, args.lower, args.upper, radii, seed=args.seed, max_attempts=args.max_attempts, grow=args.grow
        )
        volume = float(np.prod(args.upper - args.lower))
    else:
        positions, radii = fill_cylinder(
            args.n,
            args.centre,
            args.axis,
            args.cylinder_radius,
            args.height,
            radii,
            seed=args.seed,
            max_attempts=args.max_attempts,
        )
        volume = math.pi * args.cylinder_radius**2 * args.height
    write_configuration(out, positions, radii)
    print(f"wrote {len(radii)} spheres to {out} (packing fraction {packing_fraction(radii, volume):.3f})")
    return 0
