"""Grammar-based mutations of SQL queries, on sqlglot's syntax tree.

Each mutation takes a parsed query, a random generator and the schema (table -> column name -> type
kind: "number", "text", "date") and changes one node in place, returning a short description of what it did,
or None when the query has nothing it applies to. :func:`mutate` applies a few to a copy. The mutated
statements are plausible user SQL -- right or wrong, meaningful or not -- which the engine must answer
or refuse with a clear error, never with an internal one.
"""
from __future__ import annotations

import random
from typing import Callable, Optional

from sqlglot import exp

Schema = dict[str, dict[str, str]]

_COMPARISONS = [exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ]
_ARITHMETIC = [exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv]
_AGGREGATES = ["SUM", "AVG", "MIN", "MAX", "COUNT", "STDDEV", "VARIANCE", "BIT_XOR", "GROUP_CONCAT"]
_CAST_TYPES = ["CHAR", "SIGNED", "UNSIGNED", "DECIMAL(10, 2)", "DECIMAL(38, 10)", "DOUBLE", "DATE", "DATETIME",
               "BINARY", "TIME", "JSON"]
_LITERALS = ["0", "1", "-1", "NULL", "''", "'abc'", "'1995-03-15'", "'%'", "0.5", "1e300", "-0.0",
             "9223372036854775807", "18446744073709551616", "12345678901234567890.123456789", "TRUE",
             "DATE '1996-02-29'", "TIMESTAMP '1998-12-01 10:00:00'", "INTERVAL 3 DAY", "'1'", "'  7 '", "X'41'"]
_WRAPPERS = ["ABS({})", "UPPER({})", "LOWER({})", "LENGTH({})", "COALESCE({}, 0)", "ROUND({}, 1)",
             "SUBSTRING({}, 2, 3)", "CONCAT({}, 'x')", "YEAR({})", "NULLIF({}, 1)", "-({})", "({}) + 1",
             "IFNULL({}, 'z')", "TRIM({})", "FLOOR({})", "DATE_ADD({}, INTERVAL 1 MONTH)", "EXTRACT(DAY FROM {})",
             "CASE WHEN {} IS NULL THEN 0 ELSE 1 END", "IF({} > 0, 'a', 2)", "LEFT({}, 2)", "SIGN({})",
             "GREATEST({}, 3)", "LEAST({}, 'b')", "({}) DIV 2", "({}) % 0", "({}) / 0", "REVERSE({})",
             "DATEDIFF({}, '1995-01-01')", "CAST({} AS CHAR) LIKE '1%'", "({}) IS NOT TRUE", "NOT ({})",
             "MD5({})", "SQRT({})", "POWER({}, 40)", "LPAD({}, 3, '0')"]
_JOIN_KINDS = [("", "INNER"), ("LEFT", ""), ("RIGHT", ""), ("FULL", "OUTER"), ("", "CROSS"), ("", "")]


def _pick(rng: random.Random, nodes: list):
    return rng.choice(nodes) if nodes else None


def _nodes(tree: exp.Expression, *types) -> list:
    return [n for n in tree.find_all(*types) if n is not tree]


def _parse(text: str) -> exp.Expression:
    from sqlglot import parse_one
    return parse_one(text, read="mysql")


def swap_and_or(tree, rng, schema) -> Optional[str]:
    node = _pick(rng, _nodes(tree, exp.And, exp.Or))
    if node is None:
        return None
    other = exp.Or if isinstance(node, exp.And) else exp.And
    node.replace(other(this=node.this, expression=node.expression))
    return f"{type(node).__name__} -> {other.__name__}"


def drop_predicate(tree, rng, schema) -> Optional[str]:
    node = _pick(rng, _nodes(tree, exp.And, exp.Or))
    if node is None:
        return None
    node.replace(node.this if rng.random() < 0.5 else node.expression)
    return "dropped a predicate"


def duplicate_predicate(tree, rng, schema) -> Optional[str]:
    node = _pick(rng, _nodes(tree, exp.Predicate))
    if node is None:
        return None
    node.replace(exp.And(this=node.copy(), expression=node.copy()))
    return "duplicated a predicate"


def negate(tree, rng, schema) -> Optional[str]:
    node = _pick(rng, _nodes(tree, exp.Predicate, exp.And, exp.Or, exp.Exists, exp.In))
    if node is None:
        return None
    node.replace(exp.Not(this=exp.Paren(this=node.copy())))
    return "NOT"


def change_comparison(tree, rng, schema) -> Optional[str]:
    node = _pick(rng, _nodes(tree, *_COMPARISONS))
    if node is None:
        return None
    other = rng.choice(_COMPARISONS)
    node.replace(other(this=node.this, expression=node.expression))
    return f"{type(node).__name__} -> {other.__name__}"


def change_arithmetic(tree, rng, schema) -> Optional[str]:
    node = _pick(rng, _nodes(tree, *_ARITHMETIC))
    if node is None:
        return None
    other = rng.choice(_ARITHMETIC)
    node.replace(other(this=node.this, expression=node.expression))
    return f"{type(node).__name__} -> {other.__name__}"


def change_literal(tree, rng, schema) -> Optional[str]:
    node = _pick(rng, _nodes(tree, exp.Literal, exp.Null, exp.Boolean))
    if node is None or isinstance(node.parent, (exp.DataType, exp.DataTypeParam, exp.Interval)):
        return None
    text = rng.choice(_LITERALS)
    node.replace(_parse(f"SELECT {text}").expressions[0])
    return f"literal -> {text}"


def cast_something(tree, rng, schema) -> Optional[str]:
    node = _pick(rng, _nodes(tree, exp.Column, exp.Literal))
    if node is None or isinstance(node.parent, (exp.DataType, exp.Interval)):
        return None
    type_text = rng.choice(_CAST_TYPES)
    node.replace(_parse(f"SELECT CAST(x AS {type_text})").expressions[0].transform(
        lambda n: node.copy() if isinstance(n, exp.Column) and n.name == "x" else n))
    return f"CAST AS {type_text}"


def wrap_in_function(tree, rng, schema) -> Optional[str]:
    node = _pick(rng, _nodes(tree, exp.Column, exp.Literal, exp.Binary, exp.AggFunc))
    if node is None or isinstance(node.parent, (exp.DataType, exp.Interval)) or _in_group_or_order(node):
        return None
    template = rng.choice(_WRAPPERS)
    wrapped = _parse("SELECT " + template.format("__x")).expressions[0]
    node.replace(wrapped.transform(lambda n: node.copy() if isinstance(n, exp.Column) and n.name == "__x" else n))
    return template


def _columns_in_reach(tree: exp.Expression, schema: Schema) -> dict[str, str]:
    """The columns of the tables the query names (most swaps then still bind)."""
    names = {t.name.lower() for t in tree.find_all(exp.Table)}
    return {c: k for table in names for c, k in schema.get(table, {}).items()}


def swap_column(tree, rng, schema) -> Optional[str]:
    node = _pick(rng, _nodes(tree, exp.Column))
    columns = _columns_in_reach(tree, schema)
    if node is None or node.name.lower() not in columns:
        return None
    kind = columns[node.name.lower()]
    same = [c for c, k in columns.items() if k == kind and c != node.name.lower()]
    choices = same if same and rng.random() < 0.6 else list(columns)
    name = rng.choice(choices)
    node.replace(exp.column(name, table=node.table or None))
    return f"{node.name} -> {name}"


def change_aggregate(tree, rng, schema) -> Optional[str]:
    node = _pick(rng, _nodes(tree, exp.AggFunc))
    if node is None or not isinstance(node.this, exp.Expression) or isinstance(node.this, exp.Star):
        return None
    name = rng.choice(_AGGREGATES)
    distinct = "DISTINCT " if rng.random() < 0.3 else ""
    replacement = _parse(f"SELECT {name}({distinct}__x)").expressions[0]
    node.replace(replacement.transform(lambda n: node.this.copy() if isinstance(n, exp.Column) and n.name == "__x" else n))
    return f"{type(node).__name__} -> {distinct}{name}"


def nest_subquery(tree, rng, schema) -> Optional[str]:
    """A column compared with a subquery over some table's column: IN, NOT IN, = (scalar), EXISTS
    correlated to it, or the column replaced by a scalar subquery."""
    node = _pick(rng, [c for c in _nodes(tree, exp.Column) if c.find_ancestor(exp.Where, exp.Having, exp.Join)])
    tables = [t.name for t in tree.find_all(exp.Table) if schema.get(t.name.lower())] or list(schema)
    if node is None or not tables:
        return None
    table = rng.choice(tables)
    other = rng.choice(list(schema[table.lower()]))
    column = node.sql(dialect="mysql")
    shapes = [f"{column} IN (SELECT {other} FROM {table})",
              f"{column} NOT IN (SELECT {other} FROM {table} WHERE {other} IS NOT NULL)",
              f"{column} = (SELECT MAX({other}) FROM {table})",
              f"EXISTS (SELECT 1 FROM {table} x WHERE x.{other} = {column})",
              f"{column} > ALL (SELECT {other} FROM {table} LIMIT 3)",
              f"{column} IN (SELECT {other} FROM {table} WHERE {other} IN (SELECT {other} FROM {table} y "
              f"WHERE y.{other} = {column}))"]
    shape = rng.choice(shapes)
    predicate = node.find_ancestor(exp.Predicate)
    if predicate is not None and rng.random() < 0.6:
        predicate.replace(_parse(f"SELECT 1 WHERE {shape}").args["where"].this)
    else:
        node.replace(_parse(f"SELECT (SELECT MIN({other}) FROM {table})").expressions[0])
    return f"subquery: {shape}"


def change_join(tree, rng, schema) -> Optional[str]:
    node = _pick(rng, _nodes(tree, exp.Join))
    if node is None:
        return None
    side, kind = rng.choice(_JOIN_KINDS)
    node.set("side", side or None)
    node.set("kind", kind or None)
    if side and not node.args.get("on") and not node.args.get("using"):
        node.set("on", exp.true() if rng.random() < 0.5 else _parse("SELECT 1 WHERE 1 = 1").args["where"].this)
    return f"join -> {side} {kind}"


def change_clauses(tree, rng, schema) -> Optional[str]:
    """Drop GROUP BY / ORDER BY / LIMIT / HAVING, add DISTINCT, change LIMIT."""
    select = _pick(rng, list(tree.find_all(exp.Select)))
    if select is None:
        return None
    choice = rng.choice(["group", "order", "limit", "having", "distinct", "where"])
    if choice == "distinct":
        select.set("distinct", None if select.args.get("distinct") else exp.Distinct())
    elif choice == "limit":
        select.set("limit", exp.Limit(expression=exp.Literal.number(rng.choice([0, 1, 7, 1000]))))
    else:
        select.set(choice, None)
    return f"changed {choice}"


def add_window(tree, rng, schema) -> Optional[str]:
    """A select item over a window: a running aggregate, a rank or a lag, partitioned and ordered by
    columns in reach."""
    select = _pick(rng, list(tree.find_all(exp.Select)))
    columns = list(_columns_in_reach(tree, schema))
    if select is None or not columns:
        return None
    a, b, c = (rng.choice(columns) for _ in range(3))
    call = rng.choice([f"SUM({a})", "COUNT(*)", f"MIN({a})", "ROW_NUMBER()", "RANK()", f"LAG({a}, 2)",
                       f"AVG({a})", f"FIRST_VALUE({a})", "NTILE(3)", f"LEAD({a})"])
    frame = rng.choice(["", " ROWS BETWEEN 1 PRECEDING AND CURRENT ROW", " ROWS UNBOUNDED PRECEDING"])
    text = f"{call} OVER (PARTITION BY {b} ORDER BY {c}{frame if 'ROW' not in call and 'RANK' not in call else ''})"
    select.append("expressions", _parse(f"SELECT {text}").expressions[0])
    return f"window {text}"


def set_operation(tree, rng, schema) -> Optional[str]:
    """The query made ``SELECT * FROM (q UNION [ALL] | INTERSECT | EXCEPT q') u``, q' a copy of q,
    sometimes with fewer columns."""
    if not isinstance(tree, exp.Select) or tree.args.get("with"):
        return None
    first, other = tree.copy(), tree.copy()
    if rng.random() < 0.5:
        other.set("expressions", other.expressions[:1])        # a column count that differs
    kind = rng.choice([exp.Union, exp.Intersect, exp.Except])
    distinct = rng.random() < 0.5
    combined = kind(this=first, expression=other, distinct=distinct)
    from_key = "from_" if "from_" in exp.Select.arg_types else "from"       # sqlglot >= 28 says from_
    for clause in [k for k in tree.args if k != "expressions"]:
        tree.set(clause, None)
    tree.set("expressions", [exp.Star()])
    tree.set(from_key, exp.From(this=exp.Subquery(this=combined, alias=exp.TableAlias(this=exp.to_identifier("u")))))
    return f"{kind.__name__}{'' if distinct else ' ALL'}"


def order_by(tree, rng, schema) -> Optional[str]:
    """ORDER BY a column in reach, an expression of one, or a select-list position (maybe past the end)."""
    select = _pick(rng, list(tree.find_all(exp.Select)))
    columns = list(_columns_in_reach(tree, schema))
    if select is None or not columns:
        return None
    key = rng.choice([rng.choice(columns), f"{rng.choice(columns)} + 1", str(rng.randint(0, 12)), "NULL",
                      f"CONCAT({rng.choice(columns)}, 'x') DESC"])
    select.set("order", _parse(f"SELECT 1 ORDER BY {key}").args["order"])
    return f"ORDER BY {key}"


MUTATIONS: list[Callable] = [swap_and_or, drop_predicate, duplicate_predicate, negate, change_comparison,
                             change_arithmetic, change_literal, cast_something, wrap_in_function, swap_column,
                             change_aggregate, nest_subquery, change_join, change_clauses, add_window,
                             set_operation, order_by]


def _in_group_or_order(node: exp.Expression) -> bool:
    """GROUP BY 1 / ORDER BY 2 name select items by position: leave those numbers alone."""
    return isinstance(node, exp.Literal) and node.find_ancestor(exp.Group, exp.Order) is not None


def mutate(tree: exp.Expression, rng: random.Random, schema: Schema, count: int) -> tuple[exp.Expression, list[str]]:
    """A copy of ``tree`` with ``count`` mutations applied (each picked at random among those that
    apply); the descriptions of what changed."""
    tree = tree.copy()
    done: list[str] = []
    for _ in range(count * 4):
        if len(done) == count:
            break
        what = rng.choice(MUTATIONS)(tree, rng, schema)
        if what is not None:
            done.append(what)
    return tree, done
