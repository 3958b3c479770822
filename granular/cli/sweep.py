"""``granular sweep``: argument checks and printing around `granular.app.parameter_sweeps`, which runs
a scene over a grid of parameters and seeds on Dask."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..app.runs import plural
from .arguments import add_command, add_quiet, add_run_settings, add_scene_argument, positive_int
from .common import FAILURE, USAGE, CommandError
from ..app import parameter_sweeps

#: The line of 'granular --help', and the text of 'granular sweep --help'.
HELP = "run a scene over a grid of parameters and seeds on Dask"
DESCRIPTION = """Run the product of the --set values (NAME=V1,V2,...; one value is fixed) and of --seeds on a Dask
cluster: a local one with a worker process per core, or --scheduler's. Each run is a run file in
OUT; OUT/summary.csv (and summary.parquet with pyarrow) has a row per run: parameters, the scene's
summary figures, status, wall_time (s), file. Runs already in OUT are skipped unless --force. Exit
status 1 if a run failed (the summary is still written)."""


def add_parser(commands) -> None:
    parser = add_command(commands, "sweep", command_sweep, HELP, DESCRIPTION)
    add_scene_argument(parser)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="values of a scene parameter (repeatable; 'granular scenes SCENE' lists them)",
    )
    parser.add_argument("--seeds", type=positive_int, metavar="K", help="run seed = 0 .. K-1 of each combination")
    add_run_settings(parser)
    parser.add_argument("--out", metavar="DIR", help="directory of the run files and summary (sweeps/SCENE)")
    parser.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help="worker processes of the local cluster (default: one per core)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="use the existing Dask cluster whose scheduler is at ADDRESS (tcp://host:8786)",
    )
    parser.add_argument("--force", action="store_true", help="run again the runs already in DIR")
    add_quiet(parser, "no progress line")


def command_sweep(args) -> int:
    if args.workers is not None and args.scheduler is not None:
        raise CommandError(
            "--workers starts a local cluster and --scheduler uses an existing one: give one of them", USAGE
        )
    plan = parameter_sweeps.plan_sweep(args.scene, args.set, args.seeds, args.duration, args.dt, args.every)
    out = Path(args.out) if args.out else Path("sweeps") / plan.name
    if out.exists() and not out.is_dir():
        raise CommandError(f"--out {out} exists and is not a directory", USAGE)
    varying = ", ".join(plan.varying) or "nothing"
    runs = plural(len(plan.runs), "run")
    print(
        f"{plan.name}: {runs} (varying {varying}) of {plan.settings.duration:g} s, "
        f"dt {plan.settings.dt:g} s, into {out}/"
    )
    start = time.perf_counter()
    line = SweepProgress(enabled=not args.quiet)
    with parameter_sweeps.connect(args.workers, args.scheduler) as client:
        workers = len(client.scheduler_info().get("workers", {}))
        link = parameter_sweeps.dashboard_link(client)
        print(
            f"  {'scheduler ' + args.scheduler if args.scheduler else 'local cluster'}: {plural(workers, 'worker')}; "
            f"dashboard {link or 'not served (install bokeh: pip install granular[cluster])'}"
        )
        sys.stdout.flush()
        try:
            result = parameter_sweeps.run_sweep(plan, out, client, force=args.force, progress=line.update)
        finally:
            line.finish()
    seconds = time.perf_counter() - start
    print(
        f"  ran {plural(result.ran, 'run')}, skipped {result.skipped} already done, {result.failed} failed, "
        f"in {seconds:.1f} s"
    )
    for row in result.rows:
        if row["status"] != parameter_sweeps.STATUS_OK:
            shown = ", ".join(f"{n}={row['parameters'][n]!r}" for n in plan.varying) or plan.name
            print(f"  {shown}: {row['status']}")
    print(f"  summary: {', '.join(str(p) for p in result.summary_files)}")
    return FAILURE if result.failed else 0


class SweepProgress:
    """``runs: 5/12 done, 1 failed, 2 running`` on stderr: redrawn in place on a
    terminal, a plain line at each change otherwise. (A dozen lines of our own, not
    tqdm's bar: this line counts failed and running runs, and a log of a sweep is a
    line per change that scripts read; distributed.progress shows tasks.)"""

    def __init__(self, enabled: bool = True, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.shown = None

    def update(self, done: int, failed: int, running: int, total: int) -> None:
        line = f"runs: {done}/{total} done, {failed} failed, {running} running"
        if not self.enabled or line == self.shown:
            return
        self.stream.write(("\r" + line.ljust(60)) if self.tty else line + "\n")
        self.stream.flush()
        self.shown = line

    def finish(self) -> None:
        if self.enabled and self.tty and self.shown:
            self.stream.write("\n")
            self.stream.flush()
