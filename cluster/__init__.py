"""Canopy's cluster: the aggregator and leaves that run StageSpecs, behind ``engine.runner.Runner``.

``cluster.local.LocalRunner`` runs every leaf in this process (the embedded default); the Ray runner
(actors per leaf) implements the same interface.
"""
