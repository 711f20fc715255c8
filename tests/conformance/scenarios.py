"""The scored scenarios of the pinned conformance suite (``peers.CONFORMANCE_VERSION``), as
``conformance list --requirements REV`` names them (test_conformance.py checks that this copy
matches the installed suite), and kairox's known failures, each with why.

A known failure is a scenario the suite fails kairox on today, with what the suite says kairox
did wrong; the test of it is ``xfail(strict=True)``, so a fix that makes it pass fails the run
until the entry is removed here.
"""

from __future__ import annotations

# fmt: off
SCORED = {
    ('client', '2025-11-25'): ['initialize', 'tools_call', 'elicitation-sep1034-client-defaults', 'sse-retry', 'auth/metadata-default', 'auth/metadata-var1', 'auth/metadata-var2', 'auth/metadata-var3', 'auth/basic-cimd', 'auth/scope-from-www-authenticate', 'auth/scope-from-scopes-supported', 'auth/scope-omitted-when-undefined', 'auth/scope-step-up', 'auth/scope-retry-limit', 'auth/token-endpoint-auth-basic', 'auth/token-endpoint-auth-post', 'auth/token-endpoint-auth-none', 'auth/pre-registration'],
    ('client', '2026-07-28'): ['tools_call', 'request-metadata', 'auth/metadata-default', 'auth/metadata-var1', 'auth/metadata-var2', 'auth/metadata-var3', 'auth/basic-cimd', 'auth/scope-from-www-authenticate', 'auth/scope-from-scopes-supported', 'auth/scope-omitted-when-undefined', 'auth/scope-step-up', 'auth/scope-retry-limit', 'auth/token-endpoint-auth-basic', 'auth/token-endpoint-auth-post', 'auth/token-endpoint-auth-none', 'auth/pre-registration', 'auth/resource-mismatch', 'auth/offline-access-scope', 'auth/offline-access-not-supported', 'auth/authorization-server-migration', 'auth/iss-supported', 'auth/iss-not-advertised', 'auth/iss-supported-missing', 'auth/iss-wrong-issuer', 'auth/iss-unexpected', 'auth/iss-normalized', 'auth/metadata-issuer-mismatch', 'sep-2322-client-request-state', 'http-standard-headers', 'http-custom-headers', 'http-invalid-tool-headers', 'json-schema-ref-no-deref'],
    ('server', '2025-11-25'): ['server-initialize', 'logging-set-level', 'ping', 'completion-complete', 'tools-list', 'tools-call-simple-text', 'tools-call-image', 'tools-call-audio', 'tools-call-embedded-resource', 'tools-call-mixed-content', 'tools-call-with-logging', 'tools-call-error', 'tools-call-with-progress', 'tools-call-sampling', 'tools-call-elicitation', 'elicitation-sep1034-defaults', 'server-sse-multiple-streams', 'elicitation-sep1330-enums', 'resources-list', 'resources-read-text', 'resources-read-binary', 'resources-templates-read', 'resources-subscribe', 'resources-unsubscribe', 'prompts-list', 'prompts-get-simple', 'prompts-get-with-args', 'prompts-get-embedded-resource', 'prompts-get-with-image', 'dns-rebinding-protection'],
    ('server', '2026-07-28'): ['server-stateless', 'completion-complete', 'tools-list', 'tools-call-simple-text', 'tools-call-image', 'tools-call-audio', 'tools-call-embedded-resource', 'tools-call-mixed-content', 'tools-call-error', 'tools-call-with-progress', 'server-sse-multiple-streams', 'resources-list', 'resources-read-text', 'resources-read-binary', 'resources-templates-read', 'sep-2164-resource-not-found', 'prompts-list', 'prompts-get-simple', 'prompts-get-with-args', 'prompts-get-embedded-resource', 'prompts-get-with-image', 'dns-rebinding-protection', 'caching', 'input-required-result-basic-elicitation', 'input-required-result-basic-sampling', 'input-required-result-basic-list-roots', 'input-required-result-request-state', 'input-required-result-multiple-input-requests', 'input-required-result-multi-round', 'input-required-result-missing-input-response', 'input-required-result-non-tool-request', 'input-required-result-result-type', 'input-required-result-unsupported-methods', 'input-required-result-tampered-state', 'input-required-result-capability-check', 'input-required-result-ignore-extra-params', 'input-required-result-validate-input'],
}
# fmt: on

#: EXTENSION scenarios (``[extension]`` in ``conformance list``: no requirement set scores them)
#: that kairox implements and holds itself to as though they were scored: each must pass.
#: Kept apart from SCORED, which is what the suite's requirement sets name.
EXTENSIONS_FOR_US = {
    "client": [
        "auth/client-credentials-basic",
        "auth/client-credentials-jwt",
        "auth/enterprise-managed-authorization",
        "sep-2640-client-no-prefetch",
        "sep-2640-client-verify-digest",
        "sep-2640-client-verify-size",
        "sep-2640-client-verify-frontmatter",
    ],
    # the gateway's skills extension (the directory scenario skips: directoryRead is not declared)
    "server": ["sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory"],
}

KNOWN_FAILURES: dict[tuple[str, str, str], str] = {}
