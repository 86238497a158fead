"""report.html as a reader sees it: rendered by a real headless Chromium at 1280 px, and read for figures that
agree with each other and with what ``olive optimize`` prints.

The run is real (the engine, onnxruntime timing in alternating rounds, agreement on samples): two small passes
record the checks a conversion and an accuracy guard record, under the same model attributes, so the report
has to tell a pass's own check from one copied along from an earlier pass.

Without Chromium the browser tests skip and say why, except where ``CI=true``: there they fail, and ``.ci/run``
installs it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from engine_support import base_workflow, size_metric, with_evaluator, write_calibration

import olive
from olive.hardware.accelerator import AcceleratorSpec
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model
from olive.plugins.registry import PassRegistry, use_registry
from olive.report import REPORT_FILE, load_report_data, write_report
from olive.report.data import FIT_PREFIX
from olive.search.search_parameter import Categorical

WIDTH = 1280
CONVERSION_CHECK = {"max_abs_diff": 3.1e-7, "cosine_min": 0.99999994, "cosine_mean": 1.0, "passed": True}
GUARD_FIT = {"cosine_min": 0.99971, "cosine_mean": 0.99993}
#: a searched value as long as real ones get (an op list, a nodes_to_exclude list): it must wrap, not widen
LONG_VALUE = "MatMul,Gemm,Attention,EmbedLayerNormalization,SkipLayerNormalization,FastGelu"


class ConvertAndCheckAgainstTheInputModel(Pass):
    """Copies the model and records a conversion's check of it, as ``OnnxConversion`` does."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return get_external_data_config()

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        output = model_proto_to_olive_model(model.load_model(), output_model_path, config)
        output.model_attributes = {**(model.model_attributes or {}), "conversion_check": dict(CONVERSION_CHECK)}
        return output


class AccuracyGuardedQuantizationStandIn(Pass):
    """Scales the output (``scale`` searched) and records an accuracy guard's figures on the samples it fit on,
    keeping the input model's attributes as every pass does (the conversion's check among them)."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "scale": PassConfigParam(type_=float, default_value=1.0, search_defaults=Categorical([1.0, 0.5])),
            "op_types_to_quantize": PassConfigParam(
                type_=str, default_value="MatMul", search_defaults=Categorical(["MatMul", LONG_VALUE])
            ),
            **get_external_data_config(),
        }

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        from onnx import helper, numpy_helper

        proto = model.load_model()
        graph = proto.graph
        if config.scale != 1.0:
            import numpy as np

            out_name = graph.output[0].name
            graph.initializer.append(numpy_helper.from_array(np.array(config.scale, dtype=np.float32), "/s/value"))
            for node in graph.node:
                node.output[:] = [f"{out_name}_raw" if o == out_name else o for o in node.output]
            graph.node.append(helper.make_node("Mul", [f"{out_name}_raw", "/s/value"], [out_name], name="/s/Mul"))
        output = model_proto_to_olive_model(proto, output_model_path, config)
        guard = {"achieved": dict(GUARD_FIT), "num_samples": 4, "fp32_nodes": ["/fc2/MatMul"], "target_met": True}
        output.model_attributes = {**(model.model_attributes or {}), "accuracy_guard": guard}
        return output


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp_path = tmp_path_factory.mktemp("report-browser")
    registry = PassRegistry(entry_points=False)
    registry.register(ConvertAndCheckAgainstTheInputModel, name="ConvertAndCheckAgainstTheInputModel")
    registry.register(AccuracyGuardedQuantizationStandIn, name="AccuracyGuardedQuantizationStandIn")
    workflow = base_workflow(
        tmp_path,
        passes={
            "convert": {"type": "ConvertAndCheckAgainstTheInputModel"},
            "quantize": {"type": "AccuracyGuardedQuantizationStandIn"},
        },
        search_strategy={"execution_order": "joint", "sampler": "sequential"},
        evaluate_input_model=True,
    )
    latency = {
        "name": "latency",
        "type": "latency",
        "data_config": "calib",
        "sub_types": [{"name": "ratio_p50", "priority": 1}, {"name": "p50"}],
        "warmup_num": 2,
        "repeat_test_num": 10,
    }
    agreement = {
        "name": "agreement",
        "type": "agreement",
        "data_config": "calib",
        "sub_types": [
            {"name": "cosine_mean", "priority": 3, "goal": {"type": "threshold", "value": 0.99}},
            {"name": "cosine_min"},
        ],
    }
    size = size_metric()
    size["sub_types"][0]["priority"] = 2
    data = write_calibration(tmp_path / "calib.npz")
    with use_registry(registry):
        output = olive.run(with_evaluator(workflow, latency, size, agreement, data=data))
    assert output.best is not None
    yield Path(output.output_dir)


class _Text(HTMLParser):
    """The text of a page, and of each element with a given class."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.feed(text)

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    @property
    def text(self) -> str:
        return " ".join("".join(self.parts).split())


def test_the_comparison_uses_the_paired_ratio_worded_as_olive_optimize_prints_it(out_dir: Path) -> None:
    data = load_report_data(out_dir)
    ratio = data.best["metrics"]["latency-ratio_p50"]["value"]
    page = (out_dir / REPORT_FILE).read_text(encoding="utf-8")
    summary = _Text(page.split('<div class="summary">', 1)[1].split("</div>", 1)[0]).text
    spread = data.best["metrics"]["latency-ratio_p50"]["noise"]
    assert (
        f"latency-ratio_p50: {ratio:.2f}x the input's median (the two timed in alternating rounds, "
        f"±{spread * 100:.0f}% between rounds)"
    ) in summary
    # Never the "1 → 0.83 (1.21x lower)" of a ratio compared with the baseline's 1, nor a p50 arrow.
    assert not re.search(r"latency-ratio_p50: 1 →", summary), summary
    assert "latency-p50" not in summary


def test_absolute_p50s_are_labelled_as_timed_apart(out_dir: Path) -> None:
    page = (out_dir / REPORT_FILE).read_text(encoding="utf-8")
    table = page.split('<table class="candidates', 1)[1].split("</table>", 1)[0]
    headers = re.findall(r'<th class="metric[^"]*" title="([^"]+)"[^>]*>(.*?)</th>', table)
    notes = {key: _Text(cell).text for key, cell in headers}
    keys = list(notes)
    assert keys[0] == "latency-ratio_p50", keys  # the ranking's latency comes first
    assert "times the input's median, the two timed in alternating rounds" in notes["latency-ratio_p50"]
    assert "each model timed apart: not comparable with the ratio" in notes["latency-p50"]
    assert keys[-1] == "latency-p50", keys  # away from the ratio, last
    assert re.search(r'<th class="metric apart" title="latency-p50"', table)
    # The guard's own figures stand beside the held-out ones, each saying which samples it is on.
    assert f"{FIT_PREFIX}cosine_min" in notes and "on the samples it fit on" in notes[f"{FIT_PREFIX}cosine_min"]
    assert re.search(r"on \d+ held-out sample\(s\)", notes["agreement-cosine_min"]), notes
    assert keys.index("agreement-cosine_min") < keys.index(f"{FIT_PREFIX}cosine_min")


def test_each_pass_run_shows_only_its_own_check(out_dir: Path) -> None:
    page = (out_dir / REPORT_FILE).read_text(encoding="utf-8")
    runs = page.split('<table class="runs">', 1)[1].split("</table>", 1)[0]
    checks: dict[str, list[str]] = {}
    for row in re.findall(r"<tr data-model-id=.*?</tr>", runs):
        key = re.search(r"<td><code>([^<]+)</code>: ", row).group(1)
        checks.setdefault(key, []).append(re.search(r'<td class="check">(.*?)</td>', row).group(1))
    [convert] = checks["convert"]
    assert convert.startswith("against its input model: max abs diff 3.1e-07") and "accuracy guard" not in convert
    # Every quantize run: its own guard figures, and never the conversion's check it carries along.
    assert len(checks["quantize"]) == 4
    for check in checks["quantize"]:
        assert check.startswith("accuracy guard: ") and "max abs diff" not in check and "input model" not in check
        assert "cosine_min 0.999710" in check and "on the 4 sample(s) it fit on" in check


# -------------------------------------------------------------------------------------------------
# In a real browser
# -------------------------------------------------------------------------------------------------
def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    reason = "no chromium on PATH (apt-get install chromium) to render report.html in"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}; CI must have it (.ci/run installs it)")
    pytest.skip(reason)


#: Runs in a copy of the page only: opens every config, then writes what the layout measured into the title.
_MEASURE = """<script>
document.querySelectorAll("details").forEach((d) => { d.open = OPEN; });
const body = document.body.getBoundingClientRect();
const edge = body.right - parseFloat(getComputedStyle(document.body).paddingRight);
const tables = [...document.querySelectorAll("table")].map((t) => Math.ceil(t.getBoundingClientRect().right));
document.title = JSON.stringify({scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
                                 edge: Math.floor(edge), tables: tables});
</script>"""


def _measure(chromium: str, page: Path, tmp_path: Path, open_details: bool) -> dict[str, Any]:
    probe = tmp_path / f"probe-{'open' if open_details else 'closed'}.html"
    script = _MEASURE.replace("OPEN", "true" if open_details else "false")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"), encoding="utf-8")
    result = subprocess.run(
        [chromium, "--headless", "--disable-gpu", "--no-sandbox", f"--window-size={WIDTH},900",
         "--run-all-compositor-stages-before-draw", "--virtual-time-budget=3000", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    title = re.search(r"<title>(\{.*?\})</title>", result.stdout)
    assert title, result.stdout[-2000:]
    return json.loads(title.group(1).replace("&quot;", '"'))


@pytest.mark.parametrize("open_details", [False, True], ids=["configs-closed", "configs-open"])
def test_the_report_fits_1280_px_in_chromium(out_dir: Path, tmp_path: Path, open_details: bool) -> None:
    chromium = _chromium()
    measured = _measure(chromium, out_dir / REPORT_FILE, tmp_path, open_details)
    assert measured["scroll"] <= min(WIDTH, measured["inner"]), measured  # no horizontal scrolling
    # and no table runs past the page's right margin
    assert max(measured["tables"]) <= measured["edge"] + 1, measured


def test_a_wider_search_still_fits_1280_px_in_chromium(out_dir: Path, tmp_path: Path) -> None:
    # Two more latency statistics, each both paired and timed apart: nine metric columns in all.
    chromium = _chromium()
    footprint = json.loads((out_dir / "footprint.json").read_text(encoding="utf-8"))
    for node in footprint["nodes"]:
        metrics = node.get("metrics") or {}
        if "latency-p50" in metrics:
            metrics["latency-p90"] = {**metrics["latency-p50"], "value": metrics["latency-p50"]["value"] * 1.5}
            metrics["latency-ratio_p90"] = dict(metrics["latency-ratio_p50"])
    wide = tmp_path / "wide"
    wide.mkdir()
    (wide / "footprint.json").write_text(json.dumps(footprint), encoding="utf-8")
    page = write_report(wide)
    assert len(load_report_data(wide).metric_keys()) == 9
    measured = _measure(chromium, page, tmp_path, open_details=True)
    assert measured["scroll"] <= min(WIDTH, measured["inner"]), measured
    assert max(measured["tables"]) <= measured["edge"] + 1, measured


def test_a_screenshot_at_1280_px_renders(out_dir: Path, tmp_path: Path) -> None:
    # The picture a reader gets; OLIVE_REPORT_SCREENSHOT=FILE keeps a copy to look at.
    chromium = _chromium()
    shot = tmp_path / "report.png"
    result = subprocess.run(
        [chromium, "--headless", "--disable-gpu", "--no-sandbox", f"--window-size={WIDTH},2600",
         "--hide-scrollbars", f"--screenshot={shot}", (out_dir / REPORT_FILE).as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    header = shot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(header[16:20], "big") == WIDTH
    keep = os.environ.get("OLIVE_REPORT_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)
