"""Pure NumPy/pyarrow references for the compiled kernels, one module per kernel family.

They define what the kernels must compute: tests compare each kernel with its reference on random
data, and ``CANOPY_KERNELS=reference`` makes ``kernels`` export them instead of the compiled code.
"""
