"""The names of :mod:`kairox.ext`: the one list (``lazy_loader.attach_stub`` reads it too)."""

from ._call import (
    current_session as current_session,
)
from ._config import (
    BrokenSection as BrokenSection,
    Config as Config,
    ConfigLayer as ConfigLayer,
    HeldEntry as HeldEntry,
    NotApplied as NotApplied,
    expand_env as expand_env,
    inherit_env as inherit_env,
    known_errors_for as known_errors_for,
    load_config as load_config,
    redact as redact,
    workspace_config_files as workspace_config_files,
)
from ._convert import (
    ValueMismatch as ValueMismatch,
    describe_value as describe_value,
    structure as structure,
)
from ._distribution import (
    DistributionChoice as DistributionChoice,
)
from ._entrypoints import (
    kernel_version as kernel_version,
)
from ._events import (
    EventBus as EventBus,
    ToolNameCollision as ToolNameCollision,
)
from ._features import (
    missing_feature_message as missing_feature_message,
)
from ._home import (
    user_home as user_home,
)
from ._hooks import (
    HookRegistry as HookRegistry,
)
from ._host import (
    LoadFailure as LoadFailure,
    PluginHost as PluginHost,
    PluginInfo as PluginInfo,
    build_plugin_host as build_plugin_host,
    package_key as package_key,
)
from ._names import (
    ENTRY_NAME_RE as ENTRY_NAME_RE,
    ToolRank as ToolRank,
    assign_exported_names as assign_exported_names,
    sanitize_name as sanitize_name,
)
from ._policy import (
    DEFAULT_PATH_ARGUMENTS as DEFAULT_PATH_ARGUMENTS,
    PolicyConfig as PolicyConfig,
    PolicyEngine as PolicyEngine,
    file_write_spec as file_write_spec,
)
from ._registrar import (
    Registrar as Registrar,
)
from ._secrets import (
    redact_url as redact_url,
)
from ._skill_model import (
    ARGUMENT_TYPES as ARGUMENT_TYPES,
    PlacedError as PlacedError,
    RenderedSkill as RenderedSkill,
    SkillArgument as SkillArgument,
    SkillDef as SkillDef,
    SkillError as SkillError,
    SkillFrontmatter as SkillFrontmatter,
    SkillMatch as SkillMatch,
    SkillScope as SkillScope,
    SkillWarning as SkillWarning,
    by_precedence as by_precedence,
    split_frontmatter as split_frontmatter,
)
from ._skills import (
    SkillLoadFailed as SkillLoadFailed,
    SkillLoadWarning as SkillLoadWarning,
    SkillRegistry as SkillRegistry,
    SkillsScanned as SkillsScanned,
)
from ._text import (
    glob_match as glob_match,
    terminal_safe as terminal_safe,
)
from ._tool_index import (
    ToolIndex as ToolIndex,
    estimate_tokens as estimate_tokens,
)
from ._tool_registry import (
    ToolRegistry as ToolRegistry,
)
from ._trust import (
    Declared as Declared,
    TrustState as TrustState,
    TrustStore as TrustStore,
    WorkspaceTrust as WorkspaceTrust,
    describe_entry as describe_entry,
    fingerprint as fingerprint,
    shell_line as shell_line,
    shown_text as shown_text,
)
from ._types import (
    APPROVAL_STRICTNESS as APPROVAL_STRICTNESS,
    ApprovalPolicy as ApprovalPolicy,
    Permissions as Permissions,
    SANDBOX_STRICTNESS as SANDBOX_STRICTNESS,
    SandboxPolicy as SandboxPolicy,
)
from ._yaml import (
    YamlLimitError as YamlLimitError,
    safe_load_bounded as safe_load_bounded,
)
