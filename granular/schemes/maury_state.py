"""What Maury's scheme carries from one step to the next (`MauryState`), the warm
start it gives the next projection (the impulses of the contacts that persist, by
their keys), and how that state follows the spheres when inlets and outlets change
them (`exchanged_state`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..constraints import remap_keys
from ..spheres.rotation import identity_quaternions


@dataclass(frozen=True)
class MauryState:
    """What the velocity scheme carries from one step to the next, as a value.

    t : time (s); q, u : positions and velocities (flat, the centres' part);
    previous_keys, previous_impulses : the sorted contact keys of the previous step
        and Maury's impulses on them (N s), the next projection's warm start;
    previous_tangential : their friction impulses (m, s) or None;
    previous_rolling : their rolling impulses (m, 2) or None (rolling resistance);
    previous_kick : ``M^{-1} G^T lambda`` of the previous step's sustained contacts
        (m/s), which raises the next impact threshold (module docstring), or None;
    omega, orientations : angular velocities (N, 3) and unit quaternions (N, 4) of
        spheres, or None for a system without rotation;
    recent_sweeps : the Coulomb sweeps of the last steps that swept (int64, oldest
        first), from which the next stall's floor follows
        (`granular.contact.friction_gauss_seidel.stall_floor`), or None before any;
    previous_closure : the multipliers (N s) of the previous step's gap closure on its
        contacts (`granular.contact.gap_closure`), the next closure's start, or None.
    """

    t: float
    q: np.ndarray
    u: np.ndarray
    previous_keys: np.ndarray
    previous_impulses: np.ndarray
    previous_tangential: np.ndarray | None = None
    previous_rolling: np.ndarray | None = None
    previous_kick: np.ndarray | None = None
    omega: np.ndarray | None = None
    orientations: np.ndarray | None = None
    recent_sweeps: np.ndarray | None = None
    previous_closure: np.ndarray | None = None

    #: Field -> name in a run file's restart group (`granular.app.runs.save_run`); the
    #: names are those of the attributes that held them before, so old files load.
    WARM_NAMES = {
        "previous_keys": "_previous_keys",
        "previous_impulses": "_previous_impulses",
        "previous_tangential": "_previous_tangential",
        "previous_rolling": "_previous_rolling",
        "previous_kick": "_previous_kick",
        "omega": "_omega",
        "orientations": "_orientations",
        "recent_sweeps": "_recent_sweeps",
        "previous_closure": "_previous_closure",
    }

    def warm_values(self) -> dict:
        """The carried values beyond ``(t, q, u)``, by their run-file names."""
        return {stored: getattr(self, field) for field, stored in self.WARM_NAMES.items()}

    def with_warm_values(self, values: dict) -> "MauryState":
        """This state with the carried values of ``values`` (run-file names) set."""
        known = {field: values[stored] for field, stored in self.WARM_NAMES.items() if stored in values}
        return replace(self, **known)


def exchanged_state(state: MauryState, exchange, n_before: int, n_after: int) -> MauryState:
    """``state`` carried over to the spheres after ``exchange`` (a
    `granular.spheres.flows.Exchange` of the world's ``n_before`` spheres, ``n_after`` after
    it): positions, velocities, rotation and sustained-contact kick of the kept
    spheres, then the inserted ones (at rest in rotation, identity orientations, no
    kick); the warm starts of the rows between kept spheres and walls, under their
    new keys (`granular.constraints.remap_keys`), so they follow the spheres' ids."""
    keep, k = exchange.keep, exchange.positions.shape[0]
    q = np.concatenate([state.q.reshape(n_before, 3)[keep], exchange.positions]).reshape(-1)
    u = np.concatenate([state.u.reshape(n_before, 3)[keep], exchange.velocities]).reshape(-1)
    kept, keys = remap_keys(state.previous_keys, n_before, exchange.new_index(), n_after)
    order = np.argsort(keys, kind="stable")

    def follow(per_row):  # a per-contact warm start, under the new keys' order
        if per_row is not None and per_row.shape[0] == state.previous_keys.size:
            return per_row[kept][order]
        return per_row

    omega, orientations, kick = state.omega, state.orientations, state.previous_kick
    if omega is not None and orientations is not None:
        omega = np.concatenate([omega[keep], np.zeros((k, 3))])
        orientations = np.concatenate([orientations[keep], identity_quaternions(k)])
    if kick is not None:
        blocks = kick.size // (3 * n_before) if n_before else 0  # (u) or (u, omega) blocks
        if blocks:
            parts = kick.reshape(blocks, n_before, 3)
            kick = np.concatenate([parts[:, keep], np.zeros((blocks, k, 3))], axis=1).reshape(-1)
        else:
            kick = None
    return replace(
        state,
        q=q,
        u=u,
        previous_keys=keys[order],
        previous_impulses=state.previous_impulses[kept][order],
        previous_tangential=follow(state.previous_tangential),
        previous_rolling=follow(state.previous_rolling),
        previous_closure=follow(state.previous_closure),
        previous_kick=kick,
        omega=omega,
        orientations=orientations,
    )


def persisting(constraints, state: MauryState, n: int, warm_start: bool):
    """``(found (m,) bool, position (m,) int)`` of this step's rows among the previous
    step's (by `granular.constraints.ConstraintSet.keys` for ``n`` bodies), or ``(None,
    None)`` without a warm start."""
    previous_keys = state.previous_keys
    if not warm_start or previous_keys.size == 0 or constraints.size == 0:
        return None, None
    keys = constraints.keys(n)
    position = np.minimum(np.searchsorted(previous_keys, keys), previous_keys.size - 1)
    return previous_keys[position] == keys, position


def warm_starts(constraints, state: MauryState, n: int, warm_start: bool) -> tuple:
    """``(normal, friction, rolling, closure)``: the previous normal (m,), friction (m,
    s) and rolling (m, 2) impulses (N s) and gap-closure multipliers (m,) (N s,
    `granular.contact.gap_closure`) of this step's rows that persist, 0 for the others,
    found by one lookup of the rows' keys (`persisting`). The friction and rolling
    impulses are in the rows' own tangent bases, which
    `granular.spheres.assembly.tangent_basis` derives from the normal alone. Each is None
    when the previous step had none, all four without a warm start."""
    found, position = persisting(constraints, state, n, warm_start)
    if found is None:
        return None, None, None, None
    normal = np.where(found, state.previous_impulses[position], 0.0)
    return (
        normal,
        _persisting_rows(found, position, state, state.previous_tangential),
        _persisting_rows(found, position, state, state.previous_rolling),
        _persisting_rows(found, position, state, state.previous_closure),
    )


def _persisting_rows(found, position, state: MauryState, previous):
    """The rows of ``previous`` (one per previous contact, sorted by key; (k,) or (k,
    s)) at ``position`` where ``found``, 0 elsewhere; None without them."""
    if previous is None or (previous.ndim == 2 and previous.shape[1] == 0):
        return None
    if previous.shape[0] != state.previous_keys.size:
        return None
    return np.where(found.reshape(found.shape + (1,) * (previous.ndim - 1)), previous[position], 0.0)


def remembered(
    constraints, impulses, tangential, state: MauryState, n: int, warm_start: bool, rolling=None, closure=None
) -> dict:
    """The warm-start fields of the next state: this step's contacts sorted by key (the
    previous ones, unchanged, without warm starts): normal impulses (m,), friction
    impulses (m, s), rolling impulses (m, 2) and gap-closure multipliers (m,), each
    None when the step has none."""
    if not warm_start:
        return dict(
            previous_keys=state.previous_keys,
            previous_impulses=state.previous_impulses,
            previous_tangential=state.previous_tangential,
            previous_rolling=state.previous_rolling,
            previous_closure=state.previous_closure,
        )
    keys = constraints.keys(n)
    order = np.argsort(keys)
    return dict(
        previous_keys=keys[order],
        previous_impulses=impulses[order],
        previous_tangential=None if tangential is None else np.asarray(tangential)[order],
        previous_rolling=None if rolling is None else np.asarray(rolling)[order],
        previous_closure=None if closure is None else np.asarray(closure)[order],
    )
