//! Per-provider pacing of lookups: at most N a second to each provider (its
//! scheme, host and port), however many run at once.

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
    /// Lookups a second to any one provider not listed below (default: no limit).
    pub rate_per_second: Option<f64>,
    /// Lookups a second per provider, keyed by `scheme://host:port` as the
    /// contract's URL writes it.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSettings>,
}

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
        }
    }

    /// The rate for `provider`, if it has one.
    pub fn rate(&self, provider: &str) -> Option<f64> {
        self.providers
            .get(provider)
            .and_then(|p| p.rate_per_second)
            .or(self.rate_per_second)
            .filter(|r| r.is_finite() && *r > 0.0)
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
        let Some(rate) = self.settings.rate(provider) else {
            return;
        };
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
        assert_eq!(settings.rate("http://slow:1"), Some(20.0));
        assert_eq!(settings.rate("http://other:2"), Some(1000.0));
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
