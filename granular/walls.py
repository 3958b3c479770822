"""Walls: planes, boxes, cylinders, rectangular panels and cones, still or moving; periodic boxes.

Each wall is a `granular.surfaces.Surface` (its contact rows, description, names and
drawing), registered by the ``"type"`` of its description; triangle meshes are in
`granular.meshes`.

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

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from . import wall_drawing as drawing
from .errors import InvalidInputError
from .surfaces import (ContactRows, RecordedVelocity, WallShape, first_surface, register_wall, surface_count,
                       surface_names)

__all__ = ["Box", "Cone", "Cylinder", "CylinderSide", "Panel", "PeriodicBox", "Plane", "Translation",
           "first_surface", "surface_count", "surface_names"]


def _vector3(value, name: str) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.shape != (3,):
        raise InvalidInputError(f"{name} must have shape (3,), got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InvalidInputError(f"{name} must be finite, got {array}")
    return array


def _unit_vector(value, name: str) -> np.ndarray:
    """``value`` normalised; a vector already of unit length to rounding (4 ulps) is
    kept as it is, so that a normal read back from a run file is the one written."""
    vector = _vector3(value, name)
    length = float(np.linalg.norm(vector))
    if length == 0.0:
        raise InvalidInputError(f"{name} must be non-zero")
    if abs(length - 1.0) <= 4.0 * np.finfo(float).eps:
        return vector
    return vector / length


def _restitution(value, name: str) -> float | None:
    if value is None:
        return None
    e = float(value)
    if not 0.0 <= e <= 1.0:
        raise InvalidInputError(f"{name} restitution must lie in [0, 1], got {e}")
    return e


def _tangential_restitution(value, name: str) -> float | None:
    if value is None:
        return None
    try:
        et = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} tangential_restitution must be a number in [0, 1], got {value!r}") from None
    if not 0.0 <= et <= 1.0:
        raise InvalidInputError(f"{name} tangential_restitution must lie in [0, 1], got {et}")
    return et


def _check_rolling(value, name: str) -> None:
    if value is not None and not (np.isfinite(value) and value >= 0.0):
        raise InvalidInputError(f"{name} rolling_friction must be finite and >= 0, got {value}")


def _check_friction(value, name: str) -> None:
    if value is not None and not (np.isfinite(value) and value >= 0.0):
        raise InvalidInputError(f"{name} friction must be finite and >= 0, got {value}")


def _angular_speed(value, name: str) -> float:
    try:
        omega = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} angular_velocity must be a number (rad/s), got {value!r}") from None
    if not np.isfinite(omega):
        raise InvalidInputError(f"{name} angular_velocity must be finite, got {omega}")
    return omega


#: Absolute tolerance (m) of the quadrature of a velocity function into a displacement,
#: with a relative one of 1e-12: far below the overlap tolerance (1e-9 r).
_DISPLACEMENT_TOLERANCE = 1e-15


class Translation:
    """The prescribed translation of a wall: velocity ``v(t)`` (m/s) and displacement
    ``d(t) = integral_0^t v`` (m).

    Parameters
    ----------
    velocity : None, (3,) array or callable ``t -> (3,)``
        None: a still wall. A constant: ``d(t) = v t`` exactly. A callable: checked
        at every evaluation (shape (3,), finite: `InvalidInputError` naming the time)
        and integrated by `scipy.integrate.quad_vec`, from the last time asked for
        (the steps of a run go forward, so each step integrates over itself only).
    name : str
        The wall named in error messages.
    """

    def __init__(self, velocity, name: str):
        self.name = name
        self.function = None
        self.constant = None
        self._last = (0.0, np.zeros(3))      # (t, d(t)) of the latest evaluation
        if velocity is None:
            self.constant = np.zeros(3)
        elif callable(velocity):
            self.function = velocity
            self.velocity(0.0)               # a wrong shape or a NaN is refused now
        else:
            self.constant = _vector3(velocity, f"{name} velocity")

    @property
    def moves(self) -> bool:
        return self.function is not None or bool(np.any(self.constant != 0.0))

    def velocity(self, t: float) -> np.ndarray:
        """``v(t)`` (3,) (m/s)."""
        if self.function is None:
            return self.constant
        try:
            value = np.asarray(self.function(t), dtype=float)
        except (TypeError, ValueError) as error:
            raise InvalidInputError(f"{self.name} velocity function failed at t = {t:.6g} s: {error}") from None
        if value.shape != (3,):
            raise InvalidInputError(f"{self.name} velocity function returned shape {value.shape} at "
                                    f"t = {t:.6g} s, expected (3,) (m/s)")
        if not np.all(np.isfinite(value)):
            raise InvalidInputError(f"{self.name} velocity function returned a non-finite value {value.tolist()} "
                                    f"at t = {t:.6g} s")
        return value

    def _integral(self, a: float, b: float) -> np.ndarray:
        if a == b:
            return np.zeros(3)
        from scipy.integrate import quad_vec

        # epsabs in metres: a velocity that vanishes over [a, b] has no relative error to meet.
        return np.asarray(quad_vec(self.velocity, a, b, epsabs=_DISPLACEMENT_TOLERANCE, epsrel=1e-12)[0],
                          dtype=float)

    def displacement(self, t: float) -> np.ndarray:
        """``d(t)`` (3,) (m), the shift of the wall from its position at ``t = 0``."""
        t = float(t)
        if self.function is None:
            return self.constant * t
        start, value = self._last
        if t < start:
            start, value = 0.0, np.zeros(3)
        value = value + self._integral(start, t)
        self._last = (t, value)
        return value

    def mean_velocity(self, t_start: float, t_end: float) -> np.ndarray:
        """``(d(t_end) - d(t_start)) / (t_end - t_start)`` (3,) (m/s)."""
        if self.function is None:
            return self.constant
        return self._integral(t_start, t_end) / (t_end - t_start)

    def describe(self):
        """The velocity for a run file: a list for a constant, "function" for a callable."""
        return "function" if self.function is not None else self.constant.tolist()


def _translation(velocity, name: str) -> Translation:
    return velocity if isinstance(velocity, Translation) else Translation(velocity, name)


def _law(wall, name: str) -> None:
    """Check and normalise the contact law of a frozen wall dataclass in place."""
    object.__setattr__(wall, "restitution", _restitution(wall.restitution, name))
    object.__setattr__(wall, "tangential_restitution", _tangential_restitution(wall.tangential_restitution, name))
    _check_friction(wall.friction, name)
    _check_rolling(wall.rolling_friction, name)


def _set_translation(wall, name: str) -> Translation:
    """Give a frozen wall dataclass its `Translation` (``_translation``); a constant
    velocity is stored as an array (None for a still wall)."""
    translation = _translation(wall.velocity, name)
    object.__setattr__(wall, "_translation", translation)
    if translation.constant is not None and not isinstance(wall.velocity, Translation):
        object.__setattr__(wall, "velocity", None if wall.velocity is None else translation.constant)
    return translation


def _described_velocity(description: dict):
    """The velocity of a wall description: None, a constant (3,) list, or, for
    "function", the stand-in `granular.surfaces.RecordedVelocity`."""
    velocity = description.get("velocity")
    if velocity == "function":
        return RecordedVelocity()
    return velocity


def _near_rows(gaps: np.ndarray, normals: np.ndarray, margin: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(spheres, gaps, normals (k, 3))`` of the spheres whose gap is at most ``margin``."""
    near = np.flatnonzero(gaps <= margin)
    return near.astype(np.int64), gaps[near], np.array(normals[near], dtype=float).reshape(-1, 3)


def _contact_points(positions, radii, spheres, normals) -> np.ndarray:
    """Contact points ``q_i - r_i n`` (k, 3) (m) of wall rows."""
    return positions[spheres] - radii[spheres, None] * normals


def _motion_velocity(translation, angular_velocity, axis, centre, points, t_next, h) -> np.ndarray:
    """Velocity (k, 3) (m/s) of a wall's material at ``points`` over the step
    ``(t_next - h, t_next)``: the mean translation plus ``omega axis x (x - c(t_next))``
    (``c`` the point ``centre`` of the axis at ``t = 0``, moved with the wall)."""
    velocity = np.array(np.broadcast_to(translation.mean_velocity(t_next - h, t_next), points.shape))
    if angular_velocity != 0.0:
        moved = centre + translation.displacement(t_next)
        velocity += np.cross(angular_velocity * axis, points - moved)
    return velocity


def _names_of_normal(normal: np.ndarray) -> str:
    return ", ".join(f"{v + 0.0:.3g}" for v in normal)   # + 0.0: never "-0"


class _Translating:
    """What a wall that may translate shares: its `Translation`, set in ``_translation``
    by `_set_translation` when it is built."""

    @property
    def moves(self) -> bool:
        """Whether the wall moves."""
        return self._translation.moves

    def displacement(self, t: float) -> np.ndarray:
        """Shift (3,) (m) of the wall at ``t`` from its position at ``t = 0``."""
        return self._translation.displacement(t)


class _Turning(_Translating):
    """What a wall that may also turn about its own axis (a plane's normal) shares:
    ``angular_velocity`` (rad/s)."""

    @property
    def moves(self) -> bool:
        """Whether the wall translates or turns."""
        return self._translation.moves or self.angular_velocity != 0.0

    @property
    def spins_in_place(self) -> bool:
        """Whether it turns about its axis: its surface slides over itself, so only
        friction feels it."""
        return self.angular_velocity != 0.0


@register_wall
@dataclass(frozen=True)
class Plane(_Turning):
    """An infinite plane wall, still or moving.

    Parameters
    ----------
    point : (3,) array
        A point of the plane (m), at ``t = 0`` for a moving plane.
    normal : (3,) array
        Normal pointing to the admissible half-space; normalised here.
    restitution : float or None
        Coefficient of restitution of sphere-plane impacts; ``None`` uses the
        sphere's coefficient. Rows of a plane moving along its normal use 0 (module
        docstring).
    friction : float or None
        Coulomb coefficient of sphere-plane contacts; ``None`` uses the world's.
    rolling_friction : float or None
        Rolling resistance coefficient ``mu_r`` (dimensionless) of sphere-plane
        contacts: torque impulse at most ``mu_r r lambda_N``; ``None`` uses the world's.
        It resists the sphere's own rolling, as on a still plane.
    velocity : None, (3,) array or callable ``t -> (3,)``
        Prescribed translation velocity (m/s): a piston (along the normal), a shear
        wall (along the plane). ``None``: the plane stays put.
    angular_velocity : float
        Spin (rad/s) about the normal through ``point`` (right-handed): a turntable,
        or the end cap of a turning `Cylinder`. It only acts through friction.
    tangential_restitution : float or None
        Tangential coefficient of restitution ``et`` in [0, 1] of sphere-plane
        impacts (`granular.contact.impact`: a contact point that sticks in an impact leaves
        with ``-et`` times its tangential velocity relative to the plane); ``None``
        uses the world's.
    """

    kind: ClassVar[str] = "plane"
    surface_count: ClassVar[int] = 1

    point: np.ndarray
    normal: np.ndarray
    restitution: float | None = None
    friction: float | None = None
    rolling_friction: float | None = None
    velocity: object = None
    angular_velocity: float = 0.0
    tangential_restitution: float | None = None

    def __post_init__(self):
        name = type(self).__name__
        object.__setattr__(self, "point", _vector3(self.point, f"{name} point"))
        object.__setattr__(self, "normal", _unit_vector(self.normal, f"{name} normal"))
        _law(self, name)
        object.__setattr__(self, "angular_velocity", _angular_speed(self.angular_velocity, name))
        _set_translation(self, name)

    def surfaces(self) -> list["Plane"]:
        """The contact surfaces of this wall (one per ``Contacts.wall`` index)."""
        return [self]

    planes = surfaces

    def at(self, t: float) -> "Plane":
        """The still plane where this one is at time ``t`` (itself if it never moves)."""
        if not self.moves:
            return self
        return replace(self, point=self.point + self.displacement(t), velocity=None, angular_velocity=0.0)

    def gaps(self, positions: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gaps (N,) (m) of spheres at ``positions`` (N, 3) with ``radii`` (N,), and the
        unit normals (N, 3) into the admissible side (a read-only broadcast)."""
        gaps = (positions - self.point) @ self.normal - radii
        return gaps, np.broadcast_to(self.normal, positions.shape)

    def rows(self, positions, radii, margin, t, h=None) -> ContactRows:
        """`granular.surfaces.ContactSurface.rows`: the plane where it is at ``t``."""
        spheres, gaps, normals = _near_rows(*self.at(t).gaps(positions, radii), margin)
        velocities = None
        if h is not None and self.moves:
            velocities = self.surface_velocity(_contact_points(positions, radii, spheres, normals), t, h)
        return ContactRows(spheres, gaps, normals, velocities)

    def surface_velocity(self, points: np.ndarray, t_next: float, h: float) -> np.ndarray:
        """Velocity (k, 3) (m/s) of the wall's material at ``points`` (k, 3) over the
        step ``(t_next - h, t_next)``: mean translation plus the spin about the normal
        through the point's position at ``t_next``."""
        return _motion_velocity(self._translation, self.angular_velocity, self.normal, self.point, points, t_next, h)

    def label(self) -> str:
        return f"plane through {self.point.tolist()} with normal {self.normal.tolist()}"

    def describe(self) -> dict:
        description = {"type": "plane", "point": self.point.tolist(), "normal": self.normal.tolist()}
        return _with_motion(description, self._translation, self.angular_velocity)

    @classmethod
    def from_description(cls, description: dict) -> "Plane":
        return cls(description["point"], description["normal"], velocity=_described_velocity(description),
                   angular_velocity=description.get("angular_velocity", 0.0))

    def surface_names(self, start: int) -> list[str]:
        """"floor" for a still plane facing +z, else its index and normal."""
        moving = " moving" if self._translation.moves else ""
        if np.allclose(self.normal, (0, 0, 1)) and not moving:
            return ["floor"]
        return [f"plane {start}{moving} (normal {_names_of_normal(self.normal)})"]

    def shape(self, bounds: np.ndarray) -> WallShape:
        """The rectangle of the plane that covers the projection of ``bounds`` (2, 3)."""
        patch = drawing.plane_patch(self.point, self.normal, bounds)
        return WallShape([(patch, 0, self.normal)], drawing.polygon_edges(patch))

    def bounding_box(self) -> None:
        return None

    def translated(self, shift) -> "Plane":
        return replace(self, point=self.point + np.asarray(shift, float))


def _with_motion(description: dict, translation: Translation, angular_velocity: float = 0.0) -> dict:
    """A wall's description with its motion, when it moves (JSON: a callable velocity
    is written "function"; the positions of each frame are in the run file)."""
    if translation.moves:
        description["velocity"] = translation.describe()
    if angular_velocity != 0.0:
        description["angular_velocity"] = float(angular_velocity)
    return description


@register_wall
@dataclass(frozen=True)
class Box(_Translating):
    """An axis-aligned box container: spheres stay inside ``[lower, upper]``.

    Parameters
    ----------
    lower, upper : (3,) arrays
        Opposite corners (m), ``lower < upper`` componentwise, at ``t = 0``.
    open_top : bool
        Leave out the face ``z = upper[2]`` (a container open to the sky).
    restitution, friction, rolling_friction : float or None
        As for `Plane`, shared by the faces.
    velocity : None, (3,) array or callable ``t -> (3,)``
        Prescribed translation of the whole box (m/s), as for `Plane`: a shaken box.
    tangential_restitution : float or None
        As for `Plane`, shared by the faces.
    """

    kind: ClassVar[str] = "box"

    lower: np.ndarray
    upper: np.ndarray
    open_top: bool = False
    restitution: float | None = None
    friction: float | None = None
    rolling_friction: float | None = None
    velocity: object = None
    tangential_restitution: float | None = None

    def __post_init__(self):
        lower = _vector3(self.lower, "Box lower")
        upper = _vector3(self.upper, "Box upper")
        if not np.all(upper > lower):
            raise InvalidInputError(f"Box needs lower < upper componentwise, got {lower} and {upper}")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "open_top", bool(self.open_top))
        _law(self, "Box")
        _set_translation(self, "Box")

    def surfaces(self) -> list[Plane]:
        """The faces, per axis the lower one then the upper one (not the open top);
        a moving box's faces share its translation."""
        motion = self._translation if self._translation.moves else None
        faces = []
        for axis in range(3):
            normal = np.zeros(3)
            normal[axis] = 1.0
            faces.append(Plane(self.lower, normal, self.restitution, self.friction, self.rolling_friction, motion,
                               tangential_restitution=self.tangential_restitution))
            if not (self.open_top and axis == 2):
                faces.append(Plane(self.upper, -normal, self.restitution, self.friction, self.rolling_friction,
                                   motion, tangential_restitution=self.tangential_restitution))
        return faces

    planes = surfaces

    @property
    def surface_count(self) -> int:
        return 5 if self.open_top else 6

    @property
    def volume(self) -> float:
        return float(np.prod(self.upper - self.lower))

    def describe(self) -> dict:
        description = {"type": "box", "lower": self.lower.tolist(), "upper": self.upper.tolist(),
                       "open_top": bool(self.open_top)}
        return _with_motion(description, self._translation)

    @classmethod
    def from_description(cls, description: dict) -> "Box":
        return cls(description["lower"], description["upper"], bool(description.get("open_top", False)),
                   velocity=_described_velocity(description))

    def surface_names(self, start: int) -> list[str]:
        """The faces by side: "box x-min", "box x-max", ..., "floor", "box top"."""
        names, axes = [], "xyz"
        for axis in range(3):
            names.append("floor" if axis == 2 else f"box {axes[axis]}-min")
            if not (self.open_top and axis == 2):
                names.append("box top" if axis == 2 else f"box {axes[axis]}-max")
        return names

    def shape(self, bounds: np.ndarray) -> WallShape:
        """The faces (not an open top), with their outlines."""
        faces = drawing.box_faces(self.lower, self.upper)
        if self.open_top:
            faces = faces[:5]            # the upper z face is the last (box_faces' order, surfaces')
        return WallShape([(corners, f, normal) for f, (corners, normal) in enumerate(faces)],
                         drawing.outlines([corners for corners, _ in faces]))

    def bounding_box(self) -> np.ndarray:
        return np.array([self.lower, self.upper])

    def translated(self, shift) -> "Box":
        shift = np.asarray(shift, float)
        return replace(self, lower=self.lower + shift, upper=self.upper + shift)


@register_wall
@dataclass(frozen=True)
class Cylinder(_Turning):
    """The inside of a circular cylinder: a drum, a silo, a pipe.

    Spheres stay within ``radius`` of the axis: the gap of sphere ``i`` is ``D =
    radius - |rho_i| - r_i`` (m), with ``rho_i`` the part of ``q_i - centre``
    orthogonal to the axis, and the normal into the admissible side is ``-rho_i /
    |rho_i|``. The wall is concave, so the linearised row ``D + h G u >= 0`` lets a
    sphere sliding along it at speed ``v`` sink by up to ``(h v)^2 / (2 (radius -
    r))`` in a step (second order in ``h``; the next step's gap starts from it).

    Parameters
    ----------
    centre : (3,) array
        The middle of the axis (m), at ``t = 0`` for a moving cylinder.
    axis : (3,) array
        Direction of the axis, non-zero; normalised here.
    radius : float
        Inner radius (m), positive.
    height : float or None
        Length along the axis (m), the cylinder spanning ``centre +- height/2 axis``;
        None: infinite (no caps).
    caps : bool
        For a finite cylinder: close both ends with planes (then the wall has three
        contact surfaces: side, the cap at ``-height/2``, the cap at ``+height/2``).
        ``False``: open ends; the side then holds only the spheres whose centres lie
        within its length (a sphere that leaves through an end is free).
    angular_velocity : float
        Spin (rad/s) about ``axis`` (right-handed), acting through friction: a
        rotating drum. The caps turn with the side.
    velocity : None, (3,) array or callable ``t -> (3,)``
        Prescribed translation (m/s), as for `Plane`.
    restitution, friction, rolling_friction, tangential_restitution : float or None
        As for `Plane`, shared by the side and the caps.
    """

    kind: ClassVar[str] = "cylinder"

    centre: np.ndarray
    axis: np.ndarray
    radius: float
    height: float | None = None
    caps: bool = True
    angular_velocity: float = 0.0
    velocity: object = None
    restitution: float | None = None
    friction: float | None = None
    rolling_friction: float | None = None
    tangential_restitution: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "centre", _vector3(self.centre, "Cylinder centre"))
        object.__setattr__(self, "axis", _unit_vector(self.axis, "Cylinder axis"))
        object.__setattr__(self, "radius", _positive_length(self.radius, "Cylinder radius"))
        if self.height is not None:
            object.__setattr__(self, "height", _positive_length(self.height, "Cylinder height"))
        object.__setattr__(self, "caps", bool(self.caps))
        object.__setattr__(self, "angular_velocity", _angular_speed(self.angular_velocity, "Cylinder"))
        _law(self, "Cylinder")
        _set_translation(self, "Cylinder")

    @property
    def capped(self) -> bool:
        return self.caps and self.height is not None

    def surfaces(self) -> list:
        """The contact surfaces: the side (`CylinderSide`), then the caps when finite and
        capped, the one at ``-height/2`` first."""
        motion = self._translation if self._translation.moves else None
        half = None if self.height is None else 0.5 * self.height
        side = CylinderSide(self.centre, self.axis, self.radius, half, self.angular_velocity, motion,
                            self.restitution, self.friction, self.rolling_friction, self.tangential_restitution)
        if not self.capped:
            return [side]
        return [side] + [Plane(self.centre - sign * half * self.axis, sign * self.axis, self.restitution,
                               self.friction, self.rolling_friction, motion, sign * self.angular_velocity,
                               self.tangential_restitution)
                         for sign in (1.0, -1.0)]

    planes = surfaces

    @property
    def surface_count(self) -> int:
        return 3 if self.capped else 1

    @property
    def volume(self) -> float | None:
        """Inner volume (m^3) of a finite cylinder, None for an infinite one."""
        return None if self.height is None else float(np.pi * self.radius ** 2 * self.height)

    def describe(self) -> dict:
        description = {"type": "cylinder", "centre": self.centre.tolist(), "axis": self.axis.tolist(),
                       "radius": float(self.radius),
                       "height": None if self.height is None else float(self.height),
                       "caps": bool(self.capped)}
        return _with_motion(description, self._translation, self.angular_velocity)

    @classmethod
    def from_description(cls, description: dict) -> "Cylinder":
        return cls(description["centre"], description["axis"], description["radius"], description.get("height"),
                   bool(description.get("caps", False)), description.get("angular_velocity", 0.0),
                   _described_velocity(description))

    def surface_names(self, start: int) -> list[str]:
        return ["cylinder side"] + (["cylinder cap -", "cylinder cap +"] if self.capped else [])

    def rings(self, bounds: np.ndarray, segments: int) -> np.ndarray:
        """(2, segments, 3) the circles at the two ends: at ``centre -+ height/2 axis``,
        or, for an infinite cylinder, at the ends of the projection of ``bounds``."""
        if self.height is not None:
            ends = np.array([-0.5, 0.5]) * self.height
        else:
            ends = drawing.axis_extent(self.centre, self.axis, bounds)
        return drawing.rings(self.centre, self.axis, (self.radius, self.radius), ends, segments)

    def shape(self, bounds: np.ndarray, segments: int = 48) -> WallShape:
        """``segments`` quads of the side (surface 0), then, when capped, the cap at
        ``-height/2`` (1) and the one at ``+height/2`` (2); pictures draw the outlines only."""
        ring_pair = self.rings(bounds, segments)
        faces = [(quad, 0, None) for quad in drawing.band_quads(ring_pair)]
        if self.capped:
            faces += [(ring_pair[0], 1, self.axis), (ring_pair[1][::-1], 2, -self.axis)]
        return WallShape(faces, drawing.outlines([corners for corners, _, _ in faces]), faces_drawn=False)

    def bounding_box(self) -> np.ndarray | None:
        if self.height is None:
            return None
        ring_pair = self.rings(np.zeros((2, 3)), 16)
        return np.array([ring_pair.reshape(-1, 3).min(axis=0), ring_pair.reshape(-1, 3).max(axis=0)])

    def translated(self, shift) -> "Cylinder":
        return replace(self, centre=self.centre + np.asarray(shift, float))


def _positive_length(value, name: str) -> float:
    try:
        length = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be a positive number of metres, got {value!r}") from None
    if not (np.isfinite(length) and length > 0.0):
        raise InvalidInputError(f"{name} must be positive and finite, got {length} m")
    return length


def _orthogonal_unit(axis: np.ndarray) -> np.ndarray:
    """A unit vector orthogonal to the unit ``axis``."""
    other = np.cross(axis, np.eye(3)[int(np.argmin(np.abs(axis)))])
    return other / np.linalg.norm(other)


@dataclass(frozen=True)
class CylinderSide:
    """The side of a `Cylinder` as one contact surface (built by `Cylinder.surfaces`).

    ``half_height`` None: infinite; else the side acts on the spheres whose centres
    lie within ``half_height`` of ``centre`` along the axis. ``translation`` is the
    cylinder's `Translation` or None.
    """

    centre: np.ndarray
    axis: np.ndarray
    radius: float
    half_height: float | None
    angular_velocity: float
    translation: object
    restitution: float | None
    friction: float | None
    rolling_friction: float | None
    tangential_restitution: float | None = None

    @property
    def moves(self) -> bool:
        return self.translation is not None or self.angular_velocity != 0.0

    def displacement(self, t: float) -> np.ndarray:
        return np.zeros(3) if self.translation is None else self.translation.displacement(t)

    def at(self, t: float) -> "CylinderSide":
        """The still side where this one is at ``t`` (itself if it never translates)."""
        if self.translation is None:
            return self
        return replace(self, centre=self.centre + self.displacement(t), translation=None, angular_velocity=0.0)

    def gaps(self, positions: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gaps (N,) (m) and inward unit normals (N, 3); spheres beyond the length of
        an open finite side get an infinite gap. A centre on the axis takes any
        normal orthogonal to it (all are equally far from the side)."""
        relative = positions - self.centre
        along = relative @ self.axis
        rho = relative - along[:, None] * self.axis
        distance = np.linalg.norm(rho, axis=1)
        normals = np.where(distance[:, None] > 0.0, -rho / np.where(distance > 0.0, distance, 1.0)[:, None],
                           _orthogonal_unit(self.axis))
        gaps = self.radius - distance - radii
        if self.half_height is not None:
            gaps = np.where(np.abs(along) <= self.half_height, gaps, np.inf)
        return gaps, normals

    def rows(self, positions, radii, margin, t, h=None) -> ContactRows:
        """`granular.surfaces.ContactSurface.rows`: the side where it is at ``t``."""
        spheres, gaps, normals = _near_rows(*self.at(t).gaps(positions, radii), margin)
        velocities = None
        if h is not None and self.moves:
            velocities = self.surface_velocity(_contact_points(positions, radii, spheres, normals), t, h)
        return ContactRows(spheres, gaps, normals, velocities)

    def surface_velocity(self, points: np.ndarray, t_next: float, h: float) -> np.ndarray:
        """Velocity (k, 3) (m/s) of the side's material at ``points`` (k, 3) over the step
        ending at ``t_next``: the mean translation plus ``omega axis x (x - c)``."""
        translation = self.translation if self.translation is not None else Translation(None, "Cylinder")
        return _motion_velocity(translation, self.angular_velocity, self.axis, self.centre, points, t_next, h)

    def label(self) -> str:
        return (f"cylinder side of radius {self.radius} about the axis {self.axis.tolist()} "
                f"through {self.centre.tolist()}")


@register_wall
@dataclass(frozen=True)
class Panel(_Translating):
    """A finite rectangle, a thin two-sided sheet: a hopper's flank, a baffle, a chute.

    The rectangle is ``corner + s along + w across`` for ``0 <= s, w <= 1``. The gap
    of sphere ``i`` is its centre's distance to the nearest point ``c`` of the
    rectangle minus its radius, and the row's normal is ``(q_i - c) / |q_i - c|``
    (Ericson, *Real-Time Collision Detection*, Morgan Kaufmann 2005, section 5.1.4:
    the closest point of a rectangle clamps the centre's coordinates along its edges).
    Over the face (``c`` inside) the gap is the plane distance ``|n . (q_i -
    corner)| - r_i`` and the normal ``+-n``, computed as a `Plane` computes them; past
    an edge the rectangle's rim is a rounded lip, and a sphere can sit on either side.

    Parameters
    ----------
    corner : (3,) array
        A corner (m), at ``t = 0`` for a moving panel.
    along, across : (3,) arrays
        The two edges from ``corner`` (m), non-zero and orthogonal (to 1e-9 of the
        product of their lengths).
    velocity : None, (3,) array or callable ``t -> (3,)``
        Prescribed translation (m/s), as for `Plane`: a vibrating chute.
    restitution, friction, rolling_friction, tangential_restitution : float or None
        As for `Plane`.
    """

    kind: ClassVar[str] = "panel"
    surface_count: ClassVar[int] = 1

    corner: np.ndarray
    along: np.ndarray
    across: np.ndarray
    restitution: float | None = None
    friction: float | None = None
    rolling_friction: float | None = None
    velocity: object = None
    tangential_restitution: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "corner", _vector3(self.corner, "Panel corner"))
        along, across = _vector3(self.along, "Panel along"), _vector3(self.across, "Panel across")
        lengths = np.linalg.norm(along), np.linalg.norm(across)
        if min(lengths) == 0.0:
            raise InvalidInputError("Panel edges along and across must be non-zero (m)")
        if abs(float(along @ across)) > 1e-9 * lengths[0] * lengths[1]:
            raise InvalidInputError(f"Panel edges along {along.tolist()} and across {across.tolist()} must be "
                                    "orthogonal (a rectangle)")
        object.__setattr__(self, "along", along)
        object.__setattr__(self, "across", across)
        _law(self, "Panel")
        _set_translation(self, "Panel")

    @property
    def normal(self) -> np.ndarray:
        """The unit normal ``along x across`` (the side the panel's drawing faces)."""
        return _unit_vector(np.cross(self.along, self.across), "Panel normal")

    def surfaces(self) -> list["Panel"]:
        return [self]

    def gaps(self, positions: np.ndarray, radii: np.ndarray, corner=None) -> tuple[np.ndarray, np.ndarray]:
        """Gaps (N,) (m) and unit normals (N, 3) (class docstring), the corner at ``corner``."""
        corner = self.corner if corner is None else corner
        relative = positions - corner
        lengths = np.array([np.linalg.norm(self.along), np.linalg.norm(self.across)])
        units = np.array([self.along / lengths[0], self.across / lengths[1]])
        coordinates = relative @ units.T
        clamped = np.clip(coordinates, 0.0, lengths)
        normal = self.normal
        height = relative @ normal
        offset = relative - clamped @ units
        distance = np.linalg.norm(offset, axis=1)
        inside = np.all(clamped == coordinates, axis=1) | (distance == 0.0)
        side = np.where(height < 0.0, -1.0, 1.0)
        gaps = np.where(inside, np.abs(height), distance) - radii
        normals = np.where(inside[:, None], side[:, None] * normal,
                           offset / np.where(distance > 0.0, distance, 1.0)[:, None])
        return gaps, normals

    def rows(self, positions, radii, margin, t, h=None) -> ContactRows:
        corner = self.corner + self.displacement(t) if self.moves else self.corner
        spheres, gaps, normals = _near_rows(*self.gaps(positions, radii, corner), margin)
        velocities = None
        if h is not None and self.moves:
            points = _contact_points(positions, radii, spheres, normals)
            velocities = _motion_velocity(self._translation, 0.0, self.normal, corner, points, t, h)
        return ContactRows(spheres, gaps, normals, velocities)

    def label(self) -> str:
        return f"panel at {self.corner.tolist()} with edges {self.along.tolist()} and {self.across.tolist()}"

    def corners(self) -> np.ndarray:
        """(4, 3) the rectangle's corners in order (m)."""
        return self.corner + np.array([np.zeros(3), self.along, self.along + self.across, self.across])

    def describe(self) -> dict:
        description = {"type": "panel", "corner": self.corner.tolist(), "along": self.along.tolist(),
                       "across": self.across.tolist()}
        return _with_motion(description, self._translation)

    @classmethod
    def from_description(cls, description: dict) -> "Panel":
        return cls(description["corner"], description["along"], description["across"],
                   velocity=_described_velocity(description))

    def surface_names(self, start: int) -> list[str]:
        return [f"panel {start}"]

    def shape(self, bounds: np.ndarray) -> WallShape:
        corners = self.corners()
        return WallShape([(corners, 0, None)], drawing.polygon_edges(corners))

    def bounding_box(self) -> np.ndarray:
        corners = self.corners()
        return np.array([corners.min(axis=0), corners.max(axis=0)])

    def translated(self, shift) -> "Panel":
        return replace(self, corner=self.corner + np.asarray(shift, float))


@register_wall
@dataclass(frozen=True)
class Cone(_Turning):
    """A conical funnel (a frustum), open at both ends, a thin two-sided shell.

    The shell joins the circle of radius ``lower_radius`` about ``axis`` through
    ``centre`` to the circle of radius ``upper_radius`` at ``centre + height axis``.
    A surface of revolution is nearest a point in the point's own meridian half-plane,
    so the gap of sphere ``i`` is the distance, in that half-plane, from its centre
    ``(rho_i, z_i)`` (distance to the axis, height along it) to the segment from
    ``(lower_radius, 0)`` to ``(upper_radius, height)``, minus ``r_i``; the normal is
    the unit vector from the nearest point of the segment to the centre, turned back
    into space. The rims are rounded lips (the segment's ends): a grain leaves
    through the lower opening when its diameter fits it. A centre on the axis takes
    any radial direction (all are equally far). Like a `Cylinder`'s side the shell is
    curved, so a linearised row lets a sphere sliding along it sink by a second-order
    amount in ``h`` in a step.

    Parameters
    ----------
    centre : (3,) array
        Centre of the lower rim (m), at ``t = 0`` for a moving cone.
    axis : (3,) array
        From the lower rim towards the upper one; normalised here.
    lower_radius, upper_radius : float
        Rim radii (m), >= 0, not both 0.
    height : float
        Distance between the rims along the axis (m), positive.
    angular_velocity : float
        Spin (rad/s) about the axis, felt through friction only.
    velocity : None, (3,) array or callable ``t -> (3,)``
        Prescribed translation (m/s), as for `Plane`.
    restitution, friction, rolling_friction, tangential_restitution : float or None
        As for `Plane`.
    """

    kind: ClassVar[str] = "cone"
    surface_count: ClassVar[int] = 1

    centre: np.ndarray
    axis: np.ndarray
    lower_radius: float
    upper_radius: float
    height: float
    angular_velocity: float = 0.0
    velocity: object = None
    restitution: float | None = None
    friction: float | None = None
    rolling_friction: float | None = None
    tangential_restitution: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "centre", _vector3(self.centre, "Cone centre"))
        object.__setattr__(self, "axis", _unit_vector(self.axis, "Cone axis"))
        for name in ("lower_radius", "upper_radius"):
            try:
                value = float(getattr(self, name))
            except (TypeError, ValueError):
                raise InvalidInputError(f"Cone {name} must be a number of metres, got {getattr(self, name)!r}") \
                    from None
            if not (np.isfinite(value) and value >= 0.0):
                raise InvalidInputError(f"Cone {name} must be finite and >= 0, got {value} m")
            object.__setattr__(self, name, value)
        if self.lower_radius == 0.0 and self.upper_radius == 0.0:
            raise InvalidInputError("Cone needs a positive lower_radius or upper_radius")
        object.__setattr__(self, "height", _positive_length(self.height, "Cone height"))
        object.__setattr__(self, "angular_velocity", _angular_speed(self.angular_velocity, "Cone"))
        _law(self, "Cone")
        _set_translation(self, "Cone")

    def surfaces(self) -> list["Cone"]:
        return [self]

    def gaps(self, positions: np.ndarray, radii: np.ndarray, centre=None) -> tuple[np.ndarray, np.ndarray]:
        """Gaps (N,) (m) and unit normals (N, 3) (class docstring), the lower rim's centre at ``centre``."""
        centre = self.centre if centre is None else centre
        relative = positions - centre
        z = relative @ self.axis
        radial = relative - z[:, None] * self.axis
        rho = np.linalg.norm(radial, axis=1)
        outward = np.where(rho[:, None] > 0.0, radial / np.where(rho > 0.0, rho, 1.0)[:, None],
                           _orthogonal_unit(self.axis))
        start, direction = np.array([self.lower_radius, 0.0]), np.array([self.upper_radius - self.lower_radius,
                                                                         self.height])
        point = np.column_stack([rho, z])
        fraction = np.clip((point - start) @ direction / (direction @ direction), 0.0, 1.0)
        offset = point - (start + fraction[:, None] * direction)
        distance = np.linalg.norm(offset, axis=1)
        # on the shell itself (an overlap of a whole radius): the side the axis is on
        inward = np.array([-direction[1], direction[0]]) / np.linalg.norm(direction)
        offset = np.where(distance[:, None] > 0.0, offset / np.where(distance > 0.0, distance, 1.0)[:, None], inward)
        normals = offset[:, :1] * outward + offset[:, 1:] * self.axis
        return distance - radii, normals

    def rows(self, positions, radii, margin, t, h=None) -> ContactRows:
        centre = self.centre + self.displacement(t) if self._translation.moves else self.centre
        spheres, gaps, normals = _near_rows(*self.gaps(positions, radii, centre), margin)
        velocities = None
        if h is not None and self.moves:
            points = _contact_points(positions, radii, spheres, normals)
            velocities = _motion_velocity(self._translation, self.angular_velocity, self.axis, self.centre, points,
                                          t, h)
        return ContactRows(spheres, gaps, normals, velocities)

    def label(self) -> str:
        return (f"cone from radius {self.lower_radius} at {self.centre.tolist()} to radius {self.upper_radius} "
                f"at height {self.height} along {self.axis.tolist()}")

    def describe(self) -> dict:
        description = {"type": "cone", "centre": self.centre.tolist(), "axis": self.axis.tolist(),
                       "lower_radius": self.lower_radius, "upper_radius": self.upper_radius,
                       "height": self.height}
        return _with_motion(description, self._translation, self.angular_velocity)

    @classmethod
    def from_description(cls, description: dict) -> "Cone":
        return cls(description["centre"], description["axis"], description["lower_radius"],
                   description["upper_radius"], description["height"], description.get("angular_velocity", 0.0),
                   _described_velocity(description))

    def surface_names(self, start: int) -> list[str]:
        return [f"cone {start}"]

    def rings(self, segments: int) -> np.ndarray:
        return drawing.rings(self.centre, self.axis, (self.lower_radius, self.upper_radius), (0.0, self.height),
                             segments)

    def shape(self, bounds: np.ndarray, segments: int = 48) -> WallShape:
        """``segments`` quads of the shell; pictures draw the rims and every sixth generator."""
        ring_pair = self.rings(segments)
        quads = drawing.band_quads(ring_pair)
        edges = [drawing.polygon_edges(ring_pair[0]), drawing.polygon_edges(ring_pair[1]),
                 np.stack([ring_pair[0, ::6], ring_pair[1, ::6]], axis=1)]
        return WallShape([(quad, 0, None) for quad in quads], np.concatenate(edges), faces_drawn=False)

    def bounding_box(self) -> np.ndarray:
        points = self.rings(16).reshape(-1, 3)
        return np.array([points.min(axis=0), points.max(axis=0)])

    def translated(self, shift) -> "Cone":
        return replace(self, centre=self.centre + np.asarray(shift, float))


@register_wall
@dataclass(frozen=True)
class PeriodicBox:
    """Periodic boundary conditions along chosen axes.

    Positions along a periodic axis are wrapped into ``[lower, upper)`` after every
    step; pair vectors use the minimum-image convention. The box must be larger
    than twice the largest sphere diameter plus the search margin along each
    periodic axis.

    Parameters
    ----------
    lower, upper : (3,) arrays
        The periodic cell (m). Components along non-periodic axes are ignored.
    axes : sequence of int
        The periodic axes, a subset of ``(0, 1, 2)``.
    """

    kind: ClassVar[str] = "periodic"
    surface_count: ClassVar[int] = 0

    lower: np.ndarray
    upper: np.ndarray
    axes: tuple = (0, 1, 2)

    def __post_init__(self):
        lower = _vector3(self.lower, "PeriodicBox lower")
        upper = _vector3(self.upper, "PeriodicBox upper")
        axes = tuple(sorted(set(int(a) for a in self.axes)))
        if not axes or any(a not in (0, 1, 2) for a in axes):
            raise InvalidInputError(f"PeriodicBox axes must be a non-empty subset of (0, 1, 2), got {self.axes}")
        if not np.all(upper[list(axes)] > lower[list(axes)]):
            raise InvalidInputError("PeriodicBox needs lower < upper along its periodic axes")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "axes", axes)

    @property
    def lengths(self) -> np.ndarray:
        """(3,) period along each axis, ``inf`` along non-periodic axes."""
        lengths = np.full(3, np.inf)
        for a in self.axes:
            lengths[a] = self.upper[a] - self.lower[a]
        return lengths

    def wrap(self, positions: np.ndarray) -> np.ndarray:
        """Positions (N, 3) wrapped into the cell along the periodic axes."""
        wrapped = positions.copy()
        for a in self.axes:
            length = self.upper[a] - self.lower[a]
            wrapped[:, a] = self.lower[a] + np.mod(positions[:, a] - self.lower[a], length)
        return wrapped

    def minimum_image(self, vectors: np.ndarray) -> np.ndarray:
        """Pair vectors (M, 3) reduced to their shortest periodic image."""
        reduced = vectors.copy()
        for a in self.axes:
            length = self.upper[a] - self.lower[a]
            reduced[:, a] -= length * np.round(reduced[:, a] / length)
        return reduced

    def describe(self) -> dict:
        return {"type": "periodic", "lower": self.lower.tolist(), "upper": self.upper.tolist(),
                "axes": list(self.axes)}

    @classmethod
    def from_description(cls, description: dict) -> "PeriodicBox":
        return cls(description["lower"], description["upper"], tuple(description.get("axes", (0, 1, 2))))

    def surfaces(self) -> list:
        return []

    def surface_names(self, start: int) -> list[str]:
        return []

    def shape(self, bounds: np.ndarray) -> WallShape:
        """Nothing: the pictures draw the cell from the system's ``"periodic"`` entry."""
        return WallShape()

    def bounding_box(self) -> np.ndarray:
        return np.array([self.lower, self.upper])

    def translated(self, shift) -> "PeriodicBox":
        return self


@register_wall
@dataclass(frozen=True)
class Polygon:
    """A flat polygon as run files of earlier versions describe a finite panel
    (``{"type": "polygon", "vertices": [...], "normal": [...]}``): read for names and
    pictures only (one contact surface; it has no rows)."""

    kind: ClassVar[str] = "polygon"
    surface_count: ClassVar[int] = 1

    vertices: np.ndarray
    normal: np.ndarray | None = None

    @classmethod
    def from_description(cls, description: dict) -> "Polygon":
        vertices = np.asarray(description["vertices"], float)
        if vertices.ndim != 2 or vertices.shape[1] != 3 or len(vertices) < 3:
            raise InvalidInputError(f"polygon vertices must have shape (v >= 3, 3), got {vertices.shape}")
        normal = description.get("normal")
        return cls(vertices, None if normal is None else np.asarray(normal, float))

    moves = False

    def surfaces(self) -> list:
        raise InvalidInputError("a polygon read from a run file is for pictures only; build a Panel to simulate")

    def displacement(self, t: float) -> np.ndarray:
        return np.zeros(3)

    def describe(self) -> dict:
        description = {"type": "polygon", "vertices": self.vertices.tolist()}
        if self.normal is not None:
            description["normal"] = self.normal.tolist()
        return description

    def surface_names(self, start: int) -> list[str]:
        return [f"wall {start}"]

    def shape(self, bounds: np.ndarray) -> WallShape:
        normal = self.normal if self.normal is not None else np.cross(self.vertices[1] - self.vertices[0],
                                                                      self.vertices[2] - self.vertices[0])
        return WallShape([(self.vertices, 0, drawing.unit(normal))], drawing.polygon_edges(self.vertices))

    def bounding_box(self) -> np.ndarray:
        return np.array([self.vertices.min(axis=0), self.vertices.max(axis=0)])

    def translated(self, shift) -> "Polygon":
        return replace(self, vertices=self.vertices + np.asarray(shift, float))
