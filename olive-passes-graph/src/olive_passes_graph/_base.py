"""A Pass base that checks a resolved config as a whole, before anything runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from olive.passes import Pass

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.passes.pass_config import BasePassConfig
    from olive.search.search_parameter import SearchParameter


class CheckedPass(Pass):
    """Adds ``_check_config``: raise :class:`~olive.exceptions.PassConfigError` for a config no run can use.

    ``validate_config`` can only prune a search point; a combination the user wrote by hand (two
    conflicting forms of one setting, a model type that does not exist) deserves an error that says so,
    at config time: when the engine resolves the workflow (fixed values, searched params at their
    defaults) and again for every generated config (each search point in full).
    """

    @classmethod
    def _check_config(cls, config: BasePassConfig, owner: str) -> None:
        """Raise ``PassConfigError`` (message starting with ``owner``) when ``config`` cannot work."""

    @staticmethod
    def _owner(pass_name: str, pass_key: str | None) -> str:
        return f"pass '{pass_key}' ({pass_name})" if pass_key else f"pass {pass_name}"

    @classmethod
    def get_config_params(
        cls,
        accelerator_spec: AcceleratorSpec,
        config: Mapping[str, Any] | None = None,
        disable_search: bool = False,
        pass_key: str | None = None,
    ) -> tuple[type[BasePassConfig], dict[str, Any], dict[str, SearchParameter]]:
        config_class, fixed, search = super().get_config_params(accelerator_spec, config, disable_search, pass_key)
        declared = cls.default_config(accelerator_spec)
        values = {name: param.default_value for name, param in declared.items()}
        values.update(fixed)
        cls._check_config(config_class(**values), cls._owner(cls.pass_name(), pass_key))
        return config_class, fixed, search

    @classmethod
    def generate_config(
        cls,
        accelerator_spec: AcceleratorSpec,
        config: Mapping[str, Any] | None = None,
        point: Mapping[str, Any] | None = None,
        disable_search: bool = False,
        pass_key: str | None = None,
    ) -> BasePassConfig:
        resolved = super().generate_config(accelerator_spec, config, point, disable_search, pass_key)
        cls._check_config(resolved, cls._owner(cls.pass_name(), pass_key))
        return resolved
