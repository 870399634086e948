"""Shared fixtures. GPU tests are marked `gpu` and skipped by default (see pyproject's addopts)."""
