"""Beverloo's law from the hopper_discharge scene: a sweep over orifice diameters.

Runs the silo of ``granular/scenes/hopper_discharge.py`` (frictional turning spheres
of diameter d = 4 mm, fed from an inlet) with orifices of 4, 5, 6 and 7 sphere
diameters, measures each steady mass flow rate W (kg/s) and the bulk density
rho_b (kg/m^3) (the scene's ``summary``), and fits Beverloo, Leniger and van de
Velde's law (*The flow of granular solids through orifices*, Chemical Engineering
Science 15, 1961)::

    W = C rho_b sqrt(g) (D - k d)^(5/2)

for C and k by least squares (scipy.optimize.curve_fit), to set beside the
published range C = 0.55-0.65, k = 1.3-2.9. Slow (minutes per orifice on one
core): never part of the tests.

    python benchmarks/beverloo.py [duration_s] [orifice ...]
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np
from scipy.optimize import curve_fit

import granular as gr
from granular.scenes import load_scene, resolve_scene

G = 9.81


def measure(scene, orifice: float, duration: float) -> dict:
    world = scene.build(orifice=orifice)
    simulation = gr.Simulation(world, dt=scene.DEFAULTS["dt"])
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        trajectory = simulation.run(duration=duration, record_every=scene.DEFAULTS["record_every"])
    figures = scene.summary(trajectory)
    figures.update(orifice=orifice, seconds=time.perf_counter() - start, steps=simulation.steps_taken)
    return figures


def fit(rows: list, d: float) -> tuple[float, float]:
    """``(C, k)`` of Beverloo's law through the measured ``(D, W, rho_b)``."""
    D = np.array([row["orifice"] * d for row in rows])
    scaled = np.array([row["mass_flow_rate"] / (row["bulk_density"] * np.sqrt(G)) for row in rows])

    def law(D, C, k):
        return C * np.clip(D - k * d, 0.0, None) ** 2.5

    (C, k), _ = curve_fit(law, D, scaled, p0=(0.58, 1.5))
    return float(C), float(k)


def main(argv: list[str]) -> None:
    duration = float(argv[0]) if argv else 0.6
    orifices = [float(a) for a in argv[1:]] or [4.0, 5.0, 6.0, 7.0]
    scene = load_scene(resolve_scene("hopper_discharge"))
    d = 2.0 * scene.PARAMETERS["radius"]
    rows = []
    for orifice in orifices:
        row = measure(scene, orifice, duration)
        rows.append(row)
        print(json.dumps(row), flush=True)
    C, k = fit(rows, d)
    print(f"Beverloo fit over D/d = {orifices}: C = {C:.3f}, k = {k:.2f} (published: C = 0.55-0.65, k = 1.3-2.9)")


if __name__ == "__main__":
    main(sys.argv[1:])
