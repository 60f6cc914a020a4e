"""Properties of the whole reachable graph, as clients of the graph visitor: always-possibly,
liveness, lasso re-checks, and the graph's export.
"""
