"""Every notebook in notebooks/ runs top to bottom without an error (nbclient, a real Jupyter kernel).

The kernel is this test's own interpreter: a kernelspec written to a temporary JUPYTER_PATH entry
points at ``sys.executable``, so a ``python3`` kernelspec elsewhere on the machine cannot substitute
another Python without Canopy installed.
"""
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

REPO_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
KERNEL_NAME = "canopy-test-python"


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory):
    jupyter_dir = tmp_path_factory.mktemp("jupyter")
    spec_dir = jupyter_dir / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Canopy test Python",
        "language": "python",
    }))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", os.pathsep.join(filter(None, [str(jupyter_dir), os.environ.get("JUPYTER_PATH")])))
        # Import the checkout's packages even where `pip install -e .` was not run.
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
        yield KERNEL_NAME


def test_notebooks_exist():
    assert any(path.name == "quickstart.ipynb" for path in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, kernel_name):
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        kernel_name=kernel_name,
        timeout=600,
        resources={"metadata": {"path": str(path.parent)}},  # run where Jupyter would: beside the file
    )
    client.execute()  # raises CellExecutionError naming the cell and the traceback
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]
    assert not [output for output in outputs if output.get("output_type") == "error"]
    # nothing on stderr either (e.g. tqdm's "IProgress not found" warning without ipywidgets)
    assert not [output for output in outputs if output.get("name") == "stderr"], \
        [output.get("text") for output in outputs if output.get("name") == "stderr"]
    if path.name == "quickstart.ipynb":
        shown = {kind for output in outputs for kind in output.get("data", {})}
        assert "image/png" in shown                                  # the plot of Q1
        if shutil.which("dot"):
            assert "image/svg+xml" in shown                          # con.explain's picture
