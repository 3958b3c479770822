"""What the walls share: checks of their arguments, prescribed translations
(`Translation`), the bases of translating and turning walls and of their contact rows
(`RowsNear`), and the warning about a turning wall without friction. The
conventions and the moving-wall rows are derived in `granular.walls`."""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import IneffectiveWallWarning, InvalidInputError
from .surfaces import ContactRows, RecordedVelocity
from ..validation import as_number


def vector3(value, name: str) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.shape != (3,):
        raise InvalidInputError(f"{name} must have shape (3,), got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InvalidInputError(f"{name} must be finite, got {array}")
    return array


def unit_vector(value, name: str) -> np.ndarray:
    """``value`` normalised; a vector already of unit length to rounding (4 ulps) is
    kept as it is, so that a normal read back from a run file is the one written."""
    vector = vector3(value, name)
    length = float(np.linalg.norm(vector))
    if length == 0.0:
        raise InvalidInputError(f"{name} must be non-zero")
    if abs(length - 1.0) <= 4.0 * np.finfo(float).eps:
        return vector
    return vector / length


def checked_angular_speed(value, name: str) -> float:
    omega = as_number(value, f"{name} angular_velocity", "a number (rad/s)")
    if not np.isfinite(omega):
        raise InvalidInputError(f"{name} angular_velocity must be finite, got {omega}")
    return omega


#: Absolute tolerance (m) of the quadrature of a velocity function into a displacement,
#: with a relative one of 1e-12: far below the overlap tolerance (1e-9 r).
DISPLACEMENT_TOLERANCE = 1e-15


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
        self._last = (0.0, np.zeros(3))  # (t, d(t)) of the latest evaluation
        if velocity is None:
            self.constant = np.zeros(3)
        elif callable(velocity):
            self.function = velocity
            self.velocity(0.0)  # a wrong shape or a NaN is refused now
        else:
            self.constant = vector3(velocity, f"{name} velocity")

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
            raise InvalidInputError(
                f"{self.name} velocity function returned shape {value.shape} at t = {t:.6g} s, expected (3,) (m/s)"
            )
        if not np.all(np.isfinite(value)):
            raise InvalidInputError(
                f"{self.name} velocity function returned a non-finite value {value.tolist()} at t = {t:.6g} s"
            )
        return value

    def _integral(self, a: float, b: float) -> np.ndarray:
        if a == b:
            return np.zeros(3)
        from scipy.integrate import quad_vec

        # epsabs in metres: a velocity that vanishes over [a, b] has no relative error to meet.
        return np.asarray(quad_vec(self.velocity, a, b, epsabs=DISPLACEMENT_TOLERANCE, epsrel=1e-12)[0], dtype=float)

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


def as_translation(velocity, name: str) -> Translation:
    return velocity if isinstance(velocity, Translation) else Translation(velocity, name)


def set_translation(wall, name: str) -> Translation:
    """Give a frozen wall dataclass its `Translation` (``_translation``); a constant
    velocity is stored as an array (None for a still wall)."""
    translation = as_translation(wall.velocity, name)
    object.__setattr__(wall, "_translation", translation)
    if translation.constant is not None and not isinstance(wall.velocity, Translation):
        object.__setattr__(wall, "velocity", None if wall.velocity is None else translation.constant)
    return translation


def described_velocity(description: dict):
    """The velocity of a wall description: None, a constant (3,) list, or, for
    "function", the stand-in `granular.walls.surfaces.RecordedVelocity`."""
    velocity = description.get("velocity")
    if velocity == "function":
        return RecordedVelocity()
    return velocity


def near_rows(gaps: np.ndarray, normals: np.ndarray, margin: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(spheres, gaps, normals (k, 3))`` of the spheres whose gap is at most ``margin``."""
    near = np.flatnonzero(gaps <= margin)
    return near.astype(np.int64), gaps[near], np.array(normals[near], dtype=float).reshape(-1, 3)


def contact_points(positions, radii, spheres, normals) -> np.ndarray:
    """Contact points ``q_i - r_i n`` (k, 3) (m) of wall rows."""
    return positions[spheres] - radii[spheres, None] * normals


def motion_velocity(translation, angular_velocity, axis, centre, points, t_next, h) -> np.ndarray:
    """Velocity (k, 3) (m/s) of a wall's material at ``points`` over the step
    ``(t_next - h, t_next)``: the mean translation plus ``omega axis x (x - c(t_next))``
    (``c`` the point ``centre`` of the axis at ``t = 0``, moved with the wall)."""
    velocity = np.array(np.broadcast_to(translation.mean_velocity(t_next - h, t_next), points.shape))
    if angular_velocity != 0.0:
        moved = centre + translation.displacement(t_next)
        velocity += np.cross(angular_velocity * axis, points - moved)
    return velocity


def names_of_normal(normal: np.ndarray) -> str:
    return ", ".join(f"{v + 0.0:.3g}" for v in normal)  # + 0.0: never "-0"


class Translating:
    """What a wall that may translate shares: its `Translation`, set in ``_translation``
    by `set_translation` when it is built."""

    @property
    def moves(self) -> bool:
        """Whether the wall moves."""
        return self._translation.moves

    def displacement(self, t: float) -> np.ndarray:
        """Shift (3,) (m) of the wall at ``t`` from its position at ``t = 0``."""
        return self._translation.displacement(t)


class Rotating(Translating):
    """What a wall that may also turn at ``angular_velocity`` (rad/s) about an axis shares."""

    @property
    def moves(self) -> bool:
        """Whether the wall translates or turns."""
        return self._translation.moves or self.angular_velocity != 0.0


class Turning(Rotating):
    """What a wall that may turn about its own axis of symmetry (a plane's normal, a
    cylinder's axis) shares: turning, its surface slides over itself."""

    @property
    def spins_in_place(self) -> bool:
        """Whether it turns about its axis: its surface slides over itself, so only
        friction feels it."""
        return self.angular_velocity != 0.0


class RowsNear:
    """What a contact surface whose rows are the spheres near it shares: `rows` from
    the gaps and normals where the surface is at ``t`` (``gaps_at(t, positions,
    radii)``) and its material velocity at the contact points
    (``surface_velocity(points, t_next, h)``)."""

    def rows(self, positions, radii, margin, t, h=None) -> ContactRows:
        """`granular.walls.surfaces.ContactSurface.rows`: the surface where it is at ``t``."""
        spheres, gaps, normals = near_rows(*self.gaps_at(t, positions, radii), margin)
        velocities = None
        if h is not None and self.moves:
            velocities = self.surface_velocity(contact_points(positions, radii, spheres, normals), t, h)
        return ContactRows(spheres, gaps, normals, velocities)


def with_motion(description: dict, translation: Translation, angular_velocity: float = 0.0) -> dict:
    """A wall's description with its motion, when it moves (JSON: a callable velocity
    is written "function"; the positions of each frame are in the run file)."""
    if translation.moves:
        description["velocity"] = translation.describe()
    if angular_velocity != 0.0:
        description["angular_velocity"] = float(angular_velocity)
    return description


def positive_length(value, name: str) -> float:
    length = as_number(value, name, "a positive number of metres")
    if not (np.isfinite(length) and length > 0.0):
        raise InvalidInputError(f"{name} must be positive and finite, got {length} m")
    return length


def orthogonal_unit(axis: np.ndarray) -> np.ndarray:
    """A unit vector orthogonal to the unit ``axis``."""
    other = np.cross(axis, np.eye(3)[int(np.argmin(np.abs(axis)))])
    return other / np.linalg.norm(other)


def unit_rows(vectors: np.ndarray, lengths: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Each row of ``vectors`` (N, k) divided by its length ``lengths`` (N,), and
    ``fallback`` ((k,) or (N, k)) in the rows of length 0 (a centre on an axis or on a
    shell, where every direction of the fallback's kind is as near)."""
    return np.where(lengths[:, None] > 0.0, vectors / np.where(lengths > 0.0, lengths, 1.0)[:, None], fallback)


def warn_if_turning_without_friction(walls, friction: float) -> None:
    """A wall that turns (a `Cylinder` about its axis, a `Plane` about its normal)
    moves its surface tangentially only, which reaches the spheres through friction
    alone: without friction (its own, or the world's ``friction`` when it has none) it
    acts as a still wall. That is most likely not what was meant, so say it
    (`granular.errors.IneffectiveWallWarning`, pointing at the world's caller)."""
    for k, wall in enumerate(walls):
        if not getattr(wall, "spins_in_place", False):
            continue
        omega = wall.angular_velocity
        mu = friction if wall.friction is None else float(wall.friction)
        if mu == 0.0:
            warnings.warn(
                IneffectiveWallWarning(
                    f"walls[{k}] ({type(wall).__name__}) turns at {omega:g} rad/s but its contacts have no "
                    "friction (friction=0 on the wall and in the world): its turning moves no sphere; give it "
                    "friction=... to drag them"
                ),
                stacklevel=3,
            )
