"""Flink's hash functions: lower-case hexadecimal digests of a string's UTF-8 bytes."""
from __future__ import annotations

from job.sql.flink.functions import scalar
from job.sql.flink.typed import Typed
from job.sql.types import t

CATEGORY = "hash"


def _digest(call, sql: str, length: int):
    x = call.arg(0)
    call.need(0, "string", "binary")
    return Typed(sql.format(x=x.sql), t("CHAR", length, nullable=x.type.nullable))


@scalar("MD5", CATEGORY, "MD5(string)", "The MD5 hash as 32 hexadecimal digits.")
def md5(call):
    call.arity(1)
    return _digest(call, "md5({x})", 32)


@scalar("SHA1", CATEGORY, "SHA1(string)", "The SHA-1 hash as 40 hexadecimal digits.")
def sha1(call):
    call.arity(1)
    return _digest(call, "sha1({x})", 40)


for _name, _bits in [("SHA224", 224), ("SHA256", 256), ("SHA384", 384), ("SHA512", 512)]:
    scalar(_name, CATEGORY, f"{_name}(string)", f"The SHA-{_bits} hash in hexadecimal.")(
        lambda call, _b=_bits: (call.arity(1), _digest(call, f"sha2({{x}}, {_b})", _b // 4))[1])


@scalar("SHA2", CATEGORY, "SHA2(string, hashLength)", "The SHA-2 hash of 224, 256, 384 or 512 bits, in hexadecimal.")
def sha2(call):
    call.arity(2)
    bits = call.constant_int(1, "224, 256, 384 or 512")
    if bits not in (224, 256, 384, 512):
        call.refuse("SHA2's hash length must be 224, 256, 384 or 512")
    x = call.need(0, "string", "binary")
    return Typed(f"sha2({x.sql}, {bits})", t("VARCHAR", 128, nullable=x.type.nullable))
