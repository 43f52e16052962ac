"""Entry points that replay offset ranges through the persist pipeline: recovery (recover.py) and
backfill (backfill.py, with its shadow comparison)."""
