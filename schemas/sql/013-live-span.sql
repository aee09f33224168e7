-- 013-live-span: whose call a live_text row is (issue 19).  span_id is the
-- span of the agent making the call: a sub-agent's (the delegate tool's
-- child span, as its events carry it), NULL for the phase's own agent, which
-- has no span.  So two sub-agents of one phase streaming at once are two
-- rows forge tui tells apart, where phase (PARENT-sub) alone could not.
-- The row is still found by its call_id (ended by its writer, pruned by
-- forge gc).
ALTER TABLE live_text ADD COLUMN span_id TEXT;
