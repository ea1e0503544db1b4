"""Canopy over MySQL's wire protocol: ``canopy-server`` / ``python -m engine.server``.

>>> # canopy-server --port 3307 --user admin --password s3cret        # doctest: +SKIP
>>> # mysql -h 127.0.0.1 -P 3307 -u admin -ps3cret                    # doctest: +SKIP

``cli`` parses the command line, ``server`` runs the listener and owns the cluster, ``wire`` is one
client connection, ``auth`` checks passwords, ``results`` and ``errors`` turn engine results and errors
into MySQL's packets. See docs/server.md.
"""
