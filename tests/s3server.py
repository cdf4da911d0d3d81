"""An S3-compatible server on 127.0.0.1 for the tests (moto's server mode), started and stopped by them."""

import contextlib
import socket
import subprocess
import sys
import time


@contextlib.contextmanager
def s3_server():
    """Yields ``(endpoint, boto3 client)``; any credentials are accepted."""
    import boto3

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        endpoint = f"http://127.0.0.1:{port}"
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                              region_name="us-east-1")  # fmt: skip
        yield endpoint, client
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:  # a server slow to stop on a loaded machine (the suite's nice-19 passes)
            proc.kill()
            proc.wait()
