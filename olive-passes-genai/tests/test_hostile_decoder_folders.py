"""Damaged decoder folders and text through ``olive optimize``: each is one exit-2 line naming the file and the fix,
before anything is built, with nothing written in the output folder or the cache. Over 200 cases from one small
valid checkpoint (single-file and sharded), seeded: configs missing, garbled, of another model or an architecture
the builder does not convert; safetensors truncated anywhere, with garbled headers, bytes appended or shards
missing; tokenizers missing, garbled or of another vocabulary; text that is not UTF-8, or empty."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from olive.testing.decoders import held_out_text, save_decoder

Damage = Callable[[Path, random.Random], None]


def _truncate(name: str) -> Damage:
    def damage(folder: Path, rng: random.Random) -> None:
        path = folder / name if (folder / name).exists() else sorted(folder.glob(name))[0]
        data = path.read_bytes()
        path.write_bytes(data[: rng.randrange(0, len(data) - 1)])

    return damage


def _shard_truncated(folder: Path, rng: random.Random) -> None:
    shards = sorted(folder.glob("model-*-of-*.safetensors"))
    _truncate(rng.choice(shards).name)(folder, rng)


def _append(folder: Path, rng: random.Random) -> None:
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes() + bytes(rng.randrange(1, 4096)))


def _garble_header(folder: Path, rng: random.Random) -> None:
    path = folder / "model.safetensors"
    data = bytearray(path.read_bytes())
    length = int.from_bytes(data[:8], "little")
    for _ in range(rng.randrange(1, 8)):
        data[8 + rng.randrange(length)] = rng.choice(b'{}[]",:\x00\xff')
    path.write_bytes(bytes(data))


def _header_length(folder: Path, rng: random.Random) -> None:
    path = folder / "model.safetensors"
    data = bytearray(path.read_bytes())
    data[:8] = rng.choice([rng.randrange(2**40, 2**63), len(data) + rng.randrange(1, 999)]).to_bytes(8, "little")
    path.write_bytes(bytes(data))


def _config_text(text: Callable[[str, random.Random], str | bytes]) -> Damage:
    def damage(folder: Path, rng: random.Random) -> None:
        value = text((folder / "config.json").read_text(), rng)
        path = folder / "config.json"
        path.write_bytes(value if isinstance(value, bytes) else value.encode())

    return damage


def _config_field(field: str, values: Callable[[random.Random, dict], object]) -> Damage:
    def damage(folder: Path, rng: random.Random) -> None:
        config = json.loads((folder / "config.json").read_text())
        config[field] = values(rng, config)
        (folder / "config.json").write_text(json.dumps(config))

    return damage


def _remove(*patterns: str) -> Damage:
    def damage(folder: Path, rng: random.Random) -> None:
        for pattern in patterns:
            for path in folder.glob(pattern):
                path.unlink()

    return damage


def _other_tokenizer(folder: Path, rng: random.Random) -> None:
    from olive.testing.decoders import save_tokenizer

    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).unlink()
    save_tokenizer(folder, vocab_size=rng.choice([700, 900, 1200]))


def _index_damage(folder: Path, rng: random.Random) -> None:
    index = folder / "model.safetensors.index.json"
    data = json.loads(index.read_text())
    kind = rng.randrange(3)
    if kind == 0:
        index.write_text(index.read_text()[: rng.randrange(1, 40)])
        return
    names = sorted(data["weight_map"])
    if kind == 1:
        data["weight_map"][rng.choice(names)] = "model-00099-of-00099.safetensors"
    else:
        shards = sorted(set(data["weight_map"].values()))
        name = rng.choice(names)
        data["weight_map"][name] = rng.choice([s for s in shards if s != data["weight_map"][name]])
    index.write_text(json.dumps(data))


#: name -> (damage, cases, which source folder: single file or sharded)
DAMAGES: dict[str, tuple[Damage, int, str]] = {
    "safetensors truncated": (_truncate("model.safetensors"), 50, "single"),
    "shard truncated": (_shard_truncated, 20, "sharded"),
    "bytes appended": (_append, 8, "single"),
    "header garbled": (_garble_header, 25, "single"),
    "header length wrong": (_header_length, 10, "single"),
    "index damaged": (_index_damage, 15, "sharded"),
    "weights missing": (_remove("model.safetensors"), 2, "single"),
    "shard missing": (_remove("model-00002-of-*.safetensors"), 2, "sharded"),
    "config truncated": (_config_text(lambda t, r: t[: r.randrange(0, len(t) - 1)]), 15, "single"),
    "config not utf-8": (_config_text(lambda t, r: b"\xff\xfe" + t.encode()[r.randrange(0, 20) :]), 3, "single"),
    "config not an object": (_config_text(lambda t, r: r.choice(["[]", "3", '"llama"', "null"])), 4, "single"),
    "config missing": (_remove("config.json"), 1, "single"),
    "unknown architecture": (
        _config_field(
            "architectures", lambda r, c: [r.choice(["BertModel", "GPT2LMHeadModel", "T5ForConditionalGeneration"])]
        ),
        3,
        "single",
    ),
    "vocab size of another model": (
        _config_field("vocab_size", lambda r, c: c["vocab_size"] + r.randrange(1, 500)),
        10,
        "single",
    ),
    "hidden size of another model": (
        _config_field("hidden_size", lambda r, c: r.choice([32, 48, 96, 128])),
        8,
        "single",
    ),
    "intermediate size of another model": (
        _config_field("intermediate_size", lambda r, c: r.choice([96, 200, 352])),
        6,
        "single",
    ),
    "more layers than saved": (
        _config_field("num_hidden_layers", lambda r, c: c["num_hidden_layers"] + r.randrange(1, 3)),
        3,
        "single",
    ),
    "tokenizer missing": (_remove("tokenizer.json", "tokenizer_config.json"), 2, "single"),
    "tokenizer of a larger vocabulary": (_other_tokenizer, 6, "single"),
    "tokenizer garbled": (_config_text(lambda t, r: t), 0, "single"),  # replaced below
}


def _garble_tokenizer(folder: Path, rng: random.Random) -> None:
    path = folder / "tokenizer.json"
    text = path.read_text()
    path.write_text(text[: rng.randrange(1, len(text) - 1)])


DAMAGES["tokenizer garbled"] = (_garble_tokenizer, 8, "single")

CASES = [(name, seed) for name, (_, count, _) in DAMAGES.items() for seed in range(count)]
#: text files: (name, bytes)
TEXTS = [("latin-1", "café, naïve, déjà vu\n".encode("latin-1") * 40), ("utf-16", "some text\n".encode("utf-16") * 40)]
TEXTS += [(f"random bytes {i}", random.Random(i).randbytes(400) + b"\xff") for i in range(8)]
TEXTS += [("empty", b""), ("blank lines", b"\n \n\t\n")]


def test_there_are_at_least_200_cases():
    assert len(CASES) + len(TEXTS) >= 200


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    root = tmp_path_factory.mktemp("valid")
    single = save_decoder(root / "single", "qwen2", vocab_size=512)
    sharded = save_decoder(root / "sharded", "qwen2", vocab_size=512, max_shard_size="100KB")
    text = root / "text.txt"
    text.write_text(held_out_text(20_000).replace("\n\n", "\n") + "\n", encoding="utf-8")
    return {"single": single, "sharded": sharded, "text": text}


def _optimize(model: Path, data: Path, work: Path):
    from olive.cli.main import cli

    out, cache = work / "out", work / "cache"
    args = ["optimize", str(model), "--data", str(data), "-o", str(out), "--cache-dir", str(cache)]
    return CliRunner().invoke(cli, args, catch_exceptions=True), out, cache


def _assert_refused(result, out: Path, cache: Path, names: tuple[str, ...]) -> str:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    assert any(name in errors[0] for name in names), errors[0]
    assert not out.exists() or not any(out.iterdir())
    assert not (cache / "runs").exists() or not any((cache / "runs").iterdir())
    return errors[0]


@pytest.mark.parametrize(("damage", "seed"), CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_a_damaged_decoder_folder_is_one_exit_2_line_before_anything_is_built(sources, damage, seed, tmp_path):
    action, _, kind = DAMAGES[damage]
    folder = tmp_path / "model"
    shutil.copytree(sources[kind], folder)
    action(folder, random.Random(seed))
    result, out, cache = _optimize(folder, sources["text"], tmp_path)
    # The message names a file of the folder (or the folder) and says what to do.
    files = ("config.json", "safetensors", "tokenizer", str(folder), "model")
    line = _assert_refused(result, out, cache, files)
    assert ";" in line or " use " in line or " give " in line or " put " in line, line


@pytest.mark.parametrize(("name", "content"), TEXTS, ids=[n for n, _ in TEXTS])
def test_text_that_is_not_utf8_or_holds_nothing_is_one_exit_2_line(sources, name, content, tmp_path):
    data = tmp_path / "data.txt"
    data.write_bytes(content)
    result, out, cache = _optimize(sources["single"], data, tmp_path)
    _assert_refused(result, out, cache, ("data.txt",))
