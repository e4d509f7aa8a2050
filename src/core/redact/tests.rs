use super::*;

const PLANTED: &str = include_str!("../../../tests/fixtures/planted_secrets.tsv");

/// (kind, text, raw secrets) of every planted secret.
fn planted() -> Vec<(&'static str, String, Vec<&'static str>)> {
    PLANTED
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.split('\t');
            let kind = parts.next().unwrap();
            let text = parts.next().unwrap().replace('⏎', "\n");
            (kind, text, parts.collect())
        })
        .collect()
}

#[test]
fn every_builtin_pattern_compiles() {
    let redactor = Redactor::builtin();
    assert_eq!(redactor.detectors.len(), BUILTIN.len());
    assert_eq!(redactor.any.len(), BUILTIN.len());
}

#[test]
fn every_planted_secret_is_replaced_by_its_marker() {
    let redactor = Redactor::builtin();
    for (kind, text, raws) in planted() {
        let out = redactor.redact(&text);
        for raw in raws {
            assert!(!out.contains(raw), "{kind}: {raw} survives in {out}");
        }
        assert!(out.contains(&marker(kind)), "{kind}: {out}");
        assert_eq!(redactor.redact(&out), out, "redacting twice changes {out}");
    }
}

#[test]
fn ids_hashes_and_ordinary_text_are_untouched() {
    let redactor = Redactor::builtin();
    for text in [
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "sha256:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
        "commit 0123456789abcdef0123456789abcdef01234567",
        "F09 A017 req_8f3a2b1c ticket-queue:7 case-4411 k-F09 tr-1 svc:relay-desk",
        "basic authentication failed; the bearer of this note is maya",
        "https://status.example.com/v1/requests/req_8f3a2b1c?view=full",
        "password reset requested, token expired",
        "AKIA is how AWS key ids start",
    ] {
        assert_eq!(redactor.redact(text), text);
    }
}

#[test]
fn a_url_keeps_its_user_and_host() {
    assert_eq!(
        Redactor::builtin().redact("https://app:pw123456@db:5432/x"),
        "https://app:‹redacted:url_password›@db:5432/x"
    );
}

#[test]
fn extra_patterns_from_the_config_are_used_and_checked() {
    let extra = |kind: &str, pattern: &str| ExtraPattern {
        kind: kind.into(),
        pattern: pattern.into(),
    };
    let redactor =
        Redactor::with_extra(&[extra("acme_token", r"acme-(?P<s>[0-9a-f]{16})")]).unwrap();
    assert_eq!(
        redactor.redact("use acme-0123456789abcdef now"),
        "use acme-‹redacted:acme_token› now"
    );
    assert!(matches!(
        Redactor::with_extra(&[extra("Bad Kind", "x")]),
        Err(PatternError::Kind(_))
    ));
    assert!(matches!(
        Redactor::with_extra(&[extra("k", "(")]),
        Err(PatternError::Pattern { .. })
    ));
    assert!(matches!(
        Redactor::with_extra(&[extra("k", "x*")]),
        Err(PatternError::Pattern { .. })
    ));
}

#[test]
fn a_json_document_is_redacted_with_the_hash_of_each_original_value() {
    let original = "see ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";
    let mut doc = serde_json::json!({"a": [{"note": original}], "id": "F09"});
    let found = redact_value(&mut doc);
    assert_eq!(
        found,
        [Redaction {
            path: "a[0].note".into(),
            kinds: vec!["github_token".into()],
            original_sha256: Sha256::of(original.as_bytes()),
        }]
    );
    assert_eq!(doc["a"][0]["note"], "see ‹redacted:github_token›");
    assert_eq!(doc["id"], "F09");
}

#[test]
fn a_sample_names_the_kind_prefix_and_length_and_no_secret_character() {
    assert_eq!(
        sample("stripe_key", "sk_live_51H8xYzAbCdEfGhIjKlMnOp"),
        "stripe_key:sk_live_…(31 chars)"
    );
    assert_eq!(
        sample("aws_access_key_id", "AKIAIOSFODNN7EXAMPLE"),
        "aws_access_key_id:AKIA…(20 chars)"
    );
    assert_eq!(
        sample("bearer", "9f8e7d6c5b4a39281706abcdefXYZ"),
        "bearer:…(29 chars)"
    );
    // A prefix that is the whole value says nothing more than the kind.
    assert_eq!(sample("custom", "AKIA"), "custom:…(4 chars)");
}

#[test]
fn a_sampled_redaction_hashes_the_value_as_received_and_as_redacted() {
    let mut value = serde_json::json!({"note": "charge failed for sk_live_51H8xYzAbCdEfGhIjKlMnOp", "id": "A017"});
    let found = redact_value_sampled(&mut value);
    assert_eq!(found.len(), 1);
    let s = &found[0];
    assert_eq!(s.redaction.path, "note");
    assert_eq!(
        s.redaction.original_sha256,
        Sha256::of("charge failed for sk_live_51H8xYzAbCdEfGhIjKlMnOp".as_bytes())
    );
    assert_eq!(value["note"], "charge failed for ‹redacted:stripe_key›");
    assert_eq!(
        s.redacted_sha256,
        Sha256::of("charge failed for ‹redacted:stripe_key›".as_bytes())
    );
    assert_eq!(s.sample, "stripe_key:sk_live_…(31 chars)");
    assert_eq!(value["id"], "A017");
}

#[test]
fn a_secret_of_no_known_shape_after_a_credential_word_is_redacted() {
    let redactor = Redactor::builtin();
    for (text, raw, kind) in [
        (
            "invalid_api_key 9fQ2xLm7Pz4KdR8sVb1NcT6yHw3JeA5gUo0iZqXv",
            "9fQ2xLm7Pz4KdR8sVb1NcT6yHw3JeA5gUo0iZqXv",
            "credential",
        ),
        (
            "upstream: auth token: abc123def456ghi789jkl",
            "abc123def456ghi789jkl",
            "credential",
        ),
        (
            "Cookie: sid_Zk29XfQ0pLm3Nw8RtY5b",
            "sid_Zk29XfQ0pLm3Nw8RtY5b",
            "credential",
        ),
        (
            "x-session-id qwhdkzmxprtvbnaslkfjyc",
            "qwhdkzmxprtvbnaslkfjyc",
            "credential",
        ),
        (
            "API_KEY = \"AbCdEfGhIjKlMnOpQrSt\"",
            "AbCdEfGhIjKlMnOpQrSt",
            "credential",
        ),
        ("password: hunter2", "hunter2", "password"),
        ("Passwd=\"s3cr3t!\"", "s3cr3t!", "password"),
        ("secret: OpenSesame", "OpenSesame", "password"),
    ] {
        let out = redactor.redact(text);
        assert!(!out.contains(raw), "{text} → {out}");
        assert!(out.contains(&marker(kind)), "{text} → {out}");
        assert_eq!(redactor.redact(&out), out, "redacting twice changes {out}");
    }
}

#[test]
fn a_credential_word_before_ordinary_words_is_no_secret() {
    let redactor = Redactor::builtin();
    for text in [
        "key findings: the ticket was created twice",
        "the key is missing from the request",
        "business key order-2026-000123 not found",
        "idempotency key reused with another payload",
        "token expired, please sign in again",
        "auth failed for tenant pinehaven",
        "session timed out after 30 minutes",
        "password: expired",
        "password reset requested",
        "api_key invalid",
        "cookie consent banner dismissed",
        "authorization header missing",
        "token internationalization",
        "credentials rejected by the provider",
        "key: sha256:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
    ] {
        assert_eq!(redactor.redact(text), text);
    }
}

#[test]
fn a_wire_line_is_redacted_as_its_values_are() {
    // The rejects file redacts whole lines: a key field's name must not make its
    // value look like a credential there when it is none in the value itself.
    let redactor = Redactor::builtin();
    let line =
        r#"{"idempotency_key":"k-F09-0123456789abcdef","business_key":"order-2026-000123-eu"}"#;
    assert_eq!(redactor.redact(line), line);
}
