//! Typed tools: the argument type gives the schema, the `Result` gives the
//! outcome.

use std::fmt;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::output::Output;

/// About the call in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallInfo {
    /// The call's id.
    pub call_id: String,
    /// Which attempt this is, from 1.
    pub attempt: u32,
    /// Milliseconds left before the host stops the call, if it has a
    /// deadline. The host stops the plugin at the deadline whether or not it
    /// looks.
    pub deadline_ms: Option<u64>,
}

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The arguments were not acceptable.
    InvalidArguments {
        /// JSON pointer to the offending value (empty: the whole object).
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The tool failed.
    Failed {
        /// What went wrong, for the model.
        message: String,
        /// Whether trying again may succeed.
        retryable: bool,
    },
}

impl ToolError {
    /// A permanent failure.
    pub fn failed(message: impl fmt::Display) -> Self {
        Self::Failed {
            message: message.to_string(),
            retryable: false,
        }
    }

    /// A failure that may go away if the call is repeated.
    pub fn transient(message: impl fmt::Display) -> Self {
        Self::Failed {
            message: message.to_string(),
            retryable: true,
        }
    }

    /// Invalid arguments at `path` (a JSON pointer).
    pub fn invalid(path: impl Into<String>, message: impl fmt::Display) -> Self {
        Self::InvalidArguments {
            path: path.into(),
            message: message.to_string(),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidArguments { path, message } if path.is_empty() => {
                write!(f, "invalid arguments: {message}")
            }
            Self::InvalidArguments { path, message } => {
                write!(f, "invalid arguments at `{path}`: {message}")
            }
            Self::Failed { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for ToolError {}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        Self::failed(e)
    }
}

type Handler = Box<dyn Fn(&str, &CallInfo) -> Result<Output, ToolError>>;

pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: fn() -> serde_json::Value,
    pub(crate) concurrency_safe: Option<bool>,
    pub(crate) idempotent: bool,
    pub(crate) output_schema: Option<fn() -> serde_json::Value>,
    pub(crate) read_only: Option<bool>,
    pub(crate) destructive: Option<bool>,
    pub(crate) open_world: Option<bool>,
    pub(crate) handler: Handler,
}

/// The tools a plugin offers, added in a registration function.
#[derive(Default)]
pub struct Tools {
    pub(crate) entries: Vec<Entry>,
}

impl Tools {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool named `name`. Its parameters schema is derived from `A`;
    /// its arguments are decoded into `A` before `f` runs, and a mismatch is
    /// reported as invalid arguments naming the JSON path. The tool starts
    /// undeclared for concurrency and not idempotent: say otherwise with the
    /// returned builder.
    pub fn add<A, O, F>(&mut self, name: &str, description: &str, f: F) -> ToolBuilder<'_>
    where
        A: DeserializeOwned + JsonSchema + 'static,
        O: Into<Output>,
        F: Fn(A, &CallInfo) -> Result<O, ToolError> + 'static,
    {
        let handler: Handler = Box::new(move |json, info| {
            let args: A = decode(json)?;
            f(args, info).map(Into::into)
        });
        self.entries.push(Entry {
            name: name.to_owned(),
            description: description.to_owned(),
            schema: schema_of::<A>,
            concurrency_safe: None,
            idempotent: false,
            output_schema: None,
            read_only: None,
            destructive: None,
            open_world: None,
            handler,
        });
        ToolBuilder(self.entries.last_mut().expect("just pushed"))
    }

    /// Names of the tools added so far, in order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// Runs the tool `name` on JSON `arguments` (what the host does on a
    /// call); `None` if there is no such tool. Handy in a plugin's own tests.
    pub fn call(
        &self,
        name: &str,
        arguments: &str,
        info: &CallInfo,
    ) -> Option<Result<Output, ToolError>> {
        self.entries
            .iter()
            .find(|e| e.name == name)
            .map(|e| (e.handler)(arguments, info))
    }

    /// The JSON Schema of the tool `name`'s arguments.
    pub fn schema(&self, name: &str) -> Option<serde_json::Value> {
        self.entries
            .iter()
            .find(|e| e.name == name)
            .map(|e| (e.schema)())
    }
}

/// Declares a tool's properties; returned by [`Tools::add`].
pub struct ToolBuilder<'a>(&'a mut Entry);

impl ToolBuilder<'_> {
    /// Calls may run beside other calls.
    pub fn safe(self) -> Self {
        self.0.concurrency_safe = Some(true);
        self
    }

    /// Calls must run alone: everything before finishes first, nothing after
    /// starts until it is done.
    pub fn exclusive(self) -> Self {
        self.0.concurrency_safe = Some(false);
        self
    }

    /// Running twice with the same arguments has the same effect as once,
    /// so the host may retry it.
    pub fn idempotent(self) -> Self {
        self.0.idempotent = true;
        self
    }

    /// The tool changes nothing outside itself (MCP's `readOnlyHint`).
    /// A hint: the host passes it on to clients, and its operator may let
    /// it allow calls that no rule decides; it grants nothing by itself.
    pub fn read_only(self) -> Self {
        self.0.read_only = Some(true);
        self.0.destructive = None;
        self
    }

    /// The tool may destroy or overwrite something (MCP's
    /// `destructiveHint`, with `readOnlyHint` false). Its operator may have
    /// calls that no rule decides asked about first.
    pub fn destructive(self) -> Self {
        self.0.read_only = Some(false);
        self.0.destructive = Some(true);
        self
    }

    /// The tool changes things, but only by adding: it destroys and
    /// overwrites nothing (`readOnlyHint` and `destructiveHint` false).
    pub fn additive(self) -> Self {
        self.0.read_only = Some(false);
        self.0.destructive = Some(false);
        self
    }

    /// The tool reaches an open world of entities, such as the web
    /// (`openWorldHint`); `false`: a closed one, such as a local store.
    pub fn open_world(self, open: bool) -> Self {
        self.0.open_world = Some(open);
        self
    }

    /// The tool returns [`Output::Structured`] values of type `T`: its
    /// schema is declared to the host, which checks every result against it
    /// and passes it to MCP clients as the tool's `outputSchema`.
    pub fn output_schema<T: JsonSchema>(self) -> Self {
        self.0.output_schema = Some(schema_of::<T>);
        self
    }
}

fn schema_of<A: JsonSchema>() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(A)).expect("a schema always serializes")
}

fn decode<A: DeserializeOwned>(json: &str) -> Result<A, ToolError> {
    let de = &mut serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(de).map_err(|e| ToolError::InvalidArguments {
        path: json_pointer(e.path()),
        message: e.inner().to_string(),
    })
}

// The same mapping as `toolhost_core::tool::arguments::json_pointer`: the
// SDK is compiled to wasm and cannot depend on the host's crates, and a
// shared crate for fifteen lines would cost every plugin author a
// dependency. Keep the two in step.
/// The JSON pointer (RFC 6901) of a serde_path_to_error path, built from
/// its segments (not its display text, where a key holding `.` or `[`
/// would be misread): `/a/b~1c/0` for key `a`, key `b/c`, index 0. A
/// segment the deserializer could not name ends the pointer.
fn json_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Seq { index } => {
                out.push('/');
                out.push_str(&index.to_string());
            }
            Segment::Map { key } | Segment::Enum { variant: key } => {
                out.push('/');
                out.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Segment::Unknown => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// How many.
        count: u32,
        tags: Vec<String>,
    }

    fn info() -> CallInfo {
        CallInfo {
            call_id: "c".into(),
            attempt: 1,
            deadline_ms: None,
        }
    }

    fn tools() -> Tools {
        let mut t = Tools::new();
        t.add("count", "Counts", |a: Args, _| {
            Ok::<_, ToolError>(format!("{}", a.count))
        })
        .safe()
        .idempotent();
        t
    }

    #[test]
    fn w5_schema_comes_from_the_argument_type() {
        let schema = tools().schema("count").unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["count"]["description"], "How many.");
        assert_eq!(schema["required"], serde_json::json!(["count", "tags"]));
    }

    #[test]
    fn w5_typed_arguments_decode_and_errors_name_the_path() {
        let t = tools();
        let ok = t
            .call("count", r#"{"count": 3, "tags": []}"#, &info())
            .unwrap();
        assert_eq!(ok, Ok(Output::text("3")));
        let bad = t
            .call("count", r#"{"count": 3, "tags": [1]}"#, &info())
            .unwrap();
        assert!(
            matches!(bad, Err(ToolError::InvalidArguments { ref path, .. }) if path == "/tags/0"),
            "{bad:?}"
        );
        assert!(t.call("nope", "{}", &info()).is_none());
    }

    #[test]
    fn w5_error_paths_are_pointers_even_for_keys_with_dots_and_slashes() {
        use std::collections::BTreeMap;
        let err = decode::<BTreeMap<String, Vec<u32>>>(r#"{"a.b[0]/c~d": [1, "x"]}"#).unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments { ref path, .. } if path == "/a.b[0]~1c~0d/1"),
            "{err:?}"
        );
        let err = decode::<Vec<u32>>(r#""not a list""#).unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments { ref path, .. } if path.is_empty()),
            "{err:?}"
        );
    }

    #[test]
    fn w5_declarations_are_recorded() {
        let t = tools();
        let e = &t.entries[0];
        assert_eq!((e.concurrency_safe, e.idempotent), (Some(true), true));
    }
}
