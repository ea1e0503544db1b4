"""CREATE / DROP / SHOW / DESCRIBE: catalog statements."""
from __future__ import annotations

from typing import Optional

import pyarrow as pa
from sqlglot import exp

from engine import collation
from engine import types as T
from engine.catalog import Catalog, ColumnDef, IndexDef, TableDef, UniqueKey
from engine.errors import BadDataError, BindError, TypeMismatchError, UnsupportedError
from engine.exec.evaluate import fold_constant
from engine.plan.binder import Binder, ExprContext
from engine.core.expressions import Call, Literal
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
    uniques: list[tuple[Optional[str], tuple[str, ...]]] = []      # (name or None, columns)
    auto_increment: Optional[str] = None
    index_items: list[exp.IndexColumnConstraint] = []
    binder = Binder(catalog, database)
    table_collation = _table_collation(node)
    for item in schema.expressions:
        if isinstance(item, exp.Constraint) and len(item.expressions) == 1 and \
                isinstance(item.expressions[0], (exp.UniqueColumnConstraint, exp.PrimaryKey)):
            item = item.expressions[0]          # CONSTRAINT name UNIQUE (...): MySQL names the key by it
        if isinstance(item, exp.ColumnDef):
            column, is_primary, is_unique, is_auto = column_def(item, binder, table_collation)
            if any(c.name.lower() == column.name.lower() for c in columns):
                raise BindError(f"duplicate column name {column.name!r}")
            columns.append(column)
            if is_primary:
                primary_key = (column.name,)
            if is_unique:
                uniques.append((column.name, (column.name,)))
            if is_auto:
                if auto_increment is not None:
                    raise BindError("there can be only one AUTO_INCREMENT column")
                if column.type.kind != "int":
                    raise TypeMismatchError(f"AUTO_INCREMENT column {column.name!r} must have an integer type")
                auto_increment = column.name
        elif isinstance(item, exp.PrimaryKey):
            primary_key = tuple(e.name for e in item.expressions)
        elif isinstance(item, exp.UniqueColumnConstraint):
            key = item.this
            names = tuple(e.name for e in key.expressions) if isinstance(key, exp.Schema) else ()
            if not names:
                raise UnsupportedError(f"table element {item.sql(dialect='mysql')[:60]} in CREATE TABLE")
            uniques.append((key.this.name if key.this is not None else None, names))
        elif isinstance(item, (exp.IndexColumnConstraint,)):
            if item.args.get("kind") and str(item.args["kind"]).upper() in ("FULLTEXT", "SPATIAL"):
                raise UnsupportedError(f"{str(item.args['kind']).upper()} keys are not supported")
            index_items.append(item)        # KEY / INDEX name (cols): a hash index (resolved below)
        else:
            raise UnsupportedError(f"table element {item.sql(dialect='mysql')[:60]} in CREATE TABLE")
    if not columns:
        raise BindError(f"table {table.name!r} must have at least one column")
    names = {c.name.lower(): c.name for c in columns}
    if primary_key:
        # a primary key column is NOT NULL
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
    unique_keys = _unique_keys(primary_key, uniques, resolve, shard_key, options.reference, table.name)
    sort_key = resolve(options.sort_key, "SORT KEY")
    db = table.db or database
    indexes: tuple[IndexDef, ...] = ()
    for item in index_items:
        indexes += (index_def(item, unique_keys + indexes, resolve),)
    return TableDef(db, table.name, tuple(columns), shard_key, sort_key, options.reference,
                    unique_keys=unique_keys, auto_increment=auto_increment, indexes=indexes)


def index_def(item: exp.IndexColumnConstraint, taken, resolve) -> IndexDef:
    """The IndexDef of ``KEY|INDEX [name] (cols) [USING HASH|BTREE]`` (CREATE TABLE, ALTER TABLE ADD):
    an unnamed index is named after its first column (``_2``, ``_3``... when taken), as MySQL does;
    a name a key or index of the table already has is an error (MySQL's 1061)."""
    kind = str(item.args.get("kind") or "").upper()
    if kind in ("FULLTEXT", "SPATIAL"):
        raise UnsupportedError(f"{kind} keys are not supported")
    for option in item.args.get("options") or []:
        using = option.args.get("using") if isinstance(option, exp.IndexConstraintOption) else None
        if using is None or str(using).upper() not in ("HASH", "BTREE"):
            raise UnsupportedError(f"index option {option.sql(dialect='mysql')} (only USING HASH / BTREE; "
                                   f"every index is a hash index)")
    columns = tuple(c.name for c in item.expressions if isinstance(c, (exp.Column, exp.Ordered, exp.Identifier)))
    if not columns or len(columns) != len(item.expressions):
        raise UnsupportedError(f"index {item.sql(dialect='mysql')[:60]}: only plain column lists are supported")
    return new_index(item.this.name if item.this is not None else None, resolve(columns, "index"), taken)


def new_index(name: Optional[str], columns: tuple[str, ...], taken) -> IndexDef:
    names = {k.name.lower() for k in taken}
    if name is None:
        name, n = columns[0], 2
        while name.lower() in names:
            name, n = f"{columns[0]}_{n}", n + 1
    elif name.lower() in names:
        raise BindError(f"Duplicate key name {name!r}")
    return IndexDef(name, columns)


def _unique_keys(primary_key, uniques, resolve, shard_key, reference: bool, table: str) -> tuple[UniqueKey, ...]:
    """The PRIMARY KEY and UNIQUE keys, named as MySQL names them (an unnamed key after its first
    column). Each must contain the shard key, as SingleStore requires, so that rows with equal keys
    are on one partition and each partition checks its own rows; a keyless table cannot have one."""
    keys: list[UniqueKey] = []
    if primary_key:
        keys.append(UniqueKey("PRIMARY", resolve(primary_key, "PRIMARY KEY")))
    for name, columns in uniques:
        columns = resolve(columns, "UNIQUE KEY")
        name = name or columns[0]
        base, n = name, 2
        while any(k.name.lower() == name.lower() for k in keys):
            name, n = f"{base}_{n}", n + 1
        keys.append(UniqueKey(name, columns))
    for key in keys:
        if reference:
            continue                 # every leaf holds all rows: a check on one copy is global
        if not shard_key:
            raise UnsupportedError(f"unique key {key.name!r} on keyless table {table!r}: a PRIMARY or UNIQUE "
                                   f"key needs a SHARD KEY whose columns it contains")
        if not {c.lower() for c in shard_key} <= {c.lower() for c in key.columns}:
            raise UnsupportedError(f"unique key {key.name!r} of {table!r} must contain all columns of the shard "
                                   f"key ({', '.join(shard_key)}), as in SingleStore: each partition checks "
                                   f"uniqueness on its own rows")
    return tuple(keys)


def _table_collation(node: exp.Create) -> Optional[str]:
    """The collation of ``CREATE TABLE ... [DEFAULT] CHARSET = cs COLLATE = c``, None when not given."""
    properties = node.args.get("properties")
    charset = collate = None
    for prop in properties.expressions if properties is not None else []:
        if isinstance(prop, exp.CharacterSetProperty):
            charset = prop.this.name
        elif isinstance(prop, exp.CollateProperty):
            collate = prop.this.name
    if collate is not None:
        return collation.resolve(collate, charset)
    return collation.of_charset(charset) if charset is not None else None


def column_def(node: exp.ColumnDef, binder: Binder,
               table_collation: Optional[str] = None) -> tuple[ColumnDef, bool, bool, bool]:
    """The column, and whether it is declared PRIMARY KEY, UNIQUE, AUTO_INCREMENT. A string column
    without CHARACTER SET / COLLATE of its own has ``table_collation`` (None: the server's)."""
    name = node.name
    kind = node.args.get("kind")
    if kind is None:
        raise BindError(f"column {name!r} has no type")
    sql_type = binder.sql_type(kind)
    if sql_type == T.TEXT and kind.is_type(exp.DataType.Type.CHAR):
        sql_type = T.varchar(1, "CHAR")        # a column's bare CHAR is CHAR(1); only CAST(x AS CHAR) is TEXT
    nullable, default, has_default, primary, unique, auto = True, None, False, False, False, False
    charset = collate = None
    for constraint in node.args.get("constraints") or []:
        c = constraint.args.get("kind")
        if isinstance(c, exp.NotNullColumnConstraint):
            nullable = bool(c.args.get("allow_null"))
        elif isinstance(c, exp.DefaultColumnConstraint):
            default, has_default = constant_of_type(c.this, sql_type, binder, f"DEFAULT of column {name!r}"), True
        elif isinstance(c, exp.PrimaryKeyColumnConstraint):
            primary, nullable = True, False
        elif isinstance(c, exp.CommentColumnConstraint):
            continue
        elif isinstance(c, exp.CharacterSetColumnConstraint):
            charset = c.this.name
        elif isinstance(c, exp.CollateColumnConstraint):
            collate = c.this.name
        elif isinstance(c, exp.AutoIncrementColumnConstraint):
            auto = True
        elif isinstance(c, exp.UniqueColumnConstraint):
            unique = True
        else:
            raise UnsupportedError(f"column constraint {constraint.sql(dialect='mysql')} (column {name!r})")
    if charset is not None or collate is not None:
        if sql_type.kind != "string":
            raise TypeMismatchError(f"column {name!r} of type {sql_type} has no CHARACTER SET / COLLATE")
        sql_type = sql_type.with_collation(collation.resolve(collate, charset) if collate is not None
                                           else collation.of_charset(charset))
    elif sql_type.kind == "string" and table_collation is not None:
        sql_type = sql_type.with_collation(table_collation)
    if has_default and default is None and not nullable:
        raise TypeMismatchError(f"column {name!r} is NOT NULL but its DEFAULT is NULL")
    return ColumnDef(name, sql_type, nullable, default, has_default), primary, unique, auto


def constant_of_type(node: exp.Expression, sql_type: T.SqlType, binder: Binder, what: str):
    bound = binder.bind_expr(node, ExprContext(Scope(), clause=what))
    if bound.type.kind == "null":
        return None
    bounds = T.integer_range(sql_type)
    if bounds is not None and isinstance(bound, Literal) and bound.type.kind in ("int", "decimal", "float") \
            and not bounds[0] <= round(bound.value) <= bounds[1]:
        raise BadDataError(f"{what}: Out of range value {bound.value} for {sql_type}")   # before a cast wraps it
    try:
        value = fold_constant(Call("cast", (bound,), sql_type, ("strict",)), keep_warnings=False) if bound.type != sql_type else bound
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


def describe_table(table: TableDef, full: bool = False) -> Result:
    """DESCRIBE / SHOW COLUMNS; FULL adds each column's Collation (and MySQL's Privileges, Comment)."""
    rows = []
    primary = set(table.primary_key or table.shard_key)
    unique = {k.columns[0] for k in table.unique_keys if len(k.columns) == 1}
    for c in table.columns:
        key = "PRI" if c.name in primary else "UNI" if c.name in unique else "MUL" if c.name in table.sort_key else ""
        default = None if not c.has_default or c.default is None else str(c.default)
        extra = "auto_increment" if c.name == table.auto_increment else ""
        rows.append((c.name, str(c.type).lower(), "YES" if c.nullable else "NO", key, default, extra))
    if full:
        return text_result(["Field", "Type", "Collation", "Null", "Key", "Default", "Extra", "Privileges", "Comment"],
                           [(r[0], r[1], (c.type.collation or collation.DEFAULT) if c.type.kind == "string" else None)
                            + r[2:] + ("select,insert,update,references", "") for r, c in zip(rows, table.columns)])
    return text_result(["Field", "Type", "Null", "Key", "Default", "Extra"], rows)


def show_create_table(table: TableDef) -> str:
    lines = []
    for c in table.columns:
        default = ""
        if c.has_default:
            default = " DEFAULT NULL" if c.default is None else f" DEFAULT {Literal(c.default, c.type)}"
        auto = " AUTO_INCREMENT" if c.name == table.auto_increment else ""
        collate = ""
        if c.type.kind == "string" and c.type.collation not in (None, collation.DEFAULT):
            collate = f" CHARACTER SET {collation.charset_of(c.type.collation)} COLLATE {c.type.collation}"
        lines.append(f"  `{c.name}` {str(c.type).lower()}{collate}{'' if c.nullable else ' NOT NULL'}{default}{auto}")
    for key in table.unique_keys:
        columns = ", ".join(f"`{k}`" for k in key.columns)
        lines.append(f"  PRIMARY KEY ({columns})" if key.name == "PRIMARY" else f"  UNIQUE KEY `{key.name}` ({columns})")
    for index in table.indexes:
        lines.append(f"  KEY `{index.name}` ({', '.join(f'`{k}`' for k in index.columns)}) USING HASH")
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
