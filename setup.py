"""Build the Cython kernels in kernels/.

Every ``kernels/*.pyx`` becomes an extension module ``kernels.<name>``. The default flags are portable
(-O3, no -march); set CANOPY_NATIVE=1 to build for the host CPU (-march=native).

``CANOPY_SKIP_KERNELS=1`` declares no extensions: the Makefile sets it for the editable install (which
would otherwise compile every kernel into a build directory of its own) and then builds them once, in
place, with ``setup.py build_ext --inplace``.
"""
import glob
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

compile_args = ["-O3", "-fno-strict-aliasing"]
if os.environ.get("CANOPY_NATIVE") == "1":
    compile_args.append("-march=native")

extensions = [
    Extension(
        "kernels." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=[numpy.get_include(), "kernels/src"],
        extra_compile_args=compile_args,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        # Headers under kernels/src hold static inline C; a change there must rebuild every user.
        depends=sorted(glob.glob("kernels/src/*.h")) + sorted(glob.glob("kernels/*.pxd")),
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
