"""Logical plans: the binder turns a sqlglot AST into these typed, frozen dataclasses."""
