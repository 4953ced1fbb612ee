"""A small schema registry speaking the part of Confluent's REST API that Flink's
'avro-confluent' format, confluent-kafka's Python serializer and the job use, for tests.

No schema registry server installs from the package registries this project reaches, so
tests run this one in a thread. It is proven against two real clients
(tests/connectors/test_format_avro_confluent.py): confluent-kafka's AvroSerializer
registers and writes through it, and Flink 2.3's avro-confluent format registers, looks
up and fetches schemas through it.

What it serves, as Confluent's registry does:
  POST /subjects/{s}/versions         register (the existing id if the schema is known)
  POST /subjects/{s}                  look a schema up under a subject (40401 / 40403)
  GET  /schemas/ids/{id}              a schema by id ({"schema": ...})
  GET  /schemas/ids/{id}/versions     the (subject, version) pairs of an id
  GET  /subjects, /subjects/{s}/versions, /subjects/{s}/versions/{v|latest}
  GET/PUT /config, /config/{s}        compatibility, always NONE (any schema registers)
A schema's identity is its text with insignificant whitespace removed, so a schema sent
twice, by any client, gets one id. ``basic_auth`` ("user:password") makes every request
need that Authorization header (401 otherwise), to test that credentials are sent.
"""
from __future__ import annotations

import base64
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def _canonical(schema: str) -> str:
    try:
        return json.dumps(json.loads(schema), separators=(",", ":"), sort_keys=True)
    except ValueError:
        return schema


class SchemaRegistry:
    """The registry's state: schemas by id, and per subject its versions (ids)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.schemas: dict[int, str] = {}          # id -> schema text as first registered
        self.ids: dict[str, int] = {}              # canonical text -> id
        self.subjects: dict[str, list[int]] = {}   # subject -> ids, version n at n-1
        self.requests: list[tuple[str, str]] = []  # (method, path), for tests to assert on

    def register(self, subject: str, schema: str) -> int:
        with self.lock:
            key = _canonical(schema)
            sid = self.ids.get(key)
            if sid is None:
                sid = len(self.schemas) + 1
                self.schemas[sid] = schema
                self.ids[key] = sid
            versions = self.subjects.setdefault(subject, [])
            if sid not in versions:
                versions.append(sid)
            return sid

    def lookup(self, subject: str, schema: str) -> Optional[tuple[int, int]]:
        """(id, version) of ``schema`` under ``subject``, or None."""
        with self.lock:
            sid = self.ids.get(_canonical(schema))
            versions = self.subjects.get(subject, [])
            return (sid, versions.index(sid) + 1) if sid in versions else None


class _Handler(BaseHTTPRequestHandler):
    registry: SchemaRegistry
    basic_auth: Optional[str] = None

    def log_message(self, *args):  # quiet in test output
        pass

    def _send(self, status: int, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, code: int, message: str) -> None:
        self._send(status, {"error_code": code, "message": message})

    def _authorized(self) -> bool:
        if self.basic_auth is None:
            return True
        expected = "Basic " + base64.b64encode(self.basic_auth.encode()).decode()
        if self.headers.get("Authorization") == expected:
            return True
        self._error(401, 40101, "Unauthorized")
        return False

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def _path(self) -> list[str]:
        from urllib.parse import unquote, urlparse

        return [unquote(p) for p in urlparse(self.path).path.strip("/").split("/") if p]

    def do_GET(self):  # noqa: N802 (http.server's naming)
        reg = self.registry
        reg.requests.append(("GET", self.path))
        if not self._authorized():
            return
        p = self._path()
        if p[:2] == ["schemas", "ids"] and len(p) >= 3 and p[2].isdigit():
            sid = int(p[2])
            if sid not in reg.schemas:
                return self._error(404, 40403, f"Schema {sid} not found")
            if len(p) == 4 and p[3] == "versions":
                return self._send(200, [{"subject": s, "version": v.index(sid) + 1}
                                        for s, v in reg.subjects.items() if sid in v])
            return self._send(200, {"schema": reg.schemas[sid]})
        if p == ["subjects"]:
            return self._send(200, sorted(reg.subjects))
        if len(p) >= 3 and p[0] == "subjects" and p[2] == "versions":
            versions = reg.subjects.get(p[1])
            if not versions:
                return self._error(404, 40401, f"Subject '{p[1]}' not found.")
            if len(p) == 3:
                return self._send(200, list(range(1, len(versions) + 1)))
            v = len(versions) if p[3] == "latest" else int(p[3]) if p[3].isdigit() else 0
            if not 1 <= v <= len(versions):
                return self._error(404, 40402, f"Version {p[3]} not found.")
            sid = versions[v - 1]
            return self._send(200, {"subject": p[1], "version": v, "id": sid, "schema": reg.schemas[sid]})
        if p and p[0] == "config":
            return self._send(200, {"compatibilityLevel": "NONE"})
        self._error(404, 404, "Not found")

    def do_POST(self):  # noqa: N802
        reg = self.registry
        reg.requests.append(("POST", self.path))
        if not self._authorized():
            return
        p = self._path()
        body = self._body()
        schema = body.get("schema")
        if body.get("schemaType", "AVRO") != "AVRO" or not isinstance(schema, str):
            return self._error(422, 42201, "Invalid schema")
        if len(p) == 3 and p[0] == "subjects" and p[2] == "versions":
            return self._send(200, {"id": reg.register(p[1], schema)})
        if len(p) == 2 and p[0] == "subjects":
            if p[1] not in reg.subjects:
                return self._error(404, 40401, f"Subject '{p[1]}' not found.")
            found = reg.lookup(p[1], schema)
            if found is None:
                return self._error(404, 40403, "Schema not found")
            return self._send(200, {"subject": p[1], "id": found[0], "version": found[1], "schema": schema})
        if p and p[0] == "compatibility":
            return self._send(200, {"is_compatible": True})
        self._error(404, 404, "Not found")

    def do_PUT(self):  # noqa: N802
        self.registry.requests.append(("PUT", self.path))
        if not self._authorized():
            return
        body = self._body()
        if self._path()[:1] == ["config"] and re.fullmatch(r"[A-Z_]+", str(body.get("compatibility", ""))):
            return self._send(200, {"compatibility": body["compatibility"]})
        self._error(422, 42203, "Invalid compatibility level")


class RegistryServer:
    """The registry on 127.0.0.1 at a free port, in a daemon thread; a context manager."""

    def __init__(self, basic_auth: Optional[str] = None):
        self.registry = SchemaRegistry()
        handler = type("Handler", (_Handler,), {"registry": self.registry, "basic_auth": basic_auth})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "RegistryServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
