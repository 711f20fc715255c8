"""The plugin tests run runtimes with kairox-manifests and kairox-philont registered inline,
and a private HOME (so ``~/.philont/plugins`` of the machine is never read): the fixtures of
``tests/bundle_fixtures.py``."""

from __future__ import annotations

from bundle_fixtures import kairox_env, kairox_plugins, user_home

__all__ = ["kairox_env", "kairox_plugins", "user_home"]
