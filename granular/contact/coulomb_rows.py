"""The rows of the Coulomb sweeps: per-contact dense copies of ``H = [G; T; R]``,
the contacts' exact local answers, the natural residual, and their compiled forms.

The sweeps (`granular.contact.friction_gauss_seidel`) and the semismooth Newton
hand-over (`granular.contact.coulomb_newton`) both work on these rows; the local
problem, its closed-form answer and the residual are derived in
`granular.contact.friction_gauss_seidel`'s module docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np
import scipy.sparse as sp


@cache
def kernels():
    """`granular.contact.sweep_kernels`, imported on first use: importing numba costs
    a noticeable fraction of a second, which a run without friction need not pay
    (cached: an import statement, though cheap, is repeated on every call of the
    sweeps)."""
    from . import sweep_kernels

    return sweep_kernels


#: A frictional contact's block ``W_kk`` counts as ``diag(w_k, v_k, v_k)`` when it differs
#: from it by less than this fraction of ``max(w_k, v_k)`` (round-off of unit tangents).
ISOTROPY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class SweepRows:
    """Per-contact dense copies of the sparse rows of ``H = [G; T]``.

    cols : (m, p) coordinates each contact's rows touch, padded with ``d`` (a dummy
        coordinate of zero inverse mass).
    values : (m, 3, p) the rows (normal, tangent 1, tangent 2) on those coordinates.
    inverse_mass : (d + 1,) diagonal of ``M^{-1}`` with 0 for the dummy (1/kg).
    w : (m,) the normal entry ``w_k`` of the local Delassus block (1/kg).
    mu : (m,) friction coefficients.
    lower : (m,) ``-D_k / h`` (m/s).
    w_tangent : (m,) the tangential entry ``v_k`` (1/kg), or None when ``v = w``
        (isotropic blocks: spheres that do not turn).
    rolling_friction : (m,) rolling resistance coefficients ``mu_r`` of the contacts, or
        None without rolling resistance; then ``values`` has 5 rows per contact
        (normal, two tangents, two rolling rows: the relative angular velocity times
        the rolling radius ``R*``, m/s) and impulses are ``(l_N, l_T1, l_T2, l_R1,
        l_R2)``, the rolling torque impulse being ``R* l_R`` (N m s).
    w_rolling : (m,) the rolling block ``W_RR = w_r I`` (1/kg), 1 where unused.
    coupling : (m, 2, 2) ``W_RT``, how a tangential impulse moves the rolling velocity.
    tangent_offset : (m, 2) velocity (m/s) of a moving wall's contact point along the
        tangents, subtracted from the tangential velocities (`granular.walls`), or None.
    """

    cols: np.ndarray
    values: np.ndarray
    inverse_mass: np.ndarray
    w: np.ndarray
    mu: np.ndarray
    lower: np.ndarray
    w_tangent: np.ndarray | None = None
    rolling_friction: np.ndarray | None = None
    w_rolling: np.ndarray | None = None
    coupling: np.ndarray | None = None
    tangent_offset: np.ndarray | None = None

    @property
    def width(self) -> int:
        """Impulse components per contact: 3, or 5 with rolling resistance."""
        return self.values.shape[1]

    def subset(self, rows: np.ndarray) -> "SweepRows":
        """The rows of the contacts ``rows`` (indices), as `sweep_rows` would build
        them from those contacts alone (up to padding and the scalar forms of
        isotropic or roll-free sets, which give the same answers)."""

        def take(values):
            return None if values is None else values[rows]

        return SweepRows(
            self.cols[rows],
            self.values[rows],
            self.inverse_mass,
            self.w[rows],
            self.mu[rows],
            self.lower[rows],
            take(self.w_tangent),
            take(self.rolling_friction),
            take(self.w_rolling),
            take(self.coupling),
            take(self.tangent_offset),
        )

    @cached_property
    def incidence(self) -> sp.csr_matrix:
        """(m, d) the coordinates each contact's rows touch (ones), the padding left out."""
        m, p = self.cols.shape
        dummy = self.inverse_mass.size - 1
        contact = np.repeat(np.arange(m), p)
        coordinate = self.cols.ravel()
        touched = coordinate < dummy
        return sp.csr_matrix((np.ones(int(touched.sum())), (contact[touched], coordinate[touched])), shape=(m, dummy))

    def neighbourhood(self, seeds: np.ndarray, hops: int) -> np.ndarray:
        """The contacts (bool (m,)) within ``hops`` steps of the contacts ``seeds``
        (bool (m,)), a step joining two contacts that share a coordinate (a sphere)."""
        reached = np.asarray(seeds, dtype=bool).copy()
        for _ in range(hops):
            reached |= (self.incidence @ (self.incidence.T @ reached.astype(float))) > 0.0
        return reached

    @cached_property
    def compiled(self) -> "CompiledRows":
        """The arrays of the compiled sweeps and residual, gathered once."""
        return CompiledRows(self)

    def local_velocities(self, u: np.ndarray, rows=slice(None)) -> np.ndarray:
        """``U_k`` (k, 3) of the contacts ``rows`` for the velocities ``u`` (d + 1,)."""
        U = np.einsum("kap,kp->ka", self.values[rows], u[self.cols[rows]])
        U[:, 0] -= self.lower[rows]
        if self.tangent_offset is not None:
            U[:, 1:3] -= self.tangent_offset[rows]
        return U


def sweep_rows(
    metric,
    G: sp.csr_matrix,
    T: sp.csr_matrix,
    mu: np.ndarray,
    lower: np.ndarray,
    R: sp.csr_matrix | None = None,
    rolling_friction: np.ndarray | None = None,
    tangent_offset: np.ndarray | None = None,
) -> SweepRows | None:
    """The rows of ``m`` contacts (``G`` (m, d), ``T`` (2m, d), row ``2k + a`` tangent
    ``a`` of contact ``k``; optionally rolling rows ``R`` (2m, d) with coefficients
    ``rolling_friction`` (m,)), or None when the method does not apply: a metric
    without a diagonal, a frictional contact whose block is not ``diag(w, v, v)``,
    or a rolling contact whose rolling block is not ``w_r I`` decoupled from the normal.
    ``tangent_offset`` (m, 2): a moving wall's tangential velocity (`SweepRows`)."""
    inverse = getattr(metric, "inverse_diagonal", None)
    if inverse is None:
        return None
    m, d = G.shape
    rolling = R is not None and rolling_friction is not None and np.any(rolling_friction > 0.0)
    bound = np.zeros(m) if not rolling else np.asarray(rolling_friction, dtype=float)
    # Each contact's rows on its distinct coordinates, gathered from the blocks of
    # H = [G; T; R] in compiled loops (`sweep_kernels.gather_rows`), not by a sort and
    # scatter in numpy.
    parts = [(csr_block(G, 1), np.ones(m, dtype=bool), 0)]  # (block, contacts it applies to, first local row)
    if np.any(mu > 0.0):
        parts.append((csr_block(T, 2), np.asarray(mu > 0.0), 1))
    if rolling:
        parts.append((csr_block(R, 2), bound > 0.0, 3))
    q = 5 if rolling else 3
    widest = sum(int(np.diff(block[0]).max(initial=0)) * block[3] for block, _, _ in parts) + 1
    cols, values = kernels().gather_rows(
        m,
        d,
        q,
        tuple(part[0] for part in parts),
        tuple(part[1] for part in parts),
        np.array([part[2] for part in parts], dtype=np.int64),
        widest,
    )
    inverse_mass = np.append(np.asarray(inverse, dtype=float), 0.0)
    full = kernels().local_blocks(cols, values, inverse_mass)
    w = full[:, 0, 0]
    frictional = mu > 0.0
    v = np.where(frictional, full[:, 1, 1], w)  # frictionless rows have no tangent block
    rolls = bound > 0.0
    w_rolling = np.where(rolls, full[:, 3, 3], 1.0) if rolling else w
    offset, roll_offset = kernels().block_offsets(full, w, v, w_rolling)
    if np.any(frictional & (offset > ISOTROPY_TOLERANCE * np.maximum(w, v))):
        return None
    # Isotropic blocks (v = w to round-off) keep the scalar form, bit for bit as before.
    w_tangent = None if np.all(np.abs(v - w) <= ISOTROPY_TOLERANCE * w) else v
    coupling = None
    if rolling:
        if np.any(rolls & (roll_offset > ISOTROPY_TOLERANCE * np.maximum(w_rolling, w))):
            return None
        coupling = full[:, 3:, 1:3]
    else:
        w_rolling = None
    return SweepRows(
        cols,
        values,
        inverse_mass,
        w,
        np.asarray(mu, dtype=float),
        np.asarray(lower, dtype=float),
        w_tangent,
        bound if rolling else None,
        w_rolling,
        coupling,
        None if tangent_offset is None else np.asarray(tangent_offset, dtype=float),
    )


def csr_arrays(matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of a sparse ``matrix`` as CSR, in the dtypes the
    compiled kernels take (int64, int64, float), copied only when not in them already."""
    if not isinstance(matrix, sp.csr_matrix):
        matrix = sp.csr_matrix(matrix)
    return (
        matrix.indptr.astype(np.int64, copy=False),
        matrix.indices.astype(np.int64, copy=False),
        matrix.data.astype(float, copy=False),
    )


def csr_block(block: sp.csr_matrix, per_contact: int) -> tuple:
    """``(indptr, indices, data, per_contact)`` of a block of ``H`` with ``per_contact``
    rows a contact, in the dtypes `sweep_kernels.gather_rows` is compiled for."""
    return (*csr_arrays(block), int(per_contact))


def colour_classes(cols: np.ndarray, dummy: int) -> list[np.ndarray]:
    """Contacts (indices, ascending) grouped so that no two of a group share a
    coordinate (``dummy``, the padding of ``cols``, excepted).

    Each group is the greedy maximal independent set, in decreasing contact index,
    of the contacts the previous groups left (`sweep_kernels.colours`): the set
    that rounds of "a candidate joins when it has the largest index among the
    candidates at each of its coordinates" also build (Blelloch, Fineman and Shun,
    *Greedy sequential maximal independent set and matching are parallel on
    average*, 2012). Deterministic.
    """
    order, colour = visit_order(cols, dummy)
    return np.split(order, np.cumsum(np.bincount(colour))[:-1]) if colour.size else []


def visit_order(cols: np.ndarray, dummy: int) -> tuple[np.ndarray, np.ndarray]:
    """``(order, colour)``: the contacts (int64 (m,)) colour after colour, each colour's
    in ascending index (`colour_classes` joined end to end), and each contact's colour."""
    colour = kernels().colours(np.ascontiguousarray(cols, dtype=np.int64), int(dummy))
    return np.argsort(colour, kind="stable").astype(np.int64, copy=False), colour


def local_solution(
    U: np.ndarray, r: np.ndarray, w: np.ndarray, mu: np.ndarray, v: np.ndarray | None = None
) -> np.ndarray:
    """The exact local answer (k, 3) for contacts at velocity ``U`` (k, 3) under
    impulses ``r`` (k, 3) with blocks ``diag(w, v, v)`` (``w``, ``v`` (k,), ``v = w``
    when None) and coefficients ``mu`` (k,)."""
    if v is None:
        b = U - w[:, None] * r
        tangential = -b[:, 1:] / w[:, None]
    else:
        b = U - np.column_stack([w, v, v]) * r
        tangential = -b[:, 1:] / v[:, None]
    normal = np.maximum(-b[:, 0] / w, 0.0)
    size = np.hypot(tangential[:, 0], tangential[:, 1])
    limit = mu * normal
    outside = size > limit
    shrink = np.where(outside, limit / np.where(outside, size, 1.0), 1.0)
    return np.column_stack([normal, tangential * shrink[:, None]])


def local_answer(U: np.ndarray, r: np.ndarray, w, mu, v=None, rolling=None) -> np.ndarray:
    """The local answer (k, q) of contacts with ``q`` = 3 (`local_solution`) or 5
    impulse components. With rolling resistance, ``rolling = (mu_r (k,), w_r (k,),
    coupling (k, 2, 2))``: the normal and friction impulses first (exact given the
    rolling impulse), then the rolling impulse, exact given them: ``l_R = -b_R / w_r``
    scaled onto the disc ``|l_R| <= mu_r l_N`` when outside it, where ``b_R`` is the
    rolling velocity without the contact's own rolling impulse after its new
    friction impulse (``U_R + W_RT dl_T - w_r l_R,old``). Inside the disc the contact
    does not roll (``U_R = 0``); on its boundary it rolls against ``l_R``. Sweeps repeat
    until neither part changes (the natural residual)."""
    new = local_solution(U[:, :3], r[:, :3], w, mu, v)
    if rolling is None:
        return new
    bound, w_r, coupling = rolling
    U_R = U[:, 3:] + np.einsum("kab,kb->ka", coupling, new[:, 1:] - r[:, 1:3])
    tau = r[:, 3:] - U_R / w_r[:, None]
    return np.column_stack([new, onto_disc(tau, bound * new[:, 0])])


def onto_disc(vectors: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Vectors (k, 2) scaled onto the discs ``|x| <= limit`` (k,) when outside them."""
    size = np.hypot(vectors[:, 0], vectors[:, 1])
    outside = size > limit
    return vectors * np.where(outside, limit / np.where(outside, size, 1.0), 1.0)[:, None]


def onto_cones(rows: SweepRows, r: np.ndarray) -> np.ndarray:
    """Impulses (m, q) projected onto the friction cones and the rolling discs (a copy)."""
    cone = np.array(r, dtype=float, order="C")
    rolling = rows.mu if rows.rolling_friction is None else rows.rolling_friction  # unread when q = 3
    kernels().onto_cones(cone, np.ascontiguousarray(rows.mu, dtype=float), np.ascontiguousarray(rolling, dtype=float))
    return cone


def natural_residual(rows: SweepRows, predicted: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Natural residual (m,) of impulses ``r`` (m, 3) for the prediction ``v`` (d,), m/s."""
    return contact_residuals(rows, velocities(rows, predicted, r), r)


def velocities(rows: SweepRows, predicted: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``u = v + M^{-1} sum_k H_k^T r_k`` (d + 1,), with the dummy coordinate, for
    the prediction ``v`` (d,) and the impulses ``r`` (m, q)."""
    u = np.append(predicted, 0.0)
    add_impulses(rows, u, r)
    return u


def contact_residuals(rows: SweepRows, u: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Natural residual (m,) of every contact, m/s (module docstring)."""
    return rows.compiled.residual(u, r)


def add_impulses(rows: SweepRows, u: np.ndarray, r: np.ndarray) -> None:
    """``u += M^{-1} sum_k H_k^T r_k`` in place (u (d + 1,), r (m, q))."""
    rows.compiled.add_impulses(u, r)


def transposed_product(matrix, x: np.ndarray) -> np.ndarray:
    """``matrix.T @ x`` (d,) for a sparse ``matrix`` (k, d) and ``x`` (k,), to the last
    bit scipy's (`sweep_kernels.transposed_product`; scipy's own product for a matrix
    that is not float CSR)."""
    x = np.ascontiguousarray(x, dtype=float)
    if not (isinstance(matrix, sp.csr_matrix) and matrix.dtype == np.float64) or x.shape != (matrix.shape[0],):
        return matrix.T @ x
    out = np.zeros(matrix.shape[1])
    kernels().transposed_product(matrix.indptr, matrix.indices, matrix.data, x, out)
    return out


class CompiledRows:
    """The sweeps and the residual of one `SweepRows` in compiled loops
    (`granular.contact.sweep_kernels`: why, and the arrays' meaning). The sweeps visit the
    contacts colour after colour (`colour_classes`, `visit_order`), the order of the vectorised
    colours they replaced; the contacts' arrays are stored in that order
    (``order[i]`` is the contact at position ``i``), so that a sweep reads them
    front to back (a third faster than through ``order``: `sweep_kernels`). The rows
    of turning spheres are swept on their two-body blocks (`sweep_kernels.pair_blocks`),
    other rows by the generic loops; both give the same iterates bit for bit."""

    def __init__(self, rows: SweepRows):
        m = rows.cols.shape[0]
        dummy = rows.inverse_mass.size - 1
        order, _ = visit_order(rows.cols, dummy)
        self.rows, self.order, self.dummy = rows, order, dummy
        shift = np.zeros((m, 3))
        shift[:, 0] = rows.lower
        if rows.tangent_offset is not None:
            shift[:, 1:3] = rows.tangent_offset
        self.shift = shift[order]
        v = rows.w if rows.w_tangent is None else rows.w_tangent
        self.inverse = (1.0 / np.column_stack([rows.w, v]))[order]
        self.mu = np.ascontiguousarray(rows.mu[order], dtype=float)
        weights = [rows.w, v, v]
        self.rolling = None
        if rows.rolling_friction is not None:
            self.rolling = np.column_stack([rows.rolling_friction, 1.0 / rows.w_rolling, rows.coupling.reshape(m, 4)])[
                order
            ]
            weights += [rows.w_rolling, rows.w_rolling]
        self.weights = np.column_stack(weights)[order]
        self.inverse_mass = np.ascontiguousarray(rows.inverse_mass, dtype=float)
        self.blocks = self._pair_blocks(dummy)

    def _pair_blocks(self, dummy: int) -> tuple | None:
        """The two-body blocks of the sweeps (`sweep_kernels.pair_blocks`), or None when
        some contact's rows do not have their structure (then the generic sweep runs):
        spheres that turn, whose ``d = 6N`` coordinates are N translational blocks, then
        N rotational ones."""
        if dummy % 6:
            return None
        ok, *blocks = kernels().pair_blocks(self.order, *self._rows_arrays(), int(dummy), dummy // 2)
        return tuple(blocks) if ok else None

    def _rows_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows' ``cols`` and ``values`` by contact, in the dtypes the kernels take."""
        return np.ascontiguousarray(self.rows.cols, dtype=np.int64), np.ascontiguousarray(self.rows.values, dtype=float)

    @cached_property
    def generic(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(cols, values, scaled, width)`` of the generic loops, in the sweeps' order
        (`sweep_kernels.visit_order_rows`): gathered only for rows without the two-body
        blocks, whose loops do not read them (they were a third of the time the sweeps'
        arrays took to build in a settling box; benchmarks/README.md, "the sweeps'
        arrays")."""
        return kernels().visit_order_rows(self.order, *self._rows_arrays(), self.inverse_mass, int(self.dummy))

    def sweep(self, u: np.ndarray, r: np.ndarray, scale=None) -> tuple[float, float]:
        """One sweep: every impulse of ``r`` (m, q) its local answer, ``u`` (d + 1,)
        moved with them (both in place; both must be C-contiguous float arrays).
        Returns ``(largest, change)``: the largest natural residual of a contact at
        its visit, in units of its tolerance when ``scale`` is `visit_scale` of the
        tolerances, in m/s when None; and the sum of the squares of those residuals
        (`sweep_kernels.sweep`)."""
        scale = np.ones(self.order.size) if scale is None else scale
        if self.blocks is not None:
            bases, normal, tangent, first, second, rolling_rows = self.blocks
            mass = self.inverse_mass
            if self.rolling is None:
                blocks = (self.order, bases, normal, tangent, first, second, mass)
                return kernels().sweep_blocks(*blocks, self.shift, self.inverse, self.mu, self.weights, scale, u, r)
            blocks = (self.order, bases, normal, tangent, first, second, rolling_rows, mass)
            return kernels().sweep_blocks_rolling(
                *blocks, self.shift, self.inverse, self.mu, self.rolling, self.weights, scale, u, r
            )
        cols, values, scaled, width = self.generic
        common = (self.order, cols, values, width, scaled, self.shift, self.inverse, self.mu)
        if self.rolling is None:
            return kernels().sweep(*common, self.weights, scale, u, r)
        return kernels().sweep_rolling(*common, self.rolling, self.weights, scale, u, r)

    def visit_scale(self, tolerance: np.ndarray) -> np.ndarray:
        """The sweeps' ``scale`` for per-contact tolerances (m,) (m/s): their inverse
        squares, in the arrays' order."""
        return np.ascontiguousarray(1.0 / np.asarray(tolerance, dtype=float)[self.order] ** 2)

    def residual(self, u: np.ndarray, r: np.ndarray) -> np.ndarray:
        """The natural residual (m,) of ``r`` at velocities ``u``, m/s."""
        out = np.empty(self.order.size)
        u, r = np.ascontiguousarray(u, dtype=float), np.ascontiguousarray(r, dtype=float)
        if self.blocks is not None:
            bases, normal, tangent, first, second, rolling_rows = self.blocks
            if self.rolling is None:
                blocks = (self.order, bases, normal, tangent, first, second)
                kernels().residual_blocks(*blocks, self.shift, self.inverse, self.mu, self.weights, u, r, out)
            else:
                blocks = (self.order, bases, normal, tangent, first, second, rolling_rows)
                kernels().residual_blocks_rolling(
                    *blocks, self.shift, self.inverse, self.mu, self.rolling, self.weights, u, r, out
                )
            return out
        cols, values, _, width = self.generic
        common = (self.order, cols, values, width, self.shift, self.inverse, self.mu)
        if self.rolling is None:
            kernels().residual(*common, self.weights, u, r, out)
        else:
            kernels().residual_rolling(*common, self.rolling, self.weights, u, r, out)
        return out

    def add_impulses(self, u: np.ndarray, r: np.ndarray) -> None:
        """``u += M^{-1} sum_k H_k^T r_k`` in place (u (d + 1,), r (m, q))."""
        r = np.ascontiguousarray(r, dtype=float)
        if self.blocks is not None:
            kernels().add_impulses_blocks(self.order, *self.blocks, self.inverse_mass, r, u)
            return
        cols, _, scaled, width = self.generic
        kernels().add_impulses(self.order, cols, width, scaled, r, u)


# -- the way out of a stall: a semismooth Newton method on the same law --------------------
