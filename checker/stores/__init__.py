"""Where a local search keeps what it has seen and what it will expand: the seen-set in memory, the
disk store, the frontier queues; ``registry`` names the stores a run may choose.
"""
