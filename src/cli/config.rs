//! Where holdfast keeps things, and the optional TOML config file: the default
//! store, the acting identity, the policy version and the theme.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Environment variables that move holdfast's folders (tests use them).
pub(crate) const ENV_CONFIG: &str = "HOLDFAST_CONFIG";
pub(crate) const ENV_DATA_DIR: &str = "HOLDFAST_DATA_DIR";

/// The folders holdfast uses, from `directories` unless overridden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Paths {
    pub config_file: PathBuf,
    pub data_dir: PathBuf,
    pub log_file: PathBuf,
}

impl Paths {
    pub(crate) fn discover() -> Paths {
        let dirs = directories::ProjectDirs::from("", "", "holdfast");
        let data_dir = std::env::var_os(ENV_DATA_DIR)
            .map(PathBuf::from)
            .or_else(|| dirs.as_ref().map(|d| d.data_dir().to_path_buf()))
            .unwrap_or_else(|| PathBuf::from(".holdfast"));
        let config_file = std::env::var_os(ENV_CONFIG)
            .map(PathBuf::from)
            .or_else(|| dirs.as_ref().map(|d| d.config_dir().join("config.toml")))
            .unwrap_or_else(|| data_dir.join("config.toml"));
        let state_dir = if std::env::var_os(ENV_DATA_DIR).is_some() {
            data_dir.clone()
        } else {
            dirs.as_ref()
                .and_then(|d| d.state_dir().map(Path::to_path_buf))
                .unwrap_or_else(|| data_dir.clone())
        };
        Paths {
            config_file,
            log_file: state_dir.join("holdfast.log"),
            data_dir,
        }
    }

    /// The default embedded store.
    pub(crate) fn default_store(&self) -> PathBuf {
        self.data_dir.join("holdfast.db")
    }

    /// The store `holdfast demo` recreates on every run.
    pub(crate) fn demo_store(&self) -> PathBuf {
        self.data_dir.join("demo.db")
    }
}

/// Colours on screen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Theme {
    #[default]
    Default,
    /// No colours (also chosen by `NO_COLOR`).
    Mono,
}

/// The config file's contents; every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// Path of the default SQLite store.
    pub store: Option<PathBuf>,
    /// A `postgres://` URL for a team store.
    pub database_url: Option<String>,
    /// The identity to act as (default: the OS user).
    pub identity: Option<String>,
    /// The review policy version recorded on every audit row.
    pub policy: Option<String>,
    pub theme: Option<Theme>,
    /// Status lookups: the body size limit and per-provider rate limits.
    #[serde(default)]
    pub lookup: crate::lookup::LookupSettings,
    /// Extra secret patterns (`[[redact]]` tables with `kind` and `pattern`),
    /// redacted on every output like the built-in ones.
    #[serde(default)]
    pub redact: Vec<crate::core::redact::ExtraPattern>,
    /// OpenTelemetry intake: defaults, declared tools, the receiver's limits.
    #[serde(default)]
    pub otlp: crate::otlp::OtlpSettings,
    /// The MCP gateway: where its calls belong, trusted servers, declared tools.
    #[serde(default)]
    pub gateway: crate::gateway::GatewaySettings,
}

impl Config {
    /// Reads the config file; a missing file is an empty config, a broken one an
    /// error that names the file and the problem.
    pub(crate) fn load(path: &Path) -> anyhow::Result<Config> {
        use crate::bounded::{BoundError, CONFIG_BYTES, read_text};
        match read_text(path, "config file", CONFIG_BYTES) {
            Ok(text) => toml::from_str(&text)
                .map_err(|e| anyhow::anyhow!("config file {}: {e}", path.display())),
            Err(BoundError::Read { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
                Ok(Config::default())
            }
            Err(e) => Err(anyhow::anyhow!("{e}")),
        }
    }
}

/// The OS user, for the default identity.
pub(crate) fn os_user() -> String {
    ["USER", "USERNAME", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "local".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_an_empty_config_and_unknown_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        assert_eq!(Config::load(&path).unwrap(), Config::default());
        std::fs::write(&path, "identity = \"maya\"\ntheme = \"mono\"\n").unwrap();
        let config = Config::load(&path).unwrap();
        assert_eq!(config.identity.as_deref(), Some("maya"));
        assert_eq!(config.theme, Some(Theme::Mono));
        std::fs::write(&path, "identiy = \"maya\"\n").unwrap();
        let err = Config::load(&path).unwrap_err().to_string();
        assert!(err.contains("identiy"), "{err}");
    }
}
