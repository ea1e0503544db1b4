"""``LOAD DATA ... SET col = expr``: the assignments bound once against the file's fields, evaluated per
parsed batch."""
from __future__ import annotations

import pyarrow as pa

from engine.catalog import TableDef
from engine.errors import BadDataError, BindError
from engine.load.load_data import LoadDataStatement
from engine.types import TEXT


class SetClauses:
    """``SET col = expr, ...`` bound once against the file's fields and evaluated per parsed batch.

    Column names in an expression read the file's value for that column (already of the column's type);
    ``@var`` reads the field's text, as MySQL's user variables hold it. The engine's binder types the
    expression and casts it to the target column; its evaluator runs it over Arrow batches.
    """

    def __init__(self, statement: LoadDataStatement, table: TableDef, fields: list):
        import sqlglot
        from sqlglot import exp

        from engine.plan.binder import Binder, ExprContext
        from engine.plan.logical import Field
        from engine.plan.scope import Relation, Scope

        self.path = statement.path
        variables = {f.label.lower(): f for f in fields if f.column is None}
        scope = Scope([Relation("", [Field(f.name, f.label, table.columns[f.column].type)
                                     for f in fields if f.column is not None])])
        binder = Binder(None, None)
        self.variables: set[str] = set()
        self.bound: list[tuple[int, object, str]] = []    # (column index, bound expression, SQL text)
        seen: set[int] = set()
        for name, text in statement.set_clauses:
            index = table.column_index(name)
            if index in seen:
                raise BindError(f"column {table.columns[index].name!r} is assigned twice in LOAD DATA ... SET")
            seen.add(index)

            def variable(node, name=name, text=text):
                if not isinstance(node, exp.Parameter):
                    return node
                var = "@" + node.name
                field = variables.get(var.lower())
                if field is None:
                    raise BindError(f"LOAD DATA ... SET {name} = {text}: user variable {var} is not in the "
                                    f"column list")
                self.variables.add(var.lower())
                column = exp.column(var)
                column.meta["canopy_field"] = Field(field.name, var, TEXT)
                return column

            node = sqlglot.parse_one(text, read="mysql").transform(variable)
            expr = binder.bind_expr(node, ExprContext(scope, clause="SET"))
            self.bound.append((index, binder.coerce(expr, table.columns[index].type), text))

    def evaluate(self, parsed: dict[str, pa.ChunkedArray], num_rows: int) -> dict[int, pa.ChunkedArray]:
        from engine.exec.evaluate import evaluate_array

        inputs = pa.table({"__rows": pa.nulls(num_rows, pa.null()), **parsed})
        out: dict[int, list[pa.Array]] = {index: [] for index, _, _ in self.bound}
        for batch in inputs.to_batches():
            for index, expr, text in self.bound:
                try:
                    out[index].append(evaluate_array(expr, batch))
                except BadDataError as error:
                    raise BadDataError(f"LOAD DATA {self.path}: SET ... = {text}: {error}") from None
        return {index: pa.chunked_array(chunks, type=expr.type.to_arrow())
                for (index, expr, _), chunks in zip(self.bound, out.values())}
