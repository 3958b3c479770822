"""The drawing adapters of the built-in systems: ``adapter(description, q) -> Shapes``.

Each turns a frame's coordinates ``q`` of a system of `granular.systems` into the
primitives of `granular.drawing.shapes` (m, drawn in the x-z plane, z up), from the
``drawing`` dict the system's builder stored in its description. They are pure numpy;
`granular.drawing.adapters` registers them under the kinds' names. The physics modules
never import this one, so drawing code and physics stay apart.
"""

from __future__ import annotations

import numpy as np

from .shapes import Shapes
from ..systems.beam import interpolate
from ..systems.frictional import rod_ends


def ball_shapes(description: dict, q: np.ndarray) -> Shapes:
    """The ball as a sphere at ``(0, 0, z)`` above the floor plane z = 0."""
    radius = float(description["radius"])
    return Shapes(
        sphere_centres=np.array([[0.0, 0.0, float(q[0])]]),
        sphere_radii=np.array([radius]),
        planes=[(np.zeros(3), np.array([0.0, 0.0, 1.0]), 5.0 * radius)],
    )


def oscillator_shapes(description: dict, q: np.ndarray) -> Shapes:
    """The mass as a sphere on the x axis, its rail as a segment, the stop as a plane.

    The coordinate is the sphere's contact point with the stop, so the centre is
    drawn at ``x - radius``.
    """
    radius, stop = float(description["radius"]), float(description["stop"])
    x = float(q[0])
    rail = np.array([[[x - 10.0 * radius, 0.0, 0.0], [stop, 0.0, 0.0]]])
    return Shapes(
        sphere_centres=np.array([[x - radius, 0.0, 0.0]]),
        sphere_radii=np.array([radius]),
        segments=rail,
        segment_radii=np.array([0.1 * radius]),
        planes=[(np.array([stop, 0.0, 0.0]), np.array([-1.0, 0.0, 0.0]), 3.0 * radius)],
    )


def pendulum_shapes(description: dict, q: np.ndarray) -> Shapes:
    """Two links as segments, bobs as spheres, the wall as a plane facing the pendulum."""
    l1, l2 = description["lengths"]
    radius = float(description["bob_radius"])
    elbow = np.array([l1 * np.sin(q[0]), 0.0, -l1 * np.cos(q[0])])
    tip = elbow + np.array([l2 * np.sin(q[1]), 0.0, -l2 * np.cos(q[1])])
    pivot = np.zeros(3)
    return Shapes(
        sphere_centres=np.array([elbow, tip]),
        sphere_radii=np.full(2, radius),
        segments=np.array([[pivot, elbow], [elbow, tip]]),
        segment_radii=np.full(2, 0.2 * radius),
        planes=[
            (
                np.array([float(description["wall_x"]), 0.0, -0.5 * (l1 + l2)]),
                np.array([-1.0, 0.0, 0.0]),
                0.6 * (l1 + l2),
            )
        ],
    )


def block_shapes(description: dict, q: np.ndarray) -> Shapes:
    """The block as a small sphere resting on the incline plane."""
    theta, radius = float(description["theta"]), 0.05
    normal = np.array([-np.sin(theta), 0.0, np.cos(theta)])
    centre = np.array([q[0], 0.0, q[1]]) + radius * normal
    return Shapes(sphere_centres=centre[None, :], sphere_radii=np.array([radius]), planes=[(np.zeros(3), normal, 1.0)])


def rod_shapes(description: dict, q: np.ndarray) -> Shapes:
    """The rod as a segment above the floor plane."""
    a, b = rod_ends(q, float(description["half_length"]))
    segment = np.array([[[a[0], 0.0, a[1]], [b[0], 0.0, b[1]]]])
    floor = (np.array([q[0], 0.0, 0.0]), np.array([0.0, 0.0, 1.0]), 2.0 * float(description["half_length"]))
    return Shapes(segments=segment, segment_radii=np.array([0.02]), planes=[floor])


def beam_shapes(description: dict, q: np.ndarray) -> Shapes:
    """The beam as a chain of segments in the x-z plane and the obstacles as planes.

    Drawn is ``u = u~ - h phi``, the displacement relative to the lifted support:
    the adapter is given no time, so the support's motion ``phi(t)`` is not drawn.
    At the tip ``u = u~`` (``h(L) = 0``), so the contact with the obstacles is exact.
    """
    length = float(description["length"])
    x, u = interpolate(q, length)
    points = np.stack([x, np.zeros_like(x), u], axis=1)
    segments = np.stack([points[:-1], points[1:]], axis=1)
    radius = float(description.get("radius", 0.005))
    planes = []
    for bound, normal in ((description["lower"], 1.0), (description["upper"], -1.0)):
        if np.isfinite(bound):
            planes.append((np.array([length, 0.0, float(bound)]), np.array([0.0, 0.0, normal]), 0.05 * length))
    return Shapes(segments=segments, segment_radii=np.full(len(segments), radius), planes=planes)
