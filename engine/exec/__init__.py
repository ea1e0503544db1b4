"""Physical execution: operators over pyarrow.RecordBatch streams and the expression evaluator."""

import engine.lazy_pandas  # noqa: E402,F401 - before any operator converts a list (Ray leaves import this first)
