"""The first hash index of a process imports pandas (engine.storage.hash_index._hash_array) while
several threads may build one at once (a unique-key check's partitions, in a thread pool): the import
is one thread's, not a _DeadlockError or a hang. In a fresh interpreter, eight threads at once."""
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import threading
import numpy as np
import engine.lazy_pandas  # noqa: F401 - its import hook is what the threads went through
from engine.storage.hash_index import _hash_array
barrier, errors = threading.Barrier(8), []
def build():
    barrier.wait()
    try:
        _hash_array(np.array(["a"], dtype=object))
    except Exception as error:
        errors.append(type(error).__name__)
threads = [threading.Thread(target=build) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print(errors)
"""


def test_concurrent_first_indexes_import_pandas_once():
    root = Path(__file__).resolve().parents[2]
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root, capture_output=True, text=True, timeout=120,
                              env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == "[]"
