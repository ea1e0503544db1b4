"""``canopy://``: SQLAlchemy 2 and pandas on the embedded engine, no server."""
from __future__ import annotations

import decimal

import pytest

sqlalchemy = pytest.importorskip("sqlalchemy")
pd = pytest.importorskip("pandas")

from sqlalchemy.dialects import registry  # noqa: E402

# the package's entry point does this once installed; registered here for a checkout not reinstalled
registry.register("canopy", "engine.sa_dialect", "CanopyDialect")


@pytest.fixture()
def db():
    engine = sqlalchemy.create_engine("canopy:///sa_test?partitions_per_leaf=2")
    yield engine
    engine.dispose()


def test_core_reflection_and_pandas(db):
    with db.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS prices (id BIGINT NOT NULL, sym VARCHAR(8), "
                             "px DECIMAL(10,2), SHARD KEY (id))")
        conn.exec_driver_sql("TRUNCATE TABLE prices")
        conn.execute(sqlalchemy.text("INSERT INTO prices VALUES (:i, :s, :p)"),
                     [{"i": 1, "s": "A", "p": "1.25"}, {"i": 2, "s": "B", "p": "2.50"}])
    inspector = sqlalchemy.inspect(db)
    assert "prices" in inspector.get_table_names()
    columns = {c["name"]: c for c in inspector.get_columns("prices")}
    assert isinstance(columns["px"]["type"], sqlalchemy.DECIMAL) and columns["id"]["nullable"] is False
    table = sqlalchemy.Table("prices", sqlalchemy.MetaData(), autoload_with=db)
    with db.connect() as conn:
        rows = conn.execute(sqlalchemy.select(table.c.sym, table.c.px).where(table.c.id > 1)).fetchall()
    assert rows == [("B", decimal.Decimal("2.50"))]
    frame = pd.DataFrame({"k": [3, 1, 2], "v": ["c", "a", None]})
    frame.to_sql("frame", db, index=False, if_exists="replace")
    back = pd.read_sql("SELECT k, v FROM frame ORDER BY k", db)
    assert back["k"].tolist() == [1, 2, 3] and back["v"].tolist()[::2] == ["a", "c"] and pd.isna(back["v"][1])


def test_unknown_url_option_is_refused():
    with pytest.raises(Exception, match="no_such_option"):
        sqlalchemy.create_engine("canopy:///x?no_such_option=1").connect()
