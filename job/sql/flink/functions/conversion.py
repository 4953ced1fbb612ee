"""Flink's type conversion functions."""
from __future__ import annotations
