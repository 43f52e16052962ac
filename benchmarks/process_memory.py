"""Peak resident memory of a job's whole process tree (the JVM and its Python workers).

Two measures. RSS summed over the tree, the figure the targets are written in, counts a page
shared by several processes once per process: Spark's Python workers are forked from one
daemon and share most of their pages (the interpreter, pyarrow, the project's modules), so the
sum overstates what the tree holds. PSS (proportional set size, Linux) charges a shared page to
its sharers in parts: the sum is the tree's real footprint. Both are sampled together, with the
RSS of each kind of process at the RSS peak, to say where the memory is.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from dataclasses import dataclass, field


@dataclass
class PeakMemory:
    """Peaks over a run, bytes: summed RSS, summed PSS (0 where the system has none), at the RSS
    peak the RSS per kind of process (jvm, the job's python, pyspark.daemon, its workers...), and
    per kind the most any one process of it held at any sample."""

    rss: int = 0
    pss: int = 0
    rss_by_kind_at_peak: dict[str, int] = field(default_factory=dict)
    largest_rss_by_kind: dict[str, int] = field(default_factory=dict)


def wait_sampling_peak_rss(job: subprocess.Popen, interval_s: float = 0.5) -> int:
    """Wait for ``job`` to end; return the largest summed RSS (bytes) of it and its children,
    sampled every ``interval_s``. Sampling can miss a peak shorter than the interval."""
    return wait_sampling_peak_memory(job, interval_s).rss


def wait_sampling_peak_memory(job: subprocess.Popen, interval_s: float = 0.5) -> PeakMemory:
    """Wait for ``job`` to end, sampling its process tree every ``interval_s``: see PeakMemory."""
    import psutil

    peak = PeakMemory()
    root = psutil.Process(job.pid)
    while job.poll() is None:
        samples = []
        with contextlib.suppress(psutil.Error):  # the job ended while its tree was listed
            for process in (root, *root.children(recursive=True)):
                # One process gone or a zombie (a launcher script that ended) loses that
                # process's sample, not the whole tree's.
                with contextlib.suppress(psutil.Error):
                    samples.append((_kind(process), *_rss_and_pss(process)))
        rss = sum(sample[1] for sample in samples)
        for kind, process_rss, _ in samples:
            peak.largest_rss_by_kind[kind] = max(peak.largest_rss_by_kind.get(kind, 0), process_rss)
        peak.pss = max(peak.pss, sum(sample[2] for sample in samples))
        if rss > peak.rss:
            peak.rss = rss
            peak.rss_by_kind_at_peak = {}
            for kind, kind_rss, _ in samples:
                peak.rss_by_kind_at_peak[kind] = peak.rss_by_kind_at_peak.get(kind, 0) + kind_rss
        time.sleep(interval_s)
    return peak


def _rss_and_pss(process) -> tuple[int, int]:
    try:
        info = process.memory_full_info()
        return info.rss, getattr(info, "pss", 0)
    except (AttributeError, PermissionError):  # no smaps for this process: RSS alone
        return process.memory_info().rss, 0


def _kind(process) -> str:
    """What a process of the tree is, from its command line: "jvm", a Python module run with
    ``-m`` (pyspark.daemon, pyspark.worker, ...), else the program's name (the job's python)."""
    command = process.cmdline()
    if not command:
        return process.name()
    if command[0].endswith("java"):
        return "jvm"
    if "-m" in command[:-1]:
        return command[command.index("-m") + 1]
    return command[0].rsplit("/", 1)[-1] + (f" {command[1].rsplit('/', 1)[-1]}" if len(command) > 1 else "")
