-- 012-llm-called-by-time.sql - as schemas/sql/020-llm-called-by-time.sql:
-- today's model calls (safety.cost.per_day, store_cost_between) found by
-- a partial index in time order instead of every llm.called event's row.
CREATE INDEX event_log_llm_called_ts ON event_log (type, ts) WHERE type = 'llm.called';
