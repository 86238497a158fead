"""The registry every entry-point group shares (passes, model types, data containers, EP adapters): policy,
exempt and fallback distributions, strict mode, case folding. Entries load through real entry points
(``importlib_metadata.EntryPoint``) naming classes of this module, or a module that does not exist.

Pass-specific behaviour (qualified names, identities, the default-config check) is in test_registry.py.
"""

from __future__ import annotations

import re
import sys

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
    assert f'entry point Broken = "olive_no_such_module:Gear" in group {GROUP}' in caught.value.reason
    assert caught.value.reason.endswith(
        "Fix or reinstall broken-gears, or disable it with OLIVE_DISABLE_PLUGINS=broken-gears"
    )
    assert isinstance(caught.value.__cause__, ModuleNotFoundError)
    assert {e.name: e.status for e in registry.entries()} == {"Broken": "failed", "Gear": "ok"}


def test_strict_mode_makes_any_failure_in_the_group_fatal():
    registry = _registry(*_good_and_broken(), policy=PluginPolicy(strict=True))
    for lookup in (registry.get, registry.find_class):
        with pytest.raises(
            PluginLoadError, match=r"(?s)1 widget plugin\(s\) failed to load and OLIVE_STRICT_PLUGINS.*"
        ):
            lookup("Gear")
    # The whole group was loaded by the first lookup, once: the good entry too.
    assert {e.name: e.status for e in registry.entries()} == {"Broken": "failed", "Gear": "ok"}
    assert [e.name for e in registry.failures()] == ["Broken"]


def test_a_name_loads_only_its_own_entry_unless_strict():
    def entries() -> list[TypeEntry]:
        return [_entry("Gear", "gears", f"{__name__}:Gear"), _entry("Other", "gears", f"{__name__}:OtherGear")]

    lazy = _registry(*entries())
    assert lazy.get("Gear") is Gear
    assert {e.name: e.status for e in lazy.entries()} == {"Gear": "ok", "Other": "not loaded"}

    strict = _registry(*entries(), policy=PluginPolicy(strict=True))
    assert strict.get("Gear") is Gear
    assert {e.name: e.status for e in strict.entries()} == {"Gear": "ok", "Other": "ok"}


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


def test_type_and_pass_names_fold_case_as_microsoft_olives_registries_do():
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
    assert passes.find("gear").name == "Gear"
    assert passes.get_entry("gears:GEAR").name == "Gear"
    with pytest.raises(UnknownPassError, match=r"did you mean 'Gear'"):
        passes.get_entry("Geer")


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


def test_an_object_that_is_not_a_class_of_the_base_fails_its_name():
    registry = _registry(
        _entry("Function", "odd-gears", f"{__name__}:_entry"),
        _entry("Dict", "odd-gears", "builtins:dict"),
        _entry("Gear", "gears", f"{__name__}:Gear"),
    )
    with pytest.raises(PluginLoadError, match=rf"odd-gears==1\.0 .*{__name__}:_entry is a function, not a subclass"):
        registry.get("Function")
    with pytest.raises(PluginLoadError, match=r"builtins:dict is a class builtins\.dict, not a subclass") as caught:
        registry.get("Dict")
    assert isinstance(caught.value.__cause__, TypeError)
    assert registry.get("Gear") is Gear
    assert sorted(e.name for e in registry.failures()) == ["Dict", "Function"]


def test_a_blocked_distribution_is_never_imported_and_leaves_the_name_to_the_other():
    def entries() -> list[TypeEntry]:
        return [
            _entry("Gear", "gears", f"{__name__}:Gear"),
            _entry("Gear", "Broken.Gears", "olive_no_such_module:Gear"),
        ]

    with pytest.raises(
        OliveError,
        match=r"widget 'Gear' is offered by Broken\.Gears==1\.0 and gears==1\.0; uninstall or disable one of them "
        r"\(OLIVE_DISABLE_PLUGINS\)",
    ):
        _registry(*entries()).get("Gear")

    registry = _registry(*entries(), policy=PluginPolicy(block=frozenset({"broken-gears"})))
    assert registry.get("Gear") is Gear
    blocked = next(e for e in registry.entries() if e.distribution == "Broken.Gears")
    assert (blocked.status, blocked.exception) == ("blocked", None)
    assert "disabled by OLIVE_DISABLE_PLUGINS; remove 'Broken.Gears' from it" in blocked.error
    assert registry.load_all() == []


def _write_distribution(root, name: str, version: str, entry_points: dict[str, str]) -> None:
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{lines}")


def test_installed_entries_are_listed_from_metadata_and_imported_on_first_use(tmp_path, monkeypatch):
    module = "olive_test_widget_plugin"
    (tmp_path / f"{module}.py").write_text('class Sprocket:\n    """A widget from an installed distribution."""\n')
    _write_distribution(
        tmp_path, "olive-test-widgets", "2.0", {"Sprocket": f"{module}:Sprocket", "Jammed": f"{module}:Jammed"}
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)

    registry = NamedTypeRegistry(GROUP, "widget", policy=PluginPolicy())
    listed = {e.name: (e.requirement, e.value, e.status, e.installed) for e in registry.entries()}
    assert listed == {
        "Jammed": ("olive-test-widgets==2.0", f"{module}:Jammed", "not loaded", True),
        "Sprocket": ("olive-test-widgets==2.0", f"{module}:Sprocket", "not loaded", True),
    }
    assert registry.distributions() == [("olive-test-widgets", "2.0")]
    assert module not in sys.modules

    try:
        assert registry.get("sprocket").__module__ == module
        assert module in sys.modules
        with pytest.raises(PluginLoadError, match=r"olive-test-widgets==2\.0 .*Jammed.*OLIVE_DISABLE_PLUGINS="):
            registry.get("Jammed")
        assert {e.name: e.status for e in registry.entries()} == {"Jammed": "failed", "Sprocket": "ok"}
    finally:
        sys.modules.pop(module, None)
