# HyperLogLog sketches: the Python functions of kernels/hll.pyx are declared for type checkers in
# kernels/hll.pyi; nothing is shared at the C level yet.
