"""Physical execution: operators over pyarrow.RecordBatch streams and the expression evaluator."""
