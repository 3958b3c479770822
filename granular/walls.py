"""Walls: planes, axis-aligned boxes and cylinders, still or moving; periodic boxes.

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

from dataclasses import dataclass, field, replace

import numpy as np

from .errors import InvalidInputError


def _vector3(value, name: str) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.shape != (3,):
        raise InvalidInputError(f"{name} must have shape (3,), got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InvalidInputError(f"{name} must be finite, got {array}")
    return array


def _unit_vector(value, name: str) -> np.ndarray:
    vector = _vector3(value, name)
    length = float(np.linalg.norm(vector))
    if length == 0.0:
        raise InvalidInputError(f"{name} must be non-zero")
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


@dataclass(frozen=True)
class Plane:
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
        object.__setattr__(self, "restitution", _restitution(self.restitution, name))
        object.__setattr__(self, "tangential_restitution",
                           _tangential_restitution(self.tangential_restitution, name))
        _check_friction(self.friction, name)
        _check_rolling(self.rolling_friction, name)
        object.__setattr__(self, "angular_velocity", _angular_speed(self.angular_velocity, name))
        translation = _translation(self.velocity, name)
        object.__setattr__(self, "_translation", translation)
        if translation.constant is not None and not isinstance(self.velocity, Translation):
            object.__setattr__(self, "velocity", None if self.velocity is None else translation.constant)

    def planes(self) -> list["Plane"]:
        """The contact surfaces of this wall (one per ``Contacts.wall`` index)."""
        return [self]

    @property
    def moves(self) -> bool:
        """Whether the plane translates or spins."""
        return self._translation.moves or self.angular_velocity != 0.0

    def displacement(self, t: float) -> np.ndarray:
        """Shift (3,) (m) of the plane at ``t`` from its position at ``t = 0``."""
        return self._translation.displacement(t)

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

    def surface_velocity(self, points: np.ndarray, t_next: float, h: float) -> np.ndarray:
        """Velocity (k, 3) (m/s) of the wall's material at ``points`` (k, 3) over the
        step ``(t_next - h, t_next)``: mean translation plus the spin about the normal
        through the point's position at ``t_next``."""
        velocity = np.broadcast_to(self._translation.mean_velocity(t_next - h, t_next), points.shape)
        if self.angular_velocity == 0.0:
            return np.array(velocity)
        centre = self.point + self.displacement(t_next)
        return velocity + np.cross(self.angular_velocity * self.normal, points - centre)

    def describe(self) -> dict:
        description = {"type": "plane", "point": self.point.tolist(), "normal": self.normal.tolist()}
        return _with_motion(description, self._translation, self.angular_velocity)


def _with_motion(description: dict, translation: Translation, angular_velocity: float = 0.0) -> dict:
    """A wall's description with its motion, when it moves (JSON: a callable velocity
    is written "function"; the positions of each frame are in the run file)."""
    if translation.moves:
        description["velocity"] = translation.describe()
    if angular_velocity != 0.0:
        description["angular_velocity"] = float(angular_velocity)
    return description


@dataclass(frozen=True)
class Box:
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
        object.__setattr__(self, "restitution", _restitution(self.restitution, "Box"))
        object.__setattr__(self, "tangential_restitution",
                           _tangential_restitution(self.tangential_restitution, "Box"))
        _check_friction(self.friction, "Box")
        _check_rolling(self.rolling_friction, "Box")
        translation = _translation(self.velocity, "Box")
        object.__setattr__(self, "_translation", translation)
        if translation.constant is not None:
            object.__setattr__(self, "velocity", None if self.velocity is None else translation.constant)

    @property
    def moves(self) -> bool:
        return self._translation.moves

    def displacement(self, t: float) -> np.ndarray:
        """Shift (3,) (m) of the box at ``t`` from its position at ``t = 0``."""
        return self._translation.displacement(t)

    def planes(self) -> list[Plane]:
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

    @property
    def volume(self) -> float:
        return float(np.prod(self.upper - self.lower))

    def describe(self) -> dict:
        description = {"type": "box", "lower": self.lower.tolist(), "upper": self.upper.tolist(),
                       "open_top": bool(self.open_top)}
        return _with_motion(description, self._translation)


@dataclass(frozen=True)
class Cylinder:
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
        radius = _positive_length(self.radius, "Cylinder radius")
        object.__setattr__(self, "radius", radius)
        if self.height is not None:
            object.__setattr__(self, "height", _positive_length(self.height, "Cylinder height"))
        object.__setattr__(self, "caps", bool(self.caps))
        object.__setattr__(self, "angular_velocity", _angular_speed(self.angular_velocity, "Cylinder"))
        object.__setattr__(self, "restitution", _restitution(self.restitution, "Cylinder"))
        object.__setattr__(self, "tangential_restitution",
                           _tangential_restitution(self.tangential_restitution, "Cylinder"))
        _check_friction(self.friction, "Cylinder")
        _check_rolling(self.rolling_friction, "Cylinder")
        translation = _translation(self.velocity, "Cylinder")
        object.__setattr__(self, "_translation", translation)
        if translation.constant is not None:
            object.__setattr__(self, "velocity", None if self.velocity is None else translation.constant)

    @property
    def moves(self) -> bool:
        return self._translation.moves or self.angular_velocity != 0.0

    def displacement(self, t: float) -> np.ndarray:
        """Shift (3,) (m) of the cylinder at ``t`` from its position at ``t = 0``."""
        return self._translation.displacement(t)

    def planes(self) -> list:
        """The contact surfaces: the side (`CylinderSide`), then the caps when finite and
        capped, the one at ``-height/2`` first."""
        motion = self._translation if self._translation.moves else None
        half = None if self.height is None else 0.5 * self.height
        side = CylinderSide(self.centre, self.axis, self.radius, half, self.angular_velocity, motion,
                            self.restitution, self.friction, self.rolling_friction, self.tangential_restitution)
        if half is None or not self.caps:
            return [side]
        return [side] + [Plane(self.centre - sign * half * self.axis, sign * self.axis, self.restitution,
                               self.friction, self.rolling_friction, motion, sign * self.angular_velocity,
                               self.tangential_restitution)
                         for sign in (1.0, -1.0)]

    @property
    def volume(self) -> float | None:
        """Inner volume (m^3) of a finite cylinder, None for an infinite one."""
        return None if self.height is None else float(np.pi * self.radius ** 2 * self.height)

    def describe(self) -> dict:
        description = {"type": "cylinder", "centre": self.centre.tolist(), "axis": self.axis.tolist(),
                       "radius": float(self.radius),
                       "height": None if self.height is None else float(self.height),
                       "caps": bool(self.caps and self.height is not None)}
        return _with_motion(description, self._translation, self.angular_velocity)


def _positive_length(value, name: str) -> float:
    try:
        length = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be a positive number of metres, got {value!r}") from None
    if not (np.isfinite(length) and length > 0.0):
        raise InvalidInputError(f"{name} must be positive and finite, got {length} m")
    return length


@dataclass(frozen=True)
class CylinderSide:
    """The side of a `Cylinder` as one contact surface (built by `Cylinder.planes`).

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
        fallback = np.cross(self.axis, np.eye(3)[int(np.argmin(np.abs(self.axis)))])
        fallback /= np.linalg.norm(fallback)
        normals = np.where(distance[:, None] > 0.0, -rho / np.where(distance > 0.0, distance, 1.0)[:, None],
                           fallback)
        gaps = self.radius - distance - radii
        if self.half_height is not None:
            gaps = np.where(np.abs(along) <= self.half_height, gaps, np.inf)
        return gaps, normals

    def surface_velocity(self, points: np.ndarray, t_next: float, h: float) -> np.ndarray:
        """Velocity (k, 3) (m/s) of the side's material at ``points`` (k, 3) over the step
        ending at ``t_next``: the mean translation plus ``omega axis x (x - c)``."""
        velocity = np.zeros(points.shape)
        if self.translation is not None:
            velocity += self.translation.mean_velocity(t_next - h, t_next)
        if self.angular_velocity != 0.0:
            centre = self.centre + self.displacement(t_next)
            velocity += np.cross(self.angular_velocity * self.axis, points - centre)
        return velocity


def surface_count(description: dict) -> int:
    """How many contact surfaces (``Contacts.wall`` indices) a wall's description has:
    6 for a closed box, 5 open at the top, 3 for a capped cylinder, else 1."""
    kind = description.get("type")
    if kind == "box":
        return 5 if description.get("open_top") else 6
    if kind == "cylinder":
        return 3 if description.get("caps") else 1
    if kind == "periodic":
        return 0
    return 1


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


def surface_names(walls: list) -> list[str]:
    """A name for each contact surface (``Contacts.wall`` index) of the wall
    descriptions ``walls`` (``system["walls"]``), in the world's order: "floor" for a
    plane facing +z, a box's faces by side ("box x-min", ..., "box top"), a cylinder's
    "cylinder side" and caps ("cylinder cap -", "cylinder cap +"), else the index
    and the normal."""
    names, axes = [], "xyz"
    for wall in walls or []:
        kind = wall.get("type") if isinstance(wall, dict) else None
        if kind == "box":
            for axis in range(3):
                names.append("floor" if axis == 2 else f"box {axes[axis]}-min")
                if not (wall.get("open_top") and axis == 2):
                    names.append("box top" if axis == 2 else f"box {axes[axis]}-max")
        elif kind == "plane":
            normal = np.asarray(wall.get("normal", (np.nan,) * 3), float)
            shown = ", ".join(f"{v + 0.0:.3g}" for v in normal)   # + 0.0: never "-0"
            moving = " moving" if "velocity" in wall else ""
            names.append("floor" if np.allclose(normal, (0, 0, 1)) and not moving
                         else f"plane {len(names)}{moving} (normal {shown})")
        elif kind == "cylinder":
            names.append("cylinder side")
            if wall.get("caps"):
                names += ["cylinder cap -", "cylinder cap +"]
        elif kind == "periodic":
            continue
        else:
            names.append(f"wall {len(names)}")
    return names


def first_surface(walls: list, index: int) -> int:
    """The ``Contacts.wall`` index of the first contact surface of ``walls[index]``
    (descriptions, as in `surface_names`)."""
    return sum(surface_count(wall) for wall in walls[:index])

