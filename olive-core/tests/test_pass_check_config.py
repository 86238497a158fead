"""The one way a pass rejects a config: ``_check_config`` raising ``PassParamError``.

Values the workflow fixes that conflict are a config error naming the pass key, the params and the fix,
before any run (exit code 2); a search point that conflicts is pruned and the footprint says why;
``validate_config`` (Microsoft Olive's hook) answers from the same check.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

import olive
from olive.cli.main import cli
from olive.exceptions import PassConfigError, PassParamError
from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model
from olive.search.search_parameter import Categorical, ConditionalDefault
from olive.testing.models import mlp_model, save_model


class Blocks(Pass):
    """Copies the model; ``block`` must be a power of two, and ``wide`` needs a ``block`` of 32 or more."""

    @classmethod
    def _default_config(cls, accelerator_spec: Any) -> dict[str, PassConfigParam]:
        return {
            "block": PassConfigParam(type_=int, default_value=32, search_defaults=Categorical([16, 32])),
            "wide": PassConfigParam(type_=bool, default_value=False),
            "legacy_ok": PassConfigParam(type_=bool, default_value=True),
            **get_external_data_config(),
        }

    @classmethod
    def _upgrade_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        if "blocksize" in config:
            if "block" in config:
                raise PassParamError("params 'blocksize' (the old name) and 'block' are both set", params="block")
            config["block"] = config.pop("blocksize")
        return config

    @classmethod
    def _check_config(cls, config: Any, accelerator_spec: Any) -> None:
        if config.block < 1 or config.block & (config.block - 1):
            raise PassParamError(f"param 'block' is {config.block}; use a power of two", params="block")
        if config.wide and config.block < 32:
            raise PassParamError(
                f"param 'wide' needs a block of 32 or more, got block {config.block}", params=("wide", "block")
            )
        if not config.legacy_ok:
            raise PassConfigError("legacy_ok false is not supported")

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        return model_proto_to_olive_model(model.load_model(), output_model_path, config)


def test_a_conflict_among_fixed_values_names_the_pass_key_and_the_params():
    with pytest.raises(PassParamError) as info:
        Blocks.get_config_params(CPU, {"block": 24}, pass_key="blocks")
    error = info.value
    assert (error.owner, error.reason, error.params) == (
        "pass 'blocks' (Blocks)",
        "param 'block' is 24; use a power of two",
        ("block",),
    )
    assert str(error) == "pass 'blocks' (Blocks): param 'block' is 24; use a power of two"
    # Without search, every value is fixed: the conflict is the workflow's.
    with pytest.raises(PassParamError, match=r"'wide' needs a block of 32 or more, got block 16"):
        Blocks.generate_config(CPU, {"wide": True, "block": 16}, disable_search=True)
    # A rejection that names no param is about the whole config and always fails here.
    with pytest.raises(PassConfigError, match=r"^pass Blocks: legacy_ok false is not supported$"):
        Blocks.get_config_params(CPU, {"legacy_ok": False})


def test_a_conflict_with_a_searched_param_prunes_only_its_points():
    resolved = Blocks.get_config_params(CPU, {"wide": True}, pass_key="blocks")
    assert set(resolved[2]) == {"block"}
    with pytest.raises(PassParamError) as info:
        Blocks.config_for_point(CPU, resolved, {"block": 16}, pass_key="blocks")
    assert info.value.reason == "param 'wide' needs a block of 32 or more, got block 16"
    assert info.value.owner == "pass 'blocks' (Blocks)" and set(info.value.params) == {"wide", "block"}
    config = Blocks.config_for_point(CPU, resolved, {"block": 32}, pass_key="blocks")
    assert config.block == 32 and Blocks.validate_config(config, CPU)


def test_validate_config_answers_from_check_config():
    config_class, fixed, _ = Blocks.get_config_params(CPU, {}, disable_search=True)
    assert Blocks.validate_config(config_class(**fixed), CPU)
    assert not Blocks.validate_config(config_class(**{**fixed, "block": 24}), CPU)
    assert not Blocks.validate_config(config_class(**{**fixed, "legacy_ok": False}), CPU)


def test_upgrade_config_rewrites_old_params_and_its_errors_are_owned():
    assert Blocks.generate_config(CPU, {"blocksize": 64}, disable_search=True).block == 64
    with pytest.raises(PassParamError, match=r"^pass 'b' \(Blocks\): params 'blocksize' \(the old name\)"):
        Blocks.generate_config(CPU, {"blocksize": 64, "block": 32}, disable_search=True, pass_key="b")


class Levels(Pass):
    """``level`` follows the searched ``mode`` by default; the check reads both."""

    @classmethod
    def _default_config(cls, accelerator_spec: Any) -> dict[str, PassConfigParam]:
        return {
            "mode": PassConfigParam(type_=str, default_value="fast", search_defaults=Categorical(["fast", "exact"])),
            "level": PassConfigParam(
                type_=int, default_value=ConditionalDefault(parents=("mode",), support={("fast",): 1, ("exact",): 3})
            ),
        }

    @classmethod
    def _check_config(cls, config: Any, accelerator_spec: Any) -> None:
        if config.level > 2 and config.mode == "fast":
            raise PassParamError(f"param 'level' is {config.level}, too high for mode 'fast'", params="level")

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        return model


def test_the_resolve_time_check_sees_searched_params_and_what_follows_them_at_their_defaults():
    # level follows mode, so both are searched; the resolve-time check sees mode at its default and level with it.
    config_class, fixed, search = Levels.get_config_params(CPU, {})
    assert set(search) == {"mode", "level"}
    assert Levels.config_for_point(CPU, (config_class, fixed, search), {"mode": "exact"}).level == 3
    with pytest.raises(PassParamError, match=r"^pass Levels: param 'level' is 3, too high for mode 'fast'$"):
        Levels.get_config_params(CPU, {"level": 3, "mode": "fast"})


def _workflow(tmp_path, params: dict, search: bool) -> dict:
    model = save_model(mlp_model(), tmp_path / "input")
    workflow = {
        "input_model": {"type": "ONNXModel", "model_path": str(model.model_path)},
        "passes": {"blocks": {"type": "Blocks", **params}},
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "out"),
    }
    if search:
        workflow["search_strategy"] = {"execution_order": "joint"}
    return workflow


def test_in_a_workflow_fixed_conflicts_exit_2_and_searched_ones_are_pruned_with_their_reason(
    tmp_path, isolated_registry
):
    isolated_registry.register(Blocks, name="Blocks")
    path = tmp_path / "wf.json"
    path.write_text(json.dumps(_workflow(tmp_path, {"block": 24}, search=True)))
    result = CliRunner().invoke(cli, ["run", "--config", str(path)], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr.strip() == "Error: passes.blocks (Blocks): param 'block' is 24; use a power of two"
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.onnx"))

    output = olive.run(_workflow(tmp_path, {"wide": True}, search=True))
    nodes = {n.config["block"]: n for n in output.footprint if n.pass_key == "blocks"}
    assert nodes[32].status == "ok"
    assert nodes[16].status == "pruned"
    assert "param 'wide' needs a block of 32 or more, got block 16" in nodes[16].error


def test_when_every_point_is_rejected_the_run_says_which_param_and_why(tmp_path, isolated_registry):
    isolated_registry.register(Blocks, name="Blocks")
    workflow = _workflow(tmp_path, {"wide": True, "block": [16, 24]}, search=True)
    path = tmp_path / "wf.json"
    path.write_text(json.dumps(workflow))
    result = CliRunner().invoke(cli, ["run", str(path)], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("Error: no model was produced: all 2 search point(s) were rejected"), message
    assert "pass 'blocks' (Blocks): param 'wide' needs a block of 32 or more, got block 16" in message
    assert "pass 'blocks' (Blocks): param 'block' is 24; use a power of two" in message
