"""``granular view RUN.h5 -o RUN.html``: the run as one self-contained HTML page that
opens offline in a browser (`granular.render.viewer`)."""

from __future__ import annotations

from .arguments import add_command, positive_float
from .common import USAGE, CommandError, load_run_file
from ..render import viewer

HELP = "the run in a browser: one self-contained HTML file (spheres, walls, force network, time slider)"
DESCRIPTION = """Write RUN.html, a page that opens offline: the spheres coloured by speed, force or index, the walls,
the force network (toggled in the panel), a time slider with play and pause, and the camera by mouse. Frames are
thinned and positions quantised so that the file written is at most --max-mb."""


def add_parser(commands) -> None:
    parser = add_command(commands, "view", command_view, HELP, DESCRIPTION)
    parser.add_argument("run", metavar="RUN.h5")
    parser.add_argument("-o", "--out", required=True, metavar="RUN.html", help="the page to write")
    parser.add_argument("--color", default="speed", choices=("speed", "force", "id"), help="sphere colour (speed)")
    parser.add_argument("--no-forces", action="store_true", help="leave out the force network")
    parser.add_argument(
        "--max-mb",
        type=positive_float,
        default=20.0,
        metavar="MB",
        help="largest size of the written page (20 MB): frames are thinned to fit",
    )


def command_view(args) -> int:
    if not str(args.out).lower().endswith((".html", ".htm")):
        raise CommandError(f"the view is an HTML page: {args.out} must end in .html", USAGE)
    trajectory = load_run_file(args.run)
    try:
        path = viewer.write_html(
            trajectory, args.out, color=args.color, forces=not args.no_forces, max_bytes=args.max_mb * 1e6
        )
    except ValueError as error:
        raise CommandError(str(error), USAGE) from None
    except ImportError as error:
        raise CommandError(str(error), 1) from None
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
    return 0
