"""Size of ``granular view``'s page for 10,000 spheres x 100 frames (the 20 MB budget).

A synthetic run (no simulation): 10,000 spheres of radius 5 mm in a 0.5 m box,
moving randomly, 3 contacts a sphere per frame (6 segments of the force network
a sphere: each pair is drawn from both centres), 100 frames. Prints the frames
kept, the size of the file written and the time to write it.

    .venv/bin/python benchmarks/viewer_size.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

import granular as gr
from granular.constraints import Contacts
from granular.render import viewer

N, FRAMES, RADIUS = 10_000, 100, 0.005


def synthetic_run() -> gr.Trajectory:
    rng = np.random.default_rng(0)
    start = rng.uniform(0.0, 0.5, (N, 3))
    drift = rng.normal(0.0, 0.01, (FRAMES, N, 3)).cumsum(axis=0)
    positions = start + drift
    velocities = np.gradient(drift, axis=0) / 0.01
    contacts = []
    for _ in range(FRAMES):
        i = rng.integers(0, N, 3 * N)
        j = (i + 1 + rng.integers(0, N - 1, 3 * N)) % N
        normal = rng.normal(size=(3 * N, 3))
        normal /= np.linalg.norm(normal, axis=1)[:, None]
        contacts.append(Contacts(i, j, np.full(3 * N, -1), np.zeros(3 * N), normal, rng.exponential(1e-3, 3 * N)))
    zeros = np.zeros(FRAMES)
    return gr.Trajectory(
        t=np.arange(FRAMES) * 0.01,
        positions=positions,
        velocities=velocities,
        radii=np.full((FRAMES, N), RADIUS),
        kinetic_energy=zeros,
        potential_energy=zeros,
        dissipated_energy=zeros,
        contacts=contacts,
        system={
            "kind": "spheres",
            "walls": [{"type": "box", "lower": [0, 0, 0], "upper": [0.5, 0.5, 0.5], "open_top": True}],
            "gravity": [0, 0, -9.81],
        },
        meta={"dt": 1e-3, "masses": [1e-3] * N},
    )


if __name__ == "__main__":
    run = synthetic_run()
    with tempfile.TemporaryDirectory() as directory:
        for forces in (True, False):
            start = time.perf_counter()
            page, frames = viewer.fitted_page(run, forces=forces)
            path = Path(directory) / "run.html"
            path.write_text(page, encoding="utf-8")
            seconds = time.perf_counter() - start
            print(
                f"{N} spheres x {FRAMES} frames, force network {'on' if forces else 'off'}: {len(frames)} frames "
                f"kept, {path.stat().st_size / 1e6:.2f} MB (budget {viewer.DEFAULT_MAX_BYTES / 1e6:g} MB) "
                f"in {seconds:.1f} s"
            )
