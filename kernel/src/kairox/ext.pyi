"""The names of :mod:`kairox.ext`: the one list (``lazy_loader.attach_stub`` reads it too)."""

from ._call import (
    current_session as current_session,
)
from ._config import (
    BrokenSection as BrokenSection,
)
from ._config import (
    Config as Config,
)
from ._config import (
    ConfigLayer as ConfigLayer,
)
from ._config import (
    HeldEntry as HeldEntry,
)
from ._config import (
    NotApplied as NotApplied,
)
from ._config import (
    expand_env as expand_env,
)
from ._config import (
    inherit_env as inherit_env,
)
from ._config import (
    redact as redact,
)
from ._config import (
    workspace_config_files as workspace_config_files,
)
from ._config_load import (
    known_errors_for as known_errors_for,
)
from ._config_load import (
    load_config as load_config,
)
from ._config_load import (
    toml_key as toml_key,
)
from ._context import (
    Instruction as Instruction,
)
from ._convert import (
    ValueMismatch as ValueMismatch,
)
from ._convert import (
    describe_value as describe_value,
)
from ._convert import (
    structure as structure,
)
from ._declared import (
    WHOLE_ENVIRONMENT as WHOLE_ENVIRONMENT,
)
from ._declared import (
    WHOLE_ENVIRONMENT_NOTE as WHOLE_ENVIRONMENT_NOTE,
)
from ._declared import (
    Declared as Declared,
)
from ._declared import (
    describe_entry as describe_entry,
)
from ._declared import (
    fingerprint as fingerprint,
)
from ._distribution import (
    DistributionChoice as DistributionChoice,
)
from ._entrypoints import (
    kernel_version as kernel_version,
)
from ._events import (
    EventBus as EventBus,
)
from ._events import (
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
)
from ._host import (
    PluginHost as PluginHost,
)
from ._host import (
    PluginInfo as PluginInfo,
)
from ._host import (
    build_plugin_host as build_plugin_host,
)
from ._host import (
    package_key as package_key,
)
from ._names import (
    ENTRY_NAME_RE as ENTRY_NAME_RE,
)
from ._names import (
    ToolRank as ToolRank,
)
from ._names import (
    assign_exported_names as assign_exported_names,
)
from ._names import (
    sanitize_name as sanitize_name,
)
from ._policy import (
    DEFAULT_PATH_ARGUMENTS as DEFAULT_PATH_ARGUMENTS,
)
from ._policy import (
    PolicyConfig as PolicyConfig,
)
from ._policy import (
    PolicyEngine as PolicyEngine,
)
from ._policy import (
    file_write_spec as file_write_spec,
)
from ._registrar import (
    Registrar as Registrar,
)
from ._secrets import (
    REDACTED as REDACTED,
)
from ._secrets import (
    cut_at_word as cut_at_word,
)
from ._secrets import (
    redact_url as redact_url,
)
from ._skill_model import (
    ARGUMENT_TYPES as ARGUMENT_TYPES,
)
from ._skill_model import (
    PLACEHOLDER as PLACEHOLDER,
)
from ._skill_model import (
    PlacedError as PlacedError,
)
from ._skill_model import (
    RenderedSkill as RenderedSkill,
)
from ._skill_model import (
    SkillArgument as SkillArgument,
)
from ._skill_model import (
    SkillDef as SkillDef,
)
from ._skill_model import (
    SkillError as SkillError,
)
from ._skill_model import (
    SkillFrontmatter as SkillFrontmatter,
)
from ._skill_model import (
    SkillLoader as SkillLoader,
)
from ._skill_model import (
    SkillMatch as SkillMatch,
)
from ._skill_model import (
    SkillScope as SkillScope,
)
from ._skill_model import (
    SkillWarning as SkillWarning,
)
from ._skill_model import (
    Template as Template,
)
from ._skill_model import (
    by_precedence as by_precedence,
)
from ._skill_model import (
    format_value as format_value,
)
from ._skill_model import (
    render_template as render_template,
)
from ._skill_model import (
    split_frontmatter as split_frontmatter,
)
from ._skills import (
    SkillLoadFailed as SkillLoadFailed,
)
from ._skills import (
    SkillLoadWarning as SkillLoadWarning,
)
from ._skills import (
    SkillRegistry as SkillRegistry,
)
from ._skills import (
    SkillsScanned as SkillsScanned,
)
from ._text import (
    shell_line as shell_line,
)
from ._text import (
    shown_text as shown_text,
)
from ._text import (
    terminal_safe as terminal_safe,
)
from ._tool_index import (
    ToolIndex as ToolIndex,
)
from ._tool_index import (
    estimate_tokens as estimate_tokens,
)
from ._tool_registry import (
    ToolRegistry as ToolRegistry,
)
from ._trust import (
    TrustState as TrustState,
)
from ._trust import (
    TrustStore as TrustStore,
)
from ._trust import (
    WorkspaceTrust as WorkspaceTrust,
)
from ._trust import (
    workspace_key as workspace_key,
)
from ._types import (
    APPROVAL_STRICTNESS as APPROVAL_STRICTNESS,
)
from ._types import (
    SANDBOX_STRICTNESS as SANDBOX_STRICTNESS,
)
from ._types import (
    ApprovalPolicy as ApprovalPolicy,
)
from ._types import (
    Permissions as Permissions,
)
from ._types import (
    SandboxPolicy as SandboxPolicy,
)
from ._types import (
    StrEnum as StrEnum,
)
