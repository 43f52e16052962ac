"""Peak resident memory of a job's whole process tree (the JVM and its Python workers)."""

from __future__ import annotations

import contextlib
import subprocess
import time


def wait_sampling_peak_rss(job: subprocess.Popen, interval_s: float = 0.5) -> int:
    """Wait for ``job`` to end; return the largest summed RSS (bytes) of it and its children,
    sampled every ``interval_s``. Sampling can miss a peak shorter than the interval."""
    import psutil

    peak = 0
    root = psutil.Process(job.pid)
    while job.poll() is None:
        with contextlib.suppress(psutil.Error):  # a worker exited between listing and sampling
            tree = [root, *root.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        time.sleep(interval_s)
    return peak
