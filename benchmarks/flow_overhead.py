"""What inlets and outlets cost a step: the exchange (outlets, then inlets placing
spheres without overlaps, then the scheme's state carried over) against the whole
step, on the hopper_discharge silo (frictional turning spheres fed from an inlet).

    python benchmarks/flow_overhead.py [steps]

Runs ``steps`` steps (default 400) after 200 to let the flow start, timing the
world's `exchange` with the scheme's `exchanged` (the state carried over), and
`Simulation.step`, which includes both; prints the medians (ms) and the exchange's
share. Never asserted in a test.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

import granular as gr
from granular.scenes import load_scene, resolve_scene


def main(argv: list[str]) -> None:
    steps = int(argv[0]) if argv else 400
    scene = load_scene(resolve_scene("hopper_discharge"))
    simulation = gr.Simulation(scene.build(), dt=scene.DEFAULTS["dt"])
    exchange_times, step_times = [], []
    world, scheme = simulation.system, simulation.scheme
    exchange, exchanged = world.exchange, scheme.exchanged

    def timed(function):
        def call(*args):
            start = time.perf_counter()
            value = function(*args)
            exchange_times[-1] += time.perf_counter() - start
            return value

        return call

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(200):
            simulation.step()
        world.exchange, scheme.exchanged = timed(exchange), timed(exchanged)
        for _ in range(steps):
            exchange_times.append(0.0)
            start = time.perf_counter()
            simulation.step()
            step_times.append(time.perf_counter() - start)
    cost, step = 1e3 * np.median(exchange_times), 1e3 * np.median(step_times)
    print(
        f"{simulation.system.n} spheres at the end, {int(simulation.system.flow.inserted.sum())} inserted, "
        f"{int(simulation.system.flow.removed.sum())} removed: exchange {cost:.2f} ms of a "
        f"{step:.1f} ms step ({100 * cost / step:.1f} %), medians over {steps} steps"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
