"""Iceberg's Hadoop catalog, for pyiceberg: tables as directories of a warehouse.

PyIceberg has no Hadoop catalog, and it is the one Flink users start with
(``'catalog-type' = 'hadoop'``). Its layout is Iceberg's own (HadoopCatalog and
HadoopTableOperations in iceberg-core), so Flink, Spark, Trino and DuckDB read and write
the same tables:

    <warehouse>/<database>/<table>/metadata/v<N>.metadata.json   table metadata, version N
    <warehouse>/<database>/<table>/metadata/version-hint.text     N, a hint to the newest
    <warehouse>/<database>/<table>/data/...                       data files

A commit writes version N+1 to a temporary file and links it to ``v<N+1>.metadata.json``,
which fails when that name exists: of two writers committing on top of version N, one wins
and the other gets ``CommitFailedException`` (Iceberg's own protocol relies on an atomic
rename that refuses an existing target; a hard link gives that on a local filesystem).
Only local warehouses are served here (a path or a ``file:`` URI): object stores have no
such operation, which is why Iceberg itself warns against the Hadoop catalog on them.
"""
from __future__ import annotations

import os
import re
import uuid
from typing import Optional, Union
from urllib.parse import urlparse

from pyiceberg.catalog import MetastoreCatalog, PropertiesUpdateSummary
from pyiceberg.exceptions import (CommitFailedException, NamespaceAlreadyExistsError, NoSuchNamespaceError,
                                  NoSuchTableError, TableAlreadyExistsError)
from pyiceberg.serializers import FromInputFile, ToOutputFile
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.typedef import EMPTY_DICT, Identifier, Properties

VERSION_FILE = re.compile(r"^v(\d+)(\.gz)?\.metadata\.json$")


def local_path(location: str) -> str:
    """A warehouse location (path or file: URI) as a local path."""
    parsed = urlparse(location)
    return parsed.path if parsed.scheme == "file" else location


def is_local(location: str) -> bool:
    scheme = urlparse(location).scheme
    return scheme in ("", "file")


class HadoopCatalog(MetastoreCatalog):
    """Iceberg's HadoopCatalog layout on a local warehouse (see the module docstring)."""

    def __init__(self, name: str, warehouse: str, **properties: str) -> None:
        super().__init__(name, warehouse=warehouse, **properties)
        self.root = os.path.abspath(local_path(warehouse))

    # -- paths
    def _table_dir(self, identifier: Union[str, Identifier]) -> str:
        database, table = self.identifier_to_database_and_table(identifier)
        return os.path.join(self.root, database, table)

    def _version(self, metadata_dir: str) -> Optional[int]:
        """The newest version: the hint, then the next versions that exist past it
        (another writer may have committed without updating the hint yet)."""
        version = None
        try:
            with open(os.path.join(metadata_dir, "version-hint.text")) as f:
                version = int(f.read().strip())
        except (OSError, ValueError):
            found = [int(m.group(1)) for m in map(VERSION_FILE.match, _listdir(metadata_dir)) if m]
            version = max(found) if found else None
        if version is None:
            return None
        while os.path.exists(os.path.join(metadata_dir, f"v{version + 1}.metadata.json")):
            version += 1
        return version

    def _metadata_file(self, metadata_dir: str, version: int) -> str:
        plain = os.path.join(metadata_dir, f"v{version}.metadata.json")
        if os.path.exists(plain):
            return plain
        return os.path.join(metadata_dir, f"v{version}.gz.metadata.json")

    # -- tables
    def load_table(self, identifier: Union[str, Identifier]) -> Table:
        table_dir = self._table_dir(identifier)
        metadata_dir = os.path.join(table_dir, "metadata")
        version = self._version(metadata_dir)
        if version is None:
            raise NoSuchTableError(f"Table does not exist: {'.'.join(self.identifier_to_tuple(identifier))}")
        location = "file://" + self._metadata_file(metadata_dir, version)
        io = self._load_file_io(location=location)
        metadata = FromInputFile.table_metadata(io.new_input(location))
        return Table(identifier=self.identifier_to_database_and_table(identifier), metadata=metadata,
                     metadata_location=location, io=io, catalog=self)

    def create_table(self, identifier, schema, location=None, partition_spec=None, sort_order=None,
                     properties: Properties = EMPTY_DICT) -> Table:
        from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
        from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

        database, _name = self.identifier_to_database_and_table(identifier)
        if not os.path.isdir(os.path.join(self.root, database)):
            raise NoSuchNamespaceError(f"Namespace does not exist: {database}")
        table_dir = self._table_dir(identifier)
        staged = self._create_staged_table(identifier, schema, "file://" + table_dir,
                                           partition_spec or UNPARTITIONED_PARTITION_SPEC,
                                           sort_order or UNSORTED_SORT_ORDER, properties)
        if not self._publish(staged.metadata, staged.io, os.path.join(table_dir, "metadata"), 1):
            raise TableAlreadyExistsError(f"Table already exists: {database}.{_name}")
        return self.load_table(identifier)

    def commit_table(self, table: Table, requirements, updates) -> CommitTableResponse:
        current = self.load_table(table.name())
        staged = self._update_and_stage_table(current, table.name(), requirements, updates)
        if staged.metadata == current.metadata:
            return CommitTableResponse(metadata=current.metadata, metadata_location=current.metadata_location)
        metadata_dir = os.path.join(self._table_dir(table.name()), "metadata")
        version = int(VERSION_FILE.match(os.path.basename(current.metadata_location)).group(1)) + 1
        if not self._publish(staged.metadata, staged.io, metadata_dir, version):
            raise CommitFailedException(f"version {version} of table {'.'.join(table.name())} was committed "
                                        "by another writer")
        return CommitTableResponse(metadata=staged.metadata,
                                   metadata_location="file://" + self._metadata_file(metadata_dir, version))

    def _publish(self, metadata, io, metadata_dir: str, version: int) -> bool:
        """Write ``v<version>.metadata.json``; False when that version exists already."""
        os.makedirs(metadata_dir, exist_ok=True)
        tmp = os.path.join(metadata_dir, f".{uuid.uuid4()}.metadata.json.tmp")
        ToOutputFile.table_metadata(metadata, io.new_output("file://" + tmp))
        try:
            os.link(tmp, os.path.join(metadata_dir, f"v{version}.metadata.json"))
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
        hint_tmp = os.path.join(metadata_dir, f".{uuid.uuid4()}.version-hint.tmp")
        with open(hint_tmp, "w") as f:
            f.write(str(version))
        os.replace(hint_tmp, os.path.join(metadata_dir, "version-hint.text"))
        return True

    def table_exists(self, identifier) -> bool:
        return self._version(os.path.join(self._table_dir(identifier), "metadata")) is not None

    def drop_table(self, identifier) -> None:
        raise NotImplementedError("the Hadoop catalog here never drops tables")

    def purge_table(self, identifier) -> None:
        raise NotImplementedError("the Hadoop catalog here never drops tables")

    def rename_table(self, from_identifier, to_identifier) -> Table:
        raise NotImplementedError("a Hadoop catalog cannot rename tables")

    def register_table(self, identifier, metadata_location: str) -> Table:
        raise NotImplementedError("a Hadoop catalog cannot register tables")

    def list_tables(self, namespace) -> list[Identifier]:
        ns = self.identifier_to_tuple(namespace)
        base = os.path.join(self.root, *ns)
        return [ns + (t,) for t in sorted(_listdir(base))
                if os.path.isdir(os.path.join(base, t, "metadata"))]

    # -- namespaces: directories of the warehouse
    def create_namespace(self, namespace, properties: Properties = EMPTY_DICT) -> None:
        path = os.path.join(self.root, *self.identifier_to_tuple(namespace))
        if os.path.isdir(path):
            raise NamespaceAlreadyExistsError(f"Namespace already exists: {namespace}")
        os.makedirs(path, exist_ok=True)

    def drop_namespace(self, namespace) -> None:
        raise NotImplementedError("the Hadoop catalog here never drops databases")

    def list_namespaces(self, namespace=()) -> list[Identifier]:
        ns = self.identifier_to_tuple(namespace) if namespace else ()
        base = os.path.join(self.root, *ns)
        return [ns + (d,) for d in sorted(_listdir(base))
                if os.path.isdir(os.path.join(base, d)) and not os.path.isdir(os.path.join(base, d, "metadata"))]

    def load_namespace_properties(self, namespace) -> Properties:
        path = os.path.join(self.root, *self.identifier_to_tuple(namespace))
        if not os.path.isdir(path):
            raise NoSuchNamespaceError(f"Namespace does not exist: {namespace}")
        return {"location": "file://" + path}

    def update_namespace_properties(self, namespace, removals=None, updates=EMPTY_DICT) -> PropertiesUpdateSummary:
        raise NotImplementedError("a Hadoop catalog keeps no database properties")

    def list_views(self, namespace) -> list[Identifier]:
        return []

    def view_exists(self, identifier) -> bool:
        return False

    def drop_view(self, identifier) -> None:
        raise NotImplementedError("a Hadoop catalog has no views")

    def load_view(self, identifier):
        raise NotImplementedError("a Hadoop catalog has no views")

    def register_view(self, identifier, metadata_location: str):
        raise NotImplementedError("a Hadoop catalog has no views")


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []
