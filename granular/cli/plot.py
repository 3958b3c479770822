"""``granular plot``: a run's figures against time, a sweep's figure against a parameter.

    granular plot RUN.h5 energy|multipliers|contacts|wall-forces OUT.png
    granular plot SWEEP_DIR summary --x PARAMETER --y FIGURE [OUT.png]

Each kind is an entry of `PLOTS`: its handler and the sentence of ``--help`` that
describes it. A new figure of a run is drawn in `granular.render.plots` and named
here in one line, ``"kind": PlotKind(plot_run, "kind: what it shows")``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .arguments import add_command
from .common import USAGE, CommandError, check_figure_suffix, load_run_file
from ..app import parameter_sweeps
from ..render.plots import FIGURE_SUFFIXES, plot


@dataclass(frozen=True)
class PlotKind:
    """A kind of ``granular plot``: ``handler(args) -> exit status`` and its help."""

    handler: Callable
    help: str


def plot_run(args) -> int:
    """A figure of one run file against time (`granular.render.plots.plot`)."""
    if args.x or args.y:
        raise CommandError("--x and --y belong to 'granular plot SWEEP_DIR summary'", USAGE)
    if args.out is None:
        raise CommandError(f"give the figure to write: granular plot {args.run} {args.kind} OUT.png", USAGE)
    check_figure_suffix(args.out, FIGURE_SUFFIXES)
    trajectory = load_run_file(args.run)
    plot(trajectory, args.kind, args.out, title=Path(args.run).stem)
    print(f"wrote {args.out}")
    return 0


def plot_sweep(args) -> int:
    """``granular plot SWEEP_DIR summary --x PARAMETER --y FIGURE [OUT]``: prints the
    mean and spread of each point, then draws them (`granular.app.parameter_sweeps.plot_summary`)."""
    if not args.x or not args.y:
        raise CommandError("a summary plot needs --x PARAMETER and --y FIGURE", USAGE)
    directory = Path(args.run)
    if not directory.is_dir():
        raise CommandError(f"{directory} is not a sweep directory (granular plot SWEEP_DIR summary ...)", USAGE)
    out = Path(args.out) if args.out else directory / f"summary_{'_'.join(args.y)}_vs_{args.x}.png"
    check_figure_suffix(out, FIGURE_SUFFIXES)
    description, rows = parameter_sweeps.read_summary(directory)
    for y in args.y:
        for series in parameter_sweeps.aggregate(description, rows, args.x, y):
            group = ", ".join(f"{k}={v}" for k, v in series.group.items())
            print(f"{y}{' (' + group + ')' if group else ''} against {args.x}:")
            for x, mean, std, count in zip(series.x, series.mean, series.std, series.count):
                print(f"  {args.x} = {x:<8g} {y} = {mean:.4g} +- {std:.2g} ({count} runs)")
    parameter_sweeps.plot_summary(directory, args.x, args.y, out)
    print(f"wrote {out}")
    return 0


#: The line of 'granular --help'; 'granular plot --help' describes each kind of `PLOTS`.
HELP = "a run's energy, multipliers or contacts against time; a sweep's figure against a parameter (matplotlib)"

#: The kinds of ``granular plot``, in the order ``--help`` lists them.
PLOTS = {
    "energy": PlotKind(plot_run, "energy: kinetic, potential, total, dissipated"),
    "multipliers": PlotKind(plot_run, "multipliers: histogram and per-frame largest/sum"),
    "contacts": PlotKind(plot_run, "contacts: count per frame"),
    "wall-forces": PlotKind(plot_run, "wall-forces: force on each wall surface and their total against time (N)"),
    "profile": PlotKind(
        plot_run, "profile: the last frame's coarse-grained packing fraction and stress against height"
    ),
    "stress": PlotKind(plot_run, "stress: Love-Weber pressure and deviatoric stress against time"),
    "coordination": PlotKind(plot_run, "coordination: Z, Z* without rattlers and the rattler fraction against time"),
    "forces": PlotKind(plot_run, "forces: the distribution P(f/<f>) of the last frame's contact forces"),
    "wall-torque": PlotKind(plot_run, "wall-torque: torque about z and power of each wall surface against time"),
    "summary": PlotKind(
        plot_sweep,
        "summary (of a sweep directory): --y FIGURE against --x PARAMETER, the mean "
        "over seeds with their standard deviation as error bars, a curve per value "
        "of the other varying parameters",
    ),
}


def add_parser(commands) -> None:
    parser = add_command(commands, "plot", command_plot, HELP, "; ".join(kind.help for kind in PLOTS.values()) + ".")
    parser.add_argument("run", metavar="RUN.h5|SWEEP_DIR")
    parser.add_argument("kind", choices=tuple(PLOTS))
    parser.add_argument(
        "out",
        metavar="OUT.png",
        nargs="?",
        help="figure (.png, .svg or .pdf); for summary, default SWEEP_DIR/summary_Y_vs_X.png",
    )
    parser.add_argument("--x", metavar="PARAMETER", help="summary: the parameter on the x axis")
    parser.add_argument(
        "--y",
        metavar="FIGURE",
        action="append",
        help="summary: a figure of the scene's summary (or wall_time); repeatable",
    )


def command_plot(args) -> int:
    return PLOTS[args.kind].handler(args)
