"""Flink's execution settings that change a plan, read from the pipeline's SET statements."""
from __future__ import annotations

from dataclasses import dataclass

from job.errors import PipelineError


@dataclass(frozen=True)
class Execution:
    """Flink's execution settings that change a plan (``SET 'table.exec.…'``)."""

    # table.exec.state.ttl: the stateful operators drop a key's state once it has not
    # been touched for this long (Flink's default 0: kept forever).
    state_ttl_ms: int = 0
    # table.exec.source.cdc-events-duplicate: a CDC source (debezium-json) with a PRIMARY
    # KEY may deliver an event twice; its changes are then normalized by key (Flink's
    # ChangelogNormalize) instead of trusted as they come.
    cdc_events_duplicate: bool = False

    @classmethod
    def from_conf(cls, conf) -> "Execution":
        from job.connectors.registry import parse_duration_ms

        conf = conf or {}
        ttl = 0
        text = str(conf.get("table.exec.state.ttl") or "").strip()
        if text:
            ttl = parse_duration_ms(text)
            if ttl is None:
                raise PipelineError(f"'table.exec.state.ttl' must be a duration such as '1 h' or '30 min', "
                                    f"got '{text}'")
        duplicate = str(conf.get("table.exec.source.cdc-events-duplicate", "false")).strip().lower()
        if duplicate not in ("true", "false"):
            raise PipelineError(f"'table.exec.source.cdc-events-duplicate' must be 'true' or 'false', got '{duplicate}'")
        return cls(state_ttl_ms=ttl, cdc_events_duplicate=duplicate == "true")
