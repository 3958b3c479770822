"""What a renderer draws, as plain data: no graphics library here.

A system's ``describe()`` dict says how to draw it. ``{"kind": "spheres"}`` is
drawn from the trajectory's positions and radii; any other system names an
*adapter*, a pure-numpy function ``adapter(description, q) -> Shapes`` given as
``"module:function"`` under the key ``"adapter"``, e.g.::

    {"kind": "double_pendulum", "adapter": "granular.systems.examples:pendulum_shapes",
     "lengths": [1.0, 1.0], "wall_x": 1.2}

The renderer (`granular.render`) turns `Shapes` into pyvista meshes; the physics
never imports it. Units are the system's (m for every example).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Shapes:
    """Primitives of one frame, all in 3D world coordinates.

    spheres : (k, 3) centres and (k,) radii.
    segments : (s, 2, 3) end points and (s,) tube radii (links, rods, beams).
    planes : list of (point (3,), normal (3,), size) for walls and obstacles,
        ``size`` the half-width drawn.
    scalars : (k,) optional per-sphere values for colouring.
    """

    sphere_centres: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    sphere_radii: np.ndarray = field(default_factory=lambda: np.zeros(0))
    segments: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3)))
    segment_radii: np.ndarray = field(default_factory=lambda: np.zeros(0))
    planes: list = field(default_factory=list)
    scalars: np.ndarray | None = None


def shapes_of(description: dict, q: np.ndarray, radii: np.ndarray | None = None) -> Shapes:
    """The shapes of one frame of a system described by ``description``.

    ``q`` is the frame's positions ((N, 3) for spheres, (d,) otherwise).
    """
    if description.get("kind") == "spheres":
        return Shapes(sphere_centres=np.asarray(q).reshape(-1, 3), sphere_radii=np.asarray(radii))
    adapter = description.get("adapter")
    if not adapter:
        raise ValueError(f"system kind {description.get('kind')!r} has no drawing adapter")
    module_name, _, function_name = adapter.partition(":")
    function = getattr(importlib.import_module(module_name), function_name)
    return function(description, np.asarray(q))
