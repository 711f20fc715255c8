"""Every file a workspace, bundle, skill source, catalog or config names is read through the
contained reader (``kairox.files.Root``): checked on the source with ``ast``, as
``tests/test_layers.py`` checks imports.

A call that opens or walks files another way (``open``, ``os.open``, ``os.walk``,
``os.scandir``, ``os.listdir``, ``Path.read_text`` / ``read_bytes`` / ``open`` /
``iterdir`` / ``glob`` / ``rglob``, ``tarfile.open``, ``shutil.copytree``, ...) in
``kernel/src`` or ``builtin_plugins/*/src`` fails this test, unless :data:`ALLOWED` names
the function, with the reason it does not read what a workspace, bundle or catalog
contains. A method of the same name called on a contained root is not such a call: by
convention its receiver is named ``root``, ``contained``, ``workspace_root`` (or ends so),
or is built on the spot (``Root(...)``, ``runtime.contained(...)``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (file, function) -> why it may open or walk files itself
ALLOWED: dict[tuple[str, str], str] = {
    # the contained reader itself, and the kernel's own files
    ("kernel/src/kairox/_contained.py", "*"): "the contained reader",
    ("kernel/src/kairox/files.py", "locked"): "a lock file of kairox's own, beside the file it guards",
    ("kernel/src/kairox/files.py", "_remove_stale_temp_files"): "kairox's own temp files, never followed",
    ("kernel/src/kairox/_entrypoints.py", "_fingerprint"): "installed packages' metadata (site-packages)",
    ("kernel/src/kairox/_entrypoints.py", "_read"): "kairox's own entry-point cache in its home",
    ("kernel/src/kairox/_entrypoints.py", "_prune"): "kairox's own entry-point cache in its home",
    ("kernel/src/kairox/_trust.py", "TrustStore._read"): "kairox's own trust.json in its home",
    ("builtin_plugins/process/src/kairox_process/_children.py", "_proc_stats"): "/proc of this machine, to find "
    "process groups",
    # kairox's own state, caches and logs, under $KAIROX_HOME
    ("builtin_plugins/manifests/src/kairox_manifests/loadstate.py", "LoadState._read"): "kairox's own state file",
    ("builtin_plugins/mcp/src/kairox_mcp/auth.py", "TokenFile.read"): "kairox's own OAuth token store",
    ("builtin_plugins/skills/src/kairox_skills/_cache.py", "ScanCache._load_disk"): "kairox's own skills cache",
    ("builtin_plugins/catalog/src/kairox_catalog/fetch.py", "DocumentCache.read"): "kairox's own catalog cache",
    ("builtin_plugins/stdio/src/kairox_stdio/stdio.py", "_Connection._open_log"): "kairox's own server log (a write)",
    # standard streams and the process's own descriptors
    ("builtin_plugins/philont/src/kairox_philont/_worker_host.py", "main"): "/dev/null for the worker's stdin",
    ("builtin_plugins/serve/src/kairox_serve/stdio.py", "claim_stdio"): "/dev/null for the gateway's stdin",
    ("builtin_plugins/ui/src/kairox_ui/watch.py", "_silence_stdout"): "/dev/null for stdout",
    ("builtin_plugins/serve/src/kairox_serve/frontdoor.py", "ensure_descriptors"): "counts /proc/self/fd",
    ("builtin_plugins/ui/src/kairox_ui/app.py", "_shell"): "the dashboard's own page, a package resource",
    ("builtin_plugins/ui/src/kairox_ui/security.py", "_own_token_text"): "the dashboard's own token in the kairox home",
    ("builtin_plugins/serve/src/kairox_serve/audit.py", "AuditLog.open"): (
        "appends to the audit file the user's own config names ([serve.audit] file; a workspace cannot set it)"
    ),
    # tools whose reads and writes a tool call asks for: the policy engine decides them
    ("builtin_plugins/tools/src/kairox_tools/_fs.py", "FsRead._read"): "fs.read: the file a call names (policy)",
    ("builtin_plugins/tools/src/kairox_tools/_fs.py", "_Walker.walk"): "fs.list: the folder a call names (policy)",
    ("builtin_plugins/tools/src/kairox_tools/_grep.py", "_files.walk"): "search.grep: a call's folder (policy)",
    ("builtin_plugins/tools/src/kairox_tools/_grep.py", "_search_file"): "search.grep: a call's files (policy)",
    ("builtin_plugins/tools/src/kairox_tools/_safeopen.py", "*"): "fs.write: no-follow writes a call asks for",
    (
        "builtin_plugins/peer/src/kairox_peer/_text.py",
        "read_text",
    ): "lsp.*, dap.*: the source file a call names (policy)",
    # installs: folders kairox made and archives it downloaded, checked member by member
    ("builtin_plugins/catalog/src/kairox_catalog/bundles.py", "_safe_extract"): "an archive kairox downloaded; "
    "members checked (no links out, no devices) before extraction",
    ("builtin_plugins/catalog/src/kairox_catalog/bundles.py", "_copy_tree"): "copies a fetched bundle; refuses "
    "links that leave it and devices",
    ("builtin_plugins/catalog/src/kairox_catalog/bundles.py", "_copy_item"): "copies within kairox's staging folder",
    ("builtin_plugins/catalog/src/kairox_catalog/bundles.py", "_fetch"): "npm pack's archive in a temp folder",
    ("builtin_plugins/catalog/src/kairox_catalog/bundles.py", "_check_bundle"): "a fetched folder in staging",
    ("builtin_plugins/catalog/src/kairox_catalog/bundles.py", "assemble_plugin"): "kairox's staging folder",
    ("builtin_plugins/catalog/src/kairox_catalog/bundles.py", "supplement_plugin"): "kairox's staging folder, "
    "as assemble_plugin: the fetched plugin, already checked by _copy_tree",
    ("builtin_plugins/manifests/src/kairox_manifests/install.py", "_copy_into_place"): "a staged copy, checked "
    "for links that leave it and devices before it is moved into place",
}

_CALLS = {("os", "open"), ("io", "open"), ("os", "walk"), ("os", "scandir"), ("os", "listdir")}
_CALLS |= {("tarfile", "open"), ("zipfile", "ZipFile"), ("shutil", "copytree"), ("glob", "glob"), ("glob", "iglob")}
_METHODS = {"read_text", "read_bytes", "iterdir", "glob", "rglob", "open"}
#: the methods a contained root has too: on a receiver named like one, they are the root's
_ROOT_METHODS = {"read_text", "read_bytes", "open"}
#: receivers of a contained root's methods, by convention (see the module's docstring)
_ROOT_NAMES = ("root", "contained", "workspace_root", "reader")
#: ``.open()`` is a file's only on a receiver that names a path (``path``, ``file``, ``a / b``, ``Path(...)``):
#: elsewhere it is the runtime's, a connection's, a browser's


def _receiver_is_a_root(node: ast.expr) -> bool:
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name in ("Root", "contained")
    text = ast.unparse(node).lower()
    return text.endswith(_ROOT_NAMES)


def _names_a_path(node: ast.expr) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        return (func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")) in ("Path", "PurePath")
    text = ast.unparse(node).lower()
    return text.endswith(("path", "file"))


def _opens(path: Path) -> Iterator[tuple[str, int, str]]:
    """``(qualified function, line, what)`` for each call that opens or walks files."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

    def visit(node: ast.AST, qual: str) -> Iterator[tuple[str, int, str]]:
        for child in ast.iter_child_nodes(node):
            inner = qual
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{qual}.{child.name}" if qual else child.name
            if isinstance(child, ast.Call):
                func = child.func
                if isinstance(func, ast.Name) and func.id == "open":
                    yield inner or "<module>", child.lineno, "open()"
                elif isinstance(func, ast.Attribute):
                    base = func.value
                    if isinstance(base, ast.Name) and (base.id, func.attr) in _CALLS:
                        yield inner or "<module>", child.lineno, f"{base.id}.{func.attr}()"
                    elif func.attr in _METHODS and not (func.attr in _ROOT_METHODS and _receiver_is_a_root(base)):
                        if func.attr != "open" or _names_a_path(base):
                            receiver = ast.unparse(base)
                            receiver = f"({receiver})" if isinstance(base, ast.BinOp) else receiver
                            yield inner or "<module>", child.lineno, f"{receiver}.{func.attr}()"
            yield from visit(child, inner)

    yield from visit(tree, "")


def _sources() -> Iterator[Path]:
    yield from sorted((ROOT / "kernel" / "src").rglob("*.py"))
    yield from sorted(ROOT.glob("builtin_plugins/*/src/**/*.py"))


def _allowed(rel: str, qual: str) -> bool:
    if (rel, "*") in ALLOWED:
        return True
    parts = qual.split(".")
    # the function itself or any function it is nested in
    return any((rel, ".".join(parts[:i])) in ALLOWED for i in range(len(parts), 0, -1))


def test_files_are_opened_and_walked_only_through_the_contained_reader() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line} {qual}: {what}"
        for path in _sources()
        for qual, line, what in _opens(path)
        if not _allowed(str(path.relative_to(ROOT)), qual)
    ]
    assert found == [], "open or walk files through kairox.files.Root (or add a reasoned ALLOWED entry):\n" + "\n".join(
        found
    )


def test_every_allowed_entry_still_opens_files() -> None:
    """The list only shrinks: an entry whose function no longer opens files is struck."""
    used = {
        (str(path.relative_to(ROOT)), qual.split(".")[0] if (str(path.relative_to(ROOT)), "*") in ALLOWED else qual)
        for path in _sources()
        for qual, _line, _what in _opens(path)
    }
    files = {rel for rel, _ in used}
    stale = [
        key
        for key in ALLOWED
        if (key[1] == "*" and key[0] not in files) or (key[1] != "*" and not any(u == key for u in used))
    ]
    assert stale == []


def test_the_check_sees_an_open_it_should_refuse(tmp_path: Path) -> None:
    """The detector itself: a direct read of a workspace file is found; a root's is not."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\n"
        "def bad(ws):\n"
        "    return (ws / 'AGENTS.md').read_text()\n"
        "def also_bad(p):\n"
        "    with open(p) as fh: return fh.read()\n"
        "def walks(d):\n"
        "    return list(os.walk(d))\n"
        "def good(runtime, p):\n"
        "    return runtime.workspace_root.read_text(p) + runtime.contained(p).read_text('x')\n"
        "def named_root_but_a_path(root):\n"
        "    return list(root.iterdir())\n"
        "def not_a_file(rt, conn):\n"
        "    return rt.open(), conn.open()\n"
    )
    found = [(qual, what) for qual, _line, what in _opens(sample)]
    assert found == [
        ("bad", "(ws / 'AGENTS.md').read_text()"),
        ("also_bad", "open()"),
        ("walks", "os.walk()"),
        ("named_root_but_a_path", "root.iterdir()"),
    ]
