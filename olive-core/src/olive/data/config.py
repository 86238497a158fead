"""``DataConfig``: where calibration/evaluation data comes from and how it is batched.

Written in a workflow's ``data_configs`` list, in Microsoft Olive's form::

    {"name": "calib", "type": "NpzDataContainer",
     "load_dataset_config": {"data_path": "calib.npz"}, "dataloader_config": {"batch_size": 8}}

    {"name": "eval", "type": "DataContainer", "user_script": "user_script.py",
     "load_dataset_config": {"type": "load_my_data", "params": {"data_dir": "data"}},
     "post_process_data_config": {"type": "post_process"}, "dataloader_config": {"batch_size": 4}}

Each component is ``{"type": <function name>, "params": {...}}``; params may also be written flat beside
``type`` (Olive 0.6 and later). A component type is looked up in the user script, then among functions
registered with :class:`olive.data.registry.Registry`, then among the built-ins.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from olive.cache.store import hash_path
from olive.config_errors import (
    SEED_MAX,
    check_keys,
    choice,
    config_error,
    expect,
    input_specs,
    user_path,
    whole_number,
)
from olive.data.components import BUILTINS, normalize_batch
from olive.data.containers import container_registry, find_container, unknown_container_reason
from olive.data.feeds import FeedReader
from olive.data.registry import Registry
from olive.data.split import (
    FIT,
    ROLES,
    SampleSubset,
    TooFewSamplesError,
    sample_lengths,
    shared_data_too_small,
    split_indices,
)
from olive.data.user_script import get_user_function, load_user_script
from olive.exceptions import OliveError, PassConfigError, PluginLoadError, WorkflowConfigError, closest_match_hint
from olive.paths import UnusablePath, resolve_user_path

logger = logging.getLogger(__name__)

COMPONENT_FIELDS = {
    "load_dataset_config": "load_dataset",
    "pre_process_data_config": "pre_process_data",
    "post_process_data_config": "post_process_data",
    "dataloader_config": "dataloader",
}

# Default component function of each container type; DataContainer has no default dataset loader.
CONTAINER_DEFAULTS: dict[str, dict[str, str | None]] = {
    "DataContainer": {"load_dataset": None},
    "NpzDataContainer": {"load_dataset": "npz_dataset"},
    "DummyDataContainer": {"load_dataset": "dummy_dataset"},
}
COMMON_DEFAULTS = {
    "pre_process_data": "pre_process",
    "post_process_data": "post_process",
    "dataloader": "default_dataloader",
}

# Params holding paths, resolved like every path in a workflow (olive.paths.resolve_user_path).
_PATH_PARAMS = ("data_path", "data_dir")
_NPZ_LOAD_KEYS = ("data_path", "data_dir", "max_samples")

_TOP_KEYS = ("name", "type", "user_script", "script_dir", "split", *COMPONENT_FIELDS)
# Bounds of the built-in components' numbers: past them a typo only exhausts memory or time.
MAX_BATCH_SIZE = 1_000_000
MAX_DUMMY_SAMPLES = 100_000


@attrs.frozen
class DataComponentConfig:
    """One data component: the function's name (``type``, ``None`` = the container's default) and its params."""

    type: str | None = None
    params: dict[str, Any] = attrs.field(factory=dict, converter=dict)

    @classmethod
    def from_json(cls, data: Any, json_path: str = "component") -> DataComponentConfig:
        if isinstance(data, DataComponentConfig):
            return data
        if data is None:
            return cls()
        expect(data, Mapping, json_path, 'an object like {"type": "function_name", "params": {...}}')
        kind = data.get("type")
        if kind is not None:
            expect(kind, str, f"{json_path}.type", "a function name (a string)")
        params = expect(data.get("params") or {}, Mapping, f"{json_path}.params", "an object of keyword arguments")
        flat = {k: v for k, v in data.items() if k not in ("type", "name", "params")}
        return cls(type=kind, params={**flat, **params})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type} if self.type else {}
        if self.params:
            out["params"] = dict(self.params)
        return out


def _component(value: Any) -> DataComponentConfig:
    return DataComponentConfig.from_json(value)


@attrs.define(eq=False)
class DataConfig:
    """A named data source for calibration or evaluation.

    :param name: referred to by passes (``"data_config": "calib"``) and metrics.
    :param type: ``NpzDataContainer`` (the built-in ``.npz`` container), ``DataContainer`` (components from
        ``user_script``) or ``DummyDataContainer`` (synthetic inputs of given shapes).
    :param user_script: a Python file whose functions the components name.
    :param script_dir: a folder put on ``sys.path`` while the user script is imported.
    :param split: when passes and metrics both use this config, give each role its own samples
        (:mod:`olive.data.split`); ``False`` lets both see every sample.
    :param role: the part of the samples this config yields (``"fit"`` or ``"judge"``; ``None``: all of
        them); set by the workflow, never written in one.
    :param split_required: whether samples too few to split are an error (``olive optimize``) rather than read
        whole by both roles, with one warning that the figures measure the fit (``olive run``, as in Microsoft
        Olive); set by the workflow, never written in one.
    """

    name: str
    type: str = "DataContainer"
    user_script: str | None = None
    script_dir: str | None = None
    load_dataset_config: DataComponentConfig = attrs.field(factory=DataComponentConfig, converter=_component)
    pre_process_data_config: DataComponentConfig = attrs.field(factory=DataComponentConfig, converter=_component)
    post_process_data_config: DataComponentConfig = attrs.field(factory=DataComponentConfig, converter=_component)
    dataloader_config: DataComponentConfig = attrs.field(factory=DataComponentConfig, converter=_component)
    split: bool = True
    role: str | None = attrs.field(default=None, kw_only=True, validator=attrs.validators.in_((None, *ROLES)))
    split_required: bool = attrs.field(default=True, kw_only=True)
    json_path: str | None = attrs.field(default=None, kw_only=True, repr=False)
    _dataset: Any = attrs.field(default=None, init=False, repr=False)

    # ------------------------------------------------------------------------------------------ parsing

    @classmethod
    def from_json(
        cls,
        data: Mapping[str, Any] | DataConfig,
        json_path: str = "data_configs[0]",
        base_dir: str | Path | None = None,
    ) -> DataConfig:
        """Validate a data config's JSON; relative paths start at ``base_dir`` (default: the current folder)."""
        if isinstance(data, DataConfig):
            return data
        expect(data, Mapping, json_path, "a data config object")
        if "components" in data:
            raise config_error(
                f"{json_path}.components",
                f"unknown data config key; write each component as its own key: {', '.join(COMPONENT_FIELDS)}",
            )
        check_keys(data, _TOP_KEYS, json_path, "data config key")
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise config_error(f"{json_path}.name", "every data config needs a name (a non-empty string)")
        kind = _container_name(data.get("type", "DataContainer"))
        container = _container_for(kind, json_path)
        user_script, script_dir = _scripts(data, json_path, base_dir)
        components = {}
        for field in COMPONENT_FIELDS:
            where = f"{json_path}.{field}"
            comp = DataComponentConfig.from_json(data.get(field), where)
            params = dict(comp.params)
            # The built-in .npz loader reads the file it names; a user's loader may treat a path as it likes.
            npz_file = kind == "NpzDataContainer" and field == "load_dataset_config" and not comp.type
            if npz_file:
                _check_npz_params(params, where)
            elif container is None and not (comp.type and user_script):
                _check_builtin_params(kind, field, comp.type, data.get(field), where)
            for key in _PATH_PARAMS:
                if isinstance(params.get(key), str | Path):
                    # A user's loader may take a folder; the .npz loader reads one file.
                    expected = "file" if npz_file else None
                    resolved = user_path(params[key], f"{where}.{key}", base_dir, must_exist=npz_file, kind=expected)
                    params[key] = str(resolved)
            components[field] = DataComponentConfig(comp.type, params)
        split = expect(data.get("split", True), bool, f"{json_path}.split", "true or false")
        config = cls(
            name=name,
            type=kind,
            user_script=user_script,
            script_dir=script_dir,
            **components,
            split=split,
            json_path=json_path,
        )
        config._check_static(json_path)
        if container is not None:
            config = container.check(config, json_path, base_dir)
        return config

    def _check_static(self, json_path: str) -> None:
        load = self.load_dataset_config
        if self.type == "DataContainer" and not load.type:
            raise config_error(
                f"{json_path}.load_dataset_config",
                'a DataContainer needs a load_dataset_config with "type": the name of a function in user_script that '
                "returns the dataset (or use NpzDataContainer)",
            )
        for field in COMPONENT_FIELDS:
            comp = getattr(self, field)
            if comp.type and not self.user_script and comp.type not in BUILTINS[COMPONENT_FIELDS[field]]:
                raise config_error(
                    f"{json_path}.{field}.type",
                    f"'{comp.type}' is not a built-in component; set user_script to the file that defines it",
                )
        loader = self.dataloader_config
        if (loader.type or COMMON_DEFAULTS["dataloader"]) == "default_dataloader":
            where = f"{json_path}.dataloader_config"
            if "batch_size" in loader.params:
                whole_number(loader.params["batch_size"], f"{where}.batch_size", minimum=1, maximum=MAX_BATCH_SIZE)
            if "drop_last" in loader.params:
                expect(loader.params["drop_last"], bool, f"{where}.drop_last", "true or false")
        load = self.load_dataset_config
        if (load.type or CONTAINER_DEFAULTS.get(self.type, {}).get("load_dataset")) == "dummy_dataset":
            params, where = load.params, f"{json_path}.load_dataset_config"
            samples = 32
            if params.get("max_samples") is not None:
                samples = whole_number(
                    params["max_samples"], f"{where}.max_samples", minimum=0, maximum=MAX_DUMMY_SAMPLES
                )
            if params.get("seed") is not None:
                whole_number(params["seed"], f"{where}.seed", minimum=0, maximum=SEED_MAX)
            input_specs(params, where, samples=max(samples, 1))

    def check_user_script(self) -> None:
        """Import the user script and check every component it names exists and takes the params given (unless
        it takes ``**kwargs``): a clear error naming the JSON path if not."""
        for field, kind in COMPONENT_FIELDS.items():
            if getattr(self, field).type:
                func, params = self.get_component(kind)
                try:
                    signature = inspect.signature(func).parameters.values()
                except (TypeError, ValueError):  # a builtin or C function: nothing to check against
                    continue
                if any(p.kind is p.VAR_KEYWORD for p in signature):
                    continue
                named = [p.name for p in signature if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
                # every component but the loader gets the data as its first argument
                allowed = named if kind == "load_dataset" else named[1:]
                name = getattr(func, "__name__", "the function")
                check_keys(params, allowed, f"{self.json_path or self.name}.{field}", f"param of {name}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.user_script:
            out["user_script"] = self.user_script
        if self.script_dir:
            out["script_dir"] = self.script_dir
        for field in COMPONENT_FIELDS:
            comp = getattr(self, field)
            if comp.type or comp.params:
                out[field] = comp.to_json()
        if not self.split:
            out["split"] = False
        return out

    def for_role(self, role: str) -> DataConfig:
        """This config yielding only the samples of ``role`` (``"fit"`` or ``"judge"``; see
        :mod:`olive.data.split`)."""
        return attrs.evolve(self, role=role)

    def content_hash(self) -> str:
        """sha256 of what the samples are made of: this config with each file or folder it reads (``data_path``,
        ``data_dir``, ``user_script``, a plugin container's own files) replaced by its content's digest, and the
        role.

        Where the files lie is not part of it: the same data at another path (another machine, a Ray node's copy)
        reuses cached runs and evaluations, and an edited ``.npz`` is measured again.
        """
        files = self._files_read()
        digests = {}
        for name in files:
            try:
                digests[name] = {"sha256": hash_path(name)}
            except OSError:
                # A file that cannot be read stays named by its path (loading it fails with a clear error).
                continue
        form = _by_content(self.to_json(), digests)
        if self.script_dir:
            # Only what the user script imports from it counts, which no digest of the folder can tell.
            form["script_dir"] = Path(self.script_dir).name
        # A container may read files its config does not spell out (beside its data file): their digests count too.
        reads = [digests.get(name) for name in files]
        text = json.dumps({"config": form, "reads": reads, "role": self.role}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def _files_read(self) -> list[str]:
        files = [self.user_script] if self.user_script else []
        for field in COMPONENT_FIELDS:
            params = getattr(self, field).params
            files.extend(str(params[key]) for key in _PATH_PARAMS if isinstance(params.get(key), str))
        container = find_container(self.type) if self.type not in CONTAINER_DEFAULTS else None
        if container is not None:
            files.extend(str(name) for name in container.files(self))
        return files

    @property
    def where(self) -> str:
        """How error messages name this config."""
        return f"data config '{self.name}'" + (f" ({self.json_path})" if self.json_path else "")

    # ------------------------------------------------------------------------------------------ loading

    def get_component(self, kind: str) -> tuple[Callable[..., Any], dict[str, Any]]:
        """The function and params of component ``kind`` (``load_dataset``, ``pre_process_data``, ...)."""
        field = next(f for f, k in COMPONENT_FIELDS.items() if k == kind)
        comp: DataComponentConfig = getattr(self, field)
        if not comp.type and self.type not in CONTAINER_DEFAULTS:
            container = find_container(self.type)
            if container is not None and kind in container.components:
                return container.components[kind], dict(comp.params)
        name = comp.type or CONTAINER_DEFAULTS.get(self.type, {}).get(kind, COMMON_DEFAULTS.get(kind))
        if name is None:
            raise WorkflowConfigError(f"{field}.type is missing; name a function in user_script", owner=self.where)
        func = None
        if self.user_script and comp.type:
            module = load_user_script(self.user_script, self.script_dir, where=f"{self.where}.user_script")
            func = getattr(module, name, None)
            if func is None:
                func = Registry.get(kind, name)
            if func is None and name not in BUILTINS[kind]:
                get_user_function(module, name, f"{self.where}: {field}.type")
        if func is None:
            func = Registry.get(kind, name) or BUILTINS[kind].get(name)
        if func is None:
            raise WorkflowConfigError(
                f"{field}.type '{name}' is neither in user_script nor built in"
                f"{closest_match_hint(name, BUILTINS[kind])}",
                owner=self.where,
            )
        return func, dict(comp.params)

    def load_dataset(self) -> Any:
        """The dataset after ``load_dataset`` and ``pre_process_data`` (loaded once per config object)."""
        if self._dataset is None:
            func, params = self.get_component("load_dataset")
            if "data_dir" not in params and _accepts(func, "data_dir"):
                params["data_dir"] = None
            dataset = self._call(func, "load_dataset_config", (), params)
            func, params = self.get_component("pre_process_data")
            dataset = self._call(func, "pre_process_data_config", (dataset,), params)
            self._dataset = dataset if self.role is None else self._role_part(dataset)
        return self._dataset

    def _role_part(self, dataset: Any) -> SampleSubset:
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise OliveError(
                f"passes fit on it and metrics judge on it, and its dataset ({type(dataset).__name__}) has no length "
                'and indexing to split it by; give the metrics a data config of their own, or set "split": false '
                "to fit and judge on the same samples",
                owner=self.where,
            )
        try:
            fit, judge = split_indices(sample_lengths(dataset))
        except TooFewSamplesError as exc:
            if self.split_required:
                raise OliveError(shared_data_too_small(str(exc)), owner=self.where) from None
            _warn_unsplit(self, str(exc))
            fit = judge = list(range(len(dataset)))
        indices = fit if self.role == FIT else judge
        logger.debug("%s: %d of %d samples to %s", self.where, len(indices), len(fit) + len(judge), self.role)
        return SampleSubset(dataset, indices)

    def create_dataloader(self, batch_size: int | None = None) -> DataLoader:
        """A re-iterable loader yielding ``(inputs: dict[str, ndarray], labels | None)`` batches."""
        return DataLoader(self, batch_size)

    def to_data_container(self) -> DataContainer:
        """Microsoft Olive's entry point for passes: ``config.to_data_container().create_dataloader()``."""
        return DataContainer(self)

    def post_process(self, output: Any) -> Any:
        """Apply ``post_process_data`` to a model's outputs (for the accuracy metric)."""
        func, params = self.get_component("post_process_data")
        return self._call(func, "post_process_data_config", (output,), params)

    def _call(self, func: Callable[..., Any], field: str, args: tuple[Any, ...], params: dict[str, Any]) -> Any:
        try:
            return func(*args, **params)
        except OliveError as exc:
            raise type(exc)(str(exc), owner=self.where) from exc
        except Exception as exc:
            raise OliveError(
                f"{field} function '{getattr(func, '__name__', func)}' failed ({type(exc).__name__}: {exc}); check "
                "its params in the data config",
                owner=self.where,
            ) from exc


class DataContainer:
    """What Microsoft Olive passes call on a data config: the dataset, a loader, a calibration reader."""

    def __init__(self, config: DataConfig):
        self.config = config

    def load_dataset(self) -> Any:
        return self.config.load_dataset()

    def create_dataloader(self, batch_size: int | None = None, **kwargs: Any) -> DataLoader:
        return self.config.create_dataloader(batch_size)

    def create_calibration_dataloader(self, max_samples: int | None = None, **kwargs: Any) -> FeedReader:
        """An ``onnxruntime.quantization.CalibrationDataReader`` over the data."""
        return FeedReader(self.config, max_samples=max_samples)


class DataLoader:
    """Batches of a :class:`DataConfig`, normalized to ``(dict of numpy arrays, labels | None)``."""

    def __init__(self, config: DataConfig, batch_size: int | None = None):
        self.config = config
        self.batch_size = batch_size

    def __iter__(self) -> Iterator[tuple[dict[str, Any], Any]]:
        dataset = self.config.load_dataset()
        func, params = self.config.get_component("dataloader")
        if self.batch_size is not None:
            params["batch_size"] = self.batch_size
        loader = self.config._call(func, "dataloader_config", (dataset,), params)
        try:
            for batch in loader:
                yield normalize_batch(batch)
        except OliveError:
            raise
        except Exception as exc:
            raise OliveError(
                f"reading a batch failed ({type(exc).__name__}: {exc}); check the dataloader", owner=self.config.where
            ) from exc


def _check_npz_params(params: Mapping[str, Any], where: str) -> None:
    check_keys(params, _NPZ_LOAD_KEYS, where, "key for NpzDataContainer")
    if not (params.get("data_path") or params.get("data_dir")):
        raise config_error(f"{where}.data_path", "an NpzDataContainer needs the .npz file's path")
    if params.get("max_samples") is not None:
        whole_number(params["max_samples"], f"{where}.max_samples", minimum=0)


def _check_builtin_params(container: str, field: str, function: str | None, raw: Any, where: str) -> None:
    """The params of a component a built-in function serves are params that function takes."""
    kind = COMPONENT_FIELDS[field]
    name = function or CONTAINER_DEFAULTS.get(container, {}).get(kind) or COMMON_DEFAULTS.get(kind)
    func = BUILTINS[kind].get(name) if name else None
    if func is None or not isinstance(raw, Mapping):
        return
    named = [
        p.name
        for p in inspect.signature(func).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    # every component but the loader gets the data as its first argument
    allowed = named if kind == "load_dataset" else named[1:]
    nested = raw.get("params") if isinstance(raw.get("params"), Mapping) else {}
    flat = {k: v for k, v in raw.items() if k not in ("type", "name", "params")}
    check_keys(flat, allowed, where, f"param of {name}")
    check_keys(nested, allowed, f"{where}.params", f"param of {name}")


def as_data_config(data: Any, where: str = "data_config") -> DataConfig:
    """A :class:`DataConfig` from a DataConfig, its JSON form, or a path to an ``.npz`` file (a pass's param)."""
    if isinstance(data, DataConfig):
        return data
    if isinstance(data, Mapping):
        return DataConfig.from_json(data, json_path=where)
    if isinstance(data, str | Path) and str(data).endswith(".npz"):
        try:
            path = resolve_user_path(data)
        except UnusablePath as exc:
            raise PassConfigError(f"{data!r} cannot be a path: {exc}", owner=where) from None
        return DataConfig.from_json(
            {"name": path.stem, "type": "NpzDataContainer", "load_dataset_config": {"data_path": str(path)}},
            json_path=where,
        )
    raise PassConfigError(
        f"expected a DataConfig, a data config object or a path to an .npz file, got {data!r}"
        + (" (a data config name is only resolved inside a workflow)" if isinstance(data, str) else ""),
        owner=where,
    )


# The data configs (by content) already warned about in this process: the fitting and the judging part of one
# config each find it too small, and the workflow hears it once.
_WARNED_UNSPLIT: set[str] = set()


def _warn_unsplit(config: DataConfig, why: str) -> None:
    key = attrs.evolve(config, role=None).content_hash()
    if key in _WARNED_UNSPLIT:
        return
    _WARNED_UNSPLIT.add(key)
    logger.warning(
        "%s: passes fit on it and metrics judge on it, and it holds %s; both use every sample, so its quality "
        "figures measure the fit, not how the model does on samples it was not fit on (give more samples, give the "
        'metrics a data config of their own, or set "split": false to say so)',
        config.where,
        why,
    )


def _accepts(func: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in params


def _container_name(kind: Any) -> Any:
    """How a container type is spelled here, for a name written in another case (Microsoft Olive's registry
    ignores case: ``npzdatacontainer`` is ``NpzDataContainer``)."""
    if not isinstance(kind, str):
        return kind
    builtin = next((name for name in CONTAINER_DEFAULTS if name.lower() == kind.lower()), None)
    if builtin is not None:
        return builtin
    try:
        entry = container_registry().find(kind)
    except OliveError:
        return kind  # two distributions offer it: _container_for says so
    return entry.name if entry is not None else kind


def _container_for(kind: Any, json_path: str) -> Any:
    """The plugin container ``type`` names (None for a built-in one); an unknown type is a config error."""
    container = None
    if kind not in CONTAINER_DEFAULTS:
        try:
            container = find_container(str(kind))
        except PluginLoadError as exc:
            raise WorkflowConfigError(exc.reason, owner=f"{json_path}.type") from exc
        # One of this project's containers not installed, or a Microsoft Olive container none here provides.
        reason = unknown_container_reason(str(kind)) if container is None else None
        if reason is not None:
            raise WorkflowConfigError(reason, owner=f"{json_path}.type")
    if container is None:
        choice(kind, [*CONTAINER_DEFAULTS, *container_registry().names()], f"{json_path}.type", "data container")
    return container


def _scripts(data: Mapping[str, Any], json_path: str, base_dir: str | Path | None) -> tuple[str | None, str | None]:
    """The data config's ``user_script`` and ``script_dir``, as absolute paths that exist."""
    script_dir = data.get("script_dir")
    if script_dir is not None:
        script_dir = str(user_path(script_dir, f"{json_path}.script_dir", base_dir, must_exist=True, kind="folder"))
    user_script = data.get("user_script")
    if user_script is not None:
        # A user script is looked for in script_dir when one is given, as Olive does.
        user_script = str(
            user_path(user_script, f"{json_path}.user_script", script_dir or base_dir, must_exist=True, kind="file")
        )
    return user_script, script_dir


def _by_content(value: Any, digests: Mapping[str, Any]) -> Any:
    """``value`` (a config's JSON) with every string that names a file in ``digests`` replaced by its digest."""
    if isinstance(value, str):
        return digests.get(value, value)
    if isinstance(value, Mapping):
        return {key: _by_content(item, digests) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_by_content(item, digests) for item in value]
    return value
