"""Model handlers: where a model lives and how to load or run it."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.config_errors import expect, quoted, user_path
from olive.exceptions import ModelLoadError, WorkflowConfigError, closest_match_hint
from olive.measure.sessions import create_session
from olive.model.onnx_facts import GraphFacts, find_onnx_file, graph_facts
from olive.model.onnx_scan import NUMPY_DTYPES, DecodeError, OnnxFileFacts, onnx_file_facts
from olive.paths import UnsafeName, check_plain_name

if TYPE_CHECKING:
    import onnx
    import onnx_ir
    import onnxruntime


class OliveModelHandler:
    """Base of every model handler: a location on disk plus free-form ``model_attributes``."""

    model_type: str = "OliveModel"
    #: Whether the evaluator runs the model itself: ``prepare_session`` gives a session (an onnxruntime one, or
    #: another runtime's with the same calls, see :func:`olive.measure.describe_session`). An input model that
    #: is evaluable is what every metric compares with; one that is not (PyTorch, Hugging Face) is compared
    #: through the first pass's output.
    evaluable: ClassVar[bool] = False

    def __init__(self, model_path: str | Path | None = None, model_attributes: Mapping[str, Any] | None = None):
        self._model_path = str(model_path) if model_path is not None else None
        self.model_attributes: dict[str, Any] = dict(model_attributes or {})

    @property
    def model_path(self) -> str | None:
        return self._model_path

    def to_json(self) -> dict[str, Any]:
        return {"type": self.model_type, "config": {"model_path": self._model_path, **self._extra_json()}}

    def _extra_json(self) -> dict[str, Any]:
        return {"model_attributes": self.model_attributes or None}

    @classmethod
    def from_config(cls, fields: Mapping[str, Any], json_path: str, base_dir: Path) -> OliveModelHandler:
        """Build the handler from a workflow's ``input_model`` fields (see :mod:`olive.model.types`)."""
        return cls(**signature_fields(cls, fields, json_path, base_dir))

    def validate(self) -> None:
        """A cheap check before any work; raises :class:`ModelLoadError` when the model cannot be used."""

    def content_hash(self) -> str | None:
        """The sha256 of what the model computes, or None to hash the file at ``model_path``."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model_path!r})"


class ONNXModelHandler(OliveModelHandler):
    """An ONNX model: a ``.onnx`` file, or a folder holding one (plus its external data).

    :param model_path: the ``.onnx`` file, or a folder containing it.
    :param onnx_file_name: the file's name inside a folder ``model_path`` (found automatically when the
        folder holds exactly one ``.onnx`` file).
    :param inference_settings: onnxruntime settings used to run it: ``execution_provider``,
        ``provider_options`` and ``session_options`` (``intra_op_num_threads``, ``inter_op_num_threads``,
        ``execution_mode``, ``graph_optimization_level``, ``extra_session_config``).
    :param model_attributes: free-form facts passes record about the model.
    """

    model_type = "ONNXModel"
    evaluable: ClassVar[bool] = True

    def __init__(
        self,
        model_path: str | Path,
        onnx_file_name: str | None = None,
        inference_settings: Mapping[str, Any] | None = None,
        use_ort_extensions: bool = False,
        external_initializers_file_name: str | None = None,
        constant_inputs_file_name: str | None = None,
        model_attributes: Mapping[str, Any] | None = None,
    ):
        if model_path is None or str(model_path) == "":
            raise ModelLoadError("an ONNX model needs a model_path: the .onnx file or the folder holding it")
        super().__init__(model_path, model_attributes)
        self.onnx_file_name = onnx_file_name
        self.inference_settings: dict[str, Any] | None = (
            copy.deepcopy(dict(inference_settings)) if inference_settings else None
        )
        self.use_ort_extensions = use_ort_extensions
        self.external_initializers_file_name = external_initializers_file_name
        self.constant_inputs_file_name = constant_inputs_file_name
        self._resolved_path: str | None = None
        # What the file's graph declares, read on first need and kept: the model of a workflow does not change
        # while the workflow is prepared and run, and a large graph is costly to walk.
        self._file_facts: OnnxFileFacts | None = None
        self._graph_facts: GraphFacts | None = None

    @classmethod
    def from_config(cls, fields: Mapping[str, Any], json_path: str, base_dir: Path) -> ONNXModelHandler:
        checked = signature_fields(
            cls, fields, json_path, base_dir, missing={"model_path": "give the .onnx file or the folder holding it"}
        )
        for key in ("onnx_file_name", "external_initializers_file_name", "constant_inputs_file_name"):
            if checked.get(key) is not None:
                expect(checked[key], str, f"{json_path}.{key}", "a file name string")
        for key in ("inference_settings", "model_attributes"):
            if checked.get(key) is not None:
                expect(checked[key], dict, f"{json_path}.{key}", "an object")
        if "use_ort_extensions" in checked:
            expect(checked["use_ort_extensions"], bool, f"{json_path}.use_ort_extensions", "true or false")
        return cls(**checked)

    @property
    def model_path(self) -> str:
        """The full path of the ``.onnx`` file."""
        if self._resolved_path is None:
            self._resolved_path = self._resolve_file()
        return self._resolved_path

    def _resolve_file(self) -> str:
        path = Path(self._model_path or "")
        if not path.exists():
            raise ModelLoadError(f"ONNX model '{path}' does not exist; check the model_path")
        if path.is_file():
            return str(path)
        if self.onnx_file_name:
            try:
                check_plain_name(self.onnx_file_name)
            except UnsafeName as exc:
                raise ModelLoadError(
                    f"onnx_file_name {quoted(self.onnx_file_name)} is not a file name in the folder '{path}' "
                    f"({exc}); give the name of the .onnx file in it"
                ) from None
            candidate = path / self.onnx_file_name
            if not candidate.is_file():
                raise ModelLoadError(
                    f"ONNX model folder '{path}' has no file '{self.onnx_file_name}'; fix onnx_file_name"
                )
            return str(candidate)
        return str(find_onnx_file(path))

    @property
    def model_dir(self) -> str:
        return str(Path(self.model_path).parent)

    def validate(self) -> None:
        """Check that the file exists and is an ONNX model with a graph (its weights are not read)."""
        facts = self._facts()
        # When the scan cannot decode it, onnx says what is wrong (or reads what the scan could not).
        has_graph = (
            facts.has_graph if facts is not None else self.load_model(load_external_data=False).HasField("graph")
        )
        # Protobuf parses an empty (or truncated-to-nothing) file as an empty ModelProto without complaint.
        if not has_graph:
            raise ModelLoadError(f"'{self.model_path}' is not a valid ONNX model (it holds no graph); check the file")

    def graph_facts(self) -> GraphFacts | None:
        """What the graph declares and holds (:mod:`olive.model.onnx_facts`), from the same read as every other
        fact of this handler; None when the scan cannot decode the file."""
        if self._graph_facts is None:
            facts = self._facts()
            if facts is None:
                return None
            self._graph_facts = graph_facts(facts)
        return self._graph_facts

    def _facts(self) -> OnnxFileFacts | None:
        """The file's graph inputs, outputs, nodes and external data locations, read without its weights (once
        per handler, and per file and process); None when the scan cannot decode it."""
        if self._file_facts is not None:
            return self._file_facts
        path = self.model_path
        try:
            self._file_facts = onnx_file_facts(path)
            return self._file_facts
        except (DecodeError, RecursionError):
            # Subgraphs nested past Python's stack (a hostile file): onnx's own parser refuses it, in its words.
            return None
        except OSError as exc:
            raise ModelLoadError(f"cannot read ONNX model '{path}' ({exc.strerror or exc}); check the file") from exc

    def load_model(self, load_external_data: bool = True) -> onnx.ModelProto:
        """Load the ``ModelProto`` (with its external data unless asked not to)."""
        import onnx

        path = self.model_path
        try:
            return onnx.load(path, load_external_data=load_external_data)
        except FileNotFoundError as exc:
            raise ModelLoadError(
                f"ONNX model '{path}' refers to external data that is missing ({exc.filename or exc}); "
                "keep the data files beside the model"
            ) from exc
        except Exception as exc:  # onnx raises DecodeError, ValueError or others for a non-ONNX file
            if load_external_data:
                missing = self._missing_external_data()
                if missing:
                    raise ModelLoadError(
                        f"ONNX model '{path}' refers to external data that is missing ({', '.join(missing)}); "
                        "keep the data files beside the model"
                    ) from exc
            raise ModelLoadError(
                f"'{path}' is not a valid ONNX model ({type(exc).__name__}: {exc}); check the file"
            ) from exc

    def load_ir_model(self) -> onnx_ir.Model:
        """Load the model as an ONNX IR model (``onnx_ir``, which onnxscript's ``ir`` is), external data included
        as it is read: Microsoft Olive's method of this name. Needs onnx-ir installed."""
        try:
            import onnx_ir
        except ImportError:
            raise ModelLoadError(
                "loading an ONNX IR model needs onnx-ir, which is not installed; install it with: pip install onnx-ir"
            ) from None
        path = self.model_path
        try:
            return onnx_ir.load(path)
        except Exception as exc:  # onnx_ir raises DecodeError, OSError or others for a file that is not ONNX
            raise ModelLoadError(f"'{path}' could not be read as an ONNX model ({type(exc).__name__}: {exc})") from exc

    def _missing_external_data(self) -> list[str]:
        try:
            return [f for f in self.external_data_files() if not Path(f).is_file()]
        except ModelLoadError:
            return []

    def external_data_files(self) -> list[str]:
        """Paths of the external data files the model refers to (reads the graph, not the weights)."""
        facts = self._facts()
        if facts is not None:
            locations = list(facts.external_locations)
        else:
            from onnx.external_data_helper import _get_all_tensors, uses_external_data

            proto = self.load_model(load_external_data=False)
            locations = []
            for tensor in _get_all_tensors(proto):
                if uses_external_data(tensor):
                    for entry in tensor.external_data:
                        if entry.key == "location" and entry.value not in locations:
                            locations.append(entry.value)
        return [str(Path(self.model_dir) / loc) for loc in locations]

    @property
    def size_on_disk(self) -> int:
        """Bytes of the model file plus its external data files."""
        path = Path(self.model_path)
        siblings = [p for p in path.parent.iterdir() if p != path]
        total = path.stat().st_size
        if not siblings:
            # Nothing beside the file can be external data; skip parsing the graph.
            return total
        return total + sum(Path(f).stat().st_size for f in self.external_data_files() if Path(f).exists())

    def get_io_config(self) -> dict[str, Any]:
        """Input/output names, shapes (ints or dim names) and numpy dtype names (reads the graph, not the weights)."""
        facts = self._facts()
        if facts is not None and all(v.elem_type in NUMPY_DTYPES for v in (*facts.inputs, *facts.outputs)):
            inputs = [v for v in facts.inputs if v.name not in facts.initializer_names]
            outputs = [v for v in facts.outputs if v.name not in facts.initializer_names]
            return {
                "input_names": [v.name for v in inputs],
                "input_shapes": [[d if isinstance(d, int) else (d or "?") for d in v.dims] for v in inputs],
                "input_types": [NUMPY_DTYPES[v.elem_type] for v in inputs],
                "output_names": [v.name for v in outputs],
                "output_shapes": [[d if isinstance(d, int) else (d or "?") for d in v.dims] for v in outputs],
                "output_types": [NUMPY_DTYPES[v.elem_type] for v in outputs],
            }
        import onnx

        proto = self.load_model(load_external_data=False)
        initializers = {init.name for init in proto.graph.initializer}

        def describe(values: Sequence[Any]) -> tuple[list[str], list[list[int | str]], list[str]]:
            names, shapes, types = [], [], []
            for value in values:
                if value.name in initializers:
                    continue
                tensor_type = value.type.tensor_type
                names.append(value.name)
                shapes.append(
                    [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor_type.shape.dim]
                )
                types.append(str(onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)))
            return names, shapes, types

        input_names, input_shapes, input_types = describe(proto.graph.input)
        output_names, output_shapes, output_types = describe(proto.graph.output)
        return {
            "input_names": input_names,
            "input_shapes": input_shapes,
            "input_types": input_types,
            "output_names": output_names,
            "output_shapes": output_shapes,
            "output_types": output_types,
        }

    def prepare_session(
        self,
        inference_settings: Mapping[str, Any] | None = None,
        device: str | None = None,
        execution_providers: Sequence[Any] | str | None = None,
        rank: int | None = None,
    ) -> onnxruntime.InferenceSession:
        """A real onnxruntime session for the model, using ``inference_settings`` (else the handler's own).

        ``execution_providers``, when given, replace the settings' providers. Sessions are made by
        :func:`olive.measure.create_session`; a bad setting is a :class:`ModelLoadError` naming it.
        """
        return create_session(self.model_path, inference_settings or self.inference_settings, execution_providers)

    def _extra_json(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.onnx_file_name:
            extra["onnx_file_name"] = self.onnx_file_name
        if self.inference_settings:
            extra["inference_settings"] = self.inference_settings
        if self.use_ort_extensions:
            extra["use_ort_extensions"] = True
        if self.external_initializers_file_name:
            extra["external_initializers_file_name"] = self.external_initializers_file_name
        if self.constant_inputs_file_name:
            extra["constant_inputs_file_name"] = self.constant_inputs_file_name
        if self.model_attributes:
            extra["model_attributes"] = self.model_attributes
        return extra


def signature_fields(
    cls: type,
    fields: Mapping[str, Any],
    json_path: str,
    base_dir: Path,
    path_fields: tuple[str, ...] = ("model_path",),
    missing: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``fields`` checked against ``cls.__init__``'s parameters, with ``path_fields`` resolved by the workflow's
    path rule (:func:`olive.paths.resolve_user_path`).

    Unknown keys and missing required parameters are :class:`WorkflowConfigError` naming the field (``missing``:
    what to write for a required one); a ``model_path`` that does not exist too.
    """
    params = {
        name: p
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    for key in fields:
        if key not in params:
            raise WorkflowConfigError(
                f"unknown key for {getattr(cls, 'model_type', cls.__name__)}{closest_match_hint(str(key), params)}; "
                f"valid keys: {', '.join(params)}",
                owner=f"{json_path}.{key}",
            )
    for name, param in params.items():
        if param.default is inspect.Parameter.empty and fields.get(name) is None:
            raise WorkflowConfigError(f"missing; {(missing or {}).get(name, 'add it')}", owner=f"{json_path}.{name}")
    result = dict(fields)
    for name in path_fields:
        if result.get(name) is not None:
            result[name] = str(user_path(result[name], f"{json_path}.{name}", base_dir, must_exist=True))
    return result
