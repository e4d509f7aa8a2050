//! The guides link to each other by file and heading; a heading renamed or a
//! section moved must not leave a link pointing nowhere. This test reads the
//! README, the guides under `docs/`, the design and architecture documents and the benchmarks,
//! and checks every relative link's file and `#anchor` (GitHub's heading slugs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// GitHub's anchor for a heading: lower case, punctuation dropped except `-`
/// and `_`, spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's headings, code blocks left out.
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            out.push(slug(&line[hashes + 1..]));
        }
    }
    out
}

/// Every `](target)` of a Markdown text outside code blocks, with its line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let tail = &rest[at + 2..];
            let Some(end) = tail.find(')') else { break };
            out.push((n + 1, tail[..end].to_owned()));
            rest = &tail[end..];
        }
    }
    out
}

#[test]
fn every_link_between_the_documents_reaches_a_file_and_a_heading() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = ["README.md", "DESIGN.md", "ARCHITECTURE.md", "BENCHMARKS.md"]
        .iter()
        .map(|f| root.join(f))
        .collect();
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        files.push(entry.unwrap().path());
    }
    let texts: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|f| {
            (
                f.canonicalize().unwrap(),
                std::fs::read_to_string(f).unwrap(),
            )
        })
        .collect();
    let mut broken = Vec::new();
    for (file, text) in &texts {
        for (line, target) in links(text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let to = if path.is_empty() {
                file.clone()
            } else {
                match file.parent().unwrap().join(path).canonicalize() {
                    Ok(p) => p,
                    Err(_) => {
                        broken.push(format!("{}:{line}: {target}: no such file", file.display()));
                        continue;
                    }
                }
            };
            if anchor.is_empty() || to.is_dir() {
                continue;
            }
            let found = texts
                .get(&to)
                .is_some_and(|t| anchors(t).iter().any(|a| a == anchor));
            if !found {
                broken.push(format!(
                    "{}:{line}: {target}: no such heading",
                    file.display()
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that reach nothing:\n{}",
        broken.join("\n")
    );
}

#[test]
fn a_heading_slug_is_githubs() {
    assert_eq!(
        slug("A tool's own drill: `holdfast drill --tool T06`"),
        "a-tools-own-drill-holdfast-drill---tool-t06"
    );
    assert_eq!(slug("Team mode (PostgreSQL)"), "team-mode-postgresql");
}
