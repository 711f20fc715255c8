"""The public names of :mod:`kairox_manifests`, listed once (type checkers read this; at run
time ``__init__.py`` loads each from its module on first use, ``lazy_loader.attach_stub``)."""

from . import (
    activation as activation,
    discovery as discovery,
    errors as errors,
    formats as formats,
    inventory as inventory,
    loader as loader,
    merge as merge,
    model as model,
    rules as rules,
    settings as settings,
)
from ._proc import (
    drain_into as drain_into,
)
from ._schema import (
    parse_document as parse_document,
    read_json as read_json,
)
from .activation import (
    Activation as Activation,
    ActivationContext as ActivationContext,
)
from .discovery import (
    Candidate as Candidate,
    DiscoveryContext as DiscoveryContext,
    Location as Location,
    discover as discover,
    probe as probe,
)
from .errors import (
    ManifestError as ManifestError,
    Problem as Problem,
)
from .formats import (
    AgentPluginsFormat as AgentPluginsFormat,
    BaseFormat as BaseFormat,
    ClaudeDefaultLayout as ClaudeDefaultLayout,
    ClaudeFormat as ClaudeFormat,
    CodexFormat as CodexFormat,
    Collector as Collector,
    add_components as add_components,
    default_inside as default_inside,
    lsp_servers as lsp_servers,
    mcp_servers as mcp_servers,
    path_list as path_list,
    KairoxFormat as KairoxFormat,
    RawCompatibility as RawCompatibility,
    RawPermissions as RawPermissions,
    builtin_formats as builtin_formats,
    check_name as check_name,
    compatibility_from as compatibility_from,
    manifest_present as manifest_present,
    permissions_from as permissions_from,
    person_from as person_from,
)
from .inventory import (
    BundleRecord as BundleRecord,
    evaluate as evaluate,
)
from .lazyformat import (
    BUILTIN_FORMATS as BUILTIN_FORMATS,
    LazyFormat as LazyFormat,
    builtin_lazy_formats as builtin_lazy_formats,
)
from .loader import (
    BundleLoader as BundleLoader,
    loader_of as loader_of,
    survey as survey,
)
from .merge import (
    merge_manifests as merge_manifests,
)
from .model import (
    CodeEntry as CodeEntry,
    Compatibility as Compatibility,
    Contribution as Contribution,
    HookDecl as HookDecl,
    InventoryItem as InventoryItem,
    BundleManifest as BundleManifest,
    BundleManifestView as BundleManifestView,
    Publisher as Publisher,
    Requirement as Requirement,
    Trust as Trust,
)
from .paths import (
    bundle_root as bundle_root,
    resolve_inside as resolve_inside,
)
from .rules import (
    Rule as Rule,
    parse_rule as parse_rule,
)
from .settings import (
    BundleSettings as BundleSettings,
    SettingsStore as SettingsStore,
)
