//! Finding and reading the source files that listings annotate.
//!
//! Paths come from DWARF (the compilation directory joined with the file
//! name), so they name where the program was built. [`SourceFiles`]
//! resolves them as Go pprof does with `-source_path` and `-trim_path`:
//! a prefix of `trim_path` is stripped first (without one, and with a
//! search path, everything up to a search directory's own name is); an
//! absolute result is opened as it is; a relative one is looked up under
//! each search directory and its parents. We go one step further when an
//! absolute path is not found: the search directories are tried with the
//! path's trailing components (`a/b/c.c`, `b/c.c`, `c.c`), so that a
//! moved tree is found again without working out the prefix to trim.
//! A file found nowhere may still be fetched ([`SourceFiles::fetch_with`]:
//! the CLI asks debuginfod's `/buildid/ID/source/PATH`).

use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

/// Fetches a source file that is not on this machine: the DWARF path to a
/// local copy (e.g. from a debuginfod server), None when it cannot.
pub type SourceFetcher = Box<dyn FnMut(&str) -> Option<PathBuf>>;

/// Where to look for source files, and the files read so far.
#[derive(Debug, Default)]
pub struct SourceFiles {
    /// Directories searched for relative (and not found) paths; the
    /// current directory when empty.
    search: Vec<PathBuf>,
    /// Prefixes removed from paths before searching.
    trim: Vec<String>,
    /// Lines of each file read, by the path DWARF gave; None when it was
    /// not found.
    cache: FxHashMap<String, Option<Vec<String>>>,
    /// The last resort for files not found.
    fetcher: Fetcher,
}

#[derive(Default)]
struct Fetcher(Option<SourceFetcher>);

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}

impl SourceFiles {
    /// A source search: `source_path` and `trim_path` are `:`-separated
    /// lists, as pprof's flags take them.
    pub fn new(source_path: Option<&str>, trim_path: Option<&str>) -> SourceFiles {
        let split = |s: Option<&str>| -> Vec<String> {
            s.unwrap_or("")
                .split(':')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect()
        };
        SourceFiles {
            search: split(source_path).into_iter().map(PathBuf::from).collect(),
            trim: split(trim_path),
            cache: FxHashMap::default(),
            fetcher: Fetcher(None),
        }
    }

    /// The same search, with `fetcher` asked for the files it does not
    /// find.
    pub fn fetch_with(mut self, fetcher: SourceFetcher) -> SourceFiles {
        self.fetcher = Fetcher(Some(fetcher));
        self
    }

    /// The lines of the source file DWARF calls `path` (without line
    /// terminators), or None when it cannot be found.
    pub fn lines(&mut self, path: &str) -> Option<&[String]> {
        if !self.cache.contains_key(path) {
            let found = self.locate(path).or_else(|| {
                let fetch = self.fetcher.0.as_mut()?;
                fetch(path)
            });
            let lines = found.and_then(|found| {
                let bytes = std::fs::read(found).ok()?;
                let text = String::from_utf8_lossy(&bytes);
                Some(
                    text.lines()
                        .map(|l| l.trim_end_matches('\r').to_string())
                        .collect(),
                )
            });
            self.cache.insert(path.to_string(), lines);
        }
        self.cache.get(path).and_then(|l| l.as_deref())
    }

    /// Where the file DWARF calls `path` is on this machine, if anywhere.
    pub fn locate(&self, path: &str) -> Option<PathBuf> {
        if path.is_empty() {
            return None;
        }
        let trimmed = self.trimmed(path);
        let candidate = Path::new(trimmed);
        if candidate.is_absolute() {
            if candidate.is_file() {
                return Some(candidate.to_path_buf());
            }
        } else {
            let cwd = [PathBuf::from(".")];
            let search = if self.search.is_empty() {
                &cwd[..]
            } else {
                &self.search[..]
            };
            for dir in search {
                // The directory and each of its parents.
                for base in dir.ancestors() {
                    let file = base.join(candidate);
                    if file.is_file() {
                        return Some(file);
                    }
                }
            }
        }
        // Not found as given: the path's trailing components under each
        // search directory.
        let components: Vec<&str> = trimmed.split('/').filter(|c| !c.is_empty()).collect();
        for dir in &self.search {
            for skip in 0..components.len() {
                let file = dir.join(components[skip..].join("/"));
                if file.is_file() {
                    return Some(file);
                }
            }
        }
        None
    }

    /// `path` without the first `trim_path` prefix it has (or, without
    /// `trim_path`, up to and including `/NAME/` where NAME is a search
    /// directory's last component), and without the `/proc/self/cwd/`
    /// that some build systems record.
    fn trimmed<'a>(&self, path: &'a str) -> &'a str {
        if self.trim.is_empty() {
            for dir in &self.search {
                let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                let marker = format!("/{name}/");
                if let Some(at) = path.find(&marker) {
                    return &path[at + marker.len()..];
                }
            }
        }
        let defaults = ["/proc/self/cwd/./", "/proc/self/cwd/"];
        for prefix in self
            .trim
            .iter()
            .map(String::as_str)
            .chain(defaults.iter().copied())
        {
            let with_slash;
            let prefix = if prefix.ends_with('/') {
                prefix
            } else {
                with_slash = format!("{prefix}/");
                &with_slash
            };
            if let Some(rest) = path.strip_prefix(prefix) {
                return rest;
            }
        }
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_path_then_search_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.c"), "int a;\n").unwrap();
        let search = dir.path().to_str().unwrap();
        let mut files = SourceFiles::new(Some(search), Some("/build/here"));
        assert_eq!(
            files.lines("/build/here/src/a.c").unwrap(),
            &["int a;".to_string()]
        );
        // Without trim_path: the trailing components are tried.
        let files = SourceFiles::new(Some(search), None);
        assert_eq!(
            files.locate("/elsewhere/x/src/a.c"),
            Some(dir.path().join("src/a.c"))
        );
        // Nothing to find.
        assert_eq!(files.locate("/elsewhere/x/src/b.c"), None);
        assert_eq!(files.locate(""), None);
        // What is found nowhere is asked of the fetcher, once per path.
        let cache = tempfile::tempdir().unwrap();
        let copy = cache.path().join("source##gone##fetched.c");
        std::fs::write(&copy, "int fetched;\n").unwrap();
        let asked = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let log = asked.clone();
        let mut files = SourceFiles::new(Some(search), None).fetch_with(Box::new(move |p| {
            log.borrow_mut().push(p.to_string());
            (p == "/gone/fetched.c").then(|| copy.clone())
        }));
        assert_eq!(
            files.lines("/gone/fetched.c"),
            Some(&["int fetched;".to_string()][..])
        );
        assert_eq!(files.lines("/gone/other.c"), None);
        assert_eq!(files.lines("/gone/other.c"), None);
        assert_eq!(*asked.borrow(), ["/gone/fetched.c", "/gone/other.c"]);
    }

    #[test]
    fn search_directory_name_in_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join("lib")).unwrap();
        std::fs::write(project.join("lib/b.c"), "b\n").unwrap();
        let files = SourceFiles::new(Some(project.to_str().unwrap()), None);
        assert_eq!(
            files.locate("/remote/project/lib/b.c"),
            Some(project.join("lib/b.c"))
        );
    }
}
