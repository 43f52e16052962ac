"""The offline-device detector: sealed events in, offline periods out (job.py is the entry point)."""
