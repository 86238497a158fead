"""What a new user meets in the first minutes: help without markup, plugin variables that say when they name
nothing, what "not loaded" means, and candidate and plugin tables that never cut a word."""

from __future__ import annotations

import logging
import os
import re
from typing import NoReturn

import pytest
from click.testing import CliRunner
from rich.console import Console

from olive.cli import main as cli_main
from olive.cli.layout import plain_text
from olive.cli.main import cli
from olive.cli.passes import NOT_LOADED_NOTE
from olive.plugins import discovery
from olive.plugins.discovery import PluginPolicy, warn_unknown_policy_names
from olive.plugins.registry import PassRegistry
from olive.report.data import report_data_from_footprint
from olive.report.html import render_report
from olive.report.table import candidates_table, distinguishing_names, format_value

RST = re.compile(r"``|:(class|func|meth|mod|param|attr):`")
# Set where this repository's pass distributions are installed (tox's quant environment runs this file too):
# there a case that needs them must run, not skip.
WITH_PASSES_ENV = "OLIVE_TESTS_WITH_PASSES"


def _skip_without_passes(reason: str) -> NoReturn:
    if os.environ.get(WITH_PASSES_ENV):
        pytest.fail(f"{reason}, but {WITH_PASSES_ENV} says this environment has the pass distributions")
    pytest.skip(reason)


# --------------------------------------------------------------------------------------------------
# Help and listings in plain words
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [[], *([name] for name in cli_main.COMMANDS), ["cache", "info"]])
def test_help_has_no_restructuredtext_markup(command: list[str]) -> None:
    result = CliRunner().invoke(cli, [*command, "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert not RST.search(result.output), result.output


def test_installed_pass_listing_and_details_have_no_markup() -> None:
    # The real distributions of this repository: their docstrings use ``literal`` markup.
    listing = CliRunner().invoke(cli, ["passes"], env={"COLUMNS": "200"})
    assert listing.exit_code == 0, listing.output
    if "DynamicToFixedShape" not in listing.output:
        _skip_without_passes("olive-passes-graph is not installed")
    assert not RST.search(listing.output), listing.output
    assert "dim_param" in listing.output
    details = CliRunner().invoke(cli, ["passes", "DynamicToFixedShape"], env={"COLUMNS": "100"})
    assert details.exit_code == 0, details.output
    assert not RST.search(details.output), details.output


def test_plain_text_drops_roles_and_literals() -> None:
    assert plain_text("by name (``dim_param``) or :class:`~olive.passes.Pass` or :func:`olive.run`") == (
        "by name (dim_param) or Pass or olive.run"
    )


def test_the_listing_says_once_what_not_loaded_means() -> None:
    result = CliRunner().invoke(cli, ["passes"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    if "not loaded" not in result.output:
        _skip_without_passes("no installed pass distribution here")
    assert result.output.count(NOT_LOADED_NOTE) == 1


def test_no_note_when_every_pass_is_loaded(isolated_registry: PassRegistry) -> None:
    from olive.passes import Pass

    class Loaded(Pass):
        """A pass registered in-process, hence loaded."""

        @classmethod
        def _default_config(cls, accelerator_spec):
            return {}

        def _run_for_config(self, model, config, output_model_path):
            return model

    isolated_registry.register(Loaded)
    result = CliRunner().invoke(cli, ["passes"], env={"COLUMNS": "200"})
    assert "Loaded" in result.output and NOT_LOADED_NOTE not in result.output


# --------------------------------------------------------------------------------------------------
# OLIVE_LOAD_PLUGINS / OLIVE_DISABLE_PLUGINS naming nothing installed
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discovery, "_WARNED", set())


def test_a_misspelled_allowlist_entry_warns_with_a_did_you_mean(
    fresh_warnings: None, caplog: pytest.LogCaptureFixture
) -> None:
    installed = sorted(discovery.plugin_distributions())
    if "olive-passes-quant" not in installed:
        _skip_without_passes("olive-passes-quant is not installed")
    with caplog.at_level(logging.WARNING, logger="olive.plugins.discovery"):
        PassRegistry(policy=PluginPolicy(allow=frozenset({"olive-passes-qaunt"}))).entries()
        # once per process and name, not once per registry
        PassRegistry(policy=PluginPolicy(allow=frozenset({"olive-passes-qaunt"}))).entries()
    warnings = [r.getMessage() for r in caplog.records if "OLIVE_LOAD_PLUGINS" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "'olive-passes-qaunt', which is not an installed plugin distribution" in warnings[0]
    assert "did you mean 'olive-passes-quant'?" in warnings[0]
    assert "no plugin distribution loads" in warnings[0]


def test_a_blocklist_entry_naming_nothing_warns_and_a_right_one_does_not(fresh_warnings: None) -> None:
    installed = sorted(discovery.plugin_distributions())
    policy = PluginPolicy(block=frozenset({"olive-passes-grph", *installed}))
    messages = warn_unknown_policy_names(policy)
    assert len(messages) == 1
    assert messages[0].startswith("OLIVE_DISABLE_PLUGINS names 'olive-passes-grph'")
    assert warn_unknown_policy_names(PluginPolicy(block=frozenset(installed))) == []
    assert warn_unknown_policy_names(PluginPolicy()) == []


def test_the_warning_reaches_the_command_line() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "OLIVE_LOAD_PLUGINS": "olive-passes-nothing-like-it"}
    env.pop("OLIVE_DISABLE_PLUGINS", None)
    result = subprocess.run(
        [sys.executable, "-m", "olive.cli.main", "passes"], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "OLIVE_LOAD_PLUGINS names 'olive-passes-nothing-like-it'" in result.stderr
    assert result.stderr.count("OLIVE_LOAD_PLUGINS names") == 1


# --------------------------------------------------------------------------------------------------
# The candidates table at 40, 80 and 200 columns
# --------------------------------------------------------------------------------------------------
def _node(model_id, parent, pass_key=None, pass_name=None, config=None, metrics=None, **extra):
    return {
        "model_id": model_id,
        "parent_model_id": parent,
        "pass_key": pass_key,
        "pass_name": pass_name,
        "config": config or {},
        "metrics": {k: {"value": v, "priority": p, "higher_is_better": h} for k, (v, p, h) in (metrics or {}).items()},
        "status": "ok",
        **extra,
    }


def _metrics(ratio, p50, size, cosine):
    return {
        "latency-ratio_p50": (ratio, 1, False),
        "latency-p50": (p50, -1, False),
        "size-bytes": (size, 2, False),
        "agreement-cosine_mean": (cosine, 3, True),
    }


def _footprint() -> dict:
    # Static and dynamic quantization after the same fusion: their searched params alone look identical.
    fused = {"model_type": "bert", "opt_level": 0}
    nodes = [
        _node("input_model", None, metrics=_metrics(1.0, 17.366312, 1014110.0, 1.0)),
        _node("fuse-aaaa", "input_model", "fuse", "OrtTransformersOptimization", fused),
    ]
    for index, (name, per_channel, ratio) in enumerate(
        [("OnnxDynamicQuantization", True, 0.61234), ("OnnxStaticQuantization", True, 1.6634)]
    ):
        nodes.append(
            _node(
                f"quantize-{index}bcdef0123456",
                "fuse-aaaa",
                "quantize",
                name,
                {"per_channel": per_channel, "quant_preprocess": True},
                _metrics(ratio, 17.37 * ratio, 267000.0 + index, 0.99961 - index * 1e-4),
                is_candidate=True,
                meets_goals=True,
                is_pareto=index == 0,
            )
        )
    return {
        "objectives": [
            {"key": "latency-ratio_p50", "priority": 1, "higher_is_better": False, "tolerance": 0.05},
            {"key": "size-bytes", "priority": 2, "higher_is_better": False},
            {"key": "agreement-cosine_mean", "priority": 3, "higher_is_better": True, "tolerance": 1e-4},
        ],
        "best_model_id": "quantize-0bcdef0123456",
        "nodes": nodes,
        "searched_params": {"fuse": ["opt_level"], "quantize": ["per_channel"]},
    }


KEYS = ["latency-ratio_p50", "latency-p50", "size-bytes", "agreement-cosine_mean"]


def _render(width: int) -> str:
    console = Console(width=width, record=True, color_system=None, file=__import__("io").StringIO())
    console.print(candidates_table(report_data_from_footprint(_footprint()), KEYS, width))
    return console.export_text()


@pytest.mark.parametrize("width", [40, 80, 200])
def test_candidates_table_cuts_no_word_at_any_width(width: int) -> None:
    text = _render(width)
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= width, text
    words = {word.strip(":,()") for word in text.split()}
    whole = [
        "quantize-0bcdef0123456",
        "quantize-1bcdef0123456",
        "opt_level=0",
        "per_channel=True",
        "Dynamic",
        "Static",
        "latency",
        "cosine_mean",
        "ratio",
        "ms",
        "MiB",
        format_value(17.366312),
        format_value(1014110.0, 1 << 20),
    ]
    for token in whole:
        assert token in words, (token, text)
    # Four significant digits: no long float printed, and no exponent split over two lines.
    assert "17.366312" not in text and "1.01411e+" not in text and "0.9671" in text


def test_static_and_dynamic_rows_are_told_apart_and_headers_carry_units() -> None:
    text = _render(80)
    dynamic = text.index("quantize: Dynamic")
    static = text.index("quantize: Static")
    assert dynamic != static
    header = text[: text.index("input model")]
    for unit in ("ratio", "ms", "MiB"):
        assert unit in header.split()


def test_the_table_is_a_table_at_80_columns_and_blocks_at_40() -> None:
    assert "─" in _render(80) and "goals" in _render(80)
    narrow = _render(40)
    assert "─" not in narrow
    assert "latency p50: 0.6123 ratio" in narrow


def _multi_target_footprint() -> dict:
    # One quantization run evaluated on the CPU provider and, through nodes of their own, on OpenVINO twice.
    footprint = _footprint()
    footprint["nodes"] = footprint["nodes"][:3]
    footprint["best_model_id"] = "quantize-0bcdef0123456"
    targets = {"cpu-openvino-aaaaaa": "cpu-openvino[INFERENCE_PRECISION_HINT=f32]"}
    targets["cpu-openvino-bbbbbb"] = "cpu-openvino[INFERENCE_PRECISION_HINT=bf16]"
    for base in ("input_model", "quantize-0bcdef0123456"):
        for suffix, label in targets.items():
            footprint["nodes"].append(
                _node(
                    f"{base}@{suffix}",
                    base,
                    metrics=_metrics(0.5, 8.0, 267000.0, 0.9999),
                    is_candidate=True,
                    meets_goals=True,
                    target={"label": label, "execution_provider": "OpenVINOExecutionProvider"},
                    target_of=base,
                )
            )
    return footprint


@pytest.mark.parametrize("width", [40, 80, 200])
def test_a_model_placed_on_another_target_is_labelled_by_its_passes_and_target_only(width: int) -> None:
    data = report_data_from_footprint(_multi_target_footprint())
    console = Console(width=width, record=True, color_system=None, file=__import__("io").StringIO())
    console.print(candidates_table(data, KEYS, width))
    text = console.export_text()
    # The placement is no pass: no "None (None)" step, and the target is named once per row.
    assert "None" not in text, text
    if width < 80:
        return  # a target label longer than the screen folds; the rows themselves are checked at 80 and 200
    assert text.count("on=cpu-openvino[INFERENCE_PRECISION_HINT=bf16]") == 2, text
    row = text[text.index("quantize-0bcdef0123456@cpu-openvino-aaaaaa") :]
    assert "quantize: per_channel=True" in row.split("on=cpu-openvino")[0], text


def test_report_chains_of_a_model_placed_on_another_target_list_only_pass_runs() -> None:
    data = report_data_from_footprint(_multi_target_footprint())
    placed = data.by_id["quantize-0bcdef0123456@cpu-openvino-aaaaaa"]
    assert [step.pass_key for step in data.chain(placed)] == ["fuse", "quantize"]
    assert data.chain(data.by_id["input_model@cpu-openvino-bbbbbb"]) == []
    page = render_report(data)
    assert "<code>None</code>" not in page and "None (None)" not in page and ": None" not in page


def test_distinguishing_names_shorten_only_what_they_share() -> None:
    assert distinguishing_names(["OnnxDynamicQuantization", "OnnxStaticQuantization"]) == {
        "OnnxDynamicQuantization": "Dynamic",
        "OnnxStaticQuantization": "Static",
    }
    # Shortening one to nothing would hide it: whole names instead.
    assert distinguishing_names(["OnnxQuantization", "OnnxDynamicQuantization"]) == {
        "OnnxQuantization": "OnnxQuantization",
        "OnnxDynamicQuantization": "OnnxDynamicQuantization",
    }


@pytest.mark.parametrize("width", [40, 60, 80, 200])
def test_olive_plugins_never_cuts_a_pass_name(width: int) -> None:
    result = CliRunner().invoke(cli, ["plugins"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    names = {n for item in __import__("olive.cli.plugins", fromlist=["x"]).collect_plugins() for n in item["passes"]}
    if not names:
        _skip_without_passes("no plugin distribution installed")
    words = {w.strip(",") for w in result.output.split()}
    longest = max(len(n) for n in names)
    for name in names:
        if len(name) + 4 <= width:
            assert name in words, (name, result.output)
    assert longest <= width


@pytest.mark.parametrize("width", [40, 60, 80, 200])
def test_olive_eps_cuts_no_word_at_any_width(width: int) -> None:
    from olive.execution_providers.registry import list_providers

    result = CliRunner().invoke(cli, ["eps"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    assert max(len(line.rstrip()) for line in result.output.splitlines()) <= width, result.output
    words = {w.strip(",;:()") for w in result.output.split()}
    # Every word the listing holds (names, packages, versions, device names, statuses) comes out whole.
    expected = set()
    for status in list_providers():
        expected.update([status.name, status.kind, status.package or "", status.version or ""])
        expected.update(status.status.split())
        expected.update((status.error or "").split())
        for device in status.devices:
            expected.update([device["ep_name"], device["device"], *str(device.get("name") or "").split()])
    expected = {w.strip(",;:()") for w in expected} - {""}
    for word in expected:
        if len(word) + 4 <= width:
            assert word in words, (word, result.output)
