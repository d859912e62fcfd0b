//! What each verb asks the server and how it shows the answer.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::StreamExt as _;
use kelson_client::{Client, ListenEvent, Request};
use kelson_types::{
    CallToolResult, CompleteArgument, CompleteContext, CompletionReference, DiscoverResult,
    LoggingLevel, Method, SubscriptionFilter,
};
use serde::Serialize;
use serde_json::{Value, json};

use super::args::{self, key_value, tool_arguments};
use super::connect::{URL_ELICITATION_REQUIRED, connect, stderr_style, url_required};
use super::hints;
use super::json::{self, RawResults};
use super::media::Media;
use super::offers::{self, Feature};
use super::output::{self, Style, clean, clean_line, first_line};
use super::progress::Progress;
use super::suggest;
use super::{CallArgs, CliError, Common, CompleteArgs, ListenArgs, PromptArgs, ReadArgs, Verb};

/// Runs one verb: connect, ask, show, close.
pub(crate) async fn run(verb: Verb) -> Result<(), CliError> {
    let verb = match verb {
        Verb::Auth(action) => return super::auth::run(action).await,
        other => other,
    };
    let common = match &verb {
        Verb::Discover(c) | Verb::Resources(c) | Verb::Templates(c) | Verb::Prompts(c) => c,
        Verb::Tools(a) => &a.common,
        Verb::Call(a) => &a.common,
        Verb::Read(a) => &a.common,
        Verb::Prompt(a) => &a.common,
        Verb::Complete(a) => &a.common,
        Verb::Listen(a) => &a.common,
        Verb::Task(a) => a.common(),
        Verb::Auth(_) => unreachable!("handled above"),
    }
    .clone();
    if let Some(dir) = &common.save_dir {
        output::check_dir(dir).map_err(CliError::Usage)?;
    }
    let progress = Progress::default();
    let out = Out {
        style: Style::detect(),
        json: common.json,
        raw: RawResults::default(),
        printed: AtomicBool::new(false),
    };
    let client = match connect(&common, &progress).await {
        Ok(client) => client,
        Err(e) => return Err(out.failed(hints::explain(e, &common, None))),
    };
    let result = match dispatch(&client, verb, &common, &out, &progress).await {
        // A legacy server's way of asking for a URL to be opened: the same consent prompt as an
        // in-band request gets.
        Err(CliError::Client(e)) if e.code() == Some(URL_ELICITATION_REQUIRED) => {
            Err(url_required(e, &common, &progress).await)
        }
        other => other,
    };
    progress.finish();
    // Best effort: the answer is in; a server slow to exit is not the user's problem.
    let status = client.close().await.ok().flatten();
    match result {
        Ok(()) => Ok(()),
        Err(e) => {
            let end = hints::ServerEnd {
                stderr: client.stderr().await,
                status,
            };
            Err(out.failed(hints::explain(e, &common, Some(end))))
        }
    }
}

async fn dispatch(
    client: &Client,
    verb: Verb,
    common: &Common,
    out: &Out,
    progress: &Progress,
) -> Result<(), CliError> {
    let mut media = Media::new(common.save_dir.clone());
    match verb {
        Verb::Discover(_) => discover(client, out).await,
        Verb::Tools(args) => super::tools::run(client, out, args).await,
        Verb::Call(args) => call(client, out, &mut media, progress, args).await,
        Verb::Resources(_) => resources(client, out).await,
        Verb::Templates(_) => templates(client, out).await,
        Verb::Read(args) => read(client, out, &mut media, args).await,
        Verb::Prompts(_) => prompts(client, out).await,
        Verb::Prompt(args) => prompt(client, out, &mut media, args).await,
        Verb::Complete(args) => complete(client, out, args).await,
        Verb::Listen(args) => listen(client, out, args).await,
        Verb::Task(action) => super::task::run(client, out, &mut media, progress, action).await,
        Verb::Auth(_) => unreachable!("handled by run"),
    }
}

/// Where results go.
pub(super) struct Out {
    pub(super) style: Style,
    pub(super) json: bool,
    /// The results `--json` prints, as the server sent them.
    raw: RawResults,
    /// Whether anything was printed on stdout.
    printed: AtomicBool,
}

impl Out {
    /// Under `--json`, says on stdout why the command failed, so that a script reads one JSON
    /// answer whatever happened: a JSON-RPC error as the server sent it (`{"error": {"code",
    /// "message", "data"}}`), and any other failure of the client (the transport, a local
    /// timeout, a server that broke the protocol, ...) as `{"error": {"kind", "message",
    /// "hint"}}`, unless the command printed something already (a result whose tool failed, a
    /// task's status).
    fn failed(&self, error: CliError) -> CliError {
        if self.json {
            let printed = self.printed.load(Ordering::Relaxed);
            if let Some(text) = json::failure(&error, printed) {
                self.print(&format!("{text}\n"));
            }
        }
        error
    }

    pub(super) fn print(&self, text: &str) {
        self.printed.store(true, Ordering::Relaxed);
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }

    pub(super) fn json(&self, value: &impl Serialize) {
        let text = serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("\"{e}\""));
        self.print(&format!("{text}\n"));
    }

    /// Under `--json`, keeps the complete result of `request` as the server sent it.
    pub(super) fn keep<'c, T>(&self, request: Request<'c, T>) -> Request<'c, T> {
        if self.json {
            request.on_result(self.raw.sink())
        } else {
            request
        }
    }

    /// Prints the result kept by [`Out::keep`] (for a legacy server's `discover`, the `initialize`
    /// result), or `typed` should none have been kept.
    pub(super) fn json_result(&self, typed: &impl Serialize) {
        match json::single(&self.raw) {
            Some(text) => self.print(&format!("{text}\n")),
            None => self.json(typed),
        }
    }

    /// Prints the pages kept by [`Out::keep`] for a list whose items are under `member`.
    pub(super) fn json_list(&self, member: &str) {
        self.print(&format!("{}\n", json::list(&self.raw, member)));
    }
}

async fn discover(client: &Client, out: &Out) -> Result<(), CliError> {
    let result: DiscoverResult = out.keep(client.discover()).await?;
    if out.json {
        out.json_result(&result);
        return Ok(());
    }
    let s = &out.style;
    let era = client.era();
    let mut text = String::new();
    if let Some(info) = result.meta.as_ref().and_then(|m| m.server_info.as_ref()) {
        let title = info
            .title
            .as_deref()
            .map(|t| format!(" ({})", clean_line(t)))
            .unwrap_or_default();
        text.push_str(&format!(
            "{}  {} {}{title}\n",
            s.bold("server      "),
            clean_line(&info.name),
            clean_line(&info.version)
        ));
        // Every line indented, so that a line of the description cannot pass for one of ours.
        if let Some(description) = &info.description {
            for line in description.lines() {
                text.push_str(&format!("              {}\n", clean(line)));
            }
        }
    }
    let kind = if era.is_legacy() {
        "legacy, with initialize"
    } else {
        "stateless"
    };
    text.push_str(&format!(
        "{}  {} ({kind}); the server supports {}\n",
        s.bold("protocol    "),
        era.version(),
        clean_line(&result.supported_versions.join(", "))
    ));
    let capabilities = serde_json::to_value(&result.capabilities).unwrap_or(Value::Null);
    let mut names = Vec::new();
    if let Some(map) = capabilities.as_object() {
        for (name, value) in map {
            let flags: Vec<&str> = value
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter(|(_, v)| **v == Value::Bool(true))
                        .map(|(k, _)| k.as_str())
                        .collect()
                })
                .unwrap_or_default();
            if flags.is_empty() {
                names.push(name.clone());
            } else {
                names.push(format!("{name} ({})", flags.join(", ")));
            }
        }
    }
    let names = if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    };
    // The names of experimental capabilities and their flags are the server's.
    let names = clean_line(&names);
    text.push_str(&format!("{}  {names}\n", s.bold("capabilities")));
    if let Some(instructions) = &result.instructions {
        text.push_str(&format!("{}\n", s.bold("instructions")));
        for line in instructions.lines() {
            text.push_str(&format!("  {}\n", clean(line)));
        }
    }
    out.print(&text);
    Ok(())
}

/// For a list the server does not offer: says so, and shows it empty under `key` (`--json`).
pub(super) fn not_offered(out: &Out, key: &str, what: &str) {
    if out.json {
        out.json(&json!({ key: [] }));
        eprintln!(
            "{}",
            stderr_style().dim(&format!("this server offers no {what}"))
        );
    } else {
        out.print(&format!(
            "{}\n",
            out.style.dim(&format!("(this server offers no {what})"))
        ));
    }
}

fn print_list(out: &Out, what: &str, headers: &[&str], rows: &[Vec<String>]) {
    if rows.is_empty() {
        out.print(&format!("{}\n", out.style.dim(&format!("(no {what})"))));
    } else {
        out.print(&out.style.table(headers, rows));
    }
}

pub(super) fn log_level(text: &str) -> Result<LoggingLevel, CliError> {
    serde_json::from_value(Value::String(text.to_ascii_lowercase())).map_err(|_| {
        CliError::usage(format!(
            "--log {text:?}: use debug, info, notice, warning, error, critical, alert or emergency"
        ))
    })
}

async fn call(
    client: &Client,
    out: &Out,
    media: &mut Media,
    progress: &Progress,
    args: CallArgs,
) -> Result<(), CliError> {
    let level = args.log.as_deref().map(log_level).transpose()?;
    // The latest tools/list gives the schema that types --arg values, and (on HTTP) the
    // x-mcp-header declarations the call mirrors into headers.
    let tools = client.list_all_tools().await?;
    let schema = tools
        .iter()
        .find(|t| t.name == args.name)
        .map(|t| &t.input_schema);
    // A name the server does not list may still be one it serves; if the call fails, the
    // closest names it lists are suggested.
    let suggestion = if schema.is_none() {
        // `kelson serve` lists `execute` beside `query` only when writes are on.
        let serves_sql = tools.iter().any(|t| t.name == "query");
        let suggestion = if args.name == "execute" && serves_sql {
            Some("kelson serve offers execute only with --allow-write".to_owned())
        } else {
            suggest::did_you_mean(&suggest::closest(
                &args.name,
                tools.iter().map(|t| t.name.as_str()),
            ))
        };
        let near = suggestion
            .as_ref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        let note = stderr_style().yellow(&format!(
            "note: the server does not list a tool named {:?}{near}; calling it anyway",
            clean_line(&args.name)
        ));
        eprintln!("{note}");
        suggestion
    } else {
        None
    };
    let unlisted = |error: CliError| match (error, &suggestion) {
        (CliError::Client(e), Some(hint))
            if e.error_object().is_some() && e.code() != Some(URL_ELICITATION_REQUIRED) =>
        {
            CliError::Explained {
                error: Box::new(CliError::Client(e)),
                hint: Some(hint.clone()),
                stderr: None,
            }
        }
        (error, _) => error,
    };
    let arguments = tool_arguments(&args.args_json, &args.args, schema)?;
    if let Some(schema) = schema {
        args::check(schema, &arguments)?;
    }
    if args.task {
        return super::task::start(client, out, media, &args.name, arguments, args.structured)
            .await
            .map_err(unlisted);
    }
    let bar = progress.clone();
    let mut request = out
        .keep(client.call_tool(args.name.clone(), Value::Object(arguments)))
        .on_progress(move |p| bar.update(p));
    if let Some(level) = level {
        let bar = progress.clone();
        request = request.on_log(level, move |m| {
            let logger = m
                .logger
                .as_deref()
                .map(|l| format!(" {}", clean_line(l)))
                .unwrap_or_default();
            // A message may span lines; JSON data is one line, whose strings may still hold DEL,
            // C1 or bidi controls (JSON escapes only the C0 ones).
            let data = match &m.data {
                Value::String(s) => clean(s).into_owned(),
                other => clean(&other.to_string()).into_owned(),
            };
            let level = serde_json::to_value(m.level)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            bar.suspend(|| eprintln!("[{level}{logger}] {data}"));
        });
    }
    // Ctrl-C cancels the call: the request in the transport's way, and a task it became with
    // tasks/cancel.
    let cancel = kelson_client::CancellationToken::new();
    let request = request.cancel_token(cancel.clone());
    let interrupt = super::task::watch_interrupt()?;
    progress.watch(&args.name);
    let result = super::task::until_interrupted(request, &cancel, progress, interrupt)
        .await
        .map_err(unlisted)?;
    progress.finish();
    let mut what = format!("the tool {:?}", clean_line(&args.name));
    if let Some(suggestion) = &suggestion {
        // A server may answer a tool it does not have with a tool error rather than a JSON-RPC
        // one.
        what.push_str(&format!(", which the server does not list ({suggestion})"));
    }
    show_result(out, media, &args.name, &what, &result, args.structured)
}

/// Prints a tool's result as `kelson call` does (`--json`: as the server sent it), and fails with
/// [`CliError::ToolError`] when the tool reported an error. Media files are named after `stem`;
/// `what` names the tool (or the task) in the error line.
pub(super) fn show_result(
    out: &Out,
    media: &mut Media,
    stem: &str,
    what: &str,
    result: &CallToolResult,
    structured_too: bool,
) -> Result<(), CliError> {
    let failed = result.is_error == Some(true);
    if out.json {
        out.json_result(result);
    } else {
        let (shown, structured) = output::call_parts(result, structured_too);
        if result.structured_content.is_some() && structured.is_none() {
            let note = stderr_style().dim(
                "(structured content not shown: --structured prints it, --json the whole result)",
            );
            eprintln!("{note}");
        }
        let mut buffer = Vec::new();
        let stem = output::stem_of(stem);
        let _ = output::render_blocks(&mut buffer, &out.style, media, &stem, &shown);
        if let Some(structured) = structured {
            if !shown.is_empty() {
                let label = out.style.dim("structured content:");
                buffer.extend_from_slice(format!("{label}\n").as_bytes());
            }
            buffer.extend_from_slice(format!("{}\n", output::pretty(structured)).as_bytes());
        }
        out.print(&String::from_utf8_lossy(&buffer));
    }
    if failed {
        let label = stderr_style().red("error:");
        eprintln!("{label} {what} reported an error (isError)");
        return Err(CliError::ToolError);
    }
    Ok(())
}

async fn resources(client: &Client, out: &Out) -> Result<(), CliError> {
    if !offers::offers(client, Feature::Resources).await {
        not_offered(out, "resources", "resources");
        return Ok(());
    }
    let resources = out.keep(client.list_all_resources()).await?;
    if out.json {
        out.json_list("resources");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = resources
        .iter()
        .map(|r| {
            vec![
                r.uri.clone(),
                r.title.clone().unwrap_or_else(|| r.name.clone()),
                r.mime_type.clone().unwrap_or_default(),
                first_line(r.description.as_deref()),
            ]
        })
        .collect();
    print_list(
        out,
        "resources",
        &["URI", "NAME", "MIME", "DESCRIPTION"],
        &rows,
    );
    Ok(())
}

async fn templates(client: &Client, out: &Out) -> Result<(), CliError> {
    if !offers::offers(client, Feature::Resources).await {
        not_offered(out, "resourceTemplates", "resource templates");
        return Ok(());
    }
    let templates = out.keep(client.list_all_resource_templates()).await?;
    if out.json {
        out.json_list("resourceTemplates");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = templates
        .iter()
        .map(|t| {
            vec![
                t.uri_template.clone(),
                t.title.clone().unwrap_or_else(|| t.name.clone()),
                t.mime_type.clone().unwrap_or_default(),
                first_line(t.description.as_deref()),
            ]
        })
        .collect();
    print_list(
        out,
        "resource templates",
        &["URI TEMPLATE", "NAME", "MIME", "DESCRIPTION"],
        &rows,
    );
    Ok(())
}

async fn read(
    client: &Client,
    out: &Out,
    media: &mut Media,
    args: ReadArgs,
) -> Result<(), CliError> {
    let result = out.keep(client.read_resource(args.uri.clone())).await?;
    if out.json {
        out.json_result(&result);
        return Ok(());
    }
    let mut buffer = Vec::new();
    let _ = output::render_contents(
        &mut buffer,
        &out.style,
        media,
        &output::stem_of(&args.uri),
        &result.contents,
        false,
    );
    out.print(&String::from_utf8_lossy(&buffer));
    Ok(())
}

async fn prompts(client: &Client, out: &Out) -> Result<(), CliError> {
    if !offers::offers(client, Feature::Prompts).await {
        not_offered(out, "prompts", "prompts");
        return Ok(());
    }
    let prompts = out.keep(client.list_all_prompts()).await?;
    if out.json {
        out.json_list("prompts");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = prompts
        .iter()
        .map(|p| {
            let arguments: Vec<String> = p
                .arguments
                .iter()
                .flatten()
                .map(|a| {
                    format!(
                        "{}{}",
                        a.name,
                        if a.required == Some(true) { "*" } else { "" }
                    )
                })
                .collect();
            let description = match &p.title {
                Some(title) if p.description.is_some() => {
                    format!("{title}: {}", first_line(p.description.as_deref()))
                }
                Some(title) => title.clone(),
                None => first_line(p.description.as_deref()),
            };
            vec![p.name.clone(), arguments.join(", "), description]
        })
        .collect();
    print_list(
        out,
        "prompts",
        &["NAME", "ARGUMENTS (* required)", "DESCRIPTION"],
        &rows,
    );
    Ok(())
}

fn string_pairs(pairs: &[String]) -> Result<BTreeMap<String, String>, CliError> {
    pairs.iter().map(|p| key_value(p)).collect()
}

async fn prompt(
    client: &Client,
    out: &Out,
    media: &mut Media,
    args: PromptArgs,
) -> Result<(), CliError> {
    let arguments = string_pairs(&args.args)?;
    let result = out
        .keep(client.get_prompt(args.name.clone(), arguments))
        .await?;
    if out.json {
        out.json_result(&result);
        return Ok(());
    }
    let s = &out.style;
    let mut buffer = Vec::new();
    if let Some(description) = &result.description {
        buffer.extend_from_slice(format!("{}\n", s.dim(&clean(description))).as_bytes());
    }
    for message in &result.messages {
        let role = serde_json::to_value(message.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        buffer.extend_from_slice(format!("{}\n", s.green(&format!("{role}:"))).as_bytes());
        let _ = output::render_blocks(
            &mut buffer,
            s,
            media,
            &output::stem_of(&args.name),
            std::slice::from_ref(&message.content),
        );
    }
    out.print(&String::from_utf8_lossy(&buffer));
    Ok(())
}

async fn complete(client: &Client, out: &Out, args: CompleteArgs) -> Result<(), CliError> {
    let reference = match (&args.prompt, &args.template) {
        (Some(name), _) => CompletionReference::prompt(name.clone()),
        (None, Some(uri)) => CompletionReference::resource(uri.clone()),
        (None, None) => {
            return Err(CliError::usage(
                "give --prompt NAME or --template URI_TEMPLATE",
            ));
        }
    };
    let context = if args.context.is_empty() {
        None
    } else {
        Some(CompleteContext {
            arguments: Some(string_pairs(&args.context)?),
        })
    };
    let result = out
        .keep(client.complete(
            reference,
            CompleteArgument::new(args.argument, args.value),
            context,
        ))
        .await?;
    if out.json {
        out.json_result(&result);
        return Ok(());
    }
    let completion = &result.completion;
    let mut text = String::new();
    // One value per line: a line break inside a value is shown, not taken for the next value.
    for value in &completion.values {
        text.push_str(&clean_line(value));
        text.push('\n');
    }
    if completion.values.is_empty() {
        text.push_str(&format!("{}\n", out.style.dim("(no suggestions)")));
    }
    let shown = completion.values.len() as u64;
    if completion.has_more == Some(true) || completion.total.is_some_and(|t| t > shown) {
        let total = completion
            .total
            .map(|t| format!(" of {t}"))
            .unwrap_or_default();
        text.push_str(&format!(
            "{}\n",
            out.style
                .dim(&format!("({shown}{total} shown; more available)"))
        ));
    }
    out.print(&text);
    Ok(())
}

/// Seconds since midnight UTC as HH:MM:SS, for notification lines.
fn clock() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
        % 86_400;
    format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

fn describe(filter: &SubscriptionFilter) -> String {
    let mut parts = Vec::new();
    if filter.wants_tools_list_changed() {
        parts.push("tool list changes".to_owned());
    }
    if filter.wants_prompts_list_changed() {
        parts.push("prompt list changes".to_owned());
    }
    if filter.wants_resources_list_changed() {
        parts.push("resource list changes".to_owned());
    }
    for uri in filter.resource_uris() {
        parts.push(format!("updates of {uri}"));
    }
    if parts.is_empty() {
        "nothing".to_owned()
    } else {
        parts.join(", ")
    }
}

async fn listen(client: &Client, out: &Out, args: ListenArgs) -> Result<(), CliError> {
    let filter = offers::listen_filter(client, &args).await?;
    let mut subscription = client.listen(filter).await?;
    // Watch for Ctrl-C before saying we listen, so an interrupt from then on always stops cleanly.
    let mut interrupt =
        Interrupt::new().map_err(|e| CliError::usage(format!("cannot watch for Ctrl-C: {e}")))?;
    // The acknowledgement is the server's, resource URIs included.
    let note = stderr_style().dim(&format!(
        "listening for {} (Ctrl-C to stop)",
        clean_line(&describe(subscription.acknowledged()))
    ));
    eprintln!("{note}");
    loop {
        tokio::select! {
            () = interrupt.wait() => {
                eprintln!("{}", stderr_style().dim("stopped"));
                break;
            }
            event = subscription.next() => match event {
                Some(Ok(event)) => show_event(out, &event),
                Some(Err(e)) => return Err(e.into()),
                None => {
                    eprintln!("{}", stderr_style().dim("the server ended the stream"));
                    break;
                }
            },
        }
    }
    // Dropping the subscription ends the stream (HTTP: closes it; stdio: notifications/cancelled).
    drop(subscription);
    Ok(())
}

/// SIGINT (Ctrl-C), watched from creation on.
pub(super) struct Interrupt {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupt {
    pub(super) fn new() -> std::io::Result<Interrupt> {
        Ok(Interrupt {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?,
        })
    }

    pub(super) async fn wait(&mut self) {
        #[cfg(unix)]
        let _ = self.signal.recv().await;
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn show_event(out: &Out, event: &ListenEvent) {
    let (method, params) = match event {
        ListenEvent::ToolsListChanged => (Method::ToolListChanged.to_string(), None),
        ListenEvent::PromptsListChanged => (Method::PromptListChanged.to_string(), None),
        ListenEvent::ResourcesListChanged => (Method::ResourceListChanged.to_string(), None),
        ListenEvent::ResourceUpdated { uri } => (
            Method::ResourceUpdated.to_string(),
            Some(json!({ "uri": uri })),
        ),
        ListenEvent::Other { method, params } => (method.clone(), params.clone()),
        _ => ("(unknown)".to_owned(), None),
    };
    if out.json {
        let mut line = json!({ "method": method });
        if let Some(params) = params {
            line["params"] = params;
        }
        out.print(&format!("{line}\n"));
        return;
    }
    let s = &out.style;
    let text = match event {
        ListenEvent::ToolsListChanged => "tools list changed".to_owned(),
        ListenEvent::PromptsListChanged => "prompts list changed".to_owned(),
        ListenEvent::ResourcesListChanged => "resources list changed".to_owned(),
        ListenEvent::ResourceUpdated { uri } => format!("resource updated: {}", clean_line(uri)),
        // The method and the parameters are the server's, on one line.
        _ => match params {
            Some(params) => clean_line(&format!("{method} {params}")).into_owned(),
            None => clean_line(&method).into_owned(),
        },
    };
    out.print(&format!("{} {text}\n", s.dim(&clock())));
}
