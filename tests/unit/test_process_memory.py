"""The benchmarks' memory sampler: summed RSS and PSS of a process tree, and who holds what."""

import subprocess
import sys
from pathlib import Path

from benchmarks.process_memory import wait_sampling_peak_memory

# A parent that starts a child with ``-m`` (as pyspark starts pyspark.daemon) and waits for it.
TREE = (
    "import subprocess, sys; "
    "subprocess.run([sys.executable, '-m', 'timeit', '-n', '1', '-r', '1', 'import time; time.sleep(1.5)'], check=True)"
)


def test_the_peak_of_a_process_tree_names_its_processes_and_counts_shared_pages_once():
    job = subprocess.Popen([sys.executable, "-c", TREE])
    peak = wait_sampling_peak_memory(job, interval_s=0.1)

    assert job.returncode == 0
    assert set(peak.rss_by_kind_at_peak) == {"timeit", f"{Path(sys.executable).name} -c"}, peak
    assert sum(peak.rss_by_kind_at_peak.values()) == peak.rss > 0
    assert set(peak.largest_rss_by_kind) == set(peak.rss_by_kind_at_peak)
    assert all(0 < peak.largest_rss_by_kind[kind] for kind in peak.largest_rss_by_kind)
    assert max(peak.largest_rss_by_kind.values()) <= peak.rss
    # Two interpreters share their libraries' pages: counted once, the tree holds less than the sum.
    assert 0 < peak.pss < peak.rss
