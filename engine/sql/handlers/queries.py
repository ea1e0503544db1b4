"""Queries: SELECT (and UNION / INTERSECT / EXCEPT, VALUES, a subquery) planned and run, DESCRIBE of a
table, EXPLAIN [ANALYZE] of a query (EXPLAIN of a DELETE / UPDATE is the change handlers').

A mixin of :class:`engine.session.Session`.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from engine.errors import UnsupportedError
from engine.exec.answer import SpilledAnswer
from engine.result import Result
from engine.sql import ddl
from engine.sql.plan_picture import PlanPicture
from engine.sql.query import execution_summary, explain_parts, explain_text, plan_query, run_query


class QueryStatements:
    def _plan(self, node: exp.Expression):
        return plan_query(node, self.catalog, self.database, self.statistics, self.runner.num_partitions)

    def _query(self, node, statement) -> Result:
        return run_query(self._plan(node), self.runner, spill_answer=True)

    def _stmt_Describe(self, node: exp.Describe, statement) -> Result:
        target = node.this
        if isinstance(target, exp.Table):
            return self._describe(target)
        style = str(node.args.get("style") or "").upper()
        if style not in ("", "ANALYZE") or node.args.get("kind"):
            raise UnsupportedError(f"EXPLAIN {node.args.get('style') or node.args.get('kind')}")
        if isinstance(target, (exp.Delete, exp.Update)):
            if style == "ANALYZE":
                raise UnsupportedError("EXPLAIN ANALYZE of a DELETE or UPDATE (it would change the rows)")
            return self._explain_change(target)
        planned = self._plan(target)
        profiles: Optional[list] = None
        if style == "ANALYZE":          # runs the query; its rows are dropped, its counters shown
            profiles = []
            answer = run_query(planned, self.runner, profiles, spill_answer=True).table
            if isinstance(answer, SpilledAnswer):
                answer.close()          # its rows are dropped: its file goes now
        text = explain_text(planned, profiles)
        result = ddl.text_result(["EXPLAIN"], [(line,) for line in text.splitlines()])
        result.picture = PlanPicture(explain_parts(planned, profiles), text, execution_summary(profiles))
        return result
