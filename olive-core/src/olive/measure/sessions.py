"""onnxruntime sessions from a model's ``inference_settings``: the one place Olive creates them.

``inference_settings`` (on an ``ONNXModelHandler``, in a metric's ``user_config``, or written by
``OrtSessionParamsTuning``) is a dict with

- ``execution_provider`` (or ``execution_providers``): a provider name or a list of them in priority order;
  an entry may also be ``[name, {option: value}]``.
- ``provider_options``: one dict of options per provider, in the same order.
- ``session_options``: any ``onnxruntime.SessionOptions`` attribute (``intra_op_num_threads``,
  ``inter_op_num_threads``, ``log_severity_level``, ...), ``execution_mode`` and ``graph_optimization_level``
  as onnxruntime's enum names (``"ORT_PARALLEL"``, ``"ORT_ENABLE_ALL"``) or their numbers, and
  ``extra_session_config`` (``add_session_config_entry`` pairs). ``null`` leaves onnxruntime's default.
- ``tuning_op_result``: kernel tuning results (ROCm), given to the session with ``set_tuning_results``.
- ``device``: ``cpu``, ``gpu`` or ``npu``: the device a plugin execution provider runs on (default: the first
  one it offers).

Plugin execution providers (libraries shipped in pip packages, such as ``onnxruntime-ep-openvino``) are named
like any other. Their adapter (:mod:`olive.execution_providers`) registers the library once per process, checks
the provider options' names and values, picks the device and spells the options for it; the session is then
made with ``SessionOptions.add_provider_for_devices`` (onnxruntime silently runs a plugin provider named in
``providers=`` on the CPU instead). Such a session records which provider took each node
(:func:`describe_session` reports the nodes the plugin provider left to the CPU).

Microsoft Olive's session tuning also records ``io_bind`` and ``tuning_result_file`` there; they are accepted
and change nothing about the session (IO binding is the latency metric's ``io_bind`` option).

A setting that is unknown or of the wrong kind is a :class:`~olive.exceptions.ModelLoadError` naming it and
saying what it takes; a run that onnxruntime refuses is a :class:`ModelRunError`. Built-in providers the
installed onnxruntime lacks are dropped with a warning while one named provider remains; none left is an
error. A plugin provider that is not installed, an option it does not know or a device it lacks is an error
naming the package, the valid options or the devices there are. :func:`session_setup` turns settings into
what ``InferenceSession`` takes.
:func:`check_inference_settings` is its first step, and checks settings without onnxruntime: a workflow's
settings are checked with it when the workflow is read.
"""

from __future__ import annotations

import logging
import numbers
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from olive.exceptions import ExecutionProviderError, ModelLoadError, OliveError, PluginLoadError, closest_match_hint
from olive.execution_providers.registry import adapter_for, quiet_onnxruntime, select_device
from olive.hardware.constants import DEVICES

if TYPE_CHECKING:
    import onnxruntime

logger = logging.getLogger(__name__)

SETTING_KEYS = (
    "execution_provider",
    "execution_providers",
    "provider_options",
    "session_options",
    "tuning_op_result",
    "device",
)
# Makes a session record which provider took each node (read by describe_session).
_ASSIGNMENT_ENTRY = "session.record_ep_graph_assignment_info"
# Recorded in a model's settings by Microsoft Olive's session tuning; nothing about a session depends on them.
RECORDED_KEYS = ("io_bind", "tuning_result_file")
DEFAULT_PROVIDERS = ("CPUExecutionProvider",)
# Session options that take one of onnxruntime's enums; JSON gives their names or numbers.
_ENUM_OPTIONS = {
    "execution_mode": "ExecutionMode",
    "execution_order": "ExecutionOrder",
    "graph_optimization_level": "GraphOptimizationLevel",
}
# onnxruntime's enums by name and number (checked against onnxruntime by the tests; a value missing here is
# looked up in the installed onnxruntime before it is refused).
ENUM_MEMBERS: dict[str, dict[str, int]] = {
    "ExecutionMode": {"ORT_SEQUENTIAL": 0, "ORT_PARALLEL": 1},
    "ExecutionOrder": {"DEFAULT": 0, "PRIORITY_BASED": 1, "MEMORY_EFFICIENT": 2},
    "GraphOptimizationLevel": {
        "ORT_DISABLE_ALL": 0,
        "ORT_ENABLE_BASIC": 1,
        "ORT_ENABLE_EXTENDED": 2,
        "ORT_ENABLE_LAYOUT": 3,
        "ORT_ENABLE_ALL": 99,
    },
}
# The other SessionOptions attributes: their kind, and for numbers the range onnxruntime takes (its fields are
# 32-bit; thread counts beyond a few thousand only exhaust the machine). An attribute missing here is looked up
# in the installed onnxruntime before it is refused.
SESSION_OPTIONS: dict[str, tuple[type, int | None, int | None]] = {
    "enable_cpu_mem_arena": (bool, None, None),
    "enable_mem_pattern": (bool, None, None),
    "enable_mem_reuse": (bool, None, None),
    "enable_profiling": (bool, None, None),
    "use_deterministic_compute": (bool, None, None),
    "use_per_session_threads": (bool, None, None),
    "inter_op_num_threads": (int, 0, 4096),
    "intra_op_num_threads": (int, 0, 4096),
    "log_severity_level": (int, -1, 4),
    "log_verbosity_level": (int, 0, 1000),
    "logid": (str, None, None),
    "optimized_model_filepath": (str, None, None),
    "profile_file_prefix": (str, None, None),
}
_KINDS = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}
# Options with which onnxruntime writes files of its own, outside the output and cache folders, once for every
# session Olive makes (and over whatever file is there).
_WRITES_FILES = {
    "optimized_model_filepath": "onnxruntime would write the optimized model to this path for every session Olive "
    "makes (over any file there); Olive writes only into output_dir and cache_dir: remove it (graph "
    "optimization passes write optimized models)",
    "enable_profiling": "onnxruntime would write a profile file into the current folder for every session Olive "
    "makes; Olive writes only into output_dir and cache_dir: remove it (profile the model with onnxruntime itself)",
}
# What a session's metadata reports of its options (the ones tuning and the metrics set).
_DESCRIBED_OPTIONS = ("intra_op_num_threads", "inter_op_num_threads", "execution_mode", "graph_optimization_level")


class ModelRunError(OliveError):
    """onnxruntime refused to run a model on a batch (inputs of the wrong shape or values, a kernel failure)."""


class SessionSetup(NamedTuple):
    """What ``onnxruntime.InferenceSession`` is created with.

    ``plugin`` is True when ``options`` holds the providers (added for their devices); ``providers`` then only
    names them, and the session is created without ``providers=``.
    """

    options: onnxruntime.SessionOptions
    providers: list[str]
    provider_options: list[dict[str, Any]] | None
    plugin: bool = False


def check_inference_settings(inference_settings: Any, where: str = "inference_settings") -> dict[str, Any]:
    """The settings as a dict, if every key is known and every value of the kind (and range) it takes.

    Needs no onnxruntime: it checks types, ranges and enum names from the tables here, and consults the
    installed onnxruntime only for a name they lack. Whether the named providers are installed is for
    :func:`session_setup` to say.

    :raises ModelLoadError: naming the setting (``where`` and the key) and what it takes.
    """
    if inference_settings is None:
        return {}
    if not isinstance(inference_settings, Mapping):
        raise ModelLoadError(f"expected a dict of inference settings, got {inference_settings!r}", owner=where)
    settings = dict(inference_settings)
    unknown = [key for key in settings if key not in SETTING_KEYS + RECORDED_KEYS]
    if unknown:
        raise ModelLoadError(
            f"unknown key '{unknown[0]}'{closest_match_hint(str(unknown[0]), SETTING_KEYS)}; inference_settings take "
            f"{', '.join(SETTING_KEYS)}",
            owner=where,
        )
    if "execution_provider" in settings and "execution_providers" in settings:
        raise ModelLoadError("give execution_provider or execution_providers, not both", owner=where)
    _check_session_options(settings.get("session_options"), f"{where}.session_options")
    requested = settings.get("execution_provider") or settings.get("execution_providers")
    if requested is not None:
        _provider_entries(requested, settings.get("provider_options"), where)
    elif settings.get("provider_options") is not None:
        # Their count is checked against the providers a session is made with (the run's, when none are named).
        given = settings["provider_options"]
        listed = given if isinstance(given, Sequence) and not isinstance(given, str | bytes) else [given]
        if not all(_is_dict(options) for options in listed):
            raise ModelLoadError(f"provider_options needs one dict per execution provider, got {given!r}", owner=where)
    tuning = settings.get("tuning_op_result")
    if tuning is not None and not (isinstance(tuning, Sequence) and not isinstance(tuning, str | bytes)):
        raise ModelLoadError(f"expected a list of tuning results, got {tuning!r}", owner=f"{where}.tuning_op_result")
    if settings.get("io_bind") is not None and not isinstance(settings["io_bind"], bool):
        raise ModelLoadError(f"expected true or false, got {settings['io_bind']!r}", owner=f"{where}.io_bind")
    result_file = settings.get("tuning_result_file")
    if result_file is not None and not isinstance(result_file, str):
        raise ModelLoadError(f"expected a file name, got {result_file!r}", owner=f"{where}.tuning_result_file")
    return settings


def session_setup(
    inference_settings: Mapping[str, Any] | None = None,
    execution_providers: Sequence[Any] | str | None = None,
    where: str = "inference_settings",
) -> SessionSetup:
    """Session options and providers from ``inference_settings`` (checked by :func:`check_inference_settings`).

    :param execution_providers: used instead of the settings' providers when given.
    :param where: how errors name the settings (a JSON path, a metric).
    """
    settings = check_inference_settings(inference_settings, where)
    options = _session_options(settings.get("session_options"), f"{where}.session_options")
    requested = execution_providers or settings.get("execution_provider") or settings.get("execution_providers")
    device = settings.get("device")
    if device is not None and (not isinstance(device, str) or device.lower() not in DEVICES):
        raise ModelLoadError(f"unknown device {device!r}; use one of {', '.join(DEVICES)}", owner=f"{where}.device")
    names, inline = _provider_entries(requested or list(DEFAULT_PROVIDERS), settings.get("provider_options"), where)
    adapters = _adapters(names, where)
    if any(adapter is not None for adapter in adapters):
        _add_plugin_providers(options, names, inline, adapters, device, where)
        return SessionSetup(options, names, None, plugin=True)
    providers, provider_options = _available_providers(names, inline, where)
    return SessionSetup(options, providers, provider_options)


def create_session(
    model: str | Path | bytes,
    inference_settings: Mapping[str, Any] | None = None,
    execution_providers: Sequence[Any] | str | None = None,
    what: str | None = None,
    where: str = "inference_settings",
    disabled_optimizers: Sequence[str] | None = None,
    optimized_model_path: str | Path | None = None,
) -> onnxruntime.InferenceSession:
    """A real onnxruntime session for an ``.onnx`` file (or a serialized model) with ``inference_settings``.

    :param execution_providers: used instead of the settings' providers when given.
    :param what: how a load failure names the model (default: its path).
    :param where: how errors in the settings name them.
    :param disabled_optimizers: onnxruntime graph optimizers to skip (``InferenceSession``'s own argument).
    :param optimized_model_path: where onnxruntime writes the graph it optimized (what graph optimization passes
        ask for, into a folder of their own; a workflow's settings may not, as every session would write it).
    :raises ModelLoadError: a bad setting (named), or onnxruntime refusing the model.
    """
    import onnxruntime as ort

    setup = session_setup(inference_settings, execution_providers, where)
    if optimized_model_path is not None:
        setup.options.optimized_model_filepath = str(optimized_model_path)
    source = model if isinstance(model, bytes) else str(model)
    extra: dict[str, Any] = {"disabled_optimizers": list(disabled_optimizers)} if disabled_optimizers else {}
    try:
        if setup.plugin:
            # A plugin's compile errors go to onnxruntime's log as well; the error raised here says it once.
            with quiet_onnxruntime():
                session = ort.InferenceSession(source, sess_options=setup.options, **extra)
        else:
            session = ort.InferenceSession(
                source,
                sess_options=setup.options,
                providers=setup.providers,
                provider_options=setup.provider_options,
                **extra,
            )
    except Exception as exc:
        label = what or (f"a serialized model ({len(model)} bytes)" if isinstance(model, bytes) else f"'{model}'")
        on = f" on {setup.providers[0]}" if setup.plugin else ""
        raise ModelLoadError(f"onnxruntime cannot load {label}{on} ({type(exc).__name__}: {_essence(exc)})") from exc
    tuning_results = (inference_settings or {}).get("tuning_op_result")
    if tuning_results:
        try:
            session.set_tuning_results(tuning_results)
        except Exception as exc:
            raise ModelLoadError(
                f"onnxruntime refuses the tuning results ({type(exc).__name__}: {exc})",
                owner=f"{where}.tuning_op_result",
            ) from exc
    return session


# Settings that choose where a session runs: a target replaces them, the rest of a model's settings stay.
PROVIDER_KEYS = ("execution_provider", "execution_providers", "provider_options", "device")


def settings_on_target(settings: Mapping[str, Any] | None, target: Any) -> dict[str, Any]:
    """``settings`` moved to ``target`` (an :class:`~olive.hardware.AcceleratorSpec`): the target's provider,
    options and device, the rest of ``settings`` (session options, say) kept. Passes that measure a model
    (accuracy guards, sensitivity, session tuning) score it where it will run this way."""
    kept = {k: v for k, v in (settings or {}).items() if k not in PROVIDER_KEYS}
    return {**kept, **target.inference_settings()}


def describe_session(session: onnxruntime.InferenceSession) -> dict[str, Any]:
    """The providers a session runs on and its main options, as plain JSON values (for metadata).

    A session that is not onnxruntime's (what a model type's ``prepare_session`` returns: any object with
    ``run(output_names, feeds)``, ``get_inputs()`` and ``get_outputs()``) reports these itself through
    ``describe() -> {"providers": [...], "session_options": {...}}``.

    For a session on a plugin provider, ``nodes_by_provider`` counts the nodes each provider took and
    ``nodes_not_taken`` lists (up to 20 of) those the first provider left to the others, as ``name (OpType)``.
    """
    own = getattr(session, "describe", None)
    if callable(own):
        # A model type that runs on another runtime (an OpenVINO compiled model) describes its own session.
        return dict(own())
    options = session.get_session_options()
    described: dict[str, Any] = {
        "providers": session.get_providers(),
        "session_options": {name: _plain(getattr(options, name)) for name in _DESCRIBED_OPTIONS},
    }
    if _config_entry(options, _ASSIGNMENT_ENTRY) == "1":
        described.update(node_assignment(session))
    return described


def node_assignment(session: onnxruntime.InferenceSession) -> dict[str, Any]:
    """Which provider took how many nodes, and the nodes the first provider did not take."""
    try:
        subgraphs = session.get_provider_graph_assignment_info()
    except Exception:  # the session was not asked to record it
        return {}
    counts: dict[str, int] = {}
    nodes: dict[str, list[str]] = {}
    for subgraph in subgraphs:
        taken = list(subgraph.get_nodes())
        counts[subgraph.ep_name] = counts.get(subgraph.ep_name, 0) + len(taken)
        nodes.setdefault(subgraph.ep_name, []).extend(f"{n.name} ({n.op_type})" for n in taken)
    first = session.get_providers()[0]
    left = [node for ep, names in nodes.items() if ep != first for node in names]
    return {"nodes_by_provider": counts, "nodes_not_taken": left[:20], "nodes_not_taken_count": len(left)}


def _config_entry(options: onnxruntime.SessionOptions, key: str) -> str | None:
    try:
        return options.get_session_config_entry(key)
    except Exception:  # onnxruntime raises for an entry never set
        return None


def _check_session_options(values: Any, where: str) -> None:
    if values is None:
        return
    if not isinstance(values, Mapping):
        raise ModelLoadError(f"expected a dict of onnxruntime session options, got {values!r}", owner=where)
    for key, value in values.items():
        if value is None:
            continue
        option = f"{where}.{key}"
        if key == "extra_session_config":
            _check_config_entries(value, option)
        elif key in _ENUM_OPTIONS:
            _check_enum(_ENUM_OPTIONS[key], value, option)
        elif key in SESSION_OPTIONS:
            _check_session_option(key, value, option)
        elif not _onnxruntime_has_option(key):
            names = [*SESSION_OPTIONS, *_ENUM_OPTIONS, "extra_session_config"]
            raise ModelLoadError(
                f"unknown onnxruntime session option '{key}'{closest_match_hint(str(key), names)}; session_options "
                "take onnxruntime.SessionOptions attributes (intra_op_num_threads, inter_op_num_threads, ...), "
                "execution_mode, graph_optimization_level and extra_session_config",
                owner=where,
            )


def _check_config_entries(value: Any, option: str) -> None:
    if not isinstance(value, Mapping):
        raise ModelLoadError(f"expected a dict of session config entries, got {value!r}", owner=option)
    for entry, setting in value.items():
        if not isinstance(setting, str | int | float | bool):
            raise ModelLoadError(
                f"entry '{entry}' = {setting!r}: a session config entry takes a string (or a number)", owner=option
            )


def _check_session_option(key: str, value: Any, option: str) -> None:
    kind, minimum, maximum = SESSION_OPTIONS[key]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ModelLoadError(f"{value!r} is not a valid value; it takes {_KINDS[kind]}", owner=option)
    if kind is int and not minimum <= value <= maximum:
        raise ModelLoadError(
            f"{value} is out of range; it takes a whole number from {minimum} to {maximum}", owner=option
        )
    if key in _WRITES_FILES and value:
        raise ModelLoadError(_WRITES_FILES[key], owner=option)


def _onnxruntime_has_option(name: Any) -> bool:
    # An attribute a newer onnxruntime added; its value is checked when a session is made.
    import onnxruntime as ort

    return isinstance(name, str) and isinstance(getattr(ort.SessionOptions, name, None), property)


def _check_enum(enum_name: str, value: Any, where: str) -> None:
    members = ENUM_MEMBERS[enum_name]
    if isinstance(value, str) and value in members:
        return
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) in members.values():
        return
    if isinstance(value, str | int) and not isinstance(value, bool):
        import onnxruntime as ort

        enum_type = getattr(ort, enum_name)
        _enum_value(enum_type, value, where)  # a member a newer onnxruntime added passes; others raise
        return
    numbers_ = ", ".join(f"{name} ({number})" for name, number in members.items())
    raise ModelLoadError(f"unknown {enum_name} value {value!r}; use one of {numbers_}", owner=where)


def _session_options(values: Any, where: str) -> onnxruntime.SessionOptions:
    import onnxruntime as ort

    options = ort.SessionOptions()
    if values is None:
        return options
    for key, value in values.items():
        if value is None:
            continue
        if key == "extra_session_config":
            _add_config_entries(options, value, f"{where}.extra_session_config")
        elif key in _ENUM_OPTIONS:
            setattr(options, key, _enum_value(getattr(ort, _ENUM_OPTIONS[key]), value, f"{where}.{key}"))
        else:
            try:
                setattr(options, key, value)
            except (TypeError, ValueError):
                kind = _KINDS.get(type(getattr(options, key)), type(getattr(options, key)).__name__)
                raise ModelLoadError(
                    f"{value!r} is not a valid value; it takes {kind}", owner=f"{where}.{key}"
                ) from None
    return options


def _add_config_entries(options: onnxruntime.SessionOptions, entries: Any, where: str) -> None:
    if not isinstance(entries, Mapping):
        raise ModelLoadError(f"expected a dict of session config entries, got {entries!r}", owner=where)
    for key, value in entries.items():
        try:
            options.add_session_config_entry(str(key), str(value))
        except Exception as exc:
            raise ModelLoadError(
                f"onnxruntime refuses entry '{key}' = {value!r} ({type(exc).__name__}: {exc})", owner=where
            ) from exc


def _enum_value(enum_type: Any, value: Any, where: str) -> Any:
    # Settings come from JSON as ints or names ("ORT_ENABLE_ALL"); onnxruntime wants its own enum.
    if isinstance(value, enum_type):
        return value
    names = list(enum_type.__members__)
    if isinstance(value, str):
        if value in enum_type.__members__:
            return enum_type.__members__[value]
        raise ModelLoadError(
            f"unknown {enum_type.__name__} '{value}'{closest_match_hint(value, names)}; use one of {', '.join(names)}",
            owner=where,
        )
    if isinstance(value, int) and not isinstance(value, bool):
        for member in enum_type.__members__.values():
            if int(member) == value:
                return member
    numbers = ", ".join(f"{name} ({int(member)})" for name, member in enum_type.__members__.items())
    raise ModelLoadError(f"unknown {enum_type.__name__} value {value!r}; use one of {numbers}", owner=where)


def _provider_entries(
    requested: Any, provider_options: Any, where: str
) -> tuple[list[str], list[dict[str, Any] | None]]:
    """The provider names and their options (inline or from ``provider_options``), checked for shape."""
    if isinstance(requested, str):
        entries = [requested]
    elif isinstance(requested, Sequence) and not isinstance(requested, bytes):
        entries = list(requested)
    else:
        raise ModelLoadError(
            f"expected a provider name or a list of them, got {requested!r}", owner=f"{where}.execution_provider"
        )
    names: list[str] = []
    inline: list[dict[str, Any] | None] = []
    for entry in entries:
        if isinstance(entry, str):
            names.append(entry)
            inline.append(None)
        elif isinstance(entry, Sequence) and len(entry) == 2 and isinstance(entry[0], str) and _is_dict(entry[1]):
            names.append(entry[0])
            inline.append(dict(entry[1]))
        else:
            raise ModelLoadError(
                f"execution provider {entry!r} is neither a provider name nor [name, {{options}}]", owner=where
            )
    if provider_options is not None:
        if any(options is not None for options in inline):
            raise ModelLoadError(
                "give provider options inline ([name, {options}]) or in provider_options, not both", owner=where
            )
        if not isinstance(provider_options, Sequence) or isinstance(provider_options, str | bytes):
            provider_options = [provider_options]
        if len(provider_options) != len(names) or not all(_is_dict(o) for o in provider_options):
            raise ModelLoadError(
                f"provider_options needs one dict per execution provider ({len(names)}: {', '.join(names)}), got "
                f"{provider_options!r}",
                owner=where,
            )
        inline = [dict(options) for options in provider_options]
    return names, inline


def _adapters(names: list[str], where: str) -> list[Any]:
    """The adapter of each plugin provider among ``names`` (None for the others)."""
    adapters = []
    for name in names:
        try:
            adapters.append(adapter_for(name))
        except (PluginLoadError, ExecutionProviderError) as exc:
            raise ModelLoadError(exc.reason, owner=where) from exc
    return adapters


def _add_plugin_providers(
    options: onnxruntime.SessionOptions,
    names: list[str],
    inline: list[dict[str, Any] | None],
    adapters: list[Any],
    device: str | None,
    where: str,
) -> None:
    """Add every provider to ``options`` for its device: plugin providers through their adapter, built-in ones
    by name. The CPU provider takes whatever the others leave, named or not."""
    for index, (name, given, adapter) in enumerate(zip(names, inline, adapters, strict=True)):
        owner = f"{where}.provider_options[{index}]"
        if adapter is None:
            if name != "CPUExecutionProvider":
                options.add_provider(name, {k: str(v) for k, v in (given or {}).items()})
            continue
        try:
            checked = adapter.check_options(given or {}, owner)
            ep_device = select_device(adapter, name, device)
        except ExecutionProviderError as exc:
            raise ModelLoadError(exc.reason, owner=exc.owner or where) from exc
        options.add_provider_for_devices([ep_device], adapter.provider_options(checked, ep_device))
    options.add_session_config_entry(_ASSIGNMENT_ENTRY, "1")


def _essence(exc: BaseException) -> str:
    """onnxruntime's message without its source locations: the lines that say what is wrong, joined."""
    text = re.sub(r"Exception from \S+:\d+:\s*", "", str(exc))
    return " ".join(text.split())


def _available_providers(
    names: list[str], inline: list[dict[str, Any] | None], where: str
) -> tuple[list[str], list[dict[str, Any]] | None]:
    import onnxruntime as ort

    available = ort.get_available_providers()
    kept = [index for index, name in enumerate(names) if name in available]
    lacking = [name for name in names if name not in available]
    if not kept:
        raise ModelLoadError(
            f"none of the execution providers {', '.join(names)} is available in the installed onnxruntime (it "
            f"offers {', '.join(available)}); install the onnxruntime package that provides them or name another",
            owner=where,
        )
    if lacking:
        logger.warning(
            "%s: skipping execution provider(s) %s, which the installed onnxruntime lacks", where, ", ".join(lacking)
        )
    options_kept = [inline[index] or {} for index in kept]
    return [names[index] for index in kept], options_kept if any(options_kept) else None


def _is_dict(value: Any) -> bool:
    return isinstance(value, Mapping)


def _plain(value: Any) -> Any:
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return getattr(value, "name", str(value))
