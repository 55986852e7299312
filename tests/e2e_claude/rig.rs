//! One test's world: the fake model, a Claude Code session started the way
//! a person starts it, and the real `reveille run` routing a project's
//! plans to that session (`project.default_session = "claude:<id>"`,
//! `[claude] config_dir` the session's isolated config directory). The
//! plan directory is inside the session's working directory, where the
//! agent's shell tool edits files.

use crate::util::agents::AgentTurn;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::util::agents::claude::{one_at_a_time, Claude, Registered};
use crate::util::daemon::Daemon;
use crate::util::fakemodel::messages::Messages;
use crate::util::fakemodel::{FakeModel, Logged};
use crate::util::plans::{plan_text, write_in_place, Step};
use crate::util::project::Project;
use crate::util::{try_wait_until, wait_until};

/// How long anything the agent does may take here (a loaded machine).
pub const T: Duration = Duration::from_secs(20);

pub struct Rig {
    pub model: FakeModel,
    pub claude: Claude,
    pub reg: Registered,
    pub project: Project,
    daemon: Option<Daemon>,
    pub plan_dir: PathBuf,
    _one: AgentTurn,
}

/// A TOML string.
pub fn toml(s: &str) -> String {
    format!("{s:?}")
}

/// What the header line of a step's default prompt says (`… is ready:
/// <title>`): the one text that names this step's own prompt, and no
/// other's.
pub fn ready(title: &str) -> String {
    format!("is ready: {title}")
}

impl Rig {
    /// Claude Code started and warmed up (one typed prompt: its first
    /// request is slower, and `--resume` needs a transcript), then the
    /// daemon, `tune`d, once it follows the session. `None`, with the
    /// `skipped:` line printed, where Claude Code or tmux is missing.
    pub fn start(tune: impl FnOnce(&mut Project)) -> Option<Rig> {
        Rig::start_as(false, None, tune)
    }

    /// The same, with `hooks` as the `hooks` of Claude Code's
    /// `settings.json` from its start (it reads a hook added later only
    /// after a while).
    pub fn with_hooks(hooks: Value, tune: impl FnOnce(&mut Project)) -> Option<Rig> {
        Rig::start_as(false, Some(hooks), tune)
    }

    /// The same, Claude Code in its default permission mode: each shell
    /// command asks the person first.
    pub fn asking(tune: impl FnOnce(&mut Project)) -> Option<Rig> {
        Rig::start_as(true, None, tune)
    }

    fn start_as(
        asking: bool,
        hooks: Option<Value>,
        tune: impl FnOnce(&mut Project),
    ) -> Option<Rig> {
        let one = one_at_a_time();
        let model = FakeModel::start(vec![Box::new(Messages)], Duration::from_millis(20));
        let mut claude = match Claude::new(&model) {
            Ok(c) => c,
            Err(why) => {
                eprintln!("skipped: {why}");
                return None;
            }
        };
        claude.asking = asking;
        if let Some(hooks) = hooks {
            claude.write_settings(&serde_json::json!({
                "crossSessionInbound": "accept",
                "skipDangerousModePermissionPrompt": true,
                "hooks": hooks,
            }));
        }
        if asking {
            // The classic prompts: this version's default is "auto mode",
            // whose server-side check a fake model cannot answer.
            claude.write_settings(&serde_json::json!({
                "crossSessionInbound": "accept",
                "permissions": {"defaultMode": "default"},
            }));
        }
        let reg = claude.start();
        let plan_dir = claude.cwd.join("pl");
        std::fs::create_dir_all(&plan_dir).unwrap();
        let session = format!("claude:{}", reg.session_id);
        let mut project = Project::with_default_session(&session);
        project.set(
            "project",
            "plan_dir",
            &toml(&plan_dir.display().to_string()),
        );
        let config = claude.config_dir.display().to_string();
        project.set("claude", "config_dir", &toml(&config));
        tune(&mut project);
        let mut rig = Rig {
            model,
            claude,
            reg,
            project,
            daemon: None,
            plan_dir,
            _one: one,
        };
        rig.warm_up();
        rig.start_daemon();
        rig.wait_state(Some("idle"));
        Some(rig)
    }

    fn warm_up(&self) {
        self.claude.type_prompt("warm-up: hello");
        self.wait_model("warm-up: hello");
        self.idle();
        let sid = &self.reg.session_id;
        wait_until("the warm-up in the transcript", T, || {
            let taken = self.claude.prompts_taken(sid);
            taken
                .iter()
                .any(|(t, _)| t.contains("warm-up"))
                .then_some(())
        });
    }

    /// `claude:<session id>`.
    pub fn session(&self) -> String {
        format!("claude:{}", self.reg.session_id)
    }

    pub fn daemon(&self) -> &Daemon {
        self.daemon.as_ref().expect("reveille runs")
    }

    /// Start reveille (again) and wait until it follows the session (its
    /// state shown, whatever it is).
    pub fn start_daemon(&mut self) {
        self.daemon = Some(Daemon::start(&self.project));
        self.wait_status("the session followed", |s| s["state"].is_string());
    }

    /// `kill -9` reveille (`None` when it was killed already).
    pub fn kill_daemon(&mut self) {
        if let Some(d) = self.daemon.take() {
            d.kill9();
        }
    }

    /// The pid of the running reveille.
    pub fn daemon_pid(&self) -> u32 {
        self.daemon().pid()
    }

    /// Write a plan of `steps` as the planning tool does; returns its path
    /// and the instant just before its writer's close (when its first
    /// steps became ready).
    pub fn plan(&self, name: &str, goal: &str, steps: &[Step]) -> (PathBuf, Instant) {
        let path = self.plan_dir.join(name);
        let at = write_in_place(&path, plan_text(goal, steps, "").as_bytes());
        (path, at)
    }

    /// The model's first request of a turn whose prompt holds `marker`.
    pub fn wait_model(&self, marker: &str) -> Logged {
        wait_until(
            &format!("the model to be asked about {marker:?}"),
            T,
            || self.model.turns_on(marker).into_iter().next(),
        )
    }

    /// How many turns the model was asked with `marker` in their prompt.
    pub fn turns(&self, marker: &str) -> usize {
        self.model.turns_on(marker).len()
    }

    /// Each of `markers` reached the model in exactly one turn.
    pub fn assert_once(&self, markers: &[String]) {
        for m in markers {
            let turns = self.model.turns_on(m);
            assert_eq!(
                turns.len(),
                1,
                "{m:?} reached the model {} times: {turns:#?}",
                turns.len()
            );
            let copies = turns[0].last_user.matches(m.as_str()).count();
            assert_eq!(copies, 1, "two copies merged into one message: {turns:#?}");
        }
    }

    /// Wait until the agent ticked `title` in `plan`.
    pub fn wait_ticked(&self, plan: &Path, title: &str) {
        let line = format!("- [x] {title}");
        wait_until(&format!("the agent to tick {title:?}"), T, || {
            let text = std::fs::read_to_string(plan).ok()?;
            text.contains(&line).then_some(())
        });
    }

    /// Wait until Claude Code is idle with every turn ended.
    pub fn idle(&self) {
        self.claude.wait_idle(&self.reg.session_id, T);
    }

    /// The session as `reveille status --json` shows it.
    pub fn status(&self) -> Value {
        let all = self.project.status_json();
        let session = self.session();
        let found = all["sessions"].as_array().and_then(|s| {
            s.iter()
                .find(|v| v["id"].as_str() == Some(session.as_str()))
                .cloned()
        });
        found.unwrap_or(Value::Null)
    }

    /// Wait until `status` shows the session as `pick` wants it.
    pub fn wait_status(&self, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
        wait_until(&format!("status to show {what}"), T, || {
            let s = self.status();
            pick(&s).then_some(s)
        })
    }

    /// Wait until `status` shows the session in `state` (`None`: gone).
    pub fn wait_state(&self, state: Option<&str>) -> Value {
        self.wait_status(&format!("the session {state:?}"), |s| {
            s["kind"] == "claude" && s["state"].as_str() == state
        })
    }

    /// Wait for a line of the running daemon's log holding every one of
    /// `words`; returns it.
    pub fn wait_log(&self, words: &[&str]) -> String {
        self.wait_log_where(&format!("{words:?}"), |l| {
            words.iter().all(|w| l.contains(w))
        })
    }

    /// Wait for a line holding one of `texts`; returns it.
    pub fn wait_log_any(&self, texts: &[&str]) -> String {
        self.wait_log_where(&format!("one of {texts:?}"), |l| {
            texts.iter().any(|t| l.contains(t))
        })
    }

    fn wait_log_where(&self, words: &str, pick: impl Fn(&str) -> bool) -> String {
        let d = self.daemon();
        let found = try_wait_until(T, || d.log().lines().find(|l| pick(l)).map(str::to_string));
        found.unwrap_or_else(|| {
            let text = d.log();
            let said: Vec<&str> = text.lines().filter(|l| !l.contains(" DEBUG ")).collect();
            panic!(
                "no log line with {words} within {T:?}; the log says:\n{}",
                said.join("\n")
            )
        })
    }

    /// The session's notices of messages its inbox's guard dropped (a
    /// copy of one already there, a burst): each is a prompt written twice.
    pub fn dropped_notices(&self) -> Vec<Value> {
        let t = self.claude.transcript(&self.reg.session_id);
        let dropped = |e: &Value| {
            e["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Dropped a peer message"))
        };
        t.into_iter().filter(dropped).collect()
    }

    /// When the running daemon first logged a line holding `needle` (its
    /// stderr lines open with an RFC 3339 UTC time).
    pub fn logged_at(&self, needle: &str) -> Option<SystemTime> {
        let log = self.daemon().log();
        let line = log.lines().find(|l| l.contains(needle))?;
        let secs = reveille::core::timestamp::parse_timestamp(line.get(..19)?)?;
        let micros: u64 = line.get(20..26)?.parse().ok()?;
        let at = Duration::from_secs(secs as u64) + Duration::from_micros(micros);
        Some(UNIX_EPOCH + at)
    }

    /// Every log line of every daemon this rig started.
    pub fn all_logs(&self) -> String {
        self.project.logs()
    }
}

/// p50 and max.
pub fn p50_max(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[v.len() - 1])
}

pub fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}
