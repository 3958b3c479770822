"""StepResult: what one step returns. A value; the caller decides what to keep."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..constraints import Contacts


@dataclass(frozen=True)
class SolverStats:
    """How the projection(s) of a step went.

    status : "unconstrained" (nothing to project), "solved", "inaccurate", ...
    iterations : backend iterations summed over the step's projections.
    violation : largest constraint violation left, velocity units.
    seconds : dict of wall times (s): "neighbors", "assembly", "solve" (the restitution
        stage and the projection), "total"; Maury's scheme adds "impacts" (the
        restitution stage's share of "solve") and, when it closes the gaps, "closure".
    residual : the Coulomb law's largest residual over the step's contacts (m/s;
        measured by the sphere sweeps, 0 elsewhere).
    missed : 0 when every contact law held to its tolerance; otherwise the ratio of
        the residual to the tolerance at the worst contact of a best answer the step
        kept instead of stopping (see the schemes' ``strict``).
    """

    status: str = "unconstrained"
    iterations: int = 0
    violation: float = 0.0
    seconds: dict = field(default_factory=dict)
    residual: float = 0.0
    missed: float = 0.0


@dataclass(frozen=True)
class StepResult:
    """The state at the end of a step and what happened in it.

    Attributes
    ----------
    t : float
        Time at the end of the step (s).
    positions, velocities : arrays
        ``q^{n+1}`` and ``u^{n+1}``, shaped like the system's state ((N, 3) for a
        `SphereWorld`, (d,) for a `ConstrainedSystem`).
    contacts : Contacts
        Every constraint the step considered, with its impulse (N s).
    predicted : array
        The velocity predicted without contacts, ``v = u^n + h M^{-1} f``; the
        discrete momentum balance is ``M (u^{n+1} - v) = G^T lambda``.
    kinetic_energy, potential_energy : float
        At the end of the step (J); potential energy of gravity (spheres) or of the
        system's potential (constrained systems), user forces excluded.
    dissipated_energy : float
        Energy the contacts removed in this step, ``KE(v) - KE(u^{n+1}) +
        wall_work = -1/2 lambda^T G (u^{n+1} + v) + wall_work`` (J), >= 0 up to
        solver tolerance; in a step where a contact bounces under a force it
        may fall below by the work of the force impulse that contact takes
        (about ``h/2 lambda_k |G_k M^-1 f|``, `granular.schemes.velocity`).
        The total energy then obeys ``E^{n+1} = E^n - dissipated - 1/2 h^2
        |f|^2_{M^-1} - h lambda^T G M^{-1} f + closure_energy`` for a constant
        force ``f``.
        Kinetic energy includes the rotation, ``1/2 sum J_i |omega_i|^2``; for a
        rotating world ``dissipated_energy`` counts it too (the balance above holds
        on the generalised velocity ``(u, omega)``).
    radii : (N,) array or None
        Radii at ``t`` (spheres).
    solver : SolverStats
    angular_velocities : (N, 3) array or None
        Angular velocities ``omega^{n+1}`` (rad/s, world frame) of spheres; None for
        systems without rotation.
    orientations : (N, 4) array or None
        Orientations at ``t`` as unit quaternions ``(w, x, y, z)`` (body to world).
    wall_work : float
        Work (J) the moving walls did on the spheres in this step (a piston's push, a
        drum's drag; `granular.schemes.maury._wall_work`), 0 with still walls. Over the
        step the walls' mean power is ``wall_work / dt`` (W), and a drum turning at
        ``omega`` needs the torque ``wall_work / (omega dt)`` (N m). The dissipated
        energy counts it: ``dissipated_energy = KE(v) - KE(u^{n+1}) + wall_work``, the
        energy the contacts took, >= 0 for any wall motion.
    closure_energy : float
        Potential energy (J) the gap closure gave the spheres in this step
        (`granular.contact.gap_closure`: frictional spheres moved after their
        velocities are settled, by ``dq``): ``-sum_i m_i g . dq_i``, of the order of
        the weight times ``h`` times the sweeps' tolerance (more for spheres sliding
        inside curved walls); 0 without it. The
        velocities, and so the kinetic and dissipated energies, are not changed by it.
    """

    t: float
    positions: np.ndarray
    velocities: np.ndarray
    contacts: Contacts
    predicted: np.ndarray
    kinetic_energy: float
    potential_energy: float
    dissipated_energy: float
    radii: np.ndarray | None = None
    solver: SolverStats = field(default_factory=SolverStats)
    angular_velocities: np.ndarray | None = None
    orientations: np.ndarray | None = None
    wall_work: float = 0.0
    closure_energy: float = 0.0

    @property
    def overlap(self) -> float:
        """Deepest overlap among the step's contacts, ``max(0, -min D)`` (m), with ``D``
        the gaps at the start of the step (`Contacts.gap`): 0 unless the world
        accepts overlaps (``initial_overlaps="separate"``) or a solver tolerance."""
        return float(max(0.0, -self.contacts.gap.min(initial=0.0)))

    @property
    def total_energy(self) -> float:
        """Kinetic plus potential energy (J)."""
        return self.kinetic_energy + self.potential_energy
