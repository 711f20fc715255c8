"""kairox.toml: discovery, merge with provenance, plugin-owned sections, errors with paths."""

from __future__ import annotations

import datetime as dt
import enum
import json
import re
import string
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairox import ConfigError, ConfigSection
from kairox._config import REDACTED, _substitute, inherit_env, user_home
from kairox._config_load import known_errors_for
from kairox._policy import PolicyConfig
from kairox.ext import BrokenSection, Registrar, build_plugin_host, expand_env, load_config, redact
from kairox_cli._config_show import shown_config
from kairox_testing import KairoxHarness, make_plugin


class Mode(enum.Enum):
    FAST = "fast"
    SAFE = "safe"


@attrs.frozen
class Limits:
    retries: int = 3
    ratio: float = 0.5


@attrs.frozen
class Server:
    command: str
    args: list[str] = attrs.field(factory=list)
    env: dict[str, str] = attrs.field(factory=dict)
    enabled: bool = True
    mode: Mode = Mode.SAFE
    kind: Literal["stdio", "sse"] = "stdio"
    limits: Limits = attrs.field(factory=Limits)
    cwd: str | None = None
    tags: tuple[str, ...] = ()


@attrs.frozen
class Ui:
    theme: str = "dark"
    width: int = 80


def sections(*extra: ConfigSection) -> Registrar[ConfigSection]:
    reg: Registrar[ConfigSection] = Registrar("config section")
    reg.owner = "kairox"
    reg.add(ConfigSection("policy", PolicyConfig))
    reg.owner = "kairox-demo"
    reg.add(ConfigSection("mcp_servers", Server, entries=True))
    reg.add(ConfigSection("ui", Ui))
    for sec in extra:
        reg.add(sec)
    return reg


def load(tmp_path: Path, *texts: str, env: dict[str, str] | None = None, **kw: Any):
    files = []
    for i, text in enumerate(texts):
        path = tmp_path / f"f{i}" / "kairox.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        files.append(path)
    return load_config(workspace=tmp_path, sections=sections(), env=env or {}, files=files, **kw), files


# -- discovery and precedence ---------------------------------------------------------


def test_user_home_honours_kairox_home(tmp_path: Path) -> None:
    assert user_home({"KAIROX_HOME": str(tmp_path)}) == tmp_path
    assert user_home({}) == Path.home() / ".kairox"
    assert user_home({"KAIROX_HOME": "~/elsewhere"}) == Path.home() / "elsewhere"


def test_discovery_order_and_provenance(kairox_harness: KairoxHarness, kairox_home: Path) -> None:
    user = kairox_harness.write_config('[ui]\ntheme = "user"\nwidth = 100\n', where="user")
    inner = kairox_harness.write_config('[ui]\ntheme = "inner"\n', where="workspace-dir")
    outer = kairox_harness.write_config('[ui]\ntheme = "outer"\n', where="workspace")
    config = load_config(workspace=kairox_harness.workspace, sections=sections(), env=kairox_harness.env)
    assert config.files == [user, inner, outer]
    assert config.section("ui") == Ui(theme="outer", width=100)
    assert config.source_of("ui", "theme") == str(outer)
    assert config.source_of("ui", "width") == str(user)
    assert config.errors == []


def test_home_argument_overrides_env(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "kairox.toml").write_text('[ui]\ntheme = "h"\n')
    config = load_config(workspace=None, sections=sections(), env={"KAIROX_HOME": "/nonexistent"}, home=home)
    assert config.section("ui").theme == "h"


def test_whole_entries_replace(tmp_path: Path) -> None:
    config, (user, ws) = load(
        tmp_path,
        '[mcp_servers.git]\ncommand = "git-user"\nargs = ["--user"]\n[mcp_servers.time]\ncommand = "time"\n',
        '[mcp_servers.git]\ncommand = "git-ws"\n',
    )
    servers = config.section("mcp_servers")
    assert servers["git"] == Server(command="git-ws")  # no args from the user file: the entry replaced whole
    assert servers["time"].command == "time"
    assert config.source_of("mcp_servers", "git") == str(ws)
    assert config.source_of("mcp_servers", "time") == str(user)


def test_absent_sections_give_defaults(tmp_path: Path) -> None:
    config, _ = load(tmp_path)
    assert config.section("ui") == Ui()
    assert config.section("mcp_servers") == {}
    assert config.section("policy") == PolicyConfig()
    with pytest.raises(KeyError):
        config.section("nope")


def test_parts_are_each_document_s_table_of_a_section_in_order_and_by_scope(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    user, mine = home / "kairox.toml", ws / "kairox.toml"
    for path, text in ((user, '[ui]\ntheme = "user"\n'), (mine, "[ui]\nwidth = 9\n")):
        path.parent.mkdir()
        path.write_text(text, encoding="utf-8")
    code = [("not a table", {"ui": "dark"}), ("code", {"ui": {"theme": "code"}})]
    config = load_config(workspace=ws, sections=sections(), env={}, home=home, documents=code)
    everyone = [(str(user), {"theme": "user"}), (str(mine), {"width": 9}), ("code", {"theme": "code"})]
    assert config.parts("ui") == everyone
    assert config.parts("ui", scope="user") == [everyone[0], everyone[2]]
    assert config.parts("ui", scope="workspace") == [everyone[1]]
    assert config.parts("mcp_servers") == []


def test_section_default_factory(tmp_path: Path) -> None:
    reg = sections(ConfigSection("custom", Ui, default=lambda: Ui(theme="light")))
    config = load_config(workspace=tmp_path, sections=reg, env={}, files=[])
    assert config.section("custom") == Ui(theme="light")


# -- errors ---------------------------------------------------------------------


def test_error_names_file_path_and_expectation(tmp_path: Path) -> None:
    config, (file,) = load(tmp_path, '[mcp_servers.git]\ncommand = "git"\nargs = ["a", 3]\n')
    [error] = config.errors
    assert (error.file, error.path) == (str(file), "mcp_servers.git.args[1]")
    assert error.message == "expected a string, got 3"
    assert str(error) == f"{file}: mcp_servers.git.args[1]: expected a string, got 3"


def test_one_bad_entry_drops_only_itself(tmp_path: Path) -> None:
    config, _ = load(
        tmp_path,
        '[mcp_servers.good]\ncommand = "ok"\n[mcp_servers.bad]\ncommand = 1\nenabled = "yes"\n',
    )
    assert set(config.section("mcp_servers")) == {"good"}
    assert {(e.path, e.message) for e in config.errors} == {
        ("mcp_servers.bad.command", "expected a string, got 1"),
        ("mcp_servers.bad.enabled", "expected a boolean (true or false), got 'yes'"),
    }
    assert known_errors_for(config, "mcp_servers", "bad") == config.errors
    assert known_errors_for(config, "mcp_servers", "good") == []


@pytest.mark.parametrize(
    ("toml", "path", "message"),
    [
        ("[mcp_servers.x]\nargs = []\n", "mcp_servers.x.command", "required key is missing"),
        ('[mcp_servers.x]\ncommand = "c"\nmode = "slow"\n', "mcp_servers.x.mode", "expected one of 'fast', 'safe'"),
        ('[mcp_servers.x]\ncommand = "c"\nkind = "ws"\n', "mcp_servers.x.kind", "expected one of 'stdio', 'sse'"),
        (
            '[mcp_servers.x]\ncommand = "c"\nlimits = { retries = 1.5 }\n',
            "mcp_servers.x.limits.retries",
            "expected an integer",
        ),
        (
            '[mcp_servers.x]\ncommand = "c"\nlimits = { ratio = true }\n',
            "mcp_servers.x.limits.ratio",
            "expected a number",
        ),
        ('[mcp_servers.x]\ncommand = "c"\nlimits = 3\n', "mcp_servers.x.limits", "expected a table, got 3"),
        ('[mcp_servers.x]\ncommand = "c"\nargs = "a b"\n', "mcp_servers.x.args", "expected a list, got 'a b'"),
        ('[mcp_servers.x]\ncommand = "c"\nenv = { A = 1 }\n', "mcp_servers.x.env.A", "expected a string"),
        ('[mcp_servers.x]\ncommand = "c"\ntags = ["a", false]\n', "mcp_servers.x.tags[1]", "expected a string"),
        ("[mcp_servers]\nx = 3\n", "mcp_servers.x", "expected a table, got 3"),
        ('[ui]\nwidth = "wide"\n', "ui.width", "expected an integer, got 'wide'"),
        ('[policy]\napproval = "sometimes"\n', "policy.approval", "expected one of 'untrusted'"),
        ('[policy.rules]\n"fs.*" = "maybe"\n', "policy.rules['fs.*']", "expected one of 'allow', 'ask', 'deny'"),
    ],
)
def test_type_errors(tmp_path: Path, toml: str, path: str, message: str) -> None:
    config, (file,) = load(tmp_path, toml)
    assert [e.path for e in config.errors] == [path]
    assert config.errors[0].message.startswith(message)
    assert config.errors[0].file == str(file)


def test_unknown_key_suggests_the_closest(tmp_path: Path) -> None:
    config, _ = load(tmp_path, '[mcp_servers.x]\ncommand = "c"\nargz = []\n[ui]\nthme = "x"\nzzzzzz = 1\n')
    messages = {e.path: e.message for e in config.errors}
    assert messages["mcp_servers.x.argz"] == "unknown key; did you mean 'args'?"
    assert messages["ui.thme"] == "unknown key; did you mean 'theme'?"
    assert messages["ui.zzzzzz"] == "unknown key; valid keys: theme, width"


def test_non_entries_section_errors_name_the_file_of_the_bad_key(tmp_path: Path) -> None:
    config, (user, _ws) = load(tmp_path, '[ui]\nwidth = "w"\n', '[ui]\ntheme = "t"\n')
    [error] = config.errors
    assert (error.file, error.path) == (str(user), "ui.width")
    assert str(user) in str(error)


def test_unknown_section_names_the_owners(tmp_path: Path) -> None:
    config, (file,) = load(tmp_path, "[uii]\ntheme = 1\n[frobnicate]\nx = 1\n")
    first, second = config.errors
    assert first.path == "uii" and first.file == str(file)
    assert "unknown section [uii]; did you mean [ui]?" in first.message
    assert "mcp_servers (kairox-demo)" in first.message and "policy (kairox)" in first.message
    assert "did you mean" not in second.message


@pytest.mark.parametrize(
    ("section", "dist"),
    [
        ("lsp_servers", "kairox-lsp"),
        ("dap_servers", "kairox-dap"),
        ("skills", "kairox-skills"),
        ("instructions", "kairox-agents"),
    ],
)
def test_section_of_a_missing_plugin_names_the_distribution(tmp_path: Path, section: str, dist: str) -> None:
    # what a message says of a package comes from the newest plugin host's record (one process,
    # one environment): a host of this environment's full set, not another test's narrower one
    build_plugin_host()
    config, _ = load(tmp_path, f'[{section}.x]\ncommand = "c"\n')
    [error] = config.errors
    assert error.path == section
    assert f"is provided by {dist}, which is not installed (pip install {dist})" in error.message


def test_top_level_value_is_not_a_section(tmp_path: Path) -> None:
    config, _ = load(tmp_path, 'name = "x"\n')
    [error] = config.errors
    assert error.path == "name" and "every top-level key is a section" in error.message


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    config, (bad, good) = load(tmp_path, "[ui\ntheme = ", '[ui]\ntheme = "fine"\n')
    [error] = config.errors
    assert error.file == str(bad) and error.message.startswith("invalid TOML:")
    assert config.section("ui").theme == "fine"  # the other files still count
    assert config.files == [good]


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "kairox.toml"
    path.write_bytes(b"\xff\xfe[ui]\n")
    config = load_config(workspace=tmp_path, sections=sections(), env={}, files=[path])
    [error] = config.errors
    assert error.file == str(path) and error.message.startswith("cannot read:")


def test_config_errors_in_a_runtime(kairox_harness: KairoxHarness) -> None:
    """A section an inline plugin owns is checked in a real runtime, and the error reaches status()."""
    plugin = make_plugin(
        "demo", kairox_register_config_sections=lambda registrar: registrar.add(ConfigSection("ui", Ui))
    )
    kairox_harness.register(plugin)
    file = kairox_harness.write_config("[ui]\nwidth = -\n")
    result = kairox_harness.cli("config", "show", "--json")
    data = json.loads(result.stdout)
    assert data["errors"] and data["errors"][0].startswith(f"{file}: invalid TOML")


# -- environment expansion --------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("${A}", "a"),
        ("x-${A}-${B}", "x-a-b"),
        ("${UNSET:-dflt}", "dflt"),
        ("${EMPTY:-dflt}", "dflt"),
        ("${EMPTY}", ""),
        ("${A:-dflt}", "a"),
        ("${UNSET:-}", ""),
        ("$${A}", "${A}"),
        ("$A {A} ${ A}", "$A {A} ${ A}"),
        ("no vars", "no vars"),
    ],
)
def test_expand_env(value: str, expected: str) -> None:
    assert expand_env(value, {"A": "a", "B": "b", "EMPTY": ""}) == expected


def test_unset_variable_is_an_error_with_path(tmp_path: Path) -> None:
    config, (file,) = load(
        tmp_path,
        '[mcp_servers.s]\ncommand = "${CMD}"\nargs = ["${MISSING}"]\n[ui]\ntheme = "${THEME:-light}"\n',
        env={"CMD": "run"},
    )
    [error] = config.errors
    assert (error.file, error.path) == (str(file), "mcp_servers.s.args[0]")
    assert "environment variable MISSING is not set" in error.message
    assert config.section("ui").theme == "light"
    assert shown_config(config)["mcp_servers"]["s"]["value"]["command"] == "${CMD}"  # shown unexpanded


def test_inherit_env_takes_same_named_variables() -> None:
    table = {"TOKEN": "", "MODE": "fixed", "ABSENT": ""}
    assert inherit_env(table, {"TOKEN": "secret", "MODE": "other"}) == {"TOKEN": "secret", "MODE": "fixed"}


# -- redaction ------------------------------------------------------------------------


def test_redact_top_level_secret_table() -> None:
    assert redact({"env": {"A": "1"}, "password": "p", "name": "n"}) == {
        "env": {"A": REDACTED},
        "password": REDACTED,
        "name": "n",
    }


# -- properties: arbitrary documents never crash the loader ------------------------------

FIELD_NAMES = ["command", "args", "env", "enabled", "mode", "kind", "limits", "cwd", "tags", "retries", "ratio"]
KEYS = st.sampled_from(
    [*FIELD_NAMES, "theme", "width", "approval", "sandbox", "rules", "writable_roots", "include_temp_dir", "x", "A"]
) | st.text(min_size=1, max_size=8)
SECTIONS = st.sampled_from(["mcp_servers", "ui", "policy", "lsp_servers", "uii", "instructions"]) | st.text(
    min_size=1, max_size=6
)
SCALARS = (
    st.text(max_size=12)
    | st.sampled_from(["${A}", "${UNSET}", "${UNSET:-d}", "$${A}", "fast", "safe", "stdio", "never", "allow", "${"])
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=True)
    | st.booleans()
    | st.datetimes()
    | st.dates()
    | st.times()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
DOCUMENTS = st.dictionaries(SECTIONS, st.dictionaries(KEYS, VALUES, max_size=4) | SCALARS, max_size=4)


def check(config: Any) -> None:
    for error in config.errors:
        assert isinstance(error, ConfigError)
        assert error.file, error
        assert error.message, error
        assert isinstance(str(error), str)
    for name in config.sections:
        # structured values or defaults; a section that does not validate is refused, naming the file
        if name in config.broken_sections:
            with pytest.raises(BrokenSection) as info:
                config.section(name)
            assert info.value.file and info.value.errors == config.broken_sections[name]
        else:
            config.section(name)
    json.dumps(shown_config(config), default=str)


@given(docs=st.lists(DOCUMENTS, max_size=3))
def test_arbitrary_documents_give_a_config_or_errors_with_paths(docs: list[dict[str, Any]]) -> None:
    config = load_config(
        workspace=None,
        sections=sections(),
        env={"A": "a"},
        files=[],
        documents=[(f"doc{i}.toml", d) for i, d in enumerate(docs)],
    )
    check(config)
    for error in config.errors:
        assert error.path, error  # a document that parsed always gets a field path


TOML_LINES = st.one_of(
    st.sampled_from(["[mcp_servers.git]", "[ui]", "[policy]", "[policy.rules]", "[lsp_servers.x]", "[[ui]]"]),
    st.builds(
        lambda k, v: f"{k} = {v}",
        st.sampled_from(["command", "args", "theme", "width", "approval", '"fs.*"', "env", "mode", "x.y"]),
        st.sampled_from(
            ['"git"', "3", "-1.5", "true", '["a", 3]', "[]", '{ A = "${A}" }', '"${UNSET}"', "1979-05-27", '"never"']
        ),
    ),
    st.text(alphabet=string.printable, max_size=20),
)


@given(lines=st.lists(TOML_LINES, max_size=12), raw=st.text(max_size=40))
def test_arbitrary_text_gives_a_config_or_errors(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], raw: str
) -> None:
    path = tmp_path_factory.mktemp("cfg") / "kairox.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    other = path.parent / "raw.toml"
    other.write_text(raw, encoding="utf-8")
    check(load_config(workspace=None, sections=sections(), env={"A": "a"}, files=[path, other]))


@given(value=st.text(max_size=30), env=st.dictionaries(st.sampled_from(["A", "B", "C"]), st.text(max_size=5)))
def test_expand_env_returns_a_string_or_a_config_error(value: str, env: dict[str, str]) -> None:
    try:
        out = expand_env(value, env, path="p", file="f")
    except ConfigError as exc:
        assert exc.path == "p" and exc.file == "f"
    else:
        assert isinstance(out, str)
        if "${" not in value:
            assert out == value


def test_dates_are_not_strings(tmp_path: Path) -> None:
    config, _ = load(tmp_path, "[ui]\ntheme = 1979-05-27\n")
    [error] = config.errors
    assert error.message == f"expected a string, got {dt.date(1979, 5, 27)!r}"


def test_missing_required_key_of_an_empty_section_names_the_file(tmp_path: Path) -> None:
    @attrs.frozen
    class Needs:
        token_file: str

    reg = sections(ConfigSection("needs", Needs, default=lambda: None))
    path = tmp_path / "kairox.toml"
    path.write_text("[needs]\n")
    config = load_config(workspace=tmp_path, sections=reg, env={}, files=[path])
    [error] = config.errors
    assert (error.file, error.path, error.message) == (str(path), "needs.token_file", "required key is missing")
    with pytest.raises(BrokenSection, match=r"needs\.token_file: required key is missing"):
        config.section("needs")  # not its default: what it configures is off


# -- expand_env reads every config value: linear time, the same expansion as before -------------

_OLD_VAR = re.compile(r"\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _old_expand_env(value: str, env: dict[str, str]) -> str:
    # the same replacement, the pattern over the whole value (not only up to its last "}")
    return _OLD_VAR.sub(_substitute(env, "", None), value)


@settings(max_examples=1000)
@given(
    value=st.text(st.sampled_from(["$", "{", "}", ":", "-", "A", "B", "Z", "_", "1", " "]), max_size=24),
    env=st.dictionaries(st.sampled_from(["A", "B"]), st.sampled_from(["", "x", "${A}"]), max_size=2),
)
def test_expand_env_expands_as_the_old_pattern_did(value: str, env: dict[str, str]) -> None:
    try:
        old: str | None = _old_expand_env(value, env)
    except ConfigError:
        old = None
    try:
        new: str | None = expand_env(value, env)
    except ConfigError:
        new = None
    assert new == old


@pytest.mark.timeout(10)
def test_expand_env_is_linear_in_unclosed_references() -> None:
    # each unclosed `${A:-` was read to the end of the value again: ~2.4 s at 20 KB, hours at 1 MB
    value = "${A:-" * 200_000
    assert expand_env(value, {}) == value
    assert expand_env(value + "}", {}) == value[len("${A:-") :]


def test_an_absent_section_s_default_is_built_once_per_registered_section() -> None:
    import attrs

    from kairox._config import Config, ConfigSection

    built: list[int] = []

    @attrs.frozen
    class Schema:
        n: int = 0

    def default() -> Schema:
        built.append(1)
        return Schema(len(built))

    config = Config(
        sections={"s": ConfigSection("s", Schema, default=default), "e": ConfigSection("e", Schema, entries=True)}
    )
    first = config.section("s")
    assert config.section("s") is first and first == Schema(1) and built == [1]
    assert config.section("e") == {} and config.section("e") is not config.section("e")  # entries: a new dict
    config.sections["s"] = ConfigSection("s", Schema, default=default)  # registered again: built again
    assert config.section("s") == Schema(2)
    config.values["s"] = Schema(9)  # present: its value, as ever
    assert config.section("s") == Schema(9)
    with pytest.raises(KeyError):
        config.section("nope")


# -- a workspace's table of a single-table section -------------------------------------


@attrs.frozen
class Guarded:
    program: str = "/bin/sh"
    width: int = 80
    deny: list[str] = attrs.field(factory=lambda: ["builtin"])


def _layered(tmp_path: Path, user: str, workspace: str, *, trusted: bool | None = None, **options: Any) -> Any:
    """``[guarded]`` from the user's file ``user`` and the workspace's ``workspace``, under a
    workspace trust that is ``trusted`` (``None``: nothing recorded, i.e. untrusted)."""
    from kairox.ext import WorkspaceTrust

    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir(exist_ok=True)
    ws.mkdir(exist_ok=True)
    (home / "kairox.toml").write_text(user, encoding="utf-8")
    (ws / "kairox.toml").write_text(workspace, encoding="utf-8")
    trust = WorkspaceTrust(ws, None, override=trusted)
    config = load_config(
        workspace=ws, sections=sections(ConfigSection("guarded", Guarded, **options)), env={}, home=home, trust=trust
    )
    return config, trust, home / "kairox.toml", ws / "kairox.toml"


def test_a_workspace_table_waits_for_trust_and_says_what_it_replaces(tmp_path: Path) -> None:
    config, trust, mine, theirs = _layered(
        tmp_path, "[guarded]\nwidth = 100\n", '[guarded]\nwidth = 1\nprogram = "./x"\n'
    )

    assert config.section("guarded") == Guarded(width=100)  # the default rule: held until trusted
    assert config.source_of("guarded", "width") == str(mine)
    assert {(n.key, n.file) for n in config.not_applied} == {("width", str(theirs)), ("program", str(theirs))}
    [item] = trust.pending
    assert item.key == f"guarded@{theirs}" and item.name == "[guarded]"
    assert item.notes == (
        f"sets width = 1, replacing your 100 ({mine})",
        'sets program = "./x", replacing the default "/bin/sh"',
    )

    trusted, _trust, _mine, _theirs = _layered(
        tmp_path, "[guarded]\nwidth = 100\n", "[guarded]\nwidth = 1\n", trusted=True
    )
    assert trusted.section("guarded").width == 1 and trusted.source_of("guarded", "width") == str(theirs)


def test_a_section_may_declare_its_workspace_values_safe(tmp_path: Path) -> None:
    config, trust, _mine, _theirs = _layered(tmp_path, "", "[guarded]\nwidth = 1\n", needs_trust=False)
    assert config.section("guarded").width == 1 and not trust.pending


def test_a_workspace_table_is_fingerprinted_with_the_files_it_names(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    run = tmp_path / "ws" / "x"
    run.write_text("v1\n")
    _config, trust, _mine, _theirs = _layered(tmp_path, "", '[guarded]\nprogram = "./x"\n')
    before = trust.pending[0]
    assert set(before.files) == {"x"}
    run.write_text("v2\n")
    _config, trust, _mine, _theirs = _layered(tmp_path, "", '[guarded]\nprogram = "./x"\n')
    assert trust.pending[0].digest != before.digest


@pytest.mark.parametrize("trusted", [None, True])
def test_a_narrowing_list_only_grows_from_a_workspace(tmp_path: Path, trusted: bool | None) -> None:
    def deny(user: str, workspace: str) -> tuple[list[str], list[Any]]:
        config, trust, _mine, _theirs = _layered(tmp_path, user, workspace, trusted=trusted, narrows=("deny",))
        assert not [i for i in trust.pending if i.key.startswith("guarded")]  # it waits for nothing
        return config.section("guarded").deny, config.errors

    assert deny('[guarded]\ndeny = ["u"]\n', "[guarded]\ndeny = []\n") == (["u"], [])
    assert deny('[guarded]\ndeny = ["u"]\n', '[guarded]\ndeny = ["w", "u"]\n') == (["u", "w"], [])
    assert deny("", '[guarded]\ndeny = ["w"]\n') == (["builtin", "w"], [])  # the default is the user's
    value, errors = deny('[guarded]\ndeny = ["u"]\n', '[guarded]\ndeny = "w"\n')
    assert value == ["u"] and len(errors) == 1
    assert errors[0].path == "guarded.deny" and errors[0].file == str(tmp_path / "ws" / "kairox.toml")
    assert errors[0].message == (
        "expected a list, got 'w'; a workspace's deny is added to the user's (it never replaces it), "
        "and this one is not applied"
    )


def test_user_section_is_the_user_own_part(tmp_path: Path) -> None:
    config, _trust, _mine, _theirs = _layered(
        tmp_path, "[guarded]\nwidth = 100\n", "[guarded]\nwidth = 1\n", trusted=True
    )
    assert config.section("guarded").width == 1
    assert config.user_section("guarded") == Guarded(width=100)
    empty, _trust, _mine, _theirs = _layered(tmp_path, "", "[guarded]\nwidth = 1\n", trusted=True)
    assert empty.user_section("guarded") == Guarded()
