"""``kairox new plugin NAME``: write a plugin package that works as written.

The package has the entry point, one tool (a :class:`kairox.declare.ToolSet`), a config
section, a skill shipped with :func:`kairox.declare.skills`, and tests with kairox-testing's
fixtures that pass as written. The templates are below, filled with :class:`string.Template`
(``$name``: none of the files uses ``$`` otherwise).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from string import Template

import click

__all__ = ["new", "plugin_files"]

#: a plugin name: a lowercase word (hyphens and underscores inside), as the entry point is named
NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")

PYPROJECT = """\
[project]
name = "$dist"
version = "0.1.0"
description = "A kairox plugin: the $name.greet tool, the [$section] config section and the $section:hello skill."
readme = "README.md"
requires-python = ">=3.10"
dependencies = [
    "kairox>=0.1,<0.2",
    # reads the skills the plugin ships (kairox.declare.skills)
    "kairox-skills>=0.1,<0.2",
    "attrs>=23.1",
]

# what makes it a kairox plugin: kairox loads every entry point of the "kairox" group
[project.entry-points.kairox]
$name = "$package.hooks"

[dependency-groups]
dev = [
    "kairox-testing>=0.1,<0.2",  # pytest and kairox's fixtures
    "kairox-cli>=0.1,<0.2",  # the kairox command, to try the plugin (kairox plugins, tools call)
]

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["src/$package"]

[tool.pytest.ini_options]
testpaths = ["tests"]
$sources"""

SOURCES = """
# kairox from a checkout (kairox new plugin --kairox-source)
[tool.uv.sources]
kairox = { path = "$checkout/kernel", editable = true }
kairox-skills = { path = "$checkout/builtin_plugins/skills", editable = true }
kairox-testing = { path = "$checkout/builtin_plugins/testing", editable = true }
kairox-cli = { path = "$checkout/builtin_plugins/cli", editable = true }
"""

README = """\
# $dist

A kairox plugin.

```sh
uv run pytest                                                    # its tests
uv run kairox plugins                                            # $name  $dist 0.1.0  ...
uv run kairox tools call $name.greet --args '{"who": "Ada"}'     # Hello, Ada!
```

- `src/$package/hooks.py`: the hooks, one line each
- `src/$package/tools.py`: the `$name.greet` tool
- `src/$package/config.py`: the `[$section]` section of `kairox.toml`
- `src/$package/skills/hello/SKILL.md`: the `$section:hello` skill
- `tests/`: tests with kairox-testing's fixtures
"""

INIT = '''\
"""$dist: a kairox plugin."""
'''

HOOKS = '''\
"""The hooks of $dist, one line each: each imports its module when kairox calls it."""

from kairox.declare import config_section, skills, tools

kairox_register_config_sections = config_section(
    "$section", "$package.config:Config", description="$dist: the greeting of $name.greet"
)
kairox_register_tool_providers = tools("$package.tools:tools")
kairox_register_skill_sources = skills("$package:skills")
'''

CONFIG = '''\
"""The [$section] section of kairox.toml:

    [$section]
    greeting = "Hello"
"""

import attrs


@attrs.frozen
class Config:
    greeting: str = "Hello"
'''

TOOLS = '''\
"""The tools of $dist."""

from kairox import ToolContext
from kairox.declare import ToolSet

from .config import Config

tools = ToolSet("$name")


@tools.tool(domain="local", capability="read")
def greet(who: str, context: ToolContext) -> str:
    """Greet someone with the configured greeting.

    Args:
        who: the name of whom to greet.
    """
    assert context.runtime is not None  # kairox calls a tool with its runtime
    config: Config = context.runtime.config.section("$section")
    return f"{config.greeting}, {who}!"
'''

SKILL = """\
---
name: hello
description: Greet someone by name with the $name.greet tool.
---
Call the `$name.greet` tool with the name of the person to greet, and answer with what it returns.
"""

CONFTEST = '''\
"""Every runtime kairox-testing's fixtures open registers this plugin."""

import pytest

import $package.hooks


@pytest.fixture
def kairox_plugins():
    return [$package.hooks]
'''

TEST = '''\
"""Tests of $dist, with kairox-testing's fixtures (kairox_harness opens hermetic runtimes)."""

import pytest

pytestmark = pytest.mark.anyio


async def test_greet(kairox_harness):
    async with kairox_harness.open() as rt:
        result = await rt.call_tool("$name.greet", {"who": "Ada"})
    assert result.text == "Hello, Ada!"


async def test_the_greeting_comes_from_the_config(kairox_harness):
    kairox_harness.write_config('[$section]\\ngreeting = "Hi"\\n', where="user")
    async with kairox_harness.open() as rt:
        assert (await rt.call_tool("$name.greet", {"who": "Ada"})).text == "Hi, Ada!"


async def test_arguments_are_checked_before_the_tool_runs(kairox_harness):
    async with kairox_harness.open() as rt:
        result = await rt.call_tool("$name.greet", {"who": 3})
    assert result.is_error
    assert "who: 3 is not of type 'string'" in result.text


async def test_the_tool_is_read_only_and_local(kairox_harness):
    async with kairox_harness.open() as rt:
        spec = rt.tools.get_spec("$name.greet")
    assert (spec.domain.value, spec.capability.value) == ("local", "read")


async def test_the_skill_is_shipped(kairox_harness):
    async with kairox_harness.open(start=False) as rt:
        assert rt.skills.errors == []
        skill = rt.skills.get("$section:hello")
        assert skill is not None and skill.scope.value == "plugin"
'''


def plugin_files(name: str, *, checkout: Path | None = None) -> dict[str, str]:
    """The files of the plugin ``name`` (relative path -> text); ``checkout``: a kairox
    checkout the project takes kairox from (uv path sources)."""
    if not NAME.fullmatch(name) or len(name) > 40:
        raise click.BadParameter(f"{name!r}: a plugin name is a lowercase word (a-z, 0-9, - and _ inside)")
    section = name.replace("-", "_")
    package = f"kairox_{section}"
    values = {"name": name, "section": section, "package": package, "dist": f"kairox-{name.replace('_', '-')}"}
    sources = Template(SOURCES).substitute(checkout=checkout.as_posix()) if checkout is not None else ""
    files = {
        "pyproject.toml": Template(PYPROJECT).substitute(values, sources=sources),
        "README.md": README,
        f"src/{package}/__init__.py": INIT,
        f"src/{package}/py.typed": "",
        f"src/{package}/hooks.py": HOOKS,
        f"src/{package}/config.py": CONFIG,
        f"src/{package}/tools.py": TOOLS,
        f"src/{package}/skills/hello/SKILL.md": SKILL,
        "tests/conftest.py": CONFTEST,
        f"tests/test_{section}.py": TEST,
    }
    return {path: Template(text).substitute(values) for path, text in files.items()}


def running_checkout() -> Path | None:
    """The kairox checkout this kairox runs from (``kernel/src/kairox``), if it runs from one."""
    import kairox

    root = Path(kairox.__file__).resolve().parents[3]
    markers = (root / "kernel" / "pyproject.toml", root / "builtin_plugins" / "testing" / "pyproject.toml")
    return root if all(marker.is_file() for marker in markers) else None


@click.group()
def new() -> None:
    """Start something new: a plugin package."""


@new.command("plugin")
@click.argument("name")
@click.option(
    "--path",
    type=click.Path(path_type=Path),
    default=None,
    help="The folder to write (default: ./kairox-NAME); it must not exist.",
)
@click.option(
    "--kairox-source",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="A kairox checkout to take kairox from (uv path sources; default: the one this kairox runs from, if any).",
)
def plugin(name: str, path: Path | None, kairox_source: Path | None) -> None:
    """Write the plugin package NAME: an entry point, a tool, a config section, a skill, and
    tests that pass as written (`uv run pytest` in it)."""
    checkout = kairox_source.resolve() if kairox_source is not None else running_checkout()
    files = plugin_files(name, checkout=checkout)
    target = path if path is not None else Path(f"kairox-{name.replace('_', '-')}")
    if os.path.lexists(target):
        raise click.ClickException(f"{target} exists already: kairox new writes a new folder, never into one")
    for relative, text in files.items():
        file = target / relative
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")
    click.echo(f"wrote {target}/ (the plugin {name}):")
    for relative in files:
        click.echo(f"  {relative}")
    click.echo(f"next: cd {target} && uv run pytest")
