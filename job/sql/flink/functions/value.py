"""Flink's value construction and value access functions."""
from __future__ import annotations
