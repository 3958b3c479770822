"""``granular scenes [NAME]``: list the scenes, or describe one and its parameters."""

from __future__ import annotations

from .. import scenes
from .arguments import add_command
from .common import USAGE, CommandError

#: The line of 'granular --help', and the text of 'granular scenes --help'.
HELP = "list the scenes, or describe one and its parameters"
DESCRIPTION = """List the scenes found in the scenes directories (GRANULAR_SCENES, ./scenes, the scenes
that ship with granular); with a NAME, print that scene's parameters (default, type, help with units) and run
settings."""


def add_parser(commands) -> None:
    parser = add_command(commands, "scenes", command_scenes, HELP, DESCRIPTION)
    parser.add_argument("scene", metavar="NAME", nargs="?", help="a scene to describe")


def command_scenes(args) -> int:
    if args.scene:
        return describe_scene(args.scene)
    found = scenes.find_scenes()
    if not found:
        where = ", ".join(str(d) for d in scenes.scene_directories()) or "(none)"
        raise CommandError(f"no scenes found (searched {where}; set GRANULAR_SCENES)", USAGE)
    width = max(len(name) for name in found)
    for name, path in sorted(found.items()):
        print(f"{name:<{width}}  {scenes.scene_description(path)}")
    return 0


def describe_scene(scene: str) -> int:
    """``granular scenes NAME``: the scene's description, parameters (default, type,
    help with units), run settings and whether it declares a summary."""
    path = scenes.resolve_scene(scene)
    module = scenes.load_scene(path)
    name = path.stem
    declared = scenes.declared_parameters(module, name)
    helps = scenes.parameter_help(module)
    settings = scenes.run_settings(module)
    print(f"{name}: {scenes.scene_description(path)}")
    print(f"  file: {path}")
    if declared:
        print(f"  parameters (granular run {name} --set NAME=VALUE):")
        width = max(len(p) for p in declared)
        values = {p: repr(v) for p, v in declared.items()}
        value_width = max(len(v) for v in values.values())
        for parameter, default in declared.items():
            kind = type(default).__name__
            print(
                f"    {parameter:<{width}}  {values[parameter]:<{value_width}}  {kind:<5}  "
                f"{helps.get(parameter, '')}".rstrip()
            )
    else:
        print("  parameters: none (no PARAMETERS)")
    options = "".join(f", {key} {value}" for key, value in settings.options.items())
    print(
        f"  run settings: duration {settings.duration:g} s, dt {settings.dt:g} s, "
        f"a frame every {settings.record_every} steps{options}"
    )
    summary = "yes (printed by granular run, tabulated by granular sweep)" if scenes.has_summary(module) else "none"
    print(f"  summary: {summary}")
    return 0
