//! `cpuprof report`'s flags, generated from the tables: one flag per
//! setting of [`SETTINGS`] (and one per stand-alone choice: `--lines`,
//! `--cum`), checked by the same [`crate::settings::Setting::check`] the
//! shell uses, and one output flag per command of [`COMMANDS`] that has
//! one. Flattened into the CLI's clap arguments with
//! `#[command(flatten)]`.

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgGroup, ArgMatches, Args, Command, FromArgMatches};

use crate::commands::{CommandDef, Flag, COMMANDS};
use crate::settings::{Config, Kind, Setting, SETTINGS, SHORTHANDS};

/// The settings given on the command line.
#[derive(Clone, Debug, Default)]
pub struct SettingFlags(pub Config);

fn setting_arg(s: &'static Setting) -> Arg {
    let mut arg = Arg::new(s.name)
        .long(s.name)
        .help(s.help)
        .value_name(s.value_name)
        .value_parser(move |v: &str| s.check(v).map_err(|e| e.to_string()));
    if !s.aliases.is_empty() {
        arg = arg.aliases(s.aliases.iter().copied());
    }
    if s.kind == Kind::Bool {
        // `--cum`-style switches; `--name=false` also works.
        arg = arg
            .num_args(0..=1)
            .require_equals(true)
            .default_missing_value("true");
    }
    if s.kind == Kind::Level {
        arg = arg
            .num_args(0..=1)
            .require_equals(true)
            .default_missing_value("95");
    }
    if s.name == "output" {
        arg = arg.short('o');
    }
    arg
}

impl Args for SettingFlags {
    fn augment_args(mut cmd: Command) -> Command {
        for s in SETTINGS {
            cmd = cmd.arg(setting_arg(s));
            if s.choices_stand_alone {
                let group: &'static str = Box::leak(format!("{}-choice", s.name).into_boxed_str());
                let mut members = vec![s.name];
                for &choice in s.choices() {
                    let help = if choice == s.default {
                        format!("{}={choice} (the default)", s.name)
                    } else {
                        format!("{}={choice}", s.name)
                    };
                    cmd = cmd.arg(
                        Arg::new(choice)
                            .long(choice)
                            .action(ArgAction::SetTrue)
                            .help(help),
                    );
                    members.push(choice);
                }
                cmd = cmd.group(ArgGroup::new(group).args(members).multiple(false));
            }
        }
        for s in SHORTHANDS {
            cmd = cmd.arg(
                Arg::new(s.name)
                    .long(s.name)
                    .action(ArgAction::SetTrue)
                    .help(s.help),
            );
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for SettingFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = SettingFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for s in SETTINGS {
            if matches.value_source(s.name) == Some(ValueSource::CommandLine) {
                if let Some(value) = matches.get_one::<String>(s.name) {
                    self.0.set_checked(s.name, value.clone());
                }
            }
            if s.choices_stand_alone {
                for &choice in s.choices() {
                    if matches.get_flag(choice) {
                        self.0.set_checked(s.name, choice.to_string());
                    }
                }
            }
        }
        for s in SHORTHANDS {
            if matches.get_flag(s.name) {
                for (name, value) in s.sets {
                    self.0.set_checked(name, value.to_string());
                }
            }
        }
        Ok(())
    }
}

/// The output asked for on the command line: a command and its argument
/// (the regex of `--list=RE`, the format of `--flame=svg`).
#[derive(Clone, Debug, Default)]
pub struct OutputFlag(pub Option<(&'static CommandDef, Option<String>)>);

/// The id of the group of output flags.
pub const OUTPUT_GROUP: &str = "output-kind";

fn command_arg(c: &'static CommandDef) -> Option<Arg> {
    let arg = Arg::new(c.name).long(c.name).help(c.help);
    let arg = match c.flag {
        Flag::None => return None,
        Flag::Switch => arg.action(ArgAction::SetTrue),
        Flag::Regex => arg.value_name("RE"),
        Flag::OptionalRegex => arg
            .value_name("RE")
            .num_args(0..=1)
            .require_equals(true)
            .default_missing_value(""),
        Flag::FlameFormat => arg
            .value_name("html|svg")
            .num_args(0..=1)
            .require_equals(true)
            .default_missing_value("html")
            .value_parser(|v: &str| match v {
                "html" | "svg" => Ok(v.to_string()),
                _ => Err(format!("{v}: expected html or svg")),
            }),
    };
    Some(arg.visible_aliases(c.aliases.iter().copied()))
}

impl Args for OutputFlag {
    fn augment_args(mut cmd: Command) -> Command {
        let mut group = ArgGroup::new(OUTPUT_GROUP).multiple(false);
        for c in COMMANDS {
            if let Some(arg) = command_arg(c) {
                cmd = cmd.arg(arg);
                group = group.arg(c.name);
            }
        }
        cmd.group(group)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for OutputFlag {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flag = OutputFlag::default();
        flag.update_from_arg_matches(matches)?;
        Ok(flag)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for c in COMMANDS {
            match c.flag {
                Flag::None => {}
                Flag::Switch => {
                    if matches.get_flag(c.name) {
                        self.0 = Some((c, None));
                    }
                }
                Flag::Regex | Flag::FlameFormat | Flag::OptionalRegex => {
                    if let Some(v) = matches.get_one::<String>(c.name) {
                        let v = (!v.is_empty() || c.flag != Flag::OptionalRegex).then(|| v.clone());
                        self.0 = Some((c, v));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser, Debug)]
    struct Test {
        #[command(flatten)]
        output: OutputFlag,
        #[command(flatten)]
        settings: SettingFlags,
    }

    fn parse(args: &[&str]) -> Result<Test, clap::Error> {
        use clap::Parser;
        Test::try_parse_from(std::iter::once("test").chain(args.iter().copied()))
    }

    #[test]
    fn every_setting_is_a_flag_with_the_shells_meaning() {
        // Each setting given on the command line, and the same in the
        // shell's Config::set, give the same Config.
        for s in SETTINGS {
            let value = match s.kind {
                Kind::Bool => "true",
                Kind::Int => "7",
                Kind::Float => "0.25",
                Kind::Regex => "^burn_[ab]$",
                Kind::Text => "x:y",
                Kind::Choice(choices) => choices[choices.len() - 1],
                Kind::Level => "99",
                Kind::TagFilter => "worker=a,b",
                Kind::Unit => "ms",
                Kind::TimeRange => "1.5s:2s",
            };
            let flag = format!("--{}={value}", s.name);
            let parsed = parse(&[&flag]).unwrap_or_else(|e| panic!("{flag}: {e}"));
            let mut shell = Config::default();
            shell.set(s.name, Some(value)).unwrap();
            assert_eq!(parsed.settings.0, shell, "{flag}");
            for alias in s.aliases {
                let flag = format!("--{alias}={value}");
                let parsed = parse(&[&flag]).unwrap_or_else(|e| panic!("{flag}: {e}"));
                assert_eq!(parsed.settings.0, shell, "{flag}");
            }
            if s.kind == Kind::Bool {
                let parsed = parse(&[&format!("--{}", s.name)]).unwrap();
                assert_eq!(parsed.settings.0, shell, "--{}", s.name);
            }
            for choice in s.choices().iter().filter(|_| s.choices_stand_alone) {
                let parsed = parse(&[&format!("--{choice}")]).unwrap();
                let mut shell = Config::default();
                shell.set(choice, None).unwrap();
                assert_eq!(parsed.settings.0, shell, "--{choice}");
            }
        }
    }

    #[test]
    fn shorthand_flags_set_what_the_shell_word_sets() {
        for s in SHORTHANDS {
            let parsed = parse(&[&format!("--{}", s.name)]).unwrap();
            let mut shell = Config::default();
            shell.set(s.name, None).unwrap();
            assert_eq!(parsed.settings.0, shell, "--{}", s.name);
            assert_ne!(shell, Config::default(), "{}", s.name);
        }
    }

    #[test]
    fn bad_values_are_refused_as_the_shell_refuses_them() {
        for (flag, shell) in [
            ("--nodecount=many", ("nodecount", "many")),
            ("--focus=(", ("focus", "(")),
            ("--granularity=bytes", ("granularity", "bytes")),
            ("--nodefraction=-1", ("nodefraction", "-1")),
        ] {
            let err = parse(&[flag]).unwrap_err().to_string();
            let shell_err = Config::default()
                .set(shell.0, Some(shell.1))
                .unwrap_err()
                .to_string();
            assert!(err.contains(&shell_err), "{flag}: {err} lacks {shell_err}");
        }
        assert!(parse(&["--lines", "--files"]).is_err());
        assert!(parse(&["--cum", "--sort=flat"]).is_err());
    }

    #[test]
    fn output_flags() {
        let t = parse(&["--list=burn"]).unwrap();
        let (c, arg) = t.output.0.unwrap();
        assert_eq!((c.name, arg.as_deref()), ("list", Some("burn")));
        let t = parse(&["--text"]).unwrap();
        assert_eq!(t.output.0.unwrap().0.name, "top");
        let t = parse(&["--flame"]).unwrap();
        assert_eq!(t.output.0.unwrap().1.as_deref(), Some("html"));
        let t = parse(&["--icicle=svg"]).unwrap();
        assert_eq!(t.output.0.unwrap().1.as_deref(), Some("svg"));
        assert!(parse(&["--text", "--dot"]).is_err());
        assert!(parse(&[]).unwrap().output.0.is_none());
    }
}
