"""Checkpoints: the file that holds a stopped search, and the writer and resume checks of a run."""
