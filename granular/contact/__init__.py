"""The contact solvers: every problem a step poses about its contacts, and the methods
that answer it.

The frictionless projection (Maury's step, Moreau's impact law) is
``min 1/2 |u - v|_M^2  s.t.  G u >= b``, solved by `granular.contact.projection.project`
with its methods (`active_set`, `interior_point`, `pivoting`, the OSQP and cvxpy
adapters of `backends`) and its jam check (linear programs). The Coulomb-Maury law adds
tangent rows and friction coefficients (`granular.contact.friction.project_frictional`:
the sphere sweeps of `friction_gauss_seidel`, planar Lemke pivoting, the conic fixed
point of `conic`); `impact` states Newton's impact law with Coulomb friction on the
same machinery. Every answer passes `kkt` before it is returned.

Modules are imported where used (this package imports none of them), so that the
numba kernels and the conic solver load only for the problems that need them.
"""
