"""The JVM jars tidemark's jobs and its embedded stack run with, fetched once with Maven from
connectors/jvm/pom.xml, and where each group of them lives.

The jobs need the layout (``jars_root``, ``group_jars``, ``delta_classpath``) in production,
where no embedded stack runs: it lives here with the connectors, not in ``stack/``. The embedded
stack's services (the broker, the loopback S3) run from the same folders; they are handed the
folder and never fetch (``tidemark up`` / ``tidemark jars`` fetch first).

Each group of the pom lands in its own folder under the jars root (``$TIDEMARK_JARS``,
default ``$TIDEMARK_HOME/jars``; tests point it at the checkout's copy so the jars are
downloaded once per machine, not once per test session):

    kafka/        the broker's classpath: java -cp "$TIDEMARK_JARS/kafka/*" kafka.Kafka ...
    delta/        for a Spark session's spark.jars: Delta Lake, S3A (hadoop-aws and the AWS SDK
                  modules it calls) and tidemark's LogStores (S3, local), built here from
                  connectors/jvm/log-stores (Maven compiles it and runs its unit tests)
    spark-kafka/  for a Spark session's spark.jars (Spark's own Kafka source, benchmark only)
    s3proxy/      the loopback S3's classpath: java -jar "$TIDEMARK_JARS/s3proxy/<jar>" ...
    registry/     the schema registry (Apicurio), unpacked as it ships: its runner jar beside lib/

Groups that go on a Spark classpath never get a jar whose artifact pyspark already ships in
pyspark/jars: a second, different version of Jackson, Hadoop or Scala next to Spark's own
fails at run time with NoSuchMethodError, far from the cause.

A group folder holds a stamp with a hash of the pom, of that exclusion list and of the sources
the group builds; while it matches, Maven is not run. Maven's local repository (~/.m2) is the download cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

# The checkout (or the installed tree): connectors/ sits at its top.
REPO_ROOT = Path(__file__).resolve().parent.parent
POM = Path(__file__).resolve().parent / "jvm" / "pom.xml"
GROUPS = ("kafka", "delta", "spark-kafka", "s3proxy", "registry")
# Groups that are one archive unpacked as it ships, not the pom's jars: Maven coordinates
# (group:artifact:version:type:classifier). Apicurio Registry 3.0.9, the last line that runs on
# Java 17 (3.3.x needs Java 21). Its parent POM is not on Maven Central, so it cannot be a pom
# dependency: maven-dependency-plugin 2.8's `get`, not transitive, fetches the archive itself.
ARCHIVES = {"registry": "io.apicurio:apicurio-registry-app:3.0.9:tar.gz:all"}
# What the default stack and the jobs need; the registry's archive (108 MB) only when asked for.
DEFAULT_GROUPS = tuple(group for group in GROUPS if group not in ARCHIVES)
SPARK_GROUPS = frozenset({"delta", "spark-kafka"})
# Java sources a group builds with its own pom and adds to its folder, by group.
BUILT = {"delta": REPO_ROOT / "connectors" / "jvm" / "log-stores"}
STAMP = ".stamp"
INSTALL_HINT = "install them with `apt-get install maven openjdk-17-jdk-headless`"
FETCH_HINT = "run `tidemark jars` first"


class JarsError(RuntimeError):
    """The jars cannot be fetched (Maven or Java missing, Maven failed) or a group is not there;
    the message says what to do."""


def jars_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$TIDEMARK_JARS``, else ``$TIDEMARK_HOME/jars``, else the checkout's ``.tidemark/jars``."""
    environ = os.environ if environ is None else environ
    if environ.get("TIDEMARK_JARS"):
        return Path(environ["TIDEMARK_JARS"])
    if environ.get("TIDEMARK_HOME"):
        return Path(environ["TIDEMARK_HOME"]) / "jars"
    return REPO_ROOT / ".tidemark" / "jars"


def shared_jars_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$TIDEMARK_JARS``, else the checkout's ``.tidemark/jars``, whatever ``TIDEMARK_HOME`` is.

    For test sessions, which keep their state in a temporary home but should not download
    the jars again each time.
    """
    environ = os.environ if environ is None else environ
    return Path(environ.get("TIDEMARK_JARS") or REPO_ROOT / ".tidemark" / "jars")


def group_jars(root: Path, group: str) -> list[Path]:
    """The jar files of one group, sorted; empty if not downloaded."""
    return sorted((root / group).glob("*.jar"))


def delta_classpath(environ: Mapping[str, str] | None = None) -> str:
    """Classpath entry for the Delta jars under ``$TIDEMARK_JARS`` (``TIDEMARK_JARS/delta/*``).

    A directory wildcard rather than a list: the DAG's operator passes it to spark-submit without
    listing files, and every Spark job's session puts it on its classpath. Both import it from
    here, the one module that knows the jars' layout. ``JarsError`` (a RuntimeError) when
    TIDEMARK_JARS is not set.
    """
    environ = os.environ if environ is None else environ
    jars = environ.get("TIDEMARK_JARS")
    if not jars:
        raise JarsError('TIDEMARK_JARS is not set: run `eval "$(tidemark env)"` or `make up` first')
    return f"{Path(jars) / 'delta'}/*"


def spark_jars(root: Path, groups: Iterable[str] = ("delta",)) -> str:
    """A comma-separated jar list for Spark's ``spark.jars`` / ``spark-submit --jars``.

    Raises ``JarsError`` if a group has not been downloaded.
    """
    paths: list[str] = []
    for group in groups:
        jars = group_jars(root, group)
        if not jars:
            raise JarsError(f"No jars in {root / group}; {FETCH_HINT}.")
        paths.extend(str(jar) for jar in jars)
    return ",".join(paths)


def ensure_jars(root: Path, groups: Iterable[str] = GROUPS) -> list[str]:
    """Make every group in ``groups`` present and current under ``root``.

    Idempotent: a group whose stamp matches is left alone. Returns the groups it downloaded.
    Raises ``JarsError`` if java or mvn is missing or Maven fails.
    """
    downloaded = []
    for group in groups:
        if group not in GROUPS:
            raise JarsError(f"Unknown jar group {group!r}; expected one of {', '.join(GROUPS)}.")
        excluded = _pyspark_artifacts() if group in SPARK_GROUPS else []
        stamp = _stamp(group, excluded)
        folder = root / group
        if (folder / STAMP).is_file() and (folder / STAMP).read_text() == stamp and group_jars(root, group):
            continue
        _require_tools(("java", "mvn", "javac") if group in BUILT else ("java", "mvn"))
        # Start from an empty folder so a version bump in the pom leaves no stale jar behind.
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        if group in ARCHIVES:
            _unpack_archive(group, folder)
        else:
            _run_maven(group, root, excluded)
        if group in BUILT:
            _build(BUILT[group], root / "build" / BUILT[group].name, folder)
        (folder / STAMP).write_text(stamp)
        downloaded.append(group)
    return downloaded


def _run_maven(group: str, root: Path, excluded: list[str]) -> None:
    command = [
        "mvn",
        "-q",
        "-B",
        "-f",
        str(POM),
        "-P",
        group,
        "dependency:copy-dependencies",
        f"-Dtidemark.jars={root}",
    ]
    if excluded:
        command.append(f"-DexcludeArtifactIds={','.join(excluded)}")
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()
        errors = [line for line in output if "ERROR" in line] or output
        detail = errors[0] if errors else f"exit code {result.returncode}"
        raise JarsError(f"Maven could not fetch the {group!r} jars (is Maven Central reachable?): {detail}")


def _unpack_archive(group: str, folder: Path) -> None:
    """Fetch the group's archive (ARCHIVES) through Maven's local repository and unpack it into ``folder``."""
    import tarfile

    archive = folder / "archive.tar.gz"
    command = ["mvn", "-q", "-B", "org.apache.maven.plugins:maven-dependency-plugin:2.8:get"]
    command += [f"-Dartifact={ARCHIVES[group]}", "-Dtransitive=false", f"-Ddest={archive}"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=folder)
    if result.returncode != 0 or not archive.is_file():
        output = (result.stdout + result.stderr).strip().splitlines()
        detail = next((line for line in output if "ERROR" in line), f"exit code {result.returncode}")
        raise JarsError(f"Maven could not fetch the {group!r} archive {ARCHIVES[group]}: {detail}")
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    archive.unlink()


def _build(project: Path, build_dir: Path, folder: Path) -> None:
    """Compile and unit-test the Maven project ``project`` and put its jar into ``folder``.

    It compiles against the Hadoop jars this venv's pyspark ships (``-Dpyspark.jars``): the
    ones that will run it. The build directory is outside the checkout.
    """
    command = [
        "mvn",
        "-q",
        "-B",
        "-f",
        str(project / "pom.xml"),
        "package",
        f"-Dpyspark.jars={_pyspark_jars_dir()}",
        f"-Dtidemark.build={build_dir}",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()
        detail = "\n".join(line for line in output if "ERROR" in line or "FAIL" in line) or "\n".join(output[-20:])
        raise JarsError(f"Building {project.relative_to(REPO_ROOT)} failed (mvn package):\n{detail}")
    for jar in build_dir.glob("*.jar"):
        shutil.copy2(jar, folder / jar.name)


def _require_tools(tools: tuple[str, ...] = ("java", "mvn")) -> None:
    # javac only where a group compiles sources: a JRE alone runs Maven but builds nothing.
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        raise JarsError(f"{' and '.join(missing)} not found on PATH; {INSTALL_HINT}.")


def _stamp(group: str, excluded: list[str]) -> str:
    digest = hashlib.sha256(POM.read_bytes())
    digest.update(group.encode())
    digest.update(",".join(excluded).encode())
    digest.update(ARCHIVES.get(group, "").encode())
    if group in BUILT:
        sources = BUILT[group]
        for path in sorted([sources / "pom.xml", *(sources / "src").rglob("*.java")]):
            digest.update(str(path.relative_to(sources)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest() + "\n"


def _pyspark_artifacts() -> list[str]:
    """Artifact ids of the jars pyspark ships, for Maven's excludeArtifactIds."""
    return sorted(artifact_candidates(jar.name for jar in _pyspark_jars_dir().glob("*.jar")))


def _pyspark_jars_dir() -> Path:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise JarsError("pyspark is not installed in this Python; run from the project's venv.")
    return Path(spec.origin).parent / "jars"


def artifact_candidates(jar_names: Iterable[str]) -> set[str]:
    """Possible artifact ids of jars named ``<artifactId>-<version>.jar``.

    Both halves may contain "-<digit>" (log4j-1.2-api-2.25.4.jar, zstd-jni-1.5.7-7.jar), so
    every prefix ending before a "-<digit>" is a candidate. The extra candidates are harmless
    as exclusions: no real artifact is named like a truncated one.
    """
    candidates = set()
    for name in jar_names:
        stem = name.removesuffix(".jar")
        for match in re.finditer(r"-\d", stem):
            candidates.add(stem[: match.start()])
    return candidates
