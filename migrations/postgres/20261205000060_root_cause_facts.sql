-- The kept facts gained a root-cause row per failed or held operation
-- (`cause:LAYER`, for the report's repeated errors). Facts judged before it
-- lack the row: those operations are marked stale, so the next report judges
-- them again instead of reading groups that leave them out.
INSERT INTO metric_stale (operation, mark)
    SELECT id, 1 FROM operations
    WHERE state IN ('UNKNOWN', 'PARTIAL', 'BLOCKED', 'FAILED')
    ON CONFLICT (operation) DO UPDATE SET mark = metric_stale.mark + 1;
