"""Great Expectations suites over a stream's lake tables, per sealed hour and per source partition,
and the quality run that executes them and writes the reports (Data Docs, JSON and HTML summary).

Imports the core (tidemark), the shared connectors, GX, deltalake/pyarrow (a regular run, no
Spark) and pyspark (the sweep only); never spark_jobs or plugins.
"""
