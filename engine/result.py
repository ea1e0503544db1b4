"""What one executed statement hands back to a client (DB-API cursor, MySQL wire server, notebook)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import pyarrow as pa


@dataclass(frozen=True)
class ColumnInfo:
    """One result column as a client sees it.

    ``sql_type`` is the MySQL type name (``BIGINT``, ``DECIMAL``, ``VARCHAR``, ``DATE`` ...); the
    DB-API ``description`` and the wire protocol derive their type codes from it.
    """

    name: str
    arrow_type: pa.DataType
    sql_type: str
    nullable: bool = True
    precision: Optional[int] = None
    scale: Optional[int] = None
    display_size: Optional[int] = None


@dataclass
class Result:
    """The outcome of one statement.

    ``table`` is None for statements without a result set (DDL, INSERT, LOAD DATA); then ``rowcount``
    is the number of rows affected. For a query ``rowcount`` is the number of rows returned.
    """

    table: Optional[pa.Table]
    columns: list[ColumnInfo] = field(default_factory=list)
    rowcount: int = -1
    message: str = ""
    warnings: list[tuple[str, int, str]] = field(default_factory=list)  # (level, code, message)
    # EXPLAIN's plan as a picture for notebooks (engine.sql.plan_picture.PlanPicture); None otherwise
    picture: Optional[object] = None
    last_insert_id: Optional[int] = None     # the first AUTO_INCREMENT value an INSERT generated

    @property
    def has_rows(self) -> bool:
        return self.table is not None
