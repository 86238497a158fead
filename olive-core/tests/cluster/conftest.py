"""A two-node Ray cluster and an S3 server on this machine, started and stopped here.

- moto's S3 server on 127.0.0.1 (a subprocess, so a test can stop it mid-run);
- a Ray head (``ray start --head --block``) and a second Ray node started inside its own mount namespace
  (``unshare -m``) with an empty tmpfs over the folder that holds every engine cache of these tests, so the
  second node shares nothing with the engine but Ray. ``unshare`` needs root: elsewhere the tests skip with
  the reason, except where ``CI=true``, where they fail.

Every process here is started in a session of its own and stopped by its process group id.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

# Multi-node: the single-node switch the one-machine Ray tests set would keep the second node out. Every node is
# given --node-ip-address 127.0.0.1 instead, so nothing listens beyond loopback.
os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)

TESTS = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
BUCKET = "olive-test"
CREDENTIALS = {
    # moto accepts any; they live in the environment, where boto reads them.
    "AWS_ACCESS_KEY_ID": "OLIVETESTKEYID7F3A",
    "AWS_SECRET_ACCESS_KEY": "olive-test-secret-7f3a9c",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(proc: subprocess.Popen, grace: float = 10) -> None:
    """Stop a process started here, and its group (started with start_new_session)."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def unshare_reason() -> str | None:
    if os.geteuid() != 0:
        return "the second Ray node runs in its own mount namespace (unshare -m), which needs root"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare -m does not work here: {probe.stderr.strip()}"
    return None


def skip_or_fail(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"the cluster tests cannot run: {reason}")
    pytest.skip(reason)


@attrs.define
class S3Server:
    port: int
    proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2):
                return
            time.sleep(0.1)
        raise RuntimeError("moto's S3 server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, **_boto_credentials())


def _boto_credentials() -> dict[str, str]:
    return {
        "aws_access_key_id": CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        "region_name": CREDENTIALS["AWS_DEFAULT_REGION"],
    }


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = S3Server(_free_port())
    server.start()
    env = {**CREDENTIALS, "AWS_ENDPOINT_URL": server.endpoint, "FSSPEC_S3_ENDPOINT_URL": server.endpoint}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    import fsspec.config

    # fsspec reads FSSPEC_* at import; the server's port is known only now.
    fsspec.config.conf.setdefault("s3", {})["endpoint_url"] = server.endpoint
    server.client().create_bucket(Bucket=BUCKET)
    yield server
    server.stop()
    fsspec.config.conf.get("s3", {}).pop("endpoint_url", None)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@attrs.define
class Cluster:
    address: str
    caches: Path
    run_log: Path
    flags: Path
    head: subprocess.Popen
    node2: subprocess.Popen | None
    temp_dirs: list[Path]
    node2_log: Path = Path("/dev/null")
    node2_cmd: list[str] = attrs.Factory(list)
    node2_env: dict[str, str] = attrs.Factory(dict)

    def start_node2(self) -> None:
        self.node2 = subprocess.Popen(
            self.node2_cmd,
            env=self.node2_env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def stop_node2(self) -> None:
        if self.node2 is not None:
            _stop(self.node2)
            self.node2 = None

    def wait_nodes(self, count: int, timeout: float = 180) -> None:
        import ray

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sum(1 for node in ray.nodes() if node["Alive"]) == count:
                return
            time.sleep(0.3)
        tail = self.node2_log.read_text(errors="replace")[-2000:] if self.node2_log.exists() else ""
        raise RuntimeError(f"the Ray cluster did not reach {count} live node(s); the second node said:\n{tail}")


@pytest.fixture(scope="session")
def cluster(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reason = unshare_reason()
    if reason is not None:
        skip_or_fail(reason)
    pytest.importorskip("ray")
    caches = tmp_path_factory.mktemp("caches")
    run_log = tmp_path_factory.mktemp("log") / "runs.log"
    flags = tmp_path_factory.mktemp("flags")
    with launch_cluster(caches, run_log, flags) as made:
        yield made


@contextlib.contextmanager
def launch_cluster(caches: Path, run_log: Path, flags: Path, nodes: int = 2, cpus: int = 1) -> Iterator[Cluster]:
    """A Ray head and (``nodes=2``) a second node that sees an empty tmpfs over ``caches``; this process is
    connected to it while inside. Used by the tests and by benchmarks/bench_cluster.py."""
    import ray

    port = _free_port()
    # Short temp folders: Ray's socket paths must fit in 107 bytes.
    head_tmp, node_tmp = Path(tempfile.mkdtemp(prefix="olr")), Path(tempfile.mkdtemp(prefix="oln"))
    python_path = os.pathsep.join([str(TESTS), str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    common = {
        **os.environ,
        "PYTHONPATH": python_path,
        "OLIVE_TEST_RUN_LOG": str(run_log),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",
    }
    ray_bin = str(BIN / "ray")
    flags_common = ["--num-cpus", str(cpus), "--disable-usage-stats", "--block", "--node-ip-address", "127.0.0.1"]
    head_cmd = [ray_bin, "start", "--head", "--port", str(port), "--include-dashboard", "false"]
    head = subprocess.Popen(
        [*head_cmd, "--temp-dir", str(head_tmp), *flags_common],
        env={**common, "OLIVE_TEST_NODE": "head"},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    address = f"127.0.0.1:{port}"
    # The second node: an empty tmpfs over the engine caches' folder, and its own cache inside it.
    inner = " ".join([ray_bin, "start", "--address", address, "--temp-dir", str(node_tmp), *flags_common])
    script = f"mount -t tmpfs olive-node2 '{caches}' && exec {inner}"
    made = Cluster(address, caches, run_log, flags, head, None, [head_tmp, node_tmp], run_log.parent / "node2.log")
    made.node2_cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", script]
    made.node2_env = {**common, "OLIVE_TEST_NODE": "node2", "OLIVE_WORKER_CACHE_DIR": str(caches / "node2-cache")}
    try:
        _wait_port(port, head)
        if nodes > 1:
            made.start_node2()
        # Pass work in this process (sequential and process executors) is logged too.
        os.environ.update({"RAY_AUTH_MODE": "disabled", "OLIVE_TEST_RUN_LOG": str(run_log)})
        ray.init(
            address=address,
            runtime_env={"env_vars": {"PYTHONPATH": python_path, "OLIVE_TEST_RUN_LOG": str(run_log)}},
            log_to_driver=False,
            configure_logging=False,
        )
        made.wait_nodes(nodes)
        yield made
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()
        made.stop_node2()
        _stop(head)
        for folder in made.temp_dirs:
            shutil.rmtree(folder, ignore_errors=True)


def _wait_port(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the Ray head did not start")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.2)
    raise RuntimeError("the Ray head did not open its port")
