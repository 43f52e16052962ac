"""What spark-submit must add for the Spark master a job's connection names.

The master decides where executors run, and so what they need brought to them:

- ``local`` / ``local[N]`` / ``local[*]`` (``LocalMaster``): driver and executors are one JVM on
  this machine. Delta goes on its classpath; tidemark's code is already there.
- ``spark://HOST:PORT[,HOST:PORT...]`` (``StandaloneMaster``): executors run on the workers,
  other machines that need not hold the checkout. Spark runs Python applications there only in
  client deploy mode, so the driver stays where spark-submit runs (the Airflow worker) and the
  executors connect back to it. The submit ships what the executors need: the Delta jars
  (``--jars``, fetched from the driver) and tidemark's packages as one zip (``--py-files``), so
  every executor runs exactly the code the driver runs, whatever tidemark version (or none) the
  worker has installed. The workers still need Java, Python and the project's dependencies
  (pyarrow, confluent-kafka, msgspec...) at the path ``PYSPARK_PYTHON`` names.
- any other master (``yarn``, ``k8s://...``; ``ClusterMaster``): the same shipped code and jars;
  its cluster manager's client reports its own failures.

No Airflow import here: the operator turns these errors into task failures.
"""

from __future__ import annotations

import socket
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

# The packages a Spark job's executors import (the source's reader, decode stage, core rules,
# Kafka client); the jobs' drivers import the same set. Never the embedded stack (stack/): a
# production job needs nothing of it, and tests/unit/test_spark_master.py holds them to that.
SHIPPED_PACKAGES = ("tidemark", "connectors", "spark_jobs")
# spark-submit itself retries an unreachable standalone master for 60 s (3 tries of 20 s,
# fixed in StandaloneAppClient) before "All masters are unresponsive! Giving up."; asking first
# fails the task within this many seconds, with what to check.
REACH_TIMEOUT_S = 5.0


class SparkConnectionError(ValueError):
    """The Spark connection asks for something Spark cannot do with this master."""


class SparkMasterUnreachable(ConnectionError):
    """No master of the connection accepted a TCP connection; the message says what to check."""


@dataclass(frozen=True)
class SubmitSettings:
    """What a submit adds: ``conf`` (spark properties), ``py_files`` and ``jars`` (local paths)."""

    conf: dict[str, str] = field(default_factory=dict)
    py_files: tuple[str, ...] = ()
    jars: tuple[str, ...] = ()


@dataclass(frozen=True)
class LocalMaster:
    """``local[...]``: one JVM on this machine runs the driver and the executors' tasks."""

    master: str

    def submit_settings(
        self, delta_classpath: str, delta_jars: Sequence[Path], project: Path, workspace: Path
    ) -> SubmitSettings:
        # Delta must be on the classpath when spark-submit starts the JVM, before any session.
        return SubmitSettings(
            conf={"spark.driver.extraClassPath": delta_classpath, "spark.executor.extraClassPath": delta_classpath}
        )


@dataclass(frozen=True)
class ClusterMaster:
    """A cluster manager that starts executors elsewhere (YARN, Kubernetes...)."""

    master: str

    def submit_settings(
        self, delta_classpath: str, delta_jars: Sequence[Path], project: Path, workspace: Path
    ) -> SubmitSettings:
        if not delta_jars:
            raise FileNotFoundError(
                f"No Delta jars to ship to the executors of {self.master} ({delta_classpath} is empty): "
                "run `tidemark jars` first."
            )
        return SubmitSettings(
            # The driver's JVM needs Delta when it starts; executors fetch the jars from the driver.
            # A classpath entry alone would name a folder that exists only on this machine.
            conf={"spark.driver.extraClassPath": delta_classpath},
            py_files=(str(package_code(project, workspace / "tidemark-code.zip")),),
            jars=tuple(str(jar) for jar in delta_jars),
        )


@dataclass(frozen=True)
class StandaloneMaster(ClusterMaster):
    """``spark://host:port[,host:port...]``, several for a master with standby masters.

    ``submit_settings`` first connects to the masters (at most ``REACH_TIMEOUT_S`` each) and
    raises ``SparkMasterUnreachable`` when none answers. The driver then advertises, and binds,
    the address of this machine on the route to the master that answered: the one network the
    executors, started by the master's workers, can be expected to share with it.
    """

    conn_id: str = "spark_default"

    @property
    def addresses(self) -> list[tuple[str, int]]:
        addresses = []
        for entry in self.master.removeprefix("spark://").split(","):
            host, _, port = entry.strip().rpartition(":")
            if not host or not port.isdigit():
                raise SparkConnectionError(
                    f"Spark master {self.master!r} (connection {self.conn_id!r}) is not spark://HOST:PORT: "
                    "set the connection's host to spark://HOST and its port to the master's port (7077 by default)."
                )
            addresses.append((host.strip("[]"), int(port)))
        return addresses

    def submit_settings(
        self, delta_classpath: str, delta_jars: Sequence[Path], project: Path, workspace: Path
    ) -> SubmitSettings:
        driver_address = self.reach()
        shipped = super().submit_settings(delta_classpath, delta_jars, project, workspace)
        return SubmitSettings(
            conf={**shipped.conf, "spark.driver.host": driver_address, "spark.driver.bindAddress": driver_address},
            py_files=shipped.py_files,
            jars=shipped.jars,
        )

    def reach(self, timeout_s: float = REACH_TIMEOUT_S) -> str:
        """This machine's address on the route to the first master that accepts a connection."""
        failures = []
        for host, port in self.addresses:
            try:
                with socket.create_connection((host, port), timeout=timeout_s) as connection:
                    return connection.getsockname()[0]
            except socket.gaierror:
                failures.append(f"the host name {host!r} does not resolve")
            except ConnectionRefusedError:
                failures.append(f"{host}:{port} refused the connection (nothing listens on port {port} there)")
            except TimeoutError:
                failures.append(
                    f"{host}:{port} did not answer within {timeout_s:.0f} s (host down, or packets dropped)"
                )
            except OSError as error:
                failures.append(f"{host}:{port}: {error.strerror or error}")
        ports = ", ".join(sorted({str(port) for _, port in self.addresses}))
        raise SparkMasterUnreachable(
            f"The Spark master {self.master} cannot be reached from {socket.gethostname()}: {'; '.join(failures)}. "
            f"Check that the master is running (its web UI, port 8080 by default, shows Status: ALIVE); "
            f"that the Airflow connection {self.conn_id!r} names it, host spark://HOST and the master's port "
            f"(7077 by default; not the web UI's); and that no firewall blocks port {ports} from this machine "
            "(nor, the other way, the driver's ports from the workers)."
        )


def spark_master(master: str, deploy_mode: str | None, conn_id: str) -> LocalMaster | ClusterMaster:
    """The strategy for ``master`` as the Spark provider resolved it from connection ``conn_id``.

    Raises ``SparkConnectionError`` for cluster deploy mode on a standalone master, which Spark
    refuses for Python applications.
    """
    if master == "local" or master.startswith("local["):
        return LocalMaster(master)
    if master.startswith("spark://"):
        if deploy_mode == "cluster":
            raise SparkConnectionError(
                f"The Airflow connection {conn_id!r} asks for deploy mode 'cluster' on the standalone master "
                f"{master}, which Spark refuses for Python applications: set the connection's extra to "
                '{"deploy-mode": "client"} (the driver then runs in the Airflow task, executors on the workers).'
            )
        return StandaloneMaster(master, conn_id=conn_id)
    return ClusterMaster(master)


def package_code(project: Path, target: Path) -> Path:
    """Zip the Python sources of ``SHIPPED_PACKAGES`` under ``project`` into ``target``.

    Sources only (no bytecode caches), sorted, so one checkout gives one zip. Spark puts it on
    the executors' Python path ahead of anything installed there.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for package in SHIPPED_PACKAGES:
            if not (project / package / "__init__.py").is_file():
                raise FileNotFoundError(
                    f"{project / package} is not a Python package: is {project} tidemark's checkout?"
                )
            for source in sorted((project / package).rglob("*.py")):
                if "__pycache__" not in source.parts:
                    archive.write(source, source.relative_to(project).as_posix())
    return target
