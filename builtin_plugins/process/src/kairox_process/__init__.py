"""Child processes, the one way every feature runs them: own process group, always reaped.

Every child kairox starts (an MCP server, a language server, a debug adapter, a
hook script, a shell command) runs with ``start_new_session=True``: it leads a
new session and process group whose id is its pid, and its children (``npx`` ->
``node``, a shell's background jobs) stay in that group unless they call
``setsid``. The group's id stays reserved while any member lives, so signalling
it after the leader exited still reaches the stragglers and nothing else. A
debuggee that moves to a group of its own stays in the session:
:func:`kill_session` reaches it too.

A library, not a plugin: it registers nothing. Its public names:

- the children: :func:`open_group` (a child in its own process group, reaped however the
  block ends), :func:`reap`, :func:`kill_group`, :func:`kill_session`, :func:`group_alive`,
  :func:`session_members`, :func:`wait_group_gone`, :func:`wait_session_gone`,
  :func:`describe_exit`;
- their environment: :func:`server_env`, :func:`scripts_dir`, and :func:`protect_environment`
  (this process's environment kept from them);
- what they write: :class:`OutputTail` (bounded, optionally redacted);
- when one that crashed starts again: :class:`Restarts` (doubling backoff, at most
  :data:`MAX_BACKOFF`; a new row of crashes after :data:`RESET_AFTER` seconds ready) and
  :class:`Failure` (what its failure event says).

``from kairox_process import ...``; POSIX first, with a fallback that signals the child
alone elsewhere. Names are loaded lazily so that importing the package is cheap.
"""

from __future__ import annotations

from kairox.declare import stub_exports

__getattr__, __dir__ = stub_exports(__name__, __file__)
