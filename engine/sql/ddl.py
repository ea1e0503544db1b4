"""CREATE / DROP / SHOW / DESCRIBE: catalog statements."""
from __future__ import annotations

from typing import Optional

import pyarrow as pa
from sqlglot import exp

from engine import types as T
from engine.catalog import Catalog, ColumnDef, TableDef
from engine.errors import BadDataError, BindError, TypeMismatchError, UnsupportedError
from engine.exec.evaluate import fold_constant
from engine.plan.binder import Binder, ExprContext
from engine.plan.expressions import Call, Literal
from engine.plan.scope import Scope
from engine.result import ColumnInfo, Result
from engine.sql.parser import TableOptions


def table_def_from_create(node: exp.Create, options: TableOptions, database: str, catalog: Catalog) -> TableDef:
    """The TableDef of ``CREATE TABLE name (columns..., keys...)``."""
    schema = node.this
    if not isinstance(schema, exp.Schema):
        raise UnsupportedError("CREATE TABLE without a column list (CREATE TABLE ... AS SELECT is handled apart)")
    table = schema.this
    columns: list[ColumnDef] = []
    primary_key: tuple[str, ...] = ()
    binder = Binder(catalog, database)
    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            column, is_primary = column_def(item, binder)
            if any(c.name.lower() == column.name.lower() for c in columns):
                raise BindError(f"duplicate column name {column.name!r}")
            columns.append(column)
            if is_primary:
                primary_key = (column.name,)
        elif isinstance(item, exp.PrimaryKey):
            primary_key = tuple(e.name for e in item.expressions)
        elif isinstance(item, (exp.IndexColumnConstraint,)):
            if item.args.get("kind") and str(item.args["kind"]).upper() in ("UNIQUE", "FULLTEXT", "SPATIAL"):
                raise UnsupportedError(f"{str(item.args['kind']).upper()} keys are not supported")
            continue            # plain KEY / INDEX: secondary indexes are not built; the data is columnar
        elif isinstance(item, exp.UniqueColumnConstraint):
            raise UnsupportedError("UNIQUE constraints are not supported (they would not be enforced)")
        else:
            raise UnsupportedError(f"table element {item.sql(dialect='mysql')[:60]} in CREATE TABLE")
    if not columns:
        raise BindError(f"table {table.name!r} must have at least one column")
    names = {c.name.lower(): c.name for c in columns}
    if primary_key:
        # a primary key column is NOT NULL (uniqueness is not enforced; see README)
        columns = [ColumnDef(c.name, c.type, False, c.default, c.has_default) if c.name.lower() in
                   {k.lower() for k in primary_key} else c for c in columns]

    def resolve(keys: tuple[str, ...], what: str) -> tuple[str, ...]:
        out = []
        for k in keys:
            if k.lower() not in names:
                from engine.errors import unknown_name_error
                raise unknown_name_error("column", k, list(names.values()), f"the {what} of {table.name}")
            out.append(names[k.lower()])
        return tuple(out)

    if options.reference:
        if options.shard_key:
            raise BindError("a REFERENCE table has no SHARD KEY: it is copied to every leaf")
        shard_key: tuple[str, ...] = ()
    elif options.shard_key is not None:
        shard_key = resolve(options.shard_key, "SHARD KEY")
    else:
        shard_key = resolve(primary_key, "PRIMARY KEY")    # SingleStore shards by the primary key by default
    sort_key = resolve(options.sort_key, "SORT KEY")
    db = table.db or database
    return TableDef(db, table.name, tuple(columns), shard_key, sort_key, options.reference)


def column_def(node: exp.ColumnDef, binder: Binder) -> tuple[ColumnDef, bool]:
    name = node.name
    kind = node.args.get("kind")
    if kind is None:
        raise BindError(f"column {name!r} has no type")
    sql_type = binder.sql_type(kind)
    if sql_type == T.TEXT and kind.is_type(exp.DataType.Type.CHAR):
        sql_type = T.varchar(1, "CHAR")        # a column's bare CHAR is CHAR(1); only CAST(x AS CHAR) is TEXT
    nullable, default, has_default, primary = True, None, False, False
    for constraint in node.args.get("constraints") or []:
        c = constraint.args.get("kind")
        if isinstance(c, exp.NotNullColumnConstraint):
            nullable = bool(c.args.get("allow_null"))
        elif isinstance(c, exp.DefaultColumnConstraint):
            default, has_default = constant_of_type(c.this, sql_type, binder, f"DEFAULT of column {name!r}"), True
        elif isinstance(c, exp.PrimaryKeyColumnConstraint):
            primary, nullable = True, False
        elif isinstance(c, (exp.CommentColumnConstraint, exp.CharacterSetColumnConstraint,
                            exp.CollateColumnConstraint)):
            continue
        elif isinstance(c, exp.AutoIncrementColumnConstraint):
            raise UnsupportedError(f"AUTO_INCREMENT (column {name!r})")
        elif isinstance(c, exp.UniqueColumnConstraint):
            raise UnsupportedError(f"UNIQUE (column {name!r}): unique constraints are not enforced")
        else:
            raise UnsupportedError(f"column constraint {constraint.sql(dialect='mysql')} (column {name!r})")
    if has_default and default is None and not nullable:
        raise TypeMismatchError(f"column {name!r} is NOT NULL but its DEFAULT is NULL")
    return ColumnDef(name, sql_type, nullable, default, has_default), primary


def constant_of_type(node: exp.Expression, sql_type: T.SqlType, binder: Binder, what: str):
    bound = binder.bind_expr(node, ExprContext(Scope(), clause=what))
    if bound.type.kind == "null":
        return None
    try:
        value = fold_constant(Call("cast", (bound,), sql_type)) if bound.type != sql_type else bound
    except BadDataError as error:
        raise BadDataError(f"{what}: {error}") from None
    if not isinstance(value, Literal):
        raise TypeMismatchError(f"{what} must be a constant")
    return value.value


# -- result sets of SHOW and DESCRIBE ---------------------------------------------------------------
def text_result(names: list[str], rows: list[tuple]) -> Result:
    """A small result set of text columns (SHOW, DESCRIBE, EXPLAIN)."""
    columns = [pa.array([r[i] for r in rows], pa.string()) for i in range(len(names))]
    table = pa.Table.from_arrays(columns, names=names)
    infos = [ColumnInfo(n, pa.string(), "VARCHAR") for n in names]
    return Result(table, infos, len(rows))


def describe_table(table: TableDef) -> Result:
    rows = []
    for c in table.columns:
        key = "PRI" if c.name in table.shard_key else ("MUL" if c.name in table.sort_key else "")
        default = None if not c.has_default or c.default is None else str(c.default)
        rows.append((c.name, str(c.type).lower(), "YES" if c.nullable else "NO", key, default, ""))
    return text_result(["Field", "Type", "Null", "Key", "Default", "Extra"], rows)


def show_create_table(table: TableDef) -> str:
    lines = []
    for c in table.columns:
        default = ""
        if c.has_default:
            default = " DEFAULT NULL" if c.default is None else f" DEFAULT {Literal(c.default, c.type)}"
        lines.append(f"  `{c.name}` {str(c.type).lower()}{'' if c.nullable else ' NOT NULL'}{default}")
    if not table.reference:
        lines.append(f"  SHARD KEY ({', '.join(f'`{k}`' for k in table.shard_key)})")
    if table.sort_key:
        lines.append(f"  SORT KEY ({', '.join(f'`{k}`' for k in table.sort_key)})")
    kind = "REFERENCE TABLE" if table.reference else "TABLE"
    return f"CREATE {kind} `{table.name}` (\n" + ",\n".join(lines) + "\n)"


def database_of(node: exp.Expression, current: Optional[str]) -> str:
    db = node.text("db") if isinstance(node, exp.Table) else ""
    if db:
        return db
    if current is None:
        raise BindError("no database selected; run USE <database> first")
    return current
