"""Flink's collection functions."""
from __future__ import annotations
