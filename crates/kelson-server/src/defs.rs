//! Definitions for registration: a tool's or prompt's name and whatever else it declares, with
//! the schemas filled in from the handler function.

use kelson_types::{Icon, JsonObject, Prompt, PromptArgument, Tool, ToolAnnotations};
use serde_json::Value;

use crate::BuildError;
use crate::handler::shape::Shape;
use crate::scopes::{Scoped, Scopes};
use crate::tasks::{TaskPolicy, TaskStart, TaskSupport};

/// A tool as registration takes it: a name, and everything else the tool declares, in one place.
/// The input schema comes from the handler's arguments type and the output schema from its
/// return type (a [`Json<T>`](crate::Json)) unless given here; the description defaults to the
/// arguments type's doc comment.
///
/// A `&str`, a `String`, a [`Tool`] or a [`Scoped<Tool>`] converts into one, so
/// `builder.tool("echo", echo)` needs no `ToolDef` at all.
///
/// ```
/// use kelson_server::ToolDef;
///
/// let def = ToolDef::new("delete_row")
///     .title("Delete a row")
///     .description("Deletes one row by its key")
///     .destructive(true)
///     .idempotent(true)
///     .scopes(["db:write"]);
/// # let _ = def;
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct ToolDef {
    tool: Tool,
    scopes: Scopes,
    headers: Vec<(String, String)>,
    tasks: TaskPolicy,
}

impl ToolDef {
    /// A tool named `name` (1-128 characters of `A-Z a-z 0-9 _ - .`).
    pub fn new(name: impl Into<String>) -> Self {
        Tool::new(name, JsonObject::new()).into()
    }

    /// The display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.tool.title = Some(title.into());
        self
    }

    /// What the tool does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.tool.description = Some(description.into());
        self
    }

    fn hints(&mut self) -> &mut ToolAnnotations {
        self.tool
            .annotations
            .get_or_insert_with(ToolAnnotations::new)
    }

    /// The `readOnlyHint` annotation: the tool does not change its environment.
    pub fn read_only(mut self, value: bool) -> Self {
        self.hints().read_only_hint = Some(value);
        self
    }

    /// The `destructiveHint` annotation: the tool may destroy data.
    pub fn destructive(mut self, value: bool) -> Self {
        self.hints().destructive_hint = Some(value);
        self
    }

    /// The `idempotentHint` annotation: repeating a call changes nothing more.
    pub fn idempotent(mut self, value: bool) -> Self {
        self.hints().idempotent_hint = Some(value);
        self
    }

    /// The `openWorldHint` annotation: the tool reaches an open world (the web, say).
    pub fn open_world(mut self, value: bool) -> Self {
        self.hints().open_world_hint = Some(value);
        self
    }

    /// Replaces every annotation.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.tool.annotations = Some(annotations);
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.tool.icons.get_or_insert_with(Vec::new).push(icon);
        self
    }

    /// An input schema of your own instead of the generated one.
    pub fn input_schema(mut self, schema: JsonObject) -> Self {
        self.tool.input_schema = schema;
        self
    }

    /// An output schema of your own instead of the generated one.
    pub fn output_schema(mut self, schema: JsonObject) -> Self {
        self.tool.output_schema = Some(schema);
        self
    }

    /// Mirrors the top-level argument `property` into the HTTP header `Mcp-Param-{header}` (the
    /// `x-mcp-header` extension), so that a load balancer can route or authorize by it.
    pub fn header(mut self, property: impl Into<String>, header: impl Into<String>) -> Self {
        self.headers.push((property.into(), header.into()));
        self
    }

    /// The scopes a caller needs to see and call the tool.
    pub fn scopes(mut self, scopes: impl Into<Scopes>) -> Self {
        self.scopes = scopes.into();
        self
    }

    /// Whether calls may run as tasks (the tasks extension): never (the default), when the
    /// request declares the extension ([`TaskSupport::Optional`]), or only then
    /// ([`TaskSupport::Required`]: other requests are refused with -32021). A call becomes a task
    /// before its handler runs unless [`task_start`](Self::task_start) says otherwise.
    ///
    /// ```
    /// use std::time::Duration;
    /// use kelson_server::{TaskStart, TaskSupport, ToolDef};
    ///
    /// // A report that becomes a task once it has run for two seconds.
    /// let def = ToolDef::new("report")
    ///     .tasks(TaskSupport::Optional)
    ///     .task_start(TaskStart::After(Duration::from_secs(2)));
    /// # let _ = def;
    /// ```
    pub fn tasks(mut self, support: TaskSupport) -> Self {
        self.tasks.support = support;
        self
    }

    /// When a call that may run as a task becomes one (see [`TaskStart`]).
    pub fn task_start(mut self, start: TaskStart) -> Self {
        self.tasks.start = start;
        self
    }

    pub(crate) fn task_policy(&self) -> TaskPolicy {
        self.tasks
    }

    /// The tool's `_meta`.
    pub fn meta(mut self, meta: JsonObject) -> Self {
        self.tool.meta = Some(meta);
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// The definition with the schemas a handler's signature declares filled in.
    pub(crate) fn finish(self, shape: &Shape) -> Result<Scoped<Tool>, BuildError> {
        let ToolDef {
            mut tool,
            scopes,
            headers,
            tasks: _,
        } = self;
        if tool.input_schema.is_empty() {
            tool.input_schema = match &shape.arguments {
                Some(schema) if !schema.is_empty() => {
                    let mut schema = schema.clone();
                    // The generated title is the Rust type's name (the macros' generated
                    // `__NameArguments` among them): nothing a model or a host should see.
                    schema.remove("title");
                    schema
                }
                // No arguments parameter, or one that accepts anything.
                _ => Tool::without_arguments("").input_schema,
            };
        }
        if tool.description.is_none() {
            tool.description = root_description(&tool.input_schema);
        }
        if tool.output_schema.is_none() {
            tool.output_schema.clone_from(&shape.output);
        }
        for (property, header) in headers {
            let slot = tool
                .input_schema
                .get_mut("properties")
                .and_then(Value::as_object_mut)
                .and_then(|p| p.get_mut(&property))
                .and_then(Value::as_object_mut);
            let Some(slot) = slot else {
                return Err(BuildError::ParamHeader {
                    tool: tool.name,
                    reason: format!("{property:?} is not a top-level argument"),
                });
            };
            slot.insert("x-mcp-header".to_owned(), Value::String(header));
        }
        Ok(Scoped::new(tool, scopes))
    }
}

fn root_description(schema: &JsonObject) -> Option<String> {
    schema
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

impl From<Tool> for ToolDef {
    /// A hand-written definition; an empty `inputSchema` means "generate it".
    fn from(tool: Tool) -> Self {
        ToolDef {
            tool,
            scopes: Scopes::none(),
            headers: Vec::new(),
            tasks: TaskPolicy::default(),
        }
    }
}

impl From<Scoped<Tool>> for ToolDef {
    fn from(scoped: Scoped<Tool>) -> Self {
        ToolDef {
            tool: scoped.def,
            scopes: scoped.scopes,
            headers: Vec::new(),
            tasks: TaskPolicy::default(),
        }
    }
}

impl From<&str> for ToolDef {
    fn from(name: &str) -> Self {
        ToolDef::new(name)
    }
}

impl From<String> for ToolDef {
    fn from(name: String) -> Self {
        ToolDef::new(name)
    }
}

/// A prompt as registration takes it. Its arguments come from the handler's arguments type (each
/// property an argument, with its doc comment as description, required unless optional), unless
/// given here; the description defaults to the type's doc comment.
#[derive(Clone, Debug)]
#[must_use]
pub struct PromptDef {
    prompt: Prompt,
    scopes: Scopes,
}

impl PromptDef {
    /// A prompt named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Prompt::new(name).into()
    }

    /// The display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.prompt.title = Some(title.into());
        self
    }

    /// What the prompt is for.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.prompt.description = Some(description.into());
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.prompt.icons.get_or_insert_with(Vec::new).push(icon);
        self
    }

    /// The scopes a caller needs to see and get the prompt (and complete its arguments).
    pub fn scopes(mut self, scopes: impl Into<Scopes>) -> Self {
        self.scopes = scopes.into();
        self
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.prompt.name
    }

    pub(crate) fn finish(self, shape: &Shape) -> Scoped<Prompt> {
        let PromptDef { mut prompt, scopes } = self;
        if let Some(schema) = &shape.arguments {
            if prompt.arguments.is_none() {
                prompt.arguments = prompt_arguments(schema);
            }
            if prompt.description.is_none() {
                prompt.description = root_description(schema);
            }
        }
        Scoped::new(prompt, scopes)
    }
}

/// Each top-level property of an arguments schema as a prompt argument.
fn prompt_arguments(schema: &JsonObject) -> Option<Vec<PromptArgument>> {
    let properties = schema.get("properties")?.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let arguments = properties
        .iter()
        .map(|(name, property)| {
            let mut argument = PromptArgument::new(name);
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                argument = argument.with_description(description);
            }
            if let Some(title) = property.get("title").and_then(Value::as_str) {
                argument.title = Some(title.to_owned());
            }
            if required.contains(&name.as_str()) {
                argument = argument.required();
            }
            argument
        })
        .collect();
    Some(arguments)
}

impl From<Prompt> for PromptDef {
    fn from(prompt: Prompt) -> Self {
        PromptDef {
            prompt,
            scopes: Scopes::none(),
        }
    }
}

impl From<Scoped<Prompt>> for PromptDef {
    fn from(scoped: Scoped<Prompt>) -> Self {
        PromptDef {
            prompt: scoped.def,
            scopes: scoped.scopes,
        }
    }
}

impl From<&str> for PromptDef {
    fn from(name: &str) -> Self {
        PromptDef::new(name)
    }
}

impl From<String> for PromptDef {
    fn from(name: String) -> Self {
        PromptDef::new(name)
    }
}
