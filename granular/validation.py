"""Input checks shared by the systems: shapes, finiteness, positivity.

Each check raises `InvalidInputError` naming the argument and the first
offending index.
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidInputError, NonFiniteError


def finite_array(value, name: str, shape: tuple | None = None) -> np.ndarray:
    """``value`` as a float array of the given shape, every entry finite.

    Numbers only: a string (``"0.01"``, ``"high"``), which numpy would convert or
    fail on with a bare ValueError, is refused naming the argument and the value."""
    if isinstance(value, (str, bytes)) or _holds_text(value):
        raise InvalidInputError(f"{name} must be a number or an array of numbers, got {value!r}")
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"{name} must be a number or an array of numbers, got {value!r} ({error})") from None
    if shape is not None and array.shape != shape:
        raise InvalidInputError(f"{name} must have shape {shape}, got {array.shape}")
    if array.ndim == 0:  # np.argwhere finds nothing in a 0-d array
        if not np.isfinite(array):
            raise InvalidInputError(f"{name} must be finite, got {float(array)}")
        return array
    bad = np.argwhere(~np.isfinite(array))
    if bad.size:
        index = tuple(int(k) for k in bad[0])
        raise InvalidInputError(
            f"{name} has a non-finite entry at index {index[0] if len(index) == 1 else index}: {array[tuple(bad[0])]}"
        )
    return array


def _holds_text(value) -> bool:
    """Whether an array-like holds a string anywhere."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return False  # a ragged list: np.array's own error says what is wrong
    if array.dtype.kind in "US":
        return True
    return array.dtype.kind == "O" and any(isinstance(item, (str, bytes)) for item in array.reshape(-1))


def finite_per_item(value, name: str, n: int) -> np.ndarray:
    """A scalar or (n,) array broadcast to (n,), every entry finite (`finite_array`)."""
    array = finite_array(value, name)
    if array.ndim == 0:
        array = np.full(n, float(array))
    if array.shape != (n,):
        raise InvalidInputError(f"{name} must be a scalar or have shape ({n},), got {array.shape}")
    return array


def positive_per_item(value, name: str, n: int, unit: str = "") -> np.ndarray:
    """A scalar or (n,) array broadcast to (n,), every entry finite and > 0."""
    array = finite_per_item(value, name, n)
    bad = np.flatnonzero(array <= 0.0)
    if bad.size:
        raise InvalidInputError(f"{name} must be positive: entry {bad[0]} is {array[bad[0]]}{unit}")
    return array


def coefficient_per_item(value, name: str, n: int, upper: float | None = 1.0) -> np.ndarray:
    """A scalar or (n,) coefficient in [0, upper] broadcast to (n,)."""
    array = finite_per_item(value, name, n)
    bad = np.flatnonzero((array < 0.0) | ((array > upper) if upper is not None else False))
    if bad.size:
        bounds = f"[0, {upper}]" if upper is not None else "[0, inf)"
        raise InvalidInputError(f"{name} must lie in {bounds}: entry {bad[0]} is {array[bad[0]]}")
    return array


def positive_scalar(value, name: str) -> float:
    number = float(value)
    if not np.isfinite(number) or number <= 0.0:
        raise InvalidInputError(f"{name} must be a positive finite number, got {value}")
    return number


def positive_radii(values) -> np.ndarray:
    """Radii (n,) (m), finite and positive; an `InvalidInputError` naming the first
    sphere whose radius is not."""
    values = finite_array(values, "radii")
    bad = np.flatnonzero(values <= 0.0)
    if bad.size:
        raise InvalidInputError(f"radii must be positive: sphere {bad[0]} has r = {values[bad[0]]} m")
    return values


def as_number(value, name: str, expected: str) -> float:
    """``float(value)``, or `InvalidInputError` "``name`` must be ``expected``, got
    ..." when it is not a number (a string that does not read as one, a list, None)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be {expected}, got {value!r}") from None


def unit_coefficient(value, name: str) -> float:
    """One number in [0, 1], or `InvalidInputError` saying what was given."""
    number = as_number(value, name, "one number in [0, 1]")
    if not 0.0 <= number <= 1.0:  # NaN fails too
        raise InvalidInputError(f"{name} must lie in [0, 1], got {number}")
    return number


def checked_force(t: float, value, shape: tuple) -> np.ndarray:
    """A user force (N) returned at time ``t`` (s) as a float array of ``shape``;
    `InvalidInputError` for another shape, `NonFiniteError` for a NaN or an infinity
    (a numerical blow-up or a force singular there)."""
    value = np.asarray(value, dtype=float)
    if value.shape != shape:
        raise InvalidInputError(f"force returned shape {value.shape} at t = {t:.6g} s, expected {shape}")
    if not np.all(np.isfinite(value)):
        raise NonFiniteError(
            f"force returned a non-finite value at t = {t:.6g} s: a numerical blow-up "
            "(reduce the time step) or a force singular there",
            t=t,
            status="non_finite",
        )
    return value
