-- The queue's indexes hold only the queued operations (about one in twenty):
-- every query that reads them says `queued = 1`, and an operation that is not
-- queued no longer pays for four index entries on every insert and move. The
-- plain `state` index is dropped: `operations_work` (state, state_since_ms, id)
-- answers every lookup by state.
DROP INDEX operations_queue_urgency;
DROP INDEX operations_queue_age;
DROP INDEX operations_queue_deadline;
DROP INDEX operations_due;
DROP INDEX operations_state;

CREATE INDEX operations_queue_urgency
    ON operations (queued, risk_rank DESC, observe_order, state_since_ms, id) WHERE queued = 1;
CREATE INDEX operations_queue_age ON operations (queued, state_since_ms, id) WHERE queued = 1;
CREATE INDEX operations_queue_deadline ON operations (queued, deadline_ms, id) WHERE queued = 1;
CREATE INDEX operations_due ON operations (queued, next_observation_ms) WHERE queued = 1;
