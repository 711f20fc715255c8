"""The gateway the conformance suite's server side judges, for running the suite by hand.

    uv run python tests/conformance/gateway.py [--sdk]

starts ``kairox serve --http`` over the workspace the tests use (:func:`suite.gateway`: its one
backend, ``test``, is ``tests/fixtures/mcp_servers/conformance.py``; its skill is
``pdf-processing``), prints the ``conformance server`` commands to run against it (Node 22 and
the pinned suite, installed into the test cache when missing), and serves until Ctrl-C.
``--sdk`` serves the fixture by the SDK directly instead (the table's "SDK" column).
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import peers  # noqa: E402
import suite  # noqa: E402


def stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # leave the with blocks: the gateway's process group is stopped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sdk", action="store_true", help="serve the fixture by the SDK directly (the reference)")
    args = parser.parse_args()
    # also when started in the background (SIGINT ignored) or stopped with kill
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    cli = " ".join(shlex.quote(part) for part in peers.conformance_cli())
    with (
        tempfile.TemporaryDirectory(prefix="kairox-conformance-") as tmp,
        suite.fixture_direct() if args.sdk else suite.gateway(Path(tmp)) as url,
    ):
        who = "the fixture, served by the SDK" if args.sdk else "kairox serve --http over the fixture backend"
        print(f"{who}: {url}")
        print("run the server side of the suite against it (each revision's requirement set):")
        for revision in suite.REVISIONS:
            print(f"  {cli} server --url {url} --requirements {revision} -o /tmp/conformance-{revision}")
        print("Ctrl-C stops it.", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
