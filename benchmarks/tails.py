"""Tail latency of a run: the largest step and the 99th percentile beside the median.

Medians hide the step that freezes a run; every benchmark prints this line too.
"""

from __future__ import annotations

import numpy as np


def tail_line(seconds, first_step: int = 0) -> str:
    """``median, 99th percentile and largest step (with its index)`` of per-step
    wall times ``seconds`` (s), the first of which is step ``first_step``."""
    seconds = np.asarray(seconds, dtype=float)
    if seconds.size == 0:
        return "no steps"
    largest = int(np.argmax(seconds))
    return (
        f"median {np.median(seconds):.4f} s, p99 {np.percentile(seconds, 99):.4f} s, "
        f"largest {seconds[largest]:.4f} s (step {first_step + largest}, "
        f"{seconds[largest] / np.median(seconds):.1f}x the median)"
    )
