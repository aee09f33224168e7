-- 011-llm-calls-spend.sql - as schemas/sql/018-llm-calls-spend.sql: an
-- index with every column a run's spend is summed from (store.h,
-- STORE_RUN_USD_SQL_PG), so that status, history, show and metrics read
-- it by an index-only scan instead of each call's row (request and
-- response included, TOASTed or not).
CREATE INDEX llm_calls_spend ON llm_calls
	(trace_id, cost_usd, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens);
