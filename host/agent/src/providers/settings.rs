//! Checks of a provider's settings shared by both providers: the model
//! name, the key's header, environment variables.

use reqwest::header::HeaderValue;

use crate::providers::AgentConfigError;

/// Checks that a model name is given.
pub(crate) fn require_model(model: &str) -> Result<(), AgentConfigError> {
    if model.trim().is_empty() {
        return Err(AgentConfigError::Invalid {
            field: "model",
            reason: "the model name is empty".into(),
        });
    }
    Ok(())
}

/// A header value holding a credential: marked sensitive, so the HTTP
/// client never prints it. The error does not repeat the value.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, AgentConfigError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| AgentConfigError::Invalid {
        field: "api_key",
        reason: "the key contains characters not allowed in an HTTP header".into(),
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// Reads an environment variable through `env`, treating an empty value
/// as unset.
pub(crate) fn non_empty(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.trim().is_empty())
}
