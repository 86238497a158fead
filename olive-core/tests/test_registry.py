"""The pass registry in-process: registration, name resolution, load isolation, policy, strict mode.

Installed distributions are covered by test_registry_install.py; these tests register real Pass classes
(and real broken objects) directly.
"""

from __future__ import annotations

import pytest

from olive.exceptions import AmbiguousPassError, PluginLoadError, UnknownPassError
from olive.passes import Pass, PassConfigParam
from olive.plugins.discovery import PluginPolicy, normalize_name
from olive.plugins.identity import PassIdentity, acting_as
from olive.plugins.registry import PassEntry, PassRegistry, get_registry, set_registry, use_registry


class Identity(Pass):
    """Return the model unchanged.

    Second line is not the summary.
    """

    @classmethod
    def _default_config(cls, accelerator_spec):
        return {"level": PassConfigParam(type_=int, default_value=1, description="How much.")}

    def _run_for_config(self, model, config, output_model_path):
        return model


class RaisingConfig(Pass):
    @classmethod
    def _default_config(cls, accelerator_spec):
        raise RuntimeError("cannot build config")

    def _run_for_config(self, model, config, output_model_path):
        return model


class _EntryPoint:
    """The part of importlib_metadata.EntryPoint the registry uses: ``load()``."""

    def __init__(self, loader):
        self.load = loader


def _entry(name, dist, version, loader, value="pkg.mod:Obj"):
    return PassEntry(name, dist, version, value, entry_point=_EntryPoint(loader))


def _registry_with(*entries, policy=None):
    registry = PassRegistry(entry_points=False, policy=policy or PluginPolicy())
    for entry in entries:
        registry.add_entry(entry)
    return registry


def test_register_sets_identity_and_summary(isolated_registry):
    entry = isolated_registry.register(Identity, name="Ident", distribution="my-dist", version="1.2")
    assert isolated_registry.get_pass_class("Ident") is Identity
    assert Identity.pass_name() == "Ident"
    assert (Identity.distribution(), Identity.distribution_version()) == ("my-dist", "1.2")
    assert entry.status == "ok"
    assert entry.summary == "Return the model unchanged."
    assert [e.name for e in isolated_registry.entries()] == ["Ident"]


def test_two_registries_loading_one_class_keep_their_own_identity():
    first = PassRegistry(entry_points=False, policy=PluginPolicy())
    second = PassRegistry(entry_points=False, policy=PluginPolicy())
    first.register(Identity, name="Ident", distribution="dist-a", version="1.0")
    second.register(Identity, name="Same", distribution="dist-b", version="2.0")
    assert first.identity_of(Identity) == PassIdentity("Ident", "dist-a", "1.0")
    assert second.identity_of(Identity) == PassIdentity("Same", "dist-b", "2.0")
    # The class answers with the identity of the registry in use, or of the run that acts under one.
    with use_registry(first):
        assert (Identity.pass_name(), Identity.distribution()) == ("Ident", "dist-a")
        with acting_as(Identity, PassIdentity("Same", "dist-b", "2.0")):
            assert (Identity.pass_name(), Identity.distribution_version()) == ("Same", "2.0")
        assert Identity.pass_name() == "Ident"
    with use_registry(second):
        assert (Identity.pass_name(), Identity.distribution(), Identity.distribution_version()) == (
            "Same",
            "dist-b",
            "2.0",
        )
    assert not any(name.startswith("_olive") for name in vars(Identity))


def test_a_class_no_registry_offers_answers_with_its_own_name(isolated_registry):
    assert isolated_registry.identity_of(Identity) is None
    assert (Identity.pass_name(), Identity.distribution(), Identity.distribution_version()) == ("Identity", None, None)


def test_an_entry_knows_its_class_before_loading_it_when_the_module_is_imported():
    # The entry's target module (this test module) is imported, so the entry offers Identity without loading.
    entry = _entry("Ident", "dist-a", "1.0", lambda: Identity, value=f"{__name__}:Identity")
    registry = _registry_with(entry)
    assert registry.identity_of(Identity) == PassIdentity("Ident", "dist-a", "1.0")
    assert entry.status == "not loaded"
    assert registry.identity_of(RaisingConfig) is None


def test_isolated_registry_is_process_wide(isolated_registry):
    assert get_registry() is isolated_registry


def test_register_rejects_non_pass(isolated_registry):
    with pytest.raises(PluginLoadError, match=r"not a subclass of olive\.passes\.Pass"):
        isolated_registry.register(dict)


def test_register_reports_failing_default_config(isolated_registry):
    with pytest.raises(PluginLoadError, match="cannot build config") as info:
        isolated_registry.register(RaisingConfig)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_unknown_name_suggests_close_match(isolated_registry):
    isolated_registry.register(Identity, name="QuantizeDynamic")
    with pytest.raises(UnknownPassError, match=r"did you mean 'QuantizeDynamic'\?"):
        isolated_registry.get_pass_class("QuantiseDynamic")
    # Another case is the same name (Microsoft Olive's registry ignores case), not a suggestion.
    assert isolated_registry.get_pass_class("quantizedynamic") is Identity


def test_ambiguous_name_names_both_and_qualified_name_picks_one(isolated_registry):
    isolated_registry.register(Identity, name="Dup", distribution="dist-a", version="1.0")

    class Other(Identity):
        """Another."""

    isolated_registry.register(Other, name="Dup", distribution="Dist_B", version="2.0")
    with pytest.raises(AmbiguousPassError) as info:
        isolated_registry.get_pass_class("Dup")
    message = str(info.value)
    assert "dist-a==1.0" in message and "Dist_B==2.0" in message
    assert "'dist-a:Dup'" in message
    assert isolated_registry.get_pass_class("dist-a:Dup") is Identity
    # distribution names compare in normalized form
    assert isolated_registry.get_pass_class("dist-b:Dup") is Other


def test_qualified_unknown_names(isolated_registry):
    isolated_registry.register(Identity, name="Ident", distribution="my-dist")
    with pytest.raises(UnknownPassError, match=r"offers no pass 'Idnt'.*did you mean 'Ident'"):
        isolated_registry.get_pass_class("my-dist:Idnt")
    with pytest.raises(UnknownPassError, match=r"no installed distribution 'my-dsit'.*did you mean 'my-dist'"):
        isolated_registry.get_pass_class("my-dsit:Ident")


def test_reregistering_same_distribution_replaces(isolated_registry):
    isolated_registry.register(Identity, name="Ident", distribution="d")

    class Newer(Identity):
        """Newer."""

    isolated_registry.register(Newer, name="Ident", distribution="d")
    assert isolated_registry.get_pass_class("Ident") is Newer
    assert len(isolated_registry.entries()) == 1


def test_import_failure_is_isolated_and_reported():
    def broken():
        raise ImportError("No module named 'needed_thing'")

    registry = _registry_with(
        _entry("Broken", "broken-dist", "0.1", broken, value="broken_mod:Broken"),
        _entry("Good", "good-dist", "1.0", lambda: Identity, value="good_mod:Identity"),
    )
    assert registry.get_pass_class("Good") is Identity
    with pytest.raises(PluginLoadError) as info:
        registry.get_pass_class("Broken")
    message = str(info.value)
    assert "broken-dist==0.1" in message
    assert 'Broken = "broken_mod:Broken"' in message and "olive.passes" in message
    assert "needed_thing" in message
    assert isinstance(info.value.__cause__, ImportError)
    statuses = {e.name: (e.status, e.error) for e in registry.entries()}
    assert statuses["Good"] == ("ok", None)
    assert statuses["Broken"][0] == "failed" and "needed_thing" in statuses["Broken"][1]
    # asking again gives the same error without importing again
    with pytest.raises(PluginLoadError, match="needed_thing"):
        registry.get_pass_class("Broken")


def test_object_that_is_not_a_pass_is_reported():
    registry = _registry_with(_entry("Fn", "fn-dist", "3", lambda: len, value="mod:len"))
    with pytest.raises(PluginLoadError, match=r"fn-dist==3.*mod:len is a builtin_function_or_method, not a subclass"):
        registry.get_pass_class("Fn")


def test_system_exit_during_import_is_contained():
    def exits():
        raise SystemExit(3)

    registry = _registry_with(_entry("Exits", "exit-dist", "1", exits))
    with pytest.raises(PluginLoadError, match="SystemExit"):
        registry.get_pass_class("Exits")


def test_blocklist_and_allowlist():
    def entries():
        return [
            _entry("A", "dist-a", "1", lambda: Identity),
            _entry("B", "Dist_B", "1", lambda: RaisingConfig),
        ]

    blocked = _registry_with(*entries(), policy=PluginPolicy(block=frozenset({"dist-b"})))
    assert {e.name: e.status for e in blocked.entries()} == {"A": "not loaded", "B": "blocked"}
    with pytest.raises(PluginLoadError, match="OLIVE_DISABLE_PLUGINS"):
        blocked.get_pass_class("B")
    assert blocked.get_pass_class("A") is Identity

    allowed = _registry_with(*entries(), policy=PluginPolicy(allow=frozenset({"dist-a"})))
    assert {e.name: e.status for e in allowed.entries()} == {"A": "not loaded", "B": "blocked"}
    with pytest.raises(PluginLoadError, match="not in OLIVE_LOAD_PLUGINS"):
        allowed.get_pass_class("B")

    none = _registry_with(*entries(), policy=PluginPolicy(allow=frozenset()))
    assert {e.status for e in none.entries()} == {"blocked"}


def test_blocked_distribution_does_not_make_a_name_ambiguous():
    registry = _registry_with(
        _entry("Dup", "dist-a", "1", lambda: Identity),
        _entry("Dup", "dist-b", "1", lambda: RaisingConfig),
        policy=PluginPolicy(block=frozenset({"dist-b"})),
    )
    assert registry.get_pass_class("Dup") is Identity


def test_policy_from_environment(monkeypatch):
    monkeypatch.setenv("OLIVE_LOAD_PLUGINS", "Olive_Passes.Quant, other")
    monkeypatch.setenv("OLIVE_DISABLE_PLUGINS", "")
    monkeypatch.setenv("OLIVE_STRICT_PLUGINS", "1")
    policy = PluginPolicy.from_env()
    assert policy.allow == {"olive-passes-quant", "other"}
    assert policy.block == frozenset()
    assert policy.strict
    monkeypatch.setenv("OLIVE_LOAD_PLUGINS", "")
    assert PluginPolicy.from_env().allow == frozenset()
    monkeypatch.delenv("OLIVE_LOAD_PLUGINS")
    monkeypatch.setenv("OLIVE_STRICT_PLUGINS", "0")
    assert PluginPolicy.from_env().allow is None
    assert not PluginPolicy.from_env().strict


def test_strict_mode_fails_on_any_broken_plugin():
    def broken():
        raise ImportError("gone")

    registry = _registry_with(
        _entry("Good", "good", "1", lambda: Identity),
        _entry("Broken", "broken", "0.1", broken),
        policy=PluginPolicy(strict=True),
    )
    with pytest.raises(PluginLoadError, match=r"(?s)1 pass plugin\(s\) failed.*broken==0.1.*gone"):
        registry.get_pass_class("Good")


def test_normalize_name():
    assert normalize_name("Olive_Passes..Quant") == "olive-passes-quant"


def test_set_and_use_registry_restore_previous():
    first = PassRegistry(entry_points=False)
    previous = set_registry(first)
    try:
        second = PassRegistry(entry_points=False)
        with use_registry(second):
            assert get_registry() is second
        assert get_registry() is first
    finally:
        set_registry(previous)


def test_entries_from_real_metadata_import_nothing():
    # The real environment: listing must work whatever is installed, and leave every entry unloaded.
    registry = PassRegistry(policy=PluginPolicy())
    for entry in registry.entries():
        assert entry.status in ("not loaded", "blocked")
        assert entry.pass_class is None


def _fake_distribution(root, name, entry_points_txt):
    info = root / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points_txt)


def test_malformed_metadata_skips_only_that_distribution(tmp_path, monkeypatch, caplog):
    _fake_distribution(tmp_path, "olive-malformed", "[olive.passes]\nthis line has no equals sign\n")
    _fake_distribution(tmp_path, "olive-fine", "[olive.passes]\nFine = olive_fine_module:Fine\nEmpty = \n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = PassRegistry(policy=PluginPolicy())
    ours = {e.qualified_name: e for e in registry.entries() if e.distribution.startswith("olive-")}
    assert set(ours) >= {"olive-fine:Fine", "olive-fine:Empty"}
    assert not any(name.startswith("olive-malformed") for name in ours)
    assert "olive-malformed" in caplog.text and "reinstall it" in caplog.text
    # entries that cannot load fail one by one, with their distribution named
    with pytest.raises(PluginLoadError, match=r"olive-fine==1\.0.*No module named 'olive_fine_module'"):
        registry.get_pass_class("Fine")
    with pytest.raises(PluginLoadError, match=r"olive-fine==1\.0"):
        registry.get_pass_class("Empty")
