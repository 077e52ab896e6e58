//! Saved named configurations: a name for a query string, kept in
//! `settings.json` under the user's config directory
//! (`$XDG_CONFIG_HOME/cpuprof`, else `~/.config/cpuprof`), as Go pprof
//! keeps its web UI's in `pprof/settings.json`.
//!
//! `GET /ui/configs` lists them (`{"configs":[{"name":..,"query":..}]}`);
//! `POST /ui/configs` with `{"name":..,"query":..}` saves one (replacing
//! one of that name) and with `{"name":..,"delete":true}` removes one.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::Response;

/// The most configurations kept.
pub const MAX_CONFIGS: usize = 200;

/// `settings.json` in the user's config directory, if there is one.
pub fn default_path() -> Option<PathBuf> {
    let dir = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(dir.join("cpuprof").join("settings.json"))
}

/// The saved configurations, `(name, query)`, in the order saved.
pub fn read(path: &Path) -> Vec<(String, String)> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        return Vec::new();
    };
    value["configs"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|c| {
                    Some((
                        c["name"].as_str()?.to_string(),
                        c["query"].as_str()?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn write(path: &Path, configs: &[(String, String)]) -> std::io::Result<()> {
    let list: Vec<Value> = configs
        .iter()
        .map(|(name, query)| json!({"name": name, "query": query}))
        .collect();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(&json!({ "configs": list })).unwrap_or_default();
    // Written aside, then renamed: a reader never sees half a file.
    let temp = path.with_extension("json.tmp");
    std::fs::write(&temp, text + "\n")?;
    std::fs::rename(&temp, path)
}

fn listing(configs: &[(String, String)]) -> Response {
    let list: Vec<Value> = configs
        .iter()
        .map(|(name, query)| json!({"name": name, "query": query}))
        .collect();
    Response::new(
        200,
        "application/json",
        json!({ "configs": list }).to_string(),
    )
}

/// `GET /ui/configs`.
pub fn list(path: Option<&Path>) -> Response {
    listing(&path.map(read).unwrap_or_default())
}

/// `POST /ui/configs`: save or delete one.
pub fn post(path: Option<&Path>, body: &[u8]) -> Response {
    let Some(path) = path else {
        return Response::text(500, "no config directory (set HOME or XDG_CONFIG_HOME)\n");
    };
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return Response::text(400, "expected a JSON object\n");
    };
    let name = request["name"].as_str().unwrap_or("").trim().to_string();
    if name.is_empty() || name.len() > 100 {
        return Response::text(400, "a configuration needs a name (at most 100 bytes)\n");
    }
    let mut configs = read(path);
    configs.retain(|(n, _)| *n != name);
    if request["delete"].as_bool() != Some(true) {
        let query = request["query"]
            .as_str()
            .unwrap_or("")
            .trim_start_matches('?');
        if query.len() > crate::MAX_URL {
            return Response::text(400, "query too long\n");
        }
        if configs.len() >= MAX_CONFIGS {
            return Response::text(400, "too many saved configurations\n");
        }
        configs.push((name, query.to_string()));
    }
    match write(path, &configs) {
        Ok(()) => listing(&configs),
        Err(e) => Response::text(500, format!("{}: {e}\n", path.display())),
    }
}
