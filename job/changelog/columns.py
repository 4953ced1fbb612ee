"""The column names the engine's operators read and write beside a query's own columns:
defined once for Python (engine/…/Columns.java for Java; tests/changelog/test_spec_contract.py
checks the two agree). Every name but the upsert columns starts with ``__``, which no
query's own column does (they are renamed to fresh names when planned).
"""
from __future__ import annotations

SIGN = "__sign"                  # a signed row: +n adds n copies, -n retracts them
NET = "__net"                    # the sink's net effect of a row whose key emits no other ('+U', '-D' or NULL)
OP = "__op"                      # an upsert sink's change: '+U' (replace) or '-D' (delete)
RANK = "__rnk"                   # a Top-N row's rank
SIDE = "__side"                  # which input of a join a row comes from (0, 1, …)
POSITION_MAJOR = "__pos_major"   # a normalized change's position in its source (major part) …
POSITION_MINOR = "__pos_minor"   # … and minor part; kept for the order-dependent aggregates
SESSION_START = "__start"        # a session window's start (ms)
SESSION_END = "__end"            # and its end (ms)

# An upsert table's rows before normalization: the change kind ('+I', '+U', '-U', '-D')
# and the record's position in its source.
UPSERT_KIND = "kind"
UPSERT_MAJOR = "seq_major"
UPSERT_MINOR = "seq_minor"

ALL = {name: value for name, value in dict(globals()).items() if name.isupper() and isinstance(value, str)}
