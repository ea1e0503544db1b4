"""A real S3 endpoint for the pipeline tests: moto's server in its own process on 127.0.0.1, which boto3
talks to over HTTP exactly as it would to AWS."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

REGION = "us-east-1"
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint():
    pytest.importorskip("moto")
    boto3 = pytest.importorskip("boto3")
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
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
        client = boto3.client("s3", endpoint_url=url, region_name=REGION, **CREDENTIALS)
        client.list_buckets()
        yield url
    finally:
        process.terminate()
        process.wait(10)


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
