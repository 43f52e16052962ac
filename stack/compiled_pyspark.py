"""Spark's Python workers import the venv's compiled pyspark, not the copy in pyspark.zip.

Spark starts a Python process for each streaming query's source (the runner of a Python data
source), for each planning call of one, and a daemon per JVM, and it puts
``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip beside it) first on their PYTHONPATH. From
a zip Python compiles every module it imports, in every such process, and never caches it: the
streaming source's runner took 1.4 CPU-s to import here against 0.5 s from the compiled package
(2026-11-29, this 2-core machine), and Spark gives a worker a fixed 10 s to connect back, which a
busy machine made it miss. With pip's pyspark, SPARK_HOME is the installed package itself, so the
zip and the package are the same release: the installed, compiled package can serve.

``make install`` writes a ``.pth`` file into the venv's site-packages (Python runs its ``import``
line at every start-up, as setuptools' distutils-precedence.pth does) that takes exactly those
zips, the ones inside this venv's own pyspark package, off ``sys.path``; every other entry stays.

    .venv/bin/python -m stack.compiled_pyspark
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

PATH_FILE = "tidemark-compiled-pyspark.pth"


def zips_folder(site_packages: Path) -> str:
    """The folder of pyspark's zips inside the pyspark installed in ``site_packages``, resolved."""
    return os.path.realpath(site_packages / "pyspark" / "python" / "lib")


def path_file_line(site_packages: Path) -> str:
    """The ``.pth`` line: every ``sys.path`` entry that is a zip in ``zips_folder`` is dropped."""
    folder = zips_folder(site_packages)
    return (
        "import os, sys; sys.path[:] = [p for p in sys.path if not (p.endswith('.zip') and "
        f"os.path.dirname(os.path.realpath(p)) == {folder!r})]\n"
    )


def write_path_file(site_packages: Path) -> Path:
    """Write the ``.pth`` file into ``site_packages`` (which must hold pyspark); returns its path."""
    if not (site_packages / "pyspark" / "__init__.py").is_file():
        raise SystemExit(f"no pyspark installed in {site_packages}: nothing to point Spark's workers at")
    path = site_packages / PATH_FILE
    line = path_file_line(site_packages)
    if not path.is_file() or path.read_text() != line:
        path.write_text(line)
        print(f"Spark's Python workers import the compiled pyspark ({path})", file=sys.stderr)
    return path


def main() -> int:
    write_path_file(Path(sysconfig.get_paths()["purelib"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
