"""Flink's temporal functions."""
from __future__ import annotations
