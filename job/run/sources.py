"""Before a run: the tables it uses, and whether their systems can be reached.

(Opening a table for reading is the plan's: job.plan.sources.)
"""
from __future__ import annotations

from typing import Optional

from job.connectors.base import BoundTable

CONNECT_TIMEOUT_S = 5.0


def tables_in_use(program) -> list[BoundTable]:
    """The tables a run reads or writes, dead-letter tables included, in catalog order
    (the catalog's bound tables)."""
    from job.catalog import short_name

    names: set[str] = {short_name(i.table).lower() for i in program.inserts}
    for reads in program.reads.values():
        names |= {n.lower() for n in reads}
    for name in list(names):
        bound = program.catalog.bound_table(name)
        options = bound.options if bound is not None else {}
        if options.get("on-error") == "dead-letter" and options.get("dead-letter.table"):
            names.add(short_name(options["dead-letter.table"]).lower())
    return [program.catalog.bound_table(key) for key in program.catalog.tables if key in names]


def check_endpoints(program, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Fail fast (exit 3) when none of the addresses of a table's endpoint (its
    connector's, e.g. Kafka's brokers) accepts a TCP connection.

    Kafka's own clients retry an unreachable broker until their timeouts expire (15 s for
    the admin preflight, a minute for a producer), and a sink is not contacted before its
    first write; one connect per address answers "is anything listening there" at once.
    Systems that accept the connection but misbehave are left to the clients.
    """
    import socket

    from job.connectors.registry import endpoints
    from job.errors import EXIT_UNREACHABLE
    from job.options import table_error

    tested: dict[str, Optional[str]] = {}
    for bound, endpoint in endpoints(tables_in_use(program)):
        value = endpoint.value
        if value not in tested:
            errors = []
            for host, port in endpoint.addresses:
                try:
                    socket.create_connection((host, port), timeout=timeout).close()
                    errors = []
                    break
                except OSError as exc:
                    errors.append(f"{host}:{port}: {exc.strerror or exc}")
            tested[value] = "; ".join(errors) if errors else None
        if tested[value]:
            raise table_error(bound.table, f"table '{bound.name}': '{endpoint.option}' = '{value}' cannot be reached "
                                           f"({tested[value]})", option=endpoint.option, exit_code=EXIT_UNREACHABLE,
                              hint=f"check that the {endpoint.kind} is running and the address is right")
