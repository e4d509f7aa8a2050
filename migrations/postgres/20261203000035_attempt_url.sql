-- The URL of an attempt (its userinfo and query values redacted), when the door
-- that recorded it knew it: OpenTelemetry's `url.full`. Not a field of the wire
-- record, so kept beside it; shown on the timeline and in the evidence bundle.
ALTER TABLE attempts ADD COLUMN url TEXT;
