"""Airflow adapters of tidemark: operators that submit the Spark jobs and run the checks."""
