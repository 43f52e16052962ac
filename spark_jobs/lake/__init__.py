"""The owners of a stream's Delta tables: the tables, the claims table and the overlap guard."""
