"""What a renderer draws, as plain data: no graphics library here.

A system's ``describe()`` dict says how to draw it. ``{"kind": "spheres"}`` is
drawn from the trajectory's positions and radii; any other system names an
*adapter*, a pure-numpy function ``adapter(description, q) -> Shapes``, by its
registered name under the key ``"adapter"``, e.g.::

    {"kind": "double_pendulum", "adapter": "double_pendulum", "lengths": [1.0, 1.0], "wall_x": 1.2}

A run file is data: it names its adapter, and the name is looked up in a registry
(`resolve_adapter`); nothing named in a file is ever imported or called. The
built-in systems' adapters are registered under their kinds' names (``"ball"``,
``"impact_oscillator"``, ``"double_pendulum"``, ``"block_on_incline"``, ``"rod"``,
``"beam"``; see `adapter_names`). Run files of earlier versions stored
``"module:function"`` strings; the ones granular wrote are read through a fixed
table (`LEGACY_ADAPTERS`), never imported. A user-defined system that wants
drawing registers its adapter in Python, in every process that draws it or its
run files::

    import granular.drawing.adapters
    granular.drawing.adapters.register_adapter("my_arm", arm_shapes)
    system = gr.ConstrainedSystem(..., drawing={"kind": "arm", "adapter": "my_arm", ...})

Any other adapter value is refused with `UnknownAdapterError`.

The renderer (`granular.render`) turns `Shapes` into pyvista meshes; the physics
never imports it. Units are the system's (m for every example).
"""

from __future__ import annotations

import re
from typing import Callable

import numpy as np

from . import systems as system_shapes
from ..errors import InvalidInputError, TrajectoryFileError, UnknownAdapterError
from .shapes import Shapes

__all__ = [
    "Shapes",
    "adapter_names",
    "register_adapter",
    "unregister_adapter",
    "resolve_adapter",
    "shapes_of",
    "check_description",
    "stable_name",
    "UnknownAdapterError",
    "LEGACY_ADAPTERS",
]


# -- the adapter registry ---------------------------------------------------------------------
#: What a registered name looks like: letters, digits, "_" and "-". No ":" or ".",
#: so a name can never be mistaken for a module path.
ADAPTER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")

#: The ``"module:function"`` strings that earlier versions wrote into run files, and
#: the registered name each one means now. Only these exact strings are understood.
LEGACY_ADAPTERS = {
    "granular.systems.examples:ball_shapes": "ball",
    "granular.systems.examples:oscillator_shapes": "impact_oscillator",
    "granular.systems.examples:pendulum_shapes": "double_pendulum",
    "granular.systems.frictional:block_shapes": "block_on_incline",
    "granular.systems.frictional:rod_shapes": "rod",
    "granular.systems.beam:beam_shapes": "beam",
}

_registry: dict[str, Callable] = {}


def _builtin_adapters() -> dict[str, Callable]:
    shapes = system_shapes
    return {
        "ball": shapes.ball_shapes,
        "impact_oscillator": shapes.oscillator_shapes,
        "double_pendulum": shapes.pendulum_shapes,
        "block_on_incline": shapes.block_shapes,
        "rod": shapes.rod_shapes,
        "beam": shapes.beam_shapes,
    }


def _adapters() -> dict[str, Callable]:
    """The registry, with the built-in adapters added on first use."""
    if not _registry:
        _registry.update(_builtin_adapters())
    return _registry


def adapter_names() -> list[str]:
    """The registered adapter names, sorted."""
    return sorted(_adapters())


def register_adapter(name: str, function: Callable, replace: bool = False) -> None:
    """Register ``function(description, q) -> Shapes`` as the drawing adapter ``name``.

    A system whose ``describe()`` has ``"adapter": name`` is then drawn by it, and so
    are its run files once loaded in a process that registered it. ``name`` is letters,
    digits, ``_`` and ``-`` (`ADAPTER_NAME`). Registering a taken name for another
    function raises `InvalidInputError` unless ``replace`` is True.
    """
    if not isinstance(name, str) or not ADAPTER_NAME.match(name):
        raise InvalidInputError(f"an adapter name is letters, digits, '_' and '-' starting with a letter, got {name!r}")
    if not callable(function):
        raise InvalidInputError(
            f"adapter {name!r} must be callable as function(description, q), got {type(function).__name__}"
        )
    registry = _adapters()
    if name in registry and registry[name] is not function and not replace:
        raise InvalidInputError(
            f"drawing adapter {name!r} is already registered (to "
            f"{registry[name].__module__}.{registry[name].__qualname__}); "
            "pass replace=True to replace it"
        )
    registry[name] = function


def unregister_adapter(name: str) -> None:
    """Remove the drawing adapter ``name`` that `register_adapter` added (systems and run
    files naming it are then drawn only once it is registered again). The built-in
    adapters stay: removing one, or a name not registered, raises `InvalidInputError`."""
    if name in _builtin_adapters():
        raise InvalidInputError(f"drawing adapter {name!r} is built in and stays registered")
    registry = _adapters()
    if name not in registry:
        raise InvalidInputError(f"no drawing adapter {name!r} is registered (registered: {', '.join(adapter_names())})")
    del registry[name]


def _unknown(value, kind) -> UnknownAdapterError:
    return UnknownAdapterError(
        f"unknown drawing adapter {value!r} for system kind {kind!r} (registered: "
        f"{', '.join(adapter_names())}); a run file names its adapter and never code to run, and a "
        "user-defined system registers its adapter with granular.drawing.adapters.register_adapter"
    )


def stable_name(value, kind=None) -> str:
    """The registered-name form of an adapter value: the name itself, or the name a
    known legacy ``"module:function"`` string means. Does not require the name to be
    registered yet; raises `UnknownAdapterError` for anything else (another
    ``"module:function"`` string, a non-string)."""
    if isinstance(value, str) and value in LEGACY_ADAPTERS:
        return LEGACY_ADAPTERS[value]
    if isinstance(value, str) and ADAPTER_NAME.match(value):
        return value
    raise _unknown(value, kind)


def resolve_adapter(value, kind=None) -> Callable:
    """The registered function for an adapter value (a name or a legacy string)."""
    name = stable_name(value, kind)
    function = _adapters().get(name)
    if function is None:
        raise _unknown(value, kind)
    return function


def check_description(description: dict) -> dict:
    """``description`` with a legacy adapter string replaced by its name; raises
    `UnknownAdapterError` for an adapter that names code rather than a name.

    Called on every run file read: a name that is not (yet) registered passes, since
    the program that reads the file may register it before drawing.
    """
    if not isinstance(description, dict):
        raise TrajectoryFileError(f"the system description must be a JSON object, got {type(description).__name__}")
    adapter = description.get("adapter")
    if adapter is None:
        return description
    return {**description, "adapter": stable_name(adapter, description.get("kind"))}


def shapes_of(description: dict, q: np.ndarray, radii: np.ndarray | None = None) -> Shapes:
    """The shapes of one frame of a system described by ``description``.

    ``q`` is the frame's positions ((N, 3) for spheres, (d,) otherwise). The adapter
    is found in the registry by name (`resolve_adapter`), never imported.

    Raises
    ------
    ValueError
        The description names no adapter.
    UnknownAdapterError
        The adapter is not a registered name nor a known legacy string.
    """
    if description.get("kind") == "spheres":
        return Shapes(sphere_centres=np.asarray(q).reshape(-1, 3), sphere_radii=np.asarray(radii))
    adapter = description.get("adapter")
    if not adapter:
        raise ValueError(f"system kind {description.get('kind')!r} has no drawing adapter")
    return resolve_adapter(adapter, description.get("kind"))(description, np.asarray(q))
