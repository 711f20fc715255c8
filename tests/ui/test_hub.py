"""What the page is sent about installs and events reads as written: values hidden, not words."""

from __future__ import annotations

from kairox_catalog.progress import Step
from kairox_mcp.events import McpServerFailed
from kairox_ui.hub import Hub, JobProgress, event_message

#: the kernel's hint for a variable the environment lacks: prose naming it, no value
HINT = "environment variable CLOCK_API_KEY is not set (write ${CLOCK_API_KEY:-default} for a fallback)"
SECRET = "config-secret-9b27c1"


def test_an_install_step_and_a_failure_event_read_as_written_with_values_hidden() -> None:
    """Pattern redaction of the whole message turned the hint into ``${CLOCK_API_KEY:<redacted>}``
    on the Marketplace page (a failed verify) and in the trace."""
    hub = Hub()
    hub.secrets = [SECRET]
    progress = JobProgress(hub, "job1")
    step = Step("Starting clock once to verify it reaches Ready")
    step.ok = False
    step.detail = f"failed: {HINT}"
    progress.on_end(step, 0.1, None)
    progress.info(f"launch: server --token s3cr3tvalue --header {SECRET}")
    sent = progress.log
    assert sent[0]["detail"] == f"failed: {HINT}"
    assert sent[1]["message"] == "launch: server --token <redacted> --header <redacted>"

    event = McpServerFailed(server="clock", error=HINT, stderr_tail=(HINT, "--token s3cr3tvalue"))
    data = event_message(event, 1)["data"]
    assert data["error"] == HINT and data["stderr_tail"] == [HINT, "--token <redacted>"]
