"""What every part of the checker stands on: errors and exit codes, files written whole, safe text,
units, signals, the memory ceiling, directory owners, process-tree usage.
"""
