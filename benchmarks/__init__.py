"""Benchmarks of the course's reference code (run with `make bench-engine`)."""
