"""``granular export RUN.h5 DIR --vtk``: a run as a VTK series for ParaView."""

from __future__ import annotations

from pathlib import Path

from ..progress import ProgressBar
from .arguments import add_command, add_quiet, positive_int
from .common import USAGE, CommandError, load_run_file
from ..render.vtkfiles import export_vtk

#: The line of 'granular --help', and the text of 'granular export --help'.
HELP = "export a run for ParaView (--vtk: .vtp per frame + .pvd)"
DESCRIPTION = """Write DIR/STEM.pvd and one .vtp per frame and part: spheres with radius, velocity; contacts with
impulse, force, gap and an 'active' flag (impulse above the solver's noise); the walls at the frame's
position with the force on each. STEM is the run file's name. Exporting again to DIR replaces the series: the
STEM_*.vtp files the new .pvd does not list are removed; other files in DIR are left alone."""


def add_parser(commands) -> None:
    parser = add_command(commands, "export", command_export, HELP, DESCRIPTION)
    parser.add_argument("run", metavar="RUN.h5")
    parser.add_argument("directory", metavar="DIR")
    parser.add_argument("--vtk", action="store_true", help="VTK XML PolyData series (the only format)")
    parser.add_argument("--every", type=positive_int, default=1, metavar="K", help="every K-th frame")
    parser.add_argument(
        "--active-only",
        action="store_true",
        help="write only the active contacts (a Tube filter on impulse then shows the force network)",
    )
    add_quiet(parser)


def command_export(args) -> int:
    if not args.vtk:
        raise CommandError("choose an export format: --vtk", USAGE)
    directory = Path(args.directory)
    if directory.exists() and not directory.is_dir():
        raise CommandError(f"{directory} exists and is not a directory", USAGE)
    trajectory = load_run_file(args.run)

    bar = ProgressBar(len(range(0, len(trajectory), args.every)), enabled=not args.quiet, label="frames")
    try:
        pvd = export_vtk(
            trajectory,
            directory,
            stem=Path(args.run).stem,
            every=args.every,
            progress=lambda done, total: bar.update(done),
            active_only=args.active_only,
        )
    finally:
        bar.finish()
    print(f"wrote {pvd} and its .vtp files")
    return 0
