"""Flink's arithmetic functions."""
from __future__ import annotations
