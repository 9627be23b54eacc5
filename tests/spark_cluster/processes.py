"""Spark's own JVM processes for the cluster tests: a standalone master and
workers, and a Spark Connect server, all from the PySpark distribution
(``bin/spark-class``, ``sbin/start-connect-server.sh``) on 127.0.0.1.

Each process runs in its own process group, so stopping it also stops the
JVMs it started (a worker's executors); readiness is what the process
serves (the master's JSON status, the Connect port), never a fixed sleep."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

START_TIMEOUT = 180.0


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_environment(home: Path) -> dict[str, str]:
    """The environment of the JVMs (and so of every executor and Python
    worker they start): no AWS variable and a ``HOME`` with no ``~/.aws``,
    so nothing but the options a job passes can give a store credentials."""
    kept = {name: value for name, value in os.environ.items()
            if not name.startswith(("AWS_", "PYSPARK_", "SPARK_"))}  # fmt: skip
    home.mkdir(parents=True, exist_ok=True)
    return {**kept, "HOME": str(home), "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1"}


@dataclass
class JvmProcess:
    """One Spark process in its own group, its output in ``log``."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(cls, name: str, command: list[str], env: Mapping[str, str], log: Path) -> JvmProcess:
        with log.open("wb") as out:
            process = subprocess.Popen(command, env=dict(env), stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        return cls(name, process, log)

    def tail(self) -> str:
        lines = self.log.read_text(errors="replace").splitlines()[-40:]
        return f"--- {self.name} ({self.log}) ---\n" + "\n".join(lines)

    def stop(self) -> None:
        """SIGTERM to the whole group (the JVM and what it started), SIGKILL
        to what is left after 30 s."""
        for sent in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sent)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=30)
                if not _group_alive(self.process.pid):
                    return
            except subprocess.TimeoutExpired:
                pass


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for(what: str, ready: Callable[[], bool], processes: list[JvmProcess]) -> None:
    """Poll ``ready`` until true; fail with the processes' logs if one of
    them exits or ``START_TIMEOUT`` passes."""
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        dead = [p for p in processes if p.process.poll() is not None]
        if dead or time.monotonic() > deadline:
            for process in processes:
                process.stop()
            reason = f"{dead[0].name} exited" if dead else f"not ready within {START_TIMEOUT:.0f} s"
            pytest.fail(f"{what}: {reason}\n" + "\n".join(p.tail() for p in processes))
        time.sleep(0.2)


@dataclass
class StandaloneCluster:
    """A standalone master and ``workers`` workers of one core each."""

    url: str
    status_url: str
    processes: list[JvmProcess] = field(default_factory=list)

    @classmethod
    def start(cls, root: Path, workers: int = 2, worker_memory: str = "1g") -> StandaloneCluster:
        env = clean_environment(root / "home")
        spark_class = str(spark_home() / "bin" / "spark-class")
        port, ui = free_port(), free_port()
        cluster = cls(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}/json/")
        master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                  "--webui-port", str(ui)]  # fmt: skip
        try:
            cluster.processes.append(JvmProcess.start("master", [spark_class, *master], env, root / "master.log"))
            for number in range(workers):
                work = root / f"worker-{number}"
                work.mkdir(parents=True)
                worker = ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
                          "--memory", worker_memory, "--work-dir", str(work), "--webui-port", str(free_port()),
                          cluster.url]  # fmt: skip
                cluster.processes.append(JvmProcess.start(f"worker {number}", [spark_class, *worker], env,
                                                          root / f"worker-{number}.log"))  # fmt: skip
            wait_for(f"standalone cluster at {cluster.url}", lambda: cluster.alive_workers() == workers,
                     cluster.processes)  # fmt: skip
        except BaseException:
            cluster.stop()  # whatever failed, or interrupted the start, no JVM outlives the tests
            raise
        return cluster

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(self.status_url, timeout=5) as response:
                return int(json.load(response).get("aliveworkers", 0))
        except OSError:
            return 0

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()


@dataclass
class ConnectServer:
    """``sbin/start-connect-server.sh --wait`` on a free port of 127.0.0.1,
    its Python workers on ``python``."""

    url: str
    process: JvmProcess

    @classmethod
    def start(cls, root: Path, python: str, extra_env: Mapping[str, str]) -> ConnectServer:
        env = {**clean_environment(root / "home"), **extra_env, "SPARK_LOG_DIR": str(root),
               "SPARK_PID_DIR": str(root)}  # fmt: skip
        port = free_port()
        settings = {"spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": str(port),
                    "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                    "spark.ui.enabled": "false", "spark.pyspark.python": python}  # fmt: skip
        command = [str(spark_home() / "sbin" / "start-connect-server.sh"), "--wait", "--master", "local[2]"]
        for name, value in settings.items():
            command += ["--conf", f"{name}={value}"]
        server = cls(f"sc://127.0.0.1:{port}", JvmProcess.start("Spark Connect server", command, env,
                                                                root / "connect.log"))  # fmt: skip
        wait_for(f"Spark Connect server on port {port}", lambda: _listening(port), [server.process])
        return server

    def stop(self) -> None:
        self.process.stop()


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
