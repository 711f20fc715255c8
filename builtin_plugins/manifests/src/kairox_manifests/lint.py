"""``kairox plugin lint PATH``: a plugin directory checked against every format that claims it.

What plugin authors otherwise learn only when a user's tool refuses their plugin. Each manifest
format installed (Claude Code's, Codex's, kairox's, Philont's, and any a plugin package adds) is
asked on its own whether the directory is its plugin; each that says so is read, and its
errors and warnings are reported with the format, the file and the field. Then what the
manifests name is read as kairox would load it: every skill, command, agent and output-style
file, and every MCP server entry (with each ``${VAR}`` set to a stand-in value, so a
variable this machine lacks is not the plugin's fault). Nothing is run, no variable of this
machine is read, and every file is read through the bundle's contained reader.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .discovery import DiscoveryContext, ask_format
from .errors import ManifestError, Problem
from .model import BundleManifest, Contribution

if TYPE_CHECKING:
    from kairox import Runtime
    from kairox.files import Root

__all__ = ["LintFinding", "LintReport", "lint_plugin"]

#: a file a lint reads (a skill, an agent) is read up to this
MAX_FILE = 1024 * 1024


@attrs.frozen
class LintFinding:
    """One problem: ``severity`` is ``error`` (the tool would refuse the plugin or the part)
    or ``warning``; ``format`` names the manifest format whose rule it is, or is empty for
    what the manifests name (a skill file, a server entry)."""

    severity: str
    message: str
    file: str | None = None
    field: str = ""
    format: str = ""

    def render(self) -> str:
        where = ": ".join(p for p in (self.file, self.field) if p)
        label = f"[{self.format}] " if self.format else ""
        return f"{self.severity}: {label}{where + ': ' if where else ''}{self.message}"

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class LintReport:
    root: str
    #: the formats that recognised the directory, in the order kairox asks them
    formats: tuple[str, ...]
    findings: tuple[LintFinding, ...]

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "formats": list(self.formats),
            "errors": self.errors,
            "findings": [f.to_dict() for f in self.findings],
        }


class _StandIn(Mapping[str, str]):
    """Every variable set (to a stand-in): a server entry is checked for its shape, not for
    what this machine's environment holds."""

    def __getitem__(self, key: str) -> str:
        return "lint"

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __contains__(self, key: object) -> bool:
        return True


def _from_error(exc: ManifestError, fmt: str) -> list[LintFinding]:
    return [LintFinding("error", e.message, e.file, e.path, fmt) for e in exc.errors]


def _from_problem(p: Problem, fmt: str) -> LintFinding:
    return LintFinding(p.severity, p.message, p.file, p.path, fmt)


def lint_plugin(runtime: Runtime, root: Path) -> LintReport:
    """Check the plugin directory ``root`` (see the module's docstring)."""
    from .merge import merge_manifests

    ctx = DiscoveryContext.from_runtime(runtime)
    reader = ctx.bundle(root)
    findings: list[LintFinding] = []
    claimed: list[str] = []
    manifests: list[BundleManifest] = []
    regular = [f for f in ctx.formats if not getattr(f, "fallback", False)]
    fallbacks = [f for f in ctx.formats if getattr(f, "fallback", False)]
    for group in (regular, fallbacks):
        for fmt in group:
            name = str(getattr(fmt, "name", "?"))
            try:
                manifest = ask_format(fmt, root, reader, ctx.home)
            except ManifestError as exc:
                claimed.append(name)
                findings.extend(_from_error(exc, name))
                continue
            if manifest is not None:
                claimed.append(name)
                manifests.append(manifest)
                findings.extend(_from_problem(p, name) for p in manifest.problems)
        if claimed:  # a layout format is asked only when no manifest recognised the directory
            break
    if not claimed:
        findings.append(LintFinding("error", "not a plugin: no manifest format recognises it", str(root)))
        return LintReport(str(root), (), tuple(findings))
    if len(manifests) > 1:
        merged = merge_manifests(manifests)
        findings.extend(_from_problem(p, "+".join(m.format for m in manifests)) for p in merged.problems if p.kind)
        contributions = merged.contributions
    else:
        contributions = manifests[0].contributions if manifests else ()
    for c in contributions:
        findings.extend(_check(c, reader))
    return LintReport(str(root), tuple(claimed), tuple(_unique(findings)))


def _unique(findings: list[LintFinding]) -> Iterator[LintFinding]:
    seen: set[LintFinding] = set()
    for f in findings:
        if f not in seen:
            seen.add(f)
            yield f


def _check(c: Contribution, reader: Root) -> list[LintFinding]:
    """What loading one contribution would say."""
    if c.kind in ("skill", "command"):
        return _check_skill(c, reader)
    if c.kind in ("agent", "output_style"):
        return _check_agent(c, reader)
    if c.kind == "mcp_server":
        return _check_server(c)
    return []


def _check_skill(c: Contribution, reader: Root) -> list[LintFinding]:
    try:
        from kairox.ext import SkillDef, SkillError, SkillScope
        from kairox_skills import parse_command, parse_skill
    except ImportError:
        return [LintFinding("warning", "kairox-skills is not installed: skills not checked", str(c.source))]
    file = c.source / "SKILL.md" if c.kind == "skill" and reader.is_dir(c.source) else c.source
    try:
        text = reader.read_text(file, max_bytes=MAX_FILE)
    except Exception as exc:
        return [LintFinding("error", f"cannot read: {exc}", str(file))]
    try:
        if c.kind == "command":
            item = parse_command(text, str(file), scope=SkillScope.PLUGIN, source="lint")
            if isinstance(item, SkillError):
                raise item
            if not isinstance(item, SkillDef):  # a warning alone: nothing was read as a command
                return [LintFinding("warning", item.message, str(file), item.field)]
            skill = item
        else:
            skill = parse_skill(text, path=file, scope=SkillScope.PLUGIN)
    except SkillError as exc:
        return [LintFinding("error", exc.message, exc.file or str(file), exc.field)]
    return [LintFinding("warning", w.message, str(file), w.field) for w in skill.warnings]


def _check_agent(c: Contribution, reader: Root) -> list[LintFinding]:
    try:
        from kairox_agents import AgentError, OutputStyleError, parse_agent, parse_output_style
    except ImportError:
        return [LintFinding("warning", "kairox-agents is not installed: agents not checked", str(c.source))]
    try:
        text = reader.read_text(c.source, max_bytes=MAX_FILE)
    except Exception as exc:
        return [LintFinding("error", f"cannot read: {exc}", str(c.source))]
    parse = parse_agent if c.kind == "agent" else parse_output_style
    try:
        parsed = parse(text, str(c.source))
    except (AgentError, OutputStyleError) as exc:
        return [LintFinding("error", exc.message, exc.file, exc.field)]
    prefix = f"{c.source}: "  # an agent's warnings are whole lines, naming the file
    return [LintFinding("warning", w.removeprefix(prefix), str(c.source)) for w in parsed.warnings]


def _check_server(c: Contribution) -> list[LintFinding]:
    try:
        from kairox_mcp import parse_mcp_json
    except ImportError:
        return [LintFinding("warning", "kairox-mcp is not installed: MCP servers not checked", str(c.source))]
    _defs, errors = parse_mcp_json({"mcpServers": {c.name: c.config}}, file=str(c.source), env=_StandIn())
    return [LintFinding("error", e.message, e.file, e.path) for e in errors]
