//! The layers read downward: no import cycle among the modules of `src/`
//! and `providers/` beyond the known ones listed here (issue 26 item 6).
//!
//! Each file is a module; an edge is a path naming another module
//! (`crate::a::b`, `super::x`), found in the source text without comments
//! and without `#[cfg(test)] mod tests`. A module's paths into its own
//! submodules (declaring and re-exporting them) are not edges; a path to
//! an item re-exported by a parent (`crate::qp::QpType`) is an edge to
//! that parent, which over-counts rather than hides.
//! The strongly connected components of that graph are the import
//! cycles. A cycle that is not inside one of [`KNOWN`] fails the test;
//! so does a known cycle that is gone (shrink the list). Run
//! `scripts/module-cycles.sh` for the full report.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The cycles left, each with why it is still there. A cycle found must
/// lie inside one of these.
const KNOWN: &[(&[&str], &str)] = &[
    (
        &["ah", "context", "pd", "providers", "providers::seam", "wr"],
        "wr::UdDest names the Ah handle (providers read ah_num through it); Ah borrows its Pd, Pd its Context, and the Context holds the provider state",
    ),
    (&["cm::channel", "cm::event", "cm::id"], "an event names the id it is for, ids read their channel's events"),
    (&["qp::attr", "qp::state"], "the transports name their attribute types, the attributes the state kinds"),
];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn collect(dir: &Path, prefix: &[String], out: &mut BTreeMap<Vec<String>, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if prefix.is_empty() && name == "bin" {
                continue; // the tools are crates of their own
            }
            let mut sub = prefix.to_vec();
            sub.push(name);
            collect(&p, &sub, out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            let mut m = prefix.to_vec();
            if stem != "mod" && stem != "lib" {
                m.push(stem.to_string());
            }
            // Test modules (tests.rs, *_tests.rs) are cfg(test): not layers.
            if m.last().is_some_and(|l| l == "tests" || l.ends_with("_tests")) {
                continue;
            }
            out.insert(m, std::fs::read_to_string(&p).unwrap());
        }
    }
}

/// The source without line comments, string literals' contents and the
/// unit-test module.
fn code(src: &str) -> String {
    let src = match src.find("#[cfg(test)]\nmod tests") {
        Some(i) => &src[..i],
        None => src,
    };
    let mut out = String::with_capacity(src.len());
    for line in src.lines() {
        let line = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Every `a::b::c` path in `text` (identifiers joined by `::`), with what
/// precedes it (to tell `x::` from `crate::x::`).
fn paths(text: &str) -> Vec<Vec<String>> {
    let b = text.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if ident(b[i]) && (i == 0 || !(ident(b[i - 1]) || b[i - 1] == b':')) {
            let mut segs = Vec::new();
            let mut j = i;
            loop {
                let s = j;
                while j < b.len() && ident(b[j]) {
                    j += 1;
                }
                segs.push(text[s..j].to_string());
                if b.get(j) == Some(&b':') && b.get(j + 1) == Some(&b':') && b.get(j + 2).is_some_and(|&c| ident(c)) {
                    j += 2;
                } else if b.get(j) == Some(&b':') && b.get(j + 1) == Some(&b':') && b.get(j + 2) == Some(&b'{') {
                    // a group: every member is a path after the prefix
                    let close = text[j..].find('}').map_or(b.len(), |k| j + k);
                    for member in text[j + 3..close].split(',') {
                        let mut p = segs.clone();
                        p.extend(member.split("::").map(|s| s.trim().to_string()).filter(|s| !s.is_empty()));
                        found.push(p);
                    }
                    j = close;
                    break;
                } else {
                    break;
                }
            }
            if segs.len() > 1 {
                found.push(segs);
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    found
}

fn graph(root: &Path) -> Graph {
    let mut files = BTreeMap::new();
    collect(&root.join("src"), &[], &mut files);
    collect(&root.join("providers"), &["providers".to_string()], &mut files);
    let modules: BTreeSet<Vec<String>> = files.keys().cloned().collect();
    let resolve = |p: &[String]| -> Option<Vec<String>> {
        (1..=p.len()).rev().map(|n| p[..n].to_vec()).find(|m| modules.contains(m))
    };
    let mut g = Graph::new();
    for (m, src) in &files {
        let name = m.join("::");
        let edges = g.entry(name.clone()).or_default();
        for p in paths(&code(src)) {
            let target = match p[0].as_str() {
                "crate" => resolve(&p[1..]),
                "super" => {
                    let mut base = m[..m.len().saturating_sub(1)].to_vec();
                    let mut rest = &p[1..];
                    while rest.first().is_some_and(|s| s == "super") {
                        base.pop();
                        rest = &rest[1..];
                    }
                    base.extend(rest.iter().cloned());
                    resolve(&base)
                }
                "self" => {
                    let mut base = m.clone();
                    base.extend(p[1..].iter().cloned());
                    resolve(&base)
                }
                child => {
                    let mut base = m.clone();
                    base.push(child.to_string());
                    if modules.contains(&base) {
                        base.extend(p[1..].iter().cloned());
                        resolve(&base)
                    } else {
                        None
                    }
                }
            };
            if let Some(t) = target {
                let t = t.join("::");
                // A module's own submodules (declared and re-exported by
                // it) are not an import: what they import is.
                if !t.is_empty() && t != name && !t.starts_with(&format!("{name}::")) {
                    edges.insert(t);
                }
            }
        }
    }
    g
}

/// Tarjan's strongly connected components of more than one module.
fn cycles(g: &Graph) -> Vec<BTreeSet<String>> {
    struct T<'g> {
        g: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on: BTreeSet<&'g str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'g>(t: &mut T<'g>, v: &'g str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.g.contains_key(w) {
                continue;
            }
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = BTreeSet::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                t.out.push(comp);
            }
        }
    }
    let mut t = T { g, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on: BTreeSet::new(), out: Vec::new() };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

fn report(g: &Graph, found: &[BTreeSet<String>]) -> String {
    let mut s = String::new();
    for c in found {
        s += &format!("cycle of {}:\n", c.len());
        for m in c {
            let inside: Vec<&str> = g[m].iter().filter(|t| c.contains(*t)).map(String::as_str).collect();
            s += &format!("  {m} -> {}\n", inside.join(", "));
        }
    }
    s
}

#[test]
fn no_import_cycles_beyond_the_known_ones() {
    let g = graph(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(g.len() > 50, "the sources were not found");
    let found = cycles(&g);
    println!("{}", report(&g, &found));
    let known: Vec<BTreeSet<String>> =
        KNOWN.iter().map(|(c, _)| c.iter().map(|s| s.to_string()).collect()).collect();
    let new: Vec<_> = found.iter().filter(|c| !known.iter().any(|k| c.is_subset(k))).cloned().collect();
    assert!(new.is_empty(), "new import cycles (layers must read downward):\n{}", report(&g, &new));
    for (k, (_, why)) in known.iter().zip(KNOWN) {
        assert!(
            found.iter().any(|c| c == k),
            "the known cycle {k:?} ({why}) is not there as listed any more: shrink KNOWN in tests/module_cycles.rs"
        );
    }
}

#[test]
fn the_detector_finds_a_cycle() {
    let mut g = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        g.entry(a.to_string()).or_default().insert(b.to_string());
        g.entry(b.to_string()).or_default();
    }
    g.entry("d".to_string()).or_default();
    let found = cycles(&g);
    assert_eq!(found, vec![["a", "b", "c"].iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()]);
    let p = paths("use crate::{ah::attr::AhAttr, context::Context};\nlet x = super::seam::Caps;");
    assert!(p.contains(&vec!["crate".into(), "ah".into(), "attr".into(), "AhAttr".into()]), "{p:?}");
    assert!(p.contains(&vec!["crate".into(), "context".into(), "Context".into()]), "{p:?}");
    assert!(p.contains(&vec!["super".into(), "seam".into(), "Caps".into()]), "{p:?}");
}
