"""A real S3 endpoint for the pipeline tests: moto's server in its own process on 127.0.0.1, which boto3
talks to over HTTP exactly as it would to AWS."""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import pytest

REGION = "us-east-1"
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _moto_server(env: Optional[dict] = None):
    """moto's server on a free port of 127.0.0.1, its URL once it accepts connections."""
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, **(env or {})})
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="session")
def s3_endpoint():
    pytest.importorskip("moto")
    boto3 = pytest.importorskip("boto3")
    with _moto_server() as url:
        client = boto3.client("s3", endpoint_url=url, region_name=REGION, **CREDENTIALS)
        client.list_buckets()
        yield url


# IAM calls the authenticating server answers before it starts checking signatures: two users, a
# policy and an access key each.
_SETUP_ACTIONS = 6


@pytest.fixture(scope="module")
def auth_endpoint():
    """A moto server that authenticates: after its first _SETUP_ACTIONS requests every request must be
    signed with the access key of an IAM user it knows, and the user's policy must allow the action.
    Yields (url, {user: {"aws_access_key_id", "aws_secret_access_key"}}): "loader" may do anything on
    S3, "lister" may only list buckets (s3:ListBucket), not read objects."""
    pytest.importorskip("moto")
    boto3 = pytest.importorskip("boto3")
    policies = {"loader": ["s3:*"], "lister": ["s3:ListBucket"]}
    with _moto_server({"INITIAL_NO_AUTH_ACTION_COUNT": str(_SETUP_ACTIONS)}) as url:
        iam = boto3.client("iam", endpoint_url=url, region_name=REGION, **CREDENTIALS)
        keys = {}
        for user, actions in policies.items():
            iam.create_user(UserName=user)
            iam.put_user_policy(UserName=user, PolicyName="s3", PolicyDocument=json.dumps(
                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}))
            key = iam.create_access_key(UserName=user)["AccessKey"]
            keys[user] = {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"]}
        yield url, keys


@pytest.fixture
def s3(s3_endpoint):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=s3_endpoint, region_name=REGION,
                        config=Config(max_pool_connections=32), **CREDENTIALS)


@pytest.fixture
def bucket(s3):
    """A fresh bucket per test (moto keeps state for the whole session)."""
    name = f"canopy-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


@pytest.fixture
def put_many(s3):
    """put_many(bucket, {key: body}): many small objects at once over a thread pool."""
    def put(bucket: str, objects: dict[str, bytes], threads: int = 16) -> None:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda item: s3.put_object(Bucket=bucket, Key=item[0], Body=item[1]), objects.items()))
    return put
