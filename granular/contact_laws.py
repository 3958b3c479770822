"""The contact laws: the coefficients a wall gives its contacts (`SurfaceLaw`), and
the coefficients of each constraint row of a step (`RowLaws`).

A step's rows (`granular.constraints.ConstraintSet`) carry their geometry (gaps,
normals, Jacobian, tangent and rolling rows) apart from their laws; the solvers read
the laws where they build their problem (`granular.contact.problem.ContactProblem.from_constraints`,
the impact stages `granular.schemes.maury_impacts` and `granular.contact.impact`).
A new law (cohesion, ``lambda_N >= -c``) is one more field here and its bound there.

The laws, for a row ``k`` with normal impulse ``lambda_k`` (N s), relative normal
velocity ``U_N = G_k u`` and sliding velocity ``U_T`` (m/s):

- Impact (Moreau, *Unilateral contact and dry friction in finite freedom dynamics*,
  1988, with Newton's restitution): an impacting row leaves with ``U_N^+ >= -e U_N^-``,
  equality where it carries an impulse, ``e`` in [0, 1] (``restitution``).
- Friction (Coulomb's law as Moreau, 1988, writes it in velocities): ``|lambda_T| <=
  mu lambda_N``, with ``lambda_T`` opposite to ``U_T`` when the contact slides
  (``friction``, ``mu >= 0``).
- Rolling resistance (Tasora and Anitescu, *A complementarity-based rolling friction
  model for rigid contacts*, 2013; Ai, Chen, Rotter and Ooi, *Assessment of rolling
  resistance models in discrete element simulations*, 2011, model A): the
  torque impulse ``R* l_R`` (N m s) against the relative rolling obeys ``|l_R| <= mu_r
  lambda_N`` (``rolling_friction``; `granular.contact.friction` gives the model).
- Tangential restitution (Moreau, 1988; Acary and Brogliato, *Numerical Methods for
  Nonsmooth Dynamical Systems*, 2008, section 3.2): in an impact a contact point that
  sticks leaves with ``U_T^+ = -e_t U_T^-``, ``e_t`` in [0, 1]
  (``tangential_restitution``, `granular.contact.impact`).
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

import numpy as np

from .errors import InvalidInputError
from .validation import unit_coefficient


def checked_unit_coefficient(value, name: str) -> float | None:
    """``value`` as a number in [0, 1] (a coefficient of restitution), None kept as
    None; `InvalidInputError` naming ``name`` otherwise (`unit_coefficient`)."""
    return None if value is None else unit_coefficient(value, name)


def check_nonnegative_coefficient(value, name: str) -> None:
    """`InvalidInputError` naming ``name`` unless ``value`` is None or a finite number
    >= 0 (a friction coefficient)."""
    if value is not None and not (np.isfinite(value) and value >= 0.0):
        raise InvalidInputError(f"{name} must be finite and >= 0, got {value}")


@dataclass(frozen=True, eq=False)
class SurfaceLaw:
    """The contact law of a wall's contacts with the spheres, a keyword-only base of
    every wall (`granular.walls`, `granular.walls.meshes.TriangleMesh`). ``None`` takes the
    world's value for the coefficient.

    Parameters
    ----------
    restitution : float or None
        Newton's coefficient ``e`` in [0, 1] of Moreau's impact law (module docstring);
        ``None`` uses the sphere's coefficient.
    friction : float or None
        Coulomb coefficient ``mu >= 0``: ``|lambda_T| <= mu lambda_N``; ``None`` uses
        the world's.
    rolling_friction : float or None
        Rolling resistance coefficient ``mu_r >= 0`` (dimensionless): torque impulse at
        most ``mu_r r lambda_N`` against the sphere's rolling on the wall, ``r`` its
        radius; ``None`` uses the world's.
    tangential_restitution : float or None
        Tangential coefficient ``e_t`` in [0, 1]: a contact point that sticks in an
        impact leaves with ``-e_t`` times its tangential velocity relative to the wall
        (`granular.contact.impact`); ``None`` uses the world's.

    The checks (`check_law`) run when the wall is built; ``restitution`` and
    ``tangential_restitution`` are stored as floats.
    """

    _: KW_ONLY
    restitution: float | None = None
    friction: float | None = None
    rolling_friction: float | None = None
    tangential_restitution: float | None = None

    def check_law(self) -> None:
        """Check the four coefficients, naming the wall's class in the error."""
        name = type(self).__name__
        object.__setattr__(self, "restitution", checked_unit_coefficient(self.restitution, f"{name} restitution"))
        object.__setattr__(
            self,
            "tangential_restitution",
            checked_unit_coefficient(self.tangential_restitution, f"{name} tangential_restitution"),
        )
        check_nonnegative_coefficient(self.friction, f"{name} friction")
        check_nonnegative_coefficient(self.rolling_friction, f"{name} rolling_friction")

    def law(self) -> dict:
        """The four coefficients by keyword, for the surfaces a wall is made of (a
        `granular.walls.Box`'s faces)."""
        return {
            "restitution": self.restitution,
            "friction": self.friction,
            "rolling_friction": self.rolling_friction,
            "tangential_restitution": self.tangential_restitution,
        }


@dataclass(frozen=True)
class RowLaws:
    """The contact law of each row of a step (module docstring): ``m`` rows, in the
    order of the `granular.constraints.ConstraintSet` that carries them.

    Attributes
    ----------
    restitution : (m,) array
        Newton's coefficient ``e_k`` in [0, 1] of Moreau's impact law.
    friction : (m,) array
        Coulomb coefficient ``mu_k >= 0``, ``|lambda_T,k| <= mu_k lambda_k`` (0:
        frictionless). Given as None: every row is 0.
    rolling_friction : (m,) array or None
        Rolling resistance coefficient ``mu_r,k >= 0``, ``|l_R,k| <= mu_r,k lambda_k``
        (the rolling rows are `granular.constraints.ConstraintSet.rolling`). None when
        no row has rolling resistance.
    tangential_restitution : (m,) array or None
        Tangential coefficient ``e_t,k`` in [0, 1] of an impact (module docstring).
        None: every ``e_t`` is 0.
    """

    restitution: np.ndarray
    friction: np.ndarray = None  # type: ignore[assignment]  # None: zeros, set in __post_init__
    rolling_friction: np.ndarray | None = None
    tangential_restitution: np.ndarray | None = None

    def __post_init__(self):
        if self.friction is None:
            object.__setattr__(self, "friction", np.zeros(self.size))

    @property
    def size(self) -> int:
        """``m``, the number of rows."""
        return int(self.restitution.size)

    def take(self, rows: np.ndarray) -> "RowLaws":
        """The laws of ``rows`` (indices or a mask), in their order."""
        return RowLaws(
            self.restitution[rows],
            self.friction[rows],
            take_optional(self.rolling_friction, rows),
            take_optional(self.tangential_restitution, rows),
        )

    @staticmethod
    def empty() -> "RowLaws":
        return RowLaws(np.zeros(0))


def take_optional(values: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    """``values[rows]``, None for None (a per-row array a step may leave out)."""
    return None if values is None else values[rows]
