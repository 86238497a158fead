"""MatMulPieces and WeightSwapSession on a real decoder build: pieces assemble into the very model a whole-model
k-quant run writes; a piece dequantized is what its MatMulNBits kernel multiplies by; a weight swapped in a run moves
the logits and leaves the session's own weights alone. The fewest-keeps search: the smallest count, in few checks."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from olive_passes_genai.guarded_int4 import _fewest_keeps
from olive_passes_genai.prefill import prefill_feeds
from onnx import numpy_helper

from olive.testing import run_pass
from olive_passes_quant.k_quant import OnnxKQuantQuantization
from olive_passes_quant.matmul_pieces import MatMulPieces, WeightSwapSession


@pytest.fixture(scope="module")
def pieces(qwen2_fp32):
    return MatMulPieces(qwen2_fp32, block_size=32, accuracy_level=4, owner="test")


def _initializers(path) -> dict[str, np.ndarray]:
    model = onnx.load(str(path))
    return {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}


def test_pieces_assemble_into_the_model_a_whole_model_k_quant_run_writes(pieces, qwen2_fp32, tmp_path):
    names = list(pieces.targets)
    head = next(n for n in names if "lm_head" in n)
    bits = {n: 8 if n == head else 4 for n in names}
    assembled = pieces.assemble(bits, tmp_path / "assembled", {"save_as_external_data": True})
    config = {"block_size": 32, "accuracy_level": 4, "customized_weight_config": {head: {"bits": 8}}}
    whole = run_pass(OnnxKQuantQuantization, qwen2_fp32, config, output_dir=tmp_path / "whole")
    ours, theirs = _initializers(assembled.model_path), _initializers(whole.model_path)
    assert ours.keys() == theirs.keys()
    assert all(np.array_equal(ours[k], theirs[k]) for k in ours)
    nodes = {n.name: n for n in onnx.load(assembled.model_path, load_external_data=False).graph.node}
    other = {n.name: n for n in onnx.load(whole.model_path, load_external_data=False).graph.node}
    assert nodes.keys() == other.keys()
    assert all(nodes[k].SerializeToString() == other[k].SerializeToString() for k in nodes if "Q" in k)
    assert (assembled.folder / "genai_config.json").is_file()


def test_a_dequantized_piece_is_what_its_kernel_multiplies_by(qwen2_fp32):
    import onnxruntime as ort

    exact = MatMulPieces(qwen2_fp32, block_size=32, accuracy_level=None, owner="test")  # float compute
    name = next(iter(exact.targets))
    node, initializers = exact.piece(name, 4)
    weight = exact.weight(name)
    graph = exact._one_node(node, initializers, weight.shape, weight.dtype)
    x = np.random.default_rng(0).standard_normal((8, weight.shape[0])).astype(np.float32)
    kernel = ort.InferenceSession(graph.SerializeToString()).run(None, {node.input[0]: x})[0]
    np.testing.assert_allclose(x @ exact.dequantized(name), kernel, rtol=1e-4, atol=1e-4)
    assert not np.allclose(exact.dequantized(name), weight)  # int4 moved it


def test_a_swapped_weight_moves_the_logits_for_that_run_only(pieces, qwen2_fp32):
    feeds = prefill_feeds(qwen2_fp32, [np.arange(1, 17, dtype=np.int32)])[0]
    session = WeightSwapSession(pieces)
    name = next(iter(pieces.targets))
    base = session.logits(feeds)
    assert np.array_equal(session.logits(feeds, {name: pieces.weight(name)}), base)
    moved = session.logits(feeds, {name: pieces.dequantized(name)})
    assert not np.allclose(moved, base)
    assert np.array_equal(session.logits(feeds), base)


@pytest.mark.parametrize("needed", [0, 1, 2, 3, 7, 20, 41])
def test_the_fewest_keeps_are_found_in_a_few_checks(needed):
    asked: list[int] = []

    def check(count: int) -> bool:
        asked.append(count)
        return count >= needed

    count, held = _fewest_keeps(check, limit=41)
    assert (count, held) == (needed, True)
    assert len(asked) <= 2 * 6 + 1 and len(set(asked)) == len(asked)


def test_a_goal_no_count_reaches_ends_at_the_limit():
    asked: list[int] = []
    assert _fewest_keeps(lambda c: asked.append(c) or False, limit=10) == (10, False)
    assert asked == [0, 1, 2, 4, 8, 10]
    assert _fewest_keeps(lambda c: False, limit=0) == (0, False)


def test_a_large_weight_quantized_in_slices_of_columns_gives_the_same_piece(qwen2_fp32):
    whole = MatMulPieces(qwen2_fp32, block_size=32, accuracy_level=4, owner="test")
    sliced = MatMulPieces(qwen2_fp32, block_size=32, accuracy_level=4, owner="test")
    name = next(n for n in whole.targets if "lm_head" in n)
    sliced.chunk_elements = whole.weight(name).shape[0] * 7  # 7 columns a slice: an uneven last slice
    for bits in (4, 8):
        (node, inits), (other, other_inits) = whole.piece(name, bits), sliced.piece(name, bits)
        assert node.SerializeToString() == other.SerializeToString()
        assert [t.name for t in inits] == [t.name for t in other_inits]
        for a, b in zip(inits, other_inits, strict=True):
            np.testing.assert_array_equal(numpy_helper.to_array(a), numpy_helper.to_array(b))
