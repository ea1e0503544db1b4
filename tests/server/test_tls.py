"""TLS: a server given a certificate encrypts the connections of clients that ask for it."""
from __future__ import annotations

import shutil
import ssl
import subprocess

import pytest

from engine.server.process import ServerProcess
from tests.server.conftest import ADMIN, PASSWORD, pymysql


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=localhost"], check=True, capture_output=True)
    with ServerProcess("--ssl-cert", str(cert), "--ssl-key", str(key)) as server:
        server.cert = cert
        yield server


def test_tls_connection(tls_server):
    context = ssl.create_default_context(cafile=str(tls_server.cert))
    context.check_hostname = False                 # the certificate names localhost, we dial 127.0.0.1
    con = pymysql.connect(host=tls_server.host, port=tls_server.port, user=ADMIN, password=PASSWORD, ssl=context)
    try:
        assert con._sock.version().startswith("TLS")
        with con.cursor() as cur:
            cur.execute("SELECT 1 + 1")
            assert cur.fetchall() == ((2,),)
    finally:
        con.close()
    plain = pymysql.connect(host=tls_server.host, port=tls_server.port, user=ADMIN, password=PASSWORD,
                            ssl_disabled=True)
    assert not hasattr(plain._sock, "version")     # TLS is the client's choice, as in MySQL
    plain.close()


def test_untrusted_certificate_is_refused(tls_server):
    context = ssl.create_default_context()         # the system's CAs do not know this certificate
    with pytest.raises(pymysql.err.OperationalError):
        pymysql.connect(host=tls_server.host, port=tls_server.port, user=ADMIN, password=PASSWORD, ssl=context)
