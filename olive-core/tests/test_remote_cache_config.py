"""The workflow's ``remote_cache`` key: its shape is checked with the rest of the config, before anything runs, and
a URL that holds credentials is refused without echoing them. (The remote cache itself is tested against a real S3
server in tests/cluster, the ``cluster`` tox environment.)"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from engine_support import base_workflow

from olive.cache.remote import RemoteCacheConfig, parse_remote_cache
from olive.cli.main import cli
from olive.exceptions import WorkflowConfigError
from olive.workflows.config import load_workflow_config


def test_a_url_or_an_object_is_accepted() -> None:
    assert parse_remote_cache("s3://bucket/prefix/") == RemoteCacheConfig("s3://bucket/prefix")
    assert parse_remote_cache({"url": "gs://b/p", "upload": False}) == RemoteCacheConfig("gs://b/p", upload=False)
    assert parse_remote_cache(None) is None


@pytest.mark.parametrize(
    ("value", "path", "words"),
    [
        ("bucket/prefix", "remote_cache.url", "scheme://bucket/prefix"),
        ("s3://", "remote_cache.url", "names no bucket"),
        ("s3://b/p?versionId=1", "remote_cache.url", "query"),
        ({"url": "s3://b", "region": "x"}, "remote_cache.region", "unknown key"),
        ({"url": "s3://b", "upload": "yes"}, "remote_cache.upload", "true or false"),
        (3, "remote_cache", "fsspec URL"),
    ],
)
def test_a_bad_value_names_its_field_and_the_fix(value: object, path: str, words: str) -> None:
    with pytest.raises(WorkflowConfigError) as info:
        parse_remote_cache(value)
    assert path in str(info.value) and words in str(info.value)


def test_credentials_in_the_url_are_refused_and_never_echoed() -> None:
    with pytest.raises(WorkflowConfigError) as info:
        parse_remote_cache("s3://AKIAEXAMPLE:s3cr3t@bucket/prefix")
    message = str(info.value)
    assert "remote_cache.url" in message and "AWS_ACCESS_KEY_ID" in message
    assert "s3cr3t" not in message and "AKIAEXAMPLE" not in message


def test_the_workflow_key_is_parsed_with_the_rest(tmp_path: Path) -> None:
    workflow = base_workflow(tmp_path, remote_cache="s3://team-bucket/olive")
    assert load_workflow_config(workflow).remote_cache == RemoteCacheConfig("s3://team-bucket/olive")
    with pytest.raises(WorkflowConfigError, match=r"remote_cache\.url"):
        load_workflow_config(base_workflow(tmp_path, remote_cache="s3://k:secret@b"))


def test_validating_a_workflow_with_a_remote_cache_imports_no_storage_library(tmp_path: Path) -> None:
    code = (
        "import sys; from olive.cache.remote import parse_remote_cache; parse_remote_cache('s3://b/p'); "
        "import olive.workflows.config, olive.cli.cache; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fsspec', 's3fs', 'botocore', 'ray')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cache_commands_check_the_remote_url() -> None:
    result = CliRunner().invoke(cli, ["cache", "info", "--remote", "s3://key:secret@bucket"])
    assert result.exit_code == 2
    assert "--remote" in result.output and "secret" not in result.output


def test_a_run_without_fsspec_stops_before_any_pass_naming_the_extra(tmp_path: Path, engine_registry: object) -> None:
    pytest.importorskip("onnx")
    if importlib.util.find_spec("fsspec") is not None:
        pytest.skip("fsspec is installed here (the cluster environment tests the remote cache itself)")
    import olive
    from olive.exceptions import OliveError

    with pytest.raises(OliveError, match=r"olive-core\[remote\]|remote\]"):
        olive.run(base_workflow(tmp_path, remote_cache="s3://team-bucket/olive"))
