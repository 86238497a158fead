"""The adapter interface: what Olive needs to know about an onnxruntime plugin execution provider.

onnxruntime (1.23 and later) loads execution providers from shared libraries that ordinary pip packages
ship (``onnxruntime-ep-openvino``, ``onnxruntime-ep-webgpu``). Such a package knows where its library is
but not how Olive should name, validate and spell its options, so Olive finds one small adapter per
provider through the ``olive.execution_providers`` entry-point group. The entry point's name is the
provider's name as onnxruntime spells it; its value is a subclass of :class:`ExecutionProviderAdapter`::

    # my_ep_adapter.py
    from olive.execution_providers import ExecutionProviderAdapter, OptionSpec

    class MyEPAdapter(ExecutionProviderAdapter):
        ep_name = "MyExecutionProvider"
        package = "onnxruntime-ep-my"          # what `pip install` takes
        module = "onnxruntime_ep_my"           # has get_library_path() (and get_ep_names())
        options = {
            "precision": OptionSpec(choices=("fp32", "fp16"), search_defaults=("fp32", "fp16")),
            "num_threads": OptionSpec(kind=int),
        }

    # pyproject.toml
    [project.entry-points."olive.execution_providers"]
    MyExecutionProvider = "my_ep_adapter:MyEPAdapter"

Nothing is imported to list adapters; the provider's module is imported, and its library registered with
onnxruntime (once per process), only when a session needs the provider or ``olive eps`` lists it.

Options: a workflow names options the way the adapter's :attr:`~ExecutionProviderAdapter.options` spell
them. A name the adapter does not know is an error with the closest valid name (onnxruntime accepts unknown
names silently), a value outside an option's ``choices`` or of the wrong kind is an error listing what it
takes, and :meth:`~ExecutionProviderAdapter.provider_options` turns the checked options into the strings the
library takes for one device (OpenVINO's go into its ``load_config`` JSON, keyed by the device). An adapter
whose ``options`` is None checks no names; values are then checked by a probe session when a workflow is
prepared.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs

from olive.exceptions import ExecutionProviderError, closest_match_hint

__all__ = ["EPOptionError", "EPUnavailableError", "ExecutionProviderAdapter", "OptionSpec"]

_KIND_WORDS = {str: "a string", int: "a whole number", bool: "true or false", dict: "an object"}


class EPUnavailableError(ExecutionProviderError):
    """A plugin execution provider cannot be used here: its package is not installed, its library does not
    load, or it offers no device of the kind asked for."""


class EPOptionError(ExecutionProviderError):
    """An execution provider option that the provider does not know, or a value it does not take."""


@attrs.frozen
class OptionSpec:
    """One option of an execution provider.

    :param kind: the Python type of its value (``str``, ``int``, ``bool`` or ``dict``).
    :param choices: the values it takes (None: any value of ``kind``).
    :param search_defaults: the values ``"SEARCHABLE_VALUES"`` searches (None: the option is not searchable).
    :param description: one line for ``olive eps``.
    :param check: an extra check of a value: returns None when it is fine, else what is wrong with it.
    """

    kind: type = str
    choices: tuple[Any, ...] | None = None
    search_defaults: tuple[Any, ...] | None = None
    description: str = ""
    check: Callable[[Any], str | None] | None = attrs.field(default=None, eq=False)

    def words(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(_plain(c) for c in self.choices)
        return _KIND_WORDS.get(self.kind, self.kind.__name__)

    def validate(self, value: Any) -> str | None:
        """None when ``value`` is valid, else what it should be."""
        if self.choices is not None:
            return None if value in self.choices else self.words()
        if self.kind is str and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # JSON numbers for options the library takes as text (NUM_STREAMS: 2)
        ok = isinstance(value, self.kind) and not (self.kind is int and isinstance(value, bool))
        if self.kind is dict and isinstance(value, str):
            try:
                ok = isinstance(json.loads(value), dict)
            except ValueError:
                ok = False
        if not ok:
            return self.words()
        return self.check(value) if self.check is not None else None


class ExecutionProviderAdapter:
    """How Olive uses one plugin execution provider (see the module docstring for a complete example).

    Class attributes an adapter sets:

    - ``ep_name``: the provider's name as onnxruntime spells it (``"OpenVINOExecutionProvider"``); the entry
      point's name is the same.
    - ``package``: the pip package that ships the library (named in every "not installed" error).
    - ``module``: the import name of that package; it has ``get_library_path()`` and may have
      ``get_ep_names()``. Override :meth:`library_path` for a package laid out otherwise.
    - ``options``: option name -> :class:`OptionSpec` (None: names are not checked).
    - ``legacy_options``: older spellings (Microsoft Olive's) -> ``(option, convert value)``.
    - ``needs``: what it needs beyond its package, said when it finds no device.

    Methods an adapter may override: :meth:`provider_options` (how checked options are spelled for the
    library on a device) and :meth:`describe_device` (what ``olive eps`` shows of a device).
    """

    ep_name: ClassVar[str] = ""
    package: ClassVar[str] = ""
    module: ClassVar[str | None] = None
    options: ClassVar[Mapping[str, OptionSpec] | None] = None
    legacy_options: ClassVar[Mapping[str, tuple[str, Callable[[Any], Any]]]] = {}
    #: what the provider needs beyond its package, said when it offers no device ("needs a GPU and ...")
    needs: ClassVar[str] = ""

    # ---------------------------------------------------------------------------------- the library
    def import_module(self) -> Any:
        """The package's module; :class:`EPUnavailableError` naming the pip package when it is not installed."""
        if not self.module:
            raise EPUnavailableError(f"{self.ep_name}: its adapter names no module; fix the adapter")
        try:
            return importlib.import_module(self.module)
        except ModuleNotFoundError as exc:
            if exc.name and self.module.startswith(exc.name):
                raise EPUnavailableError(
                    f"{self.ep_name} is a plugin execution provider from the package {self.package}, which is not "
                    f"installed; install it with: pip install {self.package}"
                ) from None
            raise EPUnavailableError(
                f"{self.ep_name}: importing {self.module} (from {self.package}) failed: {type(exc).__name__}: {exc}"
            ) from exc
        except Exception as exc:
            raise EPUnavailableError(
                f"{self.ep_name}: importing {self.module} (from {self.package}) failed: {type(exc).__name__}: {exc}; "
                f"reinstall it (pip install --force-reinstall {self.package})"
            ) from exc

    def library_path(self) -> str:
        """The shared library onnxruntime registers."""
        module = self.import_module()
        try:
            return str(module.get_library_path())
        except Exception as exc:
            raise EPUnavailableError(
                f"{self.ep_name}: {self.package} cannot give its library ({type(exc).__name__}: {exc}); reinstall it "
                f"(pip install --force-reinstall {self.package})"
            ) from exc

    def ep_names(self) -> list[str]:
        """The provider names the library registers (the module's ``get_ep_names()`` when it has one)."""
        module = self.import_module()
        names = getattr(module, "get_ep_names", None)
        try:
            return list(names()) if callable(names) else [self.ep_name]
        except Exception:
            return [self.ep_name]

    def package_version(self) -> str | None:
        """The installed version of :attr:`package` (None: not installed); reads metadata only."""
        import importlib_metadata

        try:
            return importlib_metadata.version(self.package)
        except importlib_metadata.PackageNotFoundError:
            return None

    # ---------------------------------------------------------------------------------- options
    def check_options(self, options: Mapping[str, Any], where: str) -> dict[str, Any]:
        """``options`` with legacy spellings translated, every name and (known) value checked.

        :raises EPOptionError: naming the option (under ``where``), the closest valid name or the valid values.
        """
        if not isinstance(options, Mapping):
            raise EPOptionError(f"expected an object of {self.ep_name} options, got {options!r}", owner=where)
        checked: dict[str, Any] = {}
        for name, value in options.items():
            if name in self.legacy_options and (self.options is None or name not in self.options):
                target, convert = self.legacy_options[name]
                try:
                    value = convert(value)
                except (TypeError, ValueError, KeyError):
                    raise EPOptionError(
                        f"{value!r} is not a valid {name}; {self.options_words(target)}",
                        owner=f"{where}.{name}",
                    ) from None
                name = target
            if self.options is not None:
                spec = self.options.get(name)
                if spec is None:
                    valid = sorted(self.options)
                    raise EPOptionError(
                        f"unknown {self.ep_name} option '{name}'{closest_match_hint(name, valid)}; valid options: "
                        f"{', '.join(valid)}",
                        owner=where,
                    )
                problem = spec.validate(value)
                if problem is not None:
                    raise EPOptionError(f"{value!r} is not valid; {name} takes {problem}", owner=f"{where}.{name}")
            checked[name] = value
        return checked

    def options_words(self, name: str) -> str:
        spec = (self.options or {}).get(name)
        return f"it takes {spec.words()}" if spec is not None else "see the provider's documentation"

    def search_defaults(self, name: str) -> tuple[Any, ...] | None:
        spec = (self.options or {}).get(name)
        return spec.search_defaults if spec is not None else None

    def provider_options(self, options: Mapping[str, Any], ep_device: Any) -> dict[str, str]:
        """The checked ``options`` as the library takes them for ``ep_device`` (an ``onnxruntime.OrtEpDevice``):
        every value a string (onnxruntime's provider options are string pairs)."""
        return {name: _option_string(value) for name, value in options.items()}

    # ---------------------------------------------------------------------------------- devices
    def describe_device(self, ep_device: Any) -> dict[str, Any]:
        """What ``olive eps`` shows of one device the provider offers."""
        return {
            "ep_name": ep_device.ep_name,
            "device": device_type(ep_device),
            "vendor": ep_device.device.vendor or ep_device.ep_vendor,
        }


def device_type(ep_device: Any) -> str:
    """``"cpu"``, ``"gpu"`` or ``"npu"``: the kind of hardware an ``OrtEpDevice`` runs on."""
    return ep_device.device.type.name.lower()


def _option_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _plain(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value
