"""kairox_cli's public names: what plugins' commands use."""

from __future__ import annotations

import pytest

import kairox_cli


def test_cli_helpers_for_plugins() -> None:
    assert set(kairox_cli.__all__) >= {
        "run_with_runtime",
        "echo_json",
        "want_json",
        "tty_approver",
        "main",
        "parse_pairs",
        "command",
        "lazy_command",
    }


def test_parse_pairs_reads_repeated_key_value_options() -> None:
    import click

    from kairox_cli import parse_pairs

    assert parse_pairs(["a=1", "b=x=y", "a=2", "c="], option="--arg") == {"a": "2", "b": "x=y", "c": ""}
    for bad in ("novalue", "=1"):
        with pytest.raises(click.BadParameter, match=f"expected NAME=VALUE, got '{bad}'") as raised:
            parse_pairs([bad], option="--input", metavar="NAME")
        assert raised.value.param_hint == "--input"
