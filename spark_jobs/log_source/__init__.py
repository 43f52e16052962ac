"""Reading a partitioned log into Spark: the planning every source shares, the decode stage the
tasks run, and the two files the source and the persist job exchange beside the checkpoint
(the event-time feedback and the retention stop). The persist job imports from here; nothing
here imports the persist job."""
