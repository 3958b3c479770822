"""The ``granular`` command: run scenes, render runs, inspect multipliers, plot, export.

    granular scenes [NAME]
    granular run SCENE [--set NAME=VALUE ...] [--duration T] [--dt DT] [--every K] [--out RUN.h5]
                       [--render OUT.mp4]
    granular run --from RUN.h5 --duration T [--out RUN.h5]
    granular sweep SCENE [--set NAME=V1,V2,... ...] [--seeds K] [--duration T] [--out DIR]
                         [--workers N | --scheduler tcp://HOST:8786] [--force]
    granular render RUN.h5 OUT.mp4|OUT.gif|OUT.png [--forces] [--frame K] [--every K] [--fps F]
                    [--fit scene|bodies]
    granular inspect RUN.h5 [--frame K] [--top N]
    granular analyse RUN.h5 [--frame K] [--region SPEC] [--series OUT.csv] [--walls OUT.csv] [--profile OUT.csv]
    granular plot RUN.h5 energy|multipliers|contacts|wall-forces|profile|stress|coordination|forces|wall-torque OUT.png
    granular view RUN.h5 -o RUN.html [--color speed|force|id] [--max-mb MB]
    granular plot SWEEP_DIR summary --x PARAMETER --y FIGURE [OUT.png]
    granular export RUN.h5 DIR --vtk [--every K] [--active-only]
    granular pack box|cylinder --n N --radius R ... --out PACKING.csv

Scenes are Python files in a scenes directory. ``SCENE`` is a file's name without
``.py`` or a path to a file. The directories searched, first match wins: those
listed in ``GRANULAR_SCENES`` (separated by ``os.pathsep``) when it is set;
otherwise ``./scenes`` in the current directory, then the scenes that ship with
the package (``granular/scenes/``, `granular.scenes.PACKAGED_SCENES`). A scene
module has a docstring whose first line describes it, a ``build()`` returning a
system, and optionally ``DEFAULTS = dict(duration=..., dt=..., record_every=...)``;
other keys of ``DEFAULTS`` (``scheme``, ``solver``)
are passed to `granular.Simulation`. Files whose name starts with ``_`` are not
scenes.

Exit status: 0 success; 1 the simulation or a scene failed, including a step whose
state or energies are not finite (a blow-up; the message gives its time), or a run
of a sweep failed (its summary is still written); 2 a usage error (bad option,
unknown scene, frame out of range, unsupported extension); 3 a missing or
unreadable run file, or an output that cannot be written; 130 interrupted; 141 the
reader of the output went away (``granular scenes | head -1``: the command stops
quietly, like a Unix tool killed by SIGPIPE). Errors are one line on stderr;
``--debug`` (before the command) shows the traceback instead. A run that fails or
is interrupted saves the frames before it to ``RUN.partial.h5`` (named in the
message) and leaves ``RUN.h5`` as it was. Files get the usual permissions
(``0666 & ~umask``).

One module a job: `granular.cli.dispatch` (the parser, `main`, errors to exit
statuses), `common` (the statuses, `CommandError`, reading a run file),
`arguments` (the one-line-error parser, value types, shared options), and one
module a command (`scenes`, `run`, `sweep`, `render`, `inspect`, `analyse`, `plot`,
`view`, `export`, `pack`), each with ``add_parser(subparsers)`` and its ``command_*`` handler. A new
command is a module with those two and an entry in `dispatch.COMMANDS`.
"""

from __future__ import annotations

from .common import BROKEN_PIPE, FAILURE, FILE_ERROR, INTERRUPTED, RUN_SUFFIXES, USAGE, CommandError
from .dispatch import build_parser, main
from .inspect import wall_names
from .run import partial_path

__all__ = [
    "BROKEN_PIPE",
    "FAILURE",
    "FILE_ERROR",
    "INTERRUPTED",
    "RUN_SUFFIXES",
    "USAGE",
    "CommandError",
    "build_parser",
    "main",
    "partial_path",
    "wall_names",
]
