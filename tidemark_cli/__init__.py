"""The ``tidemark`` command line: the embedded stack (up, down, demo), a stream's partitions
(status), its latest quality report (report), and backfill and recovery runs (backfill,
recover) through the same Airflow DAGs and the same param validation as the UI.

An adapter like ``plugins/`` and ``spark_jobs/``: it imports the core (``tidemark``), the
shared clients (``connectors``) and the embedded stack (``stack``), never another adapter. Work
that needs Spark runs where the DAGs run it: in a DAG run, or in a spawned process.
"""
