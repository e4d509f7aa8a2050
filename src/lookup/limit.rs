//! Per-provider pacing of lookups: at most N a second to each provider (its
//! scheme, host and port), however many run at once. The pacing is always on:
//! a provider the config names no rate for gets [`DEFAULT_RATE_PER_SECOND`].
//! Also the `[lookup]` section of the config file, bindings included.

use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The `[lookup]` section of the config file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LookupSettings {
    /// The largest response body read, in bytes (default 1 MiB).
    pub body_limit_bytes: Option<usize>,
    /// Lookups a second to any one provider not listed below (default
    /// [`DEFAULT_RATE_PER_SECOND`]; never unlimited).
    pub rate_per_second: Option<f64>,
    /// Lookups a second per provider, keyed by `scheme://host:port`.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSettings>,
    /// The shortest wait before one hold is looked up again, in seconds (default
    /// 30, at least 1): whatever a provider's `Retry-After` says.
    pub min_interval_seconds: Option<u32>,
    /// Where lookups may go and which secret they carry, by binding name.
    #[serde(default)]
    pub bindings: super::Bindings,
}

/// Lookups a second to one provider when the config names no rate.
pub const DEFAULT_RATE_PER_SECOND: f64 = 5.0;

/// Settings of one provider.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    pub rate_per_second: Option<f64>,
}

impl LookupSettings {
    /// The HTTP side's settings these make.
    pub fn client(&self) -> super::LookupConfig {
        super::LookupConfig {
            body_limit: self.body_limit_bytes.unwrap_or(super::DEFAULT_BODY_LIMIT),
            bindings: self.bindings.clone(),
            min_interval_seconds: self
                .min_interval_seconds
                .unwrap_or(super::DEFAULT_MIN_INTERVAL_SECONDS)
                .max(1),
        }
    }

    /// The rate for `provider` (`scheme://host:port`, in any spelling the URL
    /// parser reads the same): its own, else the section's, else the default.
    /// A rate that is not a positive number counts as unset.
    pub fn rate(&self, provider: &str) -> f64 {
        let key = super::canonical_origin(provider);
        let valid = |r: &f64| r.is_finite() && *r > 0.0;
        self.providers
            .iter()
            .find(|(k, _)| {
                k.as_str() == provider || (key.is_some() && super::canonical_origin(k) == key)
            })
            .and_then(|(_, p)| p.rate_per_second)
            .filter(valid)
            .or(self.rate_per_second.filter(valid))
            .unwrap_or(DEFAULT_RATE_PER_SECOND)
    }
}

/// Spaces lookups to each provider at least `1 / rate` apart.
#[derive(Debug)]
pub struct RateLimiter {
    settings: LookupSettings,
    /// When each provider may next be asked.
    next_free: Mutex<HashMap<String, Instant>>,
}

impl RateLimiter {
    pub fn new(settings: LookupSettings) -> RateLimiter {
        RateLimiter {
            settings,
            next_free: Mutex::new(HashMap::new()),
        }
    }

    /// Waits until `provider` may be asked again, and takes that turn.
    pub async fn acquire(&self, provider: &str) {
        let rate = self.settings.rate(provider);
        let gap = Duration::from_secs_f64(1.0 / rate);
        let wait = {
            let mut next = match self.next_free.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            let now = Instant::now();
            let slot = next.get(provider).copied().unwrap_or(now).max(now);
            next.insert(provider.to_owned(), slot + gap);
            slot - now
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_provider_is_paced_on_its_own() {
        let settings: LookupSettings = toml::from_str(
            "rate_per_second = 1000.0\n[providers.\"http://slow:1\"]\nrate_per_second = 20.0\n",
        )
        .unwrap();
        assert_eq!(settings.rate("http://slow:1"), 20.0);
        assert_eq!(settings.rate("http://other:2"), 1000.0);
        assert_eq!(
            LookupSettings::default().rate("http://any:3"),
            DEFAULT_RATE_PER_SECOND,
            "pacing is always on"
        );
        let limiter = RateLimiter::new(settings);
        let started = Instant::now();
        for _ in 0..5 {
            limiter.acquire("http://slow:1").await;
        }
        let slow = started.elapsed();
        assert!(slow >= Duration::from_millis(195), "{slow:?}");
        let started = Instant::now();
        for _ in 0..5 {
            limiter.acquire("http://other:2").await;
        }
        assert!(started.elapsed() < Duration::from_millis(150));
    }
}
