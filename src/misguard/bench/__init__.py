"""Benchmarks: suites, judges, metrics and reports. Each writes a run log first."""
