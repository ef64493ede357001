"""Benchmarks of pmctx's samplers: ``python -m benchmarks [NAME ...] [--quick]``."""
