"""The registry every entry-point group shares (passes, model types, data containers, EP adapters): policy,
exempt and fallback distributions, strict mode, case folding. Entries load through real entry points
(``importlib_metadata.EntryPoint``) naming classes of this module, or a module that does not exist.

Pass-specific behaviour (qualified names, identities, the default-config check) is in test_registry.py.
"""

from __future__ import annotations

import re

import importlib_metadata
import pytest

from olive.exceptions import OliveError, PluginLoadError, UnknownPassError
from olive.plugins.discovery import PluginPolicy
from olive.plugins.named_types import NamedTypeRegistry, TypeEntry
from olive.plugins.registry import PassEntry, PassRegistry

GROUP = "olive.test_widgets"


class Widget:
    """Base of the test group's classes."""


class Gear(Widget):
    """A widget."""


class OtherGear(Widget):
    """Another widget under the same name."""


def _entry(name: str, distribution: str, target: str, version: str = "1.0") -> TypeEntry:
    entry_point = importlib_metadata.EntryPoint(name, target, GROUP)
    return TypeEntry(name, distribution, version, target, entry_point=entry_point)


def _registry(*entries: TypeEntry, policy: PluginPolicy | None = None, **options) -> NamedTypeRegistry:
    registry = NamedTypeRegistry(
        GROUP, "widget", base=Widget, entry_points=False, policy=policy or PluginPolicy(), **options
    )
    for entry in entries:
        registry.add_entry(entry)
    return registry


def _good_and_broken() -> tuple[TypeEntry, TypeEntry]:
    return _entry("Gear", "gears", f"{__name__}:Gear"), _entry("Broken", "broken-gears", "olive_no_such_module:Gear")


def test_a_broken_entry_fails_its_name_only():
    registry = _registry(*_good_and_broken())
    assert registry.get("Gear") is Gear
    with pytest.raises(PluginLoadError) as caught:
        registry.get("Broken")
    assert "broken-gears==1.0" in caught.value.reason and "olive_no_such_module" in caught.value.reason
    assert f"in group {GROUP}" in caught.value.reason
    assert isinstance(caught.value.__cause__, ModuleNotFoundError)
    assert {e.name: e.status for e in registry.entries()} == {"Broken": "failed", "Gear": "ok"}


def test_strict_mode_makes_any_failure_in_the_group_fatal():
    registry = _registry(*_good_and_broken(), policy=PluginPolicy(strict=True))
    for lookup in (registry.get, registry.find_class):
        with pytest.raises(
            PluginLoadError, match=r"(?s)1 widget plugin\(s\) failed to load and OLIVE_STRICT_PLUGINS.*"
        ):
            lookup("Gear")
    assert [e.name for e in registry.failures()] == ["Broken"]


def test_the_block_lists_spare_exempt_distributions():
    core = _entry("Gear", "olive-core", f"{__name__}:Gear")
    plugin = _entry("Other", "Other_Gears", f"{__name__}:OtherGear")
    registry = _registry(core, plugin, policy=PluginPolicy(allow=frozenset()), exempt=("olive-core",))
    assert {e.name: e.status for e in registry.entries()} == {"Gear": "not loaded", "Other": "blocked"}
    assert registry.get("Gear") is Gear
    assert registry.names() == ["Gear"]
    with pytest.raises(PluginLoadError, match=r"widget 'Other' from Other_Gears==1\.0 .*not in OLIVE_LOAD_PLUGINS"):
        registry.get("Other")

    not_exempt = _registry(_entry("Gear", "olive-core", f"{__name__}:Gear"), policy=PluginPolicy(allow=frozenset()))
    assert [e.status for e in not_exempt.entries()] == ["blocked"]


def test_a_fallback_gives_way_to_another_distributions_entry_of_the_name():
    def entries() -> list[TypeEntry]:
        return [_entry("Gear", "olive-core", f"{__name__}:Gear"), _entry("Gear", "vendor", f"{__name__}:OtherGear")]

    assert _registry(*entries(), fallbacks=("olive-core",)).get("Gear") is OtherGear
    with pytest.raises(OliveError, match=r"widget 'Gear' is offered by olive-core==1\.0 and vendor==1\.0"):
        _registry(*entries()).get("Gear")


def test_type_names_fold_case_and_pass_names_do_not():
    types = _registry(_entry("Gear", "gears", f"{__name__}:Gear"))
    assert types.get("gear") is Gear
    assert types.find("GEAR") is not None

    exact = _registry(_entry("Gear", "gears", f"{__name__}:Gear"), fold_case=False)
    assert exact.find_class("gear") is None
    with pytest.raises(OliveError, match=r"unknown widget 'gear' \(did you mean 'Gear'\?\); available: Gear"):
        exact.get("gear")

    passes = PassRegistry(entry_points=False, policy=PluginPolicy())
    passes.add_entry(
        PassEntry(
            "Gear",
            "gears",
            "1.0",
            "pkg:Gear",
            entry_point=importlib_metadata.EntryPoint("Gear", "pkg:Gear", "olive.passes"),
        )
    )
    assert passes.find("gear") is None
    with pytest.raises(UnknownPassError, match=r"did you mean 'Gear'"):
        passes.get_entry("gear")


def test_register_unless_listed_keeps_what_metadata_lists():
    listed = _registry(_entry("Gear", "Olive_Core", f"{__name__}:OtherGear"))
    listed.register_unless_listed("Gear", Gear, "olive-core")
    assert [(e.distribution, e.installed) for e in listed.entries()] == [("Olive_Core", True)]
    assert listed.get("Gear") is OtherGear

    missing = _registry()
    missing.register_unless_listed("Gear", Gear, "olive-core")
    assert [(e.distribution, e.installed, e.status) for e in missing.entries()] == [("olive-core", False, "ok")]
    assert missing.get("Gear") is Gear


def test_registering_a_class_outside_the_base_fails_and_names_it():
    registry = _registry()
    with pytest.raises(
        PluginLoadError, match=rf"is a class builtins\.dict, not a subclass of {re.escape(__name__)}\.Widget"
    ):
        registry.register("Dict", dict, distribution="dicts")
    assert [e.status for e in registry.entries()] == ["failed"]
    assert registry.find_class("NoSuchWidget") is None
