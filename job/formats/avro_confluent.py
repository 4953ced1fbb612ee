"""avro-confluent: Avro records in Confluent's wire format, with a schema registry
(Flink's 'avro-confluent' format, for kafka and upsert-kafka keys and values).

A record is the magic byte 0, the writer schema's registry id (4 bytes, big-endian) and
one Avro datum in the binary encoding. The table's schema is the one Flink derives
(job/formats/avro.py): the record, which is what Flink registers.

Writing: the schema is registered under the subject ('avro-confluent.subject', by default
'<topic>-value' or '<topic>-key' as Flink names it) when the query starts, or only looked
up with 'avro-confluent.auto.register.schemas' = 'false', and its id heads every record.

Reading: each record's writer schema is fetched by its id (once per id) and resolved to
the table's schema by Avro's schema resolution, in the JVM (the engine's ConfluentAvro),
then decoded by spark-avro like an 'avro' record. A record that does not decode goes
through the table's bad-record policy. A registry that cannot be reached is one error
naming the table and the registry's address, with any credentials masked.
"""
from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Mapping, Optional

from job.errors import PipelineError
from job.formats import avro
from job.formats.base import Decoded, Format
from job.options import Option

CLASS = "streamsql.engine.formats.ConfluentAvro"
TIMEOUT_S = 30
# Context the kafka connector adds to this format's options (see Format.context).
TABLE, PART, TOPICS, OFFLINE = "@table", "@part", "@topics", "@offline"
# The format's name, for messages: 'debezium-avro-confluent' shares this module's registry
# options and client (its check and the kafka connector's context add it).
NAME = "@format"

REFUSED = ("schema", "schema-registry.schema", "bearer-auth.credentials-source", "bearer-auth.token",
           "ssl.keystore.location", "ssl.keystore.password", "ssl.truststore.location", "ssl.truststore.password",
           "properties.*")


def registry_options(auto_register: bool = True) -> tuple[Option, ...]:
    """The registry options of Flink's avro-confluent formats: 'avro-confluent' has
    'auto.register.schemas', 'debezium-avro-confluent' always registers."""
    return (
        Option("url", description="The URL of the Confluent Schema Registry to fetch/register schemas (required; "
                                  "'schema-registry.url' is its older name)."),
        Option("schema-registry.url", description="Older name of 'url'."),
        Option("subject", description="The subject the written schema is registered or looked up under (default: "
                                      "'<topic>-value' or '<topic>-key')."),
        Option("schema-registry.subject", description="Older name of 'subject'."),
    ) + ((Option("auto.register.schemas", "bool", default=True,
                 description="true: the table's schema is registered when a query writes; false: it must be "
                             "registered already, and is only looked up."),) if auto_register else ()) + (
        Option("basic-auth.credentials-source", description="USER_INFO (with 'basic-auth.user-info') or URL (the "
                                                            "credentials in the URL)."),
        Option("basic-auth.user-info", secret=True, description="'user:password' for the registry's basic auth."),
    ) + tuple(Option(name, secret="password" in name or "token" in name,
                     description="Refused by name: " + ("the schema is always the one Flink derives from the table."
                                                        if "schema" in name else "not supported yet."))
              for name in REFUSED)


OPTIONS = registry_options()


class RegistryError(PipelineError):
    """The schema registry could not be reached or refused a request."""


def masked(url: str) -> str:
    """The URL without the credentials a user may have written into it."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, "****@" + host, parts.path, parts.query, parts.fragment))


def _name(options) -> str:
    return options.get(NAME) or "avro-confluent"


def _url(options) -> Optional[str]:
    return options.get("url") or options.get("schema-registry.url")


def _subject(options) -> Optional[str]:
    return options.get("subject") or options.get("schema-registry.subject")


def on_kafka(options, connectors: str = "the 'kafka' and 'upsert-kafka' connectors") -> None:
    if TABLE not in options:  # the kafka connectors add it; the filesystem connector does not
        raise PipelineError(f"format '{_name(options)}' runs on {connectors} only "
                            "(Flink's filesystem use of it is not supported)")


def check(fields, options) -> None:
    """What Flink refuses, and what is not supported here, refused by option name."""
    name = _name(options)
    if not _url(options):
        raise avro.AvroTypeError(f"missing required option '{name}.url' (the schema registry's URL)")
    for key in options:
        if any(re.fullmatch(refused.replace(".", r"\.").replace("*", ".+"), key) for refused in REFUSED):
            raise avro.AvroTypeError(f"option '{name}.{key}' is not supported: the schema is always derived "
                                     "from the table, and the registry is reached over plain HTTP(S) with basic "
                                     "auth at most", option=key)
    source = options.get("basic-auth.credentials-source")
    if source is not None and source not in ("USER_INFO", "URL"):
        raise avro.AvroTypeError(f"'{name}.basic-auth.credentials-source' = '{source}' is not supported "
                                 "(USER_INFO or URL)", option="basic-auth.credentials-source")
    if source == "USER_INFO" and not options.get("basic-auth.user-info"):
        raise avro.AvroTypeError(f"'{name}.basic-auth.credentials-source' = 'USER_INFO' needs "
                                 f"'{name}.basic-auth.user-info'", option="basic-auth.credentials-source")
    avro.check(fields, {})


# --------------------------------------------------------------------------- registry

def _endpoint(options) -> tuple[str, Optional[str]]:
    """(the registry's URL without credentials, the Authorization header or None)."""
    url = _url(options).rstrip("/")
    parts = urllib.parse.urlsplit(url)
    source = options.get("basic-auth.credentials-source")
    user_info = options.get("basic-auth.user-info")
    if parts.username is not None:
        host = parts.hostname + (f":{parts.port}" if parts.port else "")
        url = urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
        if source in (None, "URL"):
            user_info = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
    if user_info is None or source not in (None, "USER_INFO", "URL"):
        return url, None
    return url, "Basic " + base64.b64encode(user_info.encode()).decode()


def _request(options, method: str, path: str, body: Optional[dict] = None) -> tuple[int, Any]:
    """(HTTP status, parsed body) of a registry request. Raises RegistryError naming the
    table and the registry (no credentials) when it cannot be reached."""
    url, auth = _endpoint(options)
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"Content-Type": "application/vnd.schemaregistry.v1+json",
                                          "Accept": "application/vnd.schemaregistry.v1+json, application/json"})
    if auth:
        req.add_header("Authorization", auth)
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"null")
        except ValueError:
            return exc.code, None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RegistryError(f"table '{options.get(TABLE)}': the schema registry at {masked(url)} cannot be reached: "
                            f"{reason}", hint=f"check '{_name(options)}.url' and that the registry is up") from None


def _refused(options, status: int, answer, doing: str) -> RegistryError:
    url, _ = _endpoint(options)
    message = answer.get("message") if isinstance(answer, dict) else None
    return RegistryError(f"table '{options.get(TABLE)}': the schema registry at {masked(url)} answered HTTP {status} "
                         f"{doing}" + (f": {message}" if message else ""))


def subject_of(options) -> str:
    subject = _subject(options)
    if subject:
        return subject
    topics = options.get(TOPICS) or []
    if len(topics) != 1:
        raise PipelineError(f"table '{options.get(TABLE)}': format '{_name(options)}' writes to one topic's "
                            f"subject: set '{_name(options)}.subject' (the table has no single 'topic')")
    return f"{topics[0]}-{options.get(PART, 'value')}"


# Ids of registered schemas by (registry, subject, schema, auto-register): a sink encodes
# every micro-batch, and asks the registry once per process, as Confluent's clients cache.
_IDS: dict[tuple, int] = {}


def schema_id(options, schema_text: str) -> int:
    """The registry id of ``schema_text`` under the table's subject: registered (Flink's
    default) or only looked up. 0 in a dry run, which contacts no registry."""
    if options.get(OFFLINE):
        return 0
    key = (_endpoint(options)[0], subject_of(options), schema_text, bool(options.get("auto.register.schemas", True)))
    if key not in _IDS:
        _IDS[key] = _schema_id(options, schema_text)
    return _IDS[key]


def _schema_id(options, schema_text: str) -> int:
    subject = urllib.parse.quote(subject_of(options), safe="")
    if options.get("auto.register.schemas", True):
        status, answer = _request(options, "POST", f"/subjects/{subject}/versions", {"schema": schema_text})
        doing = f"registering the table's schema under subject '{subject_of(options)}'"
    else:
        status, answer = _request(options, "POST", f"/subjects/{subject}", {"schema": schema_text})
        doing = (f"looking up the table's schema under subject '{subject_of(options)}' "
                 f"('{_name(options)}.auto.register.schemas' = 'false': it must be registered already)")
    if status != 200 or not isinstance(answer, dict) or "id" not in answer:
        raise _refused(options, status, answer, doing)
    return int(answer["id"])


def check_reachable(options) -> None:
    status, answer = _request(options, "GET", "/subjects")
    if status != 200:
        raise _refused(options, status, answer, "listing subjects")


# --------------------------------------------------------------------------- records

def registered_schema(schema) -> str:
    """The schema Flink derives and registers for the columns: the record itself (the
    table's row is NOT NULL, as with 'avro')."""
    return json.dumps(avro.schema_for(schema, {})[1])


def resolved(value, record: str, options):
    """``value`` (a record in Confluent's wire format) as struct<datum, error>: ``datum`` one
    Avro datum of ``record`` (the reader schema, as JSON) resolved from the record's writer
    schema in the JVM (the engine's ConfluentAvro), or ``error`` why it is none."""
    from pyspark.sql import SparkSession
    from pyspark.sql.classic.column import Column

    from job.changelog.jvm import static_call

    url, auth = _endpoint(options)
    spark = SparkSession.getActiveSession()
    column = "org.apache.spark.sql.Column"
    return Column(static_call(spark, CLASS, "decode", (column, value.cast("binary")._jc),
                              ("java.lang.String", url), ("java.lang.String", record),
                              ("java.lang.String", str(options.get(TABLE))), ("java.lang.String", auth)))


def parsed_datum(value, record: str, options):
    """(the decoded Avro struct of ``record`` or NULL, the error or NULL) of a Kafka value,
    after checking that the record's registry can be reached (not in a dry run)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    if not options.get(OFFLINE):
        check_reachable(options)
    datum = resolved(value, record, options)
    parsed = from_avro(datum["datum"], record, {"mode": "PERMISSIVE"})
    # The datum is the reader schema's by construction; spark-avro's PERMISSIVE NULL row
    # is what it makes of one it still cannot read.
    undecoded = datum["datum"].isNotNull() & parsed.isNull()
    error = F.when(datum["error"].isNotNull(), datum["error"]).when(
        undecoded, F.lit("the record's Avro datum does not decode into the table's schema"))
    return parsed, error


def header(options, schema_text: str) -> bytes:
    """Confluent's wire-format header: magic byte 0 and the schema's registry id."""
    return bytes([0]) + schema_id(options, schema_text).to_bytes(4, "big")


def decode(value, schema, options) -> Decoded:
    on_kafka(options)
    check([(f.name, avro._logical(f)) for f in schema.fields], options)
    parsed, error = parsed_datum(value, registered_schema(schema), options)
    return Decoded(avro.to_table(parsed, schema), error)


def encode(row, options, schema=None):
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import to_avro

    if schema is None:
        raise avro.AvroTypeError("the 'avro-confluent' format needs the table's column types to write records")
    on_kafka(options)
    check([(f.name, avro._logical(f)) for f in schema.fields], options)
    datum = to_avro(avro.to_avro_row(row, schema, {}), registered_schema(schema))
    return F.concat(F.lit(header(options, registered_schema(schema))), datum)


FORMAT = Format("avro-confluent", "Avro records in Confluent's wire format, with a schema registry.", OPTIONS,
                decode=decode, encode=encode, needs_schema=True, check=check, context=True)
