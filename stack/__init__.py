"""The embedded stack: real services on loopback for one machine, no Docker.

It has no command line of its own; the ``tidemark`` CLI drives it:

    tidemark env                   export lines for `eval "$(tidemark env)"`
    tidemark jars                  download the pinned JVM jars once (Maven)
    tidemark up   [kafka|s3|airflow]
    tidemark down [kafka|s3|airflow]
    tidemark services              whether each service runs (exit 3 if one does not)
    tidemark create-topic NAME --partitions N

Everything it writes lives under one git-ignored folder, ``$TIDEMARK_HOME`` (``.tidemark/`` in
the checkout). ``stack.environment`` is the one wiring module: every process of the stack
(Airflow, spark-submit, tests) takes its settings from ``embedded_environment()``.
"""
