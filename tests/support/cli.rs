//! Runs the real `holdfast` binary against a store in a temp dir, with the clock
//! frozen and no user config, and captures what it prints.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The instant every run of the review fixture sees.
pub const NOW: &str = "2026-09-05T10:10:00Z";

/// One run's exit code and output.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// The number of the first rule (`Gn`) its stderr names.
    pub fn first_rule(&self) -> Option<String> {
        self.stderr.split('G').nth(1).map(|r| {
            r.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
    }

    /// Panics with the whole output unless the exit code is `code`.
    pub fn expect_code(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Panics with the whole output unless a guard refused with `rule` (exit 3,
    /// `refused: Gn: …` on stderr).
    pub fn refused(self, rule: &str) -> Run {
        let run = self.expect_code(3);
        assert!(
            run.stderr.starts_with(&format!("refused: {rule}: ")),
            "expected a {rule} refusal:\n{}",
            run.stderr
        );
        run
    }

    /// The stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", self.stdout))
    }
}

/// A temp store, loaded with a fixture.
pub struct Cli {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
}

impl Cli {
    /// An empty store.
    pub fn empty() -> Cli {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("store.db");
        Cli { dir, db }
    }

    /// A store holding `fixture` (a path under `tests/fixtures`).
    pub fn with(fixture: &str) -> Cli {
        let cli = Cli::empty();
        let path = format!("{}/tests/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR"));
        cli.run("loader", &["ingest", &path]).expect_code(0);
        cli
    }

    /// A store holding the demo packet the binary ships.
    pub fn demo() -> Cli {
        let cli = Cli::empty();
        let path = format!("{}/assets/demo/tc094.jsonl", env!("CARGO_MANIFEST_DIR"));
        cli.run("loader", &["ingest", &path]).expect_code(0);
        cli
    }

    /// Runs `holdfast ARGS` as `identity` with the clock frozen at `now`.
    pub fn run_at(&self, now: &str, identity: &str, args: &[&str]) -> Run {
        Run::from(
            self.command_at(now, identity, args)
                .output()
                .expect("run holdfast"),
        )
    }

    /// The command to run `holdfast ARGS` as `identity`.
    pub fn command(&self, identity: &str, args: &[&str]) -> Command {
        self.command_at(NOW, identity, args)
    }

    /// The command to run `holdfast ARGS` as `identity` at `now`.
    pub fn command_at(&self, now: &str, identity: &str, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_holdfast"));
        command
            .env_remove("HOLDFAST_DB")
            .env_remove("HOLDFAST_NOW")
            .env_remove("HOLDFAST_AS")
            .env("HOLDFAST_DATA_DIR", self.dir.path())
            .env("HOLDFAST_CONFIG", self.dir.path().join("no-config.toml"))
            .env("NO_COLOR", "1")
            .arg("--db")
            .arg(&self.db)
            .arg("--now")
            .arg(now)
            .arg("--as")
            .arg(identity)
            .args(args);
        command
    }

    /// Runs `holdfast ARGS` as `identity` and waits for it.
    pub fn run(&self, identity: &str, args: &[&str]) -> Run {
        Run::from(self.command(identity, args).output().expect("run holdfast"))
    }

    /// `ingest PATH --rejects REJECTS` as `identity`: the good lines committed.
    pub fn ingest_rejecting(&self, identity: &str, path: &str, rejects: &std::path::Path) -> Run {
        self.run(
            identity,
            &["ingest", path, "--rejects", &rejects.to_string_lossy()],
        )
        .expect_code(0)
    }

    /// `review ID ACTION EXTRA… --rationale …` as `identity`.
    pub fn review(&self, identity: &str, id: &str, action: &str, extra: &[&str]) -> Run {
        let mut args = vec!["review", id, action];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--rationale", "checked the provider console by hand"]);
        self.run(identity, &args)
    }

    /// The operation's current state, from `show --json`, as `identity`.
    pub fn state(&self, identity: &str, id: &str) -> String {
        let shown = self
            .run(identity, &["show", id, "--json"])
            .expect_code(0)
            .json();
        shown["state"].as_str().unwrap_or_default().to_owned()
    }

    /// The audit chain head's seq, from `audit digest --json` (checks it verifies).
    pub fn head(&self) -> i64 {
        let digest = self
            .run("auditor", &["audit", "digest", "--json"])
            .expect_code(0)
            .json();
        digest["seq"].as_i64().unwrap_or(-1)
    }
}
