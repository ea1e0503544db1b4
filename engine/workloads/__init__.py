"""Standard workloads (data generators, schemas, query sets) shared by the demo, tests and benchmarks."""
