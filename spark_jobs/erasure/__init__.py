"""The erasure job: a person's records removed from the lake, and recorded so that no job writes them again."""
