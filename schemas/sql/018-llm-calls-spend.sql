-- 018-llm-calls-spend: what a run spent, read from its model-call log
-- without reading the calls.  status, history, show and metrics take a
-- run's spend from llm_calls when it is more than the run row's totals
-- (a run killed mid-phase: store.h, STORE_RUN_USD_SQL_*).  Summing
-- cost_usd and the token columns through llm_calls_trace read each row
-- whole, request and response included (tens of KiB a call, on overflow
-- pages, stored before cost_usd): history over runs of many long calls
-- cost the size of their log.  This index holds every column the sum
-- reads, so SQLite answers from it alone.
CREATE INDEX llm_calls_spend ON llm_calls
	(trace_id, cost_usd, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens);
