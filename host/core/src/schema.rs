//! [`CompiledSchema`]: a tool's parameters schema, compiled once.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::error::ToolError;

/// A JSON Schema compiled for validating arguments. Cloning shares the
/// compiled form, so a schema compiled while loading a plugin or listing a
/// remote server's tools is not compiled again at registration (see
/// [`Tool::compiled_schema`](crate::Tool::compiled_schema)).
#[derive(Clone)]
pub struct CompiledSchema(Arc<jsonschema::Validator>);

/// Why a schema does not compile: the compiler's complaint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
#[non_exhaustive]
pub struct SchemaError {
    /// What the schema compiler rejected.
    pub reason: String,
}

impl CompiledSchema {
    /// Compiles `schema`, refusing one that is not a valid JSON Schema.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        jsonschema::validator_for(schema)
            .map(|v| Self(Arc::new(v)))
            .map_err(|e| SchemaError {
                reason: e.to_string(),
            })
    }

    /// Checks `args` against the schema (rule T2). The error names the
    /// first offending JSON path and the schema's complaint.
    pub fn validate(&self, args: &Value) -> Result<(), ToolError> {
        self.check(args)
            .map_err(|(path, message)| ToolError::InvalidArguments { path, message })
    }

    /// Checks a tool's structured result against its output schema (rule
    /// N2): [`ToolError::InvalidOutput`] naming the first offending path.
    pub fn validate_output(&self, value: &Value) -> Result<(), ToolError> {
        self.check(value)
            .map_err(|(path, message)| ToolError::InvalidOutput { path, message })
    }

    fn check(&self, value: &Value) -> Result<(), (String, String)> {
        self.0
            .validate(value)
            .map_err(|e| (e.instance_path().as_str().to_owned(), e.to_string()))
    }
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CompiledSchema")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn t2_a_schema_compiles_once_and_validates_naming_the_path() {
        let schema = CompiledSchema::compile(&json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}}
        }))
        .unwrap();
        let shared = schema.clone();
        assert!(shared.validate(&json!({"n": 1})).is_ok());
        match schema.validate(&json!({"n": "x"})) {
            Err(ToolError::InvalidArguments { path, .. }) => assert_eq!(path, "/n"),
            other => panic!("{other:?}"),
        }
        let err = CompiledSchema::compile(&json!({"type": "no-such-type"})).unwrap_err();
        assert!(!err.reason.is_empty());
    }
}
