"""What every ``granular`` command shares: the exit statuses, the one-line `CommandError`,
and reading a run file or a frame of it with the status a failure gets."""

from __future__ import annotations

from pathlib import Path

from ..errors import CommandError, InvalidInputError, TrajectoryFileError
from ..records.trajectory import check_frame
from ..app.runs import load_run

# The exit statuses of the package docstring (granular.cli).
USAGE, FAILURE, FILE_ERROR, INTERRUPTED = 2, 1, 3, 130
#: The output's reader closed the pipe: the status of a process killed by SIGPIPE.
BROKEN_PIPE = 141
RUN_SUFFIXES = (".h5", ".hdf5")


def check_run_suffix(path: Path) -> None:
    """Refuse a run file name that is not HDF5 before any work is done."""
    if path.suffix.lower() not in RUN_SUFFIXES:
        raise CommandError(f"run files are HDF5: {path} must end in {' or '.join(RUN_SUFFIXES)}", USAGE)


def check_figure_suffix(out, suffixes) -> None:
    """Refuse a figure name (a path, named as given) that matplotlib would not write,
    before the run is read."""
    suffix = Path(out).suffix
    if suffix.lower() not in suffixes:
        raise CommandError(
            f"unsupported figure extension {suffix or '(none)'!r} for {out}: use {', '.join(suffixes)}", USAGE
        )


def load_run_file(path):
    """The run file at ``path``, checked (`granular.app.runs.load_run`: NaN frames, missing
    radii); an unreadable or refused file is one `FILE_ERROR` line for every command."""
    try:
        return load_run(path)
    except TrajectoryFileError as error:
        raise CommandError(str(error), FILE_ERROR) from error


def frame_index(trajectory, frame: int | None) -> int:
    """The index of ``--frame K`` in ``trajectory`` (the last frame when None; negative
    counts from the end); out of range is a usage error."""
    try:
        return check_frame(trajectory, -1 if frame is None else frame)
    except InvalidInputError as error:
        raise CommandError(str(error), USAGE) from error
