"""EXPLAIN as a picture (engine.sql.plan_picture): the Graphviz graph has one box per stage, titled
by where it runs, one edge per exchange, and after ``analyze=True`` the actual rows beside the
estimates; the SVG is drawn when Graphviz's ``dot`` is installed."""
from __future__ import annotations

import re
import shutil

import pytest

import engine


@pytest.fixture(scope="module")
def con():
    con = engine.connect(leaves=2, partitions_per_leaf=2)
    con.execute("CREATE TABLE facts (id BIGINT, k INT, v DOUBLE, SHARD KEY (id))")
    con.execute("CREATE REFERENCE TABLE names (k INT, name VARCHAR(20), PRIMARY KEY (k))")
    con.executemany("INSERT INTO facts VALUES (%s, %s, %s)", [(i, i % 5, i * 0.5) for i in range(2000)])
    con.executemany("INSERT INTO names VALUES (%s, %s)", [(k, f"name {k}") for k in range(5)])
    # histograms now, so no background collection changes the estimates between two EXPLAINs
    con.execute("ANALYZE TABLE facts, names")
    yield con
    con.close()


QUERY = ("SELECT name, SUM(v) FROM facts JOIN names ON facts.k = names.k WHERE id > 100 "
         "GROUP BY name ORDER BY 2 DESC LIMIT 3")


def test_the_graph_has_a_box_per_stage_and_an_edge_per_exchange(con):
    picture = con.explain(QUERY)
    text = str(picture)
    # the same plan as EXPLAIN's rows (operators and where they run; estimates and costs may move
    # between two plannings as statistics land)
    def operators(lines):
        return [line.split("  (")[0] for line in lines]
    assert operators(text.splitlines()) == operators(row[0] for row in con.execute("EXPLAIN " + QUERY).fetchall())
    stages = re.findall(r'label="(on every leaf|once on a leaf|on the aggregator)"', picture.dot)
    exchanges = re.findall(r'-> n\d+ \[label="(Exchange [^"\\]*)', picture.dot)
    assert len(exchanges) == text.count("Exchange ")
    assert len(stages) == len(exchanges) + 1          # every exchange starts a stage below it
    assert stages.count("on the aggregator") == 1
    assert "est." in picture.dot and "actual" not in picture.dot


def test_analyze_shows_actual_rows_and_the_result_is_unchanged(con):
    picture = con.explain(QUERY, analyze=True)
    assert "actual" in picture.dot and "Execution:" in picture.dot
    # the aggregator's Limit produced the 3 rows the query returns
    assert re.search(r'Limit 3\\l[^"]*actual 3 rows', picture.dot), picture.dot
    assert len(con.execute(QUERY).fetchall()) == 3


def test_a_misestimate_is_drawn_red(con):
    # no statistics flow through an opaque predicate: a default selectivity, far from the 1 row kept
    picture = con.explain("SELECT id FROM facts WHERE id * 3 = 300", analyze=True)
    assert 'color="#c0392b"' in picture.dot


def test_init_plans_get_boxes_of_their_own(con):
    picture = con.explain("SELECT id FROM facts WHERE v > (SELECT AVG(v) FROM facts) LIMIT 1")
    assert "cluster_plan0" in picture.dot and "init plan result" in picture.dot


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_jupyter_gets_an_svg(con):
    pytest.importorskip("graphviz")
    svg = con.explain(QUERY, analyze=True)._repr_svg_()
    assert svg is not None and svg.lstrip().startswith(("<?xml", "<svg")) and "on every leaf" in svg


def test_without_dot_jupyter_gets_the_text(con, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    picture = con.explain(QUERY)
    assert picture._repr_svg_() is None
    assert picture._repr_markdown_().startswith("```\n") and str(picture) in picture._repr_markdown_()
    with pytest.raises(RuntimeError, match="apt-get install graphviz"):
        picture.svg()
