"""stack.compiled_pyspark: Spark's Python workers start with pyspark.zip first on PYTHONPATH; the
venv's .pth file takes that zip off the path, so they import the installed, compiled package."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from stack.compiled_pyspark import PATH_FILE, path_file_line, write_path_file

SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])


def _sparks_worker_path() -> list[str]:
    """The zips Spark puts first on a worker's PYTHONPATH: $SPARK_HOME/python/lib/*.zip, where
    SPARK_HOME is what PySpark finds (the installed package)."""
    from pyspark.find_spark_home import _find_spark_home

    lib = Path(_find_spark_home()) / "python" / "lib"
    zips = sorted(str(path) for path in lib.glob("*.zip"))
    assert any(path.endswith("pyspark.zip") for path in zips), zips
    return zips


def test_a_worker_started_with_sparks_zips_imports_the_compiled_package_and_keeps_the_rest(tmp_path):
    other_zip = tmp_path / "elsewhere" / "pyspark.zip"  # a zip of the same name elsewhere stays
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / PATH_FILE).write_text(path_file_line(SITE_PACKAGES))
    python_path = os.pathsep.join([*_sparks_worker_path(), str(other_zip), str(tmp_path)])
    # site.addsitedir runs the .pth file's import line exactly as start-up does for site-packages.
    script = (
        f"import site, sys; site.addsitedir({str(tmp_path / 'site')!r}); import pyspark, py4j; "
        "print(pyspark.__file__); print(py4j.__file__); print('\\n'.join(sys.path))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": python_path},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    pyspark_file, py4j_file, *path = shown
    assert pyspark_file == str(SITE_PACKAGES / "pyspark" / "__init__.py")
    assert ".zip" not in py4j_file
    assert not any(entry in path for entry in _sparks_worker_path())
    assert str(other_zip) in path and str(tmp_path) in path


def test_the_path_file_is_written_only_beside_an_installed_pyspark(tmp_path):
    with pytest.raises(SystemExit, match=str(tmp_path)):
        write_path_file(tmp_path)
    (tmp_path / "pyspark").mkdir()
    (tmp_path / "pyspark" / "__init__.py").write_text("")
    written = write_path_file(tmp_path)
    assert written == tmp_path / PATH_FILE
    assert written.read_text().startswith("import ")  # Python runs only the .pth lines that start so
    assert repr(os.path.realpath(tmp_path / "pyspark" / "python" / "lib")) in written.read_text()
