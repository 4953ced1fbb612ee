"""Flink's hash functions."""
from __future__ import annotations
