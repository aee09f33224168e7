-- 019-events-trace-index: a trace's events indexed by trace_id alone.
--
-- 017-history-order indexed event_log on (trace_id, seq).  seq is the
-- rowid, and SQLite ends every index entry with the rowid: each entry held
-- seq twice.  An index on (trace_id) is (trace_id, rowid), the same order
-- (a trace's events as they were written); the queries that read a trace
-- in order (ORDER BY seq, seq > ...) search it as they searched the old one,
-- without a sort.  One integer less to make and store per event: ~1% of the
-- instructions of an insert (callgrind, store-writer, 100,000 events) and
-- of the database's size.  The rows are not touched.
DROP INDEX event_log_trace_seq;
CREATE INDEX event_log_trace ON event_log (trace_id);
