-- Two per-row costs of an ingest's write, measured with `track_functions`: the
-- stale marks of the metric facts and the check of whether the login is
-- trusted, together about a third of the time triggers took.
--
-- The stale marks of the metric facts, once per statement instead of once per
-- row. A row-level trigger ran a function and an upsert of `metric_stale` for
-- every row an ingest wrote (an operation, each of its attempts, its
-- transition, its audit rows…): about seven upserts of the same operation's
-- mark per operation, each leaving a dead row version behind. A statement-level
-- trigger reads the statement's rows as a transition table and marks each
-- operation they name once. What a mark means is unchanged: a change to an
-- operation's records moves its mark, so a judging that read it at an older
-- mark leaves it stale (src/store/engine/metric.rs). PostgreSQL allows a
-- transition table on a trigger of one event only, so each table has a trigger
-- per event. SQLite keeps its row-level triggers: they run in process.

DO $$
DECLARE
    t TEXT;
BEGIN
    FOREACH t IN ARRAY ARRAY['operations', 'dependencies', 'attempts', 'observations', 'items',
                             'expectations', 'proposals', 'audit'] LOOP
        EXECUTE format('DROP TRIGGER %I ON %I', 'metric_stale_' || t, t);
    END LOOP;
END
$$;

-- Marks every operation of `ops` once (NULLs and repeats skipped).
CREATE FUNCTION metric_mark_all(ops TEXT[]) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    INSERT INTO public.metric_stale (operation, mark)
        SELECT DISTINCT op, 1 FROM unnest(ops) AS op WHERE op IS NOT NULL
        ON CONFLICT (operation) DO UPDATE SET mark = public.metric_stale.mark + 1
$$;
REVOKE ALL ON FUNCTION metric_mark_all(TEXT[]) FROM PUBLIC;

-- Marks the operations the statement's rows name in the columns the trigger
-- passes (`operation`; `operation` and `depends_on` for a dependency, which
-- changes the facts of both its ends; `id` for an operation): the rows it
-- wrote, the rows it removed, or both for an update.
CREATE FUNCTION metric_mark_statement() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c TEXT;
    named TEXT[] := '{}';
BEGIN
    FOREACH c IN ARRAY TG_ARGV LOOP
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            named := named || format('SELECT %I FROM new_rows', c);
        END IF;
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            named := named || format('SELECT %I FROM old_rows', c);
        END IF;
    END LOOP;
    EXECUTE format('SELECT public.metric_mark_all(ARRAY(%s))', array_to_string(named, ' UNION '));
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION metric_mark_statement() FROM PUBLIC;

-- An update of an operation marks it only when it changed what the rules read
-- of it (its wire, state, owner, next observation or tenant), as the row-level
-- trigger compared them; the queue flag and the route are not read.
CREATE FUNCTION metric_mark_operations_updated() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    PERFORM public.metric_mark_all(ARRAY(
        SELECT coalesce(n.id, o.id)
          FROM new_rows n FULL JOIN old_rows o ON o.id = n.id
         WHERE n.id IS NULL OR o.id IS NULL
            OR (o.wire, o.state, o.owner, o.next_observation_ms, o.tenant)
               IS DISTINCT FROM (n.wire, n.state, n.owner, n.next_observation_ms, n.tenant)));
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION metric_mark_operations_updated() FROM PUBLIC;

-- A trigger per table and event, the statement's rows as a transition table.
DO $$
DECLARE
    t TEXT;
    columns TEXT;
BEGIN
    FOREACH t IN ARRAY ARRAY['attempts', 'observations', 'items', 'expectations', 'proposals',
                             'dependencies', 'operations'] LOOP
        columns := CASE t WHEN 'dependencies' THEN quote_literal('operation') || ', '
                                                   || quote_literal('depends_on')
                          WHEN 'operations' THEN quote_literal('id')
                          ELSE quote_literal('operation') END;
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows '
            'FOR EACH STATEMENT EXECUTE FUNCTION metric_mark_statement(%s)',
            'metric_stale_' || t || '_insert', t, columns);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I '
            'REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows '
            'FOR EACH STATEMENT EXECUTE FUNCTION %s',
            'metric_stale_' || t || '_update', t,
            CASE t WHEN 'operations' THEN 'metric_mark_operations_updated()'
                   ELSE format('metric_mark_statement(%s)', columns) END);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows '
            'FOR EACH STATEMENT EXECUTE FUNCTION metric_mark_statement(%s)',
            'metric_stale_' || t || '_delete', t, columns);
    END LOOP;
END
$$;

CREATE TRIGGER metric_stale_audit_insert AFTER INSERT ON audit
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION metric_mark_statement('operation');

-- The row-level functions are no longer called.
DROP FUNCTION metric_mark_operation();
DROP FUNCTION metric_mark_record();
DROP FUNCTION metric_mark_dependency();

-- Whether the login is trusted with the tables, asked by the checks of every
-- row written (three times an audit row): with every name qualified it needs no
-- search_path of its own, so the planner inlines it into the calling
-- expression instead of calling it (and setting and restoring a search_path)
-- for each row. Nothing it names can be shadowed by a login's own objects.
CREATE OR REPLACE FUNCTION holdfast_trusted() RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT pg_catalog.pg_has_role(session_user,
        (SELECT c.relowner FROM pg_catalog.pg_class c
          WHERE c.oid = 'public.audit'::pg_catalog.regclass), 'MEMBER')
$$;
