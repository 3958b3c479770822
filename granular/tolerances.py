"""Solver tolerances, in one place.

Tests derive their tolerances from these values, so tightening the solver tightens
the tests.

Units: velocities in m/s (generalised velocity units for a `ConstrainedSystem`),
lengths in m.
"""

from __future__ import annotations

#: Termination tolerance handed to OSQP on the scaled multiplier problem
#: (dimensionless). OSQP finds the active set fast and its polishing then gives an
#: exact answer; when polishing fails (degenerate contact networks), the answer
#: misses the tolerances below and `granular.contact.interior_point.interior_point` solves
#: the problem again to them.
OSQP_EPS = 1e-4
OSQP_MAX_ITER = 20000

#: Largest violation of ``G u >= b`` accepted after a projection, as a fraction of
#: the velocity scale of the problem ``max_k max(|G_k v - b_k|, |G_k v|)``. A
#: position then violates its gap by at most ``h`` times this violation
#: (1e-9 x 1 m/s x 1e-3 s = 1e-12 m for a 1 m/s problem).
VELOCITY_TOLERANCE = 1e-9

#: Largest natural residual ``max_k min(W_kk lambda_k, s_k)`` accepted, as the same
#: fraction: a contact may push while separating at most this fast.
COMPLEMENTARITY_TOLERANCE = 1e-6

#: Relative part of the approach threshold of the restitution law: a contact
#: impacts when its normal velocity is below ``-(h |G_k M^-1 f| +
#: APPROACH_TOLERANCE max_k |G_k u|)``; slower approaches are resting contacts.
APPROACH_TOLERANCE = 1e-9

#: Initial gaps down to ``-OVERLAP_TOLERANCE * (r_i + r_j)`` are accepted as touching.
OVERLAP_TOLERANCE = 1e-9

#: Relative kinetic-energy increase tolerated when checking that an impact
#: cluster does not create energy (round-off only).
ENERGY_ROUNDOFF = 1e-12

#: Extra neighbour-search distance, as a fraction of the smallest radius: pairs
#: this much beyond the speed-based margin are kept too, so that a projection
#: speeding a sphere up by less than ``SEARCH_SKIN r / (2 h)`` needs no redo.
SEARCH_SKIN = 0.05

#: Coulomb fixed point in 3D (`granular.contact.friction`): stop when the shift
#: ``sigma = mu |T u|`` moves by less than this fraction of the velocity scale of
#: the problem; an answer violating a gap bound by more than this fraction (and
#: more than VELOCITY_TOLERANCE) is rejected. Ten times the complementarity
#: tolerance: a sticking contact may creep, and a gap close, at this fraction of
#: the velocity scale (2e-5 m/s in a 2 m/s pour: tens of microns over seconds,
#: 2e-8 m of overlap per 1 ms step). 1e-6 stalled the fixed point in a pour (its
#: SOCPs are exact to about 1e-7 of the scale, and noise accumulates over 100s of
#: coupled contacts).
FRICTION_TOLERANCE = 1e-5

#: Nonsmooth Gauss-Seidel for spheres (`granular.contact.friction_gauss_seidel`): the
#: answer puts every contact within this fraction of the velocity scale of the
#: problem (m/s), or within the gap mismatch inherited from earlier steps if
#: larger (`granular.contact.friction.sweep_tolerance`), of its local Coulomb law: a
#: sticking contact may creep, a gap close or a contact push while separating at
#: that speed. 6e-4 m/s in the sand pile's 3 m/s pour (0.6 micron of overlap per
#: 1 ms step), 2e-6 m/s on the resting heap (scale ~ g h). The sweeps also aim at
#: an eighth of it in root mean square over the loaded contacts: with 1e-5 (and 1e-4
#: accepted at once) the settling pile stalled at 1.1-1.4 times the tolerance, loops of
#: sticking contacts being unable to close the gaps that earlier steps left (before
#: the gap closure; the aim's later measurements are at
#: `granular.contact.friction_gauss_seidel.TARGET`).
FRICTION_SWEEP_TOLERANCE = 2e-4

#: Largest number of nonsmooth Gauss-Seidel sweeps of one solve of the 3D Coulomb
#: law for spheres before `ConvergenceError` (the pile's steps take 20 to a few
#: 1000). A cap on work, not on accuracy:
#: the answer is accepted by the same residual test whatever the count. 5,000 stopped
#: a settling pour of frictional points (`granular/scenes/sand_pile.py`, seed 3, t = 0.887 s)
#: at 1.5 times its tolerance while the sweeps and Newton's retries were still
#: descending; with 20,000 it runs to rest. A solve that does stall for good takes
#: the longer to say so (tuned; benchmarks/README.md, "Measurements behind the
#: constants").
FRICTION_SWEEPS = 20000
