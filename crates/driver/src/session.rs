//! A session: the inputs loaded once ([`Session::load`]: read, summed, a
//! base subtracted, symbolized), then any number of reports
//! ([`Session::run`]): settings → report options → stacks (profiler
//! frames dropped, filters, granularity) → graph → the output module, all
//! in this one function's dispatch.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cpuprof_profile::{gmon, Format, Profile, ReadOptions};
use cpuprof_report::activity::{Activity, ActivityOptions, KeptSamples, SampleIndex};
use cpuprof_report::callgraph::CallGraph;
use cpuprof_report::graph::{percent_base, Row};
use cpuprof_report::measure::{unit_word, ValueFormat};
use cpuprof_report::output::flame::{self, FlameFormat, FlameOptions, FlameOrientation};
use cpuprof_report::output::{disasm, listing, text};
use cpuprof_report::source::SourceFiles;
use cpuprof_report::stats::{self, DiffTable, Shares};
use cpuprof_report::time::{SampleTimes, TimeRange, TimeWindow};
use cpuprof_report::{instructions, lines, Granularity, Graph, Options, Stacks};

use crate::commands::{CommandDef, FlameKind, Output};
use crate::graph_output;
use crate::load::{Inputs, Loader};
use crate::settings::{compile_regex, Config};

/// What a session loads.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// Binaries (ELF) and profiles, in any order, told apart by content.
    pub inputs: Vec<PathBuf>,
    /// A profile to subtract (`--base`).
    pub base: Option<PathBuf>,
    /// DCPI databases: the epoch to read.
    pub epoch: Option<String>,
    /// Symbolize (else addresses only).
    pub symbolize: bool,
    /// More places for separate debug files.
    pub debug_dirs: Vec<PathBuf>,
    /// How URLs among the inputs are fetched.
    pub fetch: crate::fetch::FetchOptions,
}

/// The loaded inputs, and everything a report needs besides the settings.
pub struct Session {
    sources: Sources,
    binaries: Vec<PathBuf>,
    profiles: Vec<PathBuf>,
    loader: Loader,
    /// The profiles summed, the base subtracted: what reports read.
    profile: Profile,
    /// With a base: the sum and the base apart (flame graph widths cannot
    /// be negative: the base colours them).
    parts: Option<(Profile, Profile)>,
    /// Every location's frames per granularity, named once for the
    /// session (for `profile` only).
    frames: cpuprof_report::stacks::FrameCache,
    /// The times and threads of `profile`'s samples, then of the parts'
    /// (the sum, the base), each read from the labels on first use.
    indexes: [std::sync::OnceLock<SampleIndex>; 3],
}

/// Where a report goes when the settings name no file.
pub struct Destination<'a> {
    /// Standard output (or the shell's interruptible writer around it).
    pub out: &'a mut dyn Write,
    /// `out` is a terminal: binary formats are refused there.
    pub is_terminal: bool,
    /// The terminal's width in columns, when `out` is one (see
    /// [`terminal_width`]): the terminal timeline fills it.
    pub width: Option<usize>,
}

/// The width of the terminal standard output is, in columns (`COLUMNS`
/// when the terminal does not say); `None` when standard output is not a
/// terminal, so that what is piped or saved does not depend on the
/// window it was made in.
pub fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ fills the winsize it is given.
    let asked = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    if asked == 0 && size.ws_col > 0 {
        return Some(usize::from(size.ws_col));
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|&c: &usize| c > 0)
}

impl Session {
    /// Loads `sources`: reads every profile (any format), sums them,
    /// subtracts the base, symbolizes with the binaries among the inputs.
    pub fn load(sources: Sources) -> Result<Session> {
        // Files are read as they are; a source that is not a file but a
        // URL is fetched (and saved) first.
        let mut files = Vec::new();
        let mut urls = Vec::new();
        for input in &sources.inputs {
            match url_of(input) {
                Some(url) => urls.push(url),
                None => files.push(input.clone()),
            }
        }
        let Inputs { binaries, profiles } = Inputs::classify(&files, !urls.is_empty())?;
        let mut options = cpuprof_symbolize::Options {
            binaries: binaries.clone(),
            ..cpuprof_symbolize::Options::default()
        };
        options
            .debug_dirs
            .extend(sources.debug_dirs.iter().cloned());
        let loader = Loader::new(sources.epoch.clone(), options, sources.symbolize);
        let mut loaded = Vec::with_capacity(profiles.len() + urls.len());
        for path in &profiles {
            loaded.push(loader.load(path)?);
        }
        let mut saved = Vec::new();
        for url in &urls {
            let (profile, path) = fetch_and_load(&loader, url, &sources)?;
            loaded.push(profile);
            saved.push(path);
        }
        let sum = cpuprof_profile::merge::merge(loaded).context("summing the profiles")?;
        let (profile, parts) = match &sources.base {
            None => (sum, None),
            Some(base) => {
                let base = match url_of(base) {
                    Some(url) => fetch_and_load(&loader, &url, &sources)?.0,
                    None => loader.load(base)?,
                };
                let mut negative = base.clone();
                negative.scale(-1);
                let diff =
                    cpuprof_profile::merge::merge(vec![sum.clone(), negative]).context("--base")?;
                (diff, Some((sum, base)))
            }
        };
        let mut profiles = profiles;
        profiles.extend(saved);
        Ok(Session {
            sources,
            binaries,
            profiles,
            loader,
            profile,
            parts,
            frames: Default::default(),
            indexes: Default::default(),
        })
    }

    /// The times and threads of the samples of `profile` when it is the
    /// session's (or one of its parts), read once; `None` for another.
    fn cached_index(&self, profile: &Profile) -> Option<&SampleIndex> {
        let at = self.slot(profile)?;
        Some(self.indexes[at].get_or_init(|| SampleIndex::of(profile)))
    }

    /// Which of [`Session::indexes`] is `profile`'s: 0 for the profile
    /// reports read, 1 and 2 for the parts of a diff.
    fn slot(&self, profile: &Profile) -> Option<usize> {
        let parts = self.parts.as_ref();
        [
            Some(&self.profile),
            parts.map(|p| &p.0),
            parts.map(|p| &p.1),
        ]
        .iter()
        .position(|p| p.is_some_and(|p| std::ptr::eq(p, profile)))
    }

    /// The index of `profile`'s samples: the session's when it is one of
    /// its profiles, else read now (a diff's range, copied).
    fn index_for(&self, profile: &Profile) -> Cow<'_, SampleIndex> {
        match self.cached_index(profile) {
            Some(index) => Cow::Borrowed(index),
            None => Cow::Owned(SampleIndex::of(profile)),
        }
    }

    /// `profile`'s samples in columns, when it is one of the session's
    /// profiles and its index has been read (not read for them: a
    /// one-shot report reads each sample once anyway).
    fn columns_read(
        &self,
        profile: &Profile,
    ) -> Option<std::sync::Arc<cpuprof_report::stacks::SampleColumns>> {
        let index = self.indexes[self.slot(profile)?].get()?;
        Some(index.columns.clone())
    }

    /// The times and threads of the samples of the profile reports read.
    pub fn sample_index(&self) -> &SampleIndex {
        self.indexes[0].get_or_init(|| SampleIndex::of(&self.profile))
    }

    /// The profile reports read (summed, base subtracted).
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The inputs as given.
    pub fn inputs(&self) -> &[PathBuf] {
        &self.sources.inputs
    }

    /// The names of the profile's sample types (`samples`, `cpu`, ...).
    pub fn sample_types(&self) -> Vec<String> {
        self.profile
            .sample_types
            .iter()
            .map(|t| t.kind.clone())
            .collect()
    }

    /// The shell's greeting: the inputs, the total, and how to get help.
    pub fn greeting(&self, config: &Config) -> Result<String> {
        let mut greeting = String::new();
        let names: Vec<String> = self
            .sources
            .inputs
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        greeting.push_str(&format!("Inputs: {}\n", names.join(" ")));
        if let Some(base) = &self.sources.base {
            greeting.push_str(&format!("Base: {} (subtracted)\n", base.display()));
        }
        let timed = self.timed(config)?;
        let options = timed.report_options(self, config, &timed.profile)?;
        let stacks = Stacks::build_cached(&timed.profile, &options, timed.cache(self));
        let stacks = timed.with_base(&timed.profile, stacks, &options);
        // In a diff, the base's total, which percentages are of.
        let of_base = if stacks.base_total.is_some() {
            " in the base (values are changes from it)"
        } else {
            ""
        };
        if cpuprof_report::measure::is_scaled_unit(&stacks.sample_type.unit) {
            // Time and bytes scaled, as the reports print them (`2.10s`).
            let measure = cpuprof_report::measure::Measure::select(
                &stacks.sample_type.unit,
                &options.unit,
                [stacks.percent_total()],
                stacks.percent_total(),
                false,
            );
            greeting.push_str(&format!(
                "Total: {} ({}){of_base}\n",
                measure.label(stacks.percent_total()),
                stacks.sample_type.kind
            ));
        } else {
            greeting.push_str(&format!(
                "Total: {} {}{of_base}\n",
                stacks.percent_total(),
                unit_word(&stacks.sample_type)
            ));
        }
        greeting.push_str(
            "Entering interactive mode (type \"help\" for commands, \"o\" for options)\n",
        );
        Ok(greeting)
    }

    /// Every function name a report may print (short form, as `top`
    /// prints them, and full), sorted: the shell completes them.
    pub fn function_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .profile
            .functions
            .iter()
            .flat_map(|f| {
                let short = cpuprof_report::names::short_name(&f.name);
                if short == f.name {
                    vec![short]
                } else {
                    vec![short, f.name.clone()]
                }
            })
            .filter(|n| !n.is_empty())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Writes the report `command` (with its regex or flame format `arg`)
    /// under `config`, to the `output` setting's file or to `destination`.
    pub fn run(
        &self,
        command: &CommandDef,
        arg: Option<&str>,
        config: &Config,
        destination: Destination,
    ) -> Result<()> {
        if command.takes_regex && arg.is_none() {
            bail!(
                "{} needs a regular expression: {} {}",
                command.name,
                command.name,
                command.usage
            );
        }
        let output_file = config.text("output").map(PathBuf::from);
        if output_file.is_none() && destination.is_terminal && command.output == Output::Proto {
            bail!(
                "refusing to write gzipped profile.proto to a terminal: use -o FILE or redirect standard output"
            );
        }
        let cx = Request {
            session: self,
            config,
            command,
            arg,
            width: destination.width,
        };
        // The time ranges come first: a profile without sample times is
        // refused before any output, gprof's included.
        // What writes whole profiles reads a copy of the range's samples;
        // the other reports keep them as they build their stacks.
        let copy = matches!(command.output, Output::Proto | Output::Dcpiprof);
        let timed = self.timed_as(config, copy)?;
        if let Output::Gprof = command.output {
            return cx.with_writer(output_file.as_deref(), destination, |out| cx.gprof(out));
        }
        // Flame graphs and timelines draw the profiles, not their
        // difference (widths and activity cannot be negative).
        let profile: &Profile = match (&command.output, &timed.parts) {
            (Output::Flame(_) | Output::Timeline, Some((sum, _))) => sum,
            _ => &timed.profile,
        };
        let mut options = timed.report_options(self, config, profile)?;
        match command.output {
            // Listings need each frame's line or address.
            Output::List => options.granularity = Granularity::Lines,
            Output::Disasm | Output::Weblist => options.granularity = Granularity::Addresses,
            _ => {}
        }
        let cache = std::ptr::eq(profile, &*timed.profile)
            .then(|| timed.cache(self))
            .flatten();
        let stacks = timed.with_base(
            profile,
            Stacks::build_cached(profile, &options, cache),
            &options,
        );
        if command.output == Output::Timeline && self.sample_index().times.span.is_none() {
            bail!("{}: {NO_TIMES}: no timeline", self.profile_names());
        }
        // Nothing left to show: say why (a filter, or no samples at all),
        // for every output; the graphs have nothing to draw.
        if let Some(why) = stacks.why_empty(&options) {
            if matches!(command.output, Output::Graph(..)) {
                bail!("no nodes to print: {why}");
            }
            eprintln!("cpuprof: note: {why}");
        }
        let cx = RenderContext {
            cx,
            options: &options,
            profile,
            stacks: &stacks,
            timed: &timed,
        };
        match command.output {
            Output::Graph(format, viewer) => {
                let bytes = cx.call_graph(format)?;
                match viewer {
                    Some(viewer) => {
                        let path = output_file.unwrap_or_else(|| temp_path(command));
                        std::fs::write(&path, &bytes)
                            .with_context(|| format!("{}: cannot write", path.display()))?;
                        graph_output::open_viewer(viewer, &path, "the call graph", destination.out)
                    }
                    None => {
                        if output_file.is_none() && format.is_binary() && destination.is_terminal {
                            bail!(
                                "refusing to write {} to a terminal: use -o FILE or redirect standard output",
                                format.name()
                            );
                        }
                        cx.cx
                            .with_writer(output_file.as_deref(), destination, |out| {
                                Ok(out.write_all(&bytes)?)
                            })
                    }
                }
            }
            Output::Weblist => {
                let path = output_file.unwrap_or_else(|| temp_path(command));
                let mut file = BufWriter::new(
                    File::create(&path)
                        .with_context(|| format!("{}: cannot create", path.display()))?,
                );
                cx.weblist(&mut file)?;
                file.flush()?;
                drop(file);
                graph_output::open_viewer(
                    crate::commands::Viewer::Web,
                    &path,
                    "the annotated source",
                    destination.out,
                )
            }
            _ => cx
                .cx
                .with_writer(output_file.as_deref(), destination, |out| cx.render(out)),
        }
    }

    /// With a base: every function's change of cum share between the base
    /// and the profiles, tested at `level` (Holm–Bonferroni across them),
    /// under `config`'s filters. `None` without a base.
    pub fn diff_table(&self, config: &Config, level: f64) -> Result<Option<DiffTable>> {
        let timed = self.timed(config)?;
        let Some((sum, base)) = &timed.parts else {
            return Ok(None);
        };
        let options = config.report_options(sum)?;
        let new = Stacks::build(sum, &options);
        let old = Stacks::build(base, &options);
        let new_graph = Graph::build(&new, false);
        let old_graph = Graph::build(&old, false);
        Ok(Some(DiffTable::compare(
            (&new, &new_graph),
            (&old, &old_graph),
            level,
        )))
    }

    /// The program named in reports: the first binary as given, else the
    /// first mapped file of the profile (the main executable).
    pub fn program_name(&self) -> String {
        program_name(&self.binaries, &self.profile)
    }

    /// The loader's symbolizer (its binaries stay open).
    pub fn symbolizer(&self) -> &cpuprof_symbolize::Symbolizer {
        self.loader.symbolizer()
    }

    /// The binaries among the inputs.
    pub fn binaries(&self) -> &[PathBuf] {
        &self.binaries
    }

    /// The profile subtracted (`--base`), if any: reports show changes.
    pub fn base(&self) -> Option<&Path> {
        self.sources.base.as_deref()
    }

    /// The base's profile (`--base`), if any.
    pub fn base_profile(&self) -> Option<&Profile> {
        self.parts.as_ref().map(|(_, base)| base)
    }

    /// Every source file named by the profile's debug info (its
    /// functions' file names, as DWARF gives them), sorted: the only
    /// files the web UI's source view may read.
    pub fn source_file_names(&self) -> Vec<&str> {
        let mut files: Vec<&str> = self
            .profile
            .functions
            .iter()
            .map(|f| f.filename.as_str())
            .filter(|f| !f.is_empty())
            .collect();
        files.sort_unstable();
        files.dedup();
        files
    }

    /// The profile of the samples `config`'s filters keep (focus, ignore,
    /// show_from, tagfocus, tagignore; the profiler's frames removed), as
    /// a profile with the labels tagshow/taghide show and the pseudo-frames
    /// of tagroot/tagleaf: the web UI's download of the current view.
    pub fn filtered_profile(&self, config: &Config) -> Result<Profile> {
        let timed = self.timed(config)?;
        let options = timed.report_options(self, config, &timed.profile)?;
        let stacks = Stacks::build_cached(&timed.profile, &options, timed.cache(self));
        Ok(cpuprof_report::filtered::labelled_profile(
            &stacks,
            &options.tags,
        ))
    }

    /// Writes the speedscope file of the samples `config` keeps (its
    /// filters, sample type and granularity): one profile per thread, in
    /// time order. Returns the notes (samples without times, samples left
    /// out).
    pub fn write_speedscope(&self, config: &Config, out: &mut dyn Write) -> Result<Vec<String>> {
        let timed = self.timed(config)?;
        let options = timed.report_options(self, config, &timed.profile)?;
        let stacks = Stacks::build_cached(&timed.profile, &options, timed.cache(self));
        let name = self.program_name();
        Ok(cpuprof_report::output::speedscope::write(
            out, &stacks, &name,
        )?)
    }
    /// The web UI's timeline, as the JSON its page draws
    /// ([`cpuprof_report::output::timeline::write_json`]): each thread's
    /// activity over the whole profile in `columns` columns, and the
    /// subsecond heat map with `heat_rows` rows per second, of the samples
    /// `config`'s filters keep except its `time` range (drawn as the
    /// selection) and its `focus` (whose samples are highlighted in each
    /// track, not filtered). A profile without sample times is refused in
    /// one line.
    pub fn timeline_json(
        &self,
        config: &Config,
        columns: usize,
        heat_rows: usize,
    ) -> Result<String> {
        let range = config.time_range("time")?;
        let highlight = match config.text("focus") {
            Some(re) => Some(compile_regex("focus", re)?),
            None => None,
        };
        let mut all = config.clone();
        for name in ["time", "focus"] {
            let default = crate::settings::setting(name)
                .map(|s| s.default.to_string())
                .unwrap_or_default();
            all.set_checked(name, default);
        }
        let timed = self.timed(&all)?;
        if self.sample_index().times.span.is_none() {
            bail!(
                "{}: {}",
                self.profile_names(),
                cpuprof_report::output::timeline::NO_TIMES
            );
        }
        // A diff draws the profiles, not their difference (activity
        // cannot be negative).
        let profile: &Profile = match &timed.parts {
            Some((sum, _)) => sum,
            None => &timed.profile,
        };
        let options = timed.report_options(self, &all, profile)?;
        let index = self.index_for(profile);
        let value_index = options.value_index(profile);
        // Every sample counts and none is highlighted: the values alone
        // make the timeline (the stacks of ten million samples are not
        // built for it).
        let every = (highlight.is_none() && options.keeps_every_sample())
            .then(|| index.columns.values.get(value_index))
            .flatten()
            .filter(|values| values.len() == profile.samples.len());
        let stacks;
        let kept = match every {
            Some(values) => KeptSamples::All(values),
            None => {
                let cache = std::ptr::eq(profile, &*timed.profile)
                    .then(|| timed.cache(self))
                    .flatten();
                stacks = Stacks::build_cached(profile, &options, cache);
                KeptSamples::Stacks(&stacks)
            }
        };
        let unit = profile
            .sample_types
            .get(value_index)
            .map(|t| t.unit.clone())
            .unwrap_or_default();
        let origin = index.times.span.map_or(0, |span| span.origin);
        let activity = Activity::build(
            kept,
            &ActivityOptions {
                origin,
                from: 0,
                to: None,
                columns,
                highlight: highlight.as_ref(),
                heat_rows,
                index: &index,
            },
        );
        let Some(activity) = activity else {
            bail!("no sample with a time is left by the filters");
        };
        let mut json = String::with_capacity(64 * 1024);
        cpuprof_report::output::timeline::write_json(
            &mut json,
            &cpuprof_report::output::timeline::TimelineJson {
                activity: &activity,
                unit: &unit,
                range: range.map(|r| (r.start, r.end)),
                highlight: config.text("focus"),
            },
        );
        Ok(json)
    }
}

/// The profiles a report reads once the `time` and `base_time` ranges
/// have kept their samples: the first filter, before every other.
struct Timed<'a> {
    /// What reports read (the base subtracted).
    profile: Cow<'a, Profile>,
    /// With a base: the profiles and the base apart.
    parts: Option<(Cow<'a, Profile>, Cow<'a, Profile>)>,
    /// `profile` has the session profile's locations (the frame cache
    /// serves it).
    same_locations: bool,
    /// The `time` range asked for.
    range: Option<TimeRange>,
    /// When `profile` is the session's whole profile: the samples of the
    /// `time` range, which reports keep (no copy).
    window: Option<TimeWindow>,
}

impl Timed<'_> {
    /// The session's frame cache when it serves `profile`.
    fn cache<'s>(&self, session: &'s Session) -> Option<&'s cpuprof_report::stacks::FrameCache> {
        self.same_locations.then_some(&session.frames)
    }

    /// `config`'s report options for `profile`, with the time window
    /// when `profile` is the one it is of, and the session's columns when
    /// `profile` is one of its profiles.
    fn report_options(
        &self,
        session: &Session,
        config: &Config,
        profile: &Profile,
    ) -> Result<Options> {
        let mut options = config.report_options(profile)?;
        if std::ptr::eq(profile, &*self.profile) {
            options.window = self.window.clone();
        }
        options.columns = session.columns_read(profile);
        Ok(options)
    }

    /// In a diff, `stacks` of the reported profile with the base's total
    /// (under the base's own time range), which percentages are of.
    fn with_base<'p>(
        &self,
        profile: &Profile,
        stacks: Stacks<'p>,
        options: &Options,
    ) -> Stacks<'p> {
        match &self.parts {
            Some((_, base)) if std::ptr::eq(profile, &*self.profile) => {
                stacks.with_base(base, options)
            }
            _ => stacks,
        }
    }
}

impl Session {
    /// The profile names in messages: the profiles among the inputs.
    fn profile_names(&self) -> String {
        let names: Vec<String> = self
            .profiles
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        names.join(", ")
    }

    /// The profiles under `config`'s `time` and `base_time` ranges (each
    /// counted from its own profile's start); borrowed when none is set,
    /// and with only a `time` range, the session's profile and the
    /// range's window.
    fn timed(&self, config: &Config) -> Result<Timed<'_>> {
        self.timed_as(config, false)
    }

    /// [`Session::timed`]; with `copy`, a `time` range always copies its
    /// samples into a profile of their own.
    fn timed_as(&self, config: &Config, copy: bool) -> Result<Timed<'_>> {
        let time = config.time_range("time")?;
        let base_time = config.time_range("base_time")?;
        if time.is_none() && base_time.is_none() {
            return Ok(Timed {
                profile: Cow::Borrowed(&self.profile),
                parts: self
                    .parts
                    .as_ref()
                    .map(|(s, b)| (Cow::Borrowed(s), Cow::Borrowed(b))),
                same_locations: true,
                range: None,
                window: None,
            });
        }
        let keep = |profile, range, setting, names: &dyn Fn() -> String| {
            self.keep_time_range(profile, range, setting, config.get(setting), names)
        };
        match (&self.parts, &self.sources.base) {
            (Some((sum, base)), Some(base_path)) => {
                let sum = keep(sum, time, "time", &|| self.profile_names())?;
                let base = keep(base, base_time, "base_time", &|| {
                    base_path.display().to_string()
                })?;
                let mut negative = base.clone().into_owned();
                negative.scale(-1);
                let diff = cpuprof_profile::merge::merge(vec![sum.clone().into_owned(), negative])
                    .context("--base")?;
                Ok(Timed {
                    profile: Cow::Owned(diff),
                    parts: Some((sum, base)),
                    same_locations: false,
                    range: time,
                    window: None,
                })
            }
            _ => {
                if base_time.is_some() {
                    bail!(
                        "base_time={}: there is no base profile (--base)",
                        config.get("base_time")
                    );
                }
                let window = match time {
                    Some(range) if !copy => {
                        let setting = format!("time={}", config.get("time"));
                        match self.sample_index().times.window(range, setting) {
                            Some(window) => Some(window),
                            None => bail!(
                                "{}: {}: cannot keep time={}",
                                self.profile_names(),
                                NO_TIMES,
                                config.get("time")
                            ),
                        }
                    }
                    _ => None,
                };
                let profile = match window {
                    Some(_) => Cow::Borrowed(&self.profile),
                    None => keep(&self.profile, time, "time", &|| self.profile_names())?,
                };
                Ok(Timed {
                    profile,
                    parts: None,
                    same_locations: true,
                    range: time,
                    window,
                })
            }
        }
    }
}

/// What a range says of a profile without sample times.
const NO_TIMES: &str =
    "no sample times (no timestamp_ns labels; gperftools-format profiles have none)";

impl Session {
    /// A copy of `profile`'s samples in `range` (the value of `setting`),
    /// the profile itself when no range is given; `names` names the
    /// profile in the one-line error of a profile without sample times.
    fn keep_time_range<'p>(
        &self,
        profile: &'p Profile,
        range: Option<TimeRange>,
        setting: &str,
        value: &str,
        names: &dyn Fn() -> String,
    ) -> Result<Cow<'p, Profile>> {
        let Some(range) = range else {
            return Ok(Cow::Borrowed(profile));
        };
        let local;
        let times = match self.cached_index(profile) {
            Some(index) => &index.times,
            None => {
                local = SampleTimes::of(profile);
                &local
            }
        };
        match range.filter(profile, times) {
            Some(kept) => Ok(Cow::Owned(kept)),
            None => bail!("{}: {NO_TIMES}: cannot keep {setting}={value}", names()),
        }
    }
}

/// The URL `input` names, when it is not a file and reads as one.
fn url_of(input: &Path) -> Option<crate::fetch::Url> {
    if input.exists() {
        return None;
    }
    crate::fetch::Url::parse(input.to_str()?)
}

/// Fetches `url`, saves it (the path printed on stderr), reads it, and
/// names what the local binaries could not through the server's symbols.
fn fetch_and_load(
    loader: &Loader,
    url: &crate::fetch::Url,
    sources: &Sources,
) -> Result<(Profile, PathBuf)> {
    let fetched = crate::fetch::fetch(url, &sources.fetch)?;
    let name = fetched.url.to_string();
    let mut profile = loader.load_data(&name, &fetched.data)?;
    let path = crate::fetch::save(&fetched)?;
    eprintln!("Saved profile in {}", path.display());
    if sources.symbolize
        && profile
            .locations
            .iter()
            .any(|l| l.lines.is_empty() && l.address != 0)
    {
        let timeout = std::time::Duration::from_secs_f64(sources.fetch.timeout.unwrap_or(60.0));
        if let Err(e) = crate::fetch::symbolize_remote(&mut profile, &fetched.symbol_url, timeout) {
            eprintln!("cpuprof: warning: {e:#}");
        }
    }
    Ok((profile, path))
}

/// A temporary file for a command's output (Go pprof writes `pprofNNN.ext`
/// in the temporary directory too): the viewers' and the shell's.
pub fn temp_path(command: &CommandDef) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    std::env::temp_dir().join(format!(
        "cpuprof-{}-{:03}-{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        command.name,
        command.extension()
    ))
}

/// A request, before the stacks are built.
struct Request<'a> {
    session: &'a Session,
    config: &'a Config,
    command: &'a CommandDef,
    arg: Option<&'a str>,
    /// The terminal's width, when the output goes to one.
    width: Option<usize>,
}

impl Request<'_> {
    /// Runs `write` on the file `path` (created) or on `destination`.
    fn with_writer(
        &self,
        path: Option<&Path>,
        destination: Destination,
        write: impl FnOnce(&mut dyn Write) -> Result<()>,
    ) -> Result<()> {
        match path {
            Some(path) => {
                let mut file = BufWriter::new(
                    File::create(path)
                        .with_context(|| format!("{}: cannot create", path.display()))?,
                );
                write(&mut file)?;
                file.flush()
                    .with_context(|| format!("{}: cannot write", path.display()))?;
            }
            None => {
                let mut out = BufWriter::with_capacity(1 << 16, destination.out);
                write(&mut out)?;
                out.flush()?;
            }
        }
        Ok(())
    }

    /// The command's regex argument, compiled.
    fn regex(&self) -> Result<regex::Regex> {
        compile_regex(self.command.name, self.arg.unwrap_or(""))
    }

    /// `gprof`: gprof's brief report of the summed gmon.out files, read
    /// natively (not through the profile model).
    fn gprof(&self, out: &mut dyn Write) -> Result<()> {
        let session = self.session;
        let Some(binary) = session.binaries.first() else {
            bail!("gprof needs the executable the gmon.out files were written by");
        };
        let exe =
            std::fs::read(binary).with_context(|| format!("{}: cannot read", binary.display()))?;
        let mut symbols = cpuprof_report::executable::GprofSymbols::from_elf(&exe)
            .map_err(|e| anyhow::anyhow!("{}: {e}", binary.display()))?;
        symbols.resolve_source_files(binary);
        let target = cpuprof_report::executable::elf_target(&exe);
        let mut sum: Option<gmon::GmonFile> = None;
        for path in &session.profiles {
            let data =
                std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
            let options = ReadOptions {
                target,
                ..ReadOptions::default()
            };
            match cpuprof_profile::detect_format_with(&data, &options) {
                Some(Format::Gmon) | None => {}
                Some(other) => bail!(
                    "{}: a {}, but gprof reads gmon.out files only",
                    path.display(),
                    other.name()
                ),
            }
            let file = gmon::read(&data, target)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            match &mut sum {
                None => sum = Some(file),
                Some(s) => s
                    .merge(file)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            }
        }
        let sum = sum.context("gprof needs a gmon.out file")?;
        cpuprof_report::output::gprof::write_report(&sum, &symbols, out)?;
        Ok(())
    }
}

/// A request with its stacks built.
struct RenderContext<'a> {
    cx: Request<'a>,
    options: &'a Options,
    profile: &'a Profile,
    stacks: &'a Stacks<'a>,
    timed: &'a Timed<'a>,
}

impl RenderContext<'_> {
    /// Writes every output that goes to one writer: the one dispatch point
    /// of outputs.
    fn render(&self, out: &mut dyn Write) -> Result<()> {
        let (stacks, options, profile) = (self.stacks, self.options, self.profile);
        let session = self.cx.session;
        match self.cx.command.output {
            Output::Text => {
                let graph = Graph::build(stacks, false);
                match self.cx.config.confidence() {
                    None => text::write(out, stacks, &graph, options)?,
                    Some(level) => {
                        let diff = session.diff_table(self.cx.config, level)?;
                        let shares = Shares::new(stacks, percent_base(&graph), level);
                        self.too_few_samples(&shares, &graph);
                        let intervals = |row: &Row| {
                            format!(
                                "{:<13} {:<13}",
                                stats::format_interval(shares.interval(row.flat)),
                                stats::format_interval(shares.interval(row.cum))
                            )
                        };
                        let changes = |row: &Row| {
                            diff.as_ref().map_or_else(String::new, |d| {
                                d.column(&stacks.frame(row.frame).name)
                            })
                        };
                        // A diff keeps the functions whose share changed
                        // significantly although their value did not (none
                        // without a base).
                        let significant = |frame: cpuprof_report::stacks::FrameId| {
                            diff.as_ref().is_some_and(|d| {
                                d.changes
                                    .get(&stacks.frame(frame).name)
                                    .is_some_and(|c| c.significant)
                            })
                        };
                        let annotation = match &diff {
                            None => text::Annotation {
                                legend: format!(
                                    "{}% intervals of flat% and cum% (Wilson, {:.0} independent samples)",
                                    stats::level_text(level),
                                    shares.samples
                                ),
                                column: &intervals,
                                keep: &significant,
                            },
                            Some(d) => text::Annotation {
                                legend: format!(
                                    "cum% of base -> new, change in points with its {}% interval; * significant (Holm), ~ noise; {:.0} -> {:.0} samples, each compared by share of its own total",
                                    stats::level_text(level),
                                    d.old_samples,
                                    d.new_samples
                                ),
                                column: &changes,
                                keep: &significant,
                            },
                        };
                        text::write_annotated(out, stacks, &graph, options, Some(annotation))?;
                    }
                }
            }
            Output::Tree => {
                self.flat_profile_note();
                let graph = Graph::build(stacks, false);
                let shares = self
                    .cx
                    .config
                    .confidence()
                    .map(|level| Shares::new(stacks, percent_base(&graph), level));
                if let Some(shares) = &shares {
                    self.too_few_samples(shares, &graph);
                }
                cpuprof_report::output::tree::write_with(
                    out,
                    stacks,
                    &graph,
                    options,
                    shares.as_ref(),
                )?;
            }
            Output::Peek => {
                let re = self.cx.regex()?;
                let graph = Graph::build(stacks, false);
                cpuprof_report::output::tree::write_peek(out, stacks, &graph, options, &re)?;
            }
            Output::Traces => {
                cpuprof_report::output::traces::write_labelled(
                    out,
                    stacks,
                    &session.program_name(),
                    &options.tags,
                    &options.unit,
                )?;
            }
            Output::Tags => cpuprof_report::output::tags::write(out, stacks, &options.tags)?,
            Output::List => {
                let re = self.cx.regex()?;
                let mut listings = lines::listings(stacks, &re, options.full_names);
                if listings.is_empty() {
                    bail!("list {re}: no function with samples matches");
                }
                if session.sources.symbolize {
                    let binaries = session.symbolizer().binaries_for(profile);
                    lines::extend_from_binaries(&mut listings, stacks, &binaries);
                }
                let mut sources = self.source_files();
                listing::write(out, &listings, &self.value_format(), &mut sources)?;
            }
            Output::Disasm => {
                let re = self.cx.regex()?;
                let binaries = session.symbolizer().binaries_for(profile);
                let disassemblies =
                    instructions::disassemble(stacks, &re, options.full_names, &binaries)
                        .map_err(|e| anyhow::anyhow!("disasm {re}: {e}"))?;
                let mut sources = self.source_files();
                disasm::write(
                    out,
                    &disassemblies,
                    &self.value_format(),
                    stacks.total,
                    &mut sources,
                )?;
            }
            Output::Raw => {
                cpuprof_report::output::raw::write(out, stacks, &session.program_name())?;
            }
            Output::Collapsed => cpuprof_report::output::collapsed::write(out, stacks)?,
            Output::Json => {
                let graph = Graph::build(stacks, false);
                let level = self.cx.config.confidence().unwrap_or(0.95);
                let diff = session.diff_table(self.cx.config, level)?;
                cpuprof_report::output::json::write_with(
                    out,
                    stacks,
                    &graph,
                    options,
                    level,
                    diff.as_ref(),
                )?;
            }
            Output::Callgrind => {
                self.flat_profile_note();
                write_callgrind(
                    out,
                    &session.binaries,
                    session.symbolizer(),
                    stacks,
                    options,
                )?;
            }
            // The filters write the samples they keep with the lines they
            // show, the label options their labels and pseudo-frames (as
            // Go pprof's -proto).
            Output::Proto
                if options.tags.any()
                    || options.focus.is_some()
                    || options.ignore.is_some()
                    || options.hide.is_some()
                    || options.show.is_some()
                    || options.show_from.is_some() =>
            {
                cpuprof_profile::proto::write(
                    &cpuprof_report::filtered::labelled_profile(stacks, &options.tags),
                    out,
                )?
            }
            Output::Proto => cpuprof_profile::proto::write(profile, out)?,
            Output::Comments => {
                for comment in &profile.comments {
                    writeln!(out, "{comment}")?;
                }
            }
            Output::Dcpiprof => {
                let index = options.value_index(profile);
                cpuprof_report::output::dcpiprof::write_with(
                    profile,
                    index,
                    out,
                    self.cx.config.confidence(),
                    &options.unit,
                )?;
            }
            Output::Flame(kind) => self.flame(kind, out)?,
            Output::Timeline => self.timeline(out)?,
            Output::Graph(..) | Output::Weblist | Output::Gprof => {
                bail!("{} is not written to a stream", self.cx.command.name)
            }
        }
        Ok(())
    }

    /// The note on stderr when the top row's share is not known within
    /// ±10% of itself.
    fn too_few_samples(&self, shares: &Shares, graph: &Graph) {
        let largest = graph.nodes.iter().map(|n| n.flat).max().unwrap_or(0);
        if let Some(note) = shares.too_few(largest) {
            eprintln!("cpuprof: note: {note}");
        }
    }

    fn source_files(&self) -> SourceFiles {
        let files = SourceFiles::new(
            self.cx.config.text("source_path"),
            self.cx.config.text("trim_path"),
        );
        match crate::load::source_fetcher(self.cx.session.symbolizer(), self.profile) {
            Some(fetcher) => files.fetch_with(fetcher),
            None => files,
        }
    }

    /// The flame graph: HTML, or SVG when the argument or the output
    /// file's extension says so.
    fn flame(&self, kind: FlameKind, out: &mut dyn Write) -> Result<()> {
        let session = self.cx.session;
        let svg = match self.cx.arg {
            Some(format) => format == "svg",
            None => self
                .cx
                .config
                .text("output")
                .is_some_and(|o| o.ends_with(".svg")),
        };
        let confidence = self.cx.config.confidence();
        // In a diff, only the significant changes of share are coloured.
        let significant = session
            .diff_table(self.cx.config, confidence.unwrap_or(0.95))?
            .map(|d| {
                d.changes
                    .values()
                    .filter(|c| c.significant)
                    .map(|c| c.name.clone())
                    .collect()
            });
        let intervals = confidence.map(|level| {
            let shares = Shares::new(self.stacks, self.stacks.total, level);
            cpuprof_report::output::flame::FlameIntervals {
                samples: shares.samples,
                scale: shares.scale,
                level,
            }
        });
        let flame_options = FlameOptions {
            format: if svg {
                FlameFormat::Svg
            } else {
                FlameFormat::Html
            },
            orientation: match kind {
                FlameKind::Flame => FlameOrientation::Flame,
                FlameKind::Icicle => FlameOrientation::Icicle,
            },
            significant,
            intervals,
            ..FlameOptions::default()
        };
        let base_stacks = self
            .timed
            .parts
            .as_ref()
            .map(|(_, base)| Stacks::build(base, self.options));
        let mut title: Vec<String> = session
            .sources
            .inputs
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        if let Some(note) = self.flat_profile_note() {
            title.push(format!("({note})"));
        }
        let input = flame::input_from_stacks(&title.join(" "), self.stacks, base_stacks.as_ref());
        flame::write_flame(&input, &flame_options, out)?;
        Ok(())
    }

    /// The timeline of the kept samples, its offsets counted from the
    /// whole profile's start and its columns over the `time` range.
    fn timeline(&self, out: &mut dyn Write) -> Result<()> {
        let session = self.cx.session;
        let whole = match &session.parts {
            Some((sum, _)) => sum,
            None => &session.profile,
        };
        let origin = session
            .cached_index(whole)
            .and_then(|index| index.times.span)
            .map_or(0, |span| span.origin);
        let index = session.index_for(self.stacks.profile());
        let highlight = match self.cx.arg {
            Some(_) => Some(self.cx.regex()?),
            None => None,
        };
        let range = self.timed.range;
        let options = cpuprof_report::output::timeline::TimelineOptions {
            origin,
            from: range.map_or(0, |r| r.start),
            to: range.and_then(|r| r.end),
            width: cpuprof_report::output::timeline::DEFAULT_WIDTH,
            line_width: self.cx.width,
            highlight: highlight.as_ref(),
            index: &index,
        };
        cpuprof_report::output::timeline::write(
            out,
            self.stacks,
            &options,
            &session.profile_names(),
        )?;
        Ok(())
    }

    /// The call graph's bytes in `format`.
    fn call_graph(&self, format: crate::commands::GraphFormat) -> Result<Vec<u8>> {
        let graph = Graph::build(self.stacks, false);
        let program = self.cx.session.program_name();
        let mut call_graph = CallGraph::build(&program, self.stacks, &graph, self.options)?;
        call_graph.notes.extend(self.flat_profile_note());
        // In a diff, only the significant changes of share are coloured.
        let level = self.cx.config.confidence().unwrap_or(0.95);
        if let Some(diff) = self.cx.session.diff_table(self.cx.config, level)? {
            use cpuprof_report::change::NodeChange;
            call_graph.mark_changes(
                |name| {
                    diff.changes.get(name).map(|c| match c.change.delta {
                        _ if !c.significant => NodeChange::Noise,
                        d if d > 0.0 => NodeChange::Grew,
                        _ => NodeChange::Shrank,
                    })
                },
                &format!(
                    "each profile's share of its own total, {}% two-proportion test, Holm",
                    stats::level_text(level)
                ),
            );
        }
        if let Some(level) = self.cx.config.confidence() {
            let shares = Shares::new(self.stacks, percent_base(&graph), level);
            call_graph.node_intervals = call_graph
                .nodes
                .iter()
                .map(|n| {
                    format!(
                        "{}% CI flat {}% cum {}%",
                        stats::level_text(level),
                        stats::format_interval(shares.interval(n.flat)),
                        stats::format_interval(shares.interval(n.cum))
                    )
                })
                .collect();
        }
        if call_graph.node_limit > 0 || call_graph.edge_limit > 0 {
            // As pprof says it.
            eprintln!(
                "Dropping nodes with <= {} {unit}; edges with <= {} abs({unit})",
                call_graph.value(call_graph.node_limit),
                call_graph.value(call_graph.edge_limit),
                unit = call_graph.values.word()
            );
        }
        graph_output::render(&call_graph, format, self.cx.config.get("layout"))
    }

    /// How the outputs in perl pprof's layout print this report's values.
    fn value_format(&self) -> ValueFormat {
        ValueFormat::of(self.profile, &self.stacks.sample_type, &self.options.unit)
    }

    /// `weblist`: the annotated source with its instructions as one page.
    fn weblist(&self, out: &mut dyn Write) -> Result<()> {
        let session = self.cx.session;
        let re = self.cx.regex()?;
        let binaries = session.symbolizer().binaries_for(self.profile);
        let disassemblies =
            instructions::disassemble(self.stacks, &re, self.options.full_names, &binaries)
                .map_err(|e| anyhow::anyhow!("weblist {re}: {e}"))?;
        let mut sources = self.source_files();
        // The source lines come from the stacks at line granularity.
        let by_line = Options {
            granularity: Granularity::Lines,
            ..self.options.clone()
        };
        let cache = std::ptr::eq(self.profile, &session.profile).then_some(&session.frames);
        let line_stacks = Stacks::build_cached(self.profile, &by_line, cache);
        let mut listings = lines::listings(&line_stacks, &re, self.options.full_names);
        if listings.is_empty() {
            bail!("weblist {re}: no function with samples matches");
        }
        lines::extend_from_binaries(&mut listings, &line_stacks, &binaries);
        cpuprof_report::output::weblist::write_html(
            out,
            &format!("weblist {re}: {}", session.program_name()),
            &listings,
            &disassemblies,
            &self.value_format(),
            &mut sources,
        )?;
        Ok(())
    }

    /// For outputs drawn from call stacks: the note that the profile has
    /// none (DCPI, gmon.out histograms), also printed on stderr.
    fn flat_profile_note(&self) -> Option<String> {
        let index = self.options.value_index(self.profile);
        if !cpuprof_report::has_no_call_stacks(self.profile, index) {
            return None;
        }
        let note = cpuprof_report::no_call_stacks_note(self.profile, index);
        eprintln!("cpuprof: note: {note}");
        Some(note)
    }
}

/// Writes the callgrind file of `stacks`: the one writer of `report
/// --callgrind` and `convert --to callgrind`, so that both give the same
/// bytes.
pub fn write_callgrind(
    out: &mut dyn Write,
    binaries: &[PathBuf],
    symbolizer: &cpuprof_symbolize::Symbolizer,
    stacks: &Stacks,
    options: &Options,
) -> Result<()> {
    let graph = Graph::build(stacks, true);
    let program = program_name(binaries, stacks.profile());
    // Link-time positions (--addresses) come from the binaries.
    let files = if stacks.granularity == Granularity::Addresses {
        symbolizer.binaries_for(stacks.profile())
    } else {
        Vec::new()
    };
    cpuprof_report::output::callgrind::write(out, stacks, &graph, options, &program, &files)?;
    Ok(())
}

/// The program named in a call graph's legend: the first binary as given,
/// else the first mapped file of the profile (the main executable).
pub fn program_name(binaries: &[PathBuf], profile: &Profile) -> String {
    binaries
        .first()
        .map(|path| path.display().to_string())
        .or_else(|| {
            profile
                .mappings
                .iter()
                .find(|m| !m.path.is_empty())
                .map(|m| m.path.clone())
        })
        .or_else(|| {
            // A symbolized raw profile names its program.
            profile.comments.iter().find_map(|c| {
                c.strip_prefix(cpuprof_profile::symbolized::BINARY_COMMENT)
                    .map(str::to_string)
            })
        })
        .unwrap_or_else(|| "(unknown program)".to_string())
}
