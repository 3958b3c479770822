"""Progress of a run on the terminal: steps done, steps per second, simulated time and
active contacts, drawn by tqdm (`ProgressBar`), and the ``progress=`` callback of
`granular.simulation.Simulation.run` that draws one (`progress`)."""

from __future__ import annotations

import sys

import numpy as np


class ProgressBar:
    """Steps done, steps per second, simulated time and active contacts, on stderr,
    drawn by tqdm.

    ``update(done, t=None, contacts=None)`` takes the count done so far (not an
    increment); ``finish()`` ends the line. ``enabled=False`` draws nothing (--quiet).
    On a terminal the bar is redrawn at most every ``interval`` s; to a file or a pipe
    at most every ``log_interval`` s (a log does not fill with redraws).
    """

    def __init__(
        self,
        total: int,
        stream=None,
        enabled: bool = True,
        interval: float = 0.1,
        log_interval: float = 5.0,
        label: str = "steps",
    ):
        from tqdm import tqdm

        stream = sys.stderr if stream is None else stream
        tty = hasattr(stream, "isatty") and stream.isatty()
        self.total = max(int(total), 1)
        self._stream = stream
        self._bar = tqdm(
            total=self.total,
            file=stream,
            disable=not enabled,
            unit=" " + label,
            leave=True,
            mininterval=interval if tty else log_interval,
            dynamic_ncols=tty,
            ascii=not tty,
            bar_format="{bar:24} {n_fmt}/{total_fmt} " + label + "  {rate_noinv_fmt}{postfix}  ETA {remaining}",
        )

    def update(self, done: int, t: float | None = None, contacts: int | None = None) -> None:
        if self._bar.disable:
            return
        parts = ([f"t = {t:.4g} s"] if t is not None else []) + (
            [f"{contacts} contacts"] if contacts is not None else []
        )
        if parts:
            self._bar.set_postfix_str("  ".join(parts), refresh=False)
        self._bar.update(int(done) - self._bar.n)

    def write(self, line: str) -> None:
        """Print ``line`` on the bar's stream above the bar (tqdm.write)."""
        from tqdm import tqdm

        tqdm.write(line, file=self._stream)

    def finish(self) -> None:
        self._bar.close()


def progress(label: str = "steps", enabled: bool = True, stream=None):
    """A ``progress=`` callback for `Simulation.run` drawing a `ProgressBar` (tqdm) on
    stderr: steps, steps/s, simulated time, active contacts. The bar starts at the
    first step (when the run's step count is known) and ends at the last::

        trajectory = simulation.run(duration=1.0, progress=granular.progress.progress())

    Other callbacks can be chained: ``progress(...)`` returns an object whose
    ``also(callback)`` calls ``callback(step, n_steps, result)`` after drawing.
    """
    return _ProgressCallback(label, enabled, stream)


class _ProgressCallback:
    def __init__(self, label, enabled, stream):
        self.label, self.enabled, self.stream = label, enabled, stream
        self.bar, self.others = None, []

    def also(self, callback) -> "_ProgressCallback":
        self.others.append(callback)
        return self

    def __call__(self, step: int, n_steps: int, result) -> None:
        if self.bar is None:
            self.bar = ProgressBar(n_steps, stream=self.stream, enabled=self.enabled, label=self.label)
        contacts = getattr(result, "contacts", None)
        active = None if contacts is None else int(np.count_nonzero(np.asarray(contacts.impulse) > 0))
        self.bar.update(step, getattr(result, "t", None), active)
        if step >= n_steps:
            self.bar.finish()
            self.bar = None
        for callback in self.others:
            callback(step, n_steps, result)
