"""The data generator: simulated scooter telemetry produced into the stream's Kafka topic.

Each partition gets a rate profile (steady, slow, heavy, bursty), so the failures tidemark
guards against (skewed partitions, a near-idle partition, bursts during catch-up) show up on
purpose. Every record's Kafka timestamp is its event time, and disorder within a partition is
bounded by the stream's max_out_of_orderness. Run it as ``python -m generator`` or
``tidemark-generate``; see ``generator/__main__.py``.
"""
