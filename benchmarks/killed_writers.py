"""How often a streamed run file killed with SIGKILL cannot be read.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/killed_writers.py [--kills 200] [--keep DIR]

Each trial starts a child process that streams a small run (eight spheres dropped in a
box, ``run(out=...)``, a frame every two steps, flushed after each) and sends it SIGKILL
at a random moment within 2 ms after its 12th frame is on disk. The parent then reads
the file twice: with HDF5 alone (every dataset, as ``h5py.File(path, "r")`` gives it),
and with `granular.app.runs.load_run` (which reads a file whose superblock states a
stale end of allocation through `granular.records.stated_end`). It prints the counts of
files each way could not read, and their errors; ``--keep DIR`` copies those files there.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from granular.records.streaming import frames_written

ROOT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent("""\
    import sys
    import numpy as np
    import granular as gr

    grid = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
    world = gr.SphereWorld(np.array([0.0205, 0.0205, 0.0305]) + grid * 0.0205, 0.01, density=2500.0,
                           restitution=0.3, walls=[gr.Box([0, 0, 0], [0.062, 0.062, 0.2], open_top=True)])
    gr.Simulation(world, dt=1e-3).run(duration=1000.0, record_every=2, out=sys.argv[1],
                                      checkpoint_every=0.01, read_back=False)
    """)


def killed_file(path: Path, frames: int, rng: random.Random) -> None:
    """Stream to ``path`` in a child and kill it with SIGKILL just after ``frames`` frames."""
    environment = dict(os.environ, PYTHONPATH=str(ROOT), HDF5_USE_FILE_LOCKING="FALSE")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while frames_written(path) < frames:
        if child.poll() is not None:
            raise RuntimeError(f"the streaming child ended with status {child.returncode}")
        time.sleep(0.005)
    time.sleep(rng.random() * 0.002)
    child.send_signal(signal.SIGKILL)
    child.wait()


def hdf5_error(path: Path) -> str | None:
    """The error of reading every dataset of ``path`` with h5py alone, or None."""
    import h5py

    try:
        with h5py.File(path, "r") as h5:
            h5.visititems(lambda name, item: item[()] if isinstance(item, h5py.Dataset) else None)
    except Exception as error:  # a damaged file fails in many ways inside HDF5
        return f"{type(error).__name__}: {' '.join(str(error).split())[:120]}"
    return None


def load_error(path: Path) -> str | None:
    """The error of `load_run` on ``path``, or None."""
    from granular.app.runs import load_run
    from granular.errors import GranularError

    try:
        load_run(path)
    except GranularError as error:
        return f"{type(error).__name__}: {' '.join(str(error).split())[:160]}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="copy the files one way cannot read here")
    arguments = parser.parse_args()
    rng = random.Random(arguments.seed)
    failed = {"HDF5 alone": 0, "load_run": 0}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for trial in range(arguments.kills):
            path = Path(folder) / f"killed_{trial}.h5"
            killed_file(path, arguments.frames, rng)
            errors = {"HDF5 alone": hdf5_error(path), "load_run": load_error(path)}
            for way, error in errors.items():
                if error is not None:
                    failed[way] += 1
                    print(f"kill {trial}, {way}: {error}", flush=True)
            if arguments.keep and any(errors.values()):
                arguments.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, arguments.keep / path.name)
            path.unlink()
    print(
        f"{arguments.kills} kills in {time.perf_counter() - start:.0f} s; files not read: "
        + ", ".join(f"{way} {count}" for way, count in failed.items())
    )


if __name__ == "__main__":
    main()
