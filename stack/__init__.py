"""The embedded stack: real services on loopback for one machine, no Docker.

    python -m stack env            export lines for `eval "$(python -m stack env)"`
    python -m stack jars           download the pinned JVM jars once (Maven)
    python -m stack start [kafka|airflow]
    python -m stack stop  [kafka|airflow]
    python -m stack status
    python -m stack create-topic NAME --partitions N

Everything it writes lives under one git-ignored folder, ``$TIDEMARK_HOME`` (``.tidemark/`` in
the checkout). ``stack.environment`` is the one wiring module: every process of the stack
(Airflow, spark-submit, tests) takes its settings from ``embedded_environment()``.
"""
