"""A Spark standalone cluster for tests and benchmarks: one master and N workers started with
the PySpark distribution's own ``sbin/spark-daemon.sh`` (the pip PySpark has no
``start-master.sh``), and Python environments for its executors that do NOT have superop.

    with Standalone(tmp_dir, workers=2) as c:
        c.url                       # spark://127.0.0.1:PORT
    executor_env(dir, packages=("pandas", ...))   # a venv seeing only those packages
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
DAEMON = SPARK_HOME / "sbin" / "spark-daemon.sh"
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"
# what PySpark's mapInPandas needs on an executor (and what those import)
PANDAS_STACK = ("pandas", "numpy", "numpy.libs", "pyarrow", "pyarrow.libs", "dateutil", "pytz", "tzdata",
                "six.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Standalone:
    """Master + workers as daemons (see the module doc); stopped on exit, logs kept in ``dir``."""

    def __init__(self, directory: Path, workers: int = 2, cores: int = 1, memory: str = "1g"):
        self.dir = Path(directory)
        self.workers, self.cores, self.memory = workers, cores, memory
        self.port = _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON",
                                                                    "SPARK_CONF_DIR")}
        self.env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOG_DIR=str(self.dir / "logs"),
                        SPARK_PID_DIR=str(self.dir / "pids"), SPARK_WORKER_DIR=str(self.dir / "work"),
                        SPARK_IDENT_STRING=f"superop{self.port}", SPARK_DAEMON_MEMORY="256m",
                        SPARK_CONF_DIR=str(self.dir / "conf"))
        (self.dir / "conf").mkdir(parents=True, exist_ok=True)

    def _daemon(self, action: str, cls: str, instance: int, *args: str) -> None:
        subprocess.run(["bash", str(DAEMON), action, cls, str(instance), *args], env=self.env, check=True,
                       capture_output=True, timeout=120)

    def _log(self, cls: str, instance: int) -> str:
        logs = sorted((self.dir / "logs").glob(f"*{cls}-{instance}-*.out"))
        return logs[-1].read_text(errors="replace") if logs else ""

    def start(self, timeout: float = 240) -> "Standalone":
        self._daemon("start", MASTER, 1, "--host", "127.0.0.1", "--port", str(self.port),
                     "--webui-port", str(_free_port()))
        for i in range(1, self.workers + 1):
            self._daemon("start", WORKER, i, "--webui-port", str(_free_port()), "--cores", str(self.cores),
                         "--memory", self.memory, "--host", "127.0.0.1", self.url)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(re.findall(r"Registering worker", self._log(MASTER, 1))) >= self.workers:
                return self
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"the standalone cluster did not start in {timeout:.0f} s; logs in {self.dir / 'logs'}")

    def stop(self) -> None:
        for i in range(1, self.workers + 1):
            self._daemon("stop", WORKER, i)
        self._daemon("stop", MASTER, 1)

    def __enter__(self) -> "Standalone":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def executor_env(directory: Path, packages: tuple = PANDAS_STACK) -> Path:
    """A virtual environment (this Python, no pip) that sees only ``packages`` of the
    current environment — never superop or sqlglot — through symlinks. Returns its python."""
    directory = Path(directory)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True, timeout=120)
    py = directory / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    here = Path(sysconfig.get_paths()["purelib"])
    for name in packages:
        if (here / name).exists():
            (site / name).symlink_to(here / name)
    return py


def remove(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
