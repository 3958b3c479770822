"""The ``granular`` command's parser and `main`: parse, call the command's handler, and
turn a failure into one line on stderr and its exit status (granular.cli lists them)."""

from __future__ import annotations

import os
import sys

from . import analyse, export, inspect, pack, plot, render, run, scenes, sweep, view
from .arguments import Parser
from .common import BROKEN_PIPE, FAILURE, FILE_ERROR, INTERRUPTED, USAGE, CommandError
from .. import __version__
from ..errors import GranularError, InvalidInputError, SolverError, TrajectoryFileError

#: The command modules, in the order ``granular --help`` lists them; each has
#: ``add_parser(subparsers)``, which sets the handler its parsed arguments go to.
COMMANDS = (scenes, run, sweep, render, inspect, analyse, plot, view, export, pack)


def build_parser() -> Parser:
    parser = Parser(
        prog="granular",
        description="Nonsmooth mechanics: run scenes, render and inspect runs.",
        epilog="Run 'granular COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    parser.add_argument("--version", action="version", version=f"granular {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``granular`` console script; returns the exit status."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        # argparse gives an optional positional (plot's OUT.png) nothing once options
        # follow the first positionals: 'plot DIR summary --x e --y tau OUT.png' puts it here
        if (
            getattr(args, "command", None) == "plot"
            and args.out is None
            and len(extra) == 1
            and not extra[0].startswith("-")
        ):
            args.out, extra = extra[0], []
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exit:  # --help, --version, or a one-line usage error
        return exit.code if isinstance(exit.code, int) else USAGE
    if getattr(args, "handler", None) is None:
        parser.print_help(sys.stderr)
        return USAGE
    try:
        return _handle(args)
    except BrokenPipeError:
        return _closed_pipe()


def _closed_pipe() -> int:
    """The reader of our output went away (``granular scenes | head -1``): stop quietly,
    as Unix tools do, with the status of a process killed by SIGPIPE (128 + 13).

    stdout is pointed at /dev/null first, so that the interpreter's final flush of
    the unwritten output does not raise the error again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # a stdout without a descriptor (a test's capture)
        pass
    return BROKEN_PIPE


def _handle(args) -> int:
    """Run the command's handler; a failure becomes one line on stderr and its status."""
    prog = f"granular {args.command}"
    if args.debug:
        status = args.handler(args)
        sys.stdout.flush()
        return status

    try:
        status = args.handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:
        raise
    except CommandError as error:
        message, status = str(error), error.status
    except TrajectoryFileError as error:
        message, status = str(error), FILE_ERROR
    except InvalidInputError as error:
        message, status = str(error), USAGE
    except (SolverError, GranularError) as error:
        message, status = str(error), FAILURE
    except KeyboardInterrupt:
        message, status = "interrupted", INTERRUPTED
    except OSError as error:
        where = f" {error.filename}" if error.filename else ""
        message, status = f"cannot access{where}: {error.strerror or error}", FILE_ERROR
    sys.stderr.write(f"{prog}: error: {message.splitlines()[0] if message else 'failed'}\n")
    return status
