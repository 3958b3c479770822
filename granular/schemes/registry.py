"""The scheme registry: each scheme's name, class, and what it needs of a system.

`make_scheme` builds a scheme by its name (a deprecated name warns), `check_options`
refuses a keyword the scheme does not take. Each scheme's constructor calls
`refuse_unless_supported` first, so a system the scheme cannot integrate is refused
with a one-line `InvalidInputError` before the first step, whoever builds it.

What a scheme needs:

- a protocol of `granular.protocols` (`MechanicalSystem`, `CoordinateSystem`,
  `LinearSystem`);
- whether it handles Coulomb friction (only Maury's velocity projection does);
- whether it is explicit in the stiffness: the velocity scheme, Dzonou, Monteiro
  Marques and Paoli's scheme (9) and Paoli and Schatzman's scheme evaluate the
  elastic force at a known position, so on ``M q'' + S q = F`` they are the
  symplectic Euler or the central difference scheme, both stable only for
  ``dt w_max < 2`` (``w_max^2`` the largest eigenvalue of ``S v = w^2 M v``). A
  linear system that declares its stiffness is refused beyond that limit,
  which would otherwise blow up (a beam went to 1e155 J in 0.02 s); a system
  whose stiffness is hidden in its force callable cannot be checked and is
  stopped by the non-finite check of `Simulation.step` instead.

Options are the keyword parameters of the scheme class's constructor
(`SchemeEntry.options`).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import warnings
from dataclasses import dataclass

import numpy as np

from .. import protocols
from ..errors import InvalidInputError, UnknownOptionError


@dataclass(frozen=True)
class SchemeEntry:
    """One scheme: its user-facing ``name``, its class ``module:cls`` under
    `granular.schemes`, the protocol it ``needs`` (with ``needs_text`` for errors),
    whether it takes frictional systems and whether its elastic force is explicit."""

    name: str
    module: str
    cls: str
    needs: type
    needs_text: str
    friction: bool = False
    explicit_stiffness: bool = True
    citation: str = ""

    def scheme_class(self):
        return getattr(importlib.import_module(f"granular.schemes.{self.module}"), self.cls)

    def options(self) -> list[str]:
        """The scheme's own keywords (beyond ``system, dt, solver``)."""
        parameters = inspect.signature(self.scheme_class().__init__).parameters
        return [p for p in parameters if p not in ("self", "system", "dt", "solver")]


def _linear(system) -> bool:
    return protocols.is_linear(system)


#: Name -> entry, in the order the schemes are listed to users.
SCHEMES = {
    "velocity": SchemeEntry(
        "velocity",
        "maury",
        "MauryScheme",
        protocols.MechanicalSystem,
        "a SphereWorld or a ConstrainedSystem",
        friction=True,
        citation="Maury's velocity projection with Moreau's impact law (Bernicot and Lefebvre-Lepot, 2010)",
    ),
    "dzonou-monteiro-marques": SchemeEntry(
        "dzonou-monteiro-marques",
        "dzonou_monteiro_marques",
        "DzonouMonteiroMarquesScheme",
        protocols.CoordinateSystem,
        "a ConstrainedSystem",
        citation="Dzonou, Monteiro Marques and Paoli, A convergence result for a vibro-impact problem "
        "with a general inertia operator, 2009",
    ),
    "paoli-schatzman": SchemeEntry(
        "paoli-schatzman",
        "paoli_schatzman",
        "PaoliSchatzmanScheme",
        protocols.CoordinateSystem,
        "a ConstrainedSystem",
        citation="Paoli and Schatzman, A numerical scheme for impact problems, 1999",
    ),
    "newmark": SchemeEntry(
        "newmark",
        "newmark",
        "NewmarkScheme",
        protocols.LinearSystem,
        "a linear system with a constant mass, `stiffness` (d, d) and `load(t)` (d,) (a ConstrainedSystem "
        "built with stiffness= and load=, or a Beam)",
        explicit_stiffness=False,
        citation="Dumont and Paoli, Vibrations of a beam between obstacles. Convergence of a fully "
        "discretized approximation, 2006",
    ),
}


def entry(name: str) -> SchemeEntry:
    """The entry of scheme ``name`` (a current name), or a one-line error listing them."""
    try:
        return SCHEMES[name]
    except (KeyError, TypeError):
        raise InvalidInputError(f"scheme must be one of {tuple(SCHEMES)}, got {name!r}") from None


def refuse_unless_supported(name: str, system, dt: float) -> None:
    """Raise `InvalidInputError` (one line) if scheme ``name`` cannot integrate ``system``
    with step ``dt``: the protocol it needs, friction, the explicit stability limit."""
    scheme = entry(name)
    offered = _linear(system) if scheme.needs is protocols.LinearSystem else isinstance(system, scheme.needs)
    if not offered:
        raise InvalidInputError(
            f"scheme {name!r} needs {scheme.needs_text}; {type(system).__name__} "
            f"does not offer it (granular.protocols.{scheme.needs.__name__})"
        )
    if not scheme.friction and protocols.has_friction(system):
        raise InvalidInputError(
            f"scheme {name!r} has no Coulomb friction; use scheme='velocity' "
            "(granular.contact.friction) or set every friction coefficient to 0"
        )
    if scheme.explicit_stiffness and _linear(system):
        w_max = highest_frequency(system)
        if not dt * w_max < 2.0:
            raise InvalidInputError(
                f"scheme {name!r} is explicit in the stiffness and unstable for dt = {dt:g} s "
                f">= 2 / w_max = {2.0 / w_max:.3g} s; use scheme='newmark' or a smaller dt"
            )


def highest_frequency(system) -> float:
    """``w_max`` (rad/s) of a linear system: the largest root of ``det(S - w^2 M) = 0``."""
    import scipy.linalg

    t0, q0, _ = system.initial_state()
    mass = system.metric(t0, q0).matrix()
    stiffness = np.asarray(system.stiffness, dtype=float)
    d = stiffness.shape[0]
    largest = scipy.linalg.eigh(stiffness, mass, eigvals_only=True, subset_by_index=[d - 1, d - 1])[0]
    return float(np.sqrt(max(largest, 0.0)))


#: Former scheme names, still accepted with a DeprecationWarning: old name -> name.
DEPRECATED_SCHEMES = {"seed000": "dzonou-monteiro-marques"}


def make_scheme(name: str, system, dt: float, solver: str, **options):
    """The scheme object named ``name`` for ``system`` (a deprecated name warns); the
    scheme refuses a system it cannot integrate (`registry.refuse_unless_supported`)."""
    scheme = entry(current_scheme_name(name))
    return scheme.scheme_class()(system, dt, solver=solver, **options)


def current_scheme_name(name: str) -> str:
    """``name``, or the current name of a deprecated one (with a DeprecationWarning)."""
    if isinstance(name, str) and name in DEPRECATED_SCHEMES:
        # stacklevel 4: the line that called Simulation(...), through make_scheme.
        warnings.warn(
            f"scheme {name!r} is deprecated: use scheme={DEPRECATED_SCHEMES[name]!r}", DeprecationWarning, stacklevel=4
        )
        return DEPRECATED_SCHEMES[name]
    return name


def scheme_keywords(scheme) -> list[str]:
    """The keywords `Simulation` takes with scheme ``scheme``: its own and the scheme's
    options (an unknown scheme: its own only; `make_scheme` then names the schemes)."""
    own = ["dt", "solver", "scheme"]
    name = DEPRECATED_SCHEMES.get(scheme, scheme) if isinstance(scheme, str) else scheme
    if name not in SCHEMES:
        return own
    return own + SCHEMES[name].options()


def check_options(scheme, options: dict) -> None:
    """Raise `UnknownOptionError` for a keyword of ``options`` the scheme does not take,
    naming the closest valid keyword: ``**options`` would otherwise hand a misspelling
    to the scheme, whose TypeError says neither what was meant nor what is valid."""
    valid = scheme_keywords(scheme)
    for key in options:
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UnknownOptionError(
                f"Simulation() got an unknown keyword {key!r}{hint}; with scheme {scheme!r} it takes {', '.join(valid)}"
            )
