"""A client session: the entry point from SQL text to a :class:`~engine.result.Result`.

Contract used by every front end (DB-API driver, MySQL wire server, notebooks)::

    session = Session(cluster, database="canopy")
    result = session.execute("SELECT ... WHERE a = %s", (5,))     # -> engine.result.Result
    result = session.execute_many("INSERT INTO t VALUES (%s, %s)", [(1, 'a'), (2, 'b')])
    session.close()

Parameters follow PEP 249's ``pyformat`` style (``%s`` positional, ``%(name)s`` named); values are
substituted into the parsed AST as literals, never spliced into SQL text.
"""
