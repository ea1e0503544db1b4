"""Logical rewrite rules: one pure function per file, ``rule(plan, ctx) -> plan``."""
