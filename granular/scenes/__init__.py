"""Scenes: finding scene files, their parameters, building their systems, their figures.

The scenes that ship with granular are the other modules of this package
(``python -m granular.scenes.box_pour`` runs one as a script); files whose name
starts with ``_`` are helpers, not scenes. A scene is a Python file (where they are
searched: `scene_directories`) whose docstring's first line describes it. It defines

- ``build(**parameters)``, returning the system to simulate (required);
- ``PARAMETERS = dict(name=default, ...)``, the parameters ``build`` takes, each of
  the type of its default: ``bool``, ``int``, ``float`` or ``str``
  (``granular run SCENE --set name=value`` overrides them);
- ``PARAMETER_HELP = dict(name="what it is (unit)", ...)``, shown by
  ``granular scenes SCENE``;
- ``DEFAULTS = dict(duration=s, dt=s, record_every=steps, ...)``: the run's
  settings; other keys (``scheme``, ``solver``, scheme options) go to
  `granular.Simulation`;
- ``summary(trajectory) -> dict``: the run's figures (numbers or short strings,
  keyed by name), printed by ``granular run`` and tabulated by ``granular sweep``.
  It may also be given the frames of a run that failed (a jam), so it should use
  only what the frames hold.

A run made through the command stores where it came from in ``trajectory.meta``
(`provenance`): ``scene``, ``scene_file``, ``scene_sha256``, ``parameters``,
``duration`` (s), ``simulation_options``, next to the ``dt``, ``scheme``,
``solver`` and ``record_every`` that `Simulation` records; `rebuild_simulation`
makes the same simulation from them, so a run file is enough to repeat its run.

Errors: `UnknownSceneError` and `ParameterError` are the user's (`InvalidInputError`,
exit status 2); `SceneError` is the scene file's (a `GranularError`, exit 1).
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import inspect
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from ..errors import GranularError, InvalidInputError, ParameterError, SceneError, UnknownSceneError
from ..schemes.registry import scheme_keywords
from ..simulation import Simulation

#: The scenes that ship with granular: the files of this package (``granular/scenes/``),
#: installed with it by a wheel as by an editable install.
PACKAGED_SCENES = Path(__file__).resolve().parent

#: Run settings when a scene's DEFAULTS do not give them.
FALLBACK_DEFAULTS = dict(duration=1.0, dt=1e-3, record_every=10)
PARAMETER_TYPES = (bool, int, float, str)  # bool first: a bool is also an int
_TYPE_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


# -- finding and loading scenes ---------------------------------------------------------
def scene_directories() -> list[Path]:
    """The directories searched for scenes, in order (see the module docstring)."""
    listed = os.environ.get("GRANULAR_SCENES")
    if listed:
        return [Path(p).expanduser() for p in listed.split(os.pathsep) if p]
    candidates = [Path.cwd() / "scenes", PACKAGED_SCENES]
    found = []
    for directory in candidates:
        if directory.is_dir() and all(directory.resolve() != d.resolve() for d in found):
            found.append(directory)
    return found


def find_scenes() -> dict[str, Path]:
    """Scene name -> file, first directory wins."""
    scenes: dict[str, Path] = {}
    for directory in scene_directories():
        for name, path in scenes_in(directory).items():
            scenes.setdefault(name, path)
    return scenes


def scenes_in(directory: Path) -> dict[str, Path]:
    """Scene name -> file of one directory, by name; ``_*.py`` files are helpers, not scenes."""
    if not directory.is_dir():
        return {}
    return {path.stem: path for path in sorted(directory.glob("*.py")) if not path.name.startswith("_")}


def scene_description(path: Path) -> str:
    """The first paragraph of the scene's module docstring on one line (a summary line
    that wraps is joined, not cut), read without running the file."""
    try:
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return "(unreadable)"
    if not docstring:
        return "(no description)"
    paragraph = docstring.strip().split("\n\n")[0]  # the first line may break mid-sentence
    return " ".join(paragraph.split())


def resolve_scene(name: str) -> Path:
    """The file of scene ``name`` (a name, or a path ending in ``.py``); `UnknownSceneError` if none."""
    path = Path(name)
    if path.suffix == ".py":
        if not path.is_file():
            raise UnknownSceneError(f"no scene file at {path}")
        return path
    scenes = find_scenes()
    if name not in scenes:
        known = ", ".join(sorted(scenes)) or "none"
        where = ", ".join(str(d) for d in scene_directories()) or "no scenes directory found"
        raise UnknownSceneError(
            f"unknown scene {name!r} (known: {known}; searched {where}; 'granular scenes' lists them)"
        )
    return scenes[name]


def load_scene(path) -> ModuleType:
    """Import a scene file as a module (not as ``__main__``: its demo does not run)."""
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SceneError(f"cannot import scene file {path}: {error}") from error
    return load_scene_source(source, path)


def load_scene_source(source: str, path) -> ModuleType:
    """Import a scene from its source text; ``path`` names it (and its directory is on
    ``sys.path`` while it imports, for helper modules beside it).

    A sweep sends the source to its workers, which need granular installed but not
    the scene file: a cluster's machines may not share the client's disk.
    """
    path = Path(path)
    name = "granular_scene_" + "".join(c if c.isalnum() else "_" for c in path.stem)
    module = ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    directory = str(path.parent.resolve())
    sys.path.insert(0, directory)
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)
    except Exception as error:  # the scene's own code: report it in one line
        sys.modules.pop(name, None)
        raise SceneError(f"scene {path.stem!r} failed to import: {type(error).__name__}: {error}") from error
    finally:
        sys.path.remove(directory)
    if not callable(getattr(module, "build", None)):
        raise SceneError(f"scene {path.stem!r} ({path}) has no build() function")
    declared_parameters(module, path.stem)  # a malformed PARAMETERS is the scene's error, said now
    return module


def scene_sha256(path) -> str:
    """SHA-256 of a scene file's bytes (hex), stored with each run to tell if the scene changed."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# -- parameters ---------------------------------------------------------------------------
def declared_parameters(module: ModuleType, scene: str) -> dict:
    """The scene's ``PARAMETERS`` (name -> default), checked: names that ``build``
    accepts, defaults of a type of `PARAMETER_TYPES`. ``{}`` when none are declared."""
    declared = getattr(module, "PARAMETERS", None)
    if declared is None:
        return {}
    if not isinstance(declared, dict):
        raise SceneError(f"scene {scene!r}: PARAMETERS must be a dict of name=default, not a {type(declared).__name__}")
    signature = inspect.signature(module.build)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    for name, default in declared.items():
        if not (isinstance(name, str) and name.isidentifier()):
            raise SceneError(f"scene {scene!r}: parameter name {name!r} is not an identifier")
        if type(default) not in PARAMETER_TYPES:
            raise SceneError(
                f"scene {scene!r}: parameter {name!r} has default {default!r} of type "
                f"{type(default).__name__}; defaults must be bool, int, float or str"
            )
        if not takes_any and name not in signature.parameters:
            raise SceneError(f"scene {scene!r}: build() has no argument {name!r} for its parameter {name!r}")
    unknown = set(getattr(module, "PARAMETER_HELP", {}) or {}) - set(declared)
    if unknown:
        raise SceneError(
            f"scene {scene!r}: PARAMETER_HELP names {', '.join(sorted(unknown))}, which PARAMETERS does not declare"
        )
    return dict(declared)


def parameter_help(module: ModuleType) -> dict:
    """The scene's ``PARAMETER_HELP`` (name -> description with its unit), possibly empty."""
    return dict(getattr(module, "PARAMETER_HELP", {}) or {})


def _listing(declared: dict) -> str:
    return ", ".join(f"{name}={default!r}" for name, default in declared.items()) or "none"


def convert(scene: str, declared: dict, name: str, text: str):
    """``text`` as a value of parameter ``name``, of the type of its default.

    Integers accept an integral number such as ``1e3``; booleans ``true``/``false``
    (also ``yes``/``no``, ``1``/``0``, ``on``/``off``); numbers must be finite.
    """
    if name not in declared:
        close = difflib.get_close_matches(name, list(declared), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ParameterError(
            f"unknown parameter {name!r} for scene {scene!r}{hint}; its parameters: {_listing(declared)}"
        )
    default = declared[name]
    kind = type(default)
    value = _parse(kind, text.strip())
    if value is None:
        raise ParameterError(
            f"parameter {name!r} of scene {scene!r} takes {_TYPE_NAMES[kind]} "
            f"(default {default!r}), got {text!r}; its parameters: {_listing(declared)}"
        )
    return value


def _parse(kind: type, text: str):
    """The value of type ``kind`` written ``text``, or None if it is not one."""
    if kind is str:
        return text
    if kind is bool:
        return {
            "true": True,
            "yes": True,
            "on": True,
            "1": True,
            "false": False,
            "no": False,
            "off": False,
            "0": False,
        }.get(text.lower())
    try:
        number = float(text)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    if kind is float:
        return number
    try:  # int: exactly, or an integral float such as 1e3
        return int(text)
    except ValueError:
        return int(number) if number.is_integer() else None


def split_assignment(text: str) -> tuple[str, str]:
    """``"name=value"`` -> ``("name", "value")``; `ParameterError` without ``=``."""
    name, sign, value = text.partition("=")
    if not sign or not name.strip():
        raise ParameterError(f"--set expects NAME=VALUE, got {text!r}")
    return name.strip(), value


def parse_settings(scene: str, declared: dict, assignments, several: bool = False) -> dict:
    """The values of ``--set NAME=VALUE`` options, by name.

    With ``several`` (a sweep), a value may list values separated by commas
    (``restitution=0.5,0.7``) and each name maps to the list of its values;
    otherwise to one value. Raises `ParameterError` for an unknown name, a value of
    the wrong type, a name set twice or a value listed twice.
    """
    if assignments and not declared:
        raise ParameterError(f"scene {scene!r} declares no parameters (no PARAMETERS), so --set cannot change it")
    chosen: dict = {}
    for assignment in assignments or []:
        name, text = split_assignment(assignment)
        if name in chosen:
            raise ParameterError(
                f"parameter {name!r} is set twice; give one --set {name}=... "
                f"({'with its values separated by commas' if several else 'with one value'})"
            )
        if not several:
            chosen[name] = convert(scene, declared, name, text)
            continue
        values = [convert(scene, declared, name, part) for part in text.split(",")]
        repeated = [v for k, v in enumerate(values) if v in values[:k]]
        if repeated:
            raise ParameterError(f"parameter {name!r} lists {repeated[0]!r} twice")
        chosen[name] = values
    return chosen


def parameters_for(module: ModuleType, scene: str, assignments=()) -> dict:
    """The scene's parameters with the ``--set`` assignments applied (name -> value)."""
    declared = declared_parameters(module, scene)
    return {**declared, **parse_settings(scene, declared, assignments)}


# -- building and running -------------------------------------------------------------------
def build_system(module: ModuleType, scene: str, parameters: dict):
    """``module.build(**parameters)`` (no arguments for a scene without ``PARAMETERS``).

    A value the system refuses (`InvalidInputError`, e.g. ``restitution=1.5``) is
    the user's `ParameterError` when the parameters differ from the defaults; any
    other failure, or a build that returns None, is a `SceneError`.
    """
    declared = declared_parameters(module, scene)
    arguments = {name: value for name, value in parameters.items() if name in declared}
    shown = ", ".join(f"{name}={value!r}" for name, value in arguments.items() if value != declared[name])
    try:
        system = module.build(**arguments)
    except InvalidInputError as error:
        if shown:
            raise ParameterError(f"scene {scene!r} with {shown}: {error}") from error
        raise SceneError(f"scene {scene!r}: build() failed: {error}") from error
    except GranularError as error:
        raise SceneError(f"scene {scene!r}: build() failed: {error}") from error
    except Exception as error:  # the scene's own code
        raise SceneError(f"scene {scene!r}: build() raised {type(error).__name__}: {error}") from error
    if system is None:
        raise SceneError(f"scene {scene!r}: build() returned None instead of a system")
    return system


@dataclass(frozen=True)
class RunSettings:
    """How long and how finely a scene is run: ``duration`` (s), ``dt`` (s),
    ``record_every`` (steps between frames), ``options`` for `Simulation`."""

    duration: float
    dt: float
    record_every: int
    options: dict = field(default_factory=dict)


def run_settings(module: ModuleType, duration=None, dt=None, record_every=None) -> RunSettings:
    """The scene's ``DEFAULTS`` (then `FALLBACK_DEFAULTS`) with the given values put first."""
    defaults = dict(FALLBACK_DEFAULTS)
    defaults.update(getattr(module, "DEFAULTS", {}) or {})
    chosen = dict(duration=duration, dt=dt, record_every=record_every)
    values = {key: defaults.pop(key) for key in chosen}  # what is left goes to Simulation
    values.update({key: value for key, value in chosen.items() if value is not None})
    _check_defaults_keys(module, list(chosen), defaults)
    return RunSettings(
        duration=float(values["duration"]),
        dt=float(values["dt"]),
        record_every=int(values["record_every"]),
        options=defaults,
    )


def _check_defaults_keys(module: ModuleType, settings: list, options: dict) -> None:
    """A `SceneError` naming a ``DEFAULTS`` key that is neither a run setting nor a
    keyword of `Simulation` with the chosen scheme, the valid keys and the closest
    one: found here, before the scene is built, not as a TypeError of the scheme."""
    valid = settings + [k for k in scheme_keywords(options.get("scheme", "velocity")) if k != "dt"]
    for key in options:
        if key not in valid:
            scene = Path(getattr(module, "__file__", "scene")).stem
            close = difflib.get_close_matches(str(key), valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SceneError(f"scene {scene!r}: unknown DEFAULTS key {key!r}{hint}; valid keys: {', '.join(valid)}")


def make_simulation(system, settings: RunSettings):
    """The `Simulation` of ``system`` with the settings' ``dt`` and options."""
    return Simulation(system, dt=settings.dt, **settings.options)


def provenance(scene: str, path, parameters: dict, settings: RunSettings) -> dict:
    """What a run file stores to be repeated from the file alone (merged into its meta)."""
    return {
        "scene": scene,
        "scene_file": str(Path(path).resolve()),
        "scene_sha256": scene_sha256(path),
        "parameters": dict(parameters),
        "duration": settings.duration,
        "simulation_options": dict(settings.options),
    }


def rebuild_simulation(meta: dict, scene_file=None):
    """A new `Simulation` at the initial state of the run whose ``meta`` is given.

    The scene is the one of the stored name in the scenes directories
    (`find_scenes`), or ``scene_file`` when the caller gives it; it is built with the
    stored parameters and run with the stored ``dt`` and options, so stepping it
    repeats the run. Returns ``(simulation, same_scene)``, ``same_scene`` False when
    the scene file's bytes differ from the run's (the repetition may then differ).

    A run file is data: the file it names (``scene_file`` in its meta) is never
    imported on the file's word, and a stored name that is a path is refused, since
    a file received from someone else would otherwise choose the code that runs.
    """
    if scene_file is None and ("scene" not in meta or "parameters" not in meta):
        raise InvalidInputError(
            "this run does not say which scene and parameters made it (no 'scene' or "
            "'parameters' in its meta: a run made in Python); give the system it ran, "
            "Simulation.from_trajectory(trajectory, world=...), or scene_file=PATH"
        )
    if scene_file is not None:
        path = Path(scene_file)
        if not path.is_file():
            raise UnknownSceneError(f"no scene file at {path}")
    elif not (isinstance(meta["scene"], str) and meta["scene"].isidentifier()):
        raise InvalidInputError(
            f"this run names its scene {meta['scene']!r}, which is not a scene name; "
            "pass scene_file=PATH to rebuild it from a scene file you trust"
        )
    else:
        try:
            path = resolve_scene(meta["scene"])
        except UnknownSceneError as error:
            raise UnknownSceneError(
                f"{error}; the run was made from {meta.get('scene_file', 'an unknown file')}: "
                "pass scene_file=PATH to rebuild it from a scene file you trust"
            ) from None
    name = meta.get("scene", path.stem)
    module = load_scene(path)
    parameters = meta.get("parameters")
    if parameters is None:  # a run made in Python, rebuilt from a scene file: its defaults
        parameters = declared_parameters(module, str(name))
    system = build_system(module, str(name), parameters)
    settings = RunSettings(
        duration=float(meta.get("duration", 0.0)),
        dt=float(meta["dt"]),
        record_every=int(meta.get("record_every", 1)),
        options=dict(meta.get("simulation_options", {})),
    )
    return make_simulation(system, settings), scene_sha256(path) == meta.get("scene_sha256")


def expected_errors(module) -> tuple:
    """The errors that end the scene's run as it means to (``EXPECTED_ERRORS``, a tuple
    of exception classes: the growing spheres end in a `JammingError`); ``()`` when
    it declares none. ``granular run`` saves such a run as complete and exits 0."""
    declared = getattr(module, "EXPECTED_ERRORS", ()) if module is not None else ()
    if not (
        isinstance(declared, tuple) and all(isinstance(c, type) and issubclass(c, BaseException) for c in declared)
    ):
        raise SceneError(
            f"scene {Path(getattr(module, '__file__', 'scene')).stem!r}: EXPECTED_ERRORS must be "
            f"a tuple of exception classes, got {declared!r}"
        )
    return declared


# -- figures --------------------------------------------------------------------------------
def has_summary(module: ModuleType) -> bool:
    return callable(getattr(module, "summary", None))


def summarize(module: ModuleType, scene: str, trajectory) -> dict:
    """The scene's ``summary(trajectory)`` as a dict of plain numbers, bools and strings
    (``{}`` when the scene declares none); `SceneError` if it fails or returns
    anything else."""
    if not has_summary(module):
        return {}
    try:
        figures = module.summary(trajectory)
    except Exception as error:  # the scene's own code
        raise SceneError(f"scene {scene!r}: summary() raised {type(error).__name__}: {error}") from error
    if not isinstance(figures, dict):
        raise SceneError(f"scene {scene!r}: summary() must return a dict, not a {type(figures).__name__}")
    plain = {}
    for name, value in figures.items():
        value = value.item() if hasattr(value, "item") and getattr(value, "ndim", 1) == 0 else value
        if not isinstance(name, str) or type(value) not in PARAMETER_TYPES:
            raise SceneError(f"scene {scene!r}: summary() value {name!r} = {value!r} is not a number, bool or string")
        plain[name] = value
    return plain


def format_figures(figures: dict) -> str:
    """``name = value`` pairs of a summary on one line (4 significant digits)."""
    return ", ".join(
        f"{name} = {value:.4g}" if isinstance(value, float) else f"{name} = {value}" for name, value in figures.items()
    )
