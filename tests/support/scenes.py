"""The scenes that ship with granular (``granular/scenes/``), listed and loaded by
`granular.scenes` as the command does."""

from __future__ import annotations

from granular import scenes

SCENES = scenes.PACKAGED_SCENES


def load_scene(name: str):
    """The module ``granular/scenes/<name>.py``, freshly executed (`granular.scenes.load_scene`)."""
    return scenes.load_scene(SCENES / f"{name}.py")


def repository_scenes() -> list[str]:
    """The names of the scenes in ``granular/scenes/`` (`granular.scenes.scenes_in`)."""
    return sorted(scenes.scenes_in(SCENES))


def tiny_scene(duration: float) -> str:
    """The source of a test scene: eight spheres settle on the floor of a box, run for
    ``duration`` (s) with dt = 1 ms, a frame every 3 steps."""
    return f'''\
"""Tiny: eight spheres settle on the floor of a box (a test scene)."""
import numpy as np

import granular as gr

DEFAULTS = dict(duration={duration!r}, dt=1e-3, record_every=3)


def build():
    grid = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
    positions = np.array([0.0205, 0.0205, 0.0105]) + grid * 0.0205
    return gr.SphereWorld(positions, 0.01, density=2500.0,
                          walls=[gr.Box([0, 0, 0], [0.062, 0.062, 0.2], open_top=True)])
'''
