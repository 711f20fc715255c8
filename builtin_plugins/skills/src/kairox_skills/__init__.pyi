"""The public names of :mod:`kairox_skills`, listed once (type checkers read this; at run
time ``__init__.py`` loads each from its module on first use, ``lazy_loader.attach_stub``)."""

from ._cache import (
    ScanCache as ScanCache,
    get_cache as get_cache,
)
from ._config import (
    IMPORT_KINDS as IMPORT_KINDS,
    SkillsConfig as SkillsConfig,
    import_kinds as import_kinds,
)
from ._imports import (
    CommandSkillSource as CommandSkillSource,
    imported_folders as imported_folders,
    parse_command as parse_command,
)
from ._format import (
    dump_skill as dump_skill,
    parse_frontmatter as parse_frontmatter,
    parse_skill as parse_skill,
)
from ._yaml import (
    YamlLimitError as YamlLimitError,
    safe_load_bounded as safe_load_bounded,
)
from ._settings import (
    SettingsFile as SettingsFile,
    settings_path as settings_path,
)
from ._sources import (
    DirectorySkillSource as DirectorySkillSource,
    bundle_skill_source as bundle_skill_source,
)
from ._template import (
    ARGUMENTS as ARGUMENTS,
    render_claude as render_claude,
    template_for as template_for,
)
from ._structure import (
    frontmatter_from_mapping as frontmatter_from_mapping,
    frontmatter_to_mapping as frontmatter_to_mapping,
)
