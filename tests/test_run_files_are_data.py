"""A run file is data: reading, inspecting, rendering or exporting it never imports
or calls code the file names. Drawing adapters are looked up by name in
`granular.drawing.adapters`'s registry; the ``"module:function"`` strings that earlier
versions wrote are understood through a fixed table, never imported."""

from __future__ import annotations

import json
import sys

import h5py
import numpy as np
import pytest

import granular as gr
from granular.drawing import adapters as drawing
from granular.cli import main
from granular.drawing.adapters import (
    LEGACY_ADAPTERS,
    Shapes,
    UnknownAdapterError,
    register_adapter,
    shapes_of,
    unregister_adapter,
)
from granular.errors import TrajectoryFileError
from granular.systems.examples import bouncing_ball, double_pendulum_wall, impact_oscillator
from granular.systems.frictional import block_on_incline, painleve_rod

MARKER_MODULE = "granular_test_marker_adapter"


@pytest.fixture
def marker(tmp_path, monkeypatch):
    """A module on sys.path that writes a marker file when imported or called; yields
    the marker's path. The module must never be imported."""
    path = tmp_path / "imported.marker"
    (tmp_path / f"{MARKER_MODULE}.py").write_text(
        f"open({str(path)!r}, 'w').write('imported')\n"
        "def draw(description, q):\n"
        f"    open({str(path)!r}, 'w').write('called')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield path
    assert MARKER_MODULE not in sys.modules
    assert not path.exists()


def ball_run(tmp_path, adapter=None):
    """A short saved run of the bouncing ball; its adapter rewritten to ``adapter``
    in the file (as a crafted or legacy file would hold it) when given."""
    path = tmp_path / "ball.h5"
    gr.Simulation(bouncing_ball(height=0.5), dt=1e-2).run(steps=3).save(path)
    if adapter is not None:
        rewrite_adapter(path, adapter)
    return path


def rewrite_adapter(path, adapter) -> None:
    with h5py.File(path, "r+") as h5:
        system = json.loads(h5.attrs["system"])
        system["adapter"] = adapter
        h5.attrs["system"] = json.dumps(system)


CODE = [f"{MARKER_MODULE}:draw", "os:system", "builtins:eval", f"{MARKER_MODULE}.draw", 7, ["os", "system"]]


@pytest.mark.parametrize("adapter", CODE)
def test_shapes_of_refuses_an_adapter_that_names_code(marker, adapter):
    description = {"kind": "ball", "adapter": adapter, "radius": 0.1}
    with pytest.raises(UnknownAdapterError, match="unknown drawing adapter .*registered: .*ball") as error:
        shapes_of(description, np.array([0.5]))
    assert "\n" not in str(error.value)
    assert isinstance(error.value, gr.InvalidInputError) and isinstance(error.value, TrajectoryFileError)


@pytest.mark.parametrize("adapter", CODE)
def test_loading_a_run_file_that_names_code_is_refused(marker, tmp_path, adapter):
    path = ball_run(tmp_path, adapter)
    with pytest.raises(UnknownAdapterError, match=f"{path.name}: unknown drawing adapter"):
        gr.Trajectory.load(path)


@pytest.mark.parametrize(
    "command",
    [
        ["render", "{run}", "{out}/x.png"],
        ["inspect", "{run}"],
        ["export", "{run}", "{out}/vtk", "--vtk", "--quiet"],
        ["plot", "{run}", "energy", "{out}/e.png"],
    ],
)
def test_the_command_refuses_a_run_file_that_names_code(marker, tmp_path, capsys, command):
    run = ball_run(tmp_path, f"{MARKER_MODULE}:draw")
    out = tmp_path / "out"
    status = main([part.format(run=run, out=out) for part in command])
    captured = capsys.readouterr()
    assert status == 3  # a bad run file
    assert captured.err.count("\n") == 1 and f"unknown drawing adapter '{MARKER_MODULE}:draw'" in captured.err
    assert captured.out == "" and not out.exists()


def test_a_system_description_that_is_not_an_object_is_refused(tmp_path):
    path = ball_run(tmp_path)
    with h5py.File(path, "r+") as h5:
        h5.attrs["system"] = json.dumps(["granular.systems.examples:ball_shapes"])
    with pytest.raises(TrajectoryFileError, match="ball.h5: the system description must be a JSON object, got list"):
        gr.Trajectory.load(path)


def test_an_unregistered_name_loads_but_is_not_drawn(tmp_path, capsys):
    """A well-formed name names nothing to import: the file loads and can be inspected
    (its program may register the name later), and drawing it is a one-line refusal."""
    run = ball_run(tmp_path, "nobody_registered_this")
    assert gr.Trajectory.load(run).system["adapter"] == "nobody_registered_this"
    assert main(["inspect", str(run)]) == 0
    capsys.readouterr()
    assert main(["render", str(run), str(tmp_path / "x.png")]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot draw system of kind 'ball': unknown drawing adapter" in err
    assert not (tmp_path / "x.png").exists()


def builtin_systems():
    return [
        bouncing_ball(height=0.5),
        impact_oscillator(),
        double_pendulum_wall(theta=(0.3, 0.2)),
        block_on_incline(0.3, 0.5),
        painleve_rod(),
        gr.Beam(elements=4),
    ]


def same_shapes(a: Shapes, b: Shapes) -> bool:
    arrays = ("sphere_centres", "sphere_radii", "segments", "segment_radii")
    return (
        all(np.array_equal(getattr(a, name), getattr(b, name)) for name in arrays)
        and len(a.planes) == len(b.planes)
        and all(np.array_equal(x, y) for p, r in zip(a.planes, b.planes) for x, y in zip(p, r))
    )


def test_every_builtin_system_names_a_registered_adapter_and_every_legacy_string_is_mapped():
    names = [system.describe()["adapter"] for system in builtin_systems()]
    assert sorted(names) == sorted(set(LEGACY_ADAPTERS.values()))
    assert set(names) <= set(drawing.adapter_names())
    assert all(":" not in name and "." not in name for name in names)


@pytest.mark.exact
@pytest.mark.parametrize("system", builtin_systems(), ids=lambda s: s.describe()["kind"])
def test_a_legacy_run_file_draws_the_same_shapes_as_a_new_one(tmp_path, system):
    """Files of earlier versions hold "granular.systems.<module>:<function>": they load
    with the registered name in its place and draw exactly what a new file draws."""
    new, old = tmp_path / "new.h5", tmp_path / "old.h5"
    # The beam is stiff: the default scheme refuses it at dt >= 2 / w_max (2.8e-4 s).
    scheme = "newmark" if isinstance(system, gr.Beam) else "velocity"
    trajectory = gr.Simulation(system, dt=1e-3, scheme=scheme).run(steps=2)
    trajectory.save(new)
    trajectory.save(old)
    name = system.describe()["adapter"]
    legacy = next(string for string, mapped in LEGACY_ADAPTERS.items() if mapped == name)
    rewrite_adapter(old, legacy)
    modules = set(sys.modules)
    from_new, from_old = gr.Trajectory.load(new), gr.Trajectory.load(old)
    assert from_old.system == from_new.system and from_old.system["adapter"] == name
    for k in range(len(from_new)):
        assert same_shapes(
            shapes_of(from_old.system, from_old.positions[k]), shapes_of(from_new.system, from_new.positions[k])
        )
    # A description that still holds the legacy string (not from a file) draws the same.
    assert same_shapes(
        shapes_of({**from_new.system, "adapter": legacy}, from_new.positions[-1]),
        shapes_of(from_new.system, from_new.positions[-1]),
    )
    assert set(sys.modules) == modules  # nothing imported by reading or drawing


def pointer_shapes(description: dict, q: np.ndarray) -> Shapes:
    return Shapes(sphere_centres=np.array([[float(q[0]), 0.0, 0.0]]), sphere_radii=np.array([description["r"]]))


@pytest.fixture
def user_adapter():
    before = {name: drawing.resolve_adapter(name) for name in drawing.adapter_names()}
    register_adapter("pointer", pointer_shapes)
    yield "pointer"
    for name in set(drawing.adapter_names()) - set(before):  # leave the registry as it was
        unregister_adapter(name)
    for name, function in before.items():
        register_adapter(name, function, replace=True)


def test_a_registered_user_adapter_draws_a_user_system_and_its_run_file(tmp_path, user_adapter):
    system = gr.ConstrainedSystem(
        [0.25], [1.0], mass=[[1.0]], drawing={"kind": "pointer", "adapter": user_adapter, "r": 0.05}
    )
    trajectory = gr.Simulation(system, dt=0.1).run(steps=2)
    trajectory.save(tmp_path / "pointer.h5")
    loaded = gr.Trajectory.load(tmp_path / "pointer.h5")
    shapes = shapes_of(loaded.system, loaded.positions[-1])
    np.testing.assert_allclose(shapes.sphere_centres, [[0.45, 0.0, 0.0]])
    np.testing.assert_allclose(shapes.sphere_radii, [0.05])
    assert "pointer" in drawing.adapter_names()


def test_register_adapter_refuses_module_paths_taken_names_and_non_callables(user_adapter):
    for name in ("os:system", "a.b", "", ":x", 3):
        with pytest.raises(gr.InvalidInputError, match="adapter name"):
            register_adapter(name, pointer_shapes)
    with pytest.raises(gr.InvalidInputError, match="'ball' is already registered"):
        register_adapter("ball", pointer_shapes)
    with pytest.raises(gr.InvalidInputError, match="must be callable"):
        register_adapter("other", "os:system")
    register_adapter("pointer", pointer_shapes)  # the same function again: no error
    register_adapter("ball", pointer_shapes, replace=True)
    assert shapes_of({"kind": "ball", "adapter": "ball", "r": 0.2}, np.array([1.0])).sphere_radii[0] == 0.2


# -- repeating a run from its file never runs a file the run names ----------------------------------------
def test_rebuilding_a_run_never_imports_the_scene_file_its_meta_names(tmp_path, monkeypatch):
    """A crafted meta names a scene that is not in the scenes directories and points
    ``scene_file`` at a script that would leave a marker if executed: the rebuild is
    refused in one line and the script never runs, unless the caller passes the file."""
    from granular import scenes

    marker = tmp_path / "ran.txt"
    script = tmp_path / "evil_scene.py"
    script.write_text(
        f'"""Evil."""\nfrom pathlib import Path\nPath({str(marker)!r}).write_text("ran")\n'
        "def build():\n    return None\n"
    )
    monkeypatch.setenv("GRANULAR_SCENES", str(tmp_path / "no_scenes_here"))
    base = {"parameters": {}, "dt": 1e-3, "scene_file": str(script)}
    for name in ("evil_scene", str(script), "../evil_scene"):
        with pytest.raises(gr.InvalidInputError) as refused:
            scenes.rebuild_simulation({**base, "scene": name})
        assert "\n" not in str(refused.value) and "scene_file=PATH" in str(refused.value)
    assert not marker.exists()
    # the caller's own choice is honoured (and this script's build() is then refused)
    with pytest.raises(scenes.SceneError):
        scenes.rebuild_simulation({**base, "scene": "evil_scene"}, scene_file=script)
    assert marker.exists()


def test_unregister_adapter_removes_a_users_adapter_and_keeps_the_builtin_ones(user_adapter):
    unregister_adapter(user_adapter)
    assert user_adapter not in drawing.adapter_names()
    with pytest.raises(gr.InvalidInputError, match="no drawing adapter 'pointer' is registered"):
        unregister_adapter(user_adapter)
    with pytest.raises(gr.InvalidInputError, match="'ball' is built in"):
        unregister_adapter("ball")
    assert "ball" in drawing.adapter_names()
