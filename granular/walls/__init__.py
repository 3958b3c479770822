"""Walls: planes, boxes, cylinders, rectangular panels and cones, still or moving; periodic boxes.

Each wall is a `granular.walls.surfaces.Surface` (its contact rows, description, names and
drawing), registered by the ``"type"`` of its description; triangle meshes are in
`granular.walls.meshes`.

Conventions (those of the whole package): a plane through ``point`` with unit ``normal``
admits the spheres on the side the normal points to; the gap of sphere ``i`` is
``D = normal . (q_i - point) - r_i`` (m), admissible when ``D >= 0``.
A `Box` is the set of planes of its faces, normals pointing inwards. A `Cylinder`
holds spheres inside it: its side, and its end caps when it is finite and capped.

Moving walls. A wall may translate with a prescribed velocity ``v(t)`` (m/s, a
constant (3,) vector or a callable ``t -> (3,)``), and a cylinder (or a plane, about
its normal) may turn at a constant angular speed ``omega`` (rad/s). The wall's
geometry given is its position at ``t = 0``; at time ``t`` it is shifted by the
displacement ``d(t) = integral_0^t v(s) ds`` (exact for a constant velocity, by
adaptive Gauss-Kronrod quadrature to 1e-12 relative or 1e-15 m otherwise). The gap of a moving wall is then a
function of time and position, ``D(t, q)``, the case Maury's scheme treats directly
(Maury, "A time-stepping scheme for inelastic collisions", Numerische Mathematik
2006): the step from ``t_n`` to ``t_{n+1} = t_n + h`` uses the row

    D(t_{n+1}, q^n) + h G(q^n) u >= 0.

Derivation, for a plane (``D(t, q) = n . (q - p(t)) - r``, ``p(t) = p_0 + d(t)``)::

    D(t_{n+1}, q^n) = n . (q^n - p(t_n)) - r - n . (p(t_{n+1}) - p(t_n))
                    = D(t_n, q^n) - h n . w_n,   w_n = (d(t_{n+1}) - d(t_n)) / h,

so the row reads ``D(t_n, q^n) + h G u >= h n . w_n``: with ``G u = n . u`` the
*relative* normal velocity ``n . (u - w_n)`` must make up for the gap, and a sphere
touching the wall (``D = 0``) leaves with ``n . u >= n . w_n``. ``w_n`` is the wall's
mean velocity over the step, so ``q^{n+1} = q^n + h u`` satisfies the true
constraint at ``t_{n+1}``, ``D(t_{n+1}, q^{n+1}) >= 0``, exactly for a plane (the
gap is affine in ``q`` and ``t``). A turning cylinder's side does not move along its
normal (its surface maps onto itself), so its rows are those of a still wall.

Friction sees the wall's material velocity at the contact point ``x_c = q_i - r_i
n``, ``w(x_c) = w_n + omega a x (x_c - c(t_{n+1}))`` (``a`` the axis, ``c`` a point of
it): the sliding velocity of a wall contact is ``T_k u - t_a . w(x_c)``
(`granular.constraints.ConstraintSet.tangential_offset`), so a shear wall or a
turning drum drags the spheres.

Restitution. Moreau's impact law acts on the relative normal velocity
``G_k u - n . w(x_c)`` (`granular.constraints.ConstraintSet.normal_offset`): a
sphere that hits a wall moving at ``w_n`` along its normal leaves it at ``-e`` times
its approach speed relative to the wall (a ball on a vibrating plate).
"""

from __future__ import annotations

from .surfaces import first_surface, surface_count, surface_names
from .common import Translation
from .cylinders import Cone, Cylinder, CylinderSide
from .periodic import PeriodicBox
from .planes import Box, Panel, Plane, Polygon

__all__ = [
    "Box",
    "Cone",
    "Cylinder",
    "CylinderSide",
    "Panel",
    "PeriodicBox",
    "Plane",
    "Polygon",
    "Translation",
    "first_surface",
    "surface_count",
    "surface_names",
]
