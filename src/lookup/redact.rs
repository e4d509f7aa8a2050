//! Keeping secrets out of what a lookup records: query values whose names say
//! they are secrets, and any echo of the secret itself in a body or an error.

/// Words that, in a query parameter's name, mark its value as a secret.
const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "key",
    "password",
    "passwd",
    "auth",
    "signature",
    "sig",
    "credential",
    "session",
];

/// What a redacted value reads as.
pub(super) const REDACTED: &str = "[redacted]";

/// The URL with the value of every query parameter whose name names a secret
/// replaced by `[redacted]`. Identity keys (`business_key`, `idempotency_key`) are
/// the lookup's question, not secrets, and stay.
pub fn redact_url(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if names_secret(name) => format!("{name}={REDACTED}"),
            _ => pair.to_owned(),
        })
        .collect();
    let mut out = format!("{base}?{}", parts.join("&"));
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

fn names_secret(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "business_key" | "idempotency_key" | "idempotency-key"
    ) {
        return false;
    }
    SECRET_WORDS.iter().any(|w| lower.contains(w))
}

/// `text` with every occurrence of `secret` replaced by `[redacted]`.
pub fn redact_secret(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if !s.is_empty() => text.replace(s, REDACTED),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_query_values_are_redacted_identity_keys_kept() {
        assert_eq!(
            redact_url("http://x/r?business_key=b-1&api_key=abc&Token=t&sig=s#f"),
            "http://x/r?business_key=b-1&api_key=[redacted]&Token=[redacted]&sig=[redacted]#f"
        );
        assert_eq!(redact_url("http://x/r/b-1"), "http://x/r/b-1");
        assert_eq!(
            redact_secret("echo s3cr3t and s3cr3t", Some("s3cr3t")),
            "echo [redacted] and [redacted]"
        );
    }
}
