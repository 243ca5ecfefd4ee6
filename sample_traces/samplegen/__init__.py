"""The sample-trace generator behind sample_traces/generate.py, one module per job (see generate.py)."""
