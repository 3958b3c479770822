"""Linearised unilateral constraints of one step, and the contact records users read.

A step linearises every constraint that could become active at the end of the
step, ``t_{n+1}``, around the current configuration ``q^n`` (Bernicot and Lefebvre-Lepot, 2010, eq. 1.11):

    D_k(t_{n+1}, q^n) + h G_k(q^n) u >= 0,      k = 1..m

``D`` are gaps (m for spheres, the unit of ``g`` for a `ConstrainedSystem`), ``G``
the sparse Jacobian (m x d), one row per constraint. The multiplier ``lambda_k``
of row k is an impulse over the step (N s for spheres): ``M (u^{n+1} - v) = G^T lambda``.

A `ConstraintSet` holds the rows' geometry; their contact laws (restitution, friction,
rolling resistance, tangential restitution) are its one field ``laws``
(`granular.contact_laws.RowLaws`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .contact.sparse_blocks import csr_rows
from .contact_laws import RowLaws, take_optional

#: Keys of the further rows of a sphere on one surface (`ConstraintSet.keys`) start
#: here, below every other key: ``(wall, sphere)`` pairs up to 2^40 with 2^20 rows each.
_FURTHER_ROWS = -(2**62)
_FEATURE_SLOTS = 2**20


def remap_keys(keys: np.ndarray, n_before: int, new_index: np.ndarray, n_after: int) -> tuple[np.ndarray, np.ndarray]:
    """Row keys (`ConstraintSet.keys` with ``n_before`` bodies) of a step, carried over
    to the bodies renumbered by ``new_index`` (n_before,) (each body's new index, -1 for
    a body removed) among ``n_after``: ``(kept (k,) positions into keys, their new
    keys (k,))``, the rows of removed bodies left out. A pair key ``i (n + 1) + j``
    becomes ``i' (n' + 1) + j'``, a wall key ``-(w (n + 1) + i) - 1`` becomes ``-(w
    (n' + 1) + i') - 1``, and a further row of a sphere on a surface keeps its
    feature slot. Bodies keep their order (a removal compacts, an insertion
    appends), so a pair keeps ``i' < j'``."""
    keys = np.asarray(keys, dtype=np.int64)
    new_index = np.asarray(new_index, dtype=np.int64)
    further = keys < _FURTHER_ROWS // 2  # further rows lie below -2^61, first rows above
    pair = keys >= 0
    base_before, base_after = np.int64(n_before + 1), np.int64(n_after + 1)
    # the (wall, sphere) code w (n + 1) + i of a wall row, and the feature slot of a further one
    code = np.where(further, (keys - _FURTHER_ROWS) // _FEATURE_SLOTS, -keys - 1)
    slot = np.where(further, (keys - _FURTHER_ROWS) % _FEATURE_SLOTS, 0)
    first = np.where(pair, keys // base_before, code % base_before)
    second = np.where(pair, keys % base_before, code // base_before)  # j of a pair, the wall of a wall row
    mapped_first = new_index[np.clip(first, 0, n_before - 1)] if n_before else first
    mapped_second = np.where(pair, new_index[np.clip(second, 0, n_before - 1)] if n_before else second, second)
    alive = (mapped_first >= 0) & (mapped_second >= 0)
    wall_code = second * base_after + mapped_first
    new_keys = np.where(
        pair,
        mapped_first * base_after + mapped_second,
        np.where(further, _FURTHER_ROWS + wall_code * _FEATURE_SLOTS + slot, -wall_code - 1),
    )
    kept = np.flatnonzero(alive)
    return kept, new_keys[kept]


@dataclass(frozen=True)
class ConstraintSet:
    """The constraints of one step.

    Attributes
    ----------
    gap : (m,) array
        ``D_k(t_{n+1}, q^n)``.
    jacobian : (m, d) sparse CSR
        Rows ``G_k = grad_q D_k``.
    laws : `granular.contact_laws.RowLaws`
        The contact law of each row: restitution, friction, rolling friction and
        tangential restitution coefficients, (m,) each.
    i, j, wall : (m,) int arrays
        Who touches whom: sphere ``i`` and sphere ``j`` (``wall == -1``), or sphere
        ``i`` and wall ``wall`` (``j == -1``). For a `ConstrainedSystem`, ``i`` is the
        constraint index and ``j == wall == -1``.
    normal : (m, k) array
        Unit normal from ``i`` to ``j`` (into the admissible side for a wall), or
        the Jacobian row itself for a `ConstrainedSystem`.
    tangents : (m, s, d) array, sparse (m s, d) matrix, or None
        Rows of the tangential Jacobian (``s`` = 1 in the plane, 2 in 3D) for
        frictional rows: unit-tangent velocities of the contact point. Dense for a
        `ConstrainedSystem`; sparse for a `SphereWorld`, row ``s k + a`` being tangent
        ``a`` of row ``k``. ``None`` when no row has friction (``laws.friction``).
    seconds : dict
        Wall time spent building the set (s), by phase ("neighbors", "assembly").
    separation_speed : float or None
        Fastest separation (m/s) of a row that overlaps (``D < 0``): its bound is
        ``G_k u >= min(-D_k/h, separation_speed)`` (`lower`); None: Maury's bound
        ``-D_k/h`` however deep the overlap.
    rolling : sparse (2m, d) matrix or None
        Rows ``2k + a``: the relative angular velocity of contact ``k`` along its
        tangent ``a`` times its rolling radius ``R*_k`` (m/s), for the rows with
        rolling resistance (``laws.rolling_friction``, `granular.contact.friction`).
    rolling_radius : (m,) array or None
        ``R*_k`` (m): the torque impulse of a rolling impulse ``l_R`` is ``R* l_R`` (N m s).
    tangential_offset : (m, s) array or None
        Velocity (m/s) of the other body's contact point along each row's tangents: a
        moving wall's (`granular.walls`), 0 for pairs. Coulomb's law applies to the
        sliding velocity ``T_k u - tangential_offset_k``. None: every offset is 0.
    normal_offset : (m,) array or None
        Velocity (m/s) of the other body's contact point along each row's normal: a
        wall moving along its normal, 0 for pairs. Moreau's impact law acts on the
        relative normal velocity ``G_k u - normal_offset_k``. None: every offset is 0.
    surface_names : tuple of str or None
        The name of each contact surface, by ``wall`` index, as the user's walls give
        them ("floor", "box x-max"; `granular.walls.surface_names`), for messages.
    feature : (m,) int array or None
        Which of a sphere's rows on one surface a row is, when a surface can touch a
        sphere at several places (`granular.walls.surfaces.ContactRows.features`): 0 for the
        first, 1, 2 ... for the others; 0 for pairs. None: every row is 0.
    """

    gap: np.ndarray
    jacobian: sp.csr_matrix
    laws: RowLaws
    i: np.ndarray
    j: np.ndarray
    wall: np.ndarray
    normal: np.ndarray
    tangents: object = None
    seconds: dict = field(default_factory=dict, compare=False)
    separation_speed: float | None = None
    rolling: object = None
    rolling_radius: np.ndarray | None = None
    tangential_offset: np.ndarray | None = None
    normal_offset: np.ndarray | None = None
    surface_names: tuple | None = None
    feature: np.ndarray | None = None
    _keys: dict = field(default_factory=dict, compare=False, repr=False, init=False)

    @property
    def size(self) -> int:
        return self.gap.size

    def lower(self, h: float) -> np.ndarray:
        """Lower bounds ``b`` (m,) of ``G u >= b`` for the step ``h`` (velocity units):
        ``-D/h``, capped at ``separation_speed`` on the rows that overlap."""
        bound = -self.gap / h
        if self.separation_speed is None:
            return bound
        return np.where(self.gap < 0.0, np.minimum(bound, self.separation_speed), bound)

    def keys(self, n_bodies: int) -> np.ndarray:
        """An integer identifying each row across steps (for warm starts), read-only
        (computed once: a step asks for them three times)."""
        if n_bodies not in self._keys:
            pair = self.i.astype(np.int64) * (n_bodies + 1) + self.j
            on_wall = self.wall >= 0
            wall_key = -(self.wall.astype(np.int64) * (n_bodies + 1) + self.i) - 1
            if self.feature is not None and np.any(self.feature):
                # A further row of a sphere on the same surface: keys below every
                # first row's (which stay those of surfaces with one row per sphere).
                further = (
                    _FURTHER_ROWS + (-wall_key - 1) * _FEATURE_SLOTS + np.minimum(self.feature, _FEATURE_SLOTS - 1)
                )
                wall_key = np.where(self.feature > 0, further, wall_key)
            keys = np.where(on_wall, wall_key, pair)
            keys.flags.writeable = False
            self._keys[n_bodies] = keys
        return self._keys[n_bodies]

    def subset(self, rows: np.ndarray) -> "ConstraintSet":
        """The constraint set of the rows ``rows`` (k,) (int indices), in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        tangents = self.tangents
        if sp.issparse(tangents):
            s = tangents.shape[0] // max(self.size, 1)
            tangents = csr_rows(tangents.tocsr(), (s * rows[:, None] + np.arange(s)).reshape(-1))
        elif tangents is not None:
            tangents = tangents[rows]
        rolling = (
            None
            if self.rolling is None
            else csr_rows(self.rolling.tocsr(), (2 * rows[:, None] + np.arange(2)).reshape(-1))
        )
        return ConstraintSet(
            self.gap[rows],
            csr_rows(self.jacobian.tocsr(), rows),
            self.laws.take(rows),
            self.i[rows],
            self.j[rows],
            self.wall[rows],
            self.normal[rows],
            tangents,
            separation_speed=self.separation_speed,
            rolling=rolling,
            rolling_radius=take_optional(self.rolling_radius, rows),
            tangential_offset=take_optional(self.tangential_offset, rows),
            normal_offset=take_optional(self.normal_offset, rows),
            feature=take_optional(self.feature, rows),
        )

    @staticmethod
    def empty(d: int, normal_dim: int = 3) -> "ConstraintSet":
        none = np.zeros(0, dtype=np.int64)
        return ConstraintSet(
            np.zeros(0), sp.csr_matrix((0, d)), RowLaws.empty(), none, none, none, np.zeros((0, normal_dim))
        )


@dataclass(frozen=True)
class Contacts:
    """The contacts a step considered, with their multipliers. Read-only record.

    One entry per constraint row of the step (active or not); ``impulse > 0``
    marks the active ones. Arrays are empty when nothing was near.

    Attributes
    ----------
    i, j, wall : (m,) int arrays
        As in `ConstraintSet`: sphere pair ``(i, j)`` with ``wall == -1``, or sphere
        ``i`` against wall ``wall`` with ``j == -1``.
    gap : (m,) array
        Gap at the start of the step, evaluated at ``t_{n+1}`` (m).
    normal : (m, k) array
        Unit normal (from i to j, or out of the wall), or the Jacobian row.
    impulse : (m,) array
        Normal multiplier ``lambda_k`` as an impulse over the step (N s), >= 0.
        Divide by ``dt`` for the mean force over the step (N).
    tangential_impulse : (m, s) array
        Friction impulse components along the contact's tangent basis (N s);
        zeros without friction.
    rolling_impulse : (m, 2) array
        Rolling-resistance torque impulses along the tangent basis (N m s), acting
        on j (minus on i); (m, 0) without rolling resistance.
    """

    i: np.ndarray
    j: np.ndarray
    wall: np.ndarray
    gap: np.ndarray
    normal: np.ndarray
    impulse: np.ndarray
    tangential_impulse: np.ndarray = field(default=None)
    rolling_impulse: np.ndarray = field(default=None)

    def __post_init__(self):
        if self.tangential_impulse is None:
            object.__setattr__(self, "tangential_impulse", np.zeros((self.impulse.size, 0)))
        if self.rolling_impulse is None:
            object.__setattr__(self, "rolling_impulse", np.zeros((self.impulse.size, 0)))

    def __len__(self) -> int:
        return int(self.impulse.size)

    @property
    def active(self) -> np.ndarray:
        """Boolean mask of the contacts that carry a positive impulse."""
        return self.impulse > 0.0

    def sorted_by_impulse(self) -> "Contacts":
        """The same contacts, largest impulse first."""
        order = np.argsort(-self.impulse, kind="stable")
        return self.take(order)

    def take(self, rows) -> "Contacts":
        return Contacts(
            self.i[rows],
            self.j[rows],
            self.wall[rows],
            self.gap[rows],
            self.normal[rows],
            self.impulse[rows],
            self.tangential_impulse[rows],
            self.rolling_impulse[rows],
        )

    @staticmethod
    def from_constraints(
        constraints: ConstraintSet,
        impulse: np.ndarray,
        tangential_impulse: np.ndarray | None = None,
        rolling_impulse: np.ndarray | None = None,
    ) -> "Contacts":
        return Contacts(
            constraints.i,
            constraints.j,
            constraints.wall,
            constraints.gap,
            constraints.normal,
            np.asarray(impulse, dtype=float),
            tangential_impulse,
            rolling_impulse,
        )

    @staticmethod
    def empty(normal_dim: int = 3) -> "Contacts":
        none = np.zeros(0, dtype=np.int64)
        return Contacts(none, none, none, np.zeros(0), np.zeros((0, normal_dim)), np.zeros(0))
