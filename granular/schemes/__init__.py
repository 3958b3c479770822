"""Time-stepping schemes. Each takes a system and returns a `StepResult` per step;
`registry` lists them with what each needs of a system (`granular.protocols`), and
`common` holds what they share. A step is ``state, result = scheme.advance(state)``.

- ``velocity`` (`maury.MauryScheme`; `velocity` is the module's former name):
  Maury's velocity projection with the restitution law, for every system (Bernicot and Lefebvre-Lepot, *Existence
  results for non-smooth second order differential inclusions, convergence result
  for a numerical scheme and application to the modelling of inelastic
  collisions*, 2010; the discrete law is described in `granular.schemes.maury`).
- ``dzonou-monteiro-marques`` (`dzonou_monteiro_marques.DzonouMonteiroMarquesScheme`):
  the velocity scheme (9) of Dzonou, Monteiro Marques and Paoli (*A convergence
  result for a vibro-impact problem with a general inertia operator*, 2009),
  positions first, for `ConstrainedSystem`. Its former scheme string is kept as a
  deprecated alias (`granular.schemes.registry.DEPRECATED_SCHEMES`).
- ``paoli-schatzman`` (`paoli_schatzman.PaoliSchatzmanScheme`): position-based
  scheme (1.13)-(1.17) of Paoli and Schatzman (*A numerical scheme for impact
  problems*, 1999), for `ConstrainedSystem`.
- ``newmark`` (`newmark.NewmarkScheme`): the projection scheme (P_hbeta) of Dumont
  and Paoli (*Vibrations of a beam between obstacles. Convergence of a fully
  discretized approximation*, 2006), for linear systems (`granular.protocols.LinearSystem`)
  such as the beam or a `ConstrainedSystem` built with ``stiffness=`` and ``load=``.
"""
