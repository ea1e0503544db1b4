"""Pipelines against an S3 endpoint that checks credentials (moto's server with IAM authentication on):
the right key loads; a wrong secret, an unknown key id, a key without read permission are reported
(SHOW PIPELINES, and against the files) while the pipeline keeps running, and ALTER PIPELINE ... SET
CREDENTIALS recovers; no CREDENTIALS means boto3's default chain. Credentials at rest: never printed
back, kept in a 0600 file of the data_dir, restored on reopen."""
from __future__ import annotations

import json
import logging
import stat
import sys
import uuid
from pathlib import Path

import boto3
import pytest

import engine
from engine.errors import ParseError, UnsupportedError

sys.path.insert(0, str(Path(__file__).parent))
from test_pipelines import count, file_states, wait_for  # noqa: E402

SECRET_LOOKING = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"


def _s3(url: str, key: dict):
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1", **key)


def _bucket_with_files(url: str, key: dict, n: int = 5) -> str:
    bucket = f"canopy-auth-{uuid.uuid4().hex[:8]}"
    s3 = _s3(url, key)
    s3.create_bucket(Bucket=bucket)
    for i in range(n):
        s3.put_object(Bucket=bucket, Key=f"in/{i:03d}.csv", Body=f"{2 * i},a\n{2 * i + 1},b\n".encode())
    return bucket


def _create(con, url: str, bucket: str, credentials: dict | None, name: str = "p") -> None:
    clause = "" if credentials is None else f"CREDENTIALS '{json.dumps(credentials)}' "
    con.execute(f"CREATE PIPELINE {name} AS LOAD DATA S3 '{bucket}/in/' "
                f"CONFIG '{json.dumps({'region': 'us-east-1', 'endpoint_url': url})}' {clause}"
                f"BATCH_INTERVAL 50 INTO TABLE t FIELDS TERMINATED BY ','")


def _show_error(con) -> str:
    return con.execute("SHOW PIPELINES").fetchone()[5] or ""


def _set_credentials(con, credentials: dict, name: str = "p") -> None:
    con.execute(f"ALTER PIPELINE {name} SET CREDENTIALS '{json.dumps(credentials)}'")


@pytest.fixture
def con():
    with engine.connect() as connection:
        connection.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR(10), SHARD KEY (id))")
        yield connection


def test_bad_credentials_are_reported_and_fixing_them_recovers(con, auth_endpoint):
    url, keys = auth_endpoint
    loader = keys["loader"]
    bucket = _bucket_with_files(url, loader)
    wrong_secret = {**loader, "aws_secret_access_key": SECRET_LOOKING}
    _create(con, url, bucket, wrong_secret)
    con.execute("START PIPELINE p")
    wait_for(lambda: _show_error(con).startswith("S3 SignatureDoesNotMatch"))
    assert "secret key does not match" in _show_error(con)
    assert con.execute("SHOW PIPELINES").fetchone()[1] == "Running" and count(con) == 0

    _set_credentials(con, {"aws_access_key_id": "AKIAUNKNOWNUNKNOWN00", "aws_secret_access_key": SECRET_LOOKING})
    wait_for(lambda: _show_error(con).startswith("S3 InvalidAccessKeyId"))
    assert con.execute("SHOW PIPELINES").fetchone()[1] == "Running" and count(con) == 0

    # a key that may list but not read: the files are listed, each shows the error, none is Failed
    _set_credentials(con, keys["lister"])
    wait_for(lambda: len(file_states(con)) == 5 and _show_error(con).startswith("S3 AccessDenied"))
    rows = con.execute("SELECT file_state, error FROM information_schema.pipelines_files").fetchall()
    assert {state for state, _ in rows} == {"Unloaded"}
    assert all(error.startswith("S3 AccessDenied") for _, error in rows)

    _set_credentials(con, loader)
    wait_for(lambda: count(con) == 10 and _show_error(con) == "")
    assert set(file_states(con).values()) == {"Loaded"}
    assert con.execute("SELECT COUNT(*) FROM information_schema.pipelines_files WHERE error IS NOT NULL"
                       ).fetchone()[0] == 0
    assert con.execute("SELECT COUNT(DISTINCT id) FROM t").fetchone()[0] == 10
    assert SECRET_LOOKING not in con.execute("SHOW CREATE PIPELINE p").fetchone()[1]
    con.execute("STOP PIPELINE p")


def test_missing_bucket_with_authentication(con, auth_endpoint):
    url, keys = auth_endpoint
    _create(con, url, f"canopy-missing-{uuid.uuid4().hex[:8]}", keys["loader"])
    con.execute("START PIPELINE p")
    wait_for(lambda: _show_error(con).startswith("S3 NoSuchBucket"))
    assert "does not exist" in _show_error(con)
    con.execute("STOP PIPELINE p")


@pytest.mark.parametrize("credentials", [None, {}])
def test_the_processs_own_credentials_go_to_aws_only(con, auth_endpoint, monkeypatch, tmp_path, credentials):
    """No CREDENTIALS means boto3's default chain (the environment here), which signs requests with the
    process's own keys: an endpoint_url that is not AWS's is refused before any request is made, at
    CREATE PIPELINE and at ALTER PIPELINE ... SET CREDENTIALS '{}'; to AWS it is what is used."""
    from engine.pipelines.s3 import endpoint_is_aws, make_client
    from engine.pipelines.statements import parse_pipeline_statement

    url, keys = auth_endpoint
    bucket = _bucket_with_files(url, keys["loader"], n=2)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", keys["loader"]["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", keys["loader"]["aws_secret_access_key"])
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))   # the environment only
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    with pytest.raises(engine.OperationalError, match="not an AWS endpoint.*give the pipeline its own CREDENTIALS"):
        _create(con, url, bucket, credentials)
    assert con.execute("SHOW PIPELINES").fetchall() == []
    _create(con, url, bucket, keys["loader"])
    with pytest.raises(engine.OperationalError, match="not an AWS endpoint"):
        _set_credentials(con, {})
    con.execute("START PIPELINE p")              # still its own keys
    wait_for(lambda: count(con) == 4)
    con.execute("STOP PIPELINE p")
    assert [endpoint_is_aws(u) for u in (None, "https://s3.eu-west-1.amazonaws.com", "http://s3.amazonaws.com",
                                         "https://s3.amazonaws.com.evil.example", url)] == [True, True, False, False, False]
    definition = parse_pipeline_statement("CREATE PIPELINE q AS LOAD DATA S3 'b/in/' CONFIG "
                                          "'{\"region\": \"eu-west-1\"}' INTO TABLE t")
    client = make_client(definition)             # AWS: the default chain's keys, no request made here
    assert client.meta.endpoint_url.endswith(".amazonaws.com")
    assert client._request_signer._credentials.access_key == keys["loader"]["aws_access_key_id"]


def test_credentials_are_never_printed_back(con, s3_endpoint, caplog):
    caplog.set_level(logging.DEBUG)
    secret = {"aws_access_key_id": "AKIAEXAMPLEKEYID0000", "aws_secret_access_key": SECRET_LOOKING}
    _create(con, s3_endpoint, "some-bucket", secret)
    with pytest.raises(UnsupportedError, match="EXPLAIN of a pipeline statement"):
        con.execute(f"EXPLAIN CREATE PIPELINE q AS LOAD DATA S3 'b' CREDENTIALS '{json.dumps(secret)}' INTO TABLE t")
    name, text = con.execute("SHOW CREATE PIPELINE p").fetchone()
    assert name == "p"
    assert text.startswith("CREATE PIPELINE p AS LOAD DATA S3 'some-bucket/in/'")
    assert ("CREDENTIALS '{\"aws_access_key_id\": \"<redacted>\", \"aws_secret_access_key\": \"<redacted>\"}'"
            in text)
    tables = con.execute("SELECT * FROM information_schema._pipeline_definitions").fetchall() + \
        con.execute("SELECT * FROM information_schema.pipelines").fetchall()
    for value in (SECRET_LOOKING, secret["aws_access_key_id"]):
        assert value not in text and value not in repr(tables)
    # a CREDENTIALS literal that does not parse: the error gives its position, not its text
    with pytest.raises(ParseError) as raised:
        con.execute(f"CREATE PIPELINE q AS LOAD DATA S3 'b/x' CREDENTIALS '{{\"aws_secret_access_key\": "
                    f"\"{SECRET_LOOKING}\"' INTO TABLE t")
    assert "CREDENTIALS is not valid JSON" in str(raised.value) and SECRET_LOOKING not in str(raised.value)
    with pytest.raises(ParseError, match="needs both") as raised:
        con.execute(f"CREATE PIPELINE q AS LOAD DATA S3 'b/x' CREDENTIALS '{{\"aws_secret_access_key\": "
                    f"\"{SECRET_LOOKING}\"}}' INTO TABLE t")
    assert SECRET_LOOKING not in str(raised.value)
    with pytest.raises(ParseError, match="unknown key 'password'"):
        con.execute("CREATE PIPELINE q AS LOAD DATA S3 'b/x' CREDENTIALS '{\"password\": \"x\"}' INTO TABLE t")
    assert SECRET_LOOKING not in caplog.text and secret["aws_access_key_id"] not in caplog.text


def test_credentials_at_rest_in_the_data_dir(auth_endpoint, tmp_path):
    url, keys = auth_endpoint
    loader = keys["loader"]
    bucket = _bucket_with_files(url, loader, n=3)
    data_dir = tmp_path / "data"
    with engine.connect(data_dir=str(data_dir)) as con:
        con.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR(10), SHARD KEY (id))")
        _create(con, url, bucket, loader)
        con.execute("START PIPELINE p")
        wait_for(lambda: count(con) == 6)
    path = data_dir / "pipeline_credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert list(json.loads(path.read_text()).values()) == [loader]
    secret = loader["aws_secret_access_key"].encode()
    holding = [f for f in data_dir.rglob("*") if f.is_file() and secret in f.read_bytes()]
    assert holding == [path]

    # reopened: the stored credentials are put back (this endpoint refuses a request without them)
    _bucket_put(url, loader, bucket, "in/100.csv", b"100,new\n")
    with engine.connect(data_dir=str(data_dir)) as con:
        wait_for(lambda: count(con) == 7)
        assert con.execute("SHOW PIPELINES").fetchone()[5] is None
    # the file lost: a precise error, the pipeline alive; SET CREDENTIALS gives them again
    path.unlink()
    _bucket_put(url, loader, bucket, "in/101.csv", b"101,new\n")
    with engine.connect(data_dir=str(data_dir)) as con:
        wait_for(lambda: "credentials are missing" in _show_error(con))
        assert "ALTER PIPELINE p SET CREDENTIALS" in _show_error(con) and count(con) == 7
        _set_credentials(con, loader)
        wait_for(lambda: count(con) == 8)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # DROP PIPELINE forgets them
    with engine.connect(data_dir=str(data_dir)) as con:
        con.execute("DROP PIPELINE p")
    assert json.loads(path.read_text()) == {}


def _bucket_put(url: str, key: dict, bucket: str, name: str, body: bytes) -> None:
    _s3(url, key).put_object(Bucket=bucket, Key=name, Body=body)
