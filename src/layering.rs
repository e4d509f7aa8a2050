//! Layers import downward, and no modules of the core import each other in a
//! circle. This test reads every `.rs` file of the library, collects the
//! `crate::…`, `super::…` and `self::…` paths of its code (comments, strings and
//! `#[cfg(test)]` items left out), and builds a graph of modules.
//!
//! Granularity: a file is a module, and every edge is lifted to the children of
//! the nearest module that holds both ends: `core/metrics/facts.rs` naming
//! `crate::core::model::State` is the edge `core::metrics → core::model`, and
//! `core/metrics/facts.rs` naming `super::release::VetoKind` is the edge
//! `core::metrics::facts → core::metrics::release`. A module and its own
//! submodules are one unit seen from outside, so a child reading its parent is
//! no edge. The graph of siblings under `src/core` (at every depth) must have no
//! circle; a circle found is named with the file and path behind each edge. No
//! file outside `src/cli` may name `crate::cli`: the command line is the top of
//! the crate, never a library's dependency.
//!
//! The session is the only door (G7): outside `src/store`, a file that holds
//! the store itself — names the `Store` trait (`dyn Store`, `store::Store`),
//! opens one (`store::Location`, the command line's `open_store`,
//! `create_store`, `open_existing`), reads across every tenant
//! (`Scope::Every`) or widens a session (`Session::walking`) — is one of
//! [`RAW_STORE`], each with the reason it is not a session. A file added there
//! fails the test until it is listed; a listed file that no longer does fails
//! until it is taken off.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path below the crate root: `["core", "metrics", "facts"]`.
type Module = Vec<String>;

/// Why an edge exists: the file and the path it names.
type Evidence = (String, String);

/// Every library file with its module path (the binary's `main.rs` is its own crate).
fn files(dir: &Path, prefix: &[String], out: &mut Vec<(Module, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 name")
            .to_owned();
        if path.is_dir() {
            let mut inner = prefix.to_vec();
            inner.push(name);
            files(&path, &inner, out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            if prefix.is_empty() && stem == "main" {
                continue;
            }
            let mut module = prefix.to_vec();
            if !matches!(stem, "mod" | "lib") {
                module.push(stem.to_owned());
            }
            let text = std::fs::read_to_string(&path).expect("read file");
            out.push((module, text));
        }
    }
}

/// The code of a file with comments, string and character literals blanked.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && matches!(next, Some('"' | '#'))
            && !chars[..i]
                .last()
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (1..=hashes).all(|h| chars.get(j + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push_str("\"\"");
        } else if c == '"' {
            i = past_quoted(&chars, i);
            out.push_str("\"\"");
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            i = past_quoted(&chars, i);
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Where a quoted literal opening at `at` ends (past its closing quote),
/// escapes honoured.
fn past_quoted(chars: &[char], at: usize) -> usize {
    let quote = chars[at];
    let mut i = at + 1;
    while i < chars.len() && chars[i] != quote {
        if chars[i] == '\\' {
            i += 1;
        }
        i += 1;
    }
    i + 1
}

/// The code without the items under `#[cfg(test)]`, and the names of the
/// submodules declared there (`#[cfg(test)] mod tests;`).
fn without_tests(code: &str) -> (String, Vec<String>) {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::new();
    let mut test_modules = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (k, ch) in item.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    let words: Vec<&str> = item[..k].split_whitespace().collect();
                    if let Some(pos) = words.iter().position(|w| *w == "mod")
                        && let Some(name) = words.get(pos + 1)
                    {
                        test_modules.push((*name).to_owned());
                    }
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_modules)
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths a piece of code names from `crate`, `super` or `self`, use groups
/// (`use super::{a, b::c}`) expanded; each is a list of segments.
fn paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':');
        if starts_word && is_ident(chars[i]) {
            let mut j = i;
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            let word: String = chars[i..j].iter().collect();
            if matches!(word.as_str(), "crate" | "super" | "self") {
                let (end, found) = tree(&chars, j, vec![word]);
                out.extend(found);
                i = end.max(j);
                continue;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Reads the rest of a path after `prefix` from `at`: more `::segment`s, then
/// perhaps a `{…}` group. Returns where it stopped and the full paths.
fn tree(chars: &[char], mut at: usize, mut prefix: Vec<String>) -> (usize, Vec<Vec<String>>) {
    let skip_space = |mut k: usize| {
        while k < chars.len() && chars[k].is_whitespace() {
            k += 1;
        }
        k
    };
    loop {
        let k = skip_space(at);
        if chars.get(k) == Some(&':') && chars.get(k + 1) == Some(&':') {
            let s = skip_space(k + 2);
            if chars.get(s) == Some(&'{') {
                let mut found = Vec::new();
                let mut p = s + 1;
                loop {
                    p = skip_space(p);
                    match chars.get(p) {
                        None => return (p, found),
                        Some('}') => return (p + 1, found),
                        Some(',') => p += 1,
                        Some(c) if is_ident(*c) => {
                            let mut q = p;
                            while q < chars.len() && is_ident(chars[q]) {
                                q += 1;
                            }
                            let word: String = chars[p..q].iter().collect();
                            let mut inner = prefix.clone();
                            if word != "self" {
                                inner.push(word);
                            }
                            let (end, more) = tree(chars, q, inner);
                            found.extend(more);
                            p = end;
                            // `as name`
                            let a = skip_space(p);
                            if chars[a..].starts_with(&['a', 's'])
                                && chars.get(a + 2).is_some_and(|c| c.is_whitespace())
                            {
                                let mut b = skip_space(a + 2);
                                while b < chars.len() && is_ident(chars[b]) {
                                    b += 1;
                                }
                                p = b;
                            }
                        }
                        Some(_) => p += 1,
                    }
                }
            }
            let mut q = s;
            while q < chars.len() && is_ident(chars[q]) {
                q += 1;
            }
            if q == s {
                // `::*` or `::<…>`: the path ends here.
                return (s, vec![prefix]);
            }
            prefix.push(chars[s..q].iter().collect());
            at = q;
        } else {
            return (at, vec![prefix]);
        }
    }
}

/// `path` as named from `module` (a file's module, `is_dir` for `mod.rs`),
/// made absolute from the crate root.
fn absolute(module: &Module, path: &[String]) -> Module {
    let mut base: Module = Vec::new();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => rest = &path[1..],
        Some("self" | "super") => {
            base = module.clone();
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "self" => {}
                    "super" => {
                        base.pop();
                    }
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        _ => {}
    }
    base.extend(rest.iter().cloned());
    base
}

/// The graph: every library file's module, and the modules each names.
fn graph() -> Vec<(Module, Vec<(Module, String)>)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &[], &mut all);
    let known: BTreeSet<Module> = all.iter().map(|(m, _)| m.clone()).collect();
    let mut test_only = BTreeSet::new();
    let mut out = Vec::new();
    for (module, text) in &all {
        let (code, tests) = without_tests(&code_only(text));
        for name in tests {
            let mut child = module.clone();
            child.push(name);
            test_only.insert(child);
        }
        let mut named = Vec::new();
        for path in paths(&code) {
            let mut target = absolute(module, &path);
            while !target.is_empty() && !known.contains(&target) {
                target.pop();
            }
            if !target.is_empty() {
                named.push((target, path.join("::")));
            }
        }
        out.push((module.clone(), named));
    }
    out.retain(|(m, _)| !test_only.iter().any(|t| m.starts_with(t)));
    out
}

/// The edges between siblings, lifted as the module doc says, with their evidence.
fn sibling_edges(within: &[&str]) -> BTreeMap<Module, BTreeMap<Module, Vec<Evidence>>> {
    let mut edges: BTreeMap<Module, BTreeMap<Module, Vec<Evidence>>> = BTreeMap::new();
    for (from, named) in graph() {
        if !from.starts_with(&within.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()) {
            continue;
        }
        for (to, path) in named {
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() || common < within.len() {
                continue;
            }
            edges
                .entry(from[..=common].to_vec())
                .or_default()
                .entry(to[..=common].to_vec())
                .or_default()
                .push((format!("src/{}", from.join("/")), path));
        }
    }
    edges
}

/// A circle of the graph, if there is one: the modules in order, back to the first.
fn circle(edges: &BTreeMap<Module, BTreeMap<Module, Vec<Evidence>>>) -> Option<Vec<Module>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &Module,
        edges: &BTreeMap<Module, BTreeMap<Module, Vec<Evidence>>>,
        marks: &mut BTreeMap<Module, Mark>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        marks.insert(node.clone(), Mark::Open);
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flat_map(BTreeMap::keys) {
            match marks.get(next) {
                Some(Mark::Open) => {
                    let start = stack.iter().position(|m| m == next).expect("on stack");
                    let mut found = stack[start..].to_vec();
                    found.push(next.clone());
                    return Some(found);
                }
                Some(Mark::Done) => {}
                None => {
                    if let Some(found) = visit(next, edges, marks, stack) {
                        return Some(found);
                    }
                }
            }
        }
        stack.pop();
        marks.insert(node.clone(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in edges.keys() {
        if !marks.contains_key(node)
            && let Some(found) = visit(node, edges, &mut marks, &mut Vec::new())
        {
            return Some(found);
        }
    }
    None
}

/// A circle in words: each edge with the first file and path behind it.
fn describe(found: &[Module], edges: &BTreeMap<Module, BTreeMap<Module, Vec<Evidence>>>) -> String {
    found
        .windows(2)
        .map(|pair| {
            let (file, path) = &edges[&pair[0]][&pair[1]][0];
            format!(
                "{} → {} ({file}.rs names {path})",
                pair[0].join("::"),
                pair[1].join("::")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_circle_among_the_modules_of_the_core() {
    let edges = sibling_edges(&["core"]);
    assert!(
        edges.contains_key(&vec!["core".to_owned(), "rules".to_owned()]),
        "the reader found no edge at all: {edges:?}"
    );
    if let Some(found) = circle(&edges) {
        panic!(
            "modules of the core import each other in a circle:\n{}",
            describe(&found, &edges)
        );
    }
}

/// The files outside `src/store` that hold the store itself, and why a
/// session does not fit. Everything else reads and writes through a `Session`.
const RAW_STORE: &[(&str, &str)] = &[
    (
        "cli",
        "opens the store, identifies the acting identity from its grants and login, \
         checks the chain for the command's door, and makes the session every command \
         reads through",
    ),
    (
        "cli::commands::console",
        "`holdfast demo` creates the demo store and loads the packet as the demo's \
         identity (a writer, like ingest), and tells a demo store by its first audit \
         row before any identity is known",
    ),
    (
        "cli::commands::copy",
        "`db copy` copies every row of one store into another as its owner",
    ),
    (
        "cli::commands::drill",
        "the drill runs its cases into a scratch store of its own",
    ),
    (
        "cli::commands::gateway",
        "the gateway writes through the ingest path as its identity (an `Ingester`)",
    ),
    (
        "cli::commands::ingest",
        "ingest writes through the ingest path as its identity (an `Ingester`)",
    ),
    (
        "cli::commands::serve",
        "the OpenTelemetry receiver writes through the ingest path as its identity",
    ),
    (
        "drill",
        "the drill writes its cases' records through ingest into a store (or a tenant) \
         of its own and reads its own operations back for the verdicts",
    ),
    (
        "gateway::gate",
        "the gateway records a call before forwarding it, through the ingest path as \
         its identity, and reads back the operations of its own calls",
    ),
    (
        "ingest",
        "the ingest path: an `Ingester` is the writer's door",
    ),
    (
        "otlp::door",
        "the OpenTelemetry door writes through the ingest path and keeps its waiting \
         spans, as its identity",
    ),
    ("otlp::file", "an OpenTelemetry file through the door"),
    (
        "otlp::receiver",
        "the OpenTelemetry receiver through the door",
    ),
    (
        "report",
        "`audit verify`'s check of the kept metric facts covers every tenant, as the \
         walk of the chain it follows does (`Session::walking`)",
    ),
    (
        "review",
        "reads the grants and the login that an actor, and so a session, is made from",
    ),
];

/// What a file names that holds the store itself, in words; empty for none.
fn raw_store(module: &Module, code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let flat: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    for token in [
        "dyn Store",
        "Scope::Every",
        ".walking(",
        "open_store(",
        "create_store(",
        "open_existing(",
    ] {
        if flat.contains(token) {
            found.push(token.to_owned());
        }
    }
    for path in paths(code) {
        let target = absolute(module, &path);
        if target.len() == 2
            && target[0] == "store"
            && matches!(target[1].as_str(), "Store" | "Location")
        {
            found.push(path.join("::"));
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn only_the_listed_files_hold_the_store_itself() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &[], &mut all);
    let listed: BTreeMap<String, &str> = RAW_STORE
        .iter()
        .map(|(module, why)| ((*module).to_owned(), *why))
        .collect();
    let mut holders = BTreeMap::new();
    for (module, text) in &all {
        if module.first().is_some_and(|m| m == "store") || module.is_empty() {
            continue;
        }
        let (code, _) = without_tests(&code_only(text));
        let found = raw_store(module, &code);
        if !found.is_empty() {
            holders.insert(module.join("::"), found);
        }
    }
    let unlisted: Vec<String> = holders
        .iter()
        .filter(|(module, _)| !listed.contains_key(*module))
        .map(|(module, found)| format!("{module} names {}", found.join(", ")))
        .collect();
    assert!(
        unlisted.is_empty(),
        "these files reach the store around a session; read through a `Session`, or \
         list the file in RAW_STORE with the reason:\n{}",
        unlisted.join("\n")
    );
    let gone: Vec<&String> = listed
        .keys()
        .filter(|module| !holders.contains_key(*module))
        .collect();
    assert!(
        gone.is_empty(),
        "these files no longer hold the store itself: take them off RAW_STORE: {gone:?}"
    );
}

#[test]
fn the_raw_store_reader_sees_every_way_in() {
    let module = vec!["tui".to_owned(), "runner".to_owned()];
    for (code, want) in [
        ("fn f(s: &dyn  Store) {}", "dyn Store"),
        ("use crate::store::{Session, Store};", "crate::store::Store"),
        (
            "use super::super::store::Location;",
            "super::super::store::Location",
        ),
        ("s.detail(&Scope::Every, id)", "Scope::Every"),
        ("let w = session.walking().await?;", ".walking("),
        ("let s = ctx.open_store().await?;", "open_store("),
    ] {
        assert_eq!(raw_store(&module, &code_only(code)), [want], "{code}");
    }
    let scoped = "// a dyn Store in a comment\nlet s = \"Scope::Every\"; session.detail(id)";
    assert!(raw_store(&module, &code_only(scoped)).is_empty());
}

#[test]
fn nothing_outside_the_command_line_imports_it() {
    let cli = vec!["cli".to_owned()];
    let offenders: Vec<String> = graph()
        .into_iter()
        .filter(|(from, _)| !from.starts_with(&cli) && !from.is_empty())
        .flat_map(|(from, named)| {
            named
                .into_iter()
                .filter(|(to, _)| to.starts_with(&cli))
                .map(move |(_, path)| format!("src/{}.rs names {path}", from.join("/")))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "the library imports the command line:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_reader_finds_grouped_and_relative_paths() {
    let code = code_only(
        "use super::{audit::{self, AuditDraft}, model as m};\n// use crate::cli::x;\nlet s = \"crate::cli\"; crate::core::ids::Sha256::of(x);",
    );
    let found: Vec<String> = paths(&code).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        found,
        [
            "super::audit",
            "super::audit::AuditDraft",
            "super::model",
            "crate::core::ids::Sha256::of"
        ]
    );
    let module = vec!["core".to_owned(), "access".to_owned()];
    assert_eq!(
        absolute(&module, &["super".into(), "audit".into()]),
        ["core", "audit"]
    );
    let (kept, tests) =
        without_tests("a\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod t { use x; }\nb");
    assert_eq!(tests, ["tests"]);
    assert_eq!(kept.split_whitespace().collect::<Vec<_>>(), ["a", "b"]);
}
