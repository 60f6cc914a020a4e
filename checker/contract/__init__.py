"""The contract between a model and the engines (``protocol``), and how a model or a kernel that
breaks it is told apart from a verdict.
"""
