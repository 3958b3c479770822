"""Time-stepping schemes. Each takes a system and returns a `StepResult` per step.

- ``velocity`` (`velocity.VelocityScheme`): Maury's velocity projection with the
  restitution law, for every system (seed 003; DESIGN section 2).
- ``seed000`` (`seed000.Seed000Scheme`): the velocity scheme (9) of seed 000,
  positions first, for `ConstrainedSystem`.
- ``paoli-schatzman`` (`paoli_schatzman.PaoliSchatzmanScheme`): position-based
  scheme (1.13)-(1.17) of seed 004, for `ConstrainedSystem`.
- ``newmark`` (`newmark.NewmarkScheme`): the projection scheme (P_hbeta) of
  seed 001, for linear systems such as the beam.
"""
