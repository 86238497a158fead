"""Small plugin distributions Olive's own tests (and benchmarks) install, each a realistic case.

Each function returns the path of a wheel built once per process (see
:func:`olive.testing.distributions.distribution_wheel`).
"""

from __future__ import annotations

from pathlib import Path

from olive.testing.distributions import distribution_wheels, write_distribution
from olive.testing.venv import build_wheels

__all__ = [
    "bad_config_wheel",
    "bad_hooks_wheel",
    "broken_import_wheel",
    "generated_pass_wheels",
    "good_pass_wheel",
    "hooks_wheel",
    "not_a_pass_wheel",
    "other_pass_wheel",
]

GOOD_PASS_SOURCE = '''
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model
from olive.search.search_parameter import Categorical


class Annotate(Pass):
    """Write a note into the model's doc string.

    Used by Olive's tests as the simplest real pass.
    """

    _version = "1"

    @classmethod
    def _default_config(cls, accelerator_spec):
        return {
            "note": PassConfigParam(
                type_=str,
                default_value="annotated",
                search_defaults=Categorical(["a", "b"]),
                description="Text to store as the graph doc string.",
            ),
            **get_external_data_config(),
        }

    def _run_for_config(self, model, config, output_model_path):
        proto = model.load_model()
        proto.doc_string = config.note
        return model_proto_to_olive_model(proto, output_model_path, config)


class Shared(Annotate):
    """Annotate, offered under a name another distribution offers too."""
'''


def _good_pass_spec() -> dict:
    return _spec(
        "olive-test-good",
        "1.0.0",
        {"olive_test_good/__init__.py": "", "olive_test_good/passes.py": GOOD_PASS_SOURCE},
        {
            "olive.passes": {
                "Annotate": "olive_test_good.passes:Annotate",
                "Shared": "olive_test_good.passes:Shared",
            }
        },
    )


def _other_pass_spec() -> dict:
    return _spec(
        "olive-test-other",
        "2.1",
        {
            "olive_test_other.py": '''
            from olive.passes import Pass


            class Shared(Pass):
                """Another distribution's pass of the same name."""

                @classmethod
                def _default_config(cls, accelerator_spec):
                    return {}

                def _run_for_config(self, model, config, output_model_path):
                    return model
            '''
        },
        {"olive.passes": {"Shared": "olive_test_other:Shared"}},
    )


def _broken_import_spec() -> dict:
    return _spec(
        "olive-test-broken-import",
        "0.1",
        {"olive_test_broken_import.py": "import olive_missing_dependency_xyz  # noqa: F401\n"},
        {"olive.passes": {"BrokenImport": "olive_test_broken_import:BrokenImport"}},
    )


def _not_a_pass_spec() -> dict:
    return _spec(
        "olive-test-not-a-pass",
        "0.2",
        {"olive_test_not_a_pass.py": "class NotAPass:\n    pass\n"},
        {"olive.passes": {"NotAPass": "olive_test_not_a_pass:NotAPass"}},
    )


def _bad_config_spec() -> dict:
    return _spec(
        "olive-test-bad-config",
        "0.3",
        {
            "olive_test_bad_config.py": """
            from olive.passes import Pass


            class BadConfig(Pass):
                @classmethod
                def _default_config(cls, accelerator_spec):
                    raise RuntimeError("config table missing")

                def _run_for_config(self, model, config, output_model_path):
                    return model
            """
        },
        {"olive.passes": {"BadConfig": "olive_test_bad_config:BadConfig"}},
    )


HOOKS_SOURCE = '''
"""Records every observer hook call as a JSON line in $OLIVE_TEST_HOOKS_LOG."""

import json
import os

from olive.plugins import hookimpl


def _log(event, **data):
    path = os.environ.get("OLIVE_TEST_HOOKS_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"event": event, **data}) + "\\n")


@hookimpl
def olive_register_commands(cli):
    import click

    @click.command("hello")
    @click.argument("who", default="world")
    def hello(who):
        """Say hello (from olive-test-hooks)."""
        click.echo(f"hello {who} from olive-test-hooks")

    cli.add_command(hello)


def _answer(model, metric, data):
    return {"value": 42.0}


@hookimpl
def olive_register_metrics(register):
    register("answer", _answer)


def _first_sampler(search_space, options, seed):
    return ("first-sampler", search_space, options, seed)


@hookimpl
def olive_register_samplers(register):
    register("first", _first_sampler)


@hookimpl
def olive_workflow_start(workflow):
    _log("workflow_start")


@hookimpl
def olive_workflow_end(workflow, output, error):
    _log("workflow_end", ok=error is None)


@hookimpl
def olive_pass_start(pass_key, pass_name):
    _log("pass_start", pass_key=pass_key, pass_name=pass_name)


@hookimpl
def olive_pass_end(pass_key, pass_name, cached, error, duration_s):
    _log("pass_end", pass_key=pass_key, pass_name=pass_name, cached=cached, failed=error is not None)


@hookimpl
def olive_evaluation_end(model_id, metrics):
    _log("evaluation_end", model_id=model_id)
'''


def _hooks_spec() -> dict:
    return _spec(
        "olive-test-hooks",
        "0.4",
        {"olive_test_hooks.py": HOOKS_SOURCE},
        {"olive.plugins": {"olive-test-hooks": "olive_test_hooks"}},
    )


def _bad_hooks_spec() -> dict:
    return _spec(
        "olive-test-bad-hooks",
        "0.5",
        {
            "olive_test_bad_hooks/__init__.py": "",
            "olive_test_bad_hooks/typo.py": """
            from olive.plugins import hookimpl


            @hookimpl
            def olive_pass_stat(pass_key):
                pass
            """,
            "olive_test_bad_hooks/badargs.py": """
            from olive.plugins import hookimpl


            @hookimpl
            def olive_pass_start(pass_key, bogus_argument):
                pass
            """,
        },
        {
            "olive.plugins": {
                "typo": "olive_test_bad_hooks.typo",
                "badargs": "olive_test_bad_hooks.badargs",
            }
        },
    )


# --------------------------------------------------------------------------------------------------
def _spec(name: str, version: str, modules: dict[str, str], entry_points: dict[str, dict[str, str]]) -> dict:
    return {"name": name, "version": version, "modules": modules, "entry_points": entry_points}


def _wheel(kind: str) -> Path:
    # The first call builds every sample with one pip run; later calls are lookups.
    specs = {n: f() for n, f in _SPECS.items()}
    return dict(zip(specs, distribution_wheels(list(specs.values())), strict=True))[kind]


_SPECS = {
    "good_pass": _good_pass_spec,
    "other_pass": _other_pass_spec,
    "broken_import": _broken_import_spec,
    "not_a_pass": _not_a_pass_spec,
    "bad_config": _bad_config_spec,
    "hooks": _hooks_spec,
    "bad_hooks": _bad_hooks_spec,
}


def good_pass_wheel() -> Path:
    """``olive-test-good==1.0.0``: passes ``Annotate`` and ``Shared`` (module ``olive_test_good``)."""
    return _wheel("good_pass")


def other_pass_wheel() -> Path:
    """``olive-test-other==2.1``: pass ``Shared``, clashing with olive-test-good's."""
    return _wheel("other_pass")


def broken_import_wheel() -> Path:
    """``olive-test-broken-import==0.1``: pass ``BrokenImport`` whose module fails to import."""
    return _wheel("broken_import")


def not_a_pass_wheel() -> Path:
    """``olive-test-not-a-pass==0.2``: pass ``NotAPass`` pointing at a class that is not a Pass."""
    return _wheel("not_a_pass")


def bad_config_wheel() -> Path:
    """``olive-test-bad-config==0.3``: pass ``BadConfig`` whose ``_default_config`` raises."""
    return _wheel("bad_config")


def hooks_wheel() -> Path:
    """``olive-test-hooks==0.4``: implements every hook (plugin ``olive_test_hooks``)."""
    return _wheel("hooks")


def bad_hooks_wheel() -> Path:
    """``olive-test-bad-hooks==0.5``: one plugin with a misspelt hook, one with an unknown argument."""
    return _wheel("bad_hooks")


def generated_pass_wheels(count: int, work_dir: str | Path) -> list[Path]:
    """Wheels of ``olive-gen-pass-<i>==1.0`` for i < ``count``, each offering one trivial pass
    ``GenPass<i>`` (for startup benchmarks); built with one pip run."""
    work_dir = Path(work_dir)
    projects = []
    for index in range(count):
        module = f"olive_gen_pass_{index}"
        source = GENERATED_PASS_SOURCE.replace("INDEX", str(index))
        projects.append(
            write_distribution(
                work_dir / "src" / module,
                f"olive-gen-pass-{index}",
                "1.0",
                {f"{module}.py": source},
                {"olive.passes": {f"GenPass{index}": f"{module}:GenPass{index}"}},
            )
        )
    return build_wheels(projects, work_dir / "wheels")


GENERATED_PASS_SOURCE = '''
from olive.passes import Pass


class GenPassINDEX(Pass):
    """Generated pass INDEX."""

    @classmethod
    def _default_config(cls, accelerator_spec):
        return {}

    def _run_for_config(self, model, config, output_model_path):
        return model
'''
