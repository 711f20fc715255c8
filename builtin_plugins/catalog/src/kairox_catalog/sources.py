"""Which sources kairox-catalog registers: the built-in list and each ``[[catalog.sources]]``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kairox.ext import user_home

from .builtin import BuiltinSource
from .config import CatalogConfig
from .remote import RemoteSource

if TYPE_CHECKING:
    from kairox import Runtime
    from kairox.ext import Registrar

__all__ = ["cache_dir", "catalog_config", "register_sources"]

logger = logging.getLogger(__name__)


def catalog_config(runtime: Runtime) -> CatalogConfig:
    try:
        config = runtime.config.section("catalog")
    except KeyError:  # the section is not registered (plugin loaded without its config hook)
        return CatalogConfig()
    return config if isinstance(config, CatalogConfig) else CatalogConfig()


def kairox_home(runtime: Runtime) -> Path:
    home: Path | None = runtime.home
    return home if home is not None else user_home(runtime.env)


def cache_dir(runtime: Runtime) -> Path:
    return kairox_home(runtime) / "cache" / "catalog"


def register_sources(registrar: Registrar[Any], runtime: Runtime) -> None:
    config = catalog_config(runtime)
    if config.builtin:
        registrar.add(BuiltinSource())
    for source in config.sources:
        if not source.enabled:
            continue
        if source.name in registrar:
            logger.warning(
                "catalog source %r is configured twice (or clashes with a built-in one); skipped", source.name
            )
            continue
        registrar.add(
            RemoteSource(
                source.name,
                source.url,
                kind=source.kind,
                cache_dir=cache_dir(runtime),
                ttl=config.cache_ttl,
                timeout=config.timeout,
            )
        )
