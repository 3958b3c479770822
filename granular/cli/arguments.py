"""Argument parsing shared by the commands: the one-line-error parser, the value types
(positive numbers, durations, sizes) and the options several commands take."""

from __future__ import annotations

import argparse
import math
import re

from .common import USAGE

#: A negative number as float() writes it: -1, -1.5, -.5, -1e-3, -1.5E+2, -inf.
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-inf(inity)?$", re.IGNORECASE)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``granular run: error: ... (see granular run --help)``.

    A value such as ``--dt -1e-3`` reaches the option's type check (and its one-line
    refusal): argparse takes an argument starting with '-' for a value only if it
    matches its negative-number pattern, which knows ``-1`` and ``-.5`` but not the
    exponent of ``-1e-3``, and then reported "expected one argument".
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def error(self, message):
        self.exit(USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def add_command(subparsers, name: str, handler, help: str, description: str) -> argparse.ArgumentParser:
    """The parser of ``granular NAME``, whose parsed arguments go to ``handler(args)``."""
    parser = subparsers.add_parser(name, help=help, description=description)
    parser.set_defaults(handler=handler)
    return parser


# -- value types ----------------------------------------------------------------------
def positive_duration(text: str) -> float:
    """A simulated time, positive: a zero duration would save (and replace the run file
    with) a single frame, the initial state, which no one asks for on purpose."""
    try:
        return positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a positive duration in seconds, got {text!r} (a run of "
            "zero duration would only save its initial frame)"
        ) from None


def positive_int(text: str) -> int:
    return checked_number(text, int, lambda value: value >= 1, "a positive integer")


def positive_float(text: str) -> float:
    return checked_number(text, float, lambda value: math.isfinite(value) and value > 0, "a positive number")


def checked_number(text: str, convert, accept, expected: str):
    """``convert(text)`` if it converts and ``accept`` takes it, else argparse's refusal
    "expected <expected>, got '<text>'" (one line under `Parser`)."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not accept(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def size(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` in pixels, at least 16x16."""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels, e.g. 640x480, got {text!r}") from None
    if width < 16 or height < 16:
        raise argparse.ArgumentTypeError(f"size must be at least 16x16, got {text!r}")
    return width, height


# -- options several commands take ------------------------------------------------------
def add_scene_argument(parser, nargs=None) -> None:
    """The SCENE of ``run`` and ``sweep``."""
    parser.add_argument(
        "scene", metavar="SCENE", nargs=nargs, help="scene name (see 'granular scenes') or path to a .py file"
    )


def add_run_settings(parser) -> None:
    """``--duration``, ``--dt`` and ``--every``: what overrides a scene's DEFAULTS."""
    parser.add_argument("--duration", type=positive_duration, metavar="T", help="simulated time (s)")
    parser.add_argument("--dt", type=positive_float, metavar="DT", help="time step (s)")
    parser.add_argument("--every", type=positive_int, metavar="K", help="record a frame every K steps")


def add_quiet(parser, what: str = "no progress bar") -> None:
    parser.add_argument("--quiet", action="store_true", help=what)
