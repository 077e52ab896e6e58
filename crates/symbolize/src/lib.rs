//! Symbolization: runtime addresses of a [`cpuprof_profile::Profile`] to
//! functions, source files, lines and inline chains.
//!
//! (Interim version on main while the full symbolizer is built on its own
//! branch: symbol tables and DWARF lines of files named by the mappings.)
#![deny(missing_docs)]

use std::path::PathBuf;

use cpuprof_profile::{Function, Line, Profile};
use object::{Object, ObjectSegment, ObjectSymbol};
use rustc_hash::FxHashMap;

/// What to symbolize with.
#[derive(Clone, Debug)]
pub struct Options {
    /// Binaries named on the command line.
    pub binaries: Vec<PathBuf>,
    /// Directories with separate debug files.
    pub debug_dirs: Vec<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            binaries: Vec::new(),
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
        }
    }
}

/// A problem that did not stop symbolization.
#[derive(Clone, Debug)]
pub struct Warning {
    /// The message.
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Symbolizes every location of `profile` in place.
pub fn symbolize(profile: &mut Profile, options: &Options) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let mut functions: FxHashMap<Function, cpuprof_profile::FunctionId> = FxHashMap::default();
    for (i, f) in profile.functions.iter().enumerate() {
        functions.insert(f.clone(), cpuprof_profile::FunctionId::from_index(i));
    }
    for m in 0..profile.mappings.len() {
        let mapping = profile.mappings[m].clone();
        if mapping.path.is_empty() || mapping.path.starts_with('[') {
            continue;
        }
        let path = options
            .binaries
            .iter()
            .find(|b| {
                b.file_name().map(|n| n.to_string_lossy().into_owned())
                    == Some(mapping.base_name().to_string())
            })
            .cloned()
            .unwrap_or_else(|| PathBuf::from(&mapping.path));
        let Ok(data) = std::fs::read(&path) else {
            warnings.push(Warning {
                message: format!("{}: cannot read", path.display()),
            });
            continue;
        };
        let Ok(file) = object::File::parse(&*data) else {
            continue;
        };
        let mut syms: Vec<(u64, u64, String)> = file
            .symbols()
            .filter(|s| s.kind() == object::SymbolKind::Text)
            .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
            .collect();
        syms.sort();
        let ctx = addr2line::Loader::new(&path).ok();
        let segments: Vec<(u64, u64, u64)> = file
            .segments()
            .map(|s| (s.file_range().0, s.file_range().1, s.address()))
            .collect();
        for loc in profile.locations.iter_mut() {
            if loc.mapping.map(|x| x.index()) != Some(m) || !loc.lines.is_empty() {
                continue;
            }
            let off = loc.address - mapping.start + mapping.offset;
            let Some(&(fo, _, va)) = segments
                .iter()
                .find(|(fo, sz, _)| *fo <= off && off < fo + sz)
            else {
                continue;
            };
            let addr = off - fo + va;
            let mut lines = Vec::new();
            if let Some(ctx) = &ctx {
                if let Ok(mut frames) = ctx.find_frames(addr) {
                    while let Ok(Some(fr)) = frames.next() {
                        let name = fr
                            .function
                            .as_ref()
                            .and_then(|f| f.demangle().ok())
                            .map(|s| s.into_owned())
                            .unwrap_or_default();
                        let file = fr
                            .location
                            .as_ref()
                            .and_then(|l| l.file)
                            .unwrap_or("")
                            .to_string();
                        let line = fr.location.as_ref().and_then(|l| l.line).unwrap_or(0) as i64;
                        if name.is_empty() {
                            continue;
                        }
                        let f = Function {
                            name: name.clone(),
                            system_name: name,
                            filename: file,
                            start_line: 0,
                        };
                        let n = functions.len();
                        let id = *functions.entry(f.clone()).or_insert_with(|| {
                            profile.functions.push(f);
                            cpuprof_profile::FunctionId::from_index(n)
                        });
                        lines.push(Line {
                            function: id,
                            line,
                            column: 0,
                        });
                    }
                }
            }
            if lines.is_empty() {
                let i = syms.partition_point(|s| s.0 <= addr);
                if i > 0 && (syms[i - 1].1 == 0 || addr < syms[i - 1].0 + syms[i - 1].1) {
                    let name = syms[i - 1].2.clone();
                    let f = Function {
                        name: name.clone(),
                        system_name: name,
                        filename: String::new(),
                        start_line: 0,
                    };
                    let n = functions.len();
                    let id = *functions.entry(f.clone()).or_insert_with(|| {
                        profile.functions.push(f);
                        cpuprof_profile::FunctionId::from_index(n)
                    });
                    lines.push(Line {
                        function: id,
                        line: 0,
                        column: 0,
                    });
                }
            }
            loc.lines = lines;
        }
    }
    warnings
}
