"""``granular render RUN.h5 OUT``: draw a saved run to MP4, GIF or PNG (also the
``--render`` of ``granular run``)."""

from __future__ import annotations

import time
from pathlib import Path

from ..progress import ProgressBar
from .arguments import add_command, add_quiet, positive_float, positive_int, size
from .common import USAGE, CommandError, frame_index, load_run_file
from ..render import render
from ..render.output import output_kind

#: The line of 'granular --help', and the text of 'granular render --help'.
HELP = "render a run to MP4, GIF or PNG"
DESCRIPTION = """Render a saved run. One picture per recorded frame; --every thins them; --fps only sets the playback
speed."""


def add_parser(commands) -> None:
    parser = add_command(commands, "render", command_render, HELP, DESCRIPTION)
    parser.add_argument("run", metavar="RUN.h5")
    parser.add_argument("out", metavar="OUT", help="output file: .mp4, .gif or .png")
    parser.add_argument("--forces", action="store_true", help="overlay the force network (impulses)")
    parser.add_argument(
        "--frame",
        type=int,
        metavar="K",
        help="only frame K (negative counts from the end; a PNG shows the last by default)",
    )
    parser.add_argument("--every", type=positive_int, default=1, metavar="K", help="draw every K-th frame")
    parser.add_argument("--fps", type=positive_float, default=25.0, help="frames per second (25)")
    parser.add_argument("--color-by", choices=("speed", "id", "none"), default="speed", help="sphere colour (speed)")
    parser.add_argument(
        "--camera",
        choices=("fixed", "orbit"),
        default="fixed",
        help="camera motion of an animation (fixed; a .png is always fixed)",
    )
    parser.add_argument(
        "--fit",
        choices=("scene", "bodies"),
        default="scene",
        help="frame the bodies and the finite walls (scene), or the bodies alone (bodies: a rod on a wide floor)",
    )
    parser.add_argument("--size", type=size, default=(640, 480), metavar="WxH", help="pixels (640x480)")
    parser.add_argument("--title", help="caption before the time")
    parser.add_argument(
        "--force-scale",
        type=positive_float,
        metavar="IMPULSE",
        help="impulse (N s) drawn at full width (default: 98th percentile)",
    )
    add_quiet(parser)


def command_render(args) -> int:
    output_kind(args.out)  # an unsupported extension is refused before the run is read
    trajectory = load_run_file(args.run)
    options = dict(color_by=args.color_by, size=args.size, fit=args.fit)
    if args.force_scale is not None:
        options["force_scale"] = args.force_scale
    if Path(args.out).suffix.lower() != ".png":
        options["camera"] = args.camera
    elif args.camera != "fixed":
        raise CommandError(
            f"--camera {args.camera} needs an animation (.mp4 or .gif): a .png is one still from a fixed camera", USAGE
        )
    render_run(
        trajectory,
        args.out,
        forces=args.forces,
        frame=args.frame,
        every=args.every,
        fps=args.fps,
        quiet=args.quiet,
        title=args.title,
        **options,
    )
    return 0


def render_run(trajectory, out, forces, frame, every, fps, quiet, title=None, **options) -> None:
    """Draw ``trajectory`` to ``out`` (a video with a progress bar of its frames, or a
    still) and print the file written, its size and the time taken."""
    kind = output_kind(out)
    if frame is not None:
        frame = frame_index(trajectory, frame)
    start = time.perf_counter()
    if kind == "video":
        count = len(trajectory) if frame is not None else len(range(0, len(trajectory), every))
        bar = ProgressBar(1 if frame is not None else count, enabled=not quiet, label="frames")
        try:
            render(
                trajectory,
                out,
                frame=frame,
                forces=forces,
                every=every,
                fps=fps,
                title=title,
                progress=lambda done, total: bar.update(done),
                **options,
            )
        finally:
            bar.finish()
    else:
        render(trajectory, out, frame=frame, forces=forces, title=title, **options)
    print(f"wrote {out} ({Path(out).stat().st_size / 1024:.0f} kB) in {time.perf_counter() - start:.1f} s")
