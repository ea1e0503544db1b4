"""The bottom of the engine: the vocabulary the planner, the executor and storage share (expressions,
fields, sort keys, window calls), the collation keys all three compare strings by, and the statement
deadline every step checks. It imports none of engine.plan, engine.optimizer, engine.exec or
engine.storage (tests/test_layers.py holds every engine package to imports that point down)."""
