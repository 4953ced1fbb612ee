"""Flink's JSON functions."""
from __future__ import annotations
