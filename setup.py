"""Build the Cython kernels in kernels/.

Every ``kernels/*.pyx`` becomes an extension module ``kernels.<name>``. The default flags are portable
(-O3, no -march); set CANOPY_NATIVE=1 to build for the host CPU (-march=native).

``CANOPY_SKIP_KERNELS=1`` declares no extensions: the Makefile sets it for the editable install (which
would otherwise compile every kernel into a build directory of its own) and then builds them once, in
place, with ``setup.py build_ext --inplace``.
"""
import glob
import os
import re

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

compile_args = ["-O3", "-fno-strict-aliasing"]
if os.environ.get("CANOPY_NATIVE") == "1":
    compile_args.append("-march=native")

_CIMPORT = re.compile(r"^\s*(?:from\s+kernels\.(\w+)\s+cimport|cimport\s+kernels\.(\w+))", re.M)
_EXTERN = re.compile(r"""^\s*cdef\s+extern\s+from\s+["']([\w.]+\.h)["']""", re.M)
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([\w.]+\.h)"', re.M)


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def kernel_depends(pyx):
    """The .pxd files and kernels/src headers an extension is compiled from: its own .pxd, every
    kernels .pxd it cimports (and theirs, transitively), the headers those name in ``cdef extern
    from`` (and the headers those include). Only these: touching one kernel's .pxd or header rebuilds
    its users, not every kernel."""
    own = pyx[:-len(".pyx")] + ".pxd"
    todo = [pyx] + ([own] if os.path.exists(own) else [])
    seen, headers = set(), set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        text = _read(path)
        for a, b in _CIMPORT.findall(text):
            pxd = os.path.join("kernels", (a or b) + ".pxd")
            if os.path.exists(pxd):
                todo.append(pxd)
        pending = [os.path.join("kernels", "src", h) for h in _EXTERN.findall(text)]
        while pending:
            header = pending.pop()
            if header in headers or not os.path.exists(header):
                continue
            headers.add(header)
            pending += [os.path.join("kernels", "src", h) for h in _INCLUDE.findall(_read(header))]
    return sorted(seen - {pyx}) + sorted(headers)


extensions = [
    Extension(
        "kernels." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=[numpy.get_include(), "kernels/src"],
        extra_compile_args=compile_args,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        depends=kernel_depends(path),
    )
    for path in sorted(glob.glob("kernels/*.pyx"))
]

if os.environ.get("CANOPY_SKIP_KERNELS") == "1":
    setup()
else:
    setup(
        ext_modules=cythonize(
            extensions,
            language_level="3",
            quiet=True,
            compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
        ),
    )
