"""The persist pipeline: one stream's log into its Delta tables, shared by live, recovery and backfill
(job.py is the live entry point; spark_jobs.replay holds the others)."""
